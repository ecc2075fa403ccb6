//! The process that runs the workload, natively or as the sandbox's init
//! process inside runsc: the same code, the same binary, the same tree on
//! the host's filesystem (inside runsc it is a bind mount the gofer serves).
//! It writes its [`WorkerResult`] as JSON to a file in the tree's parent
//! directory, not to stdout (runsc's copy of the container's stdout can
//! lose the end of the output when the sandbox exits).
//!
//! Every operation is timed with `Instant::now()` (clock_gettime through the
//! vDSO; inside runsc gVisor's own vDSO, also without a system call), so
//! natively and inside the sandbox the observer costs the same few tens of
//! ns per operation.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::mkdirat;
use nix::sys::stat::{Mode, fstatat};
use nix::unistd::{UnlinkatFlags, unlinkat};
use serde::{Deserialize, Serialize};

use crate::histogram::Histogram;

/// The worker's internal command (native or inside runsc).
pub(crate) const WORKER_ENTRY: crate::sys::internal::Entry<crate::sys::internal::SpecArg> =
    crate::sys::internal::Entry {
        name: super::WORKER,
        about: "The workload process of 'gvisor' (native or inside runsc)",
        aliases: &[],
        run: |a| worker_main(&a.spec),
    };

/// What the worker does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Workload {
    /// stat(2) of files picked uniformly at random from a tree made beforehand.
    Lookup,
    /// stat(2) of names that do not exist, picked at random over the tree's directories.
    LookupMissing,
    /// Build-like: mkdir a tree, create every file, stat every file, unlink every file, rmdir.
    Build,
}

impl Workload {
    pub(crate) const ALL: [Workload; 3] = [Workload::Lookup, Workload::LookupMissing, Workload::Build];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::Lookup => "lookup",
            Workload::LookupMissing => "lookup-missing",
            Workload::Build => "build",
        }
    }

    /// The tree must exist before the timed part (made natively by the harness).
    pub(crate) fn needs_tree(self) -> bool {
        matches!(self, Workload::Lookup | Workload::LookupMissing)
    }
}

impl std::str::FromStr for Workload {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Workload::ALL
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or_else(|| format!("unknown workload {s:?}: use {}", Workload::ALL.map(Workload::name).join(", ")))
    }
}

/// One worker run: every entry of `threads` in turn, on the same tree.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WorkerSpec {
    pub workload: Workload,
    /// The tree's root: `d<i>/f<k>` with file k in directory k % dirs.
    pub root: PathBuf,
    pub files: u64,
    pub dirs: u64,
    pub threads: Vec<usize>,
    /// Lookup workloads: timed seconds per thread count (after one untimed pass over the tree).
    pub seconds: f64,
    /// Where the result goes.
    pub out: PathBuf,
}

/// One thread count's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Phase {
    pub name: String,
    pub threads: usize,
    pub ops: u64,
    pub seconds: f64,
    pub ops_per_sec: f64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub max_ns: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WorkerResult {
    pub phases: Vec<Phase>,
}

pub(crate) fn file_path(k: u64, dirs: u64) -> String {
    format!("d{}/f{k}", k % dirs)
}

/// Makes the tree for the lookup workloads (natively, untimed).
pub(crate) fn make_tree(root: &Path, files: u64, dirs: u64) -> Result<()> {
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    for d in 0..dirs {
        let p = root.join(format!("d{d}"));
        std::fs::create_dir_all(&p).with_context(|| format!("creating {}", p.display()))?;
    }
    for k in 0..files {
        let p = root.join(file_path(k, dirs));
        std::fs::File::create(&p).with_context(|| format!("creating {}", p.display()))?;
    }
    Ok(())
}

pub(crate) fn worker_main(spec_json: &str) -> Result<()> {
    let spec: WorkerSpec = serde_json::from_str(spec_json).context("parsing the worker's spec")?;
    std::env::set_current_dir(&spec.root).with_context(|| format!("chdir {}", spec.root.display()))?;
    let mut phases = Vec::new();
    for &t in &spec.threads {
        match spec.workload {
            Workload::Lookup | Workload::LookupMissing => phases.push(lookups(&spec, t)?),
            Workload::Build => phases.extend(build(&spec, t)?),
        }
    }
    let text = serde_json::to_string(&WorkerResult { phases })?;
    std::fs::write(&spec.out, text).with_context(|| format!("writing {}", spec.out.display()))?;
    Ok(())
}

fn cstr(s: &str) -> CString {
    CString::new(s).expect("no NUL in generated names")
}

/// xorshift64*: cheap, and the same sequence natively and in the sandbox.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn stat_rel(path: &CString) -> nix::Result<()> {
    fstatat(nix::fcntl::AT_FDCWD, path.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW).map(|_| ())
}

fn lookups(spec: &WorkerSpec, threads: usize) -> Result<Phase> {
    let missing = spec.workload == Workload::LookupMissing;
    let name = |k: u64| {
        if missing { cstr(&format!("d{}/missing{k}", k % spec.dirs)) } else { cstr(&file_path(k, spec.dirs)) }
    };
    // One untimed pass: whatever of the tree fits in the caches is in them.
    for k in 0..spec.files {
        let r = stat_rel(&name(k));
        if !missing {
            r.with_context(|| format!("stat {}", file_path(k, spec.dirs)))?;
        }
    }
    let deadline = Duration::from_secs_f64(spec.seconds);
    let start = Instant::now();
    let per: Vec<Result<(u64, Histogram)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|i| {
                let name = &name;
                s.spawn(move || {
                    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1));
                    let mut h = Histogram::default();
                    let mut ops = 0u64;
                    let t0 = Instant::now();
                    loop {
                        // Names are made before the clock starts.
                        let batch: Vec<CString> = (0..64).map(|_| name(rng.next() % spec.files)).collect();
                        for p in &batch {
                            let a = Instant::now();
                            let r = stat_rel(p);
                            h.record(a.elapsed().as_nanos() as u64);
                            match (r, missing) {
                                (Ok(()), false) | (Err(nix::errno::Errno::ENOENT), true) => {}
                                (r, _) => anyhow::bail!("stat {p:?}: {r:?}"),
                            }
                        }
                        ops += batch.len() as u64;
                        if t0.elapsed() >= deadline {
                            return Ok((ops, h));
                        }
                    }
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("lookup thread panicked")).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let mut h = Histogram::default();
    let mut ops = 0;
    for r in per {
        let (o, hh) = r?;
        ops += o;
        h.merge(&hh);
    }
    Ok(phase(spec.workload.name(), threads, ops, secs, &h))
}

fn phase(name: &str, threads: usize, ops: u64, secs: f64, h: &Histogram) -> Phase {
    Phase {
        name: name.to_string(),
        threads,
        ops,
        seconds: secs,
        ops_per_sec: ops as f64 / secs.max(1e-9),
        p50_ns: h.percentile(0.5).unwrap_or(0.0),
        p99_ns: h.percentile(0.99).unwrap_or(0.0),
        max_ns: h.percentile(1.0).map_or(0, |v| v as u64),
    }
}

/// Runs `op` on every index in `0..n`, split in contiguous runs over
/// `threads` threads; returns the timed phase.
fn parallel(name: &str, threads: usize, n: u64, op: &(dyn Fn(u64) -> Result<()> + Sync)) -> Result<Phase> {
    let start = Instant::now();
    let per: Vec<Result<Histogram>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads as u64)
            .map(|i| {
                s.spawn(move || {
                    let mut h = Histogram::default();
                    let (lo, hi) = (n * i / threads as u64, n * (i + 1) / threads as u64);
                    for k in lo..hi {
                        let a = Instant::now();
                        op(k)?;
                        h.record(a.elapsed().as_nanos() as u64);
                    }
                    Ok(h)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("build thread panicked")).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let mut h = Histogram::default();
    for r in per {
        h.merge(&r?);
    }
    Ok(phase(name, threads, n, secs, &h))
}

/// Build-like: a tree of `dirs` directories made, `files` files created
/// (open O_CREAT|O_EXCL + close), each stat'ed, each unlinked, the
/// directories removed; each step timed, and the whole.
fn build(spec: &WorkerSpec, threads: usize) -> Result<Vec<Phase>> {
    let dirs = spec.dirs;
    let top = format!("build-{threads}");
    mkdirat(nix::fcntl::AT_FDCWD, top.as_str(), Mode::from_bits_truncate(0o755))
        .with_context(|| format!("mkdir {top}"))?;
    let f = |k: u64| cstr(&format!("{top}/{}", file_path(k, dirs)));
    let d = |k: u64| cstr(&format!("{top}/d{k}"));
    let t0 = Instant::now();
    let mut out = vec![
        parallel("mkdir", threads, dirs, &|k| {
            mkdirat(nix::fcntl::AT_FDCWD, d(k).as_c_str(), Mode::from_bits_truncate(0o755))
                .with_context(|| format!("mkdir {:?}", d(k)))
        })?,
        parallel("create", threads, spec.files, &|k| {
            let fd = openat(
                nix::fcntl::AT_FDCWD,
                f(k).as_c_str(),
                OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_WRONLY | OFlag::O_CLOEXEC,
                Mode::from_bits_truncate(0o644),
            )
            .with_context(|| format!("create {:?}", f(k)))?;
            drop(fd);
            Ok(())
        })?,
        parallel("stat", threads, spec.files, &|k| stat_rel(&f(k)).with_context(|| format!("stat {:?}", f(k))))?,
        parallel("unlink", threads, spec.files, &|k| {
            unlinkat(nix::fcntl::AT_FDCWD, f(k).as_c_str(), UnlinkatFlags::NoRemoveDir)
                .with_context(|| format!("unlink {:?}", f(k)))
        })?,
        parallel("rmdir", threads, dirs, &|k| {
            unlinkat(nix::fcntl::AT_FDCWD, d(k).as_c_str(), UnlinkatFlags::RemoveDir)
                .with_context(|| format!("rmdir {:?}", d(k)))
        })?,
    ];
    let total = t0.elapsed().as_secs_f64();
    let ops: u64 = out.iter().map(|p| p.ops).sum();
    out.push(Phase {
        name: "build-total".into(),
        threads,
        ops,
        seconds: total,
        ops_per_sec: ops as f64 / total.max(1e-9),
        p50_ns: 0.0,
        p99_ns: 0.0,
        max_ns: 0,
    });
    unlinkat(nix::fcntl::AT_FDCWD, top.as_str(), UnlinkatFlags::RemoveDir).with_context(|| format!("rmdir {top}"))?;
    Ok(out)
}

/// The result file a worker wrote.
pub(crate) fn read_result(out: &Path) -> Result<WorkerResult> {
    let text = std::fs::read(out).with_context(|| format!("reading the worker's result {}", out.display()))?;
    serde_json::from_slice(&text).with_context(|| format!("parsing {}", out.display()))
}
