//! The sentences of a `--watchdog-check` report, from its rows, its tally
//! and its edge.

use super::{Agreement, CheckRow, Edge, Expect, RcuTimeout, Tally, detection_band};

/// The summary's lines on the threshold, the agreement, the
/// disagreements, the probe and RCU (before the edge's).
pub(super) fn agreement_lines(
    rows: &[CheckRow],
    t: &Tally,
    original: u64,
    thresh: u64,
    rcu: Option<RcuTimeout>,
) -> Vec<String> {
    let limit = 2.0 * thresh as f64;
    let (lo, hi) = detection_band(thresh);
    let (tp, tn, fp, fneg, unc, un) = (t.tp, t.tn, t.fp, t.fneg, t.unc, t.un);
    let set = if original == thresh {
        format!("watchdog_thresh at {thresh} s (unchanged)")
    } else {
        format!("watchdog_thresh set from {original} to {thresh} s for the run")
    };
    let mut summary = vec![format!(
        "{set}: soft lockup after {limit:.0} s nominally. \
         The watchdog's clock counts in 2^30 ns units and it checks every {:.1} s, so a stretch under {lo:.2} s \
         cannot be reported, one of {hi:.2} s or more must be, and one in between may or may not.",
        limit / 5.0
    )];
    summary.push(format!(
        "Prediction vs watchdog: {tp} fired as predicted, {tn} silent as predicted, {fp} predicted but silent, \
         {fneg} fired but not predicted, {unc} predicted inside the band (either outcome fits), {un} with nothing \
         smaller to predict from."
    ));
    for r in rows.iter().filter(|r| matches!(r.agreement, Agreement::FalsePositive | Agreement::FalseNegative)) {
        summary.push(format!(
            "DISAGREEMENT at {} rep {}: predicted a longest stretch of {:.2} s ({}), measured {:.2} s, and the watchdog {}.",
            crate::size::human(r.target),
            r.rep + 1,
            r.predicted_gap_seconds.unwrap_or(f64::NAN),
            if r.predicted == Some(Expect::Fires) { "a lockup" } else { "no lockup" },
            r.measured_gap_seconds,
            if r.watchdog_fired { "fired" } else { "stayed silent" }
        ));
    }
    let probe_off = rows.iter().filter(|r| !r.probe_agrees_with_watchdog).count();
    if probe_off > 0 {
        summary.push(format!(
            "In {probe_off} reclaim(s) the probe's measured stretch and the watchdog disagree outside the band: \
             the probe saw {} what the watchdog reported.",
            if rows.iter().any(|r| !r.probe_agrees_with_watchdog && r.watchdog_fired) {
                "less than"
            } else {
                "more than"
            }
        ));
    }
    summary.extend(rcu.map(|t| rcu_line(t, rows)));
    if tp == 0 {
        summary.push(format!(
            "No size was predicted past the band ({hi:.2} s) and seen to fire: add a larger size to test the positive side."
        ));
    }
    summary
}

fn rcu_line(t: RcuTimeout, rows: &[CheckRow]) -> String {
    let stalls = rows.iter().filter(|r| r.rcu_stall_reported).count();
    if t.during_check_seconds > t.original_seconds {
        format!(
            "RCU's CPU stall timeout was {} s, short enough to report a stretch first, and its report restarts \
             the soft-lockup clock (print_cpu_stall_info -> touch_nmi_watchdog): raised to {} s for the check \
             and put back after. With {} s, a node at this threshold reports stretches from about {} s as RCU \
             stalls, not soft lockups. RCU stalls reported during {stalls} reclaim(s).",
            t.original_seconds, t.during_check_seconds, t.original_seconds, t.original_seconds
        )
    } else {
        format!(
            "RCU's CPU stall timeout is {} s, longer than the watchdog needs: RCU stalls reported during \
             {stalls} reclaim(s).",
            t.original_seconds
        )
    }
}

/// The summary's line on the observed edge against the predicted one.
pub(super) fn edge_line(e: &Edge, thresh: u64) -> String {
    let limit = 2.0 * thresh as f64;
    let (lo, hi) = detection_band(thresh);
    let h = |n: u64| crate::size::human(n);
    let hf = |n: Option<f64>| n.map(|n| crate::size::human(n.round() as u64)).unwrap_or_else(|| "–".into());
    format!(
        "Observed edge at watchdog_thresh {thresh}: {}; predicted edge {} (stretch = {limit:.0} s); with the band, the \
         watchdog may fire from {} (stretch {lo:.2} s, fit's 90% low end) and must by {} (stretch {hi:.2} s, high end){}",
        match (e.largest_silent, e.smallest_fired) {
            (Some(s), Some(f)) => format!("silent up to {}, fired from {}", h(s), h(f)),
            (Some(s), None) => format!("silent at every size (up to {}): add larger sizes", h(s)),
            (None, Some(f)) => format!("fired at every size (from {}): add smaller sizes", h(f)),
            (None, None) => "no size ran".into(),
        },
        e.predicted
            .map(|p| crate::analysis::interval::count_with_interval(p, e.predicted_low, e.predicted_high))
            .unwrap_or_else(|| "nothing (no gap fit)".into()),
        hf(e.may_from),
        hf(e.must_by),
        match (e.inside, e.smallest_fired) {
            (Some(true), Some(_)) => ": the observed edge falls inside that range.",
            (Some(true), None) => ": silent where firing was optional; the edge itself is not bracketed.",
            (Some(false), _) => ": the observed edge falls OUTSIDE that range.",
            (None, _) => ".",
        }
    )
}
