//! Renderers: one file per output format. Each consumes a result struct and
//! nothing else.

pub mod json;
pub mod markdown;
pub mod table;

use crate::analysis::stats::Spread;
use crate::bench::reclaim::ReclaimResult;
use crate::bench::scale::OpSeries;
use crate::size::{grouped, human};

/// Seconds for people: `43 ms`, `3.69 s`, `9.2 min`.
pub fn secs(s: f64) -> String {
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

fn spread_secs(s: &Spread) -> String {
    if (s.max - s.min).abs() < 1e-12 {
        secs(s.median)
    } else {
        format!("{} ({}–{})", secs(s.median), secs(s.min), secs(s.max))
    }
}

fn spread_ns(s: &Spread) -> String {
    if (s.max - s.min).abs() < 0.5 {
        format!("{:.0} ns", s.median)
    } else {
        format!("{:.0} ns ({:.0}–{:.0})", s.median, s.min, s.max)
    }
}

/// A table as header + rows of cells, rendered by `table` or `markdown`.
pub struct Grid {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Seed 000's results table plus the gap columns.
pub fn reclaim_grid(r: &ReclaimResult) -> Grid {
    let method = r.options.method.name();
    let cpu = r.options.cpu;
    let header = vec![
        "Target".into(),
        "Reclaimed".into(),
        "vs target".into(),
        format!("{} time", capitalise(method)),
        "ns/dentry".into(),
        format!("Extrapolated to {}", human(r.options.extrapolate)),
        format!("Max gap (CPU {cpu})"),
        "p99 gap".into(),
        r.options.control_cpu.map(|c| format!("Control max (CPU {c})")).unwrap_or_else(|| "Control max".into()),
        "Kernel msgs".into(),
    ];
    let rows = r
        .sizes
        .iter()
        .map(|s| {
            vec![
                human(s.target),
                grouped(s.reclaimed.median.max(0.0) as u64),
                format!("{:+.2}%", s.reclaimed_vs_target * 100.0),
                spread_secs(&s.reclaim_seconds),
                spread_ns(&s.ns_per_dentry),
                secs(s.extrapolated_seconds),
                spread_secs(&s.max_gap_seconds),
                secs(s.p99_gap_seconds),
                s.control_max_gap_seconds.map(secs).unwrap_or_else(|| "–".into()),
                if s.kernel_messages == 0 {
                    "none".into()
                } else {
                    format!("{} ({} soft lockup)", s.kernel_messages, s.soft_lockups)
                },
            ]
        })
        .collect();
    Grid { header, rows }
}

/// The threshold table: predicted time and longest stretch at chosen counts.
pub fn threshold_grid(r: &ReclaimResult) -> Option<Grid> {
    let v = r.verdict.as_ref()?;
    let thr = v.soft_lockup_threshold_seconds;
    let header = vec![
        "Dentry count".into(),
        "Predicted reclaim time".into(),
        "Predicted longest stretch".into(),
        format!("Exceeds {thr:.0} s?"),
        "Note".into(),
    ];
    let rows = v
        .thresholds
        .iter()
        .map(|t| {
            let yes = |b: bool, x: Option<f64>| match x {
                Some(x) if b => format!("yes ({:.1}×)", x / thr),
                Some(_) => "no".to_string(),
                None => "–".to_string(),
            };
            vec![
                human(t.dentries as u64),
                t.reclaim_seconds.map(secs).unwrap_or_else(|| "–".into()),
                t.max_gap_seconds.map(secs).unwrap_or_else(|| "–".into()),
                format!(
                    "time: {}, stretch: {}",
                    yes(t.exceeds_by_time, t.reclaim_seconds),
                    yes(t.exceeds_by_gap, t.max_gap_seconds)
                ),
                t.label.clone(),
            ]
        })
        .collect();
    Some(Grid { header, rows })
}

/// The fit lines for people.
pub fn fit_lines(r: &ReclaimResult) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(p) = r.fits.time_power {
        out.push(format!(
            "reclaim time ≈ {:.3e} · N^{:.3} s (power law, R² {:.4}, exponent ± {:.3}){}",
            p.coefficient,
            p.exponent,
            p.r2,
            p.exponent_stderr,
            if p.superlinear() { " — super-linear" } else { "" }
        ));
    }
    if let Some(l) = r.fits.time_linear {
        out.push(format!(
            "reclaim time ≈ {:.4} s + {:.1} ns · N (linear, R² {:.4})",
            l.intercept,
            l.slope * 1e9,
            l.r2
        ));
    }
    if let Some(p) = r.fits.gap_power {
        out.push(format!(
            "longest gap  ≈ {:.3e} · N^{:.3} s (power law, R² {:.4})",
            p.coefficient, p.exponent, p.r2
        ));
    }
    if out.is_empty() {
        out.push("no fit: at least two distinct sizes are needed".into());
    }
    out
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
}

/// A latency in nanoseconds for people: `412 ns`, `1.24 µs`, `3.1 ms`.
pub fn nanos(ns: f64) -> String {
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

/// A rate for people: `1.23M`, `845k`.
fn per_second(r: f64) -> String {
    human(r.max(0.0).round() as u64)
}

/// One operation's sweep: throughput, scaling, CPU and latency per count.
pub fn scale_grid(s: &OpSeries) -> Grid {
    let header = ["Threads", "ops/s", "ops/s/thread", "Speedup", "Efficiency", "sys share", "CPUs busy", "p50", "p99"]
        .map(String::from)
        .to_vec();
    let opt = |v: Option<f64>, f: fn(f64) -> String| v.map(f).unwrap_or_else(|| "–".into());
    let rows = s
        .steps
        .iter()
        .map(|st| {
            vec![
                st.threads.to_string(),
                per_second(st.ops_per_second),
                per_second(st.ops_per_second / st.threads as f64),
                format!("{:.2}×", st.speedup),
                format!("{:.2}", st.efficiency),
                opt(st.sys_share, |v| format!("{:.0}%", v * 100.0)),
                format!("{:.2}", st.cpus_busy),
                opt(st.latency_p50_ns, nanos),
                opt(st.latency_p99_ns, nanos),
            ]
        })
        .collect();
    Grid { header, rows }
}

/// One line describing the environment.
pub fn environment_line(e: &crate::env::Environment) -> String {
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

/// The `--watchdog-check` table: prediction, probe and watchdog per reclaim.
pub fn watchdog_grid(w: &crate::bench::watchdog::WatchdogReport) -> Grid {
    use crate::bench::watchdog::Agreement;
    let header = vec![
        "Size".into(),
        "Rep".into(),
        "Predicted stretch".into(),
        "Predicted lockup".into(),
        "Probe max gap".into(),
        "Watchdog".into(),
        "Stuck for".into(),
        "Prediction vs watchdog".into(),
    ];
    let rows = w
        .rows
        .iter()
        .map(|r| {
            vec![
                human(r.target),
                (r.rep + 1).to_string(),
                r.predicted_gap_seconds.map(secs).unwrap_or_else(|| "–".into()),
                match r.predicted_lockup {
                    Some(true) => "yes".into(),
                    Some(false) => "no".into(),
                    None => "–".into(),
                },
                secs(r.measured_gap_seconds),
                if r.watchdog_fired { "soft lockup".into() } else { "silent".into() },
                r.watchdog_stuck_seconds.map(|s| format!("{s} s")).unwrap_or_else(|| "–".into()),
                match r.agreement {
                    Agreement::TruePositive => "agree (fired)".into(),
                    Agreement::TrueNegative => "agree (silent)".into(),
                    Agreement::FalsePositive => "DISAGREE: predicted, silent".into(),
                    Agreement::FalseNegative => "DISAGREE: fired, not predicted".into(),
                    Agreement::Unpredicted => "no prediction".into(),
                },
            ]
        })
        .collect();
    Grid { header, rows }
}
