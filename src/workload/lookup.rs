//! The operations `scale` repeats in a loop, and the tree they need: a deep
//! path to stat and open, a missing name at the same depth, a directory all
//! workers share for create+unlink, and one private directory per worker.
//!
//! A worker times one call in every `sample_every` with CLOCK_MONOTONIC (the
//! vDSO: no system call), so the measurement costs a few ns per sampled call
//! and nothing on the others; it also checks its deadline only then.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use anyhow::{Context, Result, bail};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, open, openat};
use nix::sys::stat::{Mode, fstatat};
use nix::unistd::{UnlinkatFlags, unlinkat};
use serde::{Deserialize, Serialize};

use crate::histogram::Histogram;
use crate::sys;

/// Path components from the mount root to the deep file (seven directories and the file).
pub(crate) const DEEP_LEVELS: usize = 8;

/// One operation a worker repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Op {
    /// stat(2) of an existing file 8 components deep (every component a cached dentry).
    Stat,
    /// stat(2) of a missing name in the deepest directory (a negative lookup).
    StatMissing,
    /// open(2) of the deep file read-only, then close(2).
    OpenClose,
    /// Create a file (open O_CREAT|O_EXCL, close) and unlink it, in one directory all workers share.
    CreateUnlinkShared,
    /// The same, each worker in a directory of its own.
    CreateUnlinkPrivate,
}

impl Op {
    pub(crate) const ALL: [Op; 5] =
        [Op::Stat, Op::StatMissing, Op::OpenClose, Op::CreateUnlinkShared, Op::CreateUnlinkPrivate];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Stat => "stat",
            Op::StatMissing => "stat-missing",
            Op::OpenClose => "open-close",
            Op::CreateUnlinkShared => "create-unlink-shared",
            Op::CreateUnlinkPrivate => "create-unlink-private",
        }
    }

    /// What one counted operation is, in system calls.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Op::Stat => "fstatat of an existing file 8 components below the mount root",
            Op::StatMissing => "fstatat of a missing name in the 7th-level directory (ENOENT)",
            Op::OpenClose => "openat O_RDONLY of the 8-deep file + close",
            Op::CreateUnlinkShared => "openat O_CREAT|O_EXCL + close + unlinkat, all workers in one directory",
            Op::CreateUnlinkPrivate => "openat O_CREAT|O_EXCL + close + unlinkat, one directory per worker",
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Op {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Op::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| format!("unknown operation {s:?}: use {}", Op::ALL.map(Op::name).join(", ")))
    }
}

fn deep_dirs() -> String {
    (1..DEEP_LEVELS).map(|l| format!("l{l}")).collect::<Vec<_>>().join("/")
}

const SHARED: &str = "shared";
const PRIVATE: &str = "private";

fn private_dir(index: usize) -> String {
    format!("{PRIVATE}/w{index}")
}

/// Builds the tree under `root` for up to `workers` workers.
pub(crate) fn build_tree(root: &Path, workers: usize) -> Result<()> {
    let deep = root.join(deep_dirs());
    std::fs::create_dir_all(&deep).with_context(|| format!("cannot create {}", deep.display()))?;
    std::fs::write(deep.join("file"), b"").with_context(|| format!("cannot create {}/file", deep.display()))?;
    for d in [SHARED, PRIVATE] {
        std::fs::create_dir(root.join(d)).with_context(|| format!("cannot create {d} under {}", root.display()))?;
    }
    for i in 0..workers {
        let p = root.join(private_dir(i));
        std::fs::create_dir(&p).with_context(|| format!("cannot create {}", p.display()))?;
    }
    Ok(())
}

/// What one worker did in its timed loop.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Outcome {
    pub ops: u64,
    /// CLOCK_MONOTONIC at the start and end of the timed loop.
    pub started_ns: u64,
    pub ended_ns: u64,
    pub user_seconds: f64,
    pub sys_seconds: f64,
    /// Nanoseconds per sampled call (the clock reads included).
    pub latency_ns: Histogram,
}

/// One worker, ready to loop: its directory descriptors and names are open
/// and built, so the loop makes only the operation's own system calls.
pub(crate) struct Worker {
    op: Op,
    root: OwnedFd,
    dir: OwnedFd,
    path: CString,
    name: CString,
}

/// Operations a worker makes before it is timed (warms the dentries and slabs).
const WARMUP_OPS: u64 = 256;

impl Worker {
    pub(crate) fn new(root: &Path, op: Op, index: usize) -> Result<Worker> {
        let dir_flags = OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
        let rootfd = open(root, dir_flags, Mode::empty()).with_context(|| format!("cannot open {}", root.display()))?;
        let dir_name = match op {
            Op::CreateUnlinkShared => SHARED.to_string(),
            Op::CreateUnlinkPrivate => private_dir(index),
            Op::Stat | Op::StatMissing | Op::OpenClose => ".".to_string(),
        };
        let dir = openat(rootfd.as_fd(), dir_name.as_str(), dir_flags, Mode::empty())
            .with_context(|| format!("cannot open {}/{dir_name}", root.display()))?;
        let path = match op {
            Op::StatMissing => format!("{}/missing", deep_dirs()),
            Op::Stat | Op::OpenClose | Op::CreateUnlinkShared | Op::CreateUnlinkPrivate => {
                format!("{}/file", deep_dirs())
            }
        };
        let mut w = Worker {
            op,
            root: rootfd,
            dir,
            path: CString::new(path).expect("no NUL in our names"),
            name: CString::new(format!("f{index}")).expect("no NUL in our names"),
        };
        for _ in 0..WARMUP_OPS {
            w.once().with_context(|| format!("{op} fails before it is timed"))?;
        }
        Ok(w)
    }

    /// One operation.
    #[inline]
    fn once(&mut self) -> Result<(), Errno> {
        match self.op {
            Op::Stat => fstatat(self.root.as_fd(), self.path.as_c_str(), AtFlags::empty()).map(drop),
            Op::StatMissing => match fstatat(self.root.as_fd(), self.path.as_c_str(), AtFlags::empty()) {
                Err(Errno::ENOENT) => Ok(()),
                Err(e) => Err(e),
                Ok(_) => Err(Errno::EEXIST),
            },
            Op::OpenClose => {
                openat(self.root.as_fd(), self.path.as_c_str(), OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty())
                    .map(drop)
            }
            Op::CreateUnlinkShared | Op::CreateUnlinkPrivate => {
                let name: &CStr = self.name.as_c_str();
                let flags = OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_WRONLY | OFlag::O_CLOEXEC;
                drop(openat(self.dir.as_fd(), name, flags, Mode::from_bits_truncate(0o600))?);
                unlinkat(self.dir.as_fd(), name, UnlinkatFlags::NoRemoveDir)
            }
        }
    }

    /// Repeats the operation for `seconds`, timing one call in `sample_every`.
    pub(crate) fn run(&mut self, seconds: f64, sample_every: u64) -> Result<Outcome> {
        if sample_every == 0 {
            bail!("internal error: sample_every is 0");
        }
        let limit = (seconds * 1e9) as u64;
        let mut latency = Histogram::default();
        let mut ops = 0u64;
        let (u0, s0) = sys::thread_cpu_times();
        let t0 = sys::monotonic_ns();
        let end = loop {
            for _ in 1..sample_every {
                self.once().map_err(|e| self.failed(e))?;
            }
            let a = sys::monotonic_ns();
            self.once().map_err(|e| self.failed(e))?;
            let b = sys::monotonic_ns();
            ops += sample_every;
            latency.record(b - a);
            if b - t0 >= limit {
                break b;
            }
        };
        let (u1, s1) = sys::thread_cpu_times();
        Ok(Outcome {
            ops,
            started_ns: t0,
            ended_ns: end,
            user_seconds: (u1 - u0).as_secs_f64(),
            sys_seconds: (s1 - s0).as_secs_f64(),
            latency_ns: latency.compact(),
        })
    }

    fn failed(&self, e: Errno) -> anyhow::Error {
        anyhow::anyhow!("{} failed: {e}", self.op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names_round_trip() {
        for op in Op::ALL {
            assert_eq!(op.name().parse::<Op>().unwrap(), op);
        }
        let e = "lookup".parse::<Op>().unwrap_err();
        assert!(e.contains("stat-missing"), "{e}");
    }

    #[test]
    fn deep_path_has_the_stated_depth() {
        assert_eq!(format!("{}/file", deep_dirs()).split('/').count(), DEEP_LEVELS);
    }

    #[test]
    fn every_op_runs_in_a_plain_directory() {
        let t = tempfile::tempdir().unwrap();
        build_tree(t.path(), 2).unwrap();
        for op in Op::ALL {
            let mut w = Worker::new(t.path(), op, 1).unwrap();
            let o = w.run(0.01, 8).unwrap();
            assert!(o.ops >= 8 && o.ops.is_multiple_of(8), "{op}: {}", o.ops);
            assert_eq!(o.latency_ns.count(), o.ops / 8);
            assert!(o.ended_ns - o.started_ns >= 10_000_000);
        }
        // create+unlink leaves nothing behind.
        assert_eq!(std::fs::read_dir(t.path().join(SHARED)).unwrap().count(), 0);
    }
}
