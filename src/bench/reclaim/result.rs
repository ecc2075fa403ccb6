//! A sweep's result: what `reclaim` prints, saves as JSON and gives
//! `state` for the calibration (above every part it holds).

use serde::{Deserialize, Serialize};

use super::options::Options;
use super::repetition::{Run, Unobserved};
use super::summary::{Fits, MethodAnalysis, SizeSummary};
use super::{auto, victims, watchdog};
use crate::analysis::verdict::{self, Verdict};
use crate::env::Environment;
use crate::sandbox::Privilege;
use crate::stats::Spread;

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
