//! Thresholds and the verdict: at what dentry count does a reclaim hold a
//! CPU past the soft-lockup threshold, and which measurement predicts it.
//!
//! The watchdog fires when a CPU runs no other task for 2 × watchdog_thresh
//! seconds. A reclaim that calls `cond_resched()` inside its walk can take
//! far longer than that in total without tripping it; one that never yields
//! trips it as soon as its total time passes the threshold. So the count
//! that matters is given by the longest gap the probe saw when the kernel
//! yields, and by the total reclaim time when it does not.

use serde::{Deserialize, Serialize};

use super::fit::{LinearFit, PowerFit};
use super::interval::{Interval, count_with_interval};

/// Gap/total ratio at or above which the reclaim is taken not to yield.
pub const NO_YIELD_RATIO: f64 = 0.8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Governs {
    /// The kernel yields inside the walk: the longest stretch decides.
    LongestStretch,
    /// The walk never yields: its total time decides (the node-lockup report's model).
    TotalTime,
}

/// Everything the analysis needs from a sweep.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub time_linear: Option<LinearFit>,
    pub time_power: Option<PowerFit>,
    pub gap_power: Option<PowerFit>,
    /// max gap / reclaim time at the largest size (median over reps).
    pub gap_to_time_ratio: f64,
    pub largest_size: u64,
    pub watchdog_thresh_seconds: u64,
    pub extrapolate_to: u64,
    pub soft_lockups_observed: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdRow {
    pub dentries: f64,
    pub reclaim_seconds: Option<f64>,
    pub max_gap_seconds: Option<f64>,
    pub exceeds_by_time: bool,
    pub exceeds_by_gap: bool,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub soft_lockup_threshold_seconds: f64,
    pub governs: Governs,
    /// The count at which the longest stretch reaches the threshold.
    pub lockup_count_by_gap: Option<f64>,
    /// The count at which the total reclaim time reaches it.
    pub lockup_count_by_total_time: Option<f64>,
    /// The same from the straight-line fit (the node-lockup report's constant ns/dentry model).
    pub lockup_count_by_total_time_linear: Option<f64>,
    /// The count that governs on this kernel.
    pub lockup_count: Option<f64>,
    /// Its 90% interval, from the governing fit's uncertainty (exponent and
    /// prefactor together; see `analysis::interval`). `None` when the fit
    /// has no band (fewer than 3 points, or a result saved before
    /// intervals); `lockup_count_high` is also `None` when unbounded.
    #[serde(default)]
    pub lockup_count_low: Option<f64>,
    #[serde(default)]
    pub lockup_count_high: Option<f64>,
    /// 90% interval of the governing fit's exponent.
    #[serde(default)]
    pub governing_exponent_interval: Option<Interval>,
    pub extrapolate_to: u64,
    pub extrapolated_reclaim_seconds: Option<f64>,
    pub extrapolated_reclaim_seconds_linear: Option<f64>,
    pub extrapolated_max_gap_seconds: Option<f64>,
    /// 90% intervals of the two extrapolations above.
    #[serde(default)]
    pub extrapolated_reclaim_seconds_interval: Option<Interval>,
    #[serde(default)]
    pub extrapolated_max_gap_seconds_interval: Option<Interval>,
    pub superlinear: bool,
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub gap_to_time_ratio: f64,
    pub thresholds: Vec<ThresholdRow>,
    /// Plain sentences for people.
    pub summary: Vec<String>,
}

pub fn decide(i: &Inputs) -> Verdict {
    let thr = 2.0 * i.watchdog_thresh_seconds as f64;
    let by_time = i.time_power.and_then(|p| p.solve(thr));
    let by_gap = i.gap_power.and_then(|p| p.solve(thr));
    let governs = if i.gap_to_time_ratio >= NO_YIELD_RATIO { Governs::TotalTime } else { Governs::LongestStretch };
    let lockup_count = match governs {
        Governs::TotalTime => by_time,
        Governs::LongestStretch => by_gap,
    };
    let governing = match governs {
        Governs::TotalTime => i.time_power,
        Governs::LongestStretch => i.gap_power,
    };
    let count_interval = governing
        .and_then(|p| p.band.and_then(|b| b.count_reaching(&p, thr)))
        .map(|c| Interval { low: c.low, high: c.high.filter(|&h| h <= MAX_PREDICTED_COUNT) });
    let target = i.extrapolate_to as f64;
    let at_target = |f: Option<PowerFit>| f.and_then(|p| p.band.map(|b| b.value_at(&p, target)));
    let ext_time = i.time_power.map(|p| p.at(target));
    let ext_lin = i.time_linear.map(|l| l.at(target));
    let ext_gap = i.gap_power.map(|p| p.at(target));
    let superlinear = i.time_power.is_some_and(|p| p.superlinear());

    let mut counts: Vec<(f64, String)> =
        [1e7, 1e8, 5e8].iter().filter(|&&n| n < target).map(|&n| (n, String::new())).collect();
    counts.push((target, "extrapolation target".into()));
    let with_interval = |n: f64, label: &str, g: Governs| match (governs == g, count_interval) {
        (true, Some(c)) => format!("{label}: {}", count_with_interval(n, Some(c.low), c.high)),
        (true, None) => format!("{label}: {}", count_with_interval(n, None, None)),
        _ => label.to_string(),
    };
    if let Some(n) = by_time {
        counts.push((n, with_interval(n, "total time reaches threshold", Governs::TotalTime)));
    }
    if let Some(n) = by_gap {
        counts.push((n, with_interval(n, "longest stretch reaches threshold", Governs::LongestStretch)));
    }
    counts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let thresholds = counts
        .into_iter()
        .map(|(n, label)| {
            let t = i.time_power.map(|p| p.at(n));
            let g = i.gap_power.map(|p| p.at(n));
            ThresholdRow {
                dentries: n,
                reclaim_seconds: t,
                max_gap_seconds: g,
                exceeds_by_time: t.is_some_and(|t| t >= thr * 0.999_999),
                exceeds_by_gap: g.is_some_and(|g| g >= thr * 0.999_999),
                label,
            }
        })
        .collect();

    let mut summary = Vec::new();
    match governs {
        Governs::LongestStretch => summary.push(format!(
            "The kernel yields inside the reclaim walk: at the largest size the longest stretch without a \
             reschedule was {:.0}% of the whole reclaim, so the longest stretch, not the total time, decides \
             whether the soft-lockup watchdog ({thr:.0} s) fires.",
            i.gap_to_time_ratio * 100.0
        )),
        Governs::TotalTime => summary.push(format!(
            "The reclaim does not yield: the longest stretch was {:.0}% of the whole reclaim, so the total \
             reclaim time decides whether the soft-lockup watchdog ({thr:.0} s) fires (seed 000's model).",
            i.gap_to_time_ratio * 100.0
        )),
    }
    match lockup_count {
        Some(n) => summary.push(format!(
            "Predicted soft lockup from about {} dentries per reclaim on this kernel{}.",
            count_with_interval(n, count_interval.map(|c| c.low), count_interval.and_then(|c| c.high)),
            // Only an interval gets the interval's parenthetical (a calibration without one printed
            // "398M (no interval) … (90% interval; …)").
            if count_interval.is_some() {
                " (90% interval; status and the exporter use its low end)"
            } else {
                " (status and the exporter use this point: there is no interval)"
            }
        )),
        None => summary.push("No lockup count could be predicted: the fit does not grow with the count.".into()),
    }
    if governing.and_then(|p| p.band).is_some_and(|b| b.sizes == 2) {
        summary.push(
            "Only two sizes enter the fit: how far their means lie off the power law cannot be seen, so the \
             interval carries the repetitions' scatter only; run more sizes (--sizes auto) for an honest one."
                .into(),
        );
    }
    if let Some(b) = governing.and_then(|p| p.band).filter(|b| b.birge_ratio > 1.0) {
        summary.push(format!(
            "The sizes' means scatter around the power law {:.1}× more than their repetitions' spread \
             explains: the interval is widened by that misfit ({} degrees of freedom, one per size beyond two).",
            b.birge_ratio, b.dof
        ));
    }
    if let Some(b) = governing.and_then(|p| p.band).filter(|b| b.run_sd > 0.0) {
        summary.push(format!(
            "The interval also carries what one run cannot see: a size's mean scatters by {:.1}% between \
             independent runs (measured with bench/run-scatter.sh; {} degrees of freedom), and the fit \
             carries that through its {} sizes to the lockup count.",
            b.run_sd * 100.0,
            b.run_dof,
            b.sizes
        ));
    }
    if let (Governs::LongestStretch, Some(t), Some(g)) = (governs, by_time, by_gap) {
        summary.push(format!(
            "Total reclaim time alone would put the edge at {}; the measured stretch puts it at {} ({:.1}× {}).",
            crate::size::human(t as u64),
            crate::size::human(g as u64),
            if g > t { g / t } else { t / g },
            if g > t { "later" } else { "earlier" }
        ));
    }
    if superlinear && let Some(p) = i.time_power {
        summary.push(format!(
            "Reclaim cost is super-linear here (exponent {:.2}): ns per dentry grows with the count, so a \
                 constant-ns extrapolation under-estimates large caches.",
            p.exponent
        ));
    }
    if (i.largest_size as f64) * 10.0 < lockup_count.unwrap_or(0.0) {
        summary.push(format!(
            "The prediction extrapolates more than 10× beyond the largest size measured ({}); measure larger \
             sizes to narrow it.",
            crate::size::human(i.largest_size)
        ));
    }
    if i.soft_lockups_observed > 0 {
        summary
            .push(format!("The kernel itself logged {} soft lockup(s) during the reclaims.", i.soft_lockups_observed));
    }
    Verdict {
        soft_lockup_threshold_seconds: thr,
        governs,
        lockup_count_by_gap: by_gap,
        lockup_count_by_total_time: by_time,
        lockup_count_by_total_time_linear: i.time_linear.and_then(|l| l.solve(thr)),
        lockup_count,
        lockup_count_low: count_interval.map(|c| c.low),
        lockup_count_high: count_interval.and_then(|c| c.high),
        governing_exponent_interval: governing.and_then(|p| p.band.map(|b| b.exponent(&p))),
        extrapolate_to: i.extrapolate_to,
        extrapolated_reclaim_seconds: ext_time,
        extrapolated_reclaim_seconds_linear: ext_lin,
        extrapolated_max_gap_seconds: ext_gap,
        extrapolated_reclaim_seconds_interval: at_target(i.time_power),
        extrapolated_max_gap_seconds_interval: at_target(i.gap_power),
        superlinear,
        gap_to_time_ratio: i.gap_to_time_ratio,
        thresholds,
        summary,
    }
}

/// Predictions beyond this many dentries (10^12, more than any memory
/// holds) mean the fit barely grows: no prediction.
pub const MAX_PREDICTED_COUNT: f64 = 1e12;

/// One reclaim path at one size, for the comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathRow {
    pub method: String,
    pub target: u64,
    /// Share of the created dentries the path freed.
    pub freed_fraction: f64,
    pub reclaim_seconds: f64,
    /// Longest gap the probe saw on the reclaiming CPU (worst repetition).
    pub max_gap_seconds: f64,
    /// The same in the best repetition (the spread is `min..max`).
    pub max_gap_min_seconds: f64,
    /// Longest gap and median reclaim time with `--contend` lookup threads, when they ran.
    pub contended_max_gap_seconds: Option<f64>,
    pub contended_reclaim_seconds: Option<f64>,
    /// The count at which this path's fit reaches the soft-lockup threshold.
    pub lockup_count: Option<f64>,
    /// The path walks the dentries without freeing any (`inotify`): its
    /// freed share is 0 by design, and its count is the dentries walked.
    #[serde(default)]
    pub walk_only: bool,
}

/// Which reclaim path is the most dangerous on this kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Danger {
    pub method: String,
    pub target: u64,
    /// `lockup_count` when every path has a prediction, else `max_gap`.
    pub ranked_by: String,
    /// All paths, most dangerous first.
    pub ranking: Vec<PathRow>,
    pub summary: Vec<String>,
}

/// Ranks reclaim paths measured at the same size: the one that reaches the
/// soft-lockup threshold at the smallest count is the most dangerous; with
/// no prediction for every path (one size only), the one that held the
/// reclaiming CPU longest without a reschedule — what the watchdog sees.
pub fn most_dangerous(rows: &[PathRow]) -> Option<Danger> {
    let first = rows.first()?;
    let by_count =
        rows.iter().all(|r| r.lockup_count.is_some_and(|n| n.is_finite() && n > 0.0 && n <= MAX_PREDICTED_COUNT));
    let mut ranking = rows.to_vec();
    if by_count {
        ranking.sort_by(|a, b| {
            a.lockup_count.unwrap_or(f64::INFINITY).total_cmp(&b.lockup_count.unwrap_or(f64::INFINITY))
        });
    } else {
        ranking.sort_by(|a, b| b.max_gap_seconds.total_cmp(&a.max_gap_seconds));
    }
    let top = &ranking[0];
    let secs = |s: f64| format!("{:.3} s", s);
    let mut summary = vec![];
    let next = ranking.get(1);
    let mut lead = format!(
        "At {} dentries, {} is the most dangerous reclaim path on this kernel: it held the reclaiming CPU for \
         up to {} without a reschedule (whole reclaim {})",
        crate::size::human(first.target),
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
            crate::size::human(top.lockup_count.unwrap_or(0.0) as u64),
            ranking
                .iter()
                .map(|r| format!("{} {}", r.method, crate::size::human(r.lockup_count.unwrap_or(0.0) as u64)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for r in &ranking {
        if r.freed_fraction < 0.99 && !r.walk_only {
            summary.push(format!(
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
            summary.push(l);
        }
    }
    Some(Danger {
        method: top.method.clone(),
        target: first.target,
        ranked_by: if by_count { "lockup_count" } else { "max_gap" }.into(),
        ranking,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fit::{linear, power};

    fn inputs(time: &[(f64, f64)], gap: &[(f64, f64)], ratio: f64) -> Inputs {
        Inputs {
            time_linear: linear(time),
            time_power: power(time),
            gap_power: power(gap),
            gap_to_time_ratio: ratio,
            largest_size: time.last().unwrap().0 as u64,
            watchdog_thresh_seconds: 10,
            extrapolate_to: 1_500_000_000,
            soft_lockups_observed: 0,
        }
    }

    #[test]
    fn yielding_kernel_is_governed_by_the_gap() {
        // Synthetic, shaped like a tmpfs umount on 6.18: the walk yields, the gap grows slower than the time.
        let time = [(3e6, 2.6), (10e6, 11.8), (36e6, 36.8)];
        let gap = [(3e6, 0.36), (10e6, 2.8), (36e6, 4.2)];
        let v = decide(&inputs(&time, &gap, 4.2 / 36.8));
        assert_eq!(v.governs, Governs::LongestStretch);
        assert_eq!(v.lockup_count, v.lockup_count_by_gap);
        let (g, t) = (v.lockup_count_by_gap.unwrap(), v.lockup_count_by_total_time.unwrap());
        assert!(g > t, "the gap reaches 20 s later than the total: {g} vs {t}");
        assert!(v.summary[0].contains("yields"));
        assert_eq!(v.soft_lockup_threshold_seconds, 20.0);
        let row = v.thresholds.iter().find(|r| r.label == "extrapolation target").unwrap();
        assert_eq!(row.dentries, 1.5e9);
        assert!(row.exceeds_by_time);
    }

    /// Without an interval the verdict printed "398M (no
    /// interval) … (90% interval; …)".
    #[test]
    fn the_interval_parenthetical_appears_only_with_an_interval() {
        let time = [(3e6, 2.6), (10e6, 11.8), (36e6, 36.8)];
        let gap = [(3e6, 0.36), (10e6, 2.8), (36e6, 4.2)];
        let v = decide(&inputs(&time, &gap, 4.2 / 36.8));
        assert!(v.lockup_count_low.is_none());
        let line = v.summary.iter().find(|l| l.starts_with("Predicted soft lockup")).unwrap();
        assert!(line.contains("(no interval)") && !line.contains("90% interval"), "{line}");
        // With repetitions there is a band, and the parenthetical.
        use crate::analysis::interval::SizeValues;
        use crate::analysis::weighted::weighted_power;
        let sized = |pts: &[(f64, f64)]| -> Vec<SizeValues> {
            pts.iter().map(|&(n, v)| SizeValues { count: n, values: vec![v * 1.1, v / 1.1] }).collect()
        };
        let mut i = inputs(&time, &gap, 4.2 / 36.8);
        i.gap_power = weighted_power(&sized(&gap));
        i.time_power = weighted_power(&sized(&time));
        let v = decide(&i);
        assert!(v.lockup_count_low.is_some());
        let line = v.summary.iter().find(|l| l.starts_with("Predicted soft lockup")).unwrap();
        assert!(line.contains("90% interval") && !line.contains("no interval"), "{line}");
    }

    #[test]
    fn non_yielding_kernel_is_governed_by_total_time() {
        let time = [(1e6, 0.365), (2e6, 0.758), (5e6, 1.818), (10e6, 3.686)];
        let gap = [(1e6, 0.36), (2e6, 0.75), (5e6, 1.8), (10e6, 3.6)];
        let v = decide(&inputs(&time, &gap, 0.98));
        assert_eq!(v.governs, Governs::TotalTime);
        let n = v.lockup_count.unwrap();
        assert!(n > 45e6 && n < 65e6, "{n}");
        assert!(v.summary[0].contains("does not yield"));
        assert!(v.thresholds.windows(2).all(|w| w[0].dentries <= w[1].dentries));
    }

    fn row(method: &str, gap: f64, freed: f64, lockup: Option<f64>) -> PathRow {
        PathRow {
            method: method.into(),
            target: 1_000_000,
            freed_fraction: freed,
            reclaim_seconds: gap * 3.0,
            max_gap_seconds: gap,
            max_gap_min_seconds: gap * 0.9,
            contended_max_gap_seconds: None,
            contended_reclaim_seconds: None,
            lockup_count: lockup,
            walk_only: false,
        }
    }

    #[test]
    fn the_longest_stretch_is_the_most_dangerous_at_one_size() {
        let d = most_dangerous(&[
            row("umount", 0.2, 1.0, None),
            row("ns-exit", 0.25, 1.0, Some(5e7)),
            row("memcg", 0.05, 0.4, None),
        ])
        .unwrap();
        assert_eq!(d.method, "ns-exit");
        assert_eq!(d.ranked_by, "max_gap");
        assert_eq!(d.ranking.iter().map(|r| r.method.as_str()).collect::<Vec<_>>(), ["ns-exit", "umount", "memcg"]);
        assert!(d.summary[0].contains("1.2× the next, umount"), "{:?}", d.summary);
        assert!(d.summary.iter().any(|l| l.starts_with("memcg freed only 40.0%")));
        // 0.225–0.25 s against 0.18–0.2 s: apart, so no overlap warning.
        assert!(!d.summary.iter().any(|l| l.contains("overlap")));
    }

    #[test]
    fn overlapping_spreads_and_waiting_under_contention_are_said() {
        let mut a = row("umount", 0.02, 1.0, None);
        a.max_gap_min_seconds = 0.005;
        let mut b = row("memcg", 0.015, 1.0, Some(2e13));
        b.contended_reclaim_seconds = Some(b.reclaim_seconds * 4.0);
        b.contended_max_gap_seconds = Some(0.016);
        let d = most_dangerous(&[a, b]).unwrap();
        assert_eq!(d.ranked_by, "max_gap", "a prediction beyond 10^12 does not count");
        assert!(d.summary.iter().any(|l| l.contains("overlap")), "{:?}", d.summary);
        assert!(d.summary.iter().any(|l| l.contains("waiting, not holding the CPU")), "{:?}", d.summary);
    }

    #[test]
    fn predictions_win_when_every_path_has_one() {
        let d = most_dangerous(&[row("umount", 0.3, 1.0, Some(9e7)), row("drop-caches", 0.1, 1.0, Some(4e7))]).unwrap();
        assert_eq!(d.method, "drop-caches");
        assert_eq!(d.ranked_by, "lockup_count");
        assert!(most_dangerous(&[]).is_none());
    }
}
