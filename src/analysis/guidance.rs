//! The largest count one reclaim may walk before a task misses a
//! deadline, from a run's measured longest stretch per dentry: numbers in,
//! numbers out (docs/guidance.md's table is computed from this).
//!
//! Each measured size above the probe's noise floor gives a cost per
//! dentry, its longest stretch ÷ its count (the repetitions' least,
//! median and largest). The count one walk may reach within a deadline D
//! is D ÷ that cost: the point from the median cost of the sizes; its
//! interval is the range the sizes and repetitions allow (not a 90%
//! interval), from the largest cost (the low end) to the smallest (the
//! high end). Linear in the count:
//! where the stretch grows more slowly than the count (an exponent under
//! 1, a walk that yields), the true count is larger, so the figure errs
//! early. Sizes under the noise floor give no cost: a run with none says
//! the stretch did not rise above the floor at any size.

use serde::{Deserialize, Serialize};

/// One measured size: its count and its longest stretch over the repetitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Size {
    pub dentries: f64,
    pub gap_min_seconds: f64,
    pub gap_median_seconds: f64,
    pub gap_max_seconds: f64,
}

/// The count one walk may reach within a deadline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Allowed {
    pub deadline_seconds: f64,
    /// From the median cost per dentry of the sizes.
    pub dentries: f64,
    /// From the largest and the smallest cost any size and repetition gave.
    pub dentries_low: f64,
    pub dentries_high: f64,
}

/// Costs per dentry (seconds of stretch per dentry): least, median, largest.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cost {
    pub low: f64,
    pub median: f64,
    pub high: f64,
    pub sizes: usize,
}

/// The cost per dentry of the sizes above the noise floor; `None` when
/// none is.
pub(crate) fn cost(sizes: &[Size]) -> Option<Cost> {
    let per: Vec<&Size> = sizes.iter().filter(|s| s.dentries > 0.0 && s.gap_median_seconds > 0.0).collect();
    if per.is_empty() {
        return None;
    }
    let mut medians: Vec<f64> = per.iter().map(|s| s.gap_median_seconds / s.dentries).collect();
    medians.sort_by(f64::total_cmp);
    let n = medians.len();
    let median = if n % 2 == 1 { medians[n / 2] } else { (medians[n / 2 - 1] + medians[n / 2]) / 2.0 };
    let low = per.iter().map(|s| s.gap_min_seconds / s.dentries).fold(f64::INFINITY, f64::min);
    let high = per.iter().map(|s| s.gap_max_seconds / s.dentries).fold(0.0, f64::max);
    Some(Cost { low, median, high, sizes: n })
}

/// The count within `deadline_seconds` at cost `c`.
pub(crate) fn allowed(c: &Cost, deadline_seconds: f64) -> Allowed {
    Allowed {
        deadline_seconds,
        dentries: deadline_seconds / c.median,
        dentries_low: deadline_seconds / c.high,
        dentries_high: if c.low > 0.0 { deadline_seconds / c.low } else { f64::INFINITY },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(n: f64, min: f64, med: f64, max: f64) -> Size {
        Size { dentries: n, gap_min_seconds: min, gap_median_seconds: med, gap_max_seconds: max }
    }

    #[test]
    fn a_linear_walk_gives_the_deadline_over_its_cost() {
        // 100 ns per dentry at 1M and 2M, the repetitions ±10%.
        let c = cost(&[size(1e6, 0.09, 0.1, 0.11), size(2e6, 0.18, 0.2, 0.22)]).unwrap();
        assert!((c.median - 1e-7).abs() < 1e-15, "{c:?}");
        let a = allowed(&c, 1.0);
        assert!((a.dentries - 1e7).abs() < 1.0);
        assert!((a.dentries_low - 1.0 / 1.1e-7).abs() < 1.0, "the largest cost gives the low end");
        assert!((a.dentries_high - 1.0 / 0.9e-7).abs() < 1.0);
        assert!(a.dentries_low < a.dentries && a.dentries < a.dentries_high);
        assert!((allowed(&c, 20.0).dentries - 2e8).abs() < 10.0, "20 times the count for 20 times the deadline");
    }

    #[test]
    fn nothing_above_the_floor_gives_no_cost() {
        assert_eq!(cost(&[]), None);
        assert_eq!(cost(&[size(1e6, 0.0, 0.0, 0.0)]), None);
    }

    #[test]
    fn the_median_of_the_sizes() {
        let c = cost(&[size(1e6, 0.1, 0.1, 0.1), size(1e6, 0.3, 0.3, 0.3), size(1e6, 0.2, 0.2, 0.2)]).unwrap();
        assert!((c.median - 2e-7).abs() < 1e-15);
        assert_eq!(c.sizes, 3);
    }
}
