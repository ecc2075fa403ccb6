//! Failed lookups of names that do not exist: each leaves one negative
//! dentry behind on a disk filesystem (seeds 001 and 002). tmpfs deletes
//! negative dentries as soon as they are unused, so it keeps none.

use std::ffi::CStr;
use std::os::fd::BorrowedFd;

use anyhow::{Result, bail};
use nix::errno::Errno;
use nix::fcntl::AtFlags;
use nix::sys::stat::fstatat;

pub(crate) fn make(dir: BorrowedFd<'_>, name: &CStr) -> Result<()> {
    match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Err(Errno::ENOENT) => Ok(()),
        Ok(_) => bail!("{name:?} exists in a fresh filesystem: a failed lookup was expected"),
        Err(e) => bail!("stat {name:?}: {e}"),
    }
}

/// Failed lookups of the decimal names `first..first + n` in `dir`: `n`
/// negative dentries on a disk filesystem.
pub(crate) fn make_range(dir: BorrowedFd<'_>, first: u64, n: u64) -> Result<()> {
    let mut name = super::NameBuf::default();
    for i in first..first + n {
        make(dir, name.set(i))?;
    }
    Ok(())
}
