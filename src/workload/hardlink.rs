//! Hard links to one source file (seed 000's dentry-creator): each link is
//! one dentry, and all of them share a single inode. Filesystems cap the
//! links per inode (ext4: 65000); when the cap is hit, the generator makes a
//! fresh source file and goes on, so a few extra inodes exist.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::unistd::{LinkatFlags, linkat};

/// Name of the one file every link points at, in the generator's root.
pub const SOURCE: &CStr = c"src";

pub fn prepare(root: &Path) -> Result<()> {
    let p = root.join("src");
    std::fs::File::create(&p).with_context(|| format!("cannot create the link source {}", p.display()))?;
    Ok(())
}

/// The file one generator thread links to.
pub struct Source {
    root: File,
    name: CString,
    tag: String,
    made: u32,
}

impl Source {
    /// `tag` makes the names of extra sources unique to this thread.
    pub fn open(root: &Path, tag: String) -> Result<Source> {
        let root = File::open(root).context("cannot open the generator's root")?;
        Ok(Source { root, name: SOURCE.to_owned(), tag, made: 0 })
    }

    pub fn link(&mut self, dir: BorrowedFd<'_>, name: &CStr) -> Result<()> {
        match linkat(self.root.as_fd(), self.name.as_c_str(), dir, name, LinkatFlags::empty()) {
            Err(Errno::EMLINK) => {
                self.made += 1;
                self.name = CString::new(format!("src.{}.{}", self.tag, self.made)).expect("no NUL in the name");
                super::file::make(self.root.as_fd(), &self.name).context("cannot make a fresh link source")?;
                linkat(self.root.as_fd(), self.name.as_c_str(), dir, name, LinkatFlags::empty())
                    .with_context(|| format!("link {:?}", name))
            }
            r => r.with_context(|| format!("link {:?}", name)),
        }
    }
}
