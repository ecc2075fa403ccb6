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
use super::interval::{Band, Interval};
use super::linearity::{LinearityTest, Model, Shape};

/// Gap/total ratio at or above which the reclaim is taken not to yield.
pub(crate) const NO_YIELD_RATIO: f64 = 0.8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Governs {
    /// The kernel yields inside the walk: the longest stretch decides.
    LongestStretch,
    /// The walk never yields: its total time decides (the node-lockup report's model).
    TotalTime,
}

/// Everything the analysis needs from a sweep.
#[derive(Debug, Clone)]
pub(crate) struct Inputs {
    /// The straight line through the times (the node-lockup report's model).
    pub time_linear: Option<LinearFit>,
    /// The reclaim time's and the longest stretch's fits, linear unless
    /// the run rejected it ([`super::linearity`]).
    pub time: Option<Model>,
    pub gap: Option<Model>,
    /// max gap / reclaim time at the largest size (median over reps).
    pub gap_to_time_ratio: f64,
    pub largest_size: u64,
    pub watchdog_thresh_seconds: u64,
    pub extrapolate_to: u64,
    pub soft_lockups_observed: usize,
}

/// Why a count is a row of the threshold table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RowKind {
    /// A round count (10M, 100M, 500M) under the target.
    Round,
    /// The extrapolation target (`--extrapolate`).
    Target,
    /// Where the reclaim time's fit reaches the threshold.
    TotalTimeReaches,
    /// Where the longest stretch's fit reaches it.
    StretchReaches,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ThresholdRow {
    pub dentries: f64,
    pub reclaim_seconds: Option<f64>,
    pub max_gap_seconds: Option<f64>,
    pub exceeds_by_time: bool,
    pub exceeds_by_gap: bool,
    /// Why the row is there (`None`: saved before kinds, see `label`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<RowKind>,
    /// A crossing row of the quantity that governs: the count's interval
    /// follows (`interval` `None`: it has none).
    #[serde(default)]
    pub governing: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// The row's note as results saved before kinds wrote it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
}

/// The count the model that does not govern puts the edge at, shown beside.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct ShapeCount {
    pub shape: Shape,
    pub count: Option<f64>,
    pub interval: Option<Interval>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Verdict {
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
    /// Its 90% interval, from the governing fit's uncertainty (the
    /// prefactor, and the exponent when the power law governs; see
    /// `analysis::interval`). `None` when the fit has no band (too few
    /// points, or a result saved before intervals); `lockup_count_high` is
    /// also `None` when unbounded.
    #[serde(default)]
    pub lockup_count_low: Option<f64>,
    #[serde(default)]
    pub lockup_count_high: Option<f64>,
    /// 90% interval of the governing fit's exponent (1–1 for the linear model).
    #[serde(default)]
    pub governing_exponent_interval: Option<Interval>,
    /// The model the counts above come from (results saved before the
    /// linear model: the power law).
    #[serde(default = "power_law")]
    pub shape: Shape,
    /// The governing quantity's linearity test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linearity: Option<LinearityTest>,
    /// The other model's count for the governing quantity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_shape: Option<ShapeCount>,
    /// The governing fit's band: what its interval carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub governing_band: Option<Band>,
    /// The reclaim time's free power-law exponent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_exponent: Option<f64>,
    #[serde(default)]
    pub largest_size: u64,
    #[serde(default)]
    pub soft_lockups_observed: usize,
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
    /// The sentences results saved before the verdict kept numbers only
    /// carry; new results are put in words by the renderer.
    #[serde(default, rename = "summary", skip_serializing_if = "Vec::is_empty")]
    pub saved_summary: Vec<String>,
}

fn power_law() -> Shape {
    Shape::PowerLaw
}

/// The 90% interval of the count at which `fit` reaches `thr`, its high
/// end dropped past [`MAX_PREDICTED_COUNT`].
fn interval_reaching(fit: Option<PowerFit>, thr: f64) -> Option<Interval> {
    fit.and_then(|p| p.band.and_then(|b| b.count_reaching(&p, thr)))
        .map(|c| Interval { low: c.low, high: c.high.filter(|&h| h <= MAX_PREDICTED_COUNT) })
}

pub(crate) fn decide(i: &Inputs) -> Verdict {
    let thr = 2.0 * i.watchdog_thresh_seconds as f64;
    let (time, gap) = (i.time.and_then(|m| m.governing()), i.gap.and_then(|m| m.governing()));
    let by_time = time.and_then(|p| p.solve(thr));
    let by_gap = gap.and_then(|p| p.solve(thr));
    let governs = if i.gap_to_time_ratio >= NO_YIELD_RATIO { Governs::TotalTime } else { Governs::LongestStretch };
    let (lockup_count, model) = match governs {
        Governs::TotalTime => (by_time, i.time),
        Governs::LongestStretch => (by_gap, i.gap),
    };
    let governing = model.and_then(|m| m.governing());
    let count_interval = interval_reaching(governing, thr);
    let target = i.extrapolate_to as f64;
    let at_target = |f: Option<PowerFit>| f.and_then(|p| p.band.map(|b| b.value_at(&p, target)));
    let time_power = i.time.and_then(|m| m.power);
    let crossings = Crossings { by_time, by_gap, governs, interval: count_interval };
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
        shape: model.map_or(Shape::PowerLaw, |m| m.test.governs),
        linearity: model.map(|m| m.test),
        other_shape: model.and_then(|m| {
            let o = m.other()?;
            let shape = if m.test.governs == Shape::Linear { Shape::PowerLaw } else { Shape::Linear };
            Some(ShapeCount { shape, count: o.solve(thr), interval: interval_reaching(Some(o), thr) })
        }),
        governing_band: governing.and_then(|p| p.band),
        time_exponent: time_power.map(|p| p.exponent),
        largest_size: i.largest_size,
        soft_lockups_observed: i.soft_lockups_observed,
        extrapolate_to: i.extrapolate_to,
        extrapolated_reclaim_seconds: time.map(|p| p.at(target)),
        extrapolated_reclaim_seconds_linear: i.time_linear.map(|l| l.at(target)),
        extrapolated_max_gap_seconds: gap.map(|p| p.at(target)),
        extrapolated_reclaim_seconds_interval: at_target(time),
        extrapolated_max_gap_seconds_interval: at_target(gap),
        superlinear: time_power.is_some_and(|p| p.superlinear()),
        gap_to_time_ratio: i.gap_to_time_ratio,
        thresholds: threshold_rows(time, gap, target, thr, &crossings),
        saved_summary: Vec::new(),
    }
}

/// Where the two fits reach the threshold, and which one governs.
struct Crossings {
    by_time: Option<f64>,
    by_gap: Option<f64>,
    governs: Governs,
    interval: Option<Interval>,
}

/// The threshold table: round counts under the target, the target, and
/// the two crossings, in order of count.
fn threshold_rows(
    time: Option<PowerFit>,
    gap: Option<PowerFit>,
    target: f64,
    thr: f64,
    c: &Crossings,
) -> Vec<ThresholdRow> {
    let mut counts: Vec<(f64, RowKind, bool)> =
        [1e7, 1e8, 5e8].iter().filter(|&&n| n < target).map(|&n| (n, RowKind::Round, false)).collect();
    counts.push((target, RowKind::Target, false));
    if let Some(n) = c.by_time {
        counts.push((n, RowKind::TotalTimeReaches, c.governs == Governs::TotalTime));
    }
    if let Some(n) = c.by_gap {
        counts.push((n, RowKind::StretchReaches, c.governs == Governs::LongestStretch));
    }
    counts.sort_by(|a, b| a.0.total_cmp(&b.0));
    counts
        .into_iter()
        .map(|(n, kind, governing)| {
            let t = time.map(|p| p.at(n));
            let g = gap.map(|p| p.at(n));
            ThresholdRow {
                dentries: n,
                reclaim_seconds: t,
                max_gap_seconds: g,
                exceeds_by_time: t.is_some_and(|t| t >= thr * 0.999_999),
                exceeds_by_gap: g.is_some_and(|g| g >= thr * 0.999_999),
                kind: Some(kind),
                governing,
                interval: if governing { c.interval } else { None },
                label: String::new(),
            }
        })
        .collect()
}

/// Predictions beyond this many dentries (10^12, more than any memory
/// holds) mean the fit barely grows: no prediction.
pub(crate) const MAX_PREDICTED_COUNT: f64 = 1e12;

/// One reclaim path at one size, for the comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PathRow {
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
pub(crate) struct Danger {
    pub method: String,
    pub target: u64,
    /// By the lockup count when every path has a prediction, else by the
    /// longest stretch.
    pub ranked_by: RankedBy,
    /// All paths, most dangerous first.
    pub ranking: Vec<PathRow>,
    /// The comparison in words: empty here (numbers only); the reclaim's
    /// renderer writes them (`bench/reclaim/render/verdict.rs`) before the
    /// result is printed or saved.
    pub summary: Vec<String>,
}

/// What the reclaim paths were ranked by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RankedBy {
    /// The count at which each path's fit reaches the threshold.
    LockupCount,
    /// The longest stretch each path held the CPU at this size.
    MaxGap,
}

/// Ranks reclaim paths measured at the same size: the one that reaches the
/// soft-lockup threshold at the smallest count is the most dangerous; with
/// no prediction for every path (one size only), the one that held the
/// reclaiming CPU longest without a reschedule — what the watchdog sees.
pub(crate) fn most_dangerous(rows: &[PathRow]) -> Option<Danger> {
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
    Some(Danger {
        method: top.method.clone(),
        target: first.target,
        ranked_by: if by_count { RankedBy::LockupCount } else { RankedBy::MaxGap },
        ranking,
        summary: Vec::new(),
    })
}

/// What the verdict's tests, here and in its renderer, start from.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use crate::analysis::fit::{linear, power};
    use crate::analysis::linearity;

    /// The verdict's inputs from (count, value) points of the reclaim time
    /// and the longest stretch, and their ratio at the largest size.
    pub(crate) fn inputs(time: &[(f64, f64)], gap: &[(f64, f64)], ratio: f64) -> Inputs {
        Inputs {
            time_linear: linear(time),
            time: Some(linearity::test(None, power(time), None)),
            gap: Some(linearity::test(None, power(gap), None)),
            gap_to_time_ratio: ratio,
            largest_size: time.last().unwrap().0 as u64,
            watchdog_thresh_seconds: 10,
            extrapolate_to: 1_500_000_000,
            soft_lockups_observed: 0,
        }
    }

    /// One reclaim path at 1M: its longest stretch (0.9 of it in the best
    /// repetition), three times that as its reclaim time, the share it
    /// freed, its prediction.
    pub(crate) fn row(method: &str, gap: f64, freed: f64, lockup: Option<f64>) -> PathRow {
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
}

#[cfg(test)]
mod tests {
    use super::fixtures::{inputs, row};
    use super::*;
    use crate::analysis::linearity;

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
        assert_eq!(v.soft_lockup_threshold_seconds, 20.0);
        let row = v.thresholds.iter().find(|r| r.kind == Some(RowKind::Target)).unwrap();
        assert_eq!(row.dentries, 1.5e9);
        assert!(row.exceeds_by_time);
        // Only the governing crossing is marked as such.
        let marked: Vec<_> = v.thresholds.iter().filter(|r| r.governing).map(|r| r.kind).collect();
        assert_eq!(marked, [Some(RowKind::StretchReaches)]);
        assert!(v.saved_summary.is_empty(), "no sentences in the analysis");
    }

    /// The linear model governs a linear series, the verdict says so and
    /// keeps the power law's count beside it; its interval is the narrow one.
    #[test]
    fn the_linear_model_governs_and_the_power_law_is_kept_beside_it() {
        use crate::analysis::interval::SizeValues;
        let sized = |c: f64| -> Vec<SizeValues> {
            [5e5, 1e6, 2e6, 4e6]
                .iter()
                .map(|&n| SizeValues { count: n, values: vec![c * n * 1.1, c * n, c * n / 1.1] })
                .collect()
        };
        let mut i = inputs(&[(1.0, 1.0), (2.0, 2.0)], &[(1.0, 1.0), (2.0, 2.0)], 0.1);
        i.time = linearity::choose(&sized(7e-7), crate::analysis::run_scatter::TIME);
        i.gap = linearity::choose(&sized(9e-8), crate::analysis::run_scatter::GAP);
        let v = decide(&i);
        assert_eq!((v.governs, v.shape), (Governs::LongestStretch, Shape::Linear));
        // c·N, or earlier where the deep sweep's drift is carried past the sizes.
        let n = v.lockup_count.unwrap();
        let drift = crate::analysis::run_scatter::GAP.exponent_drift;
        assert!(n <= 20.0 / 9e-8 * (1.0 + 1e-6) && (drift > 0.0 || (n / (20.0 / 9e-8) - 1.0).abs() < 1e-6), "{n}");
        let (lo, hi) = (v.lockup_count_low.unwrap(), v.lockup_count_high.unwrap());
        assert!(lo < n && n < hi && hi / lo < 2.5, "{lo} {hi}");
        let other = v.other_shape.unwrap();
        assert_eq!(other.shape, Shape::PowerLaw);
        assert!(other.interval.unwrap().high.is_none_or(|h| h / other.interval.unwrap().low > hi / lo));
        // The linear model's exponent is 1, uncertain beyond the sizes by
        // what the deep sweep measured.
        let e = v.governing_exponent_interval.unwrap();
        let mid = 1.0 + drift;
        assert!(e.low < mid && e.high.is_some_and(|h| h > mid && (h + e.low - 2.0 * mid).abs() < 1e-12), "{e:?}");
        assert!(v.linearity.is_some_and(|t| !t.rejected));
    }

    #[test]
    fn non_yielding_kernel_is_governed_by_total_time() {
        let time = [(1e6, 0.365), (2e6, 0.758), (5e6, 1.818), (10e6, 3.686)];
        let gap = [(1e6, 0.36), (2e6, 0.75), (5e6, 1.8), (10e6, 3.6)];
        let v = decide(&inputs(&time, &gap, 0.98));
        assert_eq!(v.governs, Governs::TotalTime);
        let n = v.lockup_count.unwrap();
        assert!(n > 45e6 && n < 65e6, "{n}");
        assert!(v.thresholds.windows(2).all(|w| w[0].dentries <= w[1].dentries));
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
        assert_eq!(d.ranked_by, RankedBy::MaxGap);
        assert_eq!(d.ranking.iter().map(|r| r.method.as_str()).collect::<Vec<_>>(), ["ns-exit", "umount", "memcg"]);
        assert!(d.summary.is_empty(), "no sentences in the analysis");
    }

    #[test]
    fn a_prediction_beyond_any_memory_does_not_rank() {
        let d = most_dangerous(&[row("umount", 0.02, 1.0, None), row("memcg", 0.015, 1.0, Some(2e13))]).unwrap();
        assert_eq!(d.ranked_by, RankedBy::MaxGap);
        assert_eq!(d.method, "umount");
    }

    #[test]
    fn predictions_win_when_every_path_has_one() {
        let d = most_dangerous(&[row("umount", 0.3, 1.0, Some(9e7)), row("drop-caches", 0.1, 1.0, Some(4e7))]).unwrap();
        assert_eq!(d.method, "drop-caches");
        assert_eq!(d.ranked_by, RankedBy::LockupCount);
        assert!(most_dangerous(&[]).is_none());
    }
}
