//! The hot lookups `pollute` times, call by call (the lookup-pollution report timed a shell
//! loop of `cat /dev/null >/dev/zero`; this is the "proper C program" it
//! asked for).
//!
//! The tree: two directories under the mount root, `polluted/` (where the
//! negative dentries go, as the lookup-pollution report's `/dev/null$i` went into `/dev`, the
//! directory of its hot paths) and `other/` (never polluted), each holding
//! [`HOT_FILES`] small files. A probe cycles through the hot set of its
//! directory with a path relative to the root, two components deep like
//! `/dev/null`. Each call is timed on its own with CLOCK_MONOTONIC (the
//! vDSO: two clock reads, about 20–40 ns, are included in every figure).

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use anyhow::{Context, Result, bail};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, open, openat};
use nix::sys::stat::{Mode, fstatat};
use serde::{Deserialize, Serialize};

use crate::histogram::Histogram;
use crate::sys;

/// The directory the negative dentries go into (with its own hot files).
pub(crate) const POLLUTED: &str = "polluted";
/// A directory with hot files and no pollution.
pub(crate) const OTHER: &str = "other";
/// Hot files per directory, and cached negative names for the hit probe.
pub(crate) const HOT_FILES: usize = 16;
/// Prefixes that keep the probes' names apart from the pollution's
/// (decimal numbers, see [`crate::workload::NameBuf`]).
const HOT_PREFIX: &str = "h";
const HIT_PREFIX: &str = "n";
const MISS_PREFIX: &str = "m";

/// One kind of timed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Probe {
    /// fstatat of a hot file in the polluted directory.
    StatSame,
    /// openat + close of a hot file in the polluted directory.
    OpenSame,
    /// fstatat of a hot file in the other directory.
    StatOther,
    /// openat + close of a hot file in the other directory.
    OpenOther,
    /// fstatat of a name that is a cached negative dentry (ENOENT from the cache).
    NegativeHit,
    /// fstatat of a name never looked up (ENOENT from the filesystem; leaves a new negative dentry).
    NegativeMiss,
    /// fstat of an open file: a system call with no path lookup, timed alongside as the control.
    Control,
}

impl Probe {
    pub(crate) const ALL: [Probe; 7] = [
        Probe::StatSame,
        Probe::OpenSame,
        Probe::StatOther,
        Probe::OpenOther,
        Probe::NegativeHit,
        Probe::NegativeMiss,
        Probe::Control,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Probe::StatSame => "stat-same-dir",
            Probe::OpenSame => "open-same-dir",
            Probe::StatOther => "stat-other-dir",
            Probe::OpenOther => "open-other-dir",
            Probe::NegativeHit => "negative-hit",
            Probe::NegativeMiss => "negative-miss",
            Probe::Control => "control-fstat",
        }
    }

    pub(crate) fn describe(self) -> &'static str {
        match self {
            Probe::StatSame => "fstatat of polluted/hN (a hot file in the polluted directory)",
            Probe::OpenSame => "openat O_RDONLY + close of polluted/hN",
            Probe::StatOther => "fstatat of other/hN (a hot file in a directory never polluted)",
            Probe::OpenOther => "openat O_RDONLY + close of other/hN",
            Probe::NegativeHit => "fstatat of polluted/nN, a cached negative dentry (ENOENT)",
            Probe::NegativeMiss => {
                "fstatat of a name never looked up in polluted/ (ENOENT from ext4/xfs; leaves one more negative dentry)"
            }
            Probe::Control => "fstat of an open file descriptor: a system call without a path lookup (the control)",
        }
    }

    /// A lookup of an existing file: what the lookup-pollution report timed.
    pub(crate) fn is_hot(self) -> bool {
        matches!(self, Probe::StatSame | Probe::OpenSame | Probe::StatOther | Probe::OpenOther)
    }
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Makes the two directories and their hot files under `root`.
pub(crate) fn build_tree(root: &Path) -> Result<()> {
    for d in [POLLUTED, OTHER] {
        let dir = root.join(d);
        std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for i in 0..HOT_FILES {
            let p = dir.join(format!("{HOT_PREFIX}{i}"));
            std::fs::write(&p, b"x").with_context(|| format!("cannot create {}", p.display()))?;
        }
    }
    Ok(())
}

/// Per-call times of one probe, as recorded.
#[derive(Debug, Clone, Default)]
pub(crate) struct Timings {
    /// Every call, nanoseconds (for exact medians per repetition).
    pub samples_ns: Vec<u64>,
    pub histogram: Histogram,
}

impl Timings {
    fn record(&mut self, ns: u64) {
        self.samples_ns.push(ns);
        self.histogram.record(ns);
    }

    /// The exact median of the recorded calls; NaN when none.
    pub(crate) fn median_ns(&self) -> f64 {
        let mut v = self.samples_ns.clone();
        if v.is_empty() {
            return f64::NAN;
        }
        let mid = v.len() / 2;
        let (_, m, _) = v.select_nth_unstable(mid);
        *m as f64
    }

    pub(crate) fn mean_ns(&self) -> f64 {
        if self.samples_ns.is_empty() {
            return f64::NAN;
        }
        self.samples_ns.iter().sum::<u64>() as f64 / self.samples_ns.len() as f64
    }

    pub(crate) fn max_ns(&self) -> u64 {
        self.samples_ns.iter().copied().max().unwrap_or(0)
    }
}

/// The open directories and prebuilt names the probes use, so a timed call
/// makes only its own system calls.
pub(crate) struct Prober {
    root: OwnedFd,
    /// An open hot file, for the control.
    file: OwnedFd,
    same: Vec<CString>,
    other: Vec<CString>,
    hits: Vec<CString>,
    next: usize,
    misses: u64,
}

/// Calls of each probe before anything is timed (warms the dentries, the
/// inodes and the slabs; the hit probe's names become negative dentries).
const WARMUP_CALLS: usize = 4 * HOT_FILES;

impl Prober {
    pub(crate) fn new(root: &Path) -> Result<Prober> {
        let flags = OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
        let rootfd = open(root, flags, Mode::empty()).with_context(|| format!("cannot open {}", root.display()))?;
        let names = |dir: &str, prefix: &str| -> Vec<CString> {
            (0..HOT_FILES).map(|i| CString::new(format!("{dir}/{prefix}{i}")).expect("no NUL")).collect()
        };
        let file = openat(
            rootfd.as_fd(),
            format!("{OTHER}/{HOT_PREFIX}0").as_str(),
            OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .with_context(|| format!("cannot open {}/{OTHER}/{HOT_PREFIX}0", root.display()))?;
        let mut p = Prober {
            root: rootfd,
            file,
            same: names(POLLUTED, HOT_PREFIX),
            other: names(OTHER, HOT_PREFIX),
            hits: names(POLLUTED, HIT_PREFIX),
            next: 0,
            misses: 0,
        };
        for probe in Probe::ALL {
            let mut t = Timings::default();
            p.run(probe, WARMUP_CALLS, &mut t).with_context(|| format!("{probe} fails before it is timed"))?;
        }
        Ok(p)
    }

    /// Negative dentries the miss probe has left so far (warm-up included).
    pub(crate) fn misses(&self) -> u64 {
        self.misses
    }

    fn once(&mut self, probe: Probe) -> Result<(), Errno> {
        self.next = (self.next + 1) % HOT_FILES;
        let i = self.next;
        let expect_missing = |r: Result<nix::sys::stat::FileStat, Errno>| match r {
            Err(Errno::ENOENT) => Ok(()),
            Err(e) => Err(e),
            Ok(_) => Err(Errno::EEXIST),
        };
        let open_close = |dir: &OwnedFd, name: &CString| {
            openat(dir.as_fd(), name.as_c_str(), OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty()).map(drop)
        };
        match probe {
            Probe::StatSame => fstatat(self.root.as_fd(), self.same[i].as_c_str(), AtFlags::empty()).map(drop),
            Probe::StatOther => fstatat(self.root.as_fd(), self.other[i].as_c_str(), AtFlags::empty()).map(drop),
            Probe::OpenSame => open_close(&self.root, &self.same[i]),
            Probe::OpenOther => open_close(&self.root, &self.other[i]),
            Probe::NegativeHit => expect_missing(fstatat(self.root.as_fd(), self.hits[i].as_c_str(), AtFlags::empty())),
            Probe::Control => nix::sys::stat::fstat(self.file.as_fd()).map(drop),
            Probe::NegativeMiss => unreachable!("misses are made by run(), which builds their names"),
        }
    }

    /// Makes `calls` timed calls of `probe`, appending to `into`.
    pub(crate) fn run(&mut self, probe: Probe, calls: usize, into: &mut Timings) -> Result<()> {
        into.samples_ns.reserve(calls);
        if probe == Probe::NegativeMiss {
            for _ in 0..calls {
                // The name is built before the clock starts.
                let name = CString::new(format!("{POLLUTED}/{MISS_PREFIX}{}", self.misses)).expect("no NUL");
                self.misses += 1;
                let a = sys::monotonic_ns();
                let r = fstatat(self.root.as_fd(), name.as_c_str(), AtFlags::empty());
                let b = sys::monotonic_ns();
                match r {
                    Err(Errno::ENOENT) => into.record(b - a),
                    Err(e) => bail!("{probe} failed: {e}"),
                    Ok(_) => bail!("{probe}: {name:?} exists"),
                }
            }
            return Ok(());
        }
        for _ in 0..calls {
            let a = sys::monotonic_ns();
            let r = self.once(probe);
            let b = sys::monotonic_ns();
            r.map_err(|e| anyhow::anyhow!("{probe} failed: {e}"))?;
            into.record(b - a);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_hot_set() {
        let names: Vec<&str> = Probe::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(names.len(), 7);
        assert_eq!(Probe::ALL.iter().filter(|p| p.is_hot()).count(), 4);
    }

    #[test]
    fn every_probe_runs_in_a_plain_directory() {
        let t = tempfile::tempdir().unwrap();
        build_tree(t.path()).unwrap();
        let mut p = Prober::new(t.path()).unwrap();
        let warm = p.misses();
        assert_eq!(warm, WARMUP_CALLS as u64);
        for probe in Probe::ALL {
            let mut tm = Timings::default();
            p.run(probe, 100, &mut tm).unwrap();
            assert_eq!(tm.samples_ns.len(), 100);
            assert_eq!(tm.histogram.count(), 100);
            assert!(tm.median_ns() > 0.0 && tm.mean_ns() > 0.0 && tm.max_ns() as f64 >= tm.median_ns());
        }
        assert_eq!(p.misses(), warm + 100);
        // Nothing was created by the probes.
        assert_eq!(std::fs::read_dir(t.path().join(POLLUTED)).unwrap().count(), HOT_FILES);
    }

    #[test]
    fn timings_of_nothing() {
        let t = Timings::default();
        assert!(t.median_ns().is_nan() && t.mean_ns().is_nan());
        assert_eq!(t.max_ns(), 0);
    }
}
