//! Summary statistics: percentiles, spread, and the latency probe's gaps.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Nearest-rank percentile of sorted data (`q` in 0..=1).
pub(crate) fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub(crate) fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// Min, median and max of repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    pub(crate) fn of(values: &[f64]) -> Spread {
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Spread { min, median: median(values), max }
    }
}

/// Upper edges of the gap histogram buckets, microseconds; the last bucket
/// is everything above the last edge.
pub(crate) const GAP_BUCKET_EDGES_US: [u64; 12] =
    [200, 500, 1_000, 2_000, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000, 2_000_000, 10_000_000];

/// What one latency probe saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct GapStats {
    pub cpu: usize,
    pub interval_seconds: f64,
    pub samples: u64,
    pub max_gap_seconds: f64,
    pub p99_gap_seconds: f64,
    pub p50_gap_seconds: f64,
    /// Total time spent in gaps longer than 10 ms.
    pub stalled_seconds: f64,
    /// Counts per bucket of [`GAP_BUCKET_EDGES_US`] (one more for overflow).
    pub histogram: Vec<u64>,
}

impl GapStats {
    pub(crate) fn from_gaps_ns(cpu: usize, interval: Duration, gaps: &[u64]) -> GapStats {
        let mut sorted: Vec<f64> = gaps.iter().map(|&g| g as f64 / 1e9).collect();
        sorted.sort_by(f64::total_cmp);
        let mut histogram = vec![0u64; GAP_BUCKET_EDGES_US.len() + 1];
        for &g in gaps {
            let us = g / 1000;
            let i = GAP_BUCKET_EDGES_US.iter().position(|&e| us <= e).unwrap_or(GAP_BUCKET_EDGES_US.len());
            histogram[i] += 1;
        }
        GapStats {
            cpu,
            interval_seconds: interval.as_secs_f64(),
            samples: gaps.len() as u64,
            max_gap_seconds: sorted.last().copied().unwrap_or(0.0),
            p99_gap_seconds: if sorted.is_empty() { 0.0 } else { percentile_sorted(&sorted, 0.99) },
            p50_gap_seconds: if sorted.is_empty() { 0.0 } else { percentile_sorted(&sorted, 0.50) },
            stalled_seconds: sorted.iter().filter(|&&g| g > 0.010).sum(),
            histogram,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_median() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile_sorted(&v, 0.99), 99.0);
        assert_eq!(percentile_sorted(&v, 0.5), 50.0);
        assert_eq!(percentile_sorted(&v, 1.0), 100.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        let s = Spread::of(&[2.0, 9.0, 4.0]);
        assert_eq!((s.min, s.median, s.max), (2.0, 4.0, 9.0));
    }

    #[test]
    fn gap_stats_find_the_stall() {
        let mut gaps = vec![110_000u64; 1000]; // 110 µs
        gaps[500] = 1_500_000_000; // one 1.5 s stall
        let s = GapStats::from_gaps_ns(0, Duration::from_micros(100), &gaps);
        assert_eq!(s.samples, 1000);
        assert!((s.max_gap_seconds - 1.5).abs() < 1e-9);
        assert!((s.p99_gap_seconds - 110e-6).abs() < 1e-9);
        assert!((s.stalled_seconds - 1.5).abs() < 1e-9);
        assert_eq!(s.histogram[0], 999);
        assert_eq!(s.histogram[GAP_BUCKET_EDGES_US.iter().position(|&e| e == 2_000_000).unwrap()], 1);
        assert_eq!(s.histogram.iter().sum::<u64>(), 1000);
    }

    #[test]
    fn empty_probe_is_zero() {
        let s = GapStats::from_gaps_ns(1, Duration::from_micros(100), &[]);
        assert_eq!(s.samples, 0);
        assert_eq!(s.max_gap_seconds, 0.0);
    }
}
