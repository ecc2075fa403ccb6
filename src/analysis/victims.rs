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
    /// The part of the deadline the operation itself takes on a node with
    /// nothing reclaiming, which a victim's own call does not: a pod start
    /// is the kubelet's work around the runtime's. A wait misses the
    /// deadline at [`Deadline::budget`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Before>,
}

/// What an operation takes, outside the victim's call, before any reclaim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Before {
    /// Whose time it is: "a pod start".
    pub of: String,
    pub seconds: f64,
    /// Where it was measured.
    pub source: String,
    /// How many times the victim's wait the operation waits on a node: the
    /// rest of the deadline is divided by it ([`Deadline::budget`]). 1 (a
    /// calibration saved before it): the victim's wait as measured.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub factor: f64,
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

impl Deadline {
    /// The wait a victim's call may take before the deadline is missed:
    /// the deadline less what the operation takes around that call,
    /// divided by how many times the victim's wait the operation waits.
    pub(crate) fn budget(&self) -> f64 {
        match &self.before {
            Some(b) => (self.seconds - b.seconds) / b.factor,
            None => self.seconds,
        }
    }
}

/// A pod start's own time on a node with nothing reclaiming, beyond the
/// runtime's part the `pod-start` victim times: the kubelet's sync, its
/// PLEG relist (1 s apart) and the API's answers. The median control pod
/// start of the real kubelet on the one-node cluster
/// (`docs/results/kubelet-victim-6.18.json`, fc-v669; checked on another
/// VM build in docs/victims.md). The pod-startup SLO is missed where the
/// victim's wait reaches the SLO less this.
pub(crate) const POD_START_BEFORE_SECONDS: f64 = 1.02;

/// How many times the `pod-start` victim's longest wait the real kubelet's
/// pod start waits during the same reclaim, on a node that starts a pod
/// every 0.5 s: the victim is one pod start alone, pinned to a CPU of its
/// own, while a node's pod starts share both CPUs with the kubelet, the
/// runtime, the control plane and the pods queued behind the one that
/// waits (docs/victims.md, "A busy node's pod start"). Fitted on fc-v857 at
/// 8M, the largest size both measured (the kubelet's longest start over
/// its control median, 2.36 s, the median of two runs' six repetitions,
/// `docs/results/kubelet-victim-6.18-v857*.json`; the victim's 1.10 s, of
/// `victims-standard-6.18-v857.json` and `victims-pod-start-6.18-v857.json`);
/// tested on fc-v1252 from 8M to 32M, which it was not fitted on.
pub(crate) const POD_START_NODE_FACTOR: f64 = 2.15;

/// [`POD_START_BEFORE_SECONDS`] and [`POD_START_NODE_FACTOR`] with their
/// source, for the deadline.
pub(crate) fn pod_start_before() -> Before {
    Before {
        of: "a pod start".into(),
        seconds: POD_START_BEFORE_SECONDS,
        source: format!(
            "the real kubelet's median pod start with nothing reclaiming, on the one-node cluster; the rest \
             divided by {POD_START_NODE_FACTOR}, the real kubelet's wait over the pod-start victim's on a node \
             starting a pod every 0.5 s"
        ),
        factor: POD_START_NODE_FACTOR,
    }
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
    /// Why the victim may wait, when its growth could be neither shown nor
    /// excluded: it is then judged by its upper fit (where its band's upper
    /// edge reaches a deadline), never called unaffected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub may_wait: Option<String>,
}

impl WaitFit {
    /// The count at which this wait reaches `seconds`, and its 90%
    /// interval: the fit's point, or for a victim that may wait its upper
    /// fit's (the interval's low end) when that comes first or the point
    /// never does.
    pub(crate) fn reaching(&self, seconds: f64) -> Option<(f64, Option<Interval>)> {
        let interval = self.fit.band.and_then(|b| b.count_reaching(&self.fit, seconds));
        let point = self.fit.solve(seconds);
        let count = match (self.may_wait.is_some(), point, interval) {
            (true, Some(p), Some(i)) => Some(p.min(i.low)),
            (true, None, Some(i)) => Some(i.low),
            (_, p, _) => p,
        }?;
        Some((count, interval))
    }
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
/// count (by the point estimate, or a victim that may wait by its upper
/// fit), with the interval of the first miss on the safe side: its low end
/// the smallest low end over every wait that reaches the deadline, its high
/// end the smallest high end (the first miss comes no later than the
/// earliest sure one).
pub(crate) fn incidents(deadlines: &[Deadline], fits: &[WaitFit]) -> Vec<Incident> {
    deadlines
        .iter()
        .map(|d| {
            let all: Vec<(String, f64, Option<Interval>)> = fits
                .iter()
                .filter(|f| f.watches == d.watches)
                .filter_map(|f| f.reaching(d.budget()).map(|(c, i)| (f.who.clone(), c, i)))
                .collect();
            let first = all.iter().min_by(|a, b| a.1.total_cmp(&b.1)).map(|(who, count, own)| Crossing {
                who: who.clone(),
                count: *count,
                interval: own.map(|_| safe_side(&all)),
            });
            Incident { deadline: d.clone(), first }
        })
        .collect()
}

/// The first miss's interval over every wait that reaches a deadline:
/// the smallest low end (a wait without an interval counts by its point)
/// and the smallest high end (`None`: unbounded).
fn safe_side(all: &[(String, f64, Option<Interval>)]) -> Interval {
    let low = all.iter().map(|(_, c, i)| i.map_or(*c, |i| i.low.min(*c))).fold(f64::INFINITY, f64::min);
    let high =
        all.iter().map(|(_, c, i)| i.map_or(Some(*c), |i| i.high)).fold(None, |m: Option<f64>, h| match (m, h) {
            (Some(m), Some(h)) => Some(m.min(h)),
            (m, h) => m.or(h),
        });
    Interval { low, high }
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

/// Victims' fits for the tests of this module and of the incidents
/// (`status::incident`), in one place; test builds only.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{WaitFit, Watches};

    /// A victim's waits at 1M–8M, `per_million` seconds per million
    /// dentries, three repetitions a size spread by ×/÷ `spread`, fitted
    /// as a run fits them (with the victims' run scatter).
    pub(crate) fn fitted(who: &str, per_million: f64, spread: f64) -> WaitFit {
        use crate::analysis::interval::SizeValues;
        let sizes: Vec<SizeValues> = [1e6, 2e6, 4e6, 8e6]
            .iter()
            .map(|&n| {
                let y = per_million * n / 1e6;
                SizeValues { count: n, values: vec![y * spread, y, y / spread] }
            })
            .collect();
        let m = crate::analysis::linearity::choose(&sizes, crate::analysis::run_scatter::VICTIM).unwrap();
        WaitFit { who: who.into(), watches: Watches::Victims, fit: m.linear.unwrap(), shape: None, may_wait: None }
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

    fn wait(who: &str, fit: PowerFit) -> WaitFit {
        WaitFit { who: who.into(), watches: Watches::Victims, fit, shape: None, may_wait: None }
    }

    use fixtures::fitted;

    /// Two waiting victims whose intervals overlap: the first incident is
    /// the earlier point's, and its interval the safe side of both: the
    /// smallest low end (here the later point's wider band) and the
    /// smallest high end.
    #[test]
    fn the_first_incident_takes_the_smallest_low_end_over_every_waiting_victim() {
        let (a, b) = (fitted("umount", 0.09, 1.05), fitted("mount", 0.08, 1.6));
        let reach = |f: &WaitFit| f.fit.band.unwrap().count_reaching(&f.fit, 1.0).unwrap();
        let (ia, ib) = (reach(&a), reach(&b));
        assert!(ib.low < ia.low && ia.low < ib.high.unwrap(), "the intervals overlap: {ia:?} {ib:?}");
        let inc = incidents(&[deadline("probe", 1.0, Watches::Victims)], &[b.clone(), a.clone()]);
        let c = inc[0].first.as_ref().unwrap();
        assert_eq!(c.who, "umount", "the earlier point names it");
        let i = c.interval.unwrap();
        assert_eq!(i.low, ib.low, "the other victim's low end: {i:?}");
        assert_eq!(i.high, Some(ia.high.unwrap().min(ib.high.unwrap())));
        assert!(i.low < c.count && c.count < i.high.unwrap());
        // Alone, each keeps its own.
        let own = incidents(&[deadline("probe", 1.0, Watches::Victims)], &[a]);
        assert_eq!(own[0].first.as_ref().unwrap().interval, Some(ia));
    }

    /// A victim that may wait is judged by its upper fit: it can set the
    /// first incident though its point comes later, or never.
    #[test]
    fn a_victim_that_may_wait_counts_by_its_upper_fit() {
        let mut m = fitted("netns", 0.05, 2.5);
        let reach = m.fit.band.unwrap().count_reaching(&m.fit, 1.0).unwrap();
        let point = m.fit.solve(1.0).unwrap();
        assert!(reach.low < point);
        assert_eq!(m.reaching(1.0).unwrap().0, point);
        m.may_wait = Some("test".into());
        assert_eq!(m.reaching(1.0).unwrap().0, reach.low);
        let inc = incidents(&[deadline("probe", 1.0, Watches::Victims)], &[wait("umount", linear_fit(0.09)), m]);
        let c = inc[0].first.as_ref().unwrap();
        assert!(c.who == "netns" || reach.low >= 1e6 / 0.09, "{c:?}");
    }

    fn deadline(name: &str, seconds: f64, watches: Watches) -> Deadline {
        Deadline { name: name.into(), seconds, source: "test".into(), watches, before: None }
    }

    #[test]
    fn each_deadline_is_missed_first_by_the_fastest_growing_wait_of_its_kind() {
        let fits = [
            wait("umount", linear_fit(0.09)),
            wait("stat", linear_fit(0.002)),
            WaitFit {
                who: "reclaiming CPU".into(),
                watches: Watches::ReclaimingCpu,
                fit: linear_fit(0.1),
                shape: None,
                may_wait: None,
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
        let fits = [wait("stat", flat)];
        let inc = incidents(&[deadline("probe", 1.0, Watches::Victims)], &fits);
        assert!(inc[0].first.is_none());
        assert!(first(&inc).is_none());
    }
}
