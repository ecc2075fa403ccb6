//! The weighted power-law fit and what its band predicts: the 90% interval
//! of the exponent, of a fitted value, and of the count at which the curve
//! reaches a value (closed form within one run, numeric with the run
//! scatter). Above `fit` (the fit type), `interval` (the band) and
//! `run_scatter` (the scatter between runs), which it joins.

use super::fit::PowerFit;
use super::interval::{Band, Interval, MIN_REPS_TO_WEIGHT, SIGMA_FLOOR, SizeValues, t90};
use super::run_scatter::RunScatter;

/// Weighted power-law fit with its [`Band`] (none with fewer than 3
/// points, where nothing is left to estimate the scatter). `None` with
/// fewer than two sizes: one size fixes no slope, and the rounding in its
/// weighted mean would pass for one.
pub(crate) fn weighted_power(sizes: &[SizeValues]) -> Option<PowerFit> {
    let logs = weighted_logs(sizes);
    if !logs.iter().any(|l| l.0 != logs[0].0) {
        return None;
    }
    let pts: Vec<(f64, f64, f64)> = logs.iter().flat_map(|(x, v, w)| v.iter().map(move |y| (*x, *y, *w))).collect();
    let sum_w: f64 = pts.iter().map(|p| p.2).sum();
    if sum_w <= 0.0 {
        return None;
    }
    let x_mean = pts.iter().map(|p| p.2 * p.0).sum::<f64>() / sum_w;
    let y_mean = pts.iter().map(|p| p.2 * p.1).sum::<f64>() / sum_w;
    let sxx_w: f64 = pts.iter().map(|p| p.2 * (p.0 - x_mean).powi(2)).sum();
    let sxy_w: f64 = pts.iter().map(|p| p.2 * (p.0 - x_mean) * (p.1 - y_mean)).sum();
    let syy_w: f64 = pts.iter().map(|p| p.2 * (p.1 - y_mean).powi(2)).sum();
    if sxx_w <= 0.0 {
        return None;
    }
    let b = sxy_w / sxx_w;
    let a = y_mean - b * x_mean;
    let ssr: f64 = pts.iter().map(|p| p.2 * (p.1 - a - b * p.0).powi(2)).sum();
    let band = Band::from_points(&logs, |x, y| y - a - b * x, false);
    Some(PowerFit {
        coefficient: a.exp(),
        exponent: b,
        r2: if syy_w > 0.0 { 1.0 - ssr / syy_w } else { 1.0 },
        exponent_stderr: band.map(|b| (b.resid_var / b.sxx_w).sqrt()).unwrap_or(f64::NAN),
        band,
    })
}

/// The sizes in log-log space, each with the weight of its points: x =
/// ln n, the ln values, and 1/σ² of those (σ at least [`SIGMA_FLOOR`];
/// all 1 when some size has fewer than [`MIN_REPS_TO_WEIGHT`] values,
/// whose σ would be noise).
pub(super) fn weighted_logs(sizes: &[SizeValues]) -> Vec<(f64, Vec<f64>, f64)> {
    let logs: Vec<(f64, Vec<f64>)> = sizes
        .iter()
        .filter(|s| s.count > 0.0)
        .map(|s| (s.count.ln(), s.values.iter().filter(|v| **v > 0.0 && v.is_finite()).map(|v| v.ln()).collect()))
        .filter(|(_, v): &(f64, Vec<f64>)| !v.is_empty())
        .collect();
    let weighted = logs.iter().all(|(_, v)| v.len() >= MIN_REPS_TO_WEIGHT);
    let weight = |v: &[f64]| {
        if !weighted {
            return 1.0;
        }
        let m = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|y| (y - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
        1.0 / var.max(SIGMA_FLOOR * SIGMA_FLOOR)
    };
    logs.into_iter()
        .map(|(x, v)| {
            let w = weight(&v);
            (x, v, w)
        })
        .collect()
}

impl PowerFit {
    /// The same fit, its band widened for a prediction beyond this run.
    pub(crate) fn across_runs(self, rs: RunScatter) -> PowerFit {
        let band = self.band.map(|b| b.with_run_scatter(rs));
        match band {
            // The linear model past its sizes: the walk's exponent as
            // measured there, pivoted at the run's mean size (where the
            // run's own data hold it).
            Some(b) if b.fixed_exponent && b.exponent_drift > 0.0 => PowerFit {
                coefficient: self.coefficient * (-b.exponent_drift * b.size_x_mean).exp(),
                exponent: self.exponent + b.exponent_drift,
                band,
                ..self
            },
            _ => PowerFit { band, ..self },
        }
    }
}

impl Band {
    /// The band of a line fitted in log-log space through `sizes` (x = ln
    /// n, its ln values, their weight, as [`weighted_logs`] gives them),
    /// `resid(x, y)` the line's residual: N − p degrees of freedom (N
    /// points; p = 1 parameter with `fixed_exponent`, the linear model,
    /// else 2), widened by the sizes' misfit when their means scatter
    /// around the line more than their repetitions explain (k − p degrees
    /// of freedom, k sizes; see [`super::interval`]). `None` without a
    /// degree of freedom or a weight.
    pub(super) fn from_points(
        sizes: &[(f64, Vec<f64>, f64)],
        resid: impl Fn(f64, f64) -> f64,
        fixed_exponent: bool,
    ) -> Option<Band> {
        let params = if fixed_exponent { 1 } else { 2 };
        let pts = || sizes.iter().flat_map(|(x, v, w)| v.iter().map(move |y| (*x, *y, *w)));
        let dof = pts().count().saturating_sub(params) as u32;
        let sum_w: f64 = pts().map(|p| p.2).sum();
        if dof == 0 || sum_w <= 0.0 {
            return None;
        }
        let x_mean = pts().map(|p| p.2 * p.0).sum::<f64>() / sum_w;
        let sxx_w: f64 = pts().map(|p| p.2 * (p.0 - x_mean).powi(2)).sum();
        let points = pts().map(|p| p.2 * resid(p.0, p.1).powi(2)).sum::<f64>() / f64::from(dof);
        let k = sizes.len();
        let size_x_mean = sizes.iter().map(|s| s.0).sum::<f64>() / k as f64;
        let size_sxx: f64 = sizes.iter().map(|s| (s.0 - size_x_mean).powi(2)).sum();
        // The size means' share of the residuals (lack of fit), weighted
        // as the mean of n points of weight w weighs: n·w.
        let ss_means: f64 = sizes
            .iter()
            .map(|(x, v, w)| v.len() as f64 * w * resid(*x, v.iter().sum::<f64>() / v.len() as f64).powi(2))
            .sum();
        let base = Band {
            x_mean,
            sum_w,
            sxx_w,
            resid_var: points,
            dof,
            birge_ratio: 1.0,
            sizes: k as u32,
            run_sd: 0.0,
            run_dof: 0,
            size_x_mean,
            size_sxx,
            fixed_exponent,
            shift_sd: 0.0,
            shift_dof: 0,
            exponent_sd: 0.0,
            exponent_dof: 0,
            exponent_drift: 0.0,
        };
        Some(match (k > params).then(|| ss_means / (k - params) as f64) {
            Some(m) if m > points => {
                Band { resid_var: m, dof: (k - params) as u32, birge_ratio: (m / points).sqrt(), ..base }
            }
            _ => base,
        })
    }

    /// 90% interval of the exponent.
    pub(crate) fn exponent(&self, fit: &PowerFit) -> Interval {
        let (v, dof) = self.slope_var_dof();
        let h = t90(dof as u32) * v.sqrt();
        Interval { low: fit.exponent - h, high: Some(fit.exponent + h) }
    }

    /// 90% interval of the fitted value at count `n`.
    pub(crate) fn value_at(&self, fit: &PowerFit, n: f64) -> Interval {
        let x = n.ln();
        let y = fit.coefficient.ln() + fit.exponent * x;
        let (v, dof) = self.var_dof_at(x);
        let h = t90(dof as u32) * v.sqrt();
        Interval { low: (y - h).exp(), high: Some((y + h).exp()) }
    }

    /// 90% interval of the count at which the curve reaches `value`: where
    /// the band's upper edge reaches it (low end) and its lower edge does
    /// (high end). `None` when even the upper edge never grows to it.
    pub(crate) fn count_reaching(&self, fit: &PowerFit, value: f64) -> Option<Interval> {
        if !(value > 0.0 && fit.coefficient > 0.0) {
            return None;
        }
        if self.across_runs() {
            return self.count_reaching_numeric(fit, value);
        }
        // With d = x − x̄ and y0 = ŷ(x̄) − ln value, the edges cross where
        // (y0 + b·d)² = t²·s²·(1/W + d²/Sxx).
        let (b, t2s2) = (fit.exponent, self.t().powi(2) * self.resid_var);
        let y0 = fit.coefficient.ln() + b * self.x_mean - value.ln();
        let qa = b * b - t2s2 * self.slope_weight();
        let qb = 2.0 * y0 * b;
        let qc = y0 * y0 - t2s2 / self.sum_w;
        let disc = qb * qb - 4.0 * qa * qc;
        let to_n = |d: f64| (d + self.x_mean).exp();
        if qa > 0.0 && b > 0.0 {
            if disc < 0.0 {
                return None;
            }
            let r = disc.sqrt();
            let (d1, d2) = ((-qb - r) / (2.0 * qa), (-qb + r) / (2.0 * qa));
            return Some(Interval { low: to_n(d1.min(d2)), high: Some(to_n(d1.max(d2))) });
        }
        // The slope is not clear of zero at this level: the upper edge
        // still crosses once (its larger root), the lower edge never does.
        if disc < 0.0 || qa == 0.0 {
            return None;
        }
        let r = disc.sqrt();
        let d = ((-qb - r) / (2.0 * qa)).max((-qb + r) / (2.0 * qa));
        let up = |d: f64| y0 + b * d + (t2s2 * (1.0 / self.sum_w + d * d * self.slope_weight())).sqrt();
        (up(d + 1.0) > up(d - 1.0)).then(|| Interval { low: to_n(d), high: None })
    }

    /// [`Band::count_reaching`] with the run scatter: the band's edges are
    /// no longer one hyperbola, so their crossings with ln value are found
    /// numerically. Low end: the last place the upper edge rises through
    /// the value (the upper edge is convex in x); high end: where the lower
    /// edge does, when the slope stands clear of zero, else unbounded.
    pub(super) fn count_reaching_numeric(&self, fit: &PowerFit, value: f64) -> Option<Interval> {
        let (a, b, lv) = (fit.coefficient.ln(), fit.exponent, value.ln());
        let edge = |x: f64, sign: f64| {
            let (v, dof) = self.var_dof_at(x);
            a + b * x + sign * t90(dof as u32) * v.sqrt() - lv
        };
        let (sv, sdof) = self.slope_var_dof();
        let clear = b > 0.0 && b > t90(sdof as u32) * sv.sqrt();
        // ln n from x̄ − 40 to x̄ + 60: every count a machine can hold.
        let (from, step, steps) = (self.x_mean - 40.0, 0.02, 5000);
        let last_rise = |sign: f64| -> Option<f64> {
            let mut found = None;
            let mut prev = edge(from, sign);
            for i in 1..=steps {
                let x = from + i as f64 * step;
                let cur = edge(x, sign);
                if prev < 0.0 && cur >= 0.0 {
                    found = Some(x - step);
                }
                prev = cur;
            }
            let (mut lo, mut hi) = (found?, found? + step);
            for _ in 0..60 {
                let mid = 0.5 * (lo + hi);
                if edge(mid, sign) < 0.0 { lo = mid } else { hi = mid }
            }
            Some(0.5 * (lo + hi))
        };
        let low = last_rise(1.0)?;
        let high = if clear { last_rise(-1.0) } else { None };
        Some(Interval { low: low.exp(), high: high.map(f64::exp) })
    }
}

#[cfg(test)]
mod tests {
    mod interval {
        use super::super::*;
        use crate::analysis::interval::*;

        fn close(a: f64, b: f64, tol: f64) -> bool {
            (a - b).abs() <= tol * b.abs().max(1e-12)
        }

        /// Four sizes doubling from 1M, two repetitions each at c·n^k·e^(±δ):
        /// every size's mean lies on the curve, all weights are equal, and the
        /// answers follow by hand.
        fn scattered(delta: f64) -> Vec<SizeValues> {
            (0..4)
                .map(|j| {
                    let n = 1e6 * 2f64.powi(j);
                    let y = 2e-9 * n.powf(1.2);
                    SizeValues { count: n, values: vec![y * delta.exp(), y * (-delta).exp()] }
                })
                .collect()
        }

        /// One size alone (the others under the noise floor) fixes no
        /// slope: rounding in its weighted mean must not pass for one
        /// (it once printed an exponent of −0.33 with an interval of
        /// ±3.5·10¹⁴).
        #[test]
        fn one_size_alone_is_no_fit() {
            let one = |values: Vec<f64>| vec![SizeValues { count: 400_000.0, values }];
            assert_eq!(weighted_power(&one(vec![0.0134, 0.0171, 0.0122])), None);
            assert_eq!(weighted_power(&one(vec![0.0134])), None);
            // With a second size the fit is back.
            let mut two = one(vec![0.0134, 0.0171, 0.0122]);
            two.push(SizeValues { count: 200_000.0, values: vec![0.0081, 0.0101, 0.0111] });
            let f = weighted_power(&two).expect("two sizes fit");
            assert!(f.exponent.is_finite() && f.band.is_some(), "{f:?}");
        }

        #[test]
        fn exact_data_gives_the_point_and_a_zero_width_interval() {
            let f = weighted_power(&scattered(0.0)).unwrap();
            assert!(close(f.exponent, 1.2, 1e-9) && close(f.coefficient, 2e-9, 1e-6), "{f:?}");
            let b = f.band.unwrap();
            let i = b.count_reaching(&f, 20.0).unwrap();
            let n = f.solve(20.0).unwrap();
            assert!(close(i.low, n, 1e-6) && close(i.high.unwrap(), n, 1e-6), "{i:?} {n}");
        }

        #[test]
        fn scatter_gives_the_interval_known_by_hand() {
            let delta = 0.1;
            let f = weighted_power(&scattered(delta)).unwrap();
            let b = f.band.unwrap();
            assert!(close(f.exponent, 1.2, 1e-9));
            // 8 points, 6 degrees of freedom; SSR = 8δ²; Sxx = 2·5·ln²2.
            assert_eq!(b.dof, 6);
            let s2 = 8.0 * delta * delta / 6.0;
            let se_b = (s2 / (10.0 * 2f64.ln().powi(2))).sqrt();
            assert!(close(f.exponent_stderr, se_b, 1e-9), "{} {se_b}", f.exponent_stderr);
            let e = b.exponent(&f);
            // t(0.95; 6) = 1.943 in the table's four digits: agree to that.
            assert!(close(e.low, 1.2 - 1.943 * se_b, 1e-4) && close(e.high.unwrap(), 1.2 + 1.943 * se_b, 1e-4));
            // At the weighted mean of x the band's half-width is t·s/√W (in ln).
            let mid = b.x_mean.exp();
            let v = b.value_at(&f, mid);
            let half = 1.943 * (s2 / 8.0).sqrt();
            assert!(close(v.high.unwrap() / f.at(mid), half.exp(), 1e-4), "{v:?}");
            assert!(close(v.low / f.at(mid), (-half).exp(), 1e-4));
            // The count interval holds the point, the low end is where the
            // upper edge of the band reaches the value, and vice versa.
            let i = b.count_reaching(&f, 20.0).unwrap();
            let n = f.solve(20.0).unwrap();
            assert!(i.low < n && n < i.high.unwrap(), "{i:?} {n}");
            assert!(close(b.value_at(&f, i.low).high.unwrap(), 20.0, 1e-9));
            assert!(close(b.value_at(&f, i.high.unwrap()).low, 20.0, 1e-9));
        }

        #[test]
        fn weights_follow_the_spread_of_the_repetitions() {
            // One size's repetitions scatter widely: it counts less (three
            // repetitions a size: with two, no size is weighted).
            let mut s = scattered(0.02);
            s.iter_mut().for_each(|z| z.values.push((z.values[0] * z.values[1]).sqrt()));
            s[3].values = vec![s[3].values[0] * 3.0, s[3].values[1] * 0.9, s[3].values[2]];
            let weighted = weighted_power(&s).unwrap();
            let pts: Vec<(f64, f64)> = s.iter().flat_map(|z| z.values.iter().map(move |v| (z.count, *v))).collect();
            let plain = crate::analysis::fit::power(&pts).unwrap();
            assert!((weighted.exponent - 1.2).abs() < (plain.exponent - 1.2).abs(), "{weighted:?} {plain:?}");
        }

        #[test]
        fn a_flat_fit_has_no_upper_end() {
            let s: Vec<SizeValues> =
                [1e6, 2e6, 4e6].iter().map(|&n| SizeValues { count: n, values: vec![0.011, 0.009] }).collect();
            let f = weighted_power(&s).unwrap();
            let i = f.band.unwrap().count_reaching(&f, 2.0);
            assert!(i.is_none_or(|i| i.high.is_none()), "{i:?}");
            assert_eq!(count_with_interval(2e8, Some(1.5e8), None), "200M (150M–unbounded)");
            assert_eq!(count_with_interval(205e6, Some(150e6), Some(290e6)), "205M (150M–290M)");
            assert_eq!(count_with_interval(205e6, None, None), "205M (no interval)");
        }

        /// The interval's honesty: sizes whose means scatter around
        /// the power law more than their repetitions do widen the interval;
        /// clean data keep it; the point never moves.
        #[test]
        fn misfit_between_sizes_widens_the_interval_and_clean_data_do_not() {
            // Clean: every mean on the curve, ±10% repetitions: no misfit.
            let clean = weighted_power(&scattered(0.1)).unwrap();
            let cb = clean.band.unwrap();
            assert_eq!((cb.birge_ratio, cb.dof, cb.sizes), (1.0, 6, 4));
            // Clean but not exact: means off the curve by less than their
            // repetitions' spread says (±2% against ±10%): kept as it was.
            let mut near = scattered(0.1);
            for (j, s) in near.iter_mut().enumerate() {
                let f = [1.02, 0.98, 0.98, 1.02][j];
                s.values.iter_mut().for_each(|v| *v *= f);
            }
            let nb = weighted_power(&near).unwrap().band.unwrap();
            assert_eq!(nb.birge_ratio, 1.0);
            // The same repetitions with the sizes' means scattered ±30% around
            // the curve (symmetric, so the fitted line stays where it was).
            let mut off = scattered(0.1);
            for (j, s) in off.iter_mut().enumerate() {
                let f = [1.3, 1.0 / 1.3, 1.0 / 1.3, 1.3][j];
                s.values.iter_mut().for_each(|v| *v *= f);
            }
            let wide = weighted_power(&off).unwrap();
            let wb = wide.band.unwrap();
            // By hand: residuals of the means ±ln 1.3 at x = ln2·{0,1,2,3},
            // fitted by b = 1.2 exactly (the ± pattern is orthogonal to x);
            // two repetitions a size weigh alike (w = 1 per point, below
            // MIN_REPS_TO_WEIGHT), so the means' scale is
            // 4 × 2·1·ln²1.3 / (k − 2) with k − 2 = 2.
            assert!(close(wide.exponent, 1.2, 1e-9) && close(wide.coefficient, clean.coefficient, 1e-9), "{wide:?}");
            assert_eq!(wb.dof, 2);
            assert!(close(wb.resid_var, 4.0 * 1.3f64.ln().powi(2), 1e-9), "{wb:?}");
            assert!(wb.birge_ratio > 1.0);
            let (ci, wi) = (cb.count_reaching(&clean, 20.0).unwrap(), wb.count_reaching(&wide, 20.0));
            let point = clean.solve(20.0).unwrap();
            assert!(close(wide.solve(20.0).unwrap(), point, 1e-9));
            // Wider on both sides (or unbounded above).
            let wi = wi.unwrap();
            assert!(wi.low < ci.low && wi.high.is_none_or(|h| h > ci.high.unwrap()), "{wi:?} {ci:?}");
        }

        #[test]
        fn two_points_have_no_band() {
            let s = vec![SizeValues { count: 1e6, values: vec![0.1] }, SizeValues { count: 2e6, values: vec![0.2] }];
            let f = weighted_power(&s).unwrap();
            assert!(f.band.is_none() && f.exponent_stderr.is_nan());
        }

        #[test]
        fn the_noise_floor_filter_says_what_it_left_out() {
            let size = |target: u64, gap: f64, p99: f64| GapSize {
                target,
                count: target as f64,
                gaps: vec![gap, gap * 1.1, gap * 0.9],
                control_p99: vec![p99; 3],
            };
            // 500k: 8 ms < 10 ms; 1M: 30 ms < 5 × 8 ms; 2M: 60 ms ≥ 40 ms; 4M kept.
            let (kept, out) = above_noise(&[
                size(500_000, 0.008, 0.001),
                size(1_000_000, 0.030, 0.008),
                size(2_000_000, 0.060, 0.008),
                size(4_000_000, 0.13, 0.002),
            ]);
            assert_eq!(kept.iter().map(|s| s.count).collect::<Vec<_>>(), vec![2e6, 4e6]);
            assert_eq!(out.iter().map(|o| o.target).collect::<Vec<_>>(), vec![500_000, 1_000_000]);
            assert!(close(out[0].floor_seconds, 0.010, 1e-12) && close(out[1].floor_seconds, 0.040, 1e-12));
            assert!(out[1].reason.contains("30.0 ms") && out[1].reason.contains("40.0 ms"), "{}", out[1].reason);
            assert_eq!(noise_floor(&[]), NOISE_FLOOR_SECONDS);
        }

        #[test]
        fn t_quantiles() {
            // Table values of t(0.95; dof), to their printed digits.
            for (dof, t) in [(1, 6.314), (2, 2.920), (6, 1.943), (10, 1.812), (30, 1.697), (120, 1.658)] {
                assert!((t90(dof) - t).abs() < 5e-4, "t90({dof}) = {}, table {t}", t90(dof));
            }
            assert!(close(t90(1000), 1.6464, 1e-3));
            assert!(close(t90(100_000), 1.644_854, 1e-4));
            assert!(t90(0).is_infinite());
        }
    }

    mod run_scatter {
        use super::super::*;
        use crate::analysis::fit::PowerFit;
        use crate::analysis::interval::SizeValues;
        use crate::analysis::interval::{Band, t90};
        use crate::analysis::run_scatter::*;

        fn close(a: f64, b: f64, tol: f64) -> bool {
            (a - b).abs() <= tol * b.abs().max(1e-12)
        }

        /// Sizes 500k, 1M, 2M (the quick sweep's fitted ones), three
        /// repetitions each at c·n^k·e^(δ·{1,0,−1}).
        fn quick(delta: f64) -> Vec<SizeValues> {
            [5e5f64, 1e6, 2e6]
                .iter()
                .map(|&n| {
                    let y = 7.3e-8 * n.powf(0.98);
                    SizeValues { count: n, values: vec![y * delta.exp(), y, y * (-delta).exp()] }
                })
                .collect()
        }

        /// The old per-size run scatter (results saved before the common
        /// shift carry it and read back through it).
        fn per_size(f: PowerFit, sd: f64, dof: u32) -> PowerFit {
            PowerFit { band: f.band.map(|b| Band { run_sd: sd, run_dof: dof, ..b }), ..f }
        }

        #[test]
        fn the_constants_are_the_measured_ones() {
            let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results/run-scatter-6.18.md");
            let text = std::fs::read_to_string(&p).unwrap();
            let line = |key: &str| {
                text.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("{key} in {p:?}")).to_string()
            };
            for (name, rs) in [("gap", GAP), ("time", TIME), ("victim", VICTIM)] {
                assert_eq!(
                    line(&format!("{name} run scatter:")),
                    format!("{name} run scatter: sd {:.4} dof {}", rs.sd, rs.dof)
                );
            }
            for (name, rs) in [("gap", GAP), ("time", TIME)] {
                assert_eq!(
                    line(&format!("{name} exponent:")),
                    format!(
                        "{name} exponent: drift {:.4} sd {:.4} dof {}",
                        rs.exponent_drift, rs.exponent_sd, rs.exponent_dof
                    )
                );
            }
        }

        /// Exact data: the fit itself is certain, so the band is the run
        /// scatter's alone, t with its own degrees of freedom, known by hand.
        #[test]
        fn exact_data_carry_the_run_scatter_alone() {
            let f = per_size(weighted_power(&quick(0.0)).unwrap(), 0.02, 9);
            let b = f.band.unwrap();
            let sxx = 2.0 * 2f64.ln().powi(2);
            let n = 3e8f64;
            let d = n.ln() - 1e6f64.ln();
            let half: f64 = 1.833 * 0.02 * (1.0 / 3.0 + d * d / sxx).sqrt();
            let v = b.value_at(&f, n);
            // t(0.95; 9) = 1.833 in the table's four digits: agree to that.
            assert!(close(v.high.unwrap() / f.at(n), half.exp(), 1e-4), "{v:?} {half}");
            assert!(close(v.low / f.at(n), (-half).exp(), 1e-4));
            // The count interval is where those edges reach the value.
            let i = b.count_reaching(&f, 20.0).unwrap();
            assert!(close(b.value_at(&f, i.low).high.unwrap(), 20.0, 1e-6), "{i:?}");
            assert!(close(b.value_at(&f, i.high.unwrap()).low, 20.0, 1e-6), "{i:?}");
            let point = f.solve(20.0).unwrap();
            assert!(i.low < point && point < i.high.unwrap());
        }

        /// With the run scatter going to nothing the numeric solution is the
        /// closed form's.
        #[test]
        fn the_numeric_crossing_is_the_closed_form_without_scatter() {
            let f = weighted_power(&quick(0.05)).unwrap();
            let b = f.band.unwrap();
            let closed = b.count_reaching(&f, 20.0).unwrap();
            let tiny = Band { run_sd: 1e-9, run_dof: 9, ..b };
            let numeric = tiny.count_reaching(&f, 20.0).unwrap();
            assert!(
                close(numeric.low, closed.low, 1e-6) && close(numeric.high.unwrap(), closed.high.unwrap(), 1e-6),
                "{numeric:?} {closed:?}"
            );
        }

        /// The case that showed it: a short sweep's interval widens by the scatter,
        /// far more at 300M than a sweep of six doubling sizes', and the point
        /// never moves.
        #[test]
        fn a_short_sweep_widens_more_than_a_long_one() {
            let width = |sizes: Vec<SizeValues>| {
                let f = weighted_power(&sizes).unwrap();
                let without = f.band.unwrap().count_reaching(&f, 20.0).unwrap();
                let g = per_size(f, 0.0223, 9);
                let with = g.band.unwrap().count_reaching(&g, 20.0).unwrap();
                assert_eq!(f.solve(20.0), g.solve(20.0));
                assert!(with.low < without.low && with.high.unwrap() > without.high.unwrap(), "{with:?} {without:?}");
                (with.high.unwrap() / with.low).ln()
            };
            let long: Vec<SizeValues> = (0..6)
                .map(|j| {
                    let n = 5e5 * 2f64.powi(j);
                    let y = 7.3e-8 * n.powf(0.98);
                    SizeValues { count: n, values: vec![y * 1.01, y, y / 1.01] }
                })
                .collect();
            let (short, long) = (width(quick(0.01)), width(long));
            // In ln(count): 0.52 against 0.15 as written.
            assert!(short > 2.0 * long, "short {short} long {long}");
        }

        /// An added uncertainty never narrows the interval (a variance known
        /// with many dof added to one with one raises Welch–Satterthwaite's).
        #[test]
        fn adding_a_variance_never_narrows_the_half_width() {
            let half = |(v, d): (f64, f64)| t90(d as u32) * v.sqrt();
            let few = (0.02, 1.0);
            for many in [0.001, 0.01, 0.02, 0.05, 0.5] {
                let sum = crate::analysis::interval::never_narrower(&[few, (many, 30.0)]);
                assert!(half(sum) >= half(few) && half(sum) >= half((many, 30.0)), "{many}: {sum:?}");
            }
            assert_eq!(welch(&[(0.0, 3.0)]), (0.0, 1e6));
        }

        #[test]
        fn the_degrees_of_freedom_follow_the_larger_share() {
            // Only the fit: its own; only the run's: the run's; equal: between.
            assert_eq!(combine(1.0, 7, 1.0, 0.0, 9), (1.0, 7.0));
            let (v, d) = combine(1e-12, 7, 1.0, 1.0, 9);
            assert!(close(v, 1.0, 1e-9) && close(d, 9.0, 1e-6));
            let (v, d) = combine(1.0, 7, 1.0, 1.0, 9);
            assert!(close(v, 2.0, 1e-12) && close(d, 4.0 / (1.0 / 7.0 + 1.0 / 9.0), 1e-9));
            // Misfit already larger than points + run: the fit's band stands.
            assert_eq!(combine(9.0, 2, 3.0, 0.5, 9), (9.0, 2.0));
            // ... smaller: points + run.
            let (v, _) = combine(4.0, 2, 2.0, 5.0, 9);
            assert!(close(v, 6.0, 1e-12));
        }
    }
}
