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
//!
//! Disk filesystems (`--fs ext4|xfs`) sit on loop devices with autoclear
//! over sparse files in the scratch tmpfs ([`disk`]): they detach when the
//! namespace dies. Memory cgroups (`--method memcg`) are the one thing
//! outside the namespace; a guardian process removes them ([`cgroup`]).
//!
//! In: the filesystem, size and layers a benchmark asks for. Out: mounted
//! filesystems in the private namespace, loop devices, overlay stacks,
//! memory cgroups. Imports `sys`, `procfs`, `env` and the utilities;
//! imported by `workload`, `bench`, `report` (its plain types) and `cli`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sched::{CloneFlags, unshare};
use serde::{Deserialize, Serialize};

use crate::sys;

pub(crate) mod cgroup;
mod disk;
pub(crate) mod overlay;
pub(crate) mod pod;
pub(crate) mod victim;

/// Where the scratch tmpfs is mounted inside the namespace.
const SCRATCH: &str = "/tmp";

/// The filesystem that holds the dentries.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
    strum::VariantNames,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub(crate) enum FsType {
    Tmpfs,
    /// ext4 on a loop device over a sparse file in the scratch tmpfs.
    Ext4,
    /// xfs on a loop device over a sparse file in the scratch tmpfs.
    Xfs,
}

impl FsType {
    /// Every filesystem's name, in declaration order (from the enum: strum).
    pub(crate) const NAMES: &'static [&'static str] = <FsType as strum::VariantNames>::VARIANTS;

    /// Whether the filesystem lives on a (loop) block device.
    pub(crate) fn is_disk(self) -> bool {
        !matches!(self, FsType::Tmpfs)
    }
}

impl std::fmt::Display for FsType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str((*self).into())
    }
}

impl std::str::FromStr for FsType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        <FsType as strum::VariantArray>::VARIANTS
            .iter()
            .copied()
            .find(|f| <&str>::from(*f) == s)
            .ok_or_else(|| format!("unknown filesystem {s:?}: use one of {}", FsType::NAMES.join(", ")))
    }
}

/// What a filesystem must hold, so a disk filesystem can be sized for it.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub(crate) struct Capacity {
    /// Directory entries that will exist at once.
    pub entries: u64,
    /// Inodes that will exist at once.
    pub inodes: u64,
}

/// How the sandbox got its privileges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Privilege {
    /// Real root: a mount namespace of its own.
    Root,
    /// An unprivileged user namespace with a mount namespace inside.
    UserNamespace,
}

pub(crate) struct Sandbox {
    scratch: PathBuf,
    next: u32,
    pub privilege: Privilege,
    /// Removes the run's memory cgroups however dentrylab ends (`memcg`).
    guardian: Option<cgroup::Guardian>,
}

impl Sandbox {
    /// Moves this process into a private mount namespace with a scratch
    /// tmpfs. Must be called before any thread is spawned.
    pub(crate) fn enter() -> Result<Sandbox> {
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
        Ok(Sandbox { scratch: PathBuf::from(SCRATCH), next: 0, privilege, guardian: None })
    }

    /// The scratch directory (a tmpfs private to this process).
    pub(crate) fn scratch(&self) -> &Path {
        &self.scratch
    }

    /// A process started by this one (already inside the sandbox) moves
    /// into a mount namespace of its own, so the filesystems it mounts
    /// exist only there and go away when it exits (`ns-exit`). The scratch
    /// tmpfs is shared with the parent.
    pub(crate) fn enter_nested() -> Result<Sandbox> {
        if sys::thread_count() > 1 {
            bail!("internal error: a nested sandbox must be entered before any thread starts");
        }
        unshare(CloneFlags::CLONE_NEWNS).context("cannot create a nested mount namespace (unshare CLONE_NEWNS)")?;
        mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
            .context("cannot make the nested namespace's mounts private")?;
        let privilege = if sys::is_root() { Privilege::Root } else { Privilege::UserNamespace };
        Ok(Sandbox { scratch: PathBuf::from(SCRATCH), next: 0, privilege, guardian: None })
    }

    /// Moves this process into a private mount namespace and nothing more
    /// (no scratch tmpfs: the filesystem it sees is the host's). What a
    /// child mounts there, such as the bind mount of its network namespace
    /// `runsc --network=none` leaves under its state directory, never
    /// reaches the host and goes away when dentrylab exits. Root only;
    /// before any thread starts.
    pub(crate) fn private_mount_namespace() -> Result<()> {
        if sys::thread_count() > 1 {
            bail!("internal error: the mount namespace must be entered before any thread starts");
        }
        unshare(CloneFlags::CLONE_NEWNS).context("cannot create a private mount namespace (unshare CLONE_NEWNS)")?;
        mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
            .context("cannot make the namespace's mounts private (mount --make-rprivate /)")
    }

    /// Hands the sandbox the cgroup guardian started before entering it.
    pub(crate) fn adopt(&mut self, guardian: cgroup::Guardian) {
        self.guardian = Some(guardian);
    }

    /// Makes a memory cgroup for one run (the guardian must be adopted).
    pub(crate) fn memcg(&mut self) -> Result<cgroup::MemCgroup> {
        let g = self
            .guardian
            .as_ref()
            .context("internal error: the cgroup guardian must be started before the sandbox is entered")?;
        self.next += 1;
        g.cgroup(self.next)
    }

    /// The path of the `reclaim --victims cgroup` victim's cgroup (made and
    /// removed by the victim; the guardian, which must be adopted, removes
    /// it if dentrylab dies meanwhile).
    pub(crate) fn victim_cgroup(&self) -> Result<PathBuf> {
        let g = self
            .guardian
            .as_ref()
            .context("internal error: the cgroup guardian must be started before the sandbox is entered")?;
        Ok(g.path_of("victim"))
    }

    /// Creates a fresh, empty mount point in the scratch tmpfs.
    pub(crate) fn mount_point(&mut self) -> Result<PathBuf> {
        let path = self.scratch.join(format!("fs{}", self.next));
        self.next += 1;
        std::fs::create_dir(&path).with_context(|| format!("cannot create mount point {}", path.display()))?;
        Ok(path)
    }

    /// Mounts a fresh filesystem of `fs`, big enough for `need`, for one
    /// benchmark run.
    pub(crate) fn mount(&mut self, fs: FsType, need: &Capacity) -> Result<Mount> {
        let path = self.mount_point()?;
        self.mount_at(path, fs, need)
    }

    /// Mounts a fresh filesystem of `fs` on the empty directory `path`.
    /// A disk filesystem gets a sparse backing file in the scratch tmpfs,
    /// bound to a loop device with autoclear: the file's name is removed at
    /// once, and the device detaches itself when the mount goes away.
    pub(crate) fn mount_at(&self, path: PathBuf, fs: FsType, need: &Capacity) -> Result<Mount> {
        match fs {
            FsType::Tmpfs => {
                mount(Some("dentrylab"), &path, Some("tmpfs"), MsFlags::empty(), Some("nr_inodes=0,mode=0755"))
                    .with_context(|| format!("cannot mount tmpfs on {}", path.display()))?;
            }
            FsType::Ext4 | FsType::Xfs => disk::mount(&self.scratch, &path, fs, need)?,
        }
        Ok(Mount { path, fs, mounted: true, device: None })
    }

    /// Like [`Sandbox::mount`] for a disk filesystem, keeping its loop
    /// device open so that [`Mount::remount`] can mount it again (with a
    /// cold dentry and inode cache). The device still detaches itself when
    /// the mount is dropped or dentrylab dies.
    pub(crate) fn mount_remountable(&mut self, fs: FsType, need: &Capacity) -> Result<Mount> {
        if !fs.is_disk() {
            bail!("internal error: only a disk filesystem can be mounted again ({fs} keeps its files in memory)");
        }
        let path = self.mount_point()?;
        let dev = disk::make(&self.scratch, &path, fs, need)?;
        disk::mount_device(&dev, &path, fs)?;
        Ok(Mount { path, fs, mounted: true, device: Some(dev) })
    }
}

/// How long `umount` retries while the filesystem is busy (lookups by
/// `--contend` threads hold short references to the mount).
const UMOUNT_BUSY_RETRY: Duration = Duration::from_secs(5);

/// One mounted filesystem inside the sandbox. Dropping it detaches it.
pub(crate) struct Mount {
    path: PathBuf,
    fs: FsType,
    mounted: bool,
    /// Held open by [`Sandbox::mount_remountable`]; dropped after the mount.
    device: Option<sys::loopdev::LoopDevice>,
}

impl Mount {
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the filesystem's dirty metadata, so the reclaim that follows
    /// is not also timed writing it back.
    pub(crate) fn sync(&self) -> Result<()> {
        let dir = std::fs::File::open(&self.path).with_context(|| format!("cannot open {}", self.path.display()))?;
        use std::os::fd::AsFd;
        sys::syncfs(dir.as_fd()).with_context(|| format!("syncfs {}", self.path.display()))
    }

    /// Unmounts, returning how long the successful `umount` call took. This
    /// is the `shrink_dcache_for_umount` reclaim path. A busy filesystem
    /// (a contending lookup holds the mount for a moment) is retried.
    pub(crate) fn umount(&mut self) -> Result<Duration> {
        let start = Instant::now();
        let took = loop {
            let t = Instant::now();
            match umount2(&self.path, MntFlags::empty()) {
                Ok(()) => break t.elapsed(),
                Err(nix::errno::Errno::EBUSY) if start.elapsed() < UMOUNT_BUSY_RETRY => std::thread::yield_now(),
                Err(e) => return Err(e).with_context(|| format!("umount {}", self.path.display())),
            }
        };
        self.mounted = false;
        if self.device.is_none() {
            let _ = std::fs::remove_dir(&self.path);
        }
        Ok(took)
    }

    /// Unmounts and mounts the same filesystem again: every dentry and
    /// inode of it leaves the caches, as after a reboot, while its files
    /// stay. Returns how long the umount and the mount took.
    pub(crate) fn remount(&mut self) -> Result<(Duration, Duration)> {
        if self.device.is_none() {
            bail!("internal error: remount needs a mount made by mount_remountable");
        }
        let down = self.umount()?;
        let t = Instant::now();
        let dev = self.device.as_ref().expect("checked above");
        disk::mount_device(dev, &self.path, self.fs)?;
        self.mounted = true;
        Ok((down, t.elapsed()))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if self.mounted {
            let _ = umount2(&self.path, MntFlags::MNT_DETACH);
        }
        let _ = std::fs::remove_dir(&self.path);
        // A held loop device is closed after this (a field): it detaches.
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

#[cfg(test)]
mod names_tests {
    use super::FsType;

    /// The filesystems' names come from the enum (strum), as `--fs` and
    /// the results always named them.
    #[test]
    fn fs_names_come_from_the_enum() {
        assert_eq!(FsType::NAMES, ["tmpfs", "ext4", "xfs"]);
        for &f in <FsType as strum::VariantArray>::VARIANTS {
            assert_eq!(f.to_string().parse::<FsType>(), Ok(f));
            assert_eq!(serde_json::to_value(f).unwrap(), f.to_string());
        }
    }
}
