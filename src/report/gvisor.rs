//! `dentrylab gvisor`: the table (native and each runsc configuration side
//! by side, with the slowdown against native) and the JSON.

use std::fmt::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use super::Grid;
use super::plain::render_grid;
use crate::bench::gvisor::{Config, GvisorResult};

fn ns(v: f64) -> String {
    if !v.is_finite() || v == 0.0 {
        "-".into()
    } else if v >= 1e6 {
        format!("{:.1} ms", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} us", v / 1e3)
    } else {
        format!("{v:.0} ns")
    }
}

fn rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

pub fn grid(r: &GvisorResult) -> Grid {
    let header = [
        "configuration",
        "phase",
        "threads",
        "ops/s (median)",
        "ops/s min..max",
        "p50",
        "p99",
        "x slower than native",
        "sentry host FDs (max)",
    ];
    let rows = r
        .rows
        .iter()
        .map(|w| {
            vec![
                w.config.label(),
                w.phase.clone(),
                w.threads.to_string(),
                rate(w.ops_per_sec),
                format!("{}..{}", rate(w.ops_per_sec_min), rate(w.ops_per_sec_max)),
                ns(w.p50_ns),
                ns(w.p99_ns),
                if w.config == Config::Native { "1".into() } else { format!("{:.2}", w.slowdown) },
                w.sentry_fds_max.map_or("-".into(), |f| f.to_string()),
            ]
        })
        .collect();
    Grid { header: header.map(String::from).to_vec(), rows }
}

pub fn table(r: &GvisorResult) -> String {
    let o = &r.options;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "dentrylab gvisor: {} over {} files in {} directories, {} s per thread count, {} round(s) interleaved",
        o.workload.name(),
        o.files,
        o.dirs,
        o.seconds,
        o.rounds
    );
    let _ = writeln!(
        s,
        "runsc {} (systrap, directfs, no overlay); kernel {}; {} CPUs; load average {:.2} at start, {:.2} at end",
        r.runsc_version, r.kernel, r.cpus, r.loadavg_start, r.loadavg_end
    );
    s.push('\n');
    s += &render_grid(&grid(r));
    s
}

/// Prints the table (to stderr when the JSON goes to stdout) and writes the JSON.
pub fn emit(r: &GvisorResult, json: Option<&Path>) -> Result<ExitCode> {
    let mut sink = crate::output::open_opt(json)?;
    let t = table(r);
    if sink.as_ref().is_some_and(|j| j.is_stdout()) {
        eprint!("{t}");
    } else {
        print!("{t}");
    }
    if let Some(j) = sink.as_mut() {
        super::json::write(j, r)?;
    }
    Ok(ExitCode::SUCCESS)
}
