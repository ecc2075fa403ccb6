//! The verdict in words: `analysis::verdict::decide` and
//! `most_dangerous` return numbers and kinds; the sentences people read are
//! made here. Results saved before that carry their sentences, which are
//! printed as they were.

use crate::analysis::fit::SUPERLINEAR_EXPONENT;
use crate::analysis::interval::{Interval, count_with_interval};
use crate::analysis::linearity::Shape;
use crate::analysis::verdict::{Danger, Governs, PathRow, RankedBy, RowKind, ThresholdRow, Verdict};
use crate::bench::reclaim::{methods::Method, profile, repetition::Run};
use crate::size::human;

/// The widest interval a verdict is said to pin the edge with; past it the
/// verdict says so (the interval is never narrowed to reach it).
pub(crate) const WIDEST_INTERVAL: f64 = 2.0;

/// The verdict's lines: what governs, the prediction and what its interval
/// carries, which model it comes from, and (with `--profile`) the code
/// behind the longest stretch of `method`.
pub(crate) fn lines(v: &Verdict, runs: &[Run], method: Option<Method>) -> Vec<String> {
    if !v.saved_summary.is_empty() {
        return v.saved_summary.clone();
    }
    let mut out = vec![governs_line(v)];
    out.push(prediction_line(v));
    out.extend(model_lines(v));
    out.extend(band_lines(v));
    if let (Governs::LongestStretch, Some(t), Some(g)) =
        (v.governs, v.lockup_count_by_total_time, v.lockup_count_by_gap)
    {
        out.push(format!(
            "Total reclaim time alone would put the edge at {}; the measured stretch puts it at {} ({:.1}× {}).",
            human(t as u64),
            human(g as u64),
            if g > t { g / t } else { t / g },
            if g > t { "later" } else { "earlier" }
        ));
    }
    if v.superlinear
        && let Some(e) = v.time_exponent
    {
        out.push(format!(
            "Reclaim cost is super-linear here (exponent {e:.2}): ns per dentry grows with the count, so a \
             constant-ns extrapolation under-estimates large caches."
        ));
    }
    if (v.largest_size as f64) * 10.0 < v.lockup_count.unwrap_or(0.0) {
        out.push(format!(
            "The prediction extrapolates more than 10× beyond the largest size measured ({}); measure larger \
             sizes to narrow it.",
            human(v.largest_size)
        ));
    }
    if let (Some(low), Some(high)) = (v.lockup_count_low, v.lockup_count_high)
        && high / low > WIDEST_INTERVAL
    {
        out.push(format!(
            "This interval is {:.1}× wide, wider than the {WIDEST_INTERVAL}× a verdict can be acted on: this run \
             cannot pin the edge more closely (its own scatter, how far runs move on this machine, and the \
             distance extrapolated are all in it); measure larger sizes (--sizes auto) or more repetitions.",
            high / low
        ));
    }
    if v.soft_lockups_observed > 0 {
        out.push(format!("The kernel itself logged {} soft lockup(s) during the reclaims.", v.soft_lockups_observed));
    }
    out.extend(method.and_then(|m| profile::verdict_line(runs, m)));
    out
}

fn governs_line(v: &Verdict) -> String {
    let thr = v.soft_lockup_threshold_seconds;
    match v.governs {
        Governs::LongestStretch => format!(
            "The kernel yields inside the reclaim walk: at the largest size the longest stretch without a \
             reschedule was {:.0}% of the whole reclaim, so the longest stretch, not the total time, decides \
             whether the soft-lockup watchdog ({thr:.0} s) fires.",
            v.gap_to_time_ratio * 100.0
        ),
        Governs::TotalTime => format!(
            "The reclaim does not yield: the longest stretch was {:.0}% of the whole reclaim, so the total \
             reclaim time decides whether the soft-lockup watchdog ({thr:.0} s) fires (seed 000's model).",
            v.gap_to_time_ratio * 100.0
        ),
    }
}

fn prediction_line(v: &Verdict) -> String {
    let Some(n) = v.lockup_count else {
        return "No lockup count could be predicted: the fit does not grow with the count.".into();
    };
    format!(
        "Predicted soft lockup from about {} dentries per reclaim on this kernel{}.",
        count_with_interval(n, v.lockup_count_low, v.lockup_count_high),
        // Only an interval gets the interval's parenthetical (a calibration without one printed
        // "398M (no interval) … (90% interval; …)").
        if v.lockup_count_low.is_some() {
            " (90% interval; status and the exporter use its low end)"
        } else {
            " (status and the exporter use this point: there is no interval)"
        }
    )
}

fn shape_name(s: Shape) -> &'static str {
    match s {
        Shape::Linear => "linear model (c·N)",
        Shape::PowerLaw => "power law (c·N^k)",
    }
}

/// Which model the prediction comes from, why, and where the other puts it.
fn model_lines(v: &Verdict) -> Vec<String> {
    let Some(t) = v.linearity else { return Vec::new() };
    let what = match v.governs {
        Governs::LongestStretch => "longest stretch",
        Governs::TotalTime => "reclaim time",
    };
    let exponent = match t.exponent_interval {
        Some(Interval { low, high: Some(high) }) => format!("{:.2} (90% {low:.2}–{high:.2})", t.exponent),
        _ => format!("{:.2} (no interval: too few points to test)", t.exponent),
    };
    let mut out = vec![match (t.governs, t.rejected) {
        (Shape::Linear, _) if t.pinned => format!(
            "This run cannot test linearity on its own: the {what}'s power-law exponent, {exponent}, is not pinned \
             within {SUPERLINEAR_EXPONENT}. The exponent measured past the quick sizes on Linux {} (a deep sweep to \
             48M and the recorded runs of 8M and more, docs/method.md) lies inside it, so that measurement governs: \
             the linear model carrying its drift and uncertainty.",
            crate::analysis::run_scatter::EXPONENT_MEASURED_ON
        ),
        (Shape::Linear, _) => format!(
            "The {what} is predicted with the linear model (c·N: the walk visits each dentry once): the power \
             law's exponent, {exponent}, does not stand above 1 (one-sided test at {:.0}%), so only the prefactor \
             is extrapolated.",
            t.level * 100.0
        ),
        (Shape::PowerLaw, true) => format!(
            "Linearity is rejected: the {what}'s power-law exponent, {exponent}, stands above 1 (one-sided test \
             at {:.0}%), so the power law governs, with its wider and earlier interval.",
            t.level * 100.0
        ),
        (Shape::PowerLaw, false) if !t.testable => format!(
            "This run cannot test linearity: the {what}'s power-law exponent, {exponent}, is not pinned within \
             {SUPERLINEAR_EXPONENT} (too few or too scattered sizes), so the power law governs, with its wider \
             interval; measure more sizes or repetitions."
        ),
        (Shape::PowerLaw, false) => format!("The {what} is predicted with the power law: there is no linear fit."),
    }];
    if let Some(o) = v.other_shape
        && let Some(n) = o.count
    {
        out.push(format!(
            "The {} would put the edge at {}.",
            shape_name(o.shape),
            count_with_interval(n, o.interval.map(|i| i.low), o.interval.and_then(|i| i.high))
        ));
    }
    out
}

/// What the governing fit's interval carries.
fn band_lines(v: &Verdict) -> Vec<String> {
    let Some(b) = v.governing_band else { return Vec::new() };
    let mut out = Vec::new();
    let (model, beyond) = if b.fixed_exponent { ("the line c·N", "one") } else { ("the power law", "two") };
    if b.sizes == 2 && !b.fixed_exponent {
        out.push(
            "Only two sizes enter the fit: how far their means lie off the power law cannot be seen, so the \
             interval carries the repetitions' scatter only; run more sizes (--sizes auto) for an honest one."
                .into(),
        );
    }
    if b.birge_ratio > 1.0 {
        out.push(format!(
            "The sizes' means scatter around {model} {:.1}× more than their repetitions' spread explains: the \
             interval is widened by that misfit ({} degrees of freedom, one per size beyond {beyond}).",
            b.birge_ratio, b.dof
        ));
    }
    if b.run_sd > 0.0 {
        out.push(format!(
            "The interval also carries what one run cannot see: a size's mean scatters by {:.1}% between \
             independent runs (measured with bench/run-scatter.sh; {} degrees of freedom), and the fit \
             carries that through its {} sizes to the lockup count.",
            b.run_sd * 100.0,
            b.run_dof,
            b.sizes
        ));
    }
    if b.shift_sd > 0.0 {
        let exponent = if b.fixed_exponent && b.exponent_sd > 0.0 {
            let drift = if b.exponent_drift > 0.0 {
                format!(
                    " (past its sizes the line grows as N^{:.3}: the walk's exponent as measured at 8M and more)",
                    1.0 + b.exponent_drift
                )
            } else {
                String::new()
            };
            format!(
                ", and the exponent's uncertainty past the sizes (σ {:.3}, {} degrees of freedom, measured at 8M \
                 and more), carried to the count: the further the extrapolation, the wider{drift}",
                b.exponent_sd, b.exponent_dof
            )
        } else {
            String::new()
        };
        out.push(format!(
            "The interval is a prediction for this node's next reclaim: besides this run's own fit it carries how \
             far a whole run moves between runs, {:.1}% (measured per VM build with bench/run-scatter.sh; {} \
             degrees of freedom, runs − 1), for this run and the next{exponent}.",
            b.shift_sd * 100.0,
            b.shift_dof
        ));
    }
    out
}

/// The threshold table's note for a row.
pub(crate) fn row_label(r: &ThresholdRow) -> String {
    let label = match r.kind {
        None => return r.label.clone(),
        Some(RowKind::Round) => return String::new(),
        Some(RowKind::Target) => return "extrapolation target".into(),
        Some(RowKind::TotalTimeReaches) => "total time reaches threshold",
        Some(RowKind::StretchReaches) => "longest stretch reaches threshold",
    };
    if !r.governing {
        return label.into();
    }
    format!("{label}: {}", count_with_interval(r.dentries, r.interval.map(|i| i.low), r.interval.and_then(|i| i.high)))
}

/// The reclaim paths compared, in words: the most dangerous and by how
/// much, whether the ranking is settled, what each path left and did
/// under contention. (`analysis::verdict::most_dangerous` ranks them.)
pub(crate) fn danger_lines(d: &Danger) -> Vec<String> {
    let Some(top) = d.ranking.first() else { return Vec::new() };
    let by_count = d.ranked_by == RankedBy::LockupCount;
    let mut summary = vec![];
    let next = d.ranking.get(1);
    let mut lead = format!(
        "At {} dentries, {} is the most dangerous reclaim path on this kernel: it held the reclaiming CPU for \
         up to {} without a reschedule (whole reclaim {})",
        human(d.target),
        top.method,
        secs(top.max_gap_seconds),
        secs(top.reclaim_seconds)
    );
    if let Some(n) = next
        && n.max_gap_seconds > 0.0
    {
        lead += &format!(
            ", {:.1}× the next, {} ({})",
            top.max_gap_seconds / n.max_gap_seconds,
            n.method,
            secs(n.max_gap_seconds)
        );
    }
    lead.push('.');
    summary.push(lead);
    if let Some(n) = next
        && !by_count
        && top.max_gap_min_seconds <= n.max_gap_seconds
    {
        summary.push(format!(
            "The longest stretches overlap from one repetition to the next ({} {}–{}, {} {}–{}): at this size the \
                 ranking is not settled; measure larger sizes.",
            top.method,
            secs(top.max_gap_min_seconds),
            secs(top.max_gap_seconds),
            n.method,
            secs(n.max_gap_min_seconds),
            secs(n.max_gap_seconds)
        ));
    }
    if by_count {
        summary.push(format!(
            "Its fit reaches the soft-lockup threshold at about {} dentries per reclaim, the fewest of all paths ({}).",
            human(top.lockup_count.unwrap_or(0.0) as u64),
            d.ranking
                .iter()
                .map(|r| format!("{} {}", r.method, human(r.lockup_count.unwrap_or(0.0) as u64)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    summary.extend(d.ranking.iter().flat_map(path_lines));
    summary
}

fn secs(s: f64) -> String {
    format!("{:.3} s", s)
}

/// What one path left in the cache, and what contention did to it.
fn path_lines(r: &PathRow) -> Vec<String> {
    let mut out = vec![];
    if r.freed_fraction < 0.99 && !r.walk_only {
        out.push(format!(
            "{} freed only {:.1}% of the dentries created: its stretch covers only those, and the rest stay in \
             the cache.",
            r.method,
            r.freed_fraction * 100.0
        ));
    }
    if let (Some(g), Some(t)) = (r.contended_max_gap_seconds, r.contended_reclaim_seconds)
        && r.max_gap_seconds > 0.0
        && r.reclaim_seconds > 0.0
    {
        let mut l = format!(
            "With lookups contending on the other CPUs, {} took {} instead of {} ({:.2}×) and its longest \
                 stretch went from {} to {} ({:.2}×)",
            r.method,
            secs(t),
            secs(r.reclaim_seconds),
            t / r.reclaim_seconds,
            secs(r.max_gap_seconds),
            secs(g),
            g / r.max_gap_seconds
        );
        if t > 2.0 * r.reclaim_seconds && g < 2.0 * r.max_gap_seconds {
            l += ": the extra time was spent waiting, not holding the CPU";
        }
        l.push('.');
        out.push(l);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::interval::SizeValues;
    use crate::analysis::linearity;
    use crate::analysis::verdict::decide;
    use crate::analysis::verdict::fixtures::{inputs, row};
    use crate::analysis::verdict::most_dangerous;
    use crate::analysis::weighted::weighted_power;

    const TIME: [(f64, f64); 3] = [(3e6, 2.6), (10e6, 11.8), (36e6, 36.8)];
    const GAP: [(f64, f64); 3] = [(3e6, 0.36), (10e6, 2.8), (36e6, 4.2)];

    #[test]
    fn the_first_line_says_what_governs() {
        let v = decide(&inputs(&TIME, &GAP, 4.2 / 36.8));
        assert!(lines(&v, &[], None)[0].contains("yields"));
        let v = decide(&inputs(&TIME, &GAP, 0.98));
        assert!(lines(&v, &[], None)[0].contains("does not yield"));
    }

    /// Without an interval the verdict printed "398M (no
    /// interval) … (90% interval; …)".
    #[test]
    fn the_interval_parenthetical_appears_only_with_an_interval() {
        let v = decide(&inputs(&TIME, &GAP, 4.2 / 36.8));
        assert!(v.lockup_count_low.is_none());
        let l = lines(&v, &[], None);
        let line = l.iter().find(|l| l.starts_with("Predicted soft lockup")).unwrap();
        assert!(line.contains("(no interval)") && !line.contains("90% interval"), "{line}");
        // With repetitions there is a band, and the parenthetical.
        let sized = |pts: &[(f64, f64)]| -> Vec<SizeValues> {
            pts.iter().map(|&(n, v)| SizeValues { count: n, values: vec![v * 1.1, v / 1.1] }).collect()
        };
        let mut i = inputs(&TIME, &GAP, 4.2 / 36.8);
        i.gap = Some(linearity::test(None, weighted_power(&sized(&GAP)), None));
        i.time = Some(linearity::test(None, weighted_power(&sized(&TIME)), None));
        let v = decide(&i);
        assert!(v.lockup_count_low.is_some());
        let l = lines(&v, &[], None);
        let line = l.iter().find(|l| l.starts_with("Predicted soft lockup")).unwrap();
        assert!(line.contains("90% interval") && !line.contains("no interval"), "{line}");
        // The governing crossing's row carries the same interval.
        let row = v.thresholds.iter().find(|r| r.governing).unwrap();
        assert!(row_label(row).starts_with("longest stretch reaches threshold: "), "{}", row_label(row));
    }

    #[test]
    fn the_model_is_named_with_its_test() {
        let sized = |k: f64| -> Vec<SizeValues> {
            [5e5f64, 1e6, 2e6, 4e6]
                .iter()
                .map(|&n| {
                    let y = 9e-8 * n.powf(k) / 1e6f64.powf(k - 1.0);
                    SizeValues { count: n, values: vec![y * 1.05, y, y / 1.05] }
                })
                .collect()
        };
        let mut i = inputs(&TIME, &GAP, 0.1);
        i.gap = linearity::choose(&sized(1.0), crate::analysis::run_scatter::GAP);
        let l = lines(&decide(&i), &[], None);
        assert!(l.iter().any(|l| l.contains("linear model (c·N") && l.contains("does not stand above 1")), "{l:?}");
        assert!(l.iter().any(|l| l.starts_with("The power law (c·N^k) would put the edge at")), "{l:?}");
        i.gap = linearity::choose(&sized(1.3), crate::analysis::run_scatter::GAP);
        let l = lines(&decide(&i), &[], None);
        assert!(l.iter().any(|l| l.starts_with("Linearity is rejected")), "{l:?}");
        assert!(l.iter().any(|l| l.starts_with("The linear model (c·N) would put the edge at")), "{l:?}");
    }

    #[test]
    fn saved_sentences_are_printed_as_they_were() {
        let mut v = decide(&inputs(&TIME, &GAP, 0.1));
        v.saved_summary = vec!["as saved".into()];
        assert_eq!(lines(&v, &[], None), ["as saved"]);
        let old = ThresholdRow {
            dentries: 1.0,
            reclaim_seconds: None,
            max_gap_seconds: None,
            exceeds_by_time: false,
            exceeds_by_gap: false,
            kind: None,
            governing: false,
            interval: None,
            label: "old note".into(),
        };
        assert_eq!(row_label(&old), "old note");
    }

    #[test]
    fn the_most_dangerous_path_is_said_with_what_the_others_freed() {
        let d = most_dangerous(&[
            row("umount", 0.2, 1.0, None),
            row("ns-exit", 0.25, 1.0, Some(5e7)),
            row("memcg", 0.05, 0.4, None),
        ])
        .unwrap();
        let l = danger_lines(&d);
        assert!(l[0].starts_with("At 1M dentries, ns-exit is the most dangerous"), "{l:?}");
        assert!(l[0].contains("1.2× the next, umount"), "{l:?}");
        assert!(l.iter().any(|l| l.starts_with("memcg freed only 40.0%")));
        // 0.225–0.25 s against 0.18–0.2 s: apart, so no overlap warning.
        assert!(!l.iter().any(|l| l.contains("overlap")));
    }

    #[test]
    fn overlapping_spreads_and_waiting_under_contention_are_said() {
        let mut a = row("umount", 0.02, 1.0, None);
        a.max_gap_min_seconds = 0.005;
        let mut b = row("memcg", 0.015, 1.0, Some(2e13));
        b.contended_reclaim_seconds = Some(b.reclaim_seconds * 4.0);
        b.contended_max_gap_seconds = Some(0.016);
        let l = danger_lines(&most_dangerous(&[a, b]).unwrap());
        assert!(l.iter().any(|l| l.contains("overlap")), "{l:?}");
        assert!(l.iter().any(|l| l.contains("waiting, not holding the CPU")), "{l:?}");
    }

    #[test]
    fn ranked_by_prediction_the_counts_are_listed() {
        let d = most_dangerous(&[row("umount", 0.3, 1.0, Some(9e7)), row("drop-caches", 0.1, 1.0, Some(4e7))]).unwrap();
        let l = danger_lines(&d);
        assert!(l.iter().any(|l| l.ends_with("the fewest of all paths (drop-caches 40M, umount 90M).")), "{l:?}");
    }
}
