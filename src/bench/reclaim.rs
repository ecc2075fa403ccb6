//! `dentrylab reclaim`: seed 000's experiment, done right.
//!
//! For each size and repetition: mount a fresh filesystem in the sandbox,
//! create the dentries, count them, reclaim them while a probe pinned to the
//! reclaiming CPU records how long that CPU is monopolised (a second probe
//! on another CPU is the control) and /dev/kmsg is watched, count again.
//! Then fit cost against count, extrapolate, and decide at what count a
//! reclaim trips the soft-lockup watchdog.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::analysis::fit::{self, LinearFit, PowerFit};
use crate::analysis::stats::{GapStats, Spread, median};
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
use crate::sys;
use crate::workload::{self, CreateSpec, Kind, Layout, Progress};

/// Refuse a size whose predicted monopolisation exceeds this, unless --force.
pub const MAX_PREDICTED_GAP_SECONDS: f64 = 10.0;
/// Refuse a size whose memory estimate exceeds this share of MemAvailable.
pub const MAX_MEMORY_SHARE: f64 = 0.5;
/// How long the probes run before and after the reclaim call.
const PROBE_MARGIN: Duration = Duration::from_millis(20);

/// The reclaim path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// umount(2): shrink_dcache_for_umount walks the superblock's tree (seed 000).
    Umount,
}

impl Method {
    pub const NAMES: &'static [&'static str] = &["umount"];
    pub fn name(self) -> &'static str {
        match self {
            Method::Umount => "umount",
        }
    }
}

impl std::str::FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "umount" => Ok(Method::Umount),
            _ => Err(format!("unknown reclaim method {s:?}: use one of {}", Method::NAMES.join(", "))),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    pub sizes: Vec<u64>,
    pub reps: u32,
    pub kind: Kind,
    pub layout: Layout,
    pub threads: usize,
    pub fs: FsType,
    pub method: Method,
    pub extrapolate: u64,
    pub cpu: usize,
    pub control_cpu: Option<usize>,
    pub probe_interval_us: u64,
    pub force: bool,
}

/// One repetition at one size.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    pub target: u64,
    pub rep: u32,
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
}

/// The repetitions of one size, summarised.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SizeSummary {
    pub target: u64,
    pub reps: u32,
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
pub struct Refusal {
    pub target: u64,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReclaimResult {
    #[serde(flatten)]
    pub header: crate::bench::Header,
    pub environment: Environment,
    pub options: Options,
    pub sandbox: Privilege,
    pub runs: Vec<Run>,
    pub sizes: Vec<SizeSummary>,
    pub fits: Fits,
    pub verdict: Option<Verdict>,
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
    if force {
        return Ok(());
    }
    let avail = proc.meminfo()?.mem_available_bytes;
    let bpd = kind.default_bytes_per_dentry();
    for &n in sizes {
        let need = n.saturating_mul(bpd);
        if need as f64 > avail as f64 * MAX_MEMORY_SHARE {
            return Err(UsageError(format!(
                "size {} of {} dentries needs about {} (≈{bpd} bytes each), more than half of MemAvailable ({}): \
                 choose a smaller size, or pass --force",
                human(n),
                kind.name(),
                crate::size::bytes(need),
                crate::size::bytes(avail)
            ))
            .into());
        }
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
    let mut runs: Vec<Run> = Vec::new();
    let mut refused = Vec::new();
    let mut bpd_measured: Option<f64> = None;
    let mut phase = 0u32;
    'sizes: for &target in &opts.sizes {
        if let Some(reason) = refuse(opts, target, bpd_measured, &runs, proc)? {
            eprintln!("dentrylab: refusing size {}: {reason}", human(target));
            refused.push(Refusal { target, reason });
            break 'sizes;
        }
        for rep in 0..opts.reps {
            phase += 2;
            kmsg.set_phase(phase);
            let r = one_run(opts, sandbox, proc, &kmsg, target, rep, phase)?;
            if bpd_measured.is_none() && r.bytes_per_dentry.is_finite() && r.bytes_per_dentry > 0.0 {
                bpd_measured = Some(r.bytes_per_dentry);
            }
            report_progress(&r);
            runs.push(r);
        }
    }
    let sizes = summarise(&runs, opts);
    let fits = fit_runs(&runs);
    let verdict = decide(&fits, &sizes, &runs, opts, &environment);
    Ok(ReclaimResult {
        header: crate::bench::Header::new("reclaim"),
        environment,
        options: opts.clone(),
        sandbox: sandbox.privilege,
        runs,
        sizes,
        fits,
        verdict,
        bytes_per_dentry: bpd_measured.unwrap_or(f64::NAN),
        refused,
        notes,
        watchdog: None,
    })
}

fn report_progress(r: &Run) {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        eprintln!(
            "  {:>6} rep {}: created {} at {:.0}/s, reclaimed {} in {:.3} s, max gap {:.3} s",
            human(r.target),
            r.rep + 1,
            r.created,
            r.create.rate_per_second,
            r.reclaimed,
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
    let distinct: std::collections::BTreeSet<u64> = runs.iter().map(|r| r.target).collect();
    if distinct.len() >= 2 {
        let pts: Vec<_> = runs.iter().map(|r| (r.reclaimed.max(1) as f64, r.probe.max_gap_seconds)).collect();
        if let Some(p) = fit::power(&pts) {
            let g = p.at(target as f64);
            if g > MAX_PREDICTED_GAP_SECONDS {
                return Ok(Some(format!(
                    "the smaller sizes predict it would hold CPU {} for about {g:.1} s (over {MAX_PREDICTED_GAP_SECONDS:.0} s); pass --force to run it anyway",
                    opts.cpu
                )));
            }
        }
    }
    Ok(None)
}

fn one_run(
    opts: &Options,
    sandbox: &mut Sandbox,
    proc: &ProcRoot,
    kmsg: &KmsgWatch,
    target: u64,
    rep: u32,
    phase: u32,
) -> Result<Run> {
    let mut mount = sandbox.mount(opts.fs)?;
    let before = Counts::read(proc)?;
    let spec = CreateSpec { kind: opts.kind, layout: opts.layout, count: target, threads: opts.threads };
    let progress = Arc::new(Progress::default());
    let label = format!("create {} rep {}", human(target), rep + 1);
    let create = workload::with_progress(target, &label, &progress, || workload::create(mount.path(), &spec, &progress))
        .with_context(|| format!("creating {} {} dentries", human(target), opts.kind.name()))?;
    let after_create = Counts::read(proc)?;

    // Reclaim on a known CPU, with the probes around it.
    kmsg.set_phase(phase + 1);
    let all = sys::allowed_cpus()?;
    sys::pin_current_thread(opts.cpu)?;
    let interval = Duration::from_micros(opts.probe_interval_us);
    let probe = GapProbe::start(opts.cpu, interval)?;
    let control = opts.control_cpu.map(|c| GapProbe::start(c, interval)).transpose()?;
    std::thread::sleep(PROBE_MARGIN);
    let (_, sys0) = sys::thread_cpu_times();
    let took = match opts.method {
        Method::Umount => mount.umount()?,
    };
    let (_, sys1) = sys::thread_cpu_times();
    std::thread::sleep(PROBE_MARGIN);
    let probe = probe.finish();
    let control = control.map(GapProbe::finish);
    sys::unpin_current_thread(&all)?;
    kmsg.set_phase(phase);
    let kernel_messages = kmsg.take(phase + 1);
    let after_reclaim = Counts::read(proc)?;

    let created = after_create.dentry_state.nr_dentry as i64 - before.dentry_state.nr_dentry as i64;
    let reclaimed = after_create.dentry_state.nr_dentry as i64 - after_reclaim.dentry_state.nr_dentry as i64;
    let slab = |a: &Counts, b: &Counts| Some(a.slab_dentry_active? as i64 - b.slab_dentry_active? as i64);
    let reclaim_seconds = took.as_secs_f64();
    let grown_slab = after_create.slab_bytes.saturating_sub(before.slab_bytes) as f64;
    let lost_avail = before.mem_available_bytes.saturating_sub(after_create.mem_available_bytes) as f64;
    Ok(Run {
        target,
        rep,
        created_slab: slab(&after_create, &before),
        reclaimed_slab: slab(&after_create, &after_reclaim),
        ns_per_dentry: reclaim_seconds * 1e9 / reclaimed.max(1) as f64,
        bytes_per_dentry: grown_slab.max(lost_avail) / created.max(1) as f64,
        create,
        before,
        after_create,
        after_reclaim,
        created,
        reclaimed,
        reclaim_seconds,
        reclaim_sys_seconds: (sys1.saturating_sub(sys0)).as_secs_f64(),
        probe,
        control,
        kernel_messages,
        reclaim_task_pid: nix::unistd::gettid().as_raw() as u32,
    })
}

fn summarise(runs: &[Run], opts: &Options) -> Vec<SizeSummary> {
    let mut targets: Vec<u64> = runs.iter().map(|r| r.target).collect();
    targets.dedup();
    targets
        .into_iter()
        .map(|t| {
            let rs: Vec<&Run> = runs.iter().filter(|r| r.target == t).collect();
            let col = |f: &dyn Fn(&Run) -> f64| rs.iter().map(|r| f(r)).collect::<Vec<f64>>();
            let ns = Spread::of(&col(&|r| r.ns_per_dentry));
            let controls: Vec<f64> = rs.iter().filter_map(|r| r.control.as_ref().map(|c| c.max_gap_seconds)).collect();
            SizeSummary {
                target: t,
                reps: rs.len() as u32,
                reclaimed: Spread::of(&col(&|r| r.reclaimed as f64)),
                reclaimed_vs_target: median(&col(&|r| (r.reclaimed as f64 - t as f64) / t as f64)),
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

pub fn fit_runs(runs: &[Run]) -> Fits {
    let time: Vec<_> = runs.iter().map(|r| (r.reclaimed.max(1) as f64, r.reclaim_seconds)).collect();
    let gap: Vec<_> = runs.iter().map(|r| (r.reclaimed.max(1) as f64, r.probe.max_gap_seconds)).collect();
    Fits {
        time_linear: fit::linear(&time),
        time_power: fit::power(&time),
        gap_linear: fit::linear(&gap),
        gap_power: fit::power(&gap),
    }
}

fn decide(fits: &Fits, sizes: &[SizeSummary], runs: &[Run], opts: &Options, env: &Environment) -> Option<Verdict> {
    let largest = sizes.last()?;
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
        soft_lockups_observed: sizes.iter().map(|s| s.soft_lockups).sum(),
    }))
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

/// Rejects combinations that cannot work, before anything is created.
pub fn validate(opts: &Options) -> Result<()> {
    if opts.sizes.is_empty() {
        bail!(UsageError("--sizes: give at least one size".into()));
    }
    Ok(())
}
