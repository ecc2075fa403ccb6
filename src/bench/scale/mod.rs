//! `dentrylab scale`: the dcache scalability paper's scalability question on today's kernel.
//!
//! For each operation (stat of a deep path, stat of a missing name,
//! open+close, create+unlink in a shared and in private directories) and
//! each count of the thread sweep, N workers repeat the operation for a
//! fixed time on a fresh filesystem in the sandbox. Reported per count:
//! operations per second, efficiency against perfect scaling, the share of
//! CPU time spent in the kernel, and the sampled per-call latency. With
//! `--profile`, two more steps at the largest count run under `perf` (one
//! sampling functions, one tracing lock contention) to say which kernel
//! functions and locks the time goes to.

mod args;
pub(crate) mod command;
mod procs;
pub(crate) mod render;

pub(crate) use args::Args;
pub(crate) use command::Scale;

use std::path::Path;
use std::sync::Barrier;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::analysis::scaling;
use crate::env::Environment;
use crate::error::UsageError;
use crate::histogram::Histogram;
use crate::probe::StepHook;
use crate::probe::perf::{self, Profile};
use crate::procfs::ProcRoot;
use crate::sandbox::{FsType, Privilege, Sandbox};
use crate::stats::Spread;
use crate::workload::lookup::{self, Op, Outcome, Worker};

/// Default seconds each worker loops per step.
pub(crate) const DEFAULT_SECONDS: f64 = 2.0;
/// Bounds of `--seconds`.
pub(crate) const MIN_SECONDS: f64 = 0.01;
pub(crate) const MAX_SECONDS: f64 = 3600.0;
/// Default: time one call in this many.
pub(crate) const DEFAULT_SAMPLE_EVERY: u64 = 64;
/// Most workers a step may have.
pub(crate) const MAX_THREADS: usize = 4096;
/// Up to this many CPUs the default sweep is every count 1..=CPUs; above
/// it, powers of two up to the CPU count (and the CPU count itself).
pub(crate) const DENSE_SWEEP_UP_TO: usize = 8;

/// A step whose workers kept fewer than this share of the CPUs they could
/// use busy is flagged (another load, or sleeping on a lock).
pub(crate) const STARVED_SHARE: f64 = 0.85;

/// Threads of one process, or one process per worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Mode {
    /// Workers are threads of one process: they share one file table and one `fs_struct`.
    Threads,
    /// Workers are processes (re-executions of this binary), each with its own file table.
    Processes,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Options {
    pub ops: Vec<Op>,
    pub threads: Vec<usize>,
    pub mode: Mode,
    pub seconds: f64,
    pub fs: FsType,
    pub sample_every: u64,
    pub profile: bool,
}

/// One count of one operation's sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Step {
    pub threads: usize,
    pub ops_total: u64,
    /// From the first worker's start to the last worker's end.
    pub seconds: f64,
    /// `ops_total / seconds`.
    pub ops_per_second: f64,
    /// Against the smallest count of the sweep (see [`OpSeries::baseline_threads`]).
    pub speedup: f64,
    /// `(ops_per_second / threads) / (baseline ops_per_second / baseline threads)`: 1.0 is perfect scaling.
    pub efficiency: f64,
    /// Each worker's own rate: min, median, max (fairness).
    pub worker_ops_per_second: Spread,
    pub user_seconds: f64,
    pub sys_seconds: f64,
    /// `sys / (user + sys)` over all workers; None when no CPU time was accounted.
    pub sys_share: Option<f64>,
    /// `(user + sys) / seconds`: how many CPUs the workers kept busy on average.
    pub cpus_busy: f64,
    pub latency_p50_ns: Option<f64>,
    pub latency_p99_ns: Option<f64>,
    pub latency_samples: u64,
}

/// One operation's sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct OpSeries {
    pub op: Op,
    pub description: String,
    pub fs: FsType,
    pub baseline_threads: usize,
    pub steps: Vec<Step>,
    /// dentry-state change over the whole sweep (shows whether failed lookups
    /// left negative dentries); machine-wide, so other activity counts too.
    pub nr_dentry_delta: i64,
    pub nr_negative_delta: i64,
    pub profile: Option<Profile>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ScaleResult {
    #[serde(flatten)]
    pub header: crate::result::Header,
    pub environment: Environment,
    pub options: Options,
    pub sandbox: Privilege,
    pub operations: Vec<OpSeries>,
    /// How lock and function attribution was done, or why it could not be.
    pub attribution: Option<perf::Availability>,
    pub notes: Vec<String>,
}

/// One count or a range of counts of `--threads`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Count {
    N(usize),
    /// The number of CPUs this process may use.
    Cpus,
}

/// The `--threads` value as written: counts, ranges, and `cpus`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ThreadSpec(Vec<(Count, Count)>);

impl std::str::FromStr for ThreadSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let count = |t: &str| -> Result<Count, String> {
            let t = t.trim();
            if t == "cpus" {
                return Ok(Count::Cpus);
            }
            match t.parse::<usize>() {
                Ok(0) => Err(format!("{t:?} is not a thread count: counts start at 1")),
                Ok(n) if n > MAX_THREADS => Err(format!("{n} threads is more than the limit of {MAX_THREADS}")),
                Ok(n) => Ok(Count::N(n)),
                Err(_) => {
                    Err(format!("cannot read {t:?}: use counts, ranges and 'cpus', for example 1..8, 1,2,4 or 1..cpus"))
                }
            }
        };
        let mut items = Vec::new();
        for part in s.split(',') {
            let item = match part.split_once("..") {
                Some((a, b)) => {
                    let (a, b) = (count(a)?, count(b)?);
                    if let (Count::N(x), Count::N(y)) = (a, b)
                        && x > y
                    {
                        return Err(format!("range {} is empty: write it low..high", part.trim()));
                    }
                    (a, b)
                }
                None => {
                    let c = count(part)?;
                    (c, c)
                }
            };
            items.push(item);
        }
        Ok(ThreadSpec(items))
    }
}

impl ThreadSpec {
    /// The counts to run, ascending, each once, with `cpus` resolved.
    pub(crate) fn resolve(&self, cpus: usize) -> Result<Vec<usize>, String> {
        let n = |c: Count| match c {
            Count::N(n) => n,
            Count::Cpus => cpus,
        };
        let mut out = Vec::new();
        for &(a, b) in &self.0 {
            let (lo, hi) = (n(a), n(b));
            if lo > hi {
                return Err(format!("range {lo}..{hi} is empty on this {cpus}-CPU machine"));
            }
            out.extend(lo..=hi);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}

/// The default sweep: every count up to the CPU count on small machines,
/// powers of two (and the CPU count) on large ones.
pub(crate) fn default_threads(cpus: usize) -> Vec<usize> {
    let cpus = cpus.clamp(1, MAX_THREADS);
    if cpus <= DENSE_SWEEP_UP_TO {
        return (1..=cpus).collect();
    }
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |&x| Some(x * 2)).take_while(|&x| x <= cpus).collect();
    if v.last() != Some(&cpus) {
        v.push(cpus);
    }
    v
}

pub(crate) fn validate(opts: &Options) -> Result<()> {
    if !(MIN_SECONDS..=MAX_SECONDS).contains(&opts.seconds) || !opts.seconds.is_finite() {
        return Err(UsageError(format!(
            "--seconds {}: use a duration from {MIN_SECONDS} to {MAX_SECONDS}",
            opts.seconds
        ))
        .into());
    }
    if opts.threads.is_empty() {
        return Err(UsageError("--threads: no thread count to run".into()).into());
    }
    if opts.ops.is_empty() {
        return Err(UsageError("--ops: no operation to run".into()).into());
    }
    Ok(())
}

/// Runs the whole sweep; `announce` gets one line per finished step.
/// What a scale filesystem must hold: the lookup tree and the files that
/// create+unlink workers have at once (sizes a disk filesystem's image).
const FS_CAPACITY: crate::sandbox::Capacity = crate::sandbox::Capacity { entries: 200_000, inodes: 200_000 };

pub(crate) fn run(
    opts: &Options,
    sandbox: &mut Sandbox,
    proc: &ProcRoot,
    announce: &dyn Fn(&str),
) -> Result<ScaleResult> {
    let header = crate::result::Header::new("scale");
    let environment = Environment::capture(proc);
    let max_workers = opts.threads.iter().copied().max().unwrap_or(1);
    let mut notes = Vec::new();
    let attribution = opts.profile.then(|| perf::availability(sandbox.scratch()));
    let mut operations = Vec::new();
    for &op in &opts.ops {
        // A fresh filesystem per operation, so one does not warm the next.
        let mount = sandbox.mount(opts.fs, &FS_CAPACITY)?;
        lookup::build_tree(mount.path(), max_workers)?;
        let before = proc.dentry_state()?;
        let mut steps: Vec<Step> = Vec::new();
        for &n in &opts.threads {
            let outcomes = run_step(mount.path(), op, n, opts, &mut perf::NoProfile)
                .with_context(|| format!("{op} with {n} worker(s)"))?;
            let step = summarise(n, &outcomes, steps.first());
            announce(&format!(
                "{:<22} {n:>4} {}: {:>12.0} ops/s  efficiency {:.2}",
                op.name(),
                if opts.mode == Mode::Threads { "threads" } else { "procs  " },
                step.ops_per_second,
                step.efficiency
            ));
            steps.push(step);
        }
        let after = proc.dentry_state()?;
        // One step per tool: the lock tracepoints fire on every contended
        // lock and would show up in the function profile as perf's own cost.
        let mut profile: Option<Profile> = None;
        if let Some(avail) = &attribution {
            for (functions, locks) in [(true, false), (false, true)] {
                if !(functions && avail.functions.available || locks && avail.locks.available) {
                    continue;
                }
                let mut profiler = perf::Profiler::new(sandbox.scratch(), op.name(), functions, locks);
                run_step(mount.path(), op, max_workers, opts, &mut profiler)
                    .with_context(|| format!("{op} with {max_workers} worker(s) under perf"))?;
                let p = profiler.finish(max_workers);
                profile = Some(match profile {
                    Some(q) => q.merge(p),
                    None => p,
                });
            }
        }
        operations.push(OpSeries {
            op,
            description: op.describe().into(),
            fs: opts.fs,
            baseline_threads: steps.first().map_or(1, |s| s.threads),
            steps,
            nr_dentry_delta: after.nr_dentry as i64 - before.nr_dentry as i64,
            nr_negative_delta: after.nr_negative as i64 - before.nr_negative as i64,
            profile,
        });
    }
    if opts.ops.contains(&Op::StatMissing) && opts.fs == FsType::Tmpfs {
        notes.push(
            "stat-missing ran on tmpfs, which keeps no negative dentries: each failed lookup allocates a dentry \
             under the parent directory's lock and frees it again; a disk filesystem (--fs ext4) caches the \
             negative dentry and the lookup stays on the lock-free RCU walk"
                .into(),
        );
    }
    let cpus = environment.cpus;
    let starved: Vec<String> = operations
        .iter()
        .flat_map(|o| o.steps.iter().map(move |s| (o.op, s)))
        .filter(|(_, s)| s.cpus_busy < STARVED_SHARE * s.threads.min(cpus) as f64)
        .map(|(op, s)| format!("{op} at {} ({:.2} of {} CPUs)", s.threads, s.cpus_busy, s.threads.min(cpus)))
        .collect();
    if !starved.is_empty() {
        notes.push(format!(
            "the workers got less CPU than they could use in {} step(s): {}; something else was running on this \
             machine (or the workers slept on a lock), so throughput and efficiency there understate what the \
             kernel can do",
            starved.len(),
            starved.join(", ")
        ));
    }
    if max_workers > cpus {
        notes.push(format!(
            "the sweep goes to {max_workers} workers on {cpus} CPUs: above {cpus} the workers share CPUs, so \
             efficiency falls by construction"
        ));
    }
    Ok(ScaleResult {
        header,
        environment,
        options: opts.clone(),
        sandbox: sandbox.privilege,
        operations,
        attribution,
        notes,
    })
}

/// Runs `n` workers of `op` for `opts.seconds`; returns each one's outcome.
fn run_step(root: &Path, op: Op, n: usize, opts: &Options, hook: &mut dyn StepHook) -> Result<Vec<Outcome>> {
    match opts.mode {
        Mode::Threads => run_threads(root, op, n, opts, hook),
        Mode::Processes => procs::run_processes(root, op, n, opts, hook),
    }
}

fn run_threads(root: &Path, op: Op, n: usize, opts: &Options, hook: &mut dyn StepHook) -> Result<Vec<Outcome>> {
    let ready = Barrier::new(n + 1);
    let go = Barrier::new(n + 1);
    let (seconds, every) = (opts.seconds, opts.sample_every);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (ready, go) = (&ready, &go);
                std::thread::Builder::new().name(format!("scale-w{i}")).spawn_scoped(s, move || {
                    let w = Worker::new(root, op, i);
                    ready.wait();
                    go.wait();
                    w?.run(seconds, every)
                })
            })
            .collect::<std::io::Result<_>>()
            .context("cannot start a worker thread")?;
        ready.wait();
        let hooked = hook.before_go(&[std::process::id()]);
        go.wait();
        let outcomes: Vec<Result<Outcome>> =
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| bail!("a worker thread panicked"))).collect();
        hooked?;
        hook.after()?;
        outcomes.into_iter().collect()
    })
}

/// Worker processes of one step; killed and reaped if the step fails.
/// Sums the workers of one step; `base` is the sweep's first step.
fn summarise(n: usize, outcomes: &[Outcome], base: Option<&Step>) -> Step {
    let ops_total: u64 = outcomes.iter().map(|o| o.ops).sum();
    let start = outcomes.iter().map(|o| o.started_ns).min().unwrap_or(0);
    let end = outcomes.iter().map(|o| o.ended_ns).max().unwrap_or(0);
    let seconds = end.saturating_sub(start) as f64 / 1e9;
    let ops_per_second = scaling::rate(ops_total, seconds);
    let (base_rate, base_n) = base.map_or((ops_per_second, n), |b| (b.ops_per_second, b.threads));
    let per_worker: Vec<f64> =
        outcomes.iter().map(|o| scaling::rate(o.ops, o.ended_ns.saturating_sub(o.started_ns) as f64 / 1e9)).collect();
    let user_seconds: f64 = outcomes.iter().map(|o| o.user_seconds).sum();
    let sys_seconds: f64 = outcomes.iter().map(|o| o.sys_seconds).sum();
    let mut latency = Histogram::default();
    for o in outcomes {
        latency.merge(&o.latency_ns);
    }
    let share = scaling::sys_share(user_seconds, sys_seconds);
    Step {
        threads: n,
        ops_total,
        seconds,
        ops_per_second,
        speedup: scaling::speedup(ops_per_second, base_rate),
        efficiency: scaling::efficiency(ops_per_second, n, base_rate, base_n),
        worker_ops_per_second: Spread::of(&per_worker),
        user_seconds,
        sys_seconds,
        sys_share: share.is_finite().then_some(share),
        cpus_busy: if seconds > 0.0 { (user_seconds + sys_seconds) / seconds } else { 0.0 },
        latency_p50_ns: latency.percentile(0.50),
        latency_p99_ns: latency.percentile(0.99),
        latency_samples: latency.count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(s: &str, cpus: usize) -> Result<Vec<usize>, String> {
        s.parse::<ThreadSpec>()?.resolve(cpus)
    }

    #[test]
    fn thread_specs() {
        assert_eq!(counts("1..4", 2).unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(counts("1,2,4", 2).unwrap(), vec![1, 2, 4]);
        assert_eq!(counts("4,1,2,2", 2).unwrap(), vec![1, 2, 4]);
        assert_eq!(counts("1..cpus", 3).unwrap(), vec![1, 2, 3]);
        assert_eq!(counts("1,cpus", 64).unwrap(), vec![1, 64]);
        assert_eq!(counts("1..2,8", 2).unwrap(), vec![1, 2, 8]);
        assert_eq!(counts("3", 2).unwrap(), vec![3]);
    }

    #[test]
    fn bad_thread_specs_name_the_problem() {
        assert!(counts("0", 2).unwrap_err().contains("counts start at 1"));
        assert!(counts("0..4", 2).unwrap_err().contains("counts start at 1"));
        assert!(counts("3..1", 2).unwrap_err().contains("empty"));
        assert!(counts("x", 2).unwrap_err().contains("cannot read"));
        assert!(counts("1..", 2).unwrap_err().contains("cannot read"));
        assert!(counts("", 2).unwrap_err().contains("cannot read"));
        assert!(counts("1,,2", 2).is_err());
        assert!(counts("5000", 2).unwrap_err().contains("limit"));
        assert!(counts("4..cpus", 2).unwrap_err().contains("empty on this 2-CPU machine"));
    }

    #[test]
    fn default_sweep_is_dense_then_doubling() {
        assert_eq!(default_threads(1), vec![1]);
        assert_eq!(default_threads(2), vec![1, 2]);
        assert_eq!(default_threads(8), (1..=8).collect::<Vec<_>>());
        assert_eq!(default_threads(16), vec![1, 2, 4, 8, 16]);
        assert_eq!(default_threads(96), vec![1, 2, 4, 8, 16, 32, 64, 96]);
    }

    fn outcome(ops: u64, start: u64, end: u64, sys: f64) -> Outcome {
        let mut h = Histogram::default();
        h.record(1000);
        Outcome { ops, started_ns: start, ended_ns: end, user_seconds: 0.1, sys_seconds: sys, latency_ns: h }
    }

    #[test]
    fn summary_is_consistent() {
        let one = summarise(1, &[outcome(1_000_000, 0, 1_000_000_000, 0.9)], None);
        assert_eq!(one.ops_per_second, 1e6);
        assert_eq!(one.efficiency, 1.0);
        let two = summarise(
            2,
            &[outcome(800_000, 0, 1_000_000_000, 0.9), outcome(800_000, 100, 1_000_000_100, 0.9)],
            Some(&one),
        );
        assert_eq!(two.ops_total, 1_600_000);
        assert!((two.ops_per_second * two.seconds - two.ops_total as f64).abs() < 1e-6);
        assert!((two.efficiency - 0.8).abs() < 1e-6);
        assert!((two.sys_share.unwrap() - 0.9).abs() < 1e-9);
        assert_eq!(two.latency_samples, 2);
    }
}
