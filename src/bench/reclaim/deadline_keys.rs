//! The node's deadlines under their saved keys: which waits may judge
//! each, and who misses each first. Below both `victims` (which names the
//! incidents of a run) and `calibration` (which saves them).

use crate::analysis::victims::{Deadline, Incident, WaitFit, Watches};
use crate::state::DeadlineKey;

/// For each deadline, who misses it first, among the waits it may be
/// judged by ([`DeadlineKey::measured_by`]): the pod-startup SLO by the
/// `pod-start` victim alone, the node lease by none.
pub(super) fn incidents(deadlines: &[Deadline], fits: &[WaitFit]) -> Vec<Incident> {
    deadlines
        .iter()
        .flat_map(|d| {
            let by = key(d).measured_by();
            let fits: Vec<WaitFit> =
                fits.iter().filter(|f| f.watches != Watches::Victims || by.admits(&f.who)).cloned().collect();
            crate::analysis::victims::incidents(std::slice::from_ref(d), &fits)
        })
        .collect()
}

/// The key of one of the victims' deadlines, by its name there.
pub(super) fn key(d: &Deadline) -> DeadlineKey {
    match d.name.as_str() {
        "an exec or HTTP probe's timeout" => DeadlineKey::ProbeTimeout,
        "the pod-startup SLO" => DeadlineKey::PodStartupSlo,
        "the soft-lockup watchdog" => DeadlineKey::SoftLockup,
        "RCU's CPU stall warning" => DeadlineKey::RcuStall,
        "the hung-task warning" => DeadlineKey::HungTask,
        "the node-lease grace period" => DeadlineKey::NodeLeaseGrace,
        "the kubelet's runtime request timeout" => DeadlineKey::RuntimeRequestTimeout,
        _ => DeadlineKey::Other,
    }
}
