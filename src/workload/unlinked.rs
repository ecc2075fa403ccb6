//! Create then unlink, as database temporary tables do (the node-lockup report's MariaDB
//! fleet): the file is gone, but on a disk filesystem its dentry stays in
//! the cache as a negative dentry.

use std::ffi::CStr;
use std::os::fd::BorrowedFd;

use anyhow::{Context, Result};
use nix::unistd::{UnlinkatFlags, unlinkat};

pub(crate) fn make(dir: BorrowedFd<'_>, name: &CStr) -> Result<()> {
    super::file::make(dir, name)?;
    unlinkat(dir, name, UnlinkatFlags::NoRemoveDir).with_context(|| format!("unlink {:?}", name))
}
