//! `reclaim --watchdog-check`: prove the verdict against the kernel's own
//! soft-lockup watchdog.
//!
//! The threshold is lowered for the run (`kernel.watchdog_thresh`, soft
//! lockup after 2 × thresh seconds), so lockups are reachable at sizes the
//! machine holds. For each size, dentrylab predicts from the sizes *below
//! it* whether the reclaim's longest stretch will pass the threshold, then
//! compares that prediction (and the probe's measured gap) with what the
//! watchdog said in /dev/kmsg about the reclaiming task.

use serde::{Deserialize, Serialize};

use super::repetition::Run;
use super::summary::Fits;
use crate::analysis::fit;
use crate::procfs::kmsg::Kind as AlertKind;

pub(crate) use super::lowered::{RCU_STALL_TIMEOUT_MAX, RcuTimeout, lower};

mod summary;

/// Default `--watchdog-thresh` for a check: a 2 s soft-lockup threshold.
pub(crate) const CHECK_THRESH_SECONDS: u64 = 1;

/// The RCU stall timeout a check at `thresh` needs: twice the top of the
/// watchdog's detection band, so that the soft-lockup watchdog has
/// reported any stretch long enough to be reported before RCU does.
pub(crate) fn rcu_timeout_needed(thresh: u64) -> u64 {
    ((2.0 * detection_band(thresh).1).ceil() as u64).min(RCU_STALL_TIMEOUT_MAX)
}

/// The watchdog's clock ticks in units of 2^30 ns (`running_clock() >> 30`
/// in kernel/watchdog.c), and it checks every 2 × thresh / 5 seconds.
pub(crate) const WATCHDOG_UNIT_SECONDS: f64 = 1_073_741_824.0 / 1e9;

/// The stretch lengths between which the watchdog may or may not report.
/// From the second on it must (its coarse clock has advanced by
/// 2 × thresh + 1 units and a check has run since). Below the first it cannot: it
/// needs its clock to advance more than 2 × thresh units past its last
/// touch, and that touch can precede the stretch by up to one sample
/// period (2 × thresh / 5 s: the per-CPU hrtimer touches it only when it
/// runs), so the lower edge is 2 × thresh units less one sample period.
pub(crate) fn detection_band(thresh: u64) -> (f64, f64) {
    let t = 2.0 * thresh as f64;
    ((t * WATCHDOG_UNIT_SECONDS - t / 5.0).max(0.0), (t + 1.0) * WATCHDOG_UNIT_SECONDS + t / 5.0)
}

/// What a stretch of a given length means to the watchdog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Expect {
    /// Shorter than the band: the watchdog cannot fire.
    Silent,
    /// Inside the band: it may or may not.
    Either,
    /// Longer than the band: it must fire.
    Fires,
}

pub(crate) fn expect(gap_seconds: f64, thresh: u64) -> Expect {
    let (lo, hi) = detection_band(thresh);
    if gap_seconds < lo {
        Expect::Silent
    } else if gap_seconds >= hi {
        Expect::Fires
    } else {
        Expect::Either
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Agreement {
    /// Predicted a lockup and the watchdog fired.
    TruePositive,
    /// Predicted none and the watchdog stayed silent.
    TrueNegative,
    /// Predicted a lockup; the watchdog stayed silent.
    FalsePositive,
    /// Predicted none; the watchdog fired.
    FalseNegative,
    /// The predicted stretch falls in the watchdog's detection band:
    /// either outcome is consistent with it.
    Uncertain,
    /// No prediction (no smaller sizes to predict from).
    Unpredicted,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CheckRow {
    pub target: u64,
    pub rep: u32,
    /// Longest stretch predicted from the sizes below this one.
    pub predicted_gap_seconds: Option<f64>,
    /// What that stretch means to the watchdog.
    pub predicted: Option<Expect>,
    pub measured_gap_seconds: f64,
    /// What the stretch the probe measured means to the watchdog.
    pub measured: Expect,
    pub watchdog_fired: bool,
    /// The largest "stuck for" figure the watchdog gave for the reclaiming task.
    pub watchdog_stuck_seconds: Option<u64>,
    pub agreement: Agreement,
    /// Whether the probe's gap and the watchdog agree with each other.
    pub probe_agrees_with_watchdog: bool,
    /// Whether RCU's CPU stall detector reported a stall during this reclaim.
    #[serde(default)]
    pub rcu_stall_reported: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WatchdogReport {
    pub original_thresh_seconds: u64,
    pub thresh_seconds: u64,
    pub soft_lockup_threshold_seconds: f64,
    /// Stretches in this range may or may not be reported ([`detection_band`]).
    pub detection_band_seconds: (f64, f64),
    pub rows: Vec<CheckRow>,
    pub true_positive: usize,
    pub true_negative: usize,
    pub false_positive: usize,
    pub false_negative: usize,
    pub uncertain: usize,
    pub unpredicted: usize,
    /// The prediction held for every size it could be made for, and the
    /// watchdog fired at least once and stayed silent at least once.
    pub validated: bool,
    /// The observed edge: the largest size at which the watchdog stayed
    /// silent in every repetition, and the smallest at which it fired.
    #[serde(default)]
    pub observed_largest_silent: Option<u64>,
    #[serde(default)]
    pub observed_smallest_fired: Option<u64>,
    /// The predicted edge (the gap fit reaching 2 × thresh) and its 90% interval.
    #[serde(default)]
    pub predicted_edge: Option<f64>,
    #[serde(default)]
    pub predicted_edge_low: Option<f64>,
    #[serde(default)]
    pub predicted_edge_high: Option<f64>,
    /// The size from which the predicted stretch reaches the band's lower
    /// edge (the fit's 90% interval at its low end): the watchdog may fire.
    #[serde(default)]
    pub may_fire_from: Option<f64>,
    /// The size by which it reaches the band's upper edge (the interval's
    /// high end): the watchdog must fire.
    #[serde(default)]
    pub must_fire_by: Option<f64>,
    /// Whether what the watchdog did fits the range above: it fired at no
    /// size below `may_fire_from` and stayed silent at none past
    /// `must_fire_by`; `None` when there is no prediction or no size ran.
    #[serde(default)]
    pub edge_inside_prediction: Option<bool>,
    /// RCU's CPU stall timeout as found and during the check (raised when it
    /// would have reported first); `None` when the kernel has none.
    #[serde(default)]
    pub rcu_stall_timeout: Option<RcuTimeout>,
    pub summary: Vec<String>,
}

/// Whether the observed edge fits the predicted range: no size fired below
/// `may_from`, and none past `must_by` stayed silent.
fn edge_consistent(
    may_from: Option<f64>,
    must_by: Option<f64>,
    largest_silent: Option<u64>,
    smallest_fired: Option<u64>,
) -> Option<bool> {
    if may_from.is_none() && must_by.is_none() || largest_silent.is_none() && smallest_fired.is_none() {
        return None;
    }
    let fired_ok = match (smallest_fired, may_from) {
        (Some(f), Some(m)) => f as f64 >= m,
        _ => true,
    };
    let silent_ok = match (largest_silent, must_by) {
        (Some(s), Some(m)) => s as f64 <= m,
        _ => true,
    };
    Some(fired_ok && silent_ok)
}

/// Predicts the longest stretch at `n` from runs of smaller sizes.
fn predict_gap(runs: &[Run], n: u64) -> Option<f64> {
    let below: Vec<&Run> = runs.iter().filter(|r| r.target < n).collect();
    let distinct: std::collections::BTreeSet<u64> = below.iter().map(|r| r.target).collect();
    match distinct.len() {
        0 => None,
        1 => {
            // One size: scale its largest gap in proportion to the count.
            let r = below.iter().max_by(|a, b| a.probe.max_gap_seconds.total_cmp(&b.probe.max_gap_seconds))?;
            Some(r.probe.max_gap_seconds * n as f64 / r.target as f64)
        }
        _ => {
            let pts: Vec<_> = below.iter().map(|r| (r.fit_count(), r.probe.max_gap_seconds)).collect();
            fit::power(&pts).map(|p| p.at(n as f64))
        }
    }
}

/// What the watchdog said about one repetition, against what the sizes
/// below it predicted and what the probe measured.
fn check_row(runs: &[Run], r: &Run, thresh: u64) -> CheckRow {
    let predicted_gap = predict_gap(runs, r.target);
    let predicted = predicted_gap.map(|g| expect(g, thresh));
    let lockups: Vec<_> = r
        .kernel_messages
        .iter()
        .filter(|a| a.kind == AlertKind::SoftLockup && a.pid == Some(r.reclaim_task_pid))
        .collect();
    let fired = !lockups.is_empty();
    let rcu_stall_reported = r.kernel_messages.iter().any(|a| a.kind == AlertKind::RcuStall);
    let measured = expect(r.probe.max_gap_seconds, thresh);
    let agreement = match (predicted, fired) {
        (None, _) => Agreement::Unpredicted,
        (Some(Expect::Either), _) => Agreement::Uncertain,
        (Some(Expect::Fires), true) => Agreement::TruePositive,
        (Some(Expect::Silent), false) => Agreement::TrueNegative,
        (Some(Expect::Fires), false) => Agreement::FalsePositive,
        (Some(Expect::Silent), true) => Agreement::FalseNegative,
    };
    CheckRow {
        target: r.target,
        rep: r.rep,
        predicted_gap_seconds: predicted_gap,
        predicted,
        measured_gap_seconds: r.probe.max_gap_seconds,
        measured,
        watchdog_fired: fired,
        watchdog_stuck_seconds: lockups.iter().filter_map(|a| a.stuck_seconds).max(),
        agreement,
        probe_agrees_with_watchdog: match measured {
            Expect::Either => true,
            Expect::Fires => fired,
            Expect::Silent => !fired,
        },
        rcu_stall_reported,
    }
}

/// The rows counted by agreement.
pub(super) struct Tally {
    pub(super) tp: usize,
    pub(super) tn: usize,
    pub(super) fp: usize,
    pub(super) fneg: usize,
    pub(super) unc: usize,
    pub(super) un: usize,
}

impl Tally {
    fn of(rows: &[CheckRow]) -> Tally {
        let count = |a: Agreement| rows.iter().filter(|r| r.agreement == a).count();
        Tally {
            tp: count(Agreement::TruePositive),
            tn: count(Agreement::TrueNegative),
            fp: count(Agreement::FalsePositive),
            fneg: count(Agreement::FalseNegative),
            unc: count(Agreement::Uncertain),
            un: count(Agreement::Unpredicted),
        }
    }

    fn validated(&self) -> bool {
        self.fp == 0 && self.fneg == 0 && self.tp > 0 && self.tn > 0
    }
}

/// The observed edge (largest silent size, smallest fired) against the
/// predicted one and the range the detection band allows.
pub(super) struct Edge {
    pub(super) largest_silent: Option<u64>,
    pub(super) smallest_fired: Option<u64>,
    pub(super) predicted: Option<f64>,
    pub(super) predicted_low: Option<f64>,
    pub(super) predicted_high: Option<f64>,
    pub(super) may_from: Option<f64>,
    pub(super) must_by: Option<f64>,
    pub(super) inside: Option<bool>,
}

impl Edge {
    fn of(fits: &Fits, rows: &[CheckRow], thresh: u64) -> Edge {
        let limit = 2.0 * thresh as f64;
        let (lo, hi) = detection_band(thresh);
        let sizes: std::collections::BTreeSet<u64> = rows.iter().map(|r| r.target).collect();
        let fired_at = |t: u64| rows.iter().any(|r| r.target == t && r.watchdog_fired);
        let largest_silent = sizes.iter().copied().filter(|&t| !fired_at(t)).max();
        let smallest_fired = sizes.iter().copied().filter(|&t| fired_at(t)).min();
        let gap = fits.gap_governing();
        let interval = gap.and_then(|p| p.band.and_then(|b| b.count_reaching(&p, limit)));
        // The watchdog may report a stretch from the band's lower edge and must
        // from its upper edge, so the observed edge is expected between the size
        // whose stretch reaches `lo` (the fit's interval at its low end) and the
        // size whose stretch reaches `hi` (at its high end).
        let reaching = |v: f64| -> (Option<f64>, Option<f64>) {
            match gap {
                Some(p) => match p.band.and_then(|b| b.count_reaching(&p, v)) {
                    Some(i) => (Some(i.low), i.high),
                    None => (p.solve(v), p.solve(v)),
                },
                None => (None, None),
            }
        };
        let may_from = reaching(lo).0;
        let must_by = reaching(hi).1;
        Edge {
            largest_silent,
            smallest_fired,
            predicted: gap.and_then(|p| p.solve(limit)),
            predicted_low: interval.map(|i| i.low),
            predicted_high: interval.and_then(|i| i.high),
            may_from,
            must_by,
            inside: edge_consistent(may_from, must_by, largest_silent, smallest_fired),
        }
    }
}

/// The check of a sweep's repetitions (`runs`, fitted as `fits`) against
/// what the watchdog said.
pub(crate) fn compare(
    runs: &[Run],
    fits: &Fits,
    original: u64,
    thresh: u64,
    rcu: Option<RcuTimeout>,
) -> WatchdogReport {
    let rows: Vec<CheckRow> = runs.iter().map(|r| check_row(runs, r, thresh)).collect();
    let tally = Tally::of(&rows);
    let validated = tally.validated();
    let mut summary = summary::agreement_lines(&rows, &tally, original, thresh, rcu);
    let edge = Edge::of(fits, &rows, thresh);
    summary.push(summary::edge_line(&edge, thresh));
    summary.push(if validated {
        "Validated: the watchdog fired where a lockup was predicted and stayed silent where none was.".into()
    } else {
        "Not validated: see the table.".into()
    });
    WatchdogReport {
        original_thresh_seconds: original,
        thresh_seconds: thresh,
        soft_lockup_threshold_seconds: 2.0 * thresh as f64,
        detection_band_seconds: detection_band(thresh),
        rows,
        true_positive: tally.tp,
        true_negative: tally.tn,
        false_positive: tally.fp,
        false_negative: tally.fneg,
        uncertain: tally.unc,
        unpredicted: tally.un,
        validated,
        observed_largest_silent: edge.largest_silent,
        observed_smallest_fired: edge.smallest_fired,
        predicted_edge: edge.predicted,
        predicted_edge_low: edge.predicted_low,
        predicted_edge_high: edge.predicted_high,
        may_fire_from: edge.may_from,
        must_fire_by: edge.must_by,
        edge_inside_prediction: edge.inside,
        rcu_stall_timeout: rcu,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::kmsg::{Alert, Kind};

    /// What the check reads of a recorded sweep.
    #[derive(serde::Deserialize)]
    struct Fixture {
        runs: Vec<Run>,
        fits: Fits,
    }

    fn fixture() -> Fixture {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/reclaim-small.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    fn lockup(pid: u32, stuck: u64) -> Alert {
        Alert {
            kind: Kind::SoftLockup,
            usec: 1,
            message: format!("watchdog: BUG: soft lockup - CPU#0 stuck for {stuck}s! [dentrylab:{pid}]"),
            cpu: Some(0),
            stuck_seconds: Some(stuck),
            task: Some("dentrylab".into()),
            pid: Some(pid),
        }
    }

    #[test]
    fn fired_where_predicted_is_validated() {
        let mut r = fixture();
        // Make the gap grow steeply so the largest size is predicted to lock up.
        for run in &mut r.runs {
            run.probe.max_gap_seconds = 4.0 * (run.target as f64 / 80_000.0).powi(3);
            run.kernel_messages.clear();
        }
        for run in r.runs.iter_mut().filter(|x| x.target == 80_000) {
            let pid = run.reclaim_task_pid;
            run.kernel_messages.push(lockup(pid, 3));
        }
        let w = compare(&r.runs, &r.fits, 10, 1, None);
        assert!(w.true_positive >= 1, "{:?}", w.summary);
        assert_eq!((w.false_positive, w.false_negative), (0, 0), "{:?}", w.summary);
        assert!(w.validated);
        let row = w.rows.iter().find(|x| x.target == 80_000).unwrap();
        assert_eq!(row.watchdog_stuck_seconds, Some(3));
    }

    #[test]
    fn disagreement_is_said_plainly() {
        let mut r = fixture();
        for run in &mut r.runs {
            run.kernel_messages.clear();
        }
        // The watchdog fires at the largest size though the small gaps predict nothing.
        for run in &mut r.runs {
            run.probe.max_gap_seconds = 0.01 * run.target as f64 / 20_000.0;
        }
        let run = r.runs.iter_mut().rfind(|x| x.target == 80_000).unwrap();
        let pid = run.reclaim_task_pid;
        run.kernel_messages.push(lockup(pid, 2));
        // A lockup of another task is not the reclaim's.
        r.runs[0].kernel_messages.push(lockup(pid + 100_000, 5));
        let w = compare(&r.runs, &r.fits, 10, 1, None);
        assert_eq!(w.false_negative, 1);
        assert!(!w.validated);
        assert!(w.summary.iter().any(|s| s.starts_with("DISAGREEMENT at 80k")), "{:?}", w.summary);
        assert!(!w.rows[0].watchdog_fired);
        // The probe saw 40 ms where the watchdog reported 2 s: said too.
        assert!(w.summary.iter().any(|s| s.contains("the probe saw less than")), "{:?}", w.summary);
    }

    #[test]
    fn a_short_rcu_stall_timeout_is_raised_and_its_stalls_are_counted() {
        // Debian's 6.12 kernels boot with 21 s: at thresh 10 the band reaches 26.5 s.
        assert!(rcu_timeout_needed(10) as f64 > detection_band(10).1);
        assert!(rcu_timeout_needed(10) > 21);
        assert_eq!(rcu_timeout_needed(1000), RCU_STALL_TIMEOUT_MAX);
        let mut r = fixture();
        for run in &mut r.runs {
            run.kernel_messages.clear();
        }
        let rcu = Alert {
            kind: AlertKind::RcuStall,
            usec: 1,
            message: "rcu: INFO: rcu_preempt self-detected stall on CPU".into(),
            cpu: None,
            stuck_seconds: None,
            task: None,
            pid: None,
        };
        r.runs.last_mut().unwrap().kernel_messages.push(rcu);
        let t = RcuTimeout { original_seconds: 21, during_check_seconds: 53 };
        let w = compare(&r.runs, &r.fits, 10, 10, Some(t));
        assert_eq!(w.rows.iter().filter(|x| x.rcu_stall_reported).count(), 1);
        assert!(!w.rows.last().unwrap().watchdog_fired, "an RCU stall is not a soft lockup");
        assert_eq!(w.rcu_stall_timeout, Some(t));
        let line = w.summary.iter().find(|s| s.starts_with("RCU's CPU stall timeout was 21 s")).unwrap();
        assert!(line.contains("raised to 53 s") && line.contains("during 1 reclaim(s)"), "{line}");
        let unchanged = RcuTimeout { original_seconds: 60, during_check_seconds: 60 };
        let w = compare(&r.runs, &r.fits, 10, 10, Some(unchanged));
        assert!(w.summary.iter().any(|s| s.starts_with("RCU's CPU stall timeout is 60 s")), "{:?}", w.summary);
    }

    #[test]
    fn the_detection_band_follows_the_kernel_clock() {
        // thresh 1: 2 units of 2^30 ns less one 0.4 s sample period, up
        // to 3 units plus one period.
        let (lo, hi) = detection_band(1);
        assert!((lo - 1.747).abs() < 0.001 && (hi - 3.621).abs() < 0.001, "{lo} {hi}");
        assert_eq!(expect(1.7, 1), Expect::Silent);
        // Just over 2 × thresh: the watchdog may report it (a touch up to
        // one period before the stretch began), so it is not "silent".
        assert_eq!(expect(2.0, 1), Expect::Either);
        assert_eq!(expect(2.6, 1), Expect::Either);
        assert_eq!(expect(3.7, 1), Expect::Fires);
        let (lo, hi) = detection_band(2);
        assert!(
            (lo - (4.0 * WATCHDOG_UNIT_SECONDS - 0.8)).abs() < 1e-9
                && (hi - (5.0 * WATCHDOG_UNIT_SECONDS + 0.8)).abs() < 1e-9
        );
        let (lo, hi) = detection_band(10);
        assert!((lo - 17.47).abs() < 0.01 && hi < 26.6, "{lo} {hi}");
    }

    /// A soft lockup in an ns-exit reclaim names the exiting child (its
    /// namespace is torn down in its own exit), not dentrylab's thread that
    /// waits for it: recorded format, the child's tid in the brackets.
    #[test]
    fn ns_exit_lockups_are_attributed_to_the_child() {
        let p =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc/6.18/kmsg-soft-lockup-ns-exit");
        let alerts: Vec<Alert> = std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .filter_map(crate::procfs::kmsg::parse_record)
            .filter_map(|r| crate::procfs::kmsg::classify(&r))
            .collect();
        let lock = alerts.iter().find(|a| a.kind == Kind::SoftLockup).unwrap();
        let child = lock.pid.unwrap();
        let mut r = fixture();
        for run in &mut r.runs {
            run.kernel_messages.clear();
            run.method = "ns-exit".parse().unwrap();
        }
        let last = r.runs.iter_mut().rfind(|x| x.target == 80_000).unwrap();
        last.kernel_messages = alerts.clone();
        // Matched to the child: fired.
        last.reclaim_task_pid = child;
        let w = compare(&r.runs, &r.fits, 10, 1, None);
        assert!(w.rows.iter().rfind(|x| x.target == 80_000).unwrap().watchdog_fired);
        // Had the run recorded the parent's thread, the lockup would be lost.
        let last = r.runs.iter_mut().rfind(|x| x.target == 80_000).unwrap();
        last.reclaim_task_pid = child - 1;
        let w = compare(&r.runs, &r.fits, 10, 1, None);
        assert!(!w.rows.iter().rfind(|x| x.target == 80_000).unwrap().watchdog_fired);
    }

    #[test]
    fn the_observed_edge_is_judged_against_the_band_not_the_nominal_threshold() {
        // Thresh 1 on this VM: silent at 32M (2.38 s, inside the band),
        // fired at 48M; the fit puts the band's edges at ~22M and ~50M.
        assert_eq!(edge_consistent(Some(22e6), Some(50e6), Some(32_000_000), Some(48_000_000)), Some(true));
        // Fired below where the stretch could reach the band: wrong.
        assert_eq!(edge_consistent(Some(22e6), Some(50e6), Some(16_000_000), Some(20_000_000)), Some(false));
        // Silent past where it must fire: wrong.
        assert_eq!(edge_consistent(Some(22e6), Some(50e6), Some(64_000_000), None), Some(false));
        // Silent everywhere below the must-fire size: consistent, not bracketed.
        assert_eq!(edge_consistent(Some(48e6), Some(93e6), Some(64_000_000), None), Some(true));
        assert_eq!(edge_consistent(None, None, Some(1), Some(2)), None);
        assert_eq!(edge_consistent(Some(1.0), Some(2.0), None, None), None);
    }

    #[test]
    fn a_prediction_inside_the_band_is_uncertain_not_wrong() {
        let mut r = fixture();
        for run in &mut r.runs {
            run.probe.max_gap_seconds = 2.6 * run.target as f64 / 80_000.0;
            run.kernel_messages.clear();
        }
        let w = compare(&r.runs, &r.fits, 10, 1, None);
        let last = w.rows.iter().rfind(|x| x.target == 80_000).unwrap();
        assert_eq!(last.predicted, Some(Expect::Either));
        assert_eq!(last.agreement, Agreement::Uncertain);
        assert_eq!((w.false_positive, w.false_negative), (0, 0));
    }
}
