//! 90% intervals for the power-law fits, and the noise floor below which a
//! longest gap says nothing about the reclaim.
//!
//! The fit is weighted least squares in log-log space: each repetition is a
//! point, weighted by 1/σ² of its size's repetitions (σ the standard
//! deviation of ln(value), at least [`SIGMA_FLOOR`]) when every size has
//! at least [`MIN_REPS_TO_WEIGHT`] of them, else all alike; the weights are
//! taken as relative (the scale comes from the residuals). The exponent and the
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

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::run_scatter::{PREDICTED_RUNS, RunScatter};
use crate::stats::median;

/// Smallest σ of ln(value) a size is weighted with (5%): repetitions that
/// happen to agree exactly must not take all the weight.
pub(crate) const SIGMA_FLOOR: f64 = 0.05;

/// Fewest repetitions every size needs before its own spread weights it.
/// A σ from two values has one degree of freedom: its 90% range spans a
/// factor of about 30 (a variance's, about 1000): it weights the fit by noise.
/// On this project's VM two idle quick sweeps of 250k–8M × 2 had one size
/// whose two longest gaps agreed by chance (500k: 76 and 77 ms, 1.7× the
/// other runs' 500k) take the floor's full weight and pull the edge 1.3×
/// early; with equal weights the four runs' points lay within 1.17×. The
/// pooled scatter of ln(gap) over those runs (0.08–0.17 per size) does not
/// fall with the count enough to weight by it.
pub(crate) const MIN_REPS_TO_WEIGHT: usize = 3;
/// A size's longest gap must be at least this many times the control CPU's
/// p99 gap to enter the gap fit.
pub(crate) const NOISE_FLOOR_P99_FACTOR: f64 = 5.0;
/// ... and at least this long (seconds): under it, scheduler ticks and
/// interrupts make the longest gap, not the reclaim.
pub(crate) const NOISE_FLOOR_SECONDS: f64 = 0.010;

/// The 0.95 quantile of Student's t with `dof` degrees of freedom (the
/// half-width factor of a two-sided 90% interval), from statrs, exact for
/// every degree of freedom; infinite at 0. The first 256 are computed once
/// and kept: the band's numeric crossing asks for thousands.
pub(crate) fn t90(dof: u32) -> f64 {
    static TABLE: OnceLock<Vec<f64>> = OnceLock::new();
    let quantile = |dof: u32| StudentsT::new(0.0, 1.0, f64::from(dof)).map_or(f64::NAN, |t| t.inverse_cdf(0.95));
    match dof {
        0 => f64::INFINITY,
        1..=256 => TABLE.get_or_init(|| (1..=256).map(quantile).collect())[dof as usize - 1],
        _ => quantile(dof),
    }
}

/// The Welch–Satterthwaite sum of variances (each with its degrees of
/// freedom), its degrees of freedom lowered where needed so that the
/// half-width is never under any part's own: adding a variance known with
/// many degrees of freedom to one known with few raises the count, and an
/// added uncertainty must never narrow the interval.
pub(super) fn never_narrower(parts: &[(f64, f64)]) -> (f64, f64) {
    let (total, mut dof) = super::run_scatter::welch(parts);
    let half = |v: f64, d: f64| t90(d as u32) * v.sqrt();
    for &(v, d) in parts.iter().filter(|p| p.0.is_finite() && p.0 > 0.0) {
        let d = d.clamp(1.0, 1e6);
        if half(v, d) > half(total, dof) {
            dof = d;
        }
    }
    (total, dof)
}

/// What the weighted fit knows about its own uncertainty (log-log space:
/// x = ln n, y = ln value).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Band {
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
    /// The exponent was fixed (at 1: the linear model of
    /// [`super::linearity`]), not fitted: the prefactor is uncertain from
    /// the run, and the exponent by [`Band::exponent_sd`] (measured beyond
    /// the sizes), which widens the band with the distance from them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fixed_exponent: bool,
    /// The shift of a whole run between runs (σ of ln value, see
    /// [`super::run_scatter`]) and its degrees of freedom (runs − 1), carried
    /// [`super::run_scatter::PREDICTED_RUNS`] times: a prediction for the
    /// node's next reclaim. 0: none (a within-run band, or saved before).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shift_sd: f64,
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub shift_dof: u32,
    /// With a fixed exponent: the exponent's uncertainty σₖ beyond the
    /// sizes, carried as σₖ²·(x − x̄)² to the count predicted for.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub exponent_sd: f64,
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub exponent_dof: u32,
    /// With a fixed exponent: the drift above 1 the fit's exponent carries
    /// past the sizes (measured beyond them; 0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub exponent_drift: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

fn one() -> f64 {
    1.0
}

/// A 90% interval; `high` is `None` when unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Interval {
    pub low: f64,
    pub high: Option<f64>,
}

impl Band {
    /// The band of a prediction for the node's next reclaim: this run's
    /// shift and the next one's, and with a fixed exponent its uncertainty
    /// beyond the sizes (see [`super::run_scatter`]).
    pub(crate) fn with_run_scatter(self, rs: RunScatter) -> Band {
        let (exponent_sd, exponent_dof, exponent_drift) = if self.fixed_exponent {
            (rs.exponent_sd, rs.exponent_dof, rs.exponent_drift.max(0.0))
        } else {
            (0.0, 0, 0.0)
        };
        Band { shift_sd: rs.sd, shift_dof: rs.dof, exponent_sd, exponent_dof, exponent_drift, ..self }
    }

    /// Whether the band carries anything beyond this run's own fit.
    pub(crate) fn across_runs(&self) -> bool {
        self.run_sd > 0.0 || self.shift_sd > 0.0 || self.exponent_sd > 0.0
    }

    pub(super) fn t(&self) -> f64 {
        t90(self.dof)
    }

    /// 1/Σw(x − x̄)², the slope's share of the band (0 with a fixed exponent).
    pub(super) fn slope_weight(&self) -> f64 {
        if self.fixed_exponent { 0.0 } else { 1.0 / self.sxx_w }
    }

    /// 1/Σ(xᵢ − x̄)² over the sizes, the old run scatter's slope share.
    fn size_slope_weight(&self) -> f64 {
        if self.fixed_exponent { 0.0 } else { 1.0 / self.size_sxx }
    }

    /// The old run scatter's share at the sizes' mean: 1/k for a fitted
    /// exponent (the error taken independent between sizes), whole for a
    /// fixed one.
    fn size_mean_weight(&self) -> f64 {
        if self.fixed_exponent { 1.0 } else { 1.0 / self.sizes.max(1) as f64 }
    }

    /// The shift's and the fixed exponent's variances at x = ln n, with
    /// their degrees of freedom.
    fn beyond_run(&self, x: f64) -> [(f64, f64); 2] {
        let shift = PREDICTED_RUNS * self.shift_sd.powi(2);
        let exponent = if self.fixed_exponent { (self.exponent_sd * (x - self.size_x_mean)).powi(2) } else { 0.0 };
        [(shift, f64::from(self.shift_dof)), (exponent, f64::from(self.exponent_dof))]
    }

    /// Variance of the fitted ln value at x = ln n, and the degrees of
    /// freedom its t quantile takes (the run scatter's share included).
    pub(super) fn var_dof_at(&self, x: f64) -> (f64, f64) {
        let fit = self.resid_var * (1.0 / self.sum_w + (x - self.x_mean).powi(2) * self.slope_weight());
        let run = if self.run_sd > 0.0 {
            self.run_sd.powi(2) * (self.size_mean_weight() + (x - self.size_x_mean).powi(2) * self.size_slope_weight())
        } else {
            0.0
        };
        let own = super::run_scatter::combine(fit, self.dof, self.birge_ratio, run, self.run_dof);
        let [shift, exponent] = self.beyond_run(x);
        never_narrower(&[own, shift, exponent])
    }

    /// Variance of the exponent and its degrees of freedom (with a fixed
    /// exponent, its uncertainty beyond the sizes).
    pub(super) fn slope_var_dof(&self) -> (f64, f64) {
        if self.fixed_exponent {
            return (self.exponent_sd.powi(2), f64::from(self.exponent_dof.max(1)));
        }
        let run = if self.run_sd > 0.0 { self.run_sd.powi(2) * self.size_slope_weight() } else { 0.0 };
        super::run_scatter::combine(self.resid_var * self.slope_weight(), self.dof, self.birge_ratio, run, self.run_dof)
    }
}

/// The repetitions of one size: its count and one value per repetition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SizeValues {
    pub count: f64,
    pub values: Vec<f64>,
}

/// A size the gap fit left out, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LeftOut {
    pub target: u64,
    pub median_gap_seconds: f64,
    pub floor_seconds: f64,
    pub reason: String,
}

/// The longest gaps of one size, with the control CPU's p99 gaps of the
/// same repetitions.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GapSize {
    pub target: u64,
    pub count: f64,
    pub gaps: Vec<f64>,
    pub control_p99: Vec<f64>,
}

/// The noise floor of a size: [`NOISE_FLOOR_P99_FACTOR`] × the control's
/// median p99, and at least [`NOISE_FLOOR_SECONDS`].
pub(crate) fn noise_floor(control_p99: &[f64]) -> f64 {
    let p = median(control_p99);
    if p.is_finite() { (NOISE_FLOOR_P99_FACTOR * p).max(NOISE_FLOOR_SECONDS) } else { NOISE_FLOOR_SECONDS }
}

/// Splits the sizes into those whose median longest gap stands clear of the
/// noise floor and those left out (with the reason).
pub(crate) fn above_noise(sizes: &[GapSize]) -> (Vec<SizeValues>, Vec<LeftOut>) {
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
pub(crate) fn count_with_interval(point: f64, low: Option<f64>, high: Option<f64>) -> String {
    let h = |n: f64| crate::size::human(n.max(0.0).min(u64::MAX as f64) as u64);
    match (low, high) {
        (Some(l), Some(hi)) => format!("{} ({}–{})", h(point), h(l), h(hi)),
        (Some(l), None) => format!("{} ({}–unbounded)", h(point), h(l)),
        _ => format!("{} (no interval)", h(point)),
    }
}
