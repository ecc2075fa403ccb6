//! Scaling figures of a thread sweep: throughput, speedup and efficiency
//! against perfect scaling from the smallest count measured.

/// Operations per second over a window (0 for an empty window).
pub(crate) fn rate(ops: u64, seconds: f64) -> f64 {
    if seconds > 0.0 { ops as f64 / seconds } else { 0.0 }
}

/// `rate(n) / rate(base)`.
pub(crate) fn speedup(rate_n: f64, rate_base: f64) -> f64 {
    if rate_base > 0.0 { rate_n / rate_base } else { f64::NAN }
}

/// Throughput at `n` workers against perfect scaling from `base` workers:
/// `(rate(n) / n) / (rate(base) / base)`. 1.0 is perfect; 0.5 means each
/// worker gets half as much done as it did at the base count. With base 1
/// this is ops(n) / (n · ops(1)).
pub(crate) fn efficiency(rate_n: f64, n: usize, rate_base: f64, base: usize) -> f64 {
    if rate_base <= 0.0 || n == 0 || base == 0 {
        return f64::NAN;
    }
    (rate_n / n as f64) / (rate_base / base as f64)
}

/// Share of CPU time spent in the kernel.
pub(crate) fn sys_share(user_seconds: f64, sys_seconds: f64) -> f64 {
    let total = user_seconds + sys_seconds;
    if total > 0.0 { sys_seconds / total } else { f64::NAN }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfect_and_flat_scaling() {
        assert_eq!(efficiency(2e6, 2, 1e6, 1), 1.0);
        assert_eq!(efficiency(1e6, 2, 1e6, 1), 0.5);
        assert_eq!(efficiency(4e6, 4, 2e6, 2), 1.0);
        assert_eq!(speedup(3e6, 1e6), 3.0);
        assert!(efficiency(1.0, 2, 0.0, 1).is_nan());
    }

    #[test]
    fn rate_and_share() {
        assert_eq!(rate(1000, 0.5), 2000.0);
        assert_eq!(rate(1000, 0.0), 0.0);
        assert_eq!(sys_share(1.0, 3.0), 0.75);
        assert!(sys_share(0.0, 0.0).is_nan());
    }
}
