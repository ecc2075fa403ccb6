//! Empty regular files made with mknod: a dentry and an inode each.

use std::ffi::CStr;
use std::os::fd::BorrowedFd;

use anyhow::{Context, Result};
use nix::sys::stat::{Mode, SFlag, mknodat};

pub(crate) fn make(dir: BorrowedFd<'_>, name: &CStr) -> Result<()> {
    mknodat(dir, name, SFlag::S_IFREG, Mode::from_bits_truncate(0o644), 0).with_context(|| format!("mknod {:?}", name))
}
