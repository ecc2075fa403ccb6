//! What the victims of a reclaim say, as numbers: each victim's calls
//! during the reclaim against its calls before it (the run's own control),
//! and, from the fits of each victim's longest wait against the dentry
//! count, the first deadline of the node that some victim misses.

use serde::{Deserialize, Serialize};

use super::fit::PowerFit;
use super::interval::Interval;
use crate::probe::victims::Call;
use crate::stats::percentile_sorted;

/// A victim's calls in one window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct CallStats {
    pub calls: usize,
    /// NaN without calls.
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub longest_seconds: f64,
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub p50_seconds: f64,
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub p99_seconds: f64,
    /// Calls that ended in the window, per second of it (NaN without calls).
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub per_second: f64,
}

impl CallStats {
    fn of(calls: &[&Call], window_ns: u64) -> CallStats {
        let mut t: Vec<f64> = calls.iter().map(|c| c.took_ns as f64 / 1e9).collect();
        t.sort_by(f64::total_cmp);
        CallStats {
            calls: t.len(),
            longest_seconds: t.last().copied().unwrap_or(f64::NAN),
            p50_seconds: percentile_sorted(&t, 0.50),
            p99_seconds: percentile_sorted(&t, 0.99),
            per_second: if window_ns > 0 { t.len() as f64 / (window_ns as f64 / 1e9) } else { f64::NAN },
        }
    }

    /// The calls that overlap `[start_ns, end_ns]` (the reclaim).
    pub(crate) fn during(calls: &[Call], start_ns: u64, end_ns: u64) -> CallStats {
        let c: Vec<&Call> = calls.iter().filter(|c| overlaps(c, start_ns, end_ns)).collect();
        CallStats::of(&c, end_ns.saturating_sub(start_ns))
    }

    /// The calls that ended before `start_ns` (the control).
    pub(crate) fn before(calls: &[Call], start_ns: u64) -> CallStats {
        let c: Vec<&Call> = calls.iter().filter(|c| c.end_ns() < start_ns).collect();
        let window = c.first().map_or(0, |f| start_ns.saturating_sub(f.start_ns));
        CallStats::of(&c, window)
    }
}

fn overlaps(c: &Call, start_ns: u64, end_ns: u64) -> bool {
    c.start_ns <= end_ns && c.end_ns() >= start_ns
}

/// The longest call that overlaps `[start_ns, end_ns]`.
pub(crate) fn longest_during(calls: &[Call], start_ns: u64, end_ns: u64) -> Option<Call> {
    calls.iter().filter(|c| overlaps(c, start_ns, end_ns)).max_by_key(|c| c.took_ns).copied()
}

/// Whose wait a deadline is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Watches {
    /// A task that waits (a victim): probes, pod starts, hung tasks.
    Victims,
    /// The CPU that walks the dentries without a reschedule: the
    /// soft-lockup watchdog, RCU's stall warning.
    ReclaimingCpu,
}

/// A deadline a node has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Deadline {
    pub name: String,
    pub seconds: f64,
    /// Where the value comes from (a sysctl read, a default of Kubernetes).
    pub source: String,
    pub watches: Watches,
}

/// A fit of someone's longest wait against the dentry count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WaitFit {
    /// The victim's name, or `reclaiming CPU`.
    pub who: String,
    pub watches: Watches,
    /// The governing fit (for a victim: c·N unless its waits reject it,
    /// `analysis::linearity`; for the reclaiming CPU: the verdict's).
    pub fit: PowerFit,
    /// Which model governs a victim's fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<super::linearity::Shape>,
}

/// The smallest count at which a wait reaches a deadline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Crossing {
    pub who: String,
    pub count: f64,
    /// 90% interval of the count (from the fit's band), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
}

/// One deadline and who misses it first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Incident {
    pub deadline: Deadline,
    /// `None`: no fitted wait grows to it.
    pub first: Option<Crossing>,
}

/// For each deadline, the fit of its kind that reaches it at the smallest
/// count (by the point estimate).
pub(crate) fn incidents(deadlines: &[Deadline], fits: &[WaitFit]) -> Vec<Incident> {
    deadlines
        .iter()
        .map(|d| {
            let first = fits
                .iter()
                .filter(|f| f.watches == d.watches)
                .filter_map(|f| {
                    let count = f.fit.solve(d.seconds)?;
                    let interval = f.fit.band.and_then(|b| b.count_reaching(&f.fit, d.seconds));
                    Some(Crossing { who: f.who.clone(), count, interval })
                })
                .min_by(|a, b| a.count.total_cmp(&b.count));
            Incident { deadline: d.clone(), first }
        })
        .collect()
}

/// The incident at the smallest count: what goes wrong first on the node.
pub(crate) fn first(incidents: &[Incident]) -> Option<&Incident> {
    incidents
        .iter()
        .filter(|i| i.first.is_some())
        .min_by(|a, b| a.first.as_ref().map(|c| c.count).total_cmp(&b.first.as_ref().map(|c| c.count)))
}

trait TotalCmp {
    fn total_cmp(&self, other: &Self) -> std::cmp::Ordering;
}

impl TotalCmp for Option<f64> {
    fn total_cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.unwrap_or(f64::INFINITY).total_cmp(&other.unwrap_or(f64::INFINITY))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(start_ms: u64, took_ms: u64) -> Call {
        Call { start_ns: start_ms * 1_000_000, took_ns: took_ms * 1_000_000 }
    }

    #[test]
    fn calls_overlapping_the_reclaim_are_its_and_those_before_are_the_control() {
        // Reclaim from 100 ms to 200 ms.
        let calls = [call(0, 2), call(10, 3), call(95, 10), call(150, 60), call(220, 1)];
        let d = CallStats::during(&calls, 100_000_000, 200_000_000);
        assert_eq!(d.calls, 2);
        assert!((d.longest_seconds - 0.060).abs() < 1e-12);
        assert!((d.per_second - 20.0).abs() < 1e-9);
        let b = CallStats::before(&calls, 100_000_000);
        assert_eq!(b.calls, 2);
        assert!((b.longest_seconds - 0.003).abs() < 1e-12);
        assert_eq!(longest_during(&calls, 100_000_000, 200_000_000), Some(call(150, 60)));
        let none = CallStats::during(&calls, 300_000_000, 400_000_000);
        assert_eq!(none.calls, 0);
        assert!(none.longest_seconds.is_nan());
        // No call in the control window (a call longer than it): NaN, saved
        // as null, read back.
        let b = CallStats::before(&[call(0, 2000)], 1_000_000_000);
        assert!(b.per_second.is_nan());
        let back: CallStats = serde_json::from_str(&serde_json::to_string(&b).unwrap()).unwrap();
        assert_eq!(back.calls, 0);
        assert!(back.per_second.is_nan() && back.longest_seconds.is_nan());
    }

    fn linear_fit(seconds_per_million: f64) -> PowerFit {
        PowerFit { coefficient: seconds_per_million / 1e6, exponent: 1.0, r2: 1.0, exponent_stderr: 0.0, band: None }
    }

    fn deadline(name: &str, seconds: f64, watches: Watches) -> Deadline {
        Deadline { name: name.into(), seconds, source: "test".into(), watches }
    }

    #[test]
    fn each_deadline_is_missed_first_by_the_fastest_growing_wait_of_its_kind() {
        let fits = [
            WaitFit { who: "umount".into(), watches: Watches::Victims, fit: linear_fit(0.09), shape: None },
            WaitFit { who: "stat".into(), watches: Watches::Victims, fit: linear_fit(0.002), shape: None },
            WaitFit {
                who: "reclaiming CPU".into(),
                watches: Watches::ReclaimingCpu,
                fit: linear_fit(0.1),
                shape: None,
            },
        ];
        let ds = [
            deadline("probe", 1.0, Watches::Victims),
            deadline("soft lockup", 20.0, Watches::ReclaimingCpu),
            deadline("pod start", 5.0, Watches::Victims),
        ];
        let inc = incidents(&ds, &fits);
        let probe = inc[0].first.as_ref().unwrap();
        assert_eq!(probe.who, "umount");
        assert!((probe.count - 1.0 / 0.09 * 1e6).abs() < 1.0);
        let lockup = inc[1].first.as_ref().unwrap();
        assert_eq!(lockup.who, "reclaiming CPU");
        assert!((lockup.count - 200e6).abs() < 1.0);
        let f = first(&inc).unwrap();
        assert_eq!(f.deadline.name, "probe");
    }

    #[test]
    fn a_wait_that_does_not_grow_misses_nothing() {
        let flat = PowerFit { coefficient: 0.003, exponent: -0.01, r2: 0.0, exponent_stderr: 0.1, band: None };
        let fits = [WaitFit { who: "stat".into(), watches: Watches::Victims, fit: flat, shape: None }];
        let inc = incidents(&[deadline("probe", 1.0, Watches::Victims)], &fits);
        assert!(inc[0].first.is_none());
        assert!(first(&inc).is_none());
    }
}
