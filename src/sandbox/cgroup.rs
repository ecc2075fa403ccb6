//! A memory cgroup made for one run (`--method memcg`), and its guardian.
//!
//! The cgroup is made in the hierarchy that has the memory controller:
//! cgroup v2 when its root offers `memory`, else v1 (`memory.force_empty`).
//! On v1 it is a child of this process's own memory cgroup, so any limit
//! above dentrylab still applies; on v2, where a cgroup with processes
//! cannot have controller-enabled children, it is a sibling.
//!
//! A SIGKILL runs no cleanup, so before entering the sandbox dentrylab
//! starts a guardian: a copy of itself (hidden subcommand [`GUARD_COMMAND`])
//! in its own process group, ignoring Ctrl-C and SIGTERM, that waits for
//! its standard input to reach end-of-file — which happens when dentrylab
//! closes it or dies, however it dies — and then removes every cgroup that
//! dentrylab made.
//! Processes still in them (a workload's server) are killed first.
//! Cgroups left by a dentrylab whose process is gone (a guardian killed
//! too) are removed the next time one is made.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::procfs::ProcRoot;
use crate::procfs::cgroup::{self, MemoryController};
use crate::sys;

/// The hidden subcommand that runs the guardian.
pub(crate) const GUARD_COMMAND: &str = "__cgroup-guard";
/// Prefix of every cgroup dentrylab makes: `dentrylab-<pid>-<n>`.
pub(crate) const PREFIX: &str = "dentrylab-";
/// How long the guardian keeps trying to remove a cgroup whose last
/// process is still exiting.
const GUARD_PATIENCE: Duration = Duration::from_secs(10);

/// Which interface reclaims the cgroup.
pub(crate) fn interface(version: u8) -> &'static str {
    if version == 2 { "memory.reclaim (cgroup v2)" } else { "memory.force_empty (cgroup v1)" }
}

/// Finds the memory controller for this process.
pub(crate) fn locate(proc: &ProcRoot) -> Result<MemoryController> {
    let membership = cgroup::parse_membership(proc.open("self/cgroup")?)?;
    let mounts = cgroup::parse_mounts(proc.open("self/mountinfo")?)?;
    let v2_root = mounts
        .iter()
        .find(|m| m.version == 2)
        .and_then(|m| std::fs::read_to_string(m.mount_point.join("cgroup.controllers")).ok());
    cgroup::memory_controller(&membership, &mounts, v2_root.as_deref()).context(
        "no cgroup hierarchy here has the memory controller (neither a cgroup v2 root offering 'memory' nor a \
         v1 'memory' mount): --method memcg cannot run",
    )
}

/// The directory new cgroups go in.
fn parent_dir(mc: &MemoryController) -> Result<PathBuf> {
    if mc.version == 1 || mc.own_dir == mc.mount_point {
        return Ok(mc.own_dir.clone());
    }
    let parent = mc.own_dir.parent().unwrap_or(&mc.mount_point).to_path_buf();
    let ctl = std::fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap_or_default();
    if !ctl.split_whitespace().any(|c| c == "memory") {
        bail!(
            "cgroup v2: the memory controller is not enabled for the children of {} (cgroup.subtree_control), \
             so dentrylab cannot make a memory cgroup beside its own",
            parent.display()
        );
    }
    Ok(parent)
}

/// Removes cgroups left by dentrylab processes that no longer exist.
pub(crate) fn remove_stale(parent: &Path) {
    let Ok(rd) = std::fs::read_dir(parent) else { return };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(PREFIX).and_then(|r| r.split('-').next()).and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// The guardian of this process's memory cgroups. Start it before
/// entering the sandbox (it must stay in the real mount namespace: a
/// process inside the sandbox would keep the sandbox's mounts alive).
pub(crate) struct Guardian {
    parent: PathBuf,
    version: u8,
    /// Removes the cgroups when dropped (or when dentrylab dies).
    _guard: sys::guardian::Guardian,
}

impl Guardian {
    pub(crate) fn start(proc: &ProcRoot) -> Result<Guardian> {
        if !sys::is_root() {
            bail!("--method memcg needs root: making a memory cgroup and moving a process into it is not allowed here");
        }
        let mc = locate(proc)?;
        let parent = parent_dir(&mc)?;
        remove_stale(&parent);
        let pid = std::process::id().to_string();
        let guard = sys::guardian::Guardian::spawn(
            [OsStr::new(GUARD_COMMAND), parent.as_os_str(), OsStr::new(&pid)],
            "cgroup",
        )?;
        Ok(Guardian { parent, version: mc.version, _guard: guard })
    }

    /// The path `dentrylab-<pid>-<name>` beside this process's cgroups, which
    /// the guardian removes when dentrylab ends.
    pub(crate) fn path_of(&self, name: &str) -> PathBuf {
        self.parent.join(format!("{PREFIX}{}-{name}", std::process::id()))
    }

    /// Makes the memory cgroup `dentrylab-<pid>-<n>`.
    pub(crate) fn cgroup(&self, n: u32) -> Result<MemCgroup> {
        let dir = self.parent.join(format!("{PREFIX}{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).with_context(|| format!("cannot make the memory cgroup {}", dir.display()))?;
        if self.version == 1 {
            // Nothing to swap: dentries and inodes are what should go.
            let _ = std::fs::write(dir.join("memory.swappiness"), "0");
        }
        Ok(MemCgroup { dir, version: self.version })
    }
}

/// A memory cgroup that exists for one run.
pub(crate) struct MemCgroup {
    pub dir: PathBuf,
    pub version: u8,
}

impl MemCgroup {
    /// Moves process `pid` (all its threads) into the cgroup.
    pub(crate) fn add(&self, pid: u32) -> Result<()> {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
            .with_context(|| format!("cannot move process {pid} into {}", self.dir.display()))
    }

    /// The cgroup's `cgroup.procs` (a process writing `0` there moves in).
    pub(crate) fn procs_path(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// Limits the memory charged to the cgroup (kernel memory included:
    /// dentries and inodes are charged where they are allocated), bytes.
    pub(crate) fn set_limit(&self, bytes: u64) -> Result<()> {
        let f = if self.version == 2 { "memory.max" } else { "memory.limit_in_bytes" };
        std::fs::write(self.dir.join(f), bytes.to_string())
            .with_context(|| format!("cannot set {f} of {} to {bytes}", self.dir.display()))
    }

    /// Kernel memory charged to the cgroup (slab: dentries, inodes), bytes:
    /// `memory.kmem.usage_in_bytes` on v1, `kernel` of memory.stat on v2.
    pub(crate) fn kernel_bytes(&self) -> Option<u64> {
        if self.version == 2 {
            let stat = std::fs::read_to_string(self.dir.join("memory.stat")).ok()?;
            stat.lines().find_map(|l| l.strip_prefix("kernel ")).and_then(|v| v.trim().parse().ok())
        } else {
            std::fs::read_to_string(self.dir.join("memory.kmem.usage_in_bytes")).ok()?.trim().parse().ok()
        }
    }

    /// SIGKILLs every process in the cgroup.
    pub(crate) fn kill_all(&self) {
        kill_procs(&self.dir);
    }

    /// Waits until no process is left in the cgroup (after [`kill_all`](Self::kill_all)),
    /// at most `patience`; returns whether it emptied.
    pub(crate) fn wait_empty(&self, patience: Duration) -> bool {
        let t = Instant::now();
        loop {
            let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
            if procs.trim().is_empty() {
                return true;
            }
            if t.elapsed() >= patience {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Memory charged to the cgroup, bytes.
    pub(crate) fn usage_bytes(&self) -> Option<u64> {
        let f = if self.version == 2 { "memory.current" } else { "memory.usage_in_bytes" };
        std::fs::read_to_string(self.dir.join(f)).ok()?.trim().parse().ok()
    }

    /// Reclaims everything the cgroup holds that can be reclaimed: v2
    /// writes the current usage to memory.reclaim (EAGAIN: it could not
    /// reclaim all of it), v1 writes memory.force_empty. Returns whether
    /// the kernel said it reclaimed all it was asked to.
    pub(crate) fn reclaim(&self) -> Result<bool> {
        if self.version == 2 {
            let want = self.usage_bytes().unwrap_or(0).max(1);
            match std::fs::write(self.dir.join("memory.reclaim"), want.to_string()) {
                Ok(()) => Ok(true),
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Ok(false),
                Err(e) => Err(e).with_context(|| format!("cannot write memory.reclaim in {}", self.dir.display())),
            }
        } else {
            std::fs::write(self.dir.join("memory.force_empty"), "0")
                .with_context(|| format!("cannot write memory.force_empty in {}", self.dir.display()))?;
            Ok(true)
        }
    }

    /// Removes the cgroup (its processes must have exited).
    pub(crate) fn remove(self) -> Result<()> {
        // A killed process may take seconds to exit on a loaded machine.
        remove_dir_patiently(&self.dir, Duration::from_secs(10))
            .with_context(|| format!("cannot remove the memory cgroup {}", self.dir.display()))
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// SIGKILLs every process listed in the cgroup directory `dir`.
fn kill_procs(dir: &Path) {
    let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) else { return };
    for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
}

/// rmdir, retrying while the cgroup is busy (its last process is exiting).
fn remove_dir_patiently(dir: &Path, patience: Duration) -> std::io::Result<()> {
    let t = Instant::now();
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && t.elapsed() < patience => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => return Err(e),
        }
    }
}

/// `__cgroup-guard`: this binary re-executed as the guardian that removes
/// dentrylab's memory cgroups when dentrylab ends, however it ends.
#[derive(Debug, clap::Args)]
pub(crate) struct GuardArgs {
    /// Directory the cgroups are made in.
    pub parent: PathBuf,
    /// The dentrylab process whose cgroups to remove.
    pub pid: u32,
}

/// The cgroup guardian's internal command.
pub(crate) const GUARD_ENTRY: crate::sys::internal::Entry<GuardArgs> = crate::sys::internal::Entry {
    name: GUARD_COMMAND,
    about: "Removes dentrylab's memory cgroups when dentrylab ends, however it ends",
    aliases: &[],
    run: |a| a.run(),
};

impl GuardArgs {
    pub(crate) fn run(&self) -> Result<()> {
        guard_main(&self.parent, self.pid)
    }
}

/// The guardian: wait for end-of-file on standard input, then remove
/// every cgroup of process `pid` under `parent`.
pub(crate) fn guard_main(parent: &Path, pid: u32) -> Result<()> {
    sys::guardian::wait_for_parent_end()?;
    let mine = format!("{PREFIX}{pid}-");
    let rd = std::fs::read_dir(parent).with_context(|| format!("guardian: cannot list {}", parent.display()))?;
    for e in rd.flatten() {
        if e.file_name().to_string_lossy().starts_with(&mine) {
            // A workload server (mitigate's or the mariadb victim's
            // mariadbd) may still run in it, and a process being killed
            // may still fork (mariadb-install-db's shell): kill whatever is
            // there again before each try.
            let t = Instant::now();
            loop {
                kill_procs(&e.path());
                match remove_dir_patiently(&e.path(), Duration::from_millis(200)) {
                    Ok(()) => break,
                    Err(_) if t.elapsed() < GUARD_PATIENCE => continue,
                    Err(err) => {
                        return Err(err).with_context(|| format!("guardian: cannot remove {}", e.path().display()));
                    }
                }
            }
        }
    }
    Ok(())
}
