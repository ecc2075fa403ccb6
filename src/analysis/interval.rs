//! 90% intervals for the power-law fits, and the noise floor below which a
//! longest gap says nothing about the reclaim.
//!
//! The fit is weighted least squares in log-log space: each repetition is a
//! point, weighted by 1/σ² of its size's repetitions (σ the standard
//! deviation of ln(value), at least [`SIGMA_FLOOR`]), with the weights taken
//! as relative (the scale comes from the residuals). The exponent and the
//! prefactor are then uncertain together, and every prediction carries that
//! uncertainty: the value at a count gets the confidence band of the line,
//! and the count at which the curve reaches a value (the lockup count) gets
//! the inverse of that band (the calibration interval: where the band's
//! upper edge reaches the value is the low end, where its lower edge does is
//! the high end; with a slope not clear of zero the high end is unbounded).
//!
//! The scale is honest about misfit between sizes (three idle
//! quick sweeps gave points 1.7× apart whose intervals missed each other).
//! The repetitions of one size say how much one reclaim scatters; they say
//! nothing about how far the size's mean lies off the power law, and with
//! every repetition a point that misfit is diluted as if it averaged away
//! with more repetitions. So the residuals are split as in a lack-of-fit
//! test: the scatter of the size means around the line (k − 2 degrees of
//! freedom, k sizes) against the scatter of all points (N − 2). When the
//! means scatter more than the repetitions' spread says (the Birge ratio,
//! √ of the ratio of the two scales, is over 1), the band is scaled by the
//! means' scatter and Student's t takes the means' k − 2 degrees of freedom:
//! the sizes, not the repetitions, are what the line is fitted through.
//! Clean data (means on the curve, or within their repetitions' spread) keep
//! the band as it was; the point estimate never changes.

use serde::{Deserialize, Serialize};

use super::fit::PowerFit;
use crate::stats::median;

/// Smallest σ of ln(value) a size is weighted with (5%): repetitions that
/// happen to agree exactly must not take all the weight.
pub const SIGMA_FLOOR: f64 = 0.05;
/// A size's longest gap must be at least this many times the control CPU's
/// p99 gap to enter the gap fit.
pub const NOISE_FLOOR_P99_FACTOR: f64 = 5.0;
/// ... and at least this long (seconds): under it, scheduler ticks and
/// interrupts make the longest gap, not the reclaim.
pub const NOISE_FLOOR_SECONDS: f64 = 0.010;

/// Student's t, 0.95 quantile (a two-sided 90% interval), for 1..=30
/// degrees of freedom (standard table values).
const T95: [f64; 30] = [
    6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753, 1.746,
    1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697,
];

/// The 0.95 quantile of Student's t with `dof` degrees of freedom (beyond
/// 30: the normal's 1.645 plus the first correction term).
pub fn t90(dof: u32) -> f64 {
    match dof {
        0 => f64::INFINITY,
        1..=30 => T95[dof as usize - 1],
        _ => {
            let z = 1.644_854;
            z + (z * z * z + z) / (4.0 * dof as f64)
        }
    }
}

/// What the weighted fit knows about its own uncertainty (log-log space:
/// x = ln n, y = ln value).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Band {
    /// Weighted mean of x.
    pub x_mean: f64,
    /// Sum of the (relative) weights.
    pub sum_w: f64,
    /// Σ w·(x − x̄)².
    pub sxx_w: f64,
    /// Σ w·residual² / dof: the scale of the relative weights (the
    /// means' scale when they misfit, see the module's doc).
    pub resid_var: f64,
    pub dof: u32,
    /// √(means' scale ÷ points' scale) when over 1: how much the sizes'
    /// means misfit the power law beyond their repetitions' spread (1:
    /// not more than it says, or fewer than 3 sizes to tell).
    #[serde(default = "one")]
    pub birge_ratio: f64,
    /// How many sizes the fit went through (0: saved before this was kept).
    #[serde(default)]
    pub sizes: u32,
    /// The scatter of one size's mean between runs (σ of ln value, see
    /// [`super::run_scatter`]) and the degrees of freedom it was measured
    /// with; 0: none (a within-run band, or saved before it was kept).
    #[serde(default)]
    pub run_sd: f64,
    #[serde(default)]
    pub run_dof: u32,
    /// Mean and Σ(x − mean)² of the distinct sizes' x = ln n: what the
    /// run scatter's share of the band is computed from.
    #[serde(default)]
    pub size_x_mean: f64,
    #[serde(default)]
    pub size_sxx: f64,
}

fn one() -> f64 {
    1.0
}

/// A 90% interval; `high` is `None` when unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub low: f64,
    pub high: Option<f64>,
}

impl Band {
    fn t(&self) -> f64 {
        t90(self.dof)
    }

    /// Variance of the fitted ln value at x = ln n, and the degrees of
    /// freedom its t quantile takes (the run scatter's share included).
    pub(super) fn var_dof_at(&self, x: f64) -> (f64, f64) {
        let fit = self.resid_var * (1.0 / self.sum_w + (x - self.x_mean).powi(2) / self.sxx_w);
        let run = if self.run_sd > 0.0 {
            self.run_sd.powi(2) * (1.0 / self.sizes.max(1) as f64 + (x - self.size_x_mean).powi(2) / self.size_sxx)
        } else {
            0.0
        };
        super::run_scatter::combine(fit, self.dof, self.birge_ratio, run, self.run_dof)
    }

    /// Variance of the exponent and its degrees of freedom.
    pub(super) fn slope_var_dof(&self) -> (f64, f64) {
        let run = if self.run_sd > 0.0 { self.run_sd.powi(2) / self.size_sxx } else { 0.0 };
        super::run_scatter::combine(self.resid_var / self.sxx_w, self.dof, self.birge_ratio, run, self.run_dof)
    }

    /// 90% interval of the exponent.
    pub fn exponent(&self, fit: &PowerFit) -> Interval {
        let (v, dof) = self.slope_var_dof();
        let h = t90(dof as u32) * v.sqrt();
        Interval { low: fit.exponent - h, high: Some(fit.exponent + h) }
    }

    /// 90% interval of the fitted value at count `n`.
    pub fn value_at(&self, fit: &PowerFit, n: f64) -> Interval {
        let x = n.ln();
        let y = fit.coefficient.ln() + fit.exponent * x;
        let (v, dof) = self.var_dof_at(x);
        let h = t90(dof as u32) * v.sqrt();
        Interval { low: (y - h).exp(), high: Some((y + h).exp()) }
    }

    /// 90% interval of the count at which the curve reaches `value`: where
    /// the band's upper edge reaches it (low end) and its lower edge does
    /// (high end). `None` when even the upper edge never grows to it.
    pub fn count_reaching(&self, fit: &PowerFit, value: f64) -> Option<Interval> {
        if !(value > 0.0 && fit.coefficient > 0.0) {
            return None;
        }
        if self.run_sd > 0.0 {
            return self.count_reaching_numeric(fit, value);
        }
        // With d = x − x̄ and y0 = ŷ(x̄) − ln value, the edges cross where
        // (y0 + b·d)² = t²·s²·(1/W + d²/Sxx).
        let (b, t2s2) = (fit.exponent, self.t().powi(2) * self.resid_var);
        let y0 = fit.coefficient.ln() + b * self.x_mean - value.ln();
        let qa = b * b - t2s2 / self.sxx_w;
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
        let up = |d: f64| y0 + b * d + (t2s2 * (1.0 / self.sum_w + d * d / self.sxx_w)).sqrt();
        (up(d + 1.0) > up(d - 1.0)).then(|| Interval { low: to_n(d), high: None })
    }
}

/// The repetitions of one size: its count and one value per repetition.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeValues {
    pub count: f64,
    pub values: Vec<f64>,
}

/// Weighted power-law fit with its [`Band`] (none with fewer than 3
/// points, where nothing is left to estimate the scatter).
pub fn weighted_power(sizes: &[SizeValues]) -> Option<PowerFit> {
    let logs: Vec<(f64, Vec<f64>)> = sizes
        .iter()
        .filter(|s| s.count > 0.0)
        .map(|s| (s.count.ln(), s.values.iter().filter(|v| **v > 0.0 && v.is_finite()).map(|v| v.ln()).collect()))
        .filter(|(_, v): &(f64, Vec<f64>)| !v.is_empty())
        .collect();
    let weighted = logs.iter().all(|(_, v)| v.len() >= 2);
    let weight = |v: &[f64]| {
        if !weighted {
            return 1.0;
        }
        let m = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|y| (y - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
        1.0 / var.max(SIGMA_FLOOR * SIGMA_FLOOR)
    };
    let pts: Vec<(f64, f64, f64)> =
        logs.iter().flat_map(|(x, v)| { let w = weight(v); v.iter().map(move |y| (*x, *y, w)) }).collect();
    let sum_w: f64 = pts.iter().map(|p| p.2).sum();
    if pts.len() < 2 || sum_w <= 0.0 {
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
    let dof = pts.len().saturating_sub(2) as u32;
    // The size means' share of the residuals (lack of fit), weighted as
    // the mean of n points of weight w weighs: n·w.
    let sizes_fitted: Vec<(f64, f64, f64)> = logs
        .iter()
        .map(|(x, v)| {
            let m = v.iter().sum::<f64>() / v.len() as f64;
            (v.len() as f64 * weight(v), m - a - b * x, *x)
        })
        .collect();
    let k = sizes_fitted.len();
    let size_x_mean = sizes_fitted.iter().map(|s| s.2).sum::<f64>() / k.max(1) as f64;
    let size_sxx: f64 = sizes_fitted.iter().map(|s| (s.2 - size_x_mean).powi(2)).sum();
    let ss_means: f64 = sizes_fitted.iter().map(|(nw, r, _)| nw * r * r).sum();
    let band = (dof > 0).then(|| {
        let points = ssr / dof as f64;
        let means = (k > 2).then(|| ss_means / (k - 2) as f64);
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
        };
        match means {
            Some(m) if m > points => {
                let (dof, birge_ratio) = ((k - 2) as u32, (m / points).sqrt());
                Band { resid_var: m, dof, birge_ratio, ..base }
            }
            _ => base,
        }
    });
    Some(PowerFit {
        coefficient: a.exp(),
        exponent: b,
        r2: if syy_w > 0.0 { 1.0 - ssr / syy_w } else { 1.0 },
        exponent_stderr: band.map(|b| (b.resid_var / b.sxx_w).sqrt()).unwrap_or(f64::NAN),
        band,
    })
}

/// A size the gap fit left out, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeftOut {
    pub target: u64,
    pub median_gap_seconds: f64,
    pub floor_seconds: f64,
    pub reason: String,
}

/// The longest gaps of one size, with the control CPU's p99 gaps of the
/// same repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct GapSize {
    pub target: u64,
    pub count: f64,
    pub gaps: Vec<f64>,
    pub control_p99: Vec<f64>,
}

/// The noise floor of a size: [`NOISE_FLOOR_P99_FACTOR`] × the control's
/// median p99, and at least [`NOISE_FLOOR_SECONDS`].
pub fn noise_floor(control_p99: &[f64]) -> f64 {
    let p = median(control_p99);
    if p.is_finite() { (NOISE_FLOOR_P99_FACTOR * p).max(NOISE_FLOOR_SECONDS) } else { NOISE_FLOOR_SECONDS }
}

/// Splits the sizes into those whose median longest gap stands clear of the
/// noise floor and those left out (with the reason).
pub fn above_noise(sizes: &[GapSize]) -> (Vec<SizeValues>, Vec<LeftOut>) {
    let mut kept = Vec::new();
    let mut out = Vec::new();
    for s in sizes {
        let floor = noise_floor(&s.control_p99);
        let g = median(&s.gaps);
        if g >= floor {
            kept.push(SizeValues { count: s.count, values: s.gaps.clone() });
        } else {
            out.push(LeftOut {
                target: s.target,
                median_gap_seconds: g,
                floor_seconds: floor,
                reason: format!(
                    "median longest gap {:.1} ms is under the noise floor {:.1} ms (max of {:.0} ms and {}× the \
                     control CPU's p99 gap)",
                    g * 1e3,
                    floor * 1e3,
                    NOISE_FLOOR_SECONDS * 1e3,
                    NOISE_FLOOR_P99_FACTOR
                ),
            });
        }
    }
    (kept, out)
}

/// "205M (150M–290M)", "205M (150M–unbounded)" or "205M (no interval)".
pub fn count_with_interval(point: f64, low: Option<f64>, high: Option<f64>) -> String {
    let h = |n: f64| crate::size::human(n.max(0.0).min(u64::MAX as f64) as u64);
    match (low, high) {
        (Some(l), Some(hi)) => format!("{} ({}–{})", h(point), h(l), h(hi)),
        (Some(l), None) => format!("{} ({}–unbounded)", h(point), h(l)),
        _ => format!("{} (no interval)", h(point)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(close(e.low, 1.2 - 1.943 * se_b, 1e-9) && close(e.high.unwrap(), 1.2 + 1.943 * se_b, 1e-9));
        // At the weighted mean of x the band's half-width is t·s/√W (in ln).
        let mid = b.x_mean.exp();
        let v = b.value_at(&f, mid);
        let half = 1.943 * (s2 / 8.0).sqrt();
        assert!(close(v.high.unwrap() / f.at(mid), half.exp(), 1e-9), "{v:?}");
        assert!(close(v.low / f.at(mid), (-half).exp(), 1e-9));
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
        // One size's repetitions scatter widely: it counts less.
        let mut s = scattered(0.02);
        s[3].values = vec![s[3].values[0] * 3.0, s[3].values[1] * 0.9];
        let weighted = weighted_power(&s).unwrap();
        let pts: Vec<(f64, f64)> = s.iter().flat_map(|z| z.values.iter().map(move |v| (z.count, *v))).collect();
        let plain = super::super::fit::power(&pts).unwrap();
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
        // each size weighs w = 1/(2·0.1²) = 50 per point, so the means'
        // scale is 4 × 2·50·ln²1.3 / (k − 2) with k − 2 = 2.
        assert!(close(wide.exponent, 1.2, 1e-9) && close(wide.coefficient, clean.coefficient, 1e-9), "{wide:?}");
        assert_eq!(wb.dof, 2);
        assert!(close(wb.resid_var, 200.0 * 1.3f64.ln().powi(2), 1e-9), "{wb:?}");
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
        let (kept, out) =
            above_noise(&[size(500_000, 0.008, 0.001), size(1_000_000, 0.030, 0.008), size(2_000_000, 0.060, 0.008), size(4_000_000, 0.13, 0.002)]);
        assert_eq!(kept.iter().map(|s| s.count).collect::<Vec<_>>(), vec![2e6, 4e6]);
        assert_eq!(out.iter().map(|o| o.target).collect::<Vec<_>>(), vec![500_000, 1_000_000]);
        assert!(close(out[0].floor_seconds, 0.010, 1e-12) && close(out[1].floor_seconds, 0.040, 1e-12));
        assert!(out[1].reason.contains("30.0 ms") && out[1].reason.contains("40.0 ms"), "{}", out[1].reason);
        assert_eq!(noise_floor(&[]), NOISE_FLOOR_SECONDS);
    }

    #[test]
    fn t_quantiles() {
        assert_eq!(t90(6), 1.943);
        assert!(close(t90(1000), 1.6455, 1e-3));
        assert!(t90(0).is_infinite());
    }
}
