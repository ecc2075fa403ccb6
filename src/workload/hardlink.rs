//! Hard links (seed 000's dentry-creator): each link is one dentry, and
//! links share an inode. Each generator thread links to a source file of
//! its own: `link()` locks the source inode, so one shared source would
//! serialise the threads.

use std::ffi::CStr;
use std::os::fd::BorrowedFd;
use std::path::Path;

use anyhow::{Context, Result};
use nix::unistd::{LinkatFlags, linkat};

/// Name of worker `w`'s source file, in the generator's root.
pub fn source_name(w: usize) -> String {
    format!("src{w}")
}

pub fn prepare(root: &Path, workers: usize) -> Result<()> {
    for w in 0..workers {
        let p = root.join(source_name(w));
        std::fs::File::create(&p).with_context(|| format!("cannot create the link source {}", p.display()))?;
    }
    Ok(())
}

pub fn make(root: BorrowedFd<'_>, source: &CStr, dir: BorrowedFd<'_>, name: &CStr) -> Result<()> {
    linkat(root, source, dir, name, LinkatFlags::empty()).with_context(|| format!("link {:?}", name))
}
