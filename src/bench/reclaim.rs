//! `dentrylab reclaim`: seed 000's experiment, done right.
//!
//! For each size and repetition: mount a fresh filesystem in the sandbox,
//! create the dentries, count them, reclaim them while a probe pinned to the
//! reclaiming CPU records how long that CPU is monopolised (a second probe
//! on another CPU is the control) and /dev/kmsg is watched, count again.
//! Then fit cost against count, extrapolate, and decide at what count a
//! reclaim trips the soft-lockup watchdog.
//!
//! Several reclaim paths can run in one sweep (`--method all`): each size is
//! created afresh for each of them, and the verdict names the most
//! dangerous. With `--contend T`, every repetition also runs with T threads
//! doing path lookups in the same filesystem on the other CPUs.

pub mod child;
pub mod methods;
pub mod profile;

pub use methods::Method;

use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::analysis::fit::{self, LinearFit, PowerFit};
use crate::analysis::verdict::{self, Verdict};
use crate::env::Environment;
use crate::error::UsageError;
use crate::probe::counters::Counts;
use crate::probe::gap::GapProbe;
use crate::probe::kmsg::KmsgWatch;
use crate::procfs::ProcRoot;
use crate::procfs::kmsg::{Alert, Kind as AlertKind};
use crate::sandbox::{FsType, Privilege, Sandbox};
use crate::size::human;
use crate::stats::{GapStats, Spread, median};
use crate::sys;
use crate::workload::contend::{self, ContendStats, Contenders};
use crate::workload::{self, CreateSpec, Kind, Layout};
use methods::{MemcgOutcome, StageSpec};

/// Refuse a size whose predicted monopolisation exceeds this, unless --force.
pub const MAX_PREDICTED_GAP_SECONDS: f64 = 10.0;
/// Refuse a size whose memory estimate exceeds this share of MemAvailable.
pub const MAX_MEMORY_SHARE: f64 = 0.5;
/// How long the probes run before and after the reclaim call.
const PROBE_MARGIN: Duration = Duration::from_millis(20);

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    pub sizes: Vec<u64>,
    pub reps: u32,
    pub kind: Kind,
    pub layout: Layout,
    pub threads: usize,
    pub fs: FsType,
    /// The reclaim paths, in the order they run at each size (the first is
    /// the one whose fit is saved as the calibration).
    pub methods: Vec<Method>,
    /// Threads doing lookups during the reclaim (`--contend`); 0: none.
    pub contend: usize,
    /// `--allow-global`: actions that affect the whole machine.
    pub allow_global: bool,
    pub extrapolate: u64,
    pub cpu: usize,
    pub control_cpu: Option<usize>,
    pub probe_interval_us: u64,
    pub force: bool,
    /// `--profile`: perf call graphs of the reclaiming CPU.
    #[serde(default)]
    pub profile: bool,
}

/// One repetition at one size.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    pub target: u64,
    pub rep: u32,
    pub method: Method,
    /// Lookup threads contending during the reclaim (0: none).
    pub contenders: usize,
    pub create: workload::CreateOutcome,
    pub before: Counts,
    pub after_create: Counts,
    pub after_reclaim: Counts,
    /// nr_dentry gained by creating (dentry-state).
    pub created: i64,
    /// nr_dentry lost by reclaiming (dentry-state).
    pub reclaimed: i64,
    /// Same two from slabinfo's active dentry objects, when readable.
    pub created_slab: Option<i64>,
    pub reclaimed_slab: Option<i64>,
    /// nr_negative gained by creating and lost by reclaiming.
    pub created_negative: i64,
    pub reclaimed_negative: i64,
    /// The counter that witnesses this kind: `nr_negative` for negative
    /// kinds, else `nr_dentry`.
    pub witness: String,
    /// Of the dentries this run made (one per entry), how many the reclaim
    /// freed: what it took off the witness counter, or for the paths that
    /// leave the filesystem mounted, the entries made minus what the
    /// clean-up umount still took off it.
    pub freed: i64,
    pub freed_fraction: f64,
    /// Dentries (by the witness) the clean-up umount found after a reclaim
    /// that leaves the filesystem mounted.
    pub left_for_umount: Option<i64>,
    pub after_cleanup: Option<Counts>,
    pub contention: Option<ContendStats>,
    pub memcg: Option<MemcgOutcome>,
    pub reclaim_seconds: f64,
    pub reclaim_sys_seconds: f64,
    pub ns_per_dentry: f64,
    pub bytes_per_dentry: f64,
    pub probe: GapStats,
    pub control: Option<GapStats>,
    pub kernel_messages: Vec<Alert>,
    /// Thread id of the task that ran the reclaim (the one a soft-lockup
    /// message names).
    pub reclaim_task_pid: u32,
    /// With `--profile`: what held the CPU in the longest gap and over the reclaim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<profile::RunProfile>,
    /// With `--profile`: why this run has no profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_problem: Option<String>,
}

/// Share of the target by which the kernel's count may differ before it is
/// taken as disturbed by other activity on the machine.
pub const COUNT_TOLERANCE: f64 = 0.10;

/// The dentry count a reclaim is charged with: what it freed by the witness
/// counter. For the paths that free everything (umount, ns-exit), a freed
/// count more than [`COUNT_TOLERANCE`] off the target means other work on
/// the machine moved the global counter: the target stands in for it.
pub fn fit_count(method: Method, freed: i64, target: u64) -> f64 {
    let t = target as f64;
    let f = freed.max(1) as f64;
    if !method.lru_only() && (f - t).abs() > t * COUNT_TOLERANCE { t } else { f }
}

impl Run {
    /// The count this run stands for in fits.
    pub fn fit_count(&self) -> f64 {
        fit_count(self.method, self.freed, self.target)
    }
}

/// The repetitions of one size, summarised.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SizeSummary {
    pub target: u64,
    /// `reclaimed` and `reclaimed_vs_target` count by the witness counter.
    pub method: Method,
    pub contenders: usize,
    pub reps: u32,
    /// Median share of the created dentries the reclaim freed.
    pub freed_fraction: f64,
    /// The witness counter's name (see [`Run::witness`]).
    pub witness: String,
    pub reclaimed: Spread,
    /// Median of (reclaimed − target) / target.
    pub reclaimed_vs_target: f64,
    pub reclaim_seconds: Spread,
    pub reclaim_sys_seconds: f64,
    pub ns_per_dentry: Spread,
    /// Median ns/dentry × the extrapolation target (seed 000's column).
    pub extrapolated_seconds: f64,
    pub max_gap_seconds: Spread,
    pub p99_gap_seconds: f64,
    pub control_max_gap_seconds: Option<f64>,
    pub create_rate_per_second: f64,
    pub soft_lockups: usize,
    pub kernel_messages: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fits {
    pub time_linear: Option<LinearFit>,
    pub time_power: Option<PowerFit>,
    pub gap_linear: Option<LinearFit>,
    pub gap_power: Option<PowerFit>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MethodAnalysis {
    pub method: Method,
    pub fits: Fits,
    pub verdict: Option<Verdict>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Refusal {
    pub target: u64,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReclaimResult {
    #[serde(flatten)]
    pub header: crate::result::Header,
    pub environment: Environment,
    pub options: Options,
    pub sandbox: Privilege,
    pub runs: Vec<Run>,
    pub sizes: Vec<SizeSummary>,
    /// Fit and verdict of the first method, without contention.
    pub fits: Fits,
    pub verdict: Option<Verdict>,
    /// The same for every method, in `options.methods` order.
    pub per_method: Vec<MethodAnalysis>,
    /// Which path is the most dangerous, when several ran.
    pub comparison: Option<verdict::Danger>,
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub bytes_per_dentry: f64,
    pub refused: Vec<Refusal>,
    pub notes: Vec<String>,
    /// Present when run with `--watchdog-check`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watchdog: Option<crate::bench::watchdog::WatchdogReport>,
}

/// Checks the sizes against memory before anything is created, with the
/// kind's conservative bytes-per-dentry. Bad input: exit 2.
pub fn preflight(sizes: &[u64], kind: Kind, force: bool, proc: &ProcRoot) -> Result<()> {
    let bpd = kind.default_bytes_per_dentry();
    for &n in sizes {
        crate::bench::check_memory(
            &format!("size {} of {} dentries", human(n), kind.name()),
            n.saturating_mul(bpd),
            &format!(" (≈{bpd} bytes each)"),
            "choose a smaller size, or pass --force",
            force,
            proc,
        )?;
    }
    Ok(())
}

/// Runs the sweep. The sandbox must already be entered.
pub fn run(opts: &Options, sandbox: &mut Sandbox, proc: &ProcRoot) -> Result<ReclaimResult> {
    let environment = Environment::capture(proc);
    let kmsg = KmsgWatch::start();
    let mut notes = Vec::new();
    if let Some(why) = &kmsg.unavailable {
        notes.push(why.clone());
    }
    if proc.slab_dentry().is_none() {
        notes.push("/proc/slabinfo is not readable: counts come from dentry-state only".into());
    }
    if opts.control_cpu.is_none() {
        notes.push("only one CPU is available: no control probe".into());
    }
    notes.extend(method_notes(opts));
    let profiling = profile::available(opts.profile, opts.cpu, sandbox.scratch(), &mut notes);
    let mut runs: Vec<Run> = Vec::new();
    let mut refused = Vec::new();
    let mut bpd_measured: Option<f64> = None;
    let mut phase = 0u32;
    let contention: Vec<usize> = if opts.contend > 0 { vec![0, opts.contend] } else { vec![0] };
    'sizes: for &target in &opts.sizes {
        if let Some(reason) = refuse(opts, target, bpd_measured, &runs, proc)? {
            eprintln!("dentrylab: refusing size {}: {reason}", human(target));
            refused.push(Refusal { target, reason });
            break 'sizes;
        }
        for &method in &opts.methods {
            for rep in 0..opts.reps {
                for &contenders in &contention {
                    phase += 2;
                    kmsg.set_phase(phase);
                    let at = At { target, rep, method, contenders, phase, profile: profiling && contenders == 0 };
                    let r = one_run(opts, sandbox, proc, &kmsg, &at)?;
                    if bpd_measured.is_none() && r.bytes_per_dentry.is_finite() && r.bytes_per_dentry > 0.0 {
                        bpd_measured = Some(r.bytes_per_dentry);
                    }
                    report_progress(&r);
                    runs.push(r);
                }
            }
        }
    }
    for r in runs.iter().filter(|r| r.fit_count() != r.freed.max(1) as f64) {
        notes.push(format!(
            "size {} rep {}: the {} counter moved by {} instead of about {} (other activity on the machine); \
             this run is counted at its target",
            human(r.target),
            r.rep + 1,
            r.witness,
            r.freed,
            r.target
        ));
    }
    let sizes = summarise(&runs, opts);
    let mut per_method: Vec<MethodAnalysis> = opts
        .methods
        .iter()
        .map(|&method| {
            let mine: Vec<Run> = runs.iter().filter(|r| r.method == method && r.contenders == 0).cloned().collect();
            let fits = fit_runs(&mine);
            let verdict = decide(&fits, &sizes, &mine, method, opts, &environment);
            MethodAnalysis { method, fits, verdict }
        })
        .collect();
    for m in &mut per_method {
        if let (Some(v), Some(line)) = (m.verdict.as_mut(), profile::verdict_line(&runs, m.method)) {
            v.summary.push(line);
        }
    }
    let comparison = compare(&per_method, &sizes);
    let (fits, verdict) = per_method
        .first()
        .map(|m| (m.fits.clone(), m.verdict.clone()))
        .unwrap_or_else(|| (fit_runs(&[]), None));
    Ok(ReclaimResult {
        header: crate::result::Header::new("reclaim"),
        environment,
        options: opts.clone(),
        sandbox: sandbox.privilege,
        runs,
        sizes,
        fits,
        verdict,
        per_method,
        comparison,
        bytes_per_dentry: bpd_measured.unwrap_or(f64::NAN),
        refused,
        notes,
        watchdog: None,
    })
}

/// What the chosen methods cannot do, said once up front.
fn method_notes(opts: &Options) -> Vec<String> {
    let mut out = Vec::new();
    for m in &opts.methods {
        if m.lru_only() && opts.fs == FsType::Tmpfs {
            out.push(format!(
                "{}: tmpfs pins its dentries (they are never on the LRU), so {} frees none of them; \
                 use --fs ext4 or xfs to measure this path",
                m.name(),
                m.name()
            ));
        }
    }
    if opts.methods.contains(&Method::DropCaches) {
        out.push(
            "drop-caches is machine-wide: its time and 'Reclaimed' include every other unused dentry on the \
             node; 'Freed' counts only this run's"
                .into(),
        );
    }
    if opts.contend > 0 && opts.methods.iter().any(|m| !m.leaves_mounted()) {
        out.push(
            "umount and ns-exit detach the filesystem before freeing its dentries: from then on the contending \
             lookups walk to the empty mount point instead"
                .into(),
        );
    }
    out
}

fn report_progress(r: &Run) {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        eprintln!(
            "  {:>6} {}{} rep {}: created {} at {:.0}/s, freed {:.1}% in {:.3} s, max gap {:.3} s",
            human(r.target),
            r.method.name(),
            if r.contenders > 0 { format!(" +{} lookup threads", r.contenders) } else { String::new() },
            r.rep + 1,
            r.create.entries,
            r.create.rate_per_second,
            r.freed_fraction * 100.0,
            r.reclaim_seconds,
            r.probe.max_gap_seconds
        );
    }
}

/// Why `target` must not run, if it must not.
fn refuse(opts: &Options, target: u64, bpd: Option<f64>, runs: &[Run], proc: &ProcRoot) -> Result<Option<String>> {
    if opts.force {
        return Ok(None);
    }
    let avail = proc.meminfo()?.mem_available_bytes as f64;
    let bpd_used = bpd.unwrap_or(opts.kind.default_bytes_per_dentry() as f64);
    let need = target as f64 * bpd_used;
    if need > avail * MAX_MEMORY_SHARE {
        return Ok(Some(format!(
            "it needs about {} ({bpd_used:.0} bytes per dentry{}), more than half of MemAvailable ({}); pass --force to run it anyway",
            crate::size::bytes(need as u64),
            if bpd.is_some() { ", measured" } else { ", estimated" },
            crate::size::bytes(avail as u64)
        )));
    }
    for &method in &opts.methods {
        let mine: Vec<&Run> = runs.iter().filter(|r| r.method == method).collect();
        let distinct: std::collections::BTreeSet<u64> = mine.iter().map(|r| r.target).collect();
        if distinct.len() < 2 {
            continue;
        }
        let pts: Vec<_> = mine.iter().map(|r| (r.fit_count(), r.probe.max_gap_seconds)).collect();
        if let Some(p) = fit::power(&pts) {
            let g = p.at(target as f64);
            if g > MAX_PREDICTED_GAP_SECONDS {
                return Ok(Some(format!(
                    "the smaller sizes predict {} would hold CPU {} for about {g:.1} s (over {MAX_PREDICTED_GAP_SECONDS:.0} s); pass --force to run it anyway",
                    method.name(),
                    opts.cpu
                )));
            }
        }
    }
    Ok(None)
}

/// Which run this is.
struct At {
    target: u64,
    rep: u32,
    method: Method,
    contenders: usize,
    phase: u32,
    /// Record this reclaim with perf (`--profile`).
    profile: bool,
}

fn one_run(opts: &Options, sandbox: &mut Sandbox, proc: &ProcRoot, kmsg: &KmsgWatch, at: &At) -> Result<Run> {
    let (target, rep, phase) = (at.target, at.rep, at.phase);
    let before = Counts::read(proc)?;
    let spec = CreateSpec { kind: opts.kind, layout: opts.layout, count: target, threads: opts.threads };
    let label = format!("create {} {} rep {}", human(target), at.method.name(), rep + 1);
    let stage = StageSpec { method: at.method, create: spec, fs: opts.fs, cpu: opts.cpu, label: &label };
    let (mut staged, create) = methods::stage(&stage, sandbox)?;
    let after_create = Counts::read(proc)?;

    // Reclaim on a known CPU, with the probes (and the contenders) around it.
    kmsg.set_phase(phase + 1);
    let all = sys::allowed_cpus()?;
    sys::pin_current_thread(opts.cpu)?;
    let interval = Duration::from_micros(opts.probe_interval_us);
    let contenders = if at.contenders > 0 {
        let others: Vec<usize> = all.iter().copied().filter(|&c| c != opts.cpu).collect();
        let paths = contend::hot_paths(&staged.lookup_root(), opts.layout, target);
        Some(Contenders::start(paths, at.contenders, &others)?)
    } else {
        None
    };
    let tag = format!("{}-{}-{}", target, at.method.name(), rep);
    let mut recording = profile::start(at.profile, opts.cpu, sandbox.scratch(), &tag)?;
    let probe = GapProbe::start(opts.cpu, interval)?;
    let control = opts.control_cpu.map(|c| GapProbe::start(c, interval)).transpose()?;
    std::thread::sleep(PROBE_MARGIN);
    let done = recording.time(staged.reclaiming_task(), || staged.reclaim(proc));
    std::thread::sleep(PROBE_MARGIN);
    let (probe, longest_gap) = probe.finish_with_longest();
    let control = control.map(GapProbe::finish);
    let contention = contenders.map(Contenders::finish);
    sys::unpin_current_thread(&all)?;
    let (profile, profile_problem) = recording.finish(longest_gap);
    kmsg.set_phase(phase);
    let done = done.with_context(|| format!("reclaiming by {}", at.method.name()))?;
    let kernel_messages = kmsg.take(phase + 1);
    let after_reclaim = Counts::read(proc)?;
    let after_cleanup = if staged.finish()? { Some(Counts::read(proc)?) } else { None };

    let witness = |c: &Counts| {
        if opts.kind.is_negative() { c.dentry_state.nr_negative as i64 } else { c.dentry_state.nr_dentry as i64 }
    };
    let reclaimed_w = witness(&after_create) - witness(&after_reclaim);
    let left_for_umount = after_cleanup.as_ref().map(|c| (witness(&after_reclaim) - witness(c)).max(0));
    // The generator made exactly one dentry per entry; the counters are
    // machine-wide, so other processes add noise over the seconds creation
    // takes. Only the short windows around the reclaim and the clean-up
    // umount are read as this run's.
    let made = create.entries as i64;
    let freed = match left_for_umount {
        Some(left) => (made - left).clamp(0, made),
        None => reclaimed_w.clamp(0, made),
    };
    let created = after_create.dentry_state.nr_dentry as i64 - before.dentry_state.nr_dentry as i64;
    let reclaimed = after_create.dentry_state.nr_dentry as i64 - after_reclaim.dentry_state.nr_dentry as i64;
    let neg = |a: &Counts, b: &Counts| a.dentry_state.nr_negative as i64 - b.dentry_state.nr_negative as i64;
    let slab = |a: &Counts, b: &Counts| Some(a.slab_dentry_active? as i64 - b.slab_dentry_active? as i64);
    let reclaim_seconds = done.took.as_secs_f64();
    let grown_slab = after_create.slab_bytes.saturating_sub(before.slab_bytes) as f64;
    let lost_avail = before.mem_available_bytes.saturating_sub(after_create.mem_available_bytes) as f64;
    Ok(Run {
        target,
        rep,
        method: at.method,
        contenders: at.contenders,
        created_slab: slab(&after_create, &before),
        reclaimed_slab: slab(&after_create, &after_reclaim),
        created_negative: neg(&after_create, &before),
        reclaimed_negative: neg(&after_create, &after_reclaim),
        witness: if opts.kind.is_negative() { "nr_negative" } else { "nr_dentry" }.into(),
        freed,
        freed_fraction: freed as f64 / made.max(1) as f64,
        left_for_umount,
        after_cleanup,
        contention,
        memcg: done.memcg,
        ns_per_dentry: reclaim_seconds * 1e9 / fit_count(at.method, freed, target),
        bytes_per_dentry: grown_slab.max(lost_avail) / created.max(1) as f64,
        create,
        before,
        after_create,
        after_reclaim,
        created,
        reclaimed,
        reclaim_seconds,
        reclaim_sys_seconds: done.sys.as_secs_f64(),
        probe,
        control,
        kernel_messages,
        reclaim_task_pid: nix::unistd::gettid().as_raw() as u32,
        profile,
        profile_problem,
    })
}

fn summarise(runs: &[Run], opts: &Options) -> Vec<SizeSummary> {
    let mut keys: Vec<(Method, usize, u64)> = Vec::new();
    for r in runs {
        let k = (r.method, r.contenders, r.target);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(method, contenders, t)| {
            let rs: Vec<&Run> =
                runs.iter().filter(|r| r.target == t && r.method == method && r.contenders == contenders).collect();
            let col = |f: &dyn Fn(&Run) -> f64| rs.iter().map(|r| f(r)).collect::<Vec<f64>>();
            let ns = Spread::of(&col(&|r| r.ns_per_dentry));
            let controls: Vec<f64> = rs.iter().filter_map(|r| r.control.as_ref().map(|c| c.max_gap_seconds)).collect();
            SizeSummary {
                target: t,
                method,
                contenders,
                reps: rs.len() as u32,
                freed_fraction: median(&col(&|r| r.freed_fraction)),
                witness: rs.first().map(|r| r.witness.clone()).unwrap_or_default(),
                reclaimed: Spread::of(&col(&|r| reclaimed_by_witness(r) as f64)),
                reclaimed_vs_target: median(&col(&|r| (reclaimed_by_witness(r) as f64 - t as f64) / t as f64)),
                reclaim_seconds: Spread::of(&col(&|r| r.reclaim_seconds)),
                reclaim_sys_seconds: median(&col(&|r| r.reclaim_sys_seconds)),
                extrapolated_seconds: ns.median * opts.extrapolate as f64 / 1e9,
                ns_per_dentry: ns,
                max_gap_seconds: Spread::of(&col(&|r| r.probe.max_gap_seconds)),
                p99_gap_seconds: median(&col(&|r| r.probe.p99_gap_seconds)),
                control_max_gap_seconds: (!controls.is_empty()).then(|| controls.iter().copied().fold(0.0, f64::max)),
                create_rate_per_second: median(&col(&|r| r.create.rate_per_second)),
                soft_lockups: rs
                    .iter()
                    .flat_map(|r| &r.kernel_messages)
                    .filter(|a| a.kind == AlertKind::SoftLockup)
                    .count(),
                kernel_messages: rs.iter().map(|r| r.kernel_messages.len()).sum(),
            }
        })
        .collect()
}

/// What the reclaim took off the witness counter (machine-wide).
fn reclaimed_by_witness(r: &Run) -> i64 {
    if r.witness == "nr_negative" { r.reclaimed_negative } else { r.reclaimed }
}

/// Fits time and longest gap against the dentries each run freed.
pub fn fit_runs(runs: &[Run]) -> Fits {
    let time: Vec<_> = runs.iter().map(|r| (r.fit_count(), r.reclaim_seconds)).collect();
    let gap: Vec<_> = runs.iter().map(|r| (r.fit_count(), r.probe.max_gap_seconds)).collect();
    Fits {
        time_linear: fit::linear(&time),
        time_power: fit::power(&time),
        gap_linear: fit::linear(&gap),
        gap_power: fit::power(&gap),
    }
}

fn decide(
    fits: &Fits,
    sizes: &[SizeSummary],
    runs: &[Run],
    method: Method,
    opts: &Options,
    env: &Environment,
) -> Option<Verdict> {
    let mine: Vec<&SizeSummary> = sizes.iter().filter(|s| s.method == method && s.contenders == 0).collect();
    let largest = mine.last()?;
    let ratios: Vec<f64> = runs
        .iter()
        .filter(|r| r.target == largest.target && r.reclaim_seconds > 0.0)
        .map(|r| (r.probe.max_gap_seconds / r.reclaim_seconds).min(1.0))
        .collect();
    Some(verdict::decide(&verdict::Inputs {
        time_linear: fits.time_linear,
        time_power: fits.time_power,
        gap_power: fits.gap_power,
        gap_to_time_ratio: median(&ratios),
        largest_size: largest.target,
        watchdog_thresh_seconds: env.watchdog_thresh_seconds.unwrap_or(10).max(1),
        extrapolate_to: opts.extrapolate,
        soft_lockups_observed: mine.iter().map(|s| s.soft_lockups).sum(),
    }))
}

/// Ranks the methods, when several ran, at the largest size all of them reached.
fn compare(per_method: &[MethodAnalysis], sizes: &[SizeSummary]) -> Option<verdict::Danger> {
    if per_method.len() < 2 {
        return None;
    }
    let target = per_method
        .iter()
        .map(|m| sizes.iter().filter(|s| s.method == m.method && s.contenders == 0).map(|s| s.target).max())
        .collect::<Option<Vec<u64>>>()?
        .into_iter()
        .min()?;
    let rows: Vec<verdict::PathRow> = per_method
        .iter()
        .filter_map(|m| {
            let at = |c: bool| sizes.iter().find(|s| s.method == m.method && s.target == target && (s.contenders > 0) == c);
            let s = at(false)?;
            Some(verdict::PathRow {
                method: m.method.name().into(),
                target,
                freed_fraction: s.freed_fraction,
                reclaim_seconds: s.reclaim_seconds.median,
                max_gap_seconds: s.max_gap_seconds.max,
                max_gap_min_seconds: s.max_gap_seconds.min,
                contended_max_gap_seconds: at(true).map(|c| c.max_gap_seconds.max),
                contended_reclaim_seconds: at(true).map(|c| c.reclaim_seconds.median),
                lockup_count: m
                    .verdict
                    .as_ref()
                    .and_then(|v| v.lockup_count)
                    .filter(|&n| n <= verdict::MAX_PREDICTED_COUNT),
            })
        })
        .collect();
    verdict::most_dangerous(&rows)
}

/// Picks the reclaiming CPU and the control CPU from the allowed set.
pub fn choose_cpus(requested: Option<usize>) -> Result<(usize, Option<usize>)> {
    let cpus = sys::allowed_cpus()?;
    let cpu = match requested {
        Some(c) if cpus.contains(&c) => c,
        Some(c) => {
            return Err(UsageError(format!(
                "--cpu {c}: this process may only run on CPUs {cpus:?}; choose one of them"
            ))
            .into());
        }
        None => *cpus.first().context("no CPU is available to this process")?,
    };
    Ok((cpu, cpus.iter().copied().find(|&c| c != cpu)))
}

/// Rejects a kind the filesystem cannot hold.
pub fn check_kind(kind: Kind, fs: FsType) -> Result<()> {
    if kind.is_negative() && !fs.is_disk() {
        bail!(UsageError(format!(
            "--kind {} needs a disk filesystem: tmpfs deletes a negative dentry as soon as it is unused, so it \
             never keeps any (1M failed lookups on tmpfs leave none); add --fs ext4 or --fs xfs",
            kind.name()
        )));
    }
    Ok(())
}

/// Most `--contend` threads.
pub const MAX_CONTEND: usize = 256;

/// Rejects combinations that cannot work, before anything is created.
pub fn validate(opts: &Options) -> Result<()> {
    if opts.sizes.is_empty() {
        bail!(UsageError("--sizes: give at least one size".into()));
    }
    if opts.methods.is_empty() {
        bail!(UsageError("--method: give at least one reclaim method".into()));
    }
    check_kind(opts.kind, opts.fs)?;
    if opts.methods.contains(&Method::DropCaches) && !opts.allow_global {
        bail!(UsageError(
            "--method drop-caches writes /proc/sys/vm/drop_caches, which drops every unused dentry and inode on \
             the whole machine: pass --allow-global to allow it"
                .into()
        ));
    }
    if opts.methods.contains(&Method::DropCaches) && !sys::is_root() {
        bail!("--method drop-caches writes /proc/sys/vm/drop_caches, which needs root (run dentrylab with sudo)");
    }
    if opts.contend > 0 {
        let cpus = sys::allowed_cpus()?;
        if !cpus.iter().any(|&c| c != opts.cpu) {
            bail!(UsageError(format!(
                "--contend {}: the lookup threads run on the CPUs other than the reclaiming one (CPU {}), and \
                 this process may only use CPUs {cpus:?}",
                opts.contend, opts.cpu
            )));
        }
    }
    Ok(())
}
