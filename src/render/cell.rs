//! Cells and lines every benchmark's tables share: a spread of times, a
//! rate, the environment line.

use crate::duration::secs;
use crate::size::human;
use crate::stats::Spread;

/// A median time, with its range when the repetitions differ.
pub(crate) fn spread_secs(s: &Spread) -> String {
    if (s.max - s.min).abs() < 1e-12 {
        secs(s.median)
    } else {
        format!("{} ({}–{})", secs(s.median), secs(s.min), secs(s.max))
    }
}

/// A median in nanoseconds, with its range when the repetitions differ.
pub(crate) fn spread_ns(s: &Spread) -> String {
    if (s.max - s.min).abs() < 0.5 {
        format!("{:.0} ns", s.median)
    } else {
        format!("{:.0} ns ({:.0}–{:.0})", s.median, s.min, s.max)
    }
}

/// A rate for people: `1.23M`, `845k`.
pub(crate) fn per_second(r: f64) -> String {
    human(r.max(0.0).round() as u64)
}

pub(crate) fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
}

/// One line describing the environment.
pub(crate) fn environment_line(e: &crate::env::Environment) -> String {
    format!(
        "kernel {} ({} preemption), {} CPUs, {} RAM, watchdog_thresh {}, vfs_cache_pressure {}",
        e.kernel,
        e.preemption,
        e.cpus,
        crate::size::bytes(e.mem_total_bytes),
        e.watchdog_thresh_seconds.map(|t| format!("{t} s")).unwrap_or_else(|| "unknown".into()),
        e.vfs_cache_pressure.map(|t| t.to_string()).unwrap_or_else(|| "unknown".into()),
    )
}
