//! overlayfs, as a container runtime stacks it: a read-only lower layer
//! (the image), an upper and a work directory (the container's snapshot),
//! merged on a mount point. The lower, upper and work directories live on
//! a disk filesystem of the sandbox; the overlay itself is mounted in the
//! calling process's mount namespace (a container's own, made by
//! [`Sandbox::enter_nested`]), so it goes when that namespace dies.
//!
//! Which layer keeps what (fs/overlayfs/namei.c, `ovl_lookup`): a name
//! looked up in a merged directory is looked up in the upper directory
//! and then, unless the upper directory is opaque or the name was found
//! there, in each lower directory. A miss in the lower layer leaves a
//! negative dentry in the *lower* filesystem's dcache. Creating a new
//! name looks it up first, so every file a container creates leaves one
//! negative dentry in the image's filesystem; unmounting the overlay and
//! removing the upper directory frees the overlay's and the upper's
//! dentries, not that one. Unlinking a file the container made
//! (fs/overlayfs/dir.c, `ovl_remove_upper`) unlinks it in the upper
//! directory while holding an extra reference, so the upper dentry is
//! unhashed rather than kept negative, and then `d_drop`s the overlay
//! dentry: a temporary table leaves only the lower layer's negative
//! dentry behind.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use nix::mount::{MsFlags, mount};

use super::{Capacity, FsType, Mount, Sandbox};

/// The directories of one overlay mount.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Layers {
    pub lower: PathBuf,
    pub upper: PathBuf,
    pub work: PathBuf,
}

/// The mount data for `layers`. overlayfs splits its options at commas
/// and its lower directories at colons: paths holding either are refused.
pub(crate) fn options(layers: &Layers) -> Result<String> {
    let mut parts = Vec::new();
    for (key, p) in [("lowerdir", &layers.lower), ("upperdir", &layers.upper), ("workdir", &layers.work)] {
        let s = p.to_str().with_context(|| format!("overlay {key} {} is not UTF-8", p.display()))?;
        if s.contains([',', ':', '\\']) {
            bail!("overlay {key} {s:?} contains a comma, colon or backslash, which overlayfs cannot take");
        }
        parts.push(format!("{key}={s}"));
    }
    Ok(parts.join(","))
}

/// `--fs overlay`: the filesystems under an overlay of `reclaim` and
/// `create`. The lower layer is a directory on a disk filesystem (container
/// images live on the host's disk); the upper and work directories are on
/// a filesystem of their own (by default of the lower's type), so that
/// unmounting each in turn counts what each layer kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Stack {
    pub lower: FsType,
    pub upper: FsType,
}

impl std::fmt::Display for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "overlay (lower {}, upper {})", self.lower, self.upper)
    }
}

/// The two filesystems under an overlay, mounted in the sandbox, and the
/// directories the overlay is made of.
pub(crate) struct StackMounts {
    pub stack: Stack,
    pub upper: Mount,
    pub lower: Mount,
    pub layers: Layers,
}

/// The lower filesystem holds only the (empty) image directory.
const LOWER_CAPACITY: Capacity = Capacity { entries: 64, inodes: 64 };

impl Sandbox {
    /// Mounts the lower and upper filesystems of `stack` (the upper sized
    /// for `need`: what is created through the overlay lands there) and
    /// makes the image, upper and work directories.
    pub(crate) fn mount_stack(&mut self, stack: Stack, need: &Capacity) -> Result<StackMounts> {
        if !stack.lower.is_disk() {
            bail!("internal error: the overlay's lower layer must be on a disk filesystem, not {}", stack.lower);
        }
        let lower = self.mount(stack.lower, &LOWER_CAPACITY)?;
        let upper = self.mount(stack.upper, need)?;
        let layers = Layers {
            lower: lower.path().join("image"),
            upper: upper.path().join("upper"),
            work: upper.path().join("work"),
        };
        for d in [&layers.lower, &layers.upper, &layers.work] {
            std::fs::create_dir(d).with_context(|| format!("cannot create {}", d.display()))?;
        }
        Ok(StackMounts { stack, upper, lower, layers })
    }

    /// Mounts an overlay of `layers` on a fresh mount point of the sandbox,
    /// as a [`Mount`] that `umount` (timed) or dropping (detach) takes down.
    pub(crate) fn mount_overlay_here(&mut self, layers: &Layers) -> Result<Mount> {
        let path = self.mount_point()?;
        self.mount_overlay(layers, &path)?;
        // `fs` only matters for a remount, which an overlay never has
        // (no device): the lower's type stands in.
        Ok(Mount { path, fs: FsType::Ext4, mounted: true, device: None })
    }

    /// Mounts an overlay of `layers` on the empty directory `target`, in
    /// this process's mount namespace. Nothing unmounts it: it goes with
    /// the namespace (the container's death).
    pub(crate) fn mount_overlay(&self, layers: &Layers, target: &Path) -> Result<()> {
        let data = options(layers)?;
        mount(
            Some("dentrylab-overlay"),
            target,
            Some("overlay"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some(data.as_str()),
        )
        .with_context(|| format!("cannot mount overlay ({data}) on {}", target.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_name_each_layer_and_refuse_separators() {
        let l = Layers {
            lower: "/tmp/fs0/image".into(),
            upper: "/tmp/fs0/s/1/fs".into(),
            work: "/tmp/fs0/s/1/work".into(),
        };
        assert_eq!(options(&l).unwrap(), "lowerdir=/tmp/fs0/image,upperdir=/tmp/fs0/s/1/fs,workdir=/tmp/fs0/s/1/work");
        let bad = Layers { lower: "/tmp/a,b".into(), ..l.clone() };
        assert!(format!("{:#}", options(&bad).unwrap_err()).contains("lowerdir"));
        let bad = Layers { work: "/tmp/a:b".into(), ..l };
        assert!(format!("{:#}", options(&bad).unwrap_err()).contains("workdir"));
    }
}
