//! Linear unless the run rejects it: the model a prediction is made with.
//!
//! A reclaim walk visits each dentry once (`d_walk` in fs/dcache.c), so
//! its cost, and the longest stretch of it without a reschedule, grows in
//! proportion to the count: value = c·N, the power law with its exponent
//! fixed at 1. Only the prefactor c is then uncertain (with the run
//! scatter carried whole: a shift common to a run's sizes is what c takes
//! up), and a prediction 50×
//! beyond the largest size is as certain as c, not as the exponent carried
//! two decades (three quick sweeps on one VM gave power-law intervals 8–54×
//! wide with points within 1.43×, all of it the exponent's uncertainty).
//!
//! Every run tests the model on its own data: the free power law is fitted
//! beside it, and linearity is rejected when that exponent's 90% interval
//! (carrying the run-to-run scatter, as every prediction does) lies wholly
//! above 1: a one-sided test at the 5% level ([`REJECT_LEVEL`]). Then the
//! power law governs, and its wider, earlier interval is the prediction.
//! So it does when the run cannot test: when the interval reaches above
//! [`SUPERLINEAR_EXPONENT`] (1.1), a super-linear walk could hide in it
//! (a recorded guest run with exponent 1.23, interval −0.9–3.3, put the
//! linear model's low end past the power law's point) — unless the
//! exponent was measured past the sizes on this run's kernel
//! (`run_scatter::EXPONENT_MEASURED_ON`) and the run's own interval holds
//! it: then that measurement, not the run's few sizes, pins the exponent,
//! and the linear model governs carrying it (1 + drift, with its σₖ: the
//! band still grows with extrapolation). The run is then `pinned`, and
//! says so.
//! The test is one-sided because only super-linear growth makes the linear
//! model err late; an exponent under 1 comes from fixed costs at the small
//! sizes (the probe's tick, a first page of slab), which the linear model
//! carries into an earlier count, the safe side. Its misfit widens the
//! linear model's band (the Birge ratio, as for the power law).
//!
//! Both fits are kept; the verdict names the one that governs. The same
//! machinery fits any "longest wait against N" series: [`count_reaching`].

use serde::{Deserialize, Serialize};

use super::fit::{PowerFit, SUPERLINEAR_EXPONENT};
use super::interval::{Band, Interval, SizeValues};
use super::run_scatter::RunScatter;
use super::weighted::{weighted_logs, weighted_power};

/// One-sided level of the linearity test: rejected when the free
/// exponent's 90% interval lies wholly above 1.
pub(crate) const REJECT_LEVEL: f64 = 0.05;

fn yes() -> bool {
    true
}

/// Which model a prediction is made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Shape {
    /// value = c·N (the power law with its exponent fixed at 1).
    Linear,
    /// value = c·N^k, k fitted.
    PowerLaw,
}

/// The test of linearity on one series, and its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct LinearityTest {
    /// The free power law's exponent and its 90% interval (with the run
    /// scatter); `None` without a band (fewer than 3 points): untested.
    /// NaN (saved as null) when there was no power law to test, e.g. every
    /// size's longest gap under the noise floor.
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub exponent: f64,
    pub exponent_interval: Option<Interval>,
    /// One-sided level ([`REJECT_LEVEL`]).
    pub level: f64,
    pub rejected: bool,
    /// Whether the run could have seen a super-linear walk: the exponent's
    /// interval reaches no higher than [`SUPERLINEAR_EXPONENT`]. A run that
    /// cannot (too few or too scattered sizes) is not taken as linear.
    #[serde(default = "yes")]
    pub testable: bool,
    /// An untestable run whose exponent the measurement past the sizes
    /// pinned (its kernel's, inside the run's own interval): the linear
    /// model governs, carrying that exponent.
    #[serde(default)]
    pub pinned: bool,
    /// The model that governs: the power law when rejected (or when no
    /// linear fit could be made), else the linear one.
    pub governs: Shape,
}

/// Both fits of one series and which one governs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Model {
    /// The linear model: a [`PowerFit`] with exponent 1 whose band has a
    /// fixed exponent.
    pub linear: Option<PowerFit>,
    pub power: Option<PowerFit>,
    pub test: LinearityTest,
}

impl Model {
    /// The fit predictions are made with.
    pub(crate) fn governing(&self) -> Option<PowerFit> {
        match self.test.governs {
            Shape::Linear => self.linear,
            Shape::PowerLaw => self.power,
        }
    }

    /// The other fit, shown beside it.
    pub(crate) fn other(&self) -> Option<PowerFit> {
        match self.test.governs {
            Shape::Linear => self.power,
            Shape::PowerLaw => self.linear,
        }
    }
}

/// Weighted fit of value = c·N (ln value = ln c + ln N), weighted as
/// [`weighted_power`] weighs, with its band (`Band::from_points` with the
/// exponent fixed: N − 1 degrees of freedom, widened by the sizes' misfit
/// with k − 1). `None` without a positive value.
pub(crate) fn weighted_linear(sizes: &[SizeValues]) -> Option<PowerFit> {
    let logs = weighted_logs(sizes);
    let pts: Vec<(f64, f64, f64)> = logs.iter().flat_map(|(x, v, w)| v.iter().map(move |y| (*x, *y, *w))).collect();
    let sum_w: f64 = pts.iter().map(|p| p.2).sum();
    if pts.is_empty() || sum_w <= 0.0 {
        return None;
    }
    let ln_c = pts.iter().map(|p| p.2 * (p.1 - p.0)).sum::<f64>() / sum_w;
    let y_mean = pts.iter().map(|p| p.2 * p.1).sum::<f64>() / sum_w;
    let syy_w: f64 = pts.iter().map(|p| p.2 * (p.1 - y_mean).powi(2)).sum();
    let ssr: f64 = pts.iter().map(|p| p.2 * (p.1 - p.0 - ln_c).powi(2)).sum();
    let band = Band::from_points(&logs, |x, y| y - x - ln_c, true);
    Some(PowerFit {
        coefficient: ln_c.exp(),
        exponent: 1.0,
        r2: if syy_w > 0.0 { 1.0 - ssr / syy_w } else { 1.0 },
        exponent_stderr: 0.0,
        band,
    })
}

/// Fits `sizes` both ways, each band widened by the run scatter `rs`,
/// and tests linearity. `None` without a fit of either kind.
pub(crate) fn choose(sizes: &[SizeValues], rs: RunScatter) -> Option<Model> {
    let linear = weighted_linear(sizes).map(|f| f.across_runs(rs));
    let power = weighted_power(sizes).map(|f| f.across_runs(rs));
    let measured = rs.exponent_applies.then_some(1.0 + rs.exponent_drift.max(0.0));
    Some(test(linear, power, measured)).filter(|m| m.linear.is_some() || m.power.is_some())
}

/// The linearity test on a pair of fits already made. `measured`: the
/// exponent measured past the sizes, where it speaks for this run's
/// kernel (`None` elsewhere, and for results saved without a test).
pub(crate) fn test(linear: Option<PowerFit>, power: Option<PowerFit>, measured: Option<f64>) -> Model {
    let exponent_interval = power.and_then(|p| p.band.map(|b| b.exponent(&p)));
    let rejected = exponent_interval.is_some_and(|i| i.low > 1.0);
    let testable = exponent_interval.is_some_and(|i| i.high.is_some_and(|h| h <= SUPERLINEAR_EXPONENT));
    let holds = |k: f64| exponent_interval.is_some_and(|i| i.low <= k && i.high.is_some_and(|h| h >= k));
    let pinned = !testable && !rejected && linear.is_some() && measured.is_some_and(holds);
    let governs = if rejected || (!testable && !pinned) || linear.is_none() { Shape::PowerLaw } else { Shape::Linear };
    let test = LinearityTest {
        exponent: power.map_or(f64::NAN, |p| p.exponent),
        exponent_interval,
        level: REJECT_LEVEL,
        rejected,
        testable,
        pinned,
        governs,
    };
    Model { linear, power, test }
}

/// Where a series reaches a deadline, by the model that governs (for a
/// series measured elsewhere: `__internal fit-waits`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Reach {
    pub model: Model,
    /// The count at which the governing fit reaches the deadline.
    pub count: Option<f64>,
    /// Its 90% interval (`high` `None`: unbounded); `None` without a band.
    pub interval: Option<Interval>,
}

/// For any "longest wait against N" series (one [`SizeValues`] per size,
/// each repetition's value in seconds): both fits, the linearity test, and
/// the count at which the governing fit reaches `deadline_seconds`, with its
/// 90% interval carrying the run scatter `rs`.
pub(crate) fn count_reaching(sizes: &[SizeValues], rs: RunScatter, deadline_seconds: f64) -> Option<Reach> {
    let model = choose(sizes, rs)?;
    let fit = model.governing();
    Some(Reach {
        model,
        count: fit.and_then(|f| f.solve(deadline_seconds)),
        interval: fit.and_then(|f| f.band.and_then(|b| b.count_reaching(&f, deadline_seconds))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::interval::{SizeValues, t90};
    use crate::analysis::run_scatter::{GAP, RunScatter};

    /// A series with no power law (every gap under the noise floor) saves
    /// its exponent as null, and the result must read back.
    #[test]
    fn an_untested_exponent_reads_back_from_null() {
        let t = LinearityTest {
            exponent: f64::NAN,
            exponent_interval: None,
            level: REJECT_LEVEL,
            rejected: false,
            testable: false,
            pinned: false,
            governs: Shape::PowerLaw,
        };
        let text = serde_json::to_string(&t).unwrap();
        assert!(text.contains(r#""exponent":null"#), "{text}");
        let back: LinearityTest = serde_json::from_str(&text).unwrap();
        assert!(back.exponent.is_nan() && !back.testable);
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    /// Sizes 500k…4M doubling, three repetitions each at c·n^k·e^(δ·{1,0,−1})
    /// times `off[j]` for size j.
    fn series(k: f64, delta: f64, off: [f64; 4]) -> Vec<SizeValues> {
        (0..4)
            .map(|j| {
                let n = 5e5 * 2f64.powi(j);
                let y = 9e-8 * n.powf(k) / 1e6f64.powf(k - 1.0) * off[j as usize];
                SizeValues { count: n, values: vec![y * delta.exp(), y, y * (-delta).exp()] }
            })
            .collect()
    }

    #[test]
    fn the_linear_fit_is_known_by_hand() {
        let s = series(1.0, 0.1, [1.0; 4]);
        let f = weighted_linear(&s).unwrap();
        assert!(close(f.coefficient, 9e-8, 1e-9) && f.exponent == 1.0, "{f:?}");
        let b = f.band.unwrap();
        // 12 points, 11 dof; SSR = 4 sizes × 2δ² with equal weights.
        assert_eq!((b.dof, b.sizes, b.birge_ratio, b.fixed_exponent), (11, 4, 1.0, true));
        let w = 1.0 / (0.1f64 * 0.1);
        assert!(close(b.resid_var, w * 8.0 * 0.01 / 11.0, 1e-9), "{b:?}");
        // The band does not widen away from the sizes: the same half-width
        // at 1M and at 1G, t(0.95; 11)·s/√W.
        let half = |n: f64| (b.value_at(&f, n).high.unwrap() / f.at(n)).ln();
        let want = crate::analysis::interval::t90(11) * (b.resid_var / b.sum_w).sqrt();
        assert!(close(half(1e6), want, 1e-9) && close(half(1e9), want, 1e-9));
        // The exponent's interval is the fixed 1.
        assert_eq!(b.exponent(&f), Interval { low: 1.0, high: Some(1.0) });
        // The count interval: where c·N's band reaches 20 s.
        let i = b.count_reaching(&f, 20.0).unwrap();
        assert!(close(b.value_at(&f, i.low).high.unwrap(), 20.0, 1e-9), "{i:?}");
        assert!(close(b.value_at(&f, i.high.unwrap()).low, 20.0, 1e-9), "{i:?}");
    }

    #[test]
    fn misfit_between_sizes_widens_the_linear_band() {
        let clean = weighted_linear(&series(1.0, 0.1, [1.0; 4])).unwrap().band.unwrap();
        let off = weighted_linear(&series(1.0, 0.1, [1.3, 0.77, 1.3, 0.77])).unwrap().band.unwrap();
        assert!(off.birge_ratio > 1.0 && off.dof == 3, "{off:?}");
        assert!(off.resid_var > clean.resid_var);
    }

    #[test]
    fn the_run_scatter_is_carried_whole_and_the_exponent_grows_with_the_distance() {
        let f = weighted_linear(&series(1.0, 0.0, [1.0; 4])).unwrap().across_runs(GAP);
        let b = f.band.unwrap();
        // Exact data: at the sizes the band is two runs' shift alone (a
        // shift common to the run's sizes is not averaged away) ...
        let half = |n: f64| (b.value_at(&f, n).high.unwrap() / f.at(n)).ln();
        let want = crate::analysis::interval::t90(GAP.dof) * (2.0 * GAP.sd * GAP.sd).sqrt();
        assert!(close(half(b.size_x_mean.exp()), want, 1e-6), "{}", half(b.size_x_mean.exp()));
        // ... and past them the exponent's uncertainty joins: wider with
        // every decade of extrapolation.
        assert!(half(3e7) < half(3e8) && half(3e8) < half(3e9), "{} {} {}", half(3e7), half(3e8), half(3e9));
        assert!(half(3e8) > want);
    }

    #[test]
    fn a_linear_series_is_not_rejected_and_narrows_the_interval() {
        // Gaps like the quick sweep's: 90 ns per dentry, ±10% repetitions,
        // a 500k mean 8% high (the scatter the issue saw there).
        let s = series(1.0, 0.1, [1.08, 1.0, 1.0, 1.0]);
        let r = count_reaching(&s, GAP, 20.0).unwrap();
        assert!(!r.model.test.rejected && r.model.test.governs == Shape::Linear, "{:?}", r.model.test);
        let i = r.interval.unwrap();
        let p = r.model.power.unwrap();
        let pi = p.band.unwrap().count_reaching(&p, 20.0).unwrap();
        // Widths in ln(count): the power law's several times the line's.
        let width = |i: Interval| i.high.map_or(f64::INFINITY, |h| (h / i.low).ln());
        assert!(width(i) < 2f64.ln(), "linear {i:?}");
        assert!(width(pi) > width(i), "power {pi:?} linear {i:?}");
        // The point sits inside its interval.
        let n = r.count.unwrap();
        assert!(i.low < n && n < i.high.unwrap());
    }

    /// The safe side: a super-linear series is rejected and the power law,
    /// wide and early, governs.
    #[test]
    fn a_super_linear_series_falls_back_to_the_power_law() {
        let s = series(1.3, 0.05, [1.0; 4]);
        let r = count_reaching(&s, GAP, 20.0).unwrap();
        assert!(r.model.test.rejected && r.model.test.governs == Shape::PowerLaw, "{:?}", r.model.test);
        let lin = r.model.linear.unwrap();
        let lin_low = lin.band.unwrap().count_reaching(&lin, 20.0).unwrap().low;
        let i = r.interval.unwrap();
        // The power law's interval is early: its low end is under the
        // linear model's, and the true edge (exact c·n^1.3) lies inside it.
        let truth = (20.0 / (9e-8 / 1e6f64.powf(0.3))).powf(1.0 / 1.3);
        assert!(i.low < lin_low && i.low < truth && truth < i.high.unwrap(), "{i:?} {truth} {lin_low}");
    }

    /// An exponent under 1 is not a rejection: the linear model errs early.
    #[test]
    fn a_sub_linear_series_stays_linear_and_early() {
        let s = series(0.9, 0.05, [1.0; 4]);
        let r = count_reaching(&s, GAP, 20.0).unwrap();
        assert_eq!(r.model.test.governs, Shape::Linear);
        let p = r.model.power.unwrap();
        assert!(r.count.unwrap() < p.solve(20.0).unwrap());
    }

    /// A run that cannot test linearity is not taken as linear: without
    /// repetitions, or with sizes too scattered to pin the exponent near 1.
    #[test]
    fn an_untestable_run_keeps_the_power_law() {
        let s: Vec<SizeValues> = [1e6, 2e6].iter().map(|&n| SizeValues { count: n, values: vec![n * 1e-7] }).collect();
        let m = choose(&s, GAP).unwrap();
        assert!(m.test.exponent_interval.is_none() && !m.test.rejected && !m.test.testable);
        assert_eq!(m.test.governs, Shape::PowerLaw);
        // Linear on average, but ±40% repetitions over a factor 2: the
        // exponent's interval reaches past 1.1.
        let s = vec![
            SizeValues { count: 1e6, values: vec![0.1 * 1.4, 0.1 / 1.4] },
            SizeValues { count: 1.4e6, values: vec![0.14 * 1.4, 0.14 / 1.4] },
            SizeValues { count: 2e6, values: vec![0.2 * 1.4, 0.2 / 1.4] },
        ];
        let m = choose(&s, GAP).unwrap();
        assert!(!m.test.rejected && !m.test.testable && !m.test.pinned, "{:?}", m.test);
        assert_eq!(m.governing(), m.power);
        // On another kernel than the exponent was measured on, the same.
        let other = choose(&s, GAP.for_kernel("6.12.48+deb13-cloud-amd64")).unwrap();
        assert_eq!(other.test, m.test);
    }

    /// An untestable run of the kernel the exponent was measured on takes
    /// that exponent: the linear model governs, carrying the drift and its
    /// σₖ, and the run says it was pinned. Its interval is narrower than
    /// the power law's and still holds the point. Without an exponent
    /// interval (no repetitions) nothing holds the measured one: the
    /// power law stays.
    #[test]
    fn an_untestable_run_of_the_measured_kernel_takes_the_measured_exponent() {
        let rs = GAP.for_kernel("6.18.44-fc-v857");
        assert!(rs.exponent_applies);
        let s = vec![
            SizeValues { count: 1e6, values: vec![0.1 * 1.4, 0.1 / 1.4] },
            SizeValues { count: 1.4e6, values: vec![0.14 * 1.4, 0.14 / 1.4] },
            SizeValues { count: 2e6, values: vec![0.2 * 1.4, 0.2 / 1.4] },
        ];
        let r = count_reaching(&s, rs, 20.0).unwrap();
        let t = r.model.test;
        assert!(!t.testable && !t.rejected && t.pinned && t.governs == Shape::Linear, "{t:?}");
        let lin = r.model.linear.unwrap();
        assert!(close(lin.exponent, 1.0 + GAP.exponent_drift, 1e-12), "{lin:?}");
        let i = r.interval.unwrap();
        let p = r.model.power.unwrap();
        let pi = p.band.unwrap().count_reaching(&p, 20.0).unwrap();
        let width = |i: Interval| i.high.map_or(f64::INFINITY, |h| h / i.low);
        assert!(width(i) < width(pi), "{i:?} against the power law's {pi:?}");
        let n = r.count.unwrap();
        assert!(i.low < n && n < i.high.unwrap(), "{i:?} {n}");
        let bare: Vec<SizeValues> =
            [1e6, 2e6].iter().map(|&n| SizeValues { count: n, values: vec![n * 1e-7] }).collect();
        let m = choose(&bare, rs).unwrap();
        assert!(!m.test.pinned && m.test.governs == Shape::PowerLaw, "{:?}", m.test);
    }

    /// The linear model's band for the node's next reclaim, on exact
    /// data: two runs' shifts at the sizes, and the exponent's
    /// uncertainty on top as the count moves away from them, known by
    /// hand (Welch–Satterthwaite degrees of freedom).
    #[test]
    fn the_linear_band_grows_with_extrapolation() {
        let exact: Vec<SizeValues> =
            [5e5f64, 1e6, 2e6, 4e6].iter().map(|&n| SizeValues { count: n, values: vec![9e-8 * n; 2] }).collect();
        let rs = RunScatter {
            sd: 0.05,
            dof: 4,
            exponent_drift: 0.0,
            exponent_sd: 0.03,
            exponent_dof: 6,
            exponent_applies: false,
        };
        let f = weighted_linear(&exact).unwrap().across_runs(rs);
        let b = f.band.unwrap();
        let half = |n: f64| (b.value_at(&f, n).high.unwrap() / f.at(n)).ln();
        let mid = b.size_x_mean.exp();
        // At the sizes' mean: the two shifts alone, t with their 4 dof.
        assert!(close(half(mid), t90(4) * (2.0 * 0.05f64 * 0.05).sqrt(), 1e-6), "{}", half(mid));
        // 100× past it: the exponent's share joins.
        let d = 100f64.ln();
        let (v1, v2) = (2.0 * 0.0025, (0.03 * d).powi(2));
        let dof = (v1 + v2).powi(2) / (v1 * v1 / 4.0 + v2 * v2 / 6.0);
        let want = t90(dof as u32) * (v1 + v2).sqrt();
        assert!(close(half(mid * 100.0), want, 1e-6), "{} {want}", half(mid * 100.0));
        assert!(half(mid * 1000.0) > half(mid * 100.0) && half(mid * 100.0) > half(mid * 10.0));
        // The count interval widens the same way and holds the point.
        let i = b.count_reaching(&f, 20.0).unwrap();
        let n = f.solve(20.0).unwrap();
        assert!(i.low < n && n < i.high.unwrap(), "{i:?} {n}");
        assert!(close(b.value_at(&f, i.low).high.unwrap(), 20.0, 1e-6), "{i:?}");
        // The exponent's interval is 1 ± t·σₖ.
        let e = b.exponent(&f);
        assert!(close(e.high.unwrap() - 1.0, t90(6) * 0.03, 1e-9) && close(1.0 - e.low, t90(6) * 0.03, 1e-9));
        // A drift measured past the sizes is carried by the exponent,
        // pivoted at the sizes' mean: the same there, higher beyond.
        let lin = weighted_linear(&exact).unwrap();
        let d = lin.across_runs(RunScatter { exponent_drift: 0.05, ..rs });
        assert!(close(d.at(mid), lin.at(mid), 1e-9) && close(d.exponent, 1.05, 1e-12));
        assert!(close(d.at(mid * 100.0) / lin.at(mid * 100.0), 100f64.powf(0.05), 1e-9));
        assert!(d.solve(20.0).unwrap() < lin.solve(20.0).unwrap(), "earlier: the safe side");
        // An exponent under 1 is not carried: c·N is the earlier one.
        let under = lin.across_runs(RunScatter { exponent_drift: -0.05, ..rs });
        assert_eq!(under.exponent, 1.0);
    }
}
