//! `__internal fit-waits --deadline SECONDS`: the model `reclaim
//! --victims` fits its victims' waits with, for a series measured
//! elsewhere (`deploy/local/kubelet-victim.py`'s pod starts and Lease
//! gaps). Reads `[[N, wait_seconds], ...]` as JSON on stdin; prints, as
//! JSON, what the victims' fits make of it ([`super::victims::analyse`]):
//! c·N unless the waits reject it (`analysis::linearity`), the longest
//! gap's run scatter carried into the band, and the count at which the
//! governing fit reaches the deadline, with its 90% interval. The points
//! of one N are one size's repetitions. The fit is in log space: a wait of
//! 0 or less cannot enter it, and is listed as left out.

use std::io::Read;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::analysis::fit::PowerFit;
use crate::analysis::interval::{Interval, SizeValues};
use crate::analysis::linearity::{self, LinearityTest, Shape};
use crate::analysis::run_scatter;

/// Its name under `__internal`.
pub(crate) const FIT_WAITS_COMMAND: &str = "__fit-waits";

/// Its internal command; it also answers to `fit-waits`, its name before
/// every internal command took the `__` prefix (deploy/local's script
/// calls it so).
pub(crate) const FIT_WAITS_ENTRY: crate::sys::internal::Entry<FitWaitsArgs> = crate::sys::internal::Entry {
    name: FIT_WAITS_COMMAND,
    about: "Fits (N, wait) points, JSON on stdin, as 'reclaim --victims' fits its victims' waits, and prints the fit \
            and the count reaching --deadline (for deploy/local/kubelet-victim.py)",
    aliases: &["fit-waits"],
    run: |a| a.run(),
};

#[derive(Debug, clap::Args)]
pub(crate) struct FitWaitsArgs {
    /// The deadline the waits are projected to, in seconds.
    #[arg(long, value_name = "SECONDS")]
    pub deadline: f64,
}

impl FitWaitsArgs {
    pub(crate) fn run(&self) -> Result<()> {
        let mut input = String::new();
        std::io::stdin().read_to_string(&mut input).context("reading the points from stdin")?;
        let fitted = fit_text(&input, self.deadline)?;
        println!("{}", serde_json::to_string_pretty(&fitted)?);
        Ok(())
    }
}

/// A count and a wait in seconds.
type Point = (f64, f64);

/// One size's waits, in the order given.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Size {
    pub count: f64,
    pub waits: Vec<f64>,
}

/// What the victims' model makes of a series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Fitted {
    /// The model that governs (`None`: nothing could be fitted).
    pub model: Option<Shape>,
    /// The governing fit: wait = coefficient·N^exponent, in seconds.
    pub fit: Option<PowerFit>,
    pub linear: Option<PowerFit>,
    pub power: Option<PowerFit>,
    pub linearity: Option<LinearityTest>,
    /// The scatter between runs carried into the bands (σ of ln wait and
    /// its degrees of freedom): the longest gap's, as the victims' fits.
    pub run_scatter_sd: f64,
    pub run_scatter_dof: u32,
    pub deadline_seconds: f64,
    /// Where the governing fit reaches the deadline.
    pub count: Option<f64>,
    /// Its 90% interval (`high` `null`: unbounded).
    pub interval: Option<Interval>,
    /// Why there is no count, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The sizes fitted, ascending.
    pub sizes: Vec<Size>,
    /// Points the log-space fit cannot take: a wait of 0 or less.
    pub left_out: Vec<Point>,
}

/// [`fit`] of the points in `input` (JSON `[[N, wait_seconds], ...]`).
pub(crate) fn fit_text(input: &str, deadline_seconds: f64) -> Result<Fitted> {
    let points: Vec<Point> =
        serde_json::from_str(input).context("the points on stdin: want JSON [[N, wait_seconds], ...]")?;
    fit(&points, deadline_seconds)
}

/// The victims' fit of `points` (N, wait in seconds) and the count at
/// which it reaches `deadline_seconds`.
pub(crate) fn fit(points: &[Point], deadline_seconds: f64) -> Result<Fitted> {
    if !(deadline_seconds.is_finite() && deadline_seconds > 0.0) {
        bail!("--deadline {deadline_seconds}: want a number of seconds above 0");
    }
    if let Some((n, w)) = points.iter().find(|(n, w)| !(n.is_finite() && *n > 0.0 && w.is_finite())) {
        bail!("the point [{n}, {w}]: want a count above 0 and a finite wait in seconds");
    }
    let (kept, left_out): (Vec<Point>, Vec<Point>) = points.iter().partition(|(_, w)| *w > 0.0);
    let mut sizes: Vec<Size> = Vec::new();
    for (n, w) in kept {
        match sizes.iter_mut().find(|s| s.count == n) {
            Some(s) => s.waits.push(w),
            None => sizes.push(Size { count: n, waits: vec![w] }),
        }
    }
    sizes.sort_by(|a, b| a.count.total_cmp(&b.count));
    let values: Vec<SizeValues> = sizes.iter().map(|s| SizeValues { count: s.count, values: s.waits.clone() }).collect();
    // As the victims' fits (`super::victims::analyse`): the victims' own
    // run scatter.
    let rs = run_scatter::VICTIM;
    let reach = linearity::count_reaching(&values, rs, deadline_seconds);
    let fit = reach.and_then(|r| r.model.governing());
    let count = reach.and_then(|r| r.count);
    let why = match (&reach, count) {
        (None, _) => Some("no wait above 0 to fit".to_string()),
        (Some(_), None) => Some(format!("the governing fit does not reach {deadline_seconds} s")),
        _ => None,
    };
    Ok(Fitted {
        model: reach.map(|r| r.model.test.governs),
        fit,
        linear: reach.and_then(|r| r.model.linear),
        power: reach.and_then(|r| r.model.power),
        linearity: reach.map(|r| r.model.test),
        run_scatter_sd: rs.sd,
        run_scatter_dof: rs.dof,
        deadline_seconds,
        count,
        interval: reach.and_then(|r| r.interval),
        why,
        sizes,
        left_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recorded kubelet run (docs/results/kubelet-victim-6.18.json), as
    /// deploy/local/kubelet-victim.py hands it over: per repetition, the
    /// target size and the wait the reclaim added to a pod start (the
    /// longest start during it over the control's `base` start: `longest`
    /// or `median`, the repetition's field `wait`); the deadline, the 5 s
    /// startup SLO less the repetitions' median of that control start.
    fn recorded(wait: &str, base: &str) -> (String, f64) {
        let v: serde_json::Value =
            serde_json::from_str(include_str!("../../../docs/results/kubelet-victim-6.18.json")).unwrap();
        let reps = v["reps"].as_array().unwrap();
        let points: Vec<Point> =
            reps.iter().map(|r| (r["size"].as_f64().unwrap(), r[wait].as_f64().unwrap())).collect();
        let bases: Vec<f64> = reps.iter().map(|r| r["control"][base].as_f64().unwrap()).collect();
        (serde_json::to_string(&points).unwrap(), 5.0 - crate::stats::median(&bases))
    }

    /// The fit of one recorded measure, checked against itself: 4 sizes of
    /// 3 repetitions, the count where the governing fit reaches the
    /// deadline and inside its interval, the run scatter in the band.
    fn fitted(wait: &str, base: &str) -> Fitted {
        let (input, deadline) = recorded(wait, base);
        let f = fit_text(&input, deadline).unwrap();
        let per_size: Vec<(f64, usize)> = f.sizes.iter().map(|s| (s.count, s.waits.len())).collect();
        assert_eq!(per_size, [(1e6, 3), (2e6, 3), (4e6, 3), (8e6, 3)]);
        assert!(f.left_out.is_empty(), "{:?}", f.left_out);
        let (fit, count, i) = (f.fit.unwrap(), f.count.unwrap(), f.interval.unwrap());
        assert_eq!(Some(fit), if f.model == Some(Shape::Linear) { f.linear } else { f.power });
        assert!((fit.at(count) - deadline).abs() < 1e-9 * deadline, "{fit:?} at {count}");
        assert!(i.low < count && i.high.is_none_or(|h| count < h), "{count} in {i:?}");
        assert!(fit.band.is_some_and(|b| b.shift_sd == run_scatter::VICTIM.sd), "the run scatter carried: {fit:?}");
        f
    }

    /// docs/deploy.md, "The fit": like against like (over the control's
    /// longest start), the waits grow faster than N (linearity rejected),
    /// and the power law puts the 5 s SLO at 13.1M.
    #[test]
    fn the_recorded_pod_starts_reach_the_slo_where_docs_say() {
        let f = fitted("pod_start_over_control_longest_seconds", "longest_seconds");
        assert_eq!(f.model, Some(Shape::PowerLaw));
        let t = f.linearity.unwrap();
        assert!(t.rejected && t.exponent_interval.is_some_and(|i| i.low > 1.0), "{t:?}");
        assert!((f.count.unwrap() / 1e6 - 13.1).abs() < 0.05, "{:?}", f.count);
        // Over the control's median start the four sizes cannot test
        // linearity (the exponent's interval reaches past 1.1): the power
        // law governs, at 28.0M, with a wide interval.
        let m = fitted("pod_start_wait_seconds", "median_seconds");
        let t = m.linearity.unwrap();
        assert!(m.model == Some(Shape::PowerLaw) && !t.rejected && !t.testable, "{t:?}");
        assert!((m.count.unwrap() / 1e6 - 28.0).abs() < 0.05, "{:?}", m.count);
    }

    #[test]
    fn waits_of_zero_or_less_are_left_out_and_listed() {
        let pts = [(1e6, 0.1), (1e6, -0.05), (2e6, 0.2), (2e6, 0.0), (4e6, 0.4), (4e6, 0.41)];
        let f = fit(&pts, 5.0).unwrap();
        assert_eq!(f.left_out, vec![(1e6, -0.05), (2e6, 0.0)]);
        assert_eq!(f.sizes.iter().map(|s| s.waits.len()).sum::<usize>(), 4);
        let none = fit(&[(1e6, -0.1), (2e6, 0.0)], 5.0).unwrap();
        assert_eq!((none.fit, none.count, none.why.as_deref()), (None, None, Some("no wait above 0 to fit")));
    }

    #[test]
    fn bad_input_is_one_clear_error() {
        let e = fit_text("{\"points\": 3}", 5.0).unwrap_err();
        assert!(format!("{e:#}").contains("want JSON [[N, wait_seconds], ...]"), "{e:#}");
        let e = fit(&[(0.0, 1.0)], 5.0).unwrap_err();
        assert!(e.to_string().contains("want a count above 0"), "{e}");
        assert!(fit(&[(1e6, 1.0)], 0.0).unwrap_err().to_string().contains("--deadline 0"));
    }
}
