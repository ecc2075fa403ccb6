//! A sweep's options, as every part of `reclaim` reads them (below
//! every child that takes them).

use serde::{Deserialize, Serialize};

use super::auto;
use super::methods::{self, Method};
use crate::sandbox::FsType;
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
    /// What the paths' refusals and notes read of these options.
    pub(crate) fn asked(&self) -> methods::Asked {
        methods::Asked { kind: self.kind, allow_global: self.allow_global }
    }

    /// The filesystem as people name it: `ext4`, or `overlay (lower ext4, upper tmpfs)`.
    pub(crate) fn fs_label(&self) -> String {
        self.overlay.map_or_else(|| self.fs.to_string(), |s| s.to_string())
    }
}
