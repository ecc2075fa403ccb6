//! `dentrylab reclaim`: the node-lockup report's experiment, done right.
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
//!
//! In: [`Options`] (from its [`command`], which the generic handler
//! runs), the sandbox, the proc root. Out: [`ReclaimResult`], which
//! `report` renders and whose fit `state` saves as the calibration.
//! Imported by `cli` and `report` (what other benchmarks shared with it
//! is in `bench::common`); the internal `__reclaim-child` and `__sysctl-guard`
//! commands run [`child`] and [`watchdog`].

mod analyse;
mod args;
pub mod auto;
mod calibration;
mod checks;
pub mod child;
pub mod command;
pub mod lowered;
mod measure;
pub mod methods;
pub mod overlay;
pub mod placement;
pub mod profile;
pub mod render;
pub mod schedule;
pub mod sysctl_guard;
pub mod victim_db;
pub mod victims;
pub mod watchdog;

pub use analyse::fit_runs;
pub use args::Args;
pub use checks::{MAX_CONTEND, validate};
pub use command::Reclaim;
pub use methods::Method;

use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::analysis::fit::{LinearFit, PowerFit};
use crate::analysis::interval::LeftOut;
use crate::analysis::verdict::{self, Verdict};
use crate::env::Environment;
use crate::probe::counters::Counts;
use crate::probe::kmsg::KmsgWatch;
use crate::probe::victims::Database;
use crate::procfs::ProcRoot;
use crate::procfs::kmsg::Alert;
use crate::sandbox::{FsType, Privilege, Sandbox};
use crate::size::human;
use crate::stats::{GapStats, Spread};
use crate::workload::contend::ContendStats;
use crate::workload::{self, Kind, Layout};
use methods::MemcgOutcome;

/// Refuse a size whose predicted monopolisation exceeds this, unless --force.
pub const MAX_PREDICTED_GAP_SECONDS: f64 = 10.0;
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
    /// Unobserved repetitions per size (no probe at all), alternating with
    /// the `reps` probed ones; the table's times come from them. 0: none
    /// (the times then include the probe's cost, and the output says so).
    #[serde(default)]
    pub unobserved_reps: u32,
    /// Unobserved repetitions per size whose reclaiming task is not pinned
    /// (free to run on any allowed CPU), alternating with the pinned ones;
    /// reported beside them. 0: none.
    #[serde(default)]
    pub unpinned_reps: u32,
    /// `--profile`: perf call graphs of the reclaiming CPU (probed
    /// repetitions only).
    #[serde(default)]
    pub profile: bool,
    /// `--sizes auto`: the sweep doubles from 500k instead of running
    /// `sizes` (which then holds the sizes it ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<auto::Auto>,
    /// How the probe threads are scheduled (`--probe-policy`).
    #[serde(default)]
    pub probe_policy: crate::probe::gap::Policy,
    /// Why that policy (said in the output).
    #[serde(default)]
    pub probe_policy_why: String,
    /// `--fs overlay`: the dentries are made through an overlay over these
    /// filesystems (`fs` is then the lower's type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlay: Option<crate::sandbox::overlay::Stack>,
    /// `--victims`: the operations timed on the other CPUs during repetitions
    /// of their own (as many as `reps`); empty: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub victims: Vec<crate::probe::victims::Victim>,
    /// `--census`: the first probed repetition checks its directories by a census.
    #[serde(default)]
    pub census: bool,
    /// Why an auto sweep runs without its default victims ([`auto::victims`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub victims_skipped: Option<String>,
}

impl Options {
    /// The filesystem as people name it: `ext4`, or `overlay (lower ext4, upper tmpfs)`.
    pub fn fs_label(&self) -> String {
        self.overlay.map_or_else(|| self.fs.to_string(), |s| s.to_string())
    }
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
    /// `inotify`: the watches added and the kernel's count of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<methods::WatchOutcome>,
    pub reclaim_seconds: f64,
    pub reclaim_sys_seconds: f64,
    /// Busy share of the CPUs other than the reclaiming one while the
    /// reclaim ran (/proc/stat; `None`: unreadable, or no tick passed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_busy: Option<f64>,
    pub ns_per_dentry: f64,
    pub bytes_per_dentry: f64,
    pub probe: GapStats,
    pub control: Option<GapStats>,
    pub kernel_messages: Vec<Alert>,
    /// Thread id of the task that ran the reclaim (the one a soft-lockup
    /// message names).
    pub reclaim_task_pid: u32,
    /// On which CPU the reclaim ran, and whether it was pinned there.
    #[serde(default = "placement::Placement::before_recorded")]
    pub placement: placement::Placement,
    /// With `--profile`: what held the CPU in the longest gap and over the reclaim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<profile::RunProfile>,
    /// With `--profile`: why this run has no profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_problem: Option<String>,
    /// With `--fs overlay`: per filesystem of the stack (overlay, upper,
    /// lower), what the reclaim freed and what stayed, counted by
    /// unmounting each in turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<crate::bench::layers::StackTeardown>,
    /// `--census`: what a census found in the directories this run filled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub census: Option<crate::census::workload::Named>,
    /// A victim repetition's raw calls (summarised into a
    /// [`victims::VictimRun`], never saved).
    #[serde(skip)]
    pub victims: Option<victims::Observed>,
}

/// An unobserved repetition: the reclaim timed with no probe, no control
/// probe and no contenders running, and the kmsg reader off its CPU.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Unobserved {
    pub target: u64,
    pub rep: u32,
    pub method: Method,
    pub freed: i64,
    pub freed_fraction: f64,
    pub reclaim_seconds: f64,
    pub reclaim_sys_seconds: f64,
    /// As [`Run::others_busy`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_busy: Option<f64>,
    pub ns_per_dentry: f64,
    pub soft_lockups: usize,
    /// On which CPU the reclaim ran, and whether it was pinned there.
    #[serde(default = "placement::Placement::before_recorded")]
    pub placement: placement::Placement,
}

impl Unobserved {
    fn of(r: &Run) -> Unobserved {
        Unobserved {
            target: r.target,
            rep: r.rep,
            method: r.method,
            freed: r.freed,
            freed_fraction: r.freed_fraction,
            reclaim_seconds: r.reclaim_seconds,
            reclaim_sys_seconds: r.reclaim_sys_seconds,
            others_busy: r.others_busy,
            ns_per_dentry: r.ns_per_dentry,
            soft_lockups: r.kernel_messages.iter().filter(|a| a.kind == crate::procfs::kmsg::Kind::SoftLockup).count(),
            placement: r.placement.clone(),
        }
    }

    pub fn fit_count(&self) -> f64 {
        fit_count(self.method, self.freed, self.target)
    }
}

/// Share of the target by which the kernel's count may differ before it is
/// taken as disturbed by other activity on the machine.
pub const COUNT_TOLERANCE: f64 = 0.10;

/// The dentry count a reclaim is charged with: what it freed by the witness
/// counter. For the paths that free everything (umount, ns-exit), a freed
/// count more than [`COUNT_TOLERANCE`] off the target means other work on
/// the machine moved the global counter: the target stands in for it.
///
/// `inotify` frees nothing: it is charged with the target, the negatives
/// the generator made in the walked directories (one per entry); a run
/// whose clean-up umount found far fewer still cached says so in a note.
pub fn fit_count(method: Method, freed: i64, target: u64) -> f64 {
    let t = target as f64;
    if !method.frees() {
        return t;
    }
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
    /// From the unobserved repetitions when there are any (see
    /// `timed_unobserved`), else from the probed ones.
    pub reclaim_seconds: Spread,
    pub reclaim_sys_seconds: f64,
    pub ns_per_dentry: Spread,
    /// The reclaim's own CPU (system) time per dentry, same repetitions:
    /// the walk's cost whatever else ran (`ns_per_dentry` is wall time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ns_per_dentry: Option<Spread>,
    /// Median wall ÷ CPU time of the reclaim (about 1.1 with its CPU to itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_over_cpu: Option<f64>,
    /// Median busy share of the other CPUs during the reclaims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_busy: Option<f64>,
    /// How many unobserved repetitions the times above come from (0: they
    /// come from the probed ones).
    #[serde(default)]
    pub timed_unobserved: u32,
    /// The probed repetitions' reclaim time.
    #[serde(default)]
    pub probed_reclaim_seconds: Option<Spread>,
    /// Probed ÷ unobserved reclaim time, repetition by repetition.
    #[serde(default)]
    pub probe_overhead: Option<Spread>,
    /// Median ns/dentry × the extrapolation target (the node-lockup report's column).
    pub extrapolated_seconds: f64,
    pub max_gap_seconds: Spread,
    pub p99_gap_seconds: f64,
    pub control_max_gap_seconds: Option<f64>,
    pub create_rate_per_second: f64,
    pub soft_lockups: usize,
    pub kernel_messages: usize,
    /// The unpinned unobserved repetitions of this size (`--unpinned-reps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unpinned: Option<placement::UnpinnedSummary>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fits {
    pub time_linear: Option<LinearFit>,
    pub time_power: Option<PowerFit>,
    pub gap_linear: Option<LinearFit>,
    pub gap_power: Option<PowerFit>,
    /// Sizes the gap fit left out: their longest gap is under the noise floor.
    #[serde(default)]
    pub gap_left_out: Vec<LeftOut>,
    /// Whether the time fits come from unobserved repetitions.
    #[serde(default)]
    pub time_unobserved: bool,
    /// The linear models (c·N, exponent fixed at 1) and each series'
    /// linearity test, which says which fit governs (`analysis::linearity`;
    /// absent from results saved before: the power law governs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_proportional: Option<PowerFit>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_linearity: Option<crate::analysis::linearity::LinearityTest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_proportional: Option<PowerFit>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_linearity: Option<crate::analysis::linearity::LinearityTest>,
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
    /// The probed repetitions.
    pub runs: Vec<Run>,
    /// The unobserved repetitions (timing only).
    #[serde(default)]
    pub unobserved: Vec<Unobserved>,
    /// The unpinned unobserved repetitions (`--unpinned-reps`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpinned: Vec<Unobserved>,
    pub sizes: Vec<SizeSummary>,
    /// Probed ÷ unobserved reclaim time over every size (median and spread).
    #[serde(default)]
    pub probe_overhead: Option<Spread>,
    /// Pinned ÷ unpinned unobserved reclaim time over every size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinning_cost: Option<Spread>,
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
    pub watchdog: Option<watchdog::WatchdogReport>,
    /// With `--sizes auto`: the sizes it ran and what stopped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<auto::Outcome>,
    /// With a list of thresholds: the checks at the others, in order (each
    /// from its own sweep).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watchdog_more: Vec<watchdog::WatchdogReport>,
    /// `--victims`: every victim repetition, summarised.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub victim_runs: Vec<victims::VictimRun>,
    /// `--victims`: per victim and size, the fits and the first incident.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub victims: Option<victims::Analysis>,
}

/// Runs the sweep. The sandbox must already be entered; `db` is the
/// `mariadb` victim's server ([`victim_db`]), when it runs.
#[allow(clippy::too_many_lines)] // listed in docs/architecture.md: the sweep loop and its summary, in run order
pub fn run(opts: &Options, sandbox: &mut Sandbox, proc: &ProcRoot, db: Option<&Database>) -> Result<ReclaimResult> {
    // The header says when the run started, not when it ended.
    let header = crate::result::Header::new("reclaim");
    let environment = Environment::capture(proc);
    let kmsg = KmsgWatch::start(Some(opts.cpu));
    let mut notes = Vec::new();
    match (&kmsg.unavailable, kmsg.offset_ns()) {
        (Some(why), _) => notes.push(why.clone()),
        (None, None) => notes.push(format!(
            "/dev/kmsg is not writable: the kernel clock's offset was not measured, so kernel messages are matched \
             to reclaims with {} ms of slack",
            crate::probe::kmsg::WINDOW_SLACK.as_millis()
        )),
        _ => {}
    }
    if proc.slab_dentry().is_none() {
        notes.push("/proc/slabinfo is not readable: counts come from dentry-state only".into());
    }
    if opts.control_cpu.is_none() {
        notes.push("only one CPU is available: no control probe".into());
    }
    notes.extend(checks::method_notes(opts));
    if let Some(why) = &opts.victims_skipped {
        eprintln!("dentrylab: {why}");
        notes.push(why.clone());
    }
    if opts.unobserved_reps == 0 {
        notes.push("no unobserved repetitions (--unobserved-reps 0): the times include the probe's cost".into());
    }
    let profiling = profile::available(opts.profile, opts.cpu, sandbox.scratch(), &mut notes);
    let mut runs: Vec<Run> = Vec::new();
    let mut unobserved: Vec<Unobserved> = Vec::new();
    let mut unpinned: Vec<Unobserved> = Vec::new();
    let mut victim_runs: Vec<victims::VictimRun> = Vec::new();
    let mut refused = Vec::new();
    let mut bpd_measured: Option<f64> = None;
    let contention: Vec<usize> = if opts.contend > 0 { vec![0, opts.contend] } else { vec![0] };
    notes.push(format!("probes: {} ({})", opts.probe_policy.describe(), opts.probe_policy_why));
    let mut listed = opts.sizes.iter().copied();
    let mut ran: Vec<u64> = Vec::new();
    let mut auto_stop: Option<(auto::StoppedBy, String)> = None;
    'sizes: loop {
        let target = match opts.auto {
            None => match listed.next() {
                Some(t) => t,
                None => break 'sizes,
            },
            Some(a) => {
                let last = ran.last().map(|&t| (t, auto::median_gap(&runs, t)));
                match auto::next(last, checks::memory_limit(opts, bpd_measured, proc)?, a.cap) {
                    Ok(t) => t,
                    Err(stop) => {
                        auto_stop = Some(stop);
                        break 'sizes;
                    }
                }
            }
        };
        if let Some(reason) = checks::refuse(opts, target, bpd_measured, &runs, proc)? {
            if opts.auto.is_some() {
                // An auto sweep stopped by the checks is done, not failed.
                auto_stop = Some((auto::StoppedBy::SafetyCheck, format!("size {}: {reason}", human(target))));
                break 'sizes;
            }
            eprintln!("dentrylab: refusing size {}: {reason}", human(target));
            refused.push(Refusal { target, reason });
            break 'sizes;
        }
        ran.push(target);
        let schedule = schedule::Schedule::of(&schedule::Counts {
            probed: opts.reps,
            unobserved: opts.unobserved_reps,
            unpinned: opts.unpinned_reps,
            victims: if opts.victims.is_empty() { 0 } else { opts.reps },
            contention: contention.clone(),
        });
        for &method in &opts.methods {
            for &(rep, slot) in schedule.slots() {
                let profile = profiling && slot == schedule::Slot::Probed { contenders: 0 };
                let at = measure::At { target, rep, method, slot, profile };
                let r = measure::one_run(opts, sandbox, proc, &kmsg, &at, db)?;
                if bpd_measured.is_none() && r.bytes_per_dentry.is_finite() && r.bytes_per_dentry > 0.0 {
                    bpd_measured = Some(r.bytes_per_dentry);
                }
                measure::report_progress(&r, slot.observed());
                match slot {
                    schedule::Slot::Probed { .. } => runs.push(r),
                    schedule::Slot::Unobserved { pinned: true } => unobserved.push(Unobserved::of(&r)),
                    schedule::Slot::Unobserved { pinned: false } => unpinned.push(Unobserved::of(&r)),
                    schedule::Slot::Victims => victim_runs.extend(victims::VictimRun::of(&r)),
                }
            }
        }
    }
    if opts.overlay.is_some() {
        // Through an overlay most of the workload's dentries live in the
        // upper and lower filesystems, which the overlay's reclaim does not
        // touch: a small count here is the overlay, not other activity.
        let mut seen = std::collections::BTreeSet::new();
        for r in runs.iter().filter(|r| r.freed.max(0) as u64 * 2 < r.target && seen.insert(r.target)) {
            notes.push(format!(
                "size {}: the overlay's reclaim freed {} dentries of the {} made through it; the rest stayed in the \
                 upper and lower filesystems (the layers table counts them), so the fits are of the overlay's own \
                 reclaim",
                human(r.target),
                r.freed,
                human(r.target)
            ));
        }
    }
    notes.extend(checks::walk_notes(&runs));
    for r in
        runs.iter().filter(|r| opts.overlay.is_none() && r.method.frees() && r.fit_count() != r.freed.max(1) as f64)
    {
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
    let auto = auto_stop.map(|(stopped_by, reason)| auto::Outcome { sizes: ran.clone(), stopped_by, reason });
    if let Some(a) = &auto {
        notes.push(a.line());
        eprintln!("dentrylab: {}", a.line());
    }
    let opts = &if opts.auto.is_some() { Options { sizes: ran, ..opts.clone() } } else { opts.clone() };
    let sizes = analyse::summarise(&runs, &unobserved, &unpinned, opts);
    let per_method = analyse::per_method(&runs, &unobserved, &sizes, opts, &environment);
    let comparison = analyse::compare(&per_method, &sizes);
    let (fits, verdict) =
        per_method.first().map(|m| (m.fits.clone(), m.verdict.clone())).unwrap_or_else(|| (fit_runs(&[], &[]), None));
    let probe_overhead = analyse::overhead(&runs, &unobserved);
    let pinning_cost = placement::cost(&unobserved, &unpinned);
    let deadlines = victims::deadlines(&environment, proc);
    let victims = victims::analyse(&victim_runs, &sizes, fits.gap_governing(), &deadlines);
    Ok(ReclaimResult {
        header,
        environment,
        options: opts.clone(),
        sandbox: sandbox.privilege,
        runs,
        unobserved,
        unpinned,
        sizes,
        probe_overhead,
        pinning_cost,
        fits,
        verdict,
        per_method,
        comparison,
        bytes_per_dentry: bpd_measured.unwrap_or(f64::NAN),
        refused,
        notes,
        watchdog: None,
        auto,
        watchdog_more: Vec::new(),
        victim_runs,
        victims,
    })
}
