//! `dentrylab advise` (and `status --advise`): what to set on this node,
//! from its own numbers. In: the node now (its count and growth, and from
//! its calibration the first incident: the count at which some task first
//! misses a deadline, else the soft-lockup edge) and the recorded
//! `mitigate` results ([`recorded`]: the user's files or the shipped ones,
//! each named). Out: [`Advice`], per knob the kernel has: the value, its
//! measured effect on the count and on the time to the first incident,
//! its cost and its failure mode; knobs it cannot judge say why.
//!
//! Imports `status` (the node's reading) and the utilities; imported by
//! `report` (its text) and `cli` (the command).

pub(crate) mod evidence;
pub(crate) mod knobs;
pub(crate) mod recorded;

use serde::{Deserialize, Serialize};

use super::StatusResult;
use crate::procfs::ProcRoot;
use evidence::Evidence;

/// Where the node's growth came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum GrowthSource {
    /// Sampled from dentry-state over this many seconds.
    Sampled(f64),
    /// `--growth`, given by the user.
    Given,
    /// Not known (`status --advise` without `--watch`).
    Unknown,
}

/// The count the advice keeps the node below.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Target {
    /// The deadline's name with its article and seconds (the first incident's,
    /// `an exec or HTTP probe's timeout (1 s)`), or `the soft lockup`.
    pub name: String,
    /// The low end of its 90% interval where there is one, else the point.
    pub dentries: f64,
    /// At today's growth; `None` when the count is not growing.
    pub seconds_to: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Advice {
    #[serde(flatten)]
    pub header: crate::result::Header,
    pub kernel: String,
    /// Which calibration (a file, or the built-in default, named).
    pub calibration: String,
    pub nr_dentry: u64,
    pub nr_unused: u64,
    pub growth_per_second: Option<f64>,
    pub growth_source: GrowthSource,
    pub target: Option<Target>,
    /// The recorded results judged from, each named.
    pub sources: Vec<String>,
    pub knobs: Vec<Knob>,
    pub notes: Vec<String>,
}

/// One knob: what to set and what it does, or why it cannot be judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Knob {
    pub knob: String,
    /// `node` (a sysctl) or `memory cgroup` (per pod).
    pub scope: String,
    /// Whether this kernel has it, and where that was read.
    pub present: bool,
    pub current: Option<String>,
    /// Whether a recorded result measured it here.
    pub judged: bool,
    /// The value to set (or to keep), when judged.
    pub value: Option<String>,
    pub effect_on_count: Vec<String>,
    pub effect_on_first_incident: Option<String>,
    pub cost: Vec<String>,
    /// What goes wrong when it acts: OOM kill instead of reclaim, a drop
    /// that is itself a reclaim of every dentry, ...
    pub failure_mode: String,
    /// Why it cannot be judged.
    pub why_not: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
}

/// The node's side of the advice, from a status reading.
pub(crate) struct Node<'a> {
    pub status: &'a StatusResult,
    pub growth_per_second: Option<f64>,
    pub growth_source: GrowthSource,
}

impl Node<'_> {
    /// The first incident's count (the low end of its interval), else the
    /// soft-lockup edge's, with its name.
    pub(crate) fn target(&self) -> Option<Target> {
        let s = self.status;
        let first = s.incidents.as_ref().filter(|i| i.known).and_then(|i| i.first_row()).and_then(|r| {
            r.dentries_low.or(r.dentries).map(|d| (format!("{} ({} s)", r.deadline.name, r.deadline.seconds), d))
        });
        let lockup = || {
            let p = &s.prediction;
            p.lockup_dentries_low.or(p.lockup_dentries).map(|d| ("the soft lockup".to_string(), d))
        };
        let (name, dentries) = first.or_else(lockup)?;
        let seconds_to = self.seconds_to(dentries, 1.0);
        Some(Target { name, dentries, seconds_to })
    }

    /// Time until the count reaches `edge` at today's growth × `factor`;
    /// 0 past it, `None` when not growing.
    pub(crate) fn seconds_to(&self, edge: f64, factor: f64) -> Option<f64> {
        let g = self.growth_per_second? * factor;
        let now = self.status.dentries.nr_dentry as f64;
        if now >= edge {
            return Some(0.0);
        }
        (g > 0.0).then(|| (edge - now) / g)
    }
}

/// The advice for the node from the recorded results.
pub(crate) fn assess(node: &Node<'_>, recorded: &[recorded::Recorded], proc: &ProcRoot) -> Advice {
    let s = node.status;
    let target = node.target();
    // The node's own notes first: they say how far its calibration can be trusted here.
    let mut notes = s.notes.clone();
    if recorded.iter().any(|r| r.environment.kernel != s.environment.kernel) {
        notes.push(format!(
            "some recorded results were measured on another kernel than this node's ({}): their effects are that \
             kernel's; run `dentrylab mitigate` here to measure yours",
            s.environment.kernel
        ));
    }
    if node.growth_per_second.is_some() {
        notes.push(
            "the time to the first incident with a knob assumes the node's growth is made the way the recorded \
             workload makes it (its effect scales the growth)"
                .into(),
        );
    }
    Advice {
        header: crate::result::Header::new("advise"),
        kernel: s.environment.kernel.clone(),
        calibration: s.calibration.name.clone(),
        nr_dentry: s.dentries.nr_dentry,
        nr_unused: s.dentries.nr_unused,
        growth_per_second: node.growth_per_second,
        growth_source: node.growth_source.clone(),
        sources: recorded.iter().map(recorded::Recorded::named).collect(),
        knobs: knobs::all(node, target.as_ref(), recorded, proc),
        target,
        notes,
    }
}
