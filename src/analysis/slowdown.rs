//! A slowdown with its uncertainty: the ratio of a latency after a change
//! to the latency before it, from repetitions.
//!
//! Each repetition gives one ratio (its median after / its median before).
//! The estimate is their geometric mean, and the 95 % interval a Student-t
//! interval over the logarithms of the ratios, taken back with exp: ratios
//! multiply, so their logarithms are what averages sensibly, and the
//! interval stays positive and symmetric in "× slower" / "× faster".

use serde::{Deserialize, Serialize};

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The two-sided 95 % quantile of Student's t, t(0.975; df), from statrs
/// (exact for every df, no table cut-off); NaN for df 0.
pub(crate) fn t975(df: usize) -> f64 {
    if df == 0 {
        return f64::NAN;
    }
    StudentsT::new(0.0, 1.0, df as f64).map_or(f64::NAN, |t| t.inverse_cdf(0.975))
}

/// How the interval was computed, written into results.
pub(crate) const METHOD: &str = "geometric mean of the repetitions' ratios of medians, with a 95% Student-t interval \
                          over their logarithms";

/// A ratio with its 95 % interval. The bounds are NaN (null in JSON) with
/// a single repetition.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Ratio {
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub estimate: f64,
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub ci_low: f64,
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub ci_high: f64,
    pub reps: usize,
}

/// The ratio `after / before` over paired repetitions (non-positive and
/// non-finite pairs are left out).
pub(crate) fn ratio(before: &[f64], after: &[f64]) -> Ratio {
    let logs: Vec<f64> = before
        .iter()
        .zip(after)
        .filter(|(b, a)| b.is_finite() && a.is_finite() && **b > 0.0 && **a > 0.0)
        .map(|(b, a)| (a / b).ln())
        .collect();
    let n = logs.len();
    if n == 0 {
        return Ratio { estimate: f64::NAN, ci_low: f64::NAN, ci_high: f64::NAN, reps: 0 };
    }
    let mean = logs.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return Ratio { estimate: mean.exp(), ci_low: f64::NAN, ci_high: f64::NAN, reps: 1 };
    }
    let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = t975(n - 1) * (var / n as f64).sqrt();
    Ratio { estimate: mean.exp(), ci_low: (mean - half).exp(), ci_high: (mean + half).exp(), reps: n }
}

/// What a ratio says, against a smallest effect worth naming.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Effect {
    /// The whole interval is above 1 + `min_effect`.
    Slower,
    /// The whole interval is below 1 (faster after).
    Faster,
    /// The interval is above 1 but reaches below 1 + `min_effect`: a small
    /// slowdown, or none.
    Small,
    /// The interval contains 1.
    None,
    /// One repetition: no interval.
    Unknown,
}

impl Ratio {
    pub(crate) fn effect(&self, min_effect: f64) -> Effect {
        if !(self.ci_low.is_finite() && self.ci_high.is_finite()) {
            Effect::Unknown
        } else if self.ci_low > 1.0 + min_effect {
            Effect::Slower
        } else if self.ci_low > 1.0 {
            Effect::Small
        } else if self.ci_high < 1.0 {
            Effect::Faster
        } else {
            Effect::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_ratio_has_a_tight_interval() {
        let r = ratio(&[100.0, 200.0, 50.0], &[150.0, 300.0, 75.0]);
        assert!((r.estimate - 1.5).abs() < 1e-12);
        assert!((r.ci_low - 1.5).abs() < 1e-12 && (r.ci_high - 1.5).abs() < 1e-12);
        assert_eq!(r.reps, 3);
        assert_eq!(r.effect(0.05), Effect::Slower);
    }

    #[test]
    fn interval_matches_a_hand_computed_t_interval() {
        // log ratios 0, ln 2: mean ln√2, sd ln2/√2, n 2, t(0.975; 1) =
        // tan(0.475π) = 12.7062 (Cauchy: exact in closed form).
        let r = ratio(&[1.0, 1.0], &[1.0, 2.0]);
        let half = (0.475 * std::f64::consts::PI).tan() * (2f64.ln() / 2f64.sqrt()) / 2f64.sqrt();
        assert!((r.estimate - 2f64.sqrt()).abs() < 1e-12);
        assert!((r.ci_low - (2f64.sqrt().ln() - half).exp()).abs() < 1e-9);
        assert!((r.ci_high - (2f64.sqrt().ln() + half).exp()).abs() < 1e-9);
        assert_eq!(r.effect(0.05), Effect::None);
    }

    #[test]
    fn one_rep_has_no_interval_and_bad_pairs_drop() {
        let r = ratio(&[100.0, 0.0, f64::NAN], &[110.0, 5.0, 1.0]);
        assert_eq!(r.reps, 1);
        assert!((r.estimate - 1.1).abs() < 1e-12 && r.ci_low.is_nan());
        assert_eq!(r.effect(0.05), Effect::Unknown);
        assert_eq!(ratio(&[], &[]).reps, 0);
    }

    #[test]
    fn effects_are_classified() {
        let mk = |lo, hi| Ratio { estimate: 1.0, ci_low: lo, ci_high: hi, reps: 5 };
        assert_eq!(mk(1.2, 1.4).effect(0.05), Effect::Slower);
        assert_eq!(mk(1.01, 1.1).effect(0.05), Effect::Small);
        assert_eq!(mk(0.98, 1.03).effect(0.05), Effect::None);
        assert_eq!(mk(0.8, 0.9).effect(0.05), Effect::Faster);
    }

    #[test]
    fn t_quantiles() {
        assert!(t975(0).is_nan());
        // Published table values (3 decimals).
        for (df, t) in [(1, 12.706), (4, 2.776), (30, 2.042), (31, 2.040), (100, 1.984), (1000, 1.962)] {
            assert!((t975(df) - t).abs() < 5e-4, "df {df}: {} vs {t}", t975(df));
        }
    }

    #[test]
    fn survives_json_with_null_bounds() {
        let r = ratio(&[1.0], &[2.0]);
        let back: Ratio = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert!(back.ci_low.is_nan() && back.estimate == 2.0);
    }
}
