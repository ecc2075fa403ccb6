//! The sandbox: a private mount namespace holding every filesystem a
//! benchmark creates. This module is the only place that mounts.
//!
//! dentrylab calls [`Sandbox::enter`] while it is still single-threaded. The
//! process then lives in its own mount namespace (mounts made private
//! recursively, so nothing propagates back), with a fresh tmpfs over `/tmp`
//! as the scratch area for mount points and backing files. When the process
//! dies, however it dies (Ctrl-C, SIGKILL, panic), the kernel tears the
//! namespace down and every mount in it goes away with it; nothing was ever
//! written to a real filesystem. Files that dentrylab writes for the user
//! (`--json`, `--markdown`, the calibration) are opened *before* entering.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sched::{CloneFlags, unshare};
use serde::{Deserialize, Serialize};

use crate::sys;

/// Where the scratch tmpfs is mounted inside the namespace.
const SCRATCH: &str = "/tmp";

/// The filesystem that holds the dentries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsType {
    Tmpfs,
}

impl std::fmt::Display for FsType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FsType::Tmpfs => "tmpfs",
        })
    }
}

/// How the sandbox got its privileges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Privilege {
    /// Real root: a mount namespace of its own.
    Root,
    /// An unprivileged user namespace with a mount namespace inside.
    UserNamespace,
}

pub struct Sandbox {
    scratch: PathBuf,
    next: u32,
    pub privilege: Privilege,
}

impl Sandbox {
    /// Moves this process into a private mount namespace with a scratch
    /// tmpfs. Must be called before any thread is spawned.
    pub fn enter() -> Result<Sandbox> {
        if sys::thread_count() > 1 {
            bail!("internal error: the sandbox must be entered before any thread starts");
        }
        let privilege = if sys::is_root() {
            unshare(CloneFlags::CLONE_NEWNS).context(
                "cannot create a private mount namespace (unshare CLONE_NEWNS); \
                 is this running inside a container without CAP_SYS_ADMIN?",
            )?;
            Privilege::Root
        } else {
            enter_user_namespace()?;
            Privilege::UserNamespace
        };
        mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
            .context("cannot make the sandbox's mounts private (mount --make-rprivate /)")?;
        mount(
            Some("dentrylab-scratch"),
            SCRATCH,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some("mode=0700,nr_inodes=0"),
        )
        .with_context(|| format!("cannot mount the sandbox's scratch tmpfs on {SCRATCH}"))?;
        Ok(Sandbox { scratch: PathBuf::from(SCRATCH), next: 0, privilege })
    }

    /// The scratch directory (a tmpfs private to this process).
    pub fn scratch(&self) -> &Path {
        &self.scratch
    }

    /// Mounts a fresh filesystem of `fs` for one benchmark run.
    pub fn mount(&mut self, fs: FsType) -> Result<Mount> {
        let path = self.scratch.join(format!("fs{}", self.next));
        self.next += 1;
        std::fs::create_dir(&path).with_context(|| format!("cannot create mount point {}", path.display()))?;
        match fs {
            FsType::Tmpfs => {
                mount(Some("dentrylab"), &path, Some("tmpfs"), MsFlags::empty(), Some("nr_inodes=0,mode=0755"))
                    .with_context(|| format!("cannot mount tmpfs on {}", path.display()))?;
            }
        }
        Ok(Mount { path, fs, mounted: true })
    }
}

/// One mounted filesystem inside the sandbox. Dropping it detaches it.
pub struct Mount {
    path: PathBuf,
    pub fs: FsType,
    mounted: bool,
}

impl Mount {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Unmounts, returning how long the `umount` call took. This is the
    /// `shrink_dcache_for_umount` reclaim path.
    pub fn umount(&mut self) -> Result<Duration> {
        let t = Instant::now();
        umount2(&self.path, MntFlags::empty()).with_context(|| format!("umount {}", self.path.display()))?;
        let took = t.elapsed();
        self.mounted = false;
        let _ = std::fs::remove_dir(&self.path);
        Ok(took)
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if self.mounted {
            let _ = umount2(&self.path, MntFlags::MNT_DETACH);
            let _ = std::fs::remove_dir(&self.path);
        }
    }
}

fn enter_user_namespace() -> Result<()> {
    let uid = nix::unistd::geteuid();
    let gid = nix::unistd::getegid();
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).map_err(|e| {
        anyhow::anyhow!(
            "creating the sandbox needs root, or unprivileged user namespaces ({e}); \
             run dentrylab as root (sudo), or allow user namespaces \
             (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone)"
        )
    })?;
    std::fs::write("/proc/self/setgroups", "deny").context("cannot write /proc/self/setgroups")?;
    std::fs::write("/proc/self/uid_map", format!("0 {uid} 1")).context("cannot write /proc/self/uid_map")?;
    std::fs::write("/proc/self/gid_map", format!("0 {gid} 1")).context("cannot write /proc/self/gid_map")?;
    Ok(())
}
