//! Pure parsers for the kernel files dentrylab reads.
//!
//! Every parser takes `impl BufRead` and does no I/O of its own, so it can be
//! fed a fixture captured from a real kernel. Errors name the file and the
//! token that failed. Reading the live files goes through [`ProcRoot`], the
//! one place that knows where `/proc` is (tests point it at a fixture tree).
//!
//! In: the bytes of `/proc` and `/sys` files. Out: typed values. Imports
//! only the utilities; imported by every layer above it.

pub mod cgroup;
pub(crate) mod cpu_stat;
pub mod dentry_state;
pub(crate) mod kallsyms;
pub(crate) mod kernel_log;
pub(crate) mod kmsg;
pub(crate) mod memcg;
pub(crate) mod meminfo;
pub mod mountinfo;
pub(crate) mod oom;
pub(crate) mod shrinker;
pub mod slabinfo;
pub(crate) mod stack;

#[cfg(test)]
mod proptests;

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Where the proc filesystem is mounted (`/proc` unless a test or
/// `--proc-root` says otherwise).
#[derive(Debug, Clone)]
pub struct ProcRoot(PathBuf);

impl Default for ProcRoot {
    fn default() -> Self {
        ProcRoot(PathBuf::from("/proc"))
    }
}

impl ProcRoot {
    pub(crate) fn new(path: impl Into<PathBuf>) -> Self {
        ProcRoot(path.into())
    }

    /// Whether this is the live `/proc` (not a fixture tree or a host
    /// `/proc` mounted elsewhere): only then may files outside it, such as
    /// debugfs or `/boot`, be taken to describe the same kernel.
    pub(crate) fn is_default(&self) -> bool {
        self.0 == Path::new("/proc")
    }

    /// A one-line text file such as `sys/kernel/osrelease`, trimmed.
    pub(crate) fn read_line(&self, rel: &str) -> Result<String> {
        let p = self.path(rel);
        let s = std::fs::read_to_string(&p).with_context(|| format!("cannot read {}", p.display()))?;
        Ok(s.trim().to_string())
    }

    pub(crate) fn root(&self) -> &Path {
        &self.0
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    pub(crate) fn open(&self, rel: &str) -> Result<BufReader<File>> {
        let p = self.path(rel);
        let f = File::open(&p).with_context(|| format!("cannot open {}", p.display()))?;
        Ok(BufReader::new(f))
    }

    pub fn dentry_state(&self) -> Result<dentry_state::DentryState> {
        dentry_state::parse(self.open("sys/fs/dentry-state")?)
    }

    pub(crate) fn meminfo(&self) -> Result<meminfo::MemInfo> {
        meminfo::parse(self.open("meminfo")?)
    }

    /// The dentry line of slabinfo, or `None` when slabinfo cannot be read
    /// (it needs root).
    pub fn slab_dentry(&self) -> Option<slabinfo::SlabCache> {
        let r = self.open("slabinfo").ok()?;
        slabinfo::find(r, "dentry").ok().flatten()
    }

    /// A small integer sysctl such as `sys/kernel/watchdog_thresh`.
    pub(crate) fn sysctl_u64(&self, rel: &str) -> Result<u64> {
        let p = self.path(rel);
        let s = std::fs::read_to_string(&p).with_context(|| format!("cannot read {}", p.display()))?;
        s.trim().parse().with_context(|| format!("{}: expected a whole number, found {:?}", p.display(), s.trim()))
    }
}

/// Parses one whitespace token as an unsigned number, naming the file and
/// the field on failure.
pub(crate) fn num(file: &str, field: &str, tok: Option<&str>) -> Result<u64> {
    let tok = tok.with_context(|| format!("{file}: missing field {field}"))?;
    tok.parse().with_context(|| format!("{file}: field {field}: expected a number, found {tok:?}"))
}

/// A captured proc tree, `tests/fixtures/proc/<kernel>` (unit tests).
#[cfg(test)]
pub(crate) fn fixture_dir(kernel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc").join(kernel)
}
