//! The container harness `containers` and `mitigate --workload
//! containers` share: one container's process ([`child`], the hidden
//! `__container-child` subcommand's side), its life from the harness's
//! side ([`life`]: spawn, wait, tear down on the probed CPU) and what one
//! life records ([`ContainerRun`]).

pub(crate) mod child;
pub(crate) mod life;

use serde::{Deserialize, Serialize};

use crate::bench::common::profile::RunProfile;
use crate::procfs::dentry_state::DentryState;
use crate::stats::GapStats;
use crate::workload::container::Outcome;

/// The most operations a container may run (`--ops`, `--container-ops`).
pub(crate) const MAX_OPS: u64 = 10_000_000;

/// A count of operations, where 0 (the harness alone) is allowed
/// (`containers --ops`, `mitigate --container-ops`).
pub(crate) fn parse_op_count(s: &str) -> Result<u64, String> {
    if s.trim() == "0" { Ok(0) } else { crate::size::parse_count(s) }
}

/// One container's life.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ContainerRun {
    pub id: u32,
    /// Containers that had run (and were torn down) before this one.
    pub index: u64,
    pub outcome: Outcome,
    /// Start to overlay mounted, in the container.
    pub setup_seconds: f64,
    /// Spawn to teardown done, less the workload: what the harness costs.
    pub harness_seconds: f64,
    /// dentry-state gained over the workload (nr_dentry, nr_negative).
    pub created: i64,
    pub created_negative: i64,
    /// dentry-state lost over the teardown.
    pub freed: i64,
    pub freed_negative: i64,
    /// created − freed: what stayed on the host.
    pub left: i64,
    pub left_negative: i64,
    /// Exit until reaped (the namespace and the overlay go).
    pub exit_seconds: f64,
    /// Removal of the snapshot (upper and work directories).
    pub remove_seconds: f64,
    pub teardown_seconds: f64,
    pub probe: GapStats,
    /// The host's dentry-state after the teardown.
    pub host_after: DentryState,
    /// With `--profile`: what held the CPU in the longest gap of the
    /// teardown (`longest_gap`) and over the whole teardown (`reclaim`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<RunProfile>,
    /// With `--profile`: why this container has no profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_problem: Option<String>,
    /// With `--profile`: the phase the longest gap lies in (whose task's
    /// stacks `profile.longest_gap.reclaimer` counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_phase: Option<life::Phase>,
}
