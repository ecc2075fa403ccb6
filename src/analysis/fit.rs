//! Least-squares fits of cost against dentry count: a straight line
//! `y = a + b·n` and a power law `y = c·n^k` (a line in log-log space), each
//! with R². The exponent k says whether the cost per dentry is constant
//! (k ≈ 1), grows (k > 1: super-linear) or shrinks.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct LinearFit {
    pub intercept: f64,
    pub slope: f64,
    pub r2: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct PowerFit {
    pub coefficient: f64,
    pub exponent: f64,
    /// R² of the fit in log-log space.
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub r2: f64,
    /// Standard error of the exponent (NaN with fewer than 3 distinct points).
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub exponent_stderr: f64,
    /// The weighted fit's uncertainty, for 90% intervals (absent from plain
    /// least-squares fits and from calibrations saved before intervals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<super::interval::Band>,
}

/// Exponents above this are called super-linear (beyond fit noise on the
/// sizes a sweep covers).
pub(crate) const SUPERLINEAR_EXPONENT: f64 = 1.1;

/// Ordinary least squares of y on x. `None` with fewer than two distinct x.
pub(crate) fn linear(points: &[(f64, f64)]) -> Option<LinearFit> {
    let pts: Vec<_> = points.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
    let n = pts.len() as f64;
    // Distinct x, compared exactly: the mean of equal x can round off
    // theirs, and the tiny Sxx that leaves would pass for a slope.
    if !pts.iter().any(|p| p.0 != pts[0].0) {
        return None;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = pts.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let ss_res: f64 = pts.iter().map(|p| (p.1 - intercept - slope * p.0).powi(2)).sum();
    let r2 = if syy > 0.0 { 1.0 - ss_res / syy } else { 1.0 };
    Some(LinearFit { intercept, slope, r2 })
}

/// Power law through positive points, fitted as a line in log-log space.
pub(crate) fn power(points: &[(f64, f64)]) -> Option<PowerFit> {
    let logs: Vec<_> = points.iter().filter(|(x, y)| *x > 0.0 && *y > 0.0).map(|(x, y)| (x.ln(), y.ln())).collect();
    let l = linear(&logs)?;
    let n = logs.len() as f64;
    let mx = logs.iter().map(|p| p.0).sum::<f64>() / n;
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let ss_res: f64 = logs.iter().map(|p| (p.1 - l.intercept - l.slope * p.0).powi(2)).sum();
    let exponent_stderr = if logs.len() > 2 { (ss_res / (n - 2.0) / sxx).sqrt() } else { f64::NAN };
    Some(PowerFit { coefficient: l.intercept.exp(), exponent: l.slope, r2: l.r2, exponent_stderr, band: None })
}

impl LinearFit {
    pub(crate) fn at(&self, n: f64) -> f64 {
        self.intercept + self.slope * n
    }
    /// The n at which the line reaches `y`; `None` if it never does.
    pub(crate) fn solve(&self, y: f64) -> Option<f64> {
        if self.slope <= 0.0 {
            return None;
        }
        let n = (y - self.intercept) / self.slope;
        (n > 0.0).then_some(n)
    }
}

impl PowerFit {
    pub(crate) fn at(&self, n: f64) -> f64 {
        self.coefficient * n.powf(self.exponent)
    }
    /// The n at which the curve reaches `y`; `None` if it never grows.
    pub(crate) fn solve(&self, y: f64) -> Option<f64> {
        if self.exponent <= 0.0 || self.coefficient <= 0.0 || y <= 0.0 {
            return None;
        }
        Some((y / self.coefficient).powf(1.0 / self.exponent))
    }
    pub(crate) fn superlinear(&self) -> bool {
        self.exponent > SUPERLINEAR_EXPONENT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    /// Repetitions of one size alone give no line, even where the mean of
    /// their equal x rounds off it (ln 200000 three times does).
    #[test]
    fn one_x_repeated_is_no_line() {
        let x = 200_000f64.ln();
        assert!(linear(&[(x, -4.3), (x, -4.1), (x, -4.4)]).is_none());
        assert!(power(&[(2e5, 0.0134), (2e5, 0.0171), (2e5, 0.0122)]).is_none());
        assert!(linear(&[(x, -4.3), (x + 1.0, -4.1)]).is_some());
    }

    #[test]
    fn exact_line() {
        let pts: Vec<_> = (1..=5).map(|i| (i as f64 * 1e6, 0.05 + 3.6e-7 * i as f64 * 1e6)).collect();
        let f = linear(&pts).unwrap();
        assert!(close(f.slope, 3.6e-7, 1e-9));
        assert!(close(f.intercept, 0.05, 1e-6));
        assert!(close(f.r2, 1.0, 1e-12));
        assert!(close(f.solve(20.0).unwrap(), (20.0 - 0.05) / 3.6e-7, 1e-9));
    }

    #[test]
    fn seed_000_table_is_linear() {
        // The node-lockup report's measured (reclaimed, seconds): ns/dentry 363–433.
        let pts = [
            (99_600.0, 0.043),
            (499_948.0, 0.211),
            (999_917.0, 0.365),
            (1_999_782.0, 0.758),
            (4_999_470.0, 1.818),
            (9_999_922.0, 3.686),
        ];
        let p = power(&pts).unwrap();
        assert!(p.exponent > 0.95 && p.exponent < 1.0, "{p:?}");
        assert!(!p.superlinear());
        assert!(p.r2 > 0.99);
        let l = linear(&pts).unwrap();
        assert!(close(l.slope * 1e9, 368.0, 0.02), "{l:?}"); // ns per dentry
        // The seed's threshold: about 55M dentries for 20 s.
        let n = l.solve(20.0).unwrap();
        assert!(n > 50e6 && n < 60e6, "{n}");
    }

    #[test]
    fn power_law_recovers_exponent() {
        // Synthetic umount times with an exponent a little over 1.
        let pts = [(3e6, 2.6), (5e6, 3.9), (10e6, 11.8), (36e6, 36.8)];
        let p = power(&pts).unwrap();
        assert!(p.exponent > 1.0 && p.exponent < 1.2, "{p:?}");
        assert!(p.exponent_stderr > 0.0);
        let exact: Vec<_> = [1e5, 1e6, 1e7].iter().map(|&n| (n, 2e-9 * f64::powf(n, 1.3))).collect();
        let q = power(&exact).unwrap();
        assert!(close(q.exponent, 1.3, 1e-9) && close(q.coefficient, 2e-9, 1e-6));
        assert!(q.superlinear());
        assert!(close(q.solve(q.at(5e8)).unwrap(), 5e8, 1e-9));
    }

    #[test]
    fn degenerate_inputs() {
        assert!(linear(&[(1.0, 2.0)]).is_none());
        assert!(linear(&[(1.0, 2.0), (1.0, 3.0)]).is_none());
        assert!(power(&[(0.0, 1.0), (-1.0, 2.0)]).is_none());
        let flat = LinearFit { intercept: 1.0, slope: 0.0, r2: 1.0 };
        assert!(flat.solve(5.0).is_none());
    }
}
