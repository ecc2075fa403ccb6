//! What a sweep's repetitions add up to: per size ([`SizeSummary`]) and
//! per method ([`MethodAnalysis`], its [`Fits`] and verdict). Below the
//! result that holds them and the victims' analysis that reads them.

use serde::{Deserialize, Serialize};

use super::methods::Method;
use super::pinning;
use crate::analysis::fit::{LinearFit, PowerFit};
use crate::analysis::interval::LeftOut;
use crate::analysis::verdict::Verdict;
use crate::stats::Spread;

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
    pub unpinned: Option<pinning::UnpinnedSummary>,
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
