//! Hard links (the node-lockup report's dentry-creator): each link is one dentry, and
//! links share an inode. Each generator thread links to a source file of
//! its own: `link()` locks the source inode, so one shared source would
//! serialise the threads. Filesystems cap the links per inode (ext4:
//! 65000); when the cap is hit, the generator makes a fresh source file and
//! goes on, so a few extra inodes exist.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::unistd::{LinkatFlags, linkat};

/// Name of worker `w`'s first source file, in the generator's root.
pub(crate) fn source_name(w: usize) -> String {
    format!("src{w}")
}

/// Creates one source file per worker.
pub(crate) fn prepare(root: &Path, workers: usize) -> Result<()> {
    for w in 0..workers {
        let p = root.join(source_name(w));
        std::fs::File::create(&p).with_context(|| format!("cannot create the link source {}", p.display()))?;
    }
    Ok(())
}

/// The file one generator thread links to.
pub(crate) struct Source {
    root: File,
    name: CString,
    tag: String,
    made: u32,
}

impl Source {
    /// Worker `worker`'s source; `first` (the work item's first index)
    /// keeps the names of extra sources unique.
    pub(crate) fn open(root: &Path, worker: usize, first: u64) -> Result<Source> {
        let root = File::open(root).context("cannot open the generator's root")?;
        let name = CString::new(source_name(worker)).expect("no NUL in a source name");
        Ok(Source { root, name, tag: format!("{worker}.{first}"), made: 0 })
    }

    pub(crate) fn link(&mut self, dir: BorrowedFd<'_>, name: &CStr) -> Result<()> {
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
