//! Hard links to one source file (seed 000's dentry-creator): each link is
//! one dentry, and all of them share a single inode.

use std::ffi::CStr;
use std::os::fd::BorrowedFd;
use std::path::Path;

use anyhow::{Context, Result};
use nix::unistd::{LinkatFlags, linkat};

/// Name of the one file every link points at, in the generator's root.
pub const SOURCE: &CStr = c"src";

pub fn prepare(root: &Path) -> Result<()> {
    let p = root.join("src");
    std::fs::File::create(&p).with_context(|| format!("cannot create the link source {}", p.display()))?;
    Ok(())
}

pub fn make(root: BorrowedFd<'_>, dir: BorrowedFd<'_>, name: &CStr) -> Result<()> {
    linkat(root, SOURCE, dir, name, LinkatFlags::empty())
        .with_context(|| format!("link {:?}", name))
}
