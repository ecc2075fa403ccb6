//! The node's deadlines, and under their saved keys: which waits may
//! judge each, and who misses each first. Below both `victims` (which names the
//! incidents of a run) and `calibration` (which saves them).

use crate::analysis::victims::{self, Deadline, Incident, WaitFit, Watches};
use crate::env::Environment;
use crate::procfs::ProcRoot;
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

/// Kubernetes' default timeout of an exec or HTTP probe (`timeoutSeconds`).
pub(crate) const PROBE_TIMEOUT_SECONDS: f64 = 1.0;
/// Kubernetes' pod-startup SLO (99th percentile, stateless pods).
pub(crate) const POD_STARTUP_SLO_SECONDS: f64 = 5.0;
/// The node controller's grace period for a node's heartbeats, its lease
/// among them, before it marks the node NotReady: kube-controller-manager's
/// `--node-monitor-grace-period`, 50 s by default since Kubernetes v1.32
/// (`pkg/controller/nodelifecycle/config/v1alpha1/defaults.go` in
/// kubernetes/kubernetes v1.34.2, the version this project runs). Not the
/// kubelet's `nodeLeaseDurationSeconds` (40 s), the lease's own duration.
pub(crate) const NODE_LEASE_GRACE_SECONDS: f64 = 50.0;
/// Where [`NODE_LEASE_GRACE_SECONDS`] comes from, as the deadline's source.
pub(crate) const NODE_LEASE_GRACE_SOURCE: &str =
    "kube-controller-manager's --node-monitor-grace-period default (Kubernetes v1.34.2)";
/// The kubelet's `--runtime-request-timeout` default.
pub(crate) const RUNTIME_REQUEST_TIMEOUT_SECONDS: f64 = 120.0;
/// Where RCU's CPU stall timeout is read.
pub(crate) const RCU_STALL_TIMEOUT: &str = "/sys/module/rcupdate/parameters/rcu_cpu_stall_timeout";

/// The deadlines of this node: the kernel's read from the kernel, the
/// kubelet's and Kubernetes' at their defaults.
pub(crate) fn deadlines(env: &Environment, proc: &ProcRoot) -> Vec<Deadline> {
    let d =
        |name: &str, seconds: f64, source: String, watches| Deadline { name: name.into(), seconds, source, watches, before: None };
    let mut out = vec![
        d(
            "an exec or HTTP probe's timeout",
            PROBE_TIMEOUT_SECONDS,
            "Kubernetes' default timeoutSeconds".into(),
            Watches::Victims,
        ),
        Deadline {
            before: Some(victims::pod_start_before()),
            ..d("the pod-startup SLO", POD_STARTUP_SLO_SECONDS, "Kubernetes' pod startup SLO".into(), Watches::Victims)
        },
    ];
    if let Some(t) = env.watchdog_thresh_seconds.filter(|&t| t > 0) {
        out.push(d(
            "the soft-lockup watchdog",
            2.0 * t as f64,
            format!("2 × kernel.watchdog_thresh ({t})"),
            Watches::ReclaimingCpu,
        ));
    }
    if let Some(t) =
        std::fs::read_to_string(RCU_STALL_TIMEOUT).ok().and_then(|s| s.trim().parse::<f64>().ok()).filter(|t| *t > 0.0)
    {
        out.push(d("RCU's CPU stall warning", t, "rcupdate.rcu_cpu_stall_timeout".into(), Watches::ReclaimingCpu));
    }
    if let Some(t) = proc.sysctl_u64("sys/kernel/hung_task_timeout_secs").ok().filter(|&t| t > 0) {
        out.push(d("the hung-task warning", t as f64, "kernel.hung_task_timeout_secs".into(), Watches::Victims));
    }
    out.push(d(
        "the node-lease grace period",
        NODE_LEASE_GRACE_SECONDS,
        NODE_LEASE_GRACE_SOURCE.into(),
        Watches::Victims,
    ));
    out.push(d(
        "the kubelet's runtime request timeout",
        RUNTIME_REQUEST_TIMEOUT_SECONDS,
        "the kubelet's --runtime-request-timeout".into(),
        Watches::Victims,
    ));
    out.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    out
}
