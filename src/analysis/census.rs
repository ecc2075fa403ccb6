//! What a sampled census says about the whole table: a count found in a
//! fraction `f` of the hash buckets, scaled up, with its 90% interval.
//!
//! A dentry's bucket is its name hash's top bits (`d_hash()` in
//! `fs/dcache.c`), so each dentry of a directory lands in a sampled bucket
//! with probability `f`, independently of the others: the count found is
//! Binomial(N, f), and for the interval it is taken as Poisson(N f), whose
//! exact (Garwood) 90% interval for the mean is `[G(0.05; k), G(0.95; k+1)]`
//! with `G(q; a)` the q-quantile of a Gamma(a, 1). Divided by `f` that
//! bounds N; the Poisson interval is at least as wide as the binomial one,
//! so the stated coverage is not overstated. A full walk (`f = 1`) is exact.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Gamma};

/// A count: what was found, what it says of the whole table, and the 90%
/// interval of that (all equal on a full walk).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Estimate {
    pub found: u64,
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
}

impl Estimate {
    pub(crate) fn contains(&self, n: u64) -> bool {
        (self.low..=self.high).contains(&(n as f64))
    }

    /// The same with `rejected` reads in the walked fraction `fraction`,
    /// each of which may have been a dentry the count missed: the upper
    /// end rises by them (scaled as the count is).
    pub(crate) fn with_rejected(self, rejected: u64, fraction: f64) -> Estimate {
        let f = fraction.clamp(f64::MIN_POSITIVE, 1.0);
        Estimate { high: self.high + rejected as f64 / f, ..self }
    }
}

fn gamma_quantile(shape: f64, q: f64) -> f64 {
    Gamma::new(shape, 1.0).map(|g| g.inverse_cdf(q)).unwrap_or(f64::NAN)
}

/// `found` dentries in a fraction `fraction` (0 < f ≤ 1) of the buckets.
pub(crate) fn estimate(found: u64, fraction: f64) -> Estimate {
    if fraction >= 1.0 {
        let n = found as f64;
        return Estimate { found, estimate: n, low: n, high: n };
    }
    let k = found as f64;
    let low = if found == 0 { 0.0 } else { gamma_quantile(k, 0.05) };
    let high = gamma_quantile(k + 1.0, 0.95);
    Estimate { found, estimate: k / fraction, low: low / fraction, high: high / fraction }
}

/// Whether `covered` of `n` intervals holding their truth is what 90%
/// intervals give: refused only when so few would happen by chance less
/// than once in a thousand (the lower tail of Binomial(n, 0.9)).
pub(crate) fn coverage_plausible(covered: u64, n: u64) -> bool {
    use statrs::distribution::{Binomial, DiscreteCDF};
    if n == 0 || covered >= n {
        return true;
    }
    Binomial::new(0.9, n).map(|b| b.cdf(covered) >= 1e-3).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_below_90_percent_beyond_chance_is_refused() {
        assert!(coverage_plausible(52, 52));
        assert!(coverage_plausible(2, 3), "one miss in three happens");
        assert!(coverage_plausible(880, 1000));
        assert!(!coverage_plausible(850, 1000));
        assert!(!coverage_plausible(0, 10));
    }

    #[test]
    fn a_full_walk_is_exact() {
        let e = estimate(300_000, 1.0);
        assert_eq!((e.estimate, e.low, e.high), (300_000.0, 300_000.0, 300_000.0));
    }

    #[test]
    fn garwood_interval_at_known_points() {
        // Tabulated exact Poisson 90% limits: k = 0: [0, 2.996]; k = 10: [5.425, 16.962].
        let e = estimate(0, 1.0 / 100.0);
        assert_eq!(e.low, 0.0);
        assert!((e.high / 100.0 - 2.9957).abs() < 1e-3, "{e:?}");
        let e = estimate(10, 0.5);
        assert!((e.low * 0.5 - 5.4254).abs() < 1e-3 && (e.high * 0.5 - 16.962).abs() < 1e-3, "{e:?}");
        assert_eq!(e.estimate, 20.0);
    }

    /// Coverage on simulated binomial samples: a directory of 3,000 names,
    /// 1% of buckets; the interval holds the truth in at least 90% of
    /// 2,000 draws (a fixed-seed generator, so the test is deterministic).
    #[test]
    fn the_interval_covers_the_truth_at_least_90_percent_of_the_time() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let (n, f, draws) = (3000u64, 0.01, 2000);
        let mut covered = 0;
        for _ in 0..draws {
            let k = (0..n).filter(|_| next() < f).count() as u64;
            covered += u32::from(estimate(k, f).contains(n));
        }
        assert!(covered as f64 / draws as f64 >= 0.90, "{covered} of {draws}");
    }
}
