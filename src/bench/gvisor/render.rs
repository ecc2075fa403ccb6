//! How a `gvisor` result reads: native and each runsc configuration side
//! by side, with the slowdown against native. `report` does not render
//! saved `gvisor` results ([`super::Gvisor`] says so), so its part of a
//! report is that text.

use std::fmt::Write;

use super::{Config, GvisorResult};
use crate::render::{Doc, FigureSpec, Grid, Render};
use crate::result::Header;

impl Render for GvisorResult {
    const BENCHMARK: &'static str = "gvisor";

    fn header(&self) -> &Header {
        &self.header
    }

    fn text(&self) -> Doc {
        text(self)
    }

    fn facets(&self) -> Vec<String> {
        vec![format!("kernel {}", self.kernel), format!("{} CPUs", self.cpus)]
    }

    fn figures(_results: &[&Self], _labels: &[String], _subtitle: &str) -> Vec<FigureSpec> {
        Vec::new()
    }

    fn part(results: &[&Self], labels: &[String], subtitle: &str, figures: &[FigureSpec]) -> Doc {
        crate::render::part(format!("gvisor, {subtitle}"), figures, "", results, labels, &|r, _| r.text())
    }
}

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

pub(crate) fn grid(r: &GvisorResult) -> Grid {
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

fn text(r: &GvisorResult) -> Doc {
    let o = &r.options;
    let mut s = Doc::new();
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
    s.grid(grid(r));
    s
}
