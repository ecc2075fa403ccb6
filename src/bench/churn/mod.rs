//! `dentrylab churn`: the unlink-regression report's experiment. A parallel unlink of a large
//! tree: how fast does it go, how many dentries pile up while it runs, and
//! does the throughput oscillate?
//!
//! A fresh disk filesystem in the sandbox gets `--files` empty files spread
//! over `--dirs` directories. It is then unmounted and mounted again, so
//! the removal starts with a cold cache as the unlink-regression report's did (a filesystem
//! mounted with 50M files in it; `--warm` skips this). `--workers` threads
//! unlink the files, each its share of the directories, while a sampler
//! reads the unlink counter, dentry-state and meminfo every `--interval`.
//! The timeline is then analysed ([`oscillation`]): the steady part's rate
//! and dentry count, the high-water mark, and whether the rate oscillates.
//! Finally the filesystem is unmounted, which frees the negative dentries
//! the unlinks left, and that is timed too.

mod args;
pub(crate) mod command;
pub(crate) mod render;

pub(crate) use args::Args;
pub(crate) use command::Churn;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::analysis::oscillation::{self, Oscillation};
use crate::env::Environment;
use crate::error::UsageError;
use crate::probe::counters::Counts;
use crate::procfs::ProcRoot;
use crate::sandbox::{Capacity, FsType, Privilege, Sandbox};
use crate::size::{bytes, human};
use crate::stats::{median, percentile_sorted};
use crate::sys;
use crate::workload::{self, CreateOutcome, CreateSpec, Kind, Layout, Progress, unlink};

/// Default files in the tree (about 15 s to build and remove on 2 CPUs).
pub(crate) const DEFAULT_FILES: &str = "1M";
/// Default sampling interval.
pub(crate) const DEFAULT_INTERVAL: &str = "100ms";
/// Bounds of `--interval`.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(10);
pub(crate) const MAX_INTERVAL: Duration = Duration::from_secs(10);
/// Most workers.
pub(crate) const MAX_WORKERS: usize = 256;
/// Memory one file takes while the tree exists, bytes, on the high side:
/// its dentry (~192), its ext4/xfs in-memory inode (~1100) and its share of
/// the filesystem image in the scratch tmpfs (a 256-byte on-disk inode, a
/// directory entry, bitmaps).
pub(crate) const BYTES_PER_FILE: u64 = 2000;
/// A steady part whose nr_dentry grows by at least this per unlink has no
/// steady state: the unlinks' dentries pile up.
pub(crate) const GROWING_DENTRIES_PER_UNLINK: f64 = 0.5;
/// What the unlink-regression report saw on 3.0-rc1 (8-way unlink of 50M files on XFS).
pub(crate) const SEED_002_PERIOD_SECONDS: f64 = 20.0;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Options {
    pub files: u64,
    pub dirs: u32,
    pub workers: usize,
    pub interval_seconds: f64,
    pub fs: FsType,
    /// Skip the remount: remove with the dentries and inodes still cached.
    pub warm: bool,
    pub force: bool,
}

/// One reading of the timeline.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Sample {
    /// Since the removal started.
    pub seconds: f64,
    pub unlinks_total: u64,
    /// Over the interval that ends here (0 for the first sample).
    pub unlinks_per_second: f64,
    pub nr_dentry: u64,
    pub nr_unused: u64,
    pub nr_negative: u64,
    pub mem_available_bytes: u64,
    pub slab_reclaimable_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WorkerSummary {
    pub unlinked: u64,
    pub finished_seconds: f64,
}

/// The part of the timeline between ramp-up and tail.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Steady {
    pub from_seconds: f64,
    pub to_seconds: f64,
    pub unlinks_per_second_median: f64,
    pub unlinks_per_second_p10: f64,
    pub unlinks_per_second_p90: f64,
    /// Median nr_dentry over the steady part: the steady-state dentry count.
    pub nr_dentry_median: f64,
    /// The same, minus nr_dentry at the removal's start.
    pub nr_dentry_added_median: f64,
    pub nr_negative_median: f64,
    /// Slope of nr_dentry against the unlink count over the steady part:
    /// near 1 when every unlink leaves a dentry behind (no steady state),
    /// near 0 when the count holds.
    pub dentries_per_unlink: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct HighWater {
    pub nr_dentry: u64,
    /// Above nr_dentry at the first sample (the removal's start).
    pub nr_dentry_added: i64,
    pub at_seconds: f64,
    pub nr_negative: u64,
    pub mem_available_min_bytes: u64,
    /// Highest SReclaimable (reclaimable slab: dentries and inodes) seen.
    pub slab_reclaimable_max_bytes: u64,
    /// MemAvailable at the start of the build minus its lowest reading.
    pub memory_used_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ChurnResult {
    #[serde(flatten)]
    pub header: crate::result::Header,
    pub environment: Environment,
    pub options: Options,
    pub sandbox: Privilege,
    pub before_build: Counts,
    pub build: CreateOutcome,
    pub after_build: Counts,
    /// umount and mount seconds of the cold-cache remount (absent with --warm).
    pub remount_seconds: Option<(f64, f64)>,
    pub before_remove: Counts,
    pub remove_seconds: f64,
    pub unlinks_total: u64,
    pub unlinks_per_second: f64,
    pub workers: Vec<WorkerSummary>,
    pub samples: Vec<Sample>,
    pub steady: Option<Steady>,
    pub high_water: HighWater,
    pub oscillation: Oscillation,
    /// After the last unlink, before the directories are removed.
    pub after_remove: Counts,
    /// Removing the emptied directories (rmdir prunes a directory's
    /// cached children: shrink_dcache_parent).
    pub rmdir_seconds: f64,
    pub after_rmdir: Counts,
    /// nr_dentry freed by the rmdirs.
    pub rmdir_freed: i64,
    pub umount_seconds: f64,
    pub after_umount: Counts,
    /// nr_dentry freed by the final umount.
    pub umount_freed: i64,
    pub summary: Vec<String>,
    pub notes: Vec<String>,
}

pub(crate) fn validate(opts: &Options) -> Result<()> {
    if !opts.fs.is_disk() {
        bail!(UsageError(format!(
            "--fs {}: churn needs a disk filesystem: tmpfs frees an unlinked file's dentry at once, so nothing piles \
             up (seed 002 ran on XFS), and it cannot be remounted with its files; use --fs ext4 or --fs xfs",
            opts.fs
        )));
    }
    if u64::from(opts.dirs) > opts.files {
        bail!(UsageError(format!(
            "--dirs {}: more directories than --files ({}); use at most one directory per file",
            opts.dirs, opts.files
        )));
    }
    let iv = Duration::from_secs_f64(opts.interval_seconds);
    if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&iv) {
        bail!(UsageError(format!("--interval {}s: use 10ms to 10s", opts.interval_seconds)));
    }
    Ok(())
}

/// The memory check, before the sandbox is entered (exit 2 when refused).
pub(crate) fn preflight(opts: &Options, proc: &ProcRoot) -> Result<()> {
    crate::bench::common::check_memory(
        &format!("--files {}", human(opts.files)),
        opts.files.saturating_mul(BYTES_PER_FILE),
        &format!(" (≈{BYTES_PER_FILE} bytes per file: dentry, inode and the filesystem image)"),
        "choose fewer files, or pass --force",
        opts.force,
        proc,
    )
}

/// Runs the benchmark. The sandbox must already be entered.
pub(crate) fn run(opts: &Options, sandbox: &mut Sandbox, proc: &ProcRoot, announce: &dyn Fn(&str)) -> Result<ChurnResult> {
    let header = crate::result::Header::new("churn");
    let environment = Environment::capture(proc);
    let entries = opts.files + u64::from(opts.dirs);
    let mut mount = sandbox.mount_remountable(opts.fs, &Capacity { entries, inodes: entries })?;
    let root = mount.path().to_path_buf();

    let before_build = Counts::read(proc)?;
    let spec =
        CreateSpec { kind: Kind::File, layout: Layout::Dirs(opts.dirs), count: opts.files, threads: opts.workers };
    let progress = Arc::new(Progress::default());
    let build = workload::with_progress(opts.files, "build", &progress, || workload::create(&root, &spec, &progress))
        .context("building the tree")?;
    mount.sync()?;
    let after_build = Counts::read(proc)?;
    announce(&format!(
        "built {} files in {} directories in {:.1} s ({}/s)",
        human(build.entries),
        opts.dirs,
        build.seconds,
        human(build.rate_per_second as u64)
    ));
    let remount_seconds = if opts.warm {
        None
    } else {
        let (down, up) = mount.remount().context("remounting for a cold cache")?;
        announce(&format!("remounted (cold dentry and inode cache) in {:.2} s", (down + up).as_secs_f64()));
        Some((down.as_secs_f64(), up.as_secs_f64()))
    };

    let before_remove = Counts::read(proc)?;
    let plan = workload::plan(opts.files, opts.dirs, opts.workers);
    let (t0, outcomes, samples) = remove_sampled(opts, &root, &plan, proc)?;
    let remove_seconds = (sys::monotonic_ns() - t0) as f64 / 1e9;
    let after_remove = Counts::read(proc)?;
    let t = std::time::Instant::now();
    unlink::remove_dirs(&root, opts.dirs)?;
    let rmdir_seconds = t.elapsed().as_secs_f64();
    let after_rmdir = Counts::read(proc)?;
    let unlinks_total: u64 = outcomes.iter().map(|o| o.unlinked).sum();
    announce(&format!(
        "removed {} files with {} workers in {:.1} s ({}/s)",
        human(unlinks_total),
        plan.len(),
        remove_seconds,
        human((unlinks_total as f64 / remove_seconds) as u64)
    ));
    let umount_seconds = mount.umount()?.as_secs_f64();
    drop(mount);
    let after_umount = Counts::read(proc)?;

    let rates: Vec<f64> = samples.iter().skip(1).map(|s| s.unlinks_per_second).collect();
    let osc = oscillation::analyse(&rates, opts.interval_seconds);
    let steady = steady(&samples);
    let high_water = high_water(&samples, &before_build, &[&after_build, &before_remove]);
    let mut result = ChurnResult {
        header,
        environment,
        options: opts.clone(),
        sandbox: sandbox.privilege,
        before_build,
        build,
        after_build,
        remount_seconds,
        before_remove,
        remove_seconds,
        unlinks_total,
        unlinks_per_second: unlinks_total as f64 / remove_seconds,
        workers: outcomes
            .iter()
            .map(|o| WorkerSummary {
                unlinked: o.unlinked,
                finished_seconds: o.finished_ns.saturating_sub(t0) as f64 / 1e9,
            })
            .collect(),
        samples,
        steady,
        high_water,
        oscillation: osc,
        rmdir_freed: after_remove.dentry_state.nr_dentry as i64 - after_rmdir.dentry_state.nr_dentry as i64,
        umount_freed: after_rmdir.dentry_state.nr_dentry as i64 - after_umount.dentry_state.nr_dentry as i64,
        after_remove,
        rmdir_seconds,
        after_rmdir,
        umount_seconds,
        after_umount,
        summary: Vec::new(),
        notes: Vec::new(),
    };
    result.summary = summary_lines(&result);
    result.notes = notes(&result);
    Ok(result)
}

/// The workers' unlinks, timed from `t0` (returned with their outcomes),
/// with the counters sampled every `--interval` beside them.
fn remove_sampled(
    opts: &Options,
    root: &std::path::Path,
    plan: &[Vec<workload::WorkItem>],
    proc: &ProcRoot,
) -> Result<(u64, Vec<unlink::WorkerOutcome>, Vec<Sample>)> {
    let progress = Progress::default();
    let stop = AtomicBool::new(false);
    let interval = Duration::from_secs_f64(opts.interval_seconds);
    let t0 = sys::monotonic_ns();
    let (outcomes, samples) = std::thread::scope(|s| -> Result<_> {
        let sampler = std::thread::Builder::new()
            .name("churn-sampler".into())
            .spawn_scoped(s, || sample_loop(proc, &progress.done, &stop, t0, interval))
            .context("cannot start the sampler thread")?;
        let removed = unlink::remove(root, plan, &progress);
        stop.store(true, Ordering::Relaxed);
        let samples = sampler.join().unwrap_or_else(|_| bail!("the sampler thread panicked"));
        Ok((removed?, samples?))
    })?;
    Ok((t0, outcomes, samples))
}

/// Reads the counters every `interval` (on a fixed schedule from `t0`)
/// until `stop` is set, then once more.
fn sample_loop(
    proc: &ProcRoot,
    done: &std::sync::atomic::AtomicU64,
    stop: &AtomicBool,
    t0: u64,
    interval: Duration,
) -> Result<Vec<Sample>> {
    let mut out: Vec<Sample> = Vec::new();
    let step = interval.as_nanos() as u64;
    let mut k = 0u64;
    loop {
        let last = stop.load(Ordering::Relaxed);
        let now = sys::monotonic_ns();
        let unlinks_total = done.load(Ordering::Relaxed);
        let ds = proc.dentry_state()?;
        let mem = proc.meminfo()?;
        let seconds = now.saturating_sub(t0) as f64 / 1e9;
        let unlinks_per_second = match out.last() {
            Some(p) if seconds > p.seconds => (unlinks_total - p.unlinks_total) as f64 / (seconds - p.seconds),
            _ => 0.0,
        };
        out.push(Sample {
            seconds,
            unlinks_total,
            unlinks_per_second,
            nr_dentry: ds.nr_dentry,
            nr_unused: ds.nr_unused,
            nr_negative: ds.nr_negative,
            mem_available_bytes: mem.mem_available_bytes,
            slab_reclaimable_bytes: mem.s_reclaimable_bytes,
        });
        if last {
            return Ok(out);
        }
        k += 1;
        // Sleep to the next tick, in short naps so the end is seen soon.
        let next = t0 + k * step;
        loop {
            let now = sys::monotonic_ns();
            if now >= next || stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(Duration::from_nanos((next - now).min(10_000_000)));
        }
    }
}

/// The steady part of the timeline (see [`oscillation::steady_window`]).
pub(crate) fn steady(samples: &[Sample]) -> Option<Steady> {
    let body = samples.get(1..)?;
    let w = oscillation::steady_window(body.len());
    let part = body.get(w)?;
    if part.is_empty() {
        return None;
    }
    let mut rates: Vec<f64> = part.iter().map(|s| s.unlinks_per_second).collect();
    rates.sort_by(f64::total_cmp);
    let col = |f: fn(&Sample) -> u64| median(&part.iter().map(|s| f(s) as f64).collect::<Vec<_>>());
    Some(Steady {
        from_seconds: part[0].seconds,
        to_seconds: part[part.len() - 1].seconds,
        unlinks_per_second_median: median(&rates),
        unlinks_per_second_p10: percentile_sorted(&rates, 0.1),
        unlinks_per_second_p90: percentile_sorted(&rates, 0.9),
        nr_dentry_median: col(|s| s.nr_dentry),
        nr_dentry_added_median: col(|s| s.nr_dentry) - samples[0].nr_dentry as f64,
        nr_negative_median: col(|s| s.nr_negative),
        dentries_per_unlink: crate::analysis::fit::linear(
            &part.iter().map(|s| (s.unlinks_total as f64, s.nr_dentry as f64)).collect::<Vec<_>>(),
        )
        .map(|l| l.slope),
    })
}

/// The peaks of the removal's timeline; memory also counts the readings in
/// `also` (after the build, before the removal).
pub(crate) fn high_water(samples: &[Sample], before_build: &Counts, also: &[&Counts]) -> HighWater {
    // The first sample at the peak.
    let top = samples.iter().fold(None::<&Sample>, |m, s| match m {
        Some(m) if m.nr_dentry >= s.nr_dentry => Some(m),
        _ => Some(s),
    });
    let before_remove_dentries = samples.first().map_or(0, |s| s.nr_dentry);
    let min_avail = samples
        .iter()
        .map(|s| s.mem_available_bytes)
        .chain(also.iter().map(|c| c.mem_available_bytes))
        .min()
        .unwrap_or(before_build.mem_available_bytes);
    HighWater {
        nr_dentry: top.map_or(0, |s| s.nr_dentry),
        nr_dentry_added: top.map_or(0, |s| s.nr_dentry as i64 - before_remove_dentries as i64),
        at_seconds: top.map_or(0.0, |s| s.seconds),
        nr_negative: samples.iter().map(|s| s.nr_negative).max().unwrap_or(0),
        mem_available_min_bytes: min_avail,
        slab_reclaimable_max_bytes: samples.iter().map(|s| s.slab_reclaimable_bytes).max().unwrap_or(0),
        memory_used_bytes: before_build.mem_available_bytes.saturating_sub(min_avail),
    }
}

/// One summary sentence per figure, in reading order.
fn summary_lines(r: &ChurnResult) -> Vec<String> {
    vec![rate_line(r), high_water_line(r), negatives_line(r), oscillation_line(r), memory_line(r)]
}

/// The removal's rate, overall and in the steady part.
fn rate_line(r: &ChurnResult) -> String {
    format!(
        "removed {} files with {} workers in {:.1} s: {}/s overall{}",
        human(r.unlinks_total),
        r.workers.len(),
        r.remove_seconds,
        human(r.unlinks_per_second as u64),
        r.steady
            .as_ref()
            .map(|s| format!(
                ", {}/s median in the steady part ({:.1}–{:.1} s; p10 {}/s, p90 {}/s)",
                human(s.unlinks_per_second_median as u64),
                s.from_seconds,
                s.to_seconds,
                human(s.unlinks_per_second_p10 as u64),
                human(s.unlinks_per_second_p90 as u64)
            ))
            .unwrap_or_default()
    )
}

/// The dentry high-water mark, and the steady state if there was one.
fn high_water_line(r: &ChurnResult) -> String {
    let h = &r.high_water;
    format!(
        "dentry high-water mark: nr_dentry {} at {:.1} s ({}{} over the start of the removal); nr_negative up to {}{}",
        human(h.nr_dentry),
        h.at_seconds,
        if h.nr_dentry_added < 0 { "-" } else { "+" },
        human(h.nr_dentry_added.unsigned_abs()),
        human(h.nr_negative),
        r.steady
            .as_ref()
            .map(|s| match s.dentries_per_unlink {
                Some(k) if k >= GROWING_DENTRIES_PER_UNLINK => format!(
                    "; no steady state: over the steady part nr_dentry grew by {k:.2} per unlink (every unlinked \
                     file left its dentry behind)"
                ),
                _ => format!(
                    "; steady state {} dentries, {}{} over the start ({} negative; medians of the steady part)",
                    human(s.nr_dentry_median as u64),
                    if s.nr_dentry_added_median < 0.0 { "-" } else { "+" },
                    human(s.nr_dentry_added_median.abs() as u64),
                    human(s.nr_negative_median as u64)
                ),
            })
            .unwrap_or_default()
    )
}

/// The negatives the unlinks left, and what rmdir and the umount freed.
fn negatives_line(r: &ChurnResult) -> String {
    let neg_added = r.after_remove.dentry_state.nr_negative as i64 - r.before_remove.dentry_state.nr_negative as i64;
    format!(
        "after the last unlink nr_negative was {}{} over the start: {} of the {} unlinked files' dentries stayed \
         cached as negative dentries; removing the {} emptied directories freed {} dentries in {} (rmdir prunes a \
         directory's cached children), the final umount {} more in {}",
        if neg_added < 0 { "-" } else { "+" },
        human(neg_added.unsigned_abs()),
        if neg_added as f64 >= 0.9 * r.unlinks_total as f64 { "nearly all" } else { "not all" },
        human(r.unlinks_total),
        r.options.dirs,
        human(r.rmdir_freed.max(0) as u64),
        crate::duration::secs(r.rmdir_seconds),
        human(r.umount_freed.max(0) as u64),
        crate::duration::secs(r.umount_seconds)
    )
}

/// Whether the throughput oscillates, against seed 002's pattern.
fn oscillation_line(r: &ChurnResult) -> String {
    let osc = &r.oscillation;
    match (osc.oscillates, osc.period_seconds, osc.peak_trough_ratio) {
        (true, Some(p), Some(ratio)) => format!(
            "throughput oscillates: period {:.1} s, peak/trough {:.1}× (autocorrelation {:.2} over {:.1} periods); \
             seed 002 saw a period of about {SEED_002_PERIOD_SECONDS:.0} s and 80k/20k = 4×",
            p,
            ratio,
            osc.autocorrelation.unwrap_or(f64::NAN),
            osc.cycles.unwrap_or(f64::NAN)
        ),
        _ => format!(
            "throughput does not oscillate: {} (p90/p10 of the rate {}); seed 002's {SEED_002_PERIOD_SECONDS:.0} s \
             peak/trough pattern does not show{}",
            match (osc.period_seconds, osc.peak_trough_ratio) {
                (Some(p), Some(ratio)) => format!(
                    "the only regular component has period {p:.1} s and peak/trough {ratio:.2}× (autocorrelation {:.2})",
                    osc.autocorrelation.unwrap_or(f64::NAN)
                ),
                _ => "no regular period in the detrended rate".into(),
            },
            osc.p90_p10_ratio.map(|x| format!("{x:.2}×")).unwrap_or_else(|| "–".into()),
            r.steady
                .as_ref()
                .filter(|s| s.to_seconds - s.from_seconds < oscillation::MIN_CYCLES * SEED_002_PERIOD_SECONDS)
                .map(|s| format!(
                    " (the steady part lasted {:.0} s: two periods as long as the seed's need {:.0} s; use more --files)",
                    s.to_seconds - s.from_seconds,
                    oscillation::MIN_CYCLES * SEED_002_PERIOD_SECONDS
                ))
                .unwrap_or_default()
        ),
    }
}

/// What the run took of the memory.
fn memory_line(r: &ChurnResult) -> String {
    let (o, h) = (&r.options, &r.high_water);
    let share = h.memory_used_bytes as f64 / r.before_build.mem_available_bytes.max(1) as f64;
    format!(
        "memory: MemAvailable fell by at most {} ({:.0}% of the {} available at the start; reclaimable slab, \
         which MemAvailable counts as available, peaked at {}; {} files on {})",
        bytes(h.memory_used_bytes),
        share * 100.0,
        bytes(r.before_build.mem_available_bytes),
        bytes(h.slab_reclaimable_max_bytes),
        human(o.files),
        o.fs
    )
}

fn notes(r: &ChurnResult) -> Vec<String> {
    let mut out = vec![
        "dentry-state and meminfo are machine-wide: other activity on the machine shows in the timeline too".into(),
    ];
    if r.options.warm {
        out.push("--warm: removed with every dentry and inode still cached (no remount)".into());
    }
    let share = r.high_water.memory_used_bytes as f64 / r.before_build.mem_available_bytes.max(1) as f64;
    if share > crate::bench::common::MAX_MEMORY_SHARE {
        out.push(format!(
            "the run took {:.0}% of MemAvailable, more than the {:.0}% the preflight allows: lower --files",
            share * 100.0,
            crate::bench::common::MAX_MEMORY_SHARE * 100.0
        ));
    }
    if r.workers.len() < r.options.workers {
        out.push(format!(
            "only {} of {} workers had work: give at least as many --files as --workers",
            r.workers.len(),
            r.options.workers
        ));
    }
    out
}

#[cfg(test)]
mod tests;
