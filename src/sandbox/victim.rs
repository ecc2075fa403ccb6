//! What `reclaim --victims` does to namespaces and mounts, one thread at a
//! time: a thread of its own mount namespace (made before the run's
//! filesystem is mounted, so that it holds no copy of it), a small tmpfs
//! mounted and unmounted there, a network namespace made afresh. Each
//! applies to the calling thread only (`unshare` of a thread's own
//! `fs_struct` and `nsproxy`), and goes away with the thread: nothing a
//! victim makes outlives dentrylab.

use std::path::Path;

use anyhow::{Context, Result};
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sched::{CloneFlags, unshare};

/// Size of the victim's tmpfs: as small as a Kubernetes secret volume.
pub(crate) const VICTIM_TMPFS_OPTIONS: &str = "size=1m,mode=0700";

/// Moves the calling thread into a mount namespace of its own, its mounts
/// private. Call it before the run's filesystem is mounted.
pub(crate) fn own_mount_namespace() -> Result<()> {
    unshare(CloneFlags::CLONE_NEWNS).context("victim: unshare(CLONE_NEWNS) of its thread")?;
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .context("victim: cannot make its namespace's mounts private")
}

/// Mounts a small tmpfs on `dir` and unmounts it: what a container's
/// secret or emptyDir volume costs the kubelet.
pub(crate) fn mount_cycle(dir: &Path) -> Result<()> {
    mount(
        Some("dentrylab-victim"),
        dir,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(VICTIM_TMPFS_OPTIONS),
    )
    .with_context(|| format!("victim: mount tmpfs on {}", dir.display()))?;
    umount2(dir, MntFlags::empty()).with_context(|| format!("victim: umount {}", dir.display()))
}

/// Gives the calling thread a new network namespace (the last one it had
/// is torn down by the kernel): a pod sandbox's network.
pub(crate) fn new_net_namespace() -> Result<()> {
    unshare(CloneFlags::CLONE_NEWNET).context("victim: unshare(CLONE_NEWNET)")
}
