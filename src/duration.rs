//! Durations for people, shared by the benchmarks' progress lines and the
//! renderers.

/// Seconds for people: `43 ms`, `3.69 s`, `9.2 min`.
pub(crate) fn secs(s: f64) -> String {
    if !s.is_finite() {
        "–".into()
    } else if s < 0.001 {
        format!("{:.0} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else if s < 120.0 {
        format!("{s:.2} s")
    } else if s < 7200.0 {
        format!("{:.0} s (~{:.1} min)", s, s / 60.0)
    } else {
        format!("{:.0} s (~{:.1} h)", s, s / 3600.0)
    }
}

/// A latency in nanoseconds for people: `412 ns`, `1.24 µs`, `3.1 ms`.
pub(crate) fn nanos(ns: f64) -> String {
    if !ns.is_finite() {
        "–".into()
    } else if ns < 1_000.0 {
        format!("{ns:.0} ns")
    } else if ns < 1_000_000.0 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        secs(ns / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_format() {
        assert_eq!(secs(0.043), "43 ms");
        assert_eq!(secs(3.686), "3.69 s");
        assert_eq!(secs(552.0), "552 s (~9.2 min)");
        assert_eq!(secs(0.0002), "200 µs");
        assert_eq!(secs(f64::NAN), "–");
    }

    #[test]
    fn nanos_format() {
        assert_eq!(nanos(412.4), "412 ns");
        assert_eq!(nanos(1_240.0), "1.24 µs");
        assert_eq!(nanos(3_100_000.0), "3 ms");
    }
}
