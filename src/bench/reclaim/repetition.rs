//! What one repetition records: a probed one's [`Run`] (the counters around
//! it, the reclaim's time, the probes, the kernel's messages), an
//! unobserved one's [`Unobserved`] (its timing only), and the count each is
//! charged with in the fits ([`fit_count`]). `measure` makes them, the
//! sweep gathers them, `analyse` summarises them.

use serde::{Deserialize, Serialize};

use super::methods::{self, MemcgOutcome, Method};
use super::placement;
use crate::bench::common::profile;
use crate::probe::counters::Counts;
use crate::procfs::kmsg::Alert;
use crate::stats::GapStats;
use crate::workload::{self, contend::ContendStats};

/// One repetition at one size.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Run {
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
    /// `umount`: when the call returned, if that was before the kernel had
    /// freed the dentries (its teardown deferred past the call, as the
    /// namespace-unlock patch of bench/kernel-patches does);
    /// `reclaim_seconds` then runs until they were freed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_returned_seconds: Option<f64>,
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
    /// [`super::victims::VictimRun`], never saved).
    #[serde(skip)]
    pub victims: Option<Observed>,
}

/// An unobserved repetition: the reclaim timed with no probe, no control
/// probe and no contenders running, and the kmsg reader off its CPU.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Unobserved {
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

impl Run {
    /// The longest stretch either probed CPU saw in this repetition: the
    /// reclaiming CPU's, or the control CPU's where the kernel did the work
    /// there (a teardown deferred to an unbound kworker, as the
    /// namespace-unlock patch of bench/kernel-patches makes umount do).
    pub(crate) fn longest_on_either_cpu(&self) -> f64 {
        let own = self.probe.max_gap_seconds;
        self.control.as_ref().map_or(own, |c| c.max_gap_seconds.max(own))
    }
}

impl Unobserved {
    pub(super) fn of(r: &Run) -> Unobserved {
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

    pub(crate) fn fit_count(&self) -> f64 {
        fit_count(self.method, self.freed, self.target)
    }
}

/// Share of the target by which the kernel's count may differ before it is
/// taken as disturbed by other activity on the machine.
pub(crate) const COUNT_TOLERANCE: f64 = 0.10;

/// The dentry count a reclaim is charged with: what it freed by the witness
/// counter. For the paths that free everything (umount, ns-exit), a freed
/// count more than [`COUNT_TOLERANCE`] off the target means other work on
/// the machine moved the global counter: the target stands in for it.
///
/// `inotify` frees nothing: it is charged with the target, the negatives
/// the generator made in the walked directories (one per entry); a run
/// whose clean-up umount found far fewer still cached says so in a note.
pub(crate) fn fit_count(method: Method, freed: i64, target: u64) -> f64 {
    let t = target as f64;
    if !method.frees() {
        return t;
    }
    let f = freed.max(1) as f64;
    if !method.lru_only() && (f - t).abs() > t * COUNT_TOLERANCE { t } else { f }
}

impl Run {
    /// The count this run stands for in fits.
    pub(crate) fn fit_count(&self) -> f64 {
        fit_count(self.method, self.freed, self.target)
    }
}

/// What the victims recorded in one repetition, with the reclaim's window.
#[derive(Debug, Clone)]
pub(crate) struct Observed {
    pub records: Vec<crate::probe::victims::Record>,
    pub start_ns: u64,
    pub end_ns: u64,
}
