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
//! [`run`] is the sweep, stage by stage (`sweep`); `measure` runs one
//! repetition and `repetition` holds what it records.
//! Imported by `cli` and `report` (what other benchmarks shared with it
//! is in `bench::common`); the internal `__reclaim-child` and `__sysctl-guard`
//! commands run [`child`] and [`watchdog`].

mod analyse;
mod args;
pub(crate) mod auto;
mod calibration;
mod checks;
pub(crate) mod child;
pub(crate) mod command;
pub(crate) mod fit_waits;
pub(crate) mod lowered;
mod measure;
#[cfg(test)]
mod mock_sweep;
pub(crate) mod methods;
pub(crate) mod overlay;
pub(crate) mod placement;
pub(crate) mod profile;
pub(crate) mod render;
mod repetition;
pub(crate) mod schedule;
mod sweep;
pub(crate) mod victim_db;
pub(crate) mod victims;
pub(crate) mod watchdog;

pub(crate) use analyse::fit_runs;
pub(crate) use args::Args;
pub(crate) use checks::{MAX_CONTEND, validate};
pub(crate) use command::Reclaim;
pub(crate) use methods::Method;
pub(crate) use repetition::{COUNT_TOLERANCE, Run, Unobserved, fit_count};
pub(crate) use sweep::run;

use serde::{Deserialize, Serialize};

use crate::analysis::fit::{LinearFit, PowerFit};
use crate::analysis::interval::LeftOut;
use crate::analysis::verdict::{self, Verdict};
use crate::env::Environment;
use crate::sandbox::{FsType, Privilege};
use crate::stats::Spread;
use crate::workload::{Kind, Layout};

/// Refuse a size whose predicted monopolisation exceeds this, unless --force.
pub(crate) const MAX_PREDICTED_GAP_SECONDS: f64 = 10.0;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Options {
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
    pub(crate) fn fs_label(&self) -> String {
        self.overlay.map_or_else(|| self.fs.to_string(), |s| s.to_string())
    }
}

/// The repetitions of one size, summarised.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SizeSummary {
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
pub(crate) struct Fits {
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
pub(crate) struct MethodAnalysis {
    pub method: Method,
    pub fits: Fits,
    pub verdict: Option<Verdict>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Refusal {
    pub target: u64,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ReclaimResult {
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
