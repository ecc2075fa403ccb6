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

/// Gap/total ratio at or above which the reclaim is taken not to yield.
pub const NO_YIELD_RATIO: f64 = 0.8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Governs {
    /// The kernel yields inside the walk: the longest stretch decides.
    LongestStretch,
    /// The walk never yields: its total time decides (seed 000's model).
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
    /// The same from the straight-line fit (seed 000's constant ns/dentry model).
    pub lockup_count_by_total_time_linear: Option<f64>,
    /// The count that governs on this kernel.
    pub lockup_count: Option<f64>,
    pub extrapolate_to: u64,
    pub extrapolated_reclaim_seconds: Option<f64>,
    pub extrapolated_reclaim_seconds_linear: Option<f64>,
    pub extrapolated_max_gap_seconds: Option<f64>,
    pub superlinear: bool,
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
    let target = i.extrapolate_to as f64;
    let ext_time = i.time_power.map(|p| p.at(target));
    let ext_lin = i.time_linear.map(|l| l.at(target));
    let ext_gap = i.gap_power.map(|p| p.at(target));
    let superlinear = i.time_power.is_some_and(|p| p.superlinear());

    let mut counts: Vec<(f64, String)> =
        [1e7, 1e8, 5e8].iter().filter(|&&n| n < target).map(|&n| (n, String::new())).collect();
    counts.push((target, "extrapolation target".into()));
    if let Some(n) = by_time {
        counts.push((n, "total time reaches threshold".into()));
    }
    if let Some(n) = by_gap {
        counts.push((n, "longest stretch reaches threshold".into()));
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
            "Predicted soft lockup from about {} dentries per reclaim on this kernel.",
            crate::size::human(n as u64)
        )),
        None => summary.push("No lockup count could be predicted: the fit does not grow with the count.".into()),
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
    if superlinear {
        if let Some(p) = i.time_power {
            summary.push(format!(
                "Reclaim cost is super-linear here (exponent {:.2}): ns per dentry grows with the count, so a \
                 constant-ns extrapolation under-estimates large caches.",
                p.exponent
            ));
        }
    }
    if (i.largest_size as f64) * 10.0 < lockup_count.unwrap_or(0.0) {
        summary.push(format!(
            "The prediction extrapolates more than 10× beyond the largest size measured ({}); measure larger \
             sizes to narrow it.",
            crate::size::human(i.largest_size)
        ));
    }
    if i.soft_lockups_observed > 0 {
        summary.push(format!(
            "The kernel itself logged {} soft lockup(s) during the reclaims.",
            i.soft_lockups_observed
        ));
    }
    Verdict {
        soft_lockup_threshold_seconds: thr,
        governs,
        lockup_count_by_gap: by_gap,
        lockup_count_by_total_time: by_time,
        lockup_count_by_total_time_linear: i.time_linear.and_then(|l| l.solve(thr)),
        lockup_count,
        extrapolate_to: i.extrapolate_to,
        extrapolated_reclaim_seconds: ext_time,
        extrapolated_reclaim_seconds_linear: ext_lin,
        extrapolated_max_gap_seconds: ext_gap,
        superlinear,
        gap_to_time_ratio: i.gap_to_time_ratio,
        thresholds,
        summary,
    }
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
        // SPEC facts: umount 3M 2.6 s / 10M 11.8 s / 36M 36.8 s; gaps 0.36 / 2.8 / 4.2 s.
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
}
