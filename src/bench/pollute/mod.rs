//! `dentrylab pollute`: the lookup-pollution report's experiment as a measurement. Does a pile
//! of negative dentries slow down lookups of hot, existing paths?
//!
//! Each repetition mounts a fresh disk filesystem in the sandbox (tmpfs
//! keeps no negative dentries), makes a directory with hot files that will
//! be polluted and another that will not ([`prober`]), and times every call of
//! the probes: stat and open+close of the hot files in both directories, a
//! lookup of a cached negative name (a hit) and of a name never looked up
//! (a miss). Then it adds negative dentries to the polluted directory, up to
//! each size of `--negatives` in turn, and times the same calls again, in
//! the same run. The probes are interleaved in rounds, so a disturbance of
//! the machine falls on all of them alike.
//!
//! The slowdown of a probe at a size is, per repetition, its median after
//! over its median before; over the repetitions it is their geometric mean
//! with a 95 % t-interval ([`slowdown`]). dentry-state's nr_negative is the
//! witness that the negative dentries exist.
//!
//! In: [`Options`], the sandbox. Out: [`PolluteResult`]. Imported by
//! `cli::handlers` and `report`.

use std::fs::File;
use std::os::fd::AsFd;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::analysis::slowdown::{self, Effect, Ratio};
use crate::env::Environment;
use crate::error::UsageError;
use crate::probe::counters::Counts;
use crate::procfs::ProcRoot;
use crate::sandbox::{Capacity, FsType, Privilege, Sandbox};
use crate::size::human;
use crate::stats::Spread;
use crate::sys;
use crate::workload::{Kind, negative};
use prober::{POLLUTED, Probe, Prober, Timings};

mod args;
pub(crate) mod command;
pub(crate) mod prober;
pub(crate) mod render;
mod summary;
pub(crate) use args::Args;
pub(crate) use command::Pollute;
pub(crate) use summary::{ratio_text, summarise, summary_lines};

/// Default pollution sizes: the seed's 100k, then up to a few million
/// (about 100 s in all with the default repetitions on 2 CPUs).
pub(crate) const DEFAULT_NEGATIVES: &str = "100k,1M,3M";
/// Default repetitions (the interval needs at least two).
pub(crate) const DEFAULT_REPS: u32 = 5;
/// Default timed calls of each probe at each size in each repetition.
pub(crate) const DEFAULT_CALLS: usize = 20_000;
/// Bounds of `--calls`.
pub(crate) const MIN_CALLS: usize = 100;
pub(crate) const MAX_CALLS: usize = 10_000_000;
/// The calls of a probe are made in this many rounds, the probes taking
/// turns, so drift falls on all of them alike.
pub(crate) const ROUNDS: usize = 10;
/// The miss probe makes 1/MISS_SHARE of the calls: each leaves a negative
/// dentry, and they should not swamp the smallest pollution size.
pub(crate) const MISS_SHARE: usize = 4;
/// A slowdown whose whole interval is above 1 + this is called a slowdown.
pub(crate) const MIN_EFFECT: f64 = 0.05;
/// What the lookup-pollution report saw: kernel time of its hot loop 1.3 s → 1.9–2.0 s after
/// 100k failed lookups in /dev.
pub(crate) const REPORTED_SLOWDOWN: f64 = 1.5;
pub(crate) const REPORTED_NEGATIVES: u64 = 100_000;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Options {
    /// Pollution sizes, ascending; each is the total in the polluted directory.
    pub negatives: Vec<u64>,
    pub reps: u32,
    pub calls: usize,
    pub fs: FsType,
    /// The CPU the measuring thread is pinned to.
    pub cpu: usize,
    pub force: bool,
}

/// One probe at one size in one repetition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ProbeRun {
    pub probe: Probe,
    pub calls: u64,
    /// Exact median of the calls.
    pub median_ns: f64,
    pub mean_ns: f64,
    pub p99_ns: f64,
    pub max_ns: u64,
}

/// One pollution size in one repetition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct LevelRun {
    /// Negative dentries made in the polluted directory so far.
    pub negatives: u64,
    /// Time to make the ones added at this step (failed lookups).
    pub pollute_seconds: f64,
    /// Counters read after polluting, before timing the probes.
    pub counts: Counts,
    /// nr_negative now minus at the start of the repetition (includes the
    /// miss probe's negative dentries so far).
    pub nr_negative_added: i64,
    /// Negative dentries this repetition made by then: pollution and misses.
    pub negatives_made: u64,
    pub probes: Vec<ProbeRun>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Rep {
    pub rep: u32,
    pub before: Counts,
    pub levels: Vec<LevelRun>,
    pub umount_seconds: f64,
    pub after_umount: Counts,
}

/// One probe at one size over all repetitions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ProbeSummary {
    pub probe: Probe,
    pub calls: u64,
    /// Median of the repetitions' exact medians.
    pub p50_ns: f64,
    /// Largest of the repetitions' p99 (log-linear histogram, ±3 %).
    pub p99_ns: f64,
    pub max_ns: u64,
    pub mean_ns: f64,
    /// Each repetition's exact median.
    pub median_ns: Spread,
    /// Against the unpolluted measurement (absent at size 0).
    pub slowdown: Option<Ratio>,
    pub effect: Option<Effect>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct LevelSummary {
    pub negatives: u64,
    pub nr_dentry: Spread,
    pub nr_negative: Spread,
    pub nr_negative_added: Spread,
    pub negatives_made: u64,
    pub pollute_rate_per_second: Option<f64>,
    pub probes: Vec<ProbeSummary>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PolluteResult {
    #[serde(flatten)]
    pub header: crate::result::Header,
    pub environment: Environment,
    pub options: Options,
    pub sandbox: Privilege,
    /// What each probe does.
    pub probes: Vec<(Probe, String)>,
    /// How the slowdown and its interval are computed.
    pub interval_method: String,
    pub reps: Vec<Rep>,
    /// Size 0 (unpolluted) first, then each of `--negatives`.
    pub levels: Vec<LevelSummary>,
    /// Whether a hot lookup slowed down measurably at some size (the
    /// lookup-pollution report's effect). Results saved before the rename
    /// call it `seed_001_effect`.
    #[serde(alias = "seed_001_effect")]
    pub hot_lookup_slower: bool,
    pub summary: Vec<String>,
    pub notes: Vec<String>,
}

/// Rejects what cannot work, before anything runs.
pub(crate) fn validate(opts: &Options) -> Result<()> {
    if !opts.fs.is_disk() {
        bail!(UsageError(format!(
            "--fs {}: pollute needs a disk filesystem: tmpfs (and devtmpfs, where the lookup-pollution report polluted /dev) deletes \
             a negative dentry as soon as it is unused, so it never keeps any; use --fs ext4 or --fs xfs",
            opts.fs
        )));
    }
    if opts.negatives.is_empty() {
        bail!(UsageError("--negatives: give at least one size".into()));
    }
    if !(MIN_CALLS..=MAX_CALLS).contains(&opts.calls) {
        bail!(UsageError(format!(
            "--calls {}: use a count from {MIN_CALLS} to {}",
            opts.calls,
            human(MAX_CALLS as u64)
        )));
    }
    Ok(())
}

/// Negative dentries one repetition makes at most: the largest size and the
/// miss probe's.
pub(crate) fn negatives_per_rep(opts: &Options) -> u64 {
    let misses = (opts.calls / MISS_SHARE) as u64 * (opts.negatives.len() as u64 + 1) + 1000;
    opts.negatives.iter().copied().max().unwrap_or(0) + misses
}

/// The memory check, before the sandbox is entered (exit 2 when refused).
pub(crate) fn preflight(opts: &Options, proc: &ProcRoot) -> Result<()> {
    let n = negatives_per_rep(opts);
    let bpd = Kind::Negative.default_bytes_per_dentry();
    crate::bench::common::check_memory(
        &format!(
            "--negatives {}: {} negative dentries",
            human(opts.negatives.iter().copied().max().unwrap_or(0)),
            human(n)
        ),
        n.saturating_mul(bpd),
        &format!(" (≈{bpd} bytes each)"),
        "choose smaller sizes, or pass --force",
        opts.force,
        proc,
    )
}

/// The filesystem holds only the tree: negative dentries take no space on disk.
const FS_CAPACITY: Capacity = Capacity { entries: 4 * prober::HOT_FILES as u64, inodes: 4 * prober::HOT_FILES as u64 };

/// Runs every repetition. The sandbox must already be entered.
pub(crate) fn run(opts: &Options, sandbox: &mut Sandbox, proc: &ProcRoot, announce: &dyn Fn(&str)) -> Result<PolluteResult> {
    let header = crate::result::Header::new("pollute");
    let environment = Environment::capture(proc);
    let allowed = sys::allowed_cpus()?;
    sys::pin_current_thread(opts.cpu)?;
    let mut reps = Vec::new();
    let result = (|| -> Result<()> {
        for rep in 0..opts.reps {
            reps.push(one_rep(opts, sandbox, proc, rep, announce).with_context(|| format!("repetition {}", rep + 1))?);
        }
        Ok(())
    })();
    sys::unpin_current_thread(&allowed)?;
    result?;
    let levels = summarise(&reps);
    let hot_lookup_slower =
        levels.iter().skip(1).any(|l| l.probes.iter().any(|p| p.probe.is_hot() && p.effect == Some(Effect::Slower)));
    let summary = summary_lines(&levels, hot_lookup_slower, opts.reps);
    let mut notes = vec![format!(
        "every call is timed with two CLOCK_MONOTONIC reads (vDSO), included in the figures; the measuring \
         thread is pinned to CPU {}",
        opts.cpu
    )];
    if opts.reps < 2 {
        notes.push("one repetition: no interval; run --reps 3 or more to know the uncertainty".into());
    }
    notes.push(format!(
        "the miss probe leaves a negative dentry per call ({} per size and repetition) in the polluted directory: \
         nr_negative grows by that much more than the pollution",
        human((opts.calls / MISS_SHARE) as u64)
    ));
    Ok(PolluteResult {
        header,
        environment,
        options: opts.clone(),
        sandbox: sandbox.privilege,
        probes: Probe::ALL.iter().map(|p| (*p, p.describe().to_string())).collect(),
        interval_method: format!(
            "{}; each median is first divided by the control's (fstat of an open file, no lookup) at the same size and repetition, so a change of the machine's own speed cancels out",
            slowdown::METHOD
        ),
        reps,
        levels,
        hot_lookup_slower,
        summary,
        notes,
    })
}

fn one_rep(opts: &Options, sandbox: &mut Sandbox, proc: &ProcRoot, rep: u32, announce: &dyn Fn(&str)) -> Result<Rep> {
    let mut mount = sandbox.mount(opts.fs, &FS_CAPACITY)?;
    prober::build_tree(mount.path())?;
    let polluted = File::open(mount.path().join(POLLUTED)).context("cannot open the polluted directory")?;
    let mut prober = Prober::new(mount.path())?;
    let before = Counts::read(proc)?;
    let misses_at_start = prober.misses();
    let mut levels = Vec::new();
    let mut made = 0u64;
    for &target in std::iter::once(&0).chain(&opts.negatives) {
        let t = Instant::now();
        negative::make_range(polluted.as_fd(), made, target - made)?;
        let pollute_seconds = t.elapsed().as_secs_f64();
        made = target;
        let counts = Counts::read(proc)?;
        let probes = measure(&mut prober, opts.calls)?;
        let misses = prober.misses() - misses_at_start;
        announce(&format!(
            "rep {}/{} at {:>5} negative dentries, p50 ns: {}",
            rep + 1,
            opts.reps,
            human(target),
            probes.iter().map(|p| format!("{} {:.0}", p.probe, p.median_ns)).collect::<Vec<_>>().join(", ")
        ));
        levels.push(LevelRun {
            negatives: target,
            pollute_seconds,
            nr_negative_added: counts.dentry_state.nr_negative as i64 - before.dentry_state.nr_negative as i64,
            // The misses of this size's own measurement come after the counters were read.
            negatives_made: target + misses - (opts.calls / MISS_SHARE) as u64,
            counts,
            probes,
        });
    }
    drop(prober);
    drop(polluted);
    let umount_seconds = mount.umount()?.as_secs_f64();
    let after_umount = Counts::read(proc)?;
    Ok(Rep { rep, before, levels, umount_seconds, after_umount })
}

/// Times every probe, in [`ROUNDS`] rounds whose order rotates.
fn measure(prober: &mut Prober, calls: usize) -> Result<Vec<ProbeRun>> {
    let mut timings: Vec<Timings> = Probe::ALL.iter().map(|_| Timings::default()).collect();
    for round in 0..ROUNDS {
        for k in 0..Probe::ALL.len() {
            let i = (k + round) % Probe::ALL.len();
            let probe = Probe::ALL[i];
            let n = if probe == Probe::NegativeMiss { calls / MISS_SHARE } else { calls };
            let share = n / ROUNDS + usize::from(round < n % ROUNDS);
            prober.run(probe, share, &mut timings[i])?;
        }
    }
    Ok(Probe::ALL
        .iter()
        .zip(&timings)
        .map(|(&probe, t)| ProbeRun {
            probe,
            calls: t.samples_ns.len() as u64,
            median_ns: t.median_ns(),
            mean_ns: t.mean_ns(),
            p99_ns: t.histogram.percentile(0.99).unwrap_or(f64::NAN),
            max_ns: t.max_ns(),
        })
        .collect())
}

/// The CPU the measuring thread runs on: the last one this process may use
/// (CPU 0 takes most interrupts).
pub(crate) fn choose_cpu(asked: Option<usize>) -> Result<usize> {
    let allowed = sys::allowed_cpus()?;
    match asked {
        Some(c) if allowed.contains(&c) => Ok(c),
        Some(c) => Err(UsageError(format!("--cpu {c}: this process may run on CPUs {allowed:?} only")).into()),
        None => allowed.last().copied().context("no CPU is allowed"),
    }
}

#[cfg(test)]
mod tests {
    use super::summary::find;
    use super::*;
    use crate::procfs::dentry_state::DentryState;

    fn counts(neg: u64) -> Counts {
        Counts {
            dentry_state: DentryState { nr_dentry: 1000 + neg, nr_negative: neg, ..Default::default() },
            slab_dentry_active: None,
            mem_available_bytes: 0,
            slab_bytes: 0,
        }
    }

    fn level(negatives: u64, scale: f64) -> LevelRun {
        LevelRun {
            negatives,
            pollute_seconds: if negatives > 0 { 1.0 } else { 0.0 },
            counts: counts(negatives),
            nr_negative_added: negatives as i64,
            negatives_made: negatives,
            probes: Probe::ALL
                .iter()
                .map(|&probe| ProbeRun {
                    probe,
                    calls: 100,
                    median_ns: if probe.is_hot() {
                        1000.0 * scale
                    } else if probe == Probe::Control {
                        100.0
                    } else {
                        500.0
                    },
                    mean_ns: 1000.0,
                    p99_ns: 2000.0,
                    max_ns: 9000,
                })
                .collect(),
        }
    }

    fn rep(rep: u32, slow: f64) -> Rep {
        Rep {
            rep,
            before: counts(0),
            levels: vec![level(0, 1.0), level(100_000, 1.0), level(1_000_000, slow)],
            umount_seconds: 0.1,
            after_umount: counts(0),
        }
    }

    #[test]
    fn slowdowns_are_against_size_zero_and_pooled() {
        let levels = summarise(&[rep(0, 1.3), rep(1, 1.32), rep(2, 1.28)]);
        assert_eq!(levels.len(), 3);
        assert!(levels[0].probes.iter().all(|p| p.slowdown.is_none()));
        let s = find(&levels[2], Probe::OpenSame).unwrap();
        let r = s.slowdown.unwrap();
        assert!((r.estimate - 1.3).abs() < 0.01 && r.ci_low > 1.2 && r.ci_high < 1.4, "{r:?}");
        assert_eq!(s.effect, Some(Effect::Slower));
        assert_eq!(s.calls, 300);
        assert_eq!(levels[1].pollute_rate_per_second, Some(100_000.0));
        assert_eq!(levels[2].pollute_rate_per_second, Some(900_000.0));
        let lines = summary_lines(&levels, true, 3);
        assert!(lines[0].starts_with("the lookup-pollution report's effect shows"), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("the lookup-pollution report saw about 1.5×")), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("intervals overlap")), "{lines:?}");
    }

    #[test]
    fn a_slow_machine_phase_cancels_against_the_control() {
        let mut r = rep(0, 1.0);
        // Everything, the control too, 40% slower at 1M: not the dcache.
        for p in &mut r.levels[2].probes {
            p.median_ns *= 1.4;
        }
        let levels = summarise(&[r.clone(), r.clone(), r]);
        let s = find(&levels[2], Probe::StatSame).unwrap().slowdown.unwrap();
        assert!((s.estimate - 1.0).abs() < 1e-9, "{s:?}");
        let c = find(&levels[2], Probe::Control).unwrap().slowdown.unwrap();
        assert!((c.estimate - 1.4).abs() < 1e-9, "the control shows the machine's change: {c:?}");
    }

    #[test]
    fn no_change_says_so() {
        let levels = summarise(&[rep(0, 1.0), rep(1, 1.01), rep(2, 0.99)]);
        let shows = levels.iter().skip(1).any(|l| l.probes.iter().any(|p| p.effect == Some(Effect::Slower)));
        assert!(!shows);
        let lines = summary_lines(&levels, shows, 3);
        assert!(lines[0].starts_with("the lookup-pollution report's effect does not show"), "{lines:?}");
        assert!(lines.last().unwrap().contains("nr_negative grew by 1M"), "{lines:?}");
    }

    #[test]
    fn tmpfs_and_empty_sizes_are_refused() {
        let mut o = Options { negatives: vec![1000], reps: 1, calls: 1000, fs: FsType::Tmpfs, cpu: 0, force: false };
        let e = validate(&o).unwrap_err().to_string();
        assert!(e.contains("--fs tmpfs") && e.contains("keeps any"), "{e}");
        o.fs = FsType::Ext4;
        assert!(validate(&o).is_ok());
        o.negatives.clear();
        assert!(validate(&o).unwrap_err().to_string().contains("--negatives"));
    }

    #[test]
    fn ratio_text_with_and_without_interval() {
        assert_eq!(ratio_text(&Ratio { estimate: 1.234, ci_low: 1.1, ci_high: 1.37, reps: 3 }), "1.23× [1.10–1.37]");
        assert_eq!(ratio_text(&Ratio { estimate: 1.0, ci_low: f64::NAN, ci_high: f64::NAN, reps: 1 }), "1.00×");
    }
}
