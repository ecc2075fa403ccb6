//! Disk filesystems for the sandbox: a sparse backing file in the scratch
//! tmpfs, a loop device with autoclear, `mkfs`, `mount`.
//!
//! Nothing outlives dentrylab: the backing file's name is removed as soon
//! as the loop device holds it open, and the loop device detaches itself
//! when the mount goes away — at umount, or when the mount namespace dies
//! with the process (SIGKILL included). A failure part-way closes the
//! device before anything is mounted, which detaches it too.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use nix::mount::{MsFlags, mount as mount2};

use super::{Capacity, FsType};
use crate::sys::{self, loopdev};

const MIB: u64 = 1 << 20;
/// Room for the filesystem's own metadata beyond the entries.
const EXT4_BASE_BYTES: u64 = 64 * MIB;
/// mkfs.xfs refuses filesystems under 300 MB.
const XFS_MIN_BYTES: u64 = 512 * MIB;
/// Inodes mkfs.ext4 makes beyond what the workload asked for.
const SPARE_INODES: u64 = 4096;
/// Generous bytes per directory entry (ext4 needs about 16–24 with short names).
const BYTES_PER_ENTRY: u64 = 64;
/// Generous bytes per inode (256-byte ext4 inodes, 512-byte xfs inodes, plus allocation).
const BYTES_PER_INODE: u64 = 1024;

/// Size of the sparse backing file: only what mkfs and the workload write
/// takes memory, the rest is a hole.
pub(super) fn backing_bytes(fs: FsType, need: &Capacity) -> u64 {
    let want = EXT4_BASE_BYTES + need.entries * BYTES_PER_ENTRY + (need.inodes + SPARE_INODES) * BYTES_PER_INODE;
    let want = want.div_ceil(MIB) * MIB;
    match fs {
        FsType::Xfs => want.max(XFS_MIN_BYTES),
        FsType::Tmpfs | FsType::Ext4 => want,
    }
}

/// The mkfs command line for `fs` on `device`, chosen to be fast (no
/// discard, no zeroing of inode tables or journal) and to give enough
/// inodes. ext4 goes without a journal: the dentry cache does not care,
/// and creating millions of entries is faster.
pub(super) fn mkfs_command(fs: FsType, device: &Path, need: &Capacity) -> Command {
    let mut c;
    match fs {
        FsType::Ext4 => {
            c = Command::new("mkfs.ext4");
            c.args(["-q", "-F", "-m", "0", "-b", "4096", "-O", "^has_journal,large_dir"])
                .args(["-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard"])
                .arg("-N")
                .arg((need.inodes + SPARE_INODES).to_string());
        }
        FsType::Xfs => {
            c = Command::new("mkfs.xfs");
            // xfs allocates inodes on demand but caps their space at
            // imaxpct (25% below 1 TB): on the image sized above that is
            // about 300k inodes, and `create --kind file --fs xfs` at 500k
            // failed with ENOSPC. The image holds little but inodes.
            c.args(["-q", "-f", "-K", "-i", "maxpct=90"]);
        }
        FsType::Tmpfs => unreachable!("tmpfs has no mkfs"),
    }
    c.arg(device);
    c
}

fn package(fs: FsType) -> &'static str {
    match fs {
        FsType::Xfs => "xfsprogs",
        FsType::Ext4 | FsType::Tmpfs => "e2fsprogs",
    }
}

/// Makes and mounts a disk filesystem of `fs` on `target`.
pub(super) fn mount(scratch: &Path, target: &Path, fs: FsType, need: &Capacity) -> Result<()> {
    let dev = make(scratch, target, fs, need)?;
    mount_device(&dev, target, fs)?;
    // The mount holds the device now; closing ours arms the autoclear.
    drop(dev);
    Ok(())
}

/// Makes a disk filesystem of `fs` on a fresh loop device (named after
/// `target`) and returns the device, held open: it detaches itself once it
/// is closed and no mount holds it.
pub(super) fn make(scratch: &Path, target: &Path, fs: FsType, need: &Capacity) -> Result<loopdev::LoopDevice> {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "fs".into());
    let backing_path = scratch.join(format!("{name}.img"));
    let backing = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&backing_path)
        .with_context(|| format!("cannot create the backing file {}", backing_path.display()))?;
    let bytes = backing_bytes(fs, need);
    let attached = backing
        .set_len(bytes)
        .with_context(|| format!("cannot size the backing file to {}", crate::size::bytes(bytes)))
        .and_then(|_| loopdev::attach(&backing));
    // The loop device holds the file open; its name is no longer needed.
    let _ = std::fs::remove_file(&backing_path);
    let dev = attached?;
    drop(backing);
    let dev_path = dev.path();

    let mut cmd = mkfs_command(fs, &dev_path, need);
    sys::command_dies_with_parent(&mut cmd).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let prog = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd.output().map_err(|e| {
        anyhow::anyhow!("cannot run {prog} ({e}): --fs {fs} needs it; install the {} package", package(fs))
    })?;
    if !out.status.success() {
        bail!("{prog} {} failed ({}): {}", dev_path.display(), out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(dev)
}

/// Mounts the filesystem on `dev` on `target`.
pub(super) fn mount_device(dev: &loopdev::LoopDevice, target: &Path, fs: FsType) -> Result<()> {
    let dev_path = dev.path();
    // ext4: do not zero the inode tables in the background (it would
    // write them all into the backing file's memory).
    let data = match fs {
        FsType::Ext4 => Some("noinit_itable"),
        FsType::Xfs | FsType::Tmpfs => None,
    };
    mount2(Some(&dev_path), target, Some(fs.to_string().as_str()), MsFlags::MS_NOSUID | MsFlags::MS_NODEV, data)
        .with_context(|| format!("cannot mount {fs} from {} on {}", dev_path.display(), target.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backing_file_grows_with_the_workload() {
        let small = backing_bytes(FsType::Ext4, &Capacity { entries: 1000, inodes: 10 });
        let big = backing_bytes(FsType::Ext4, &Capacity { entries: 1_000_000, inodes: 1_000_000 });
        assert!(small >= EXT4_BASE_BYTES && small.is_multiple_of(MIB));
        assert!(big >= 1_000_000 * (BYTES_PER_ENTRY + BYTES_PER_INODE));
        assert_eq!(backing_bytes(FsType::Xfs, &Capacity::default()), XFS_MIN_BYTES);
    }

    #[test]
    fn mkfs_xfs_lets_inodes_fill_the_image() {
        let c = mkfs_command(FsType::Xfs, Path::new("/dev/loop9"), &Capacity { entries: 5, inodes: 1_000_000 });
        let args: Vec<_> = c.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        let i = args.iter().position(|a| a == "-i").expect("-i");
        assert_eq!(args[i + 1], "maxpct=90");
    }

    #[test]
    fn mkfs_asks_for_enough_inodes() {
        let c = mkfs_command(FsType::Ext4, Path::new("/dev/loop9"), &Capacity { entries: 5, inodes: 100_000 });
        let args: Vec<String> = c.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        let i = args.iter().position(|a| a == "-N").unwrap();
        assert_eq!(args[i + 1], (100_000 + SPARE_INODES).to_string());
        assert_eq!(args.last().unwrap(), "/dev/loop9");
    }
}
