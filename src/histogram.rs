//! A log-linear latency histogram: fixed size, mergeable, cheap to record
//! into from a tight loop. Values below [`SUB`] are counted exactly; above,
//! each power of two is split into [`SUB`] equal buckets, so a percentile is
//! off by at most 1/[`SUB`] (about 3 %) of its value.

use serde::{Deserialize, Serialize};

/// Buckets per power of two.
pub(crate) const SUB: u64 = 32;
const SUB_BITS: u32 = SUB.trailing_zeros();
/// Enough buckets for any u64.
const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) * SUB as usize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Histogram {
    /// Counts per bucket; trailing empty buckets are dropped when serialised.
    counts: Vec<u64>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; BUCKETS] }
    }
}

fn index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    let sub = (v >> shift) - SUB; // 0..SUB
    ((shift as u64 + 1) * SUB + sub) as usize
}

/// The smallest and largest value that land in bucket `i`.
fn bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < SUB {
        return (i, i);
    }
    let shift = i / SUB - 1;
    let sub = i % SUB;
    let lo = (SUB + sub) << shift;
    (lo, lo + (1u64 << shift) - 1)
}

impl Histogram {
    pub(crate) fn record(&mut self, v: u64) {
        let i = index(v);
        if i >= self.counts.len() {
            self.counts.resize(BUCKETS, 0);
        }
        self.counts[i] += 1;
    }

    pub(crate) fn merge(&mut self, other: &Histogram) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Drops trailing empty buckets (for a compact JSON form).
    pub(crate) fn compact(mut self) -> Histogram {
        let keep = self.counts.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
        self.counts.truncate(keep);
        self
    }

    /// Nearest-rank percentile (`q` in 0..=1), as the midpoint of its
    /// bucket; `None` when empty.
    pub(crate) fn percentile(&self, q: f64) -> Option<f64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = bounds(i);
                return Some((lo as f64 + hi as f64) / 2.0);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values_in_order() {
        let mut prev_hi = None;
        for i in 0..BUCKETS - 1 {
            let (lo, hi) = bounds(i);
            assert!(lo <= hi);
            if let Some(p) = prev_hi {
                assert_eq!(lo, p + 1, "bucket {i} starts right after the previous one");
            }
            assert_eq!(index(lo), i);
            assert_eq!(index(hi), i);
            prev_hi = Some(hi);
        }
        assert_eq!(index(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn percentiles_within_bucket_error() {
        let mut h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v * 100); // 100 ns .. 100 µs
        }
        assert_eq!(h.count(), 1000);
        let p50 = h.percentile(0.5).unwrap();
        let p99 = h.percentile(0.99).unwrap();
        assert!((p50 / 50_000.0 - 1.0).abs() < 1.0 / SUB as f64, "p50 {p50}");
        assert!((p99 / 99_000.0 - 1.0).abs() < 1.0 / SUB as f64, "p99 {p99}");
        assert_eq!(Histogram::default().percentile(0.5), None);
        assert_eq!(h.percentile(0.0).unwrap(), h.percentile(0.000_001).unwrap());
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::default();
        h.record(7);
        h.record(7);
        h.record(9);
        assert_eq!(h.percentile(0.5), Some(7.0));
        assert_eq!(h.percentile(1.0), Some(9.0));
    }

    #[test]
    fn merge_and_compact_round_trip() {
        let mut a = Histogram::default();
        let mut b = Histogram::default();
        a.record(1_000);
        b.record(2_000_000);
        b.record(3);
        a.merge(&b.clone().compact());
        assert_eq!(a.count(), 3);
        let c = a.clone().compact();
        let json = serde_json::to_string(&c).unwrap();
        let back: Histogram = serde_json::from_str(&json).unwrap();
        assert_eq!(back.percentile(1.0), a.percentile(1.0));
        let mut d = back;
        d.record(u64::MAX); // grows back to full size
        assert_eq!(d.count(), 4);
    }
}
