//! The human table printed by default.

use std::fmt::Write;

use super::{Grid, environment_line, fit_lines, reclaim_grid, threshold_grid};
use crate::bench::reclaim::ReclaimResult;

/// Aligns a grid in columns with a rule under the header.
pub fn render_grid(g: &Grid) -> String {
    let ncol = g.header.len();
    let width = |i: usize| {
        g.rows.iter().map(|r| r[i].chars().count()).chain([g.header[i].chars().count()]).max().unwrap_or(0)
    };
    let widths: Vec<usize> = (0..ncol).map(width).collect();
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = widths[i] - c.chars().count();
            if i > 0 {
                s.push_str("  ");
            }
            // Numbers read best right-aligned; the first column is a label.
            if i == 0 {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(&g.header) + "\n";
    out += &widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  ");
    out.push('\n');
    for r in &g.rows {
        out += &line(r);
        out.push('\n');
    }
    out
}

pub fn reclaim(r: &ReclaimResult) -> String {
    let o = &r.options;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "dentrylab reclaim: {} dentries, layout {}, {}, reclaimed by {}, {} rep(s), {} generator thread(s)",
        o.kind.name(),
        o.layout,
        o.fs,
        o.method.name(),
        o.reps,
        o.threads
    );
    let _ = writeln!(s, "{}\n", environment_line(&r.environment));
    s += &render_grid(&reclaim_grid(r));
    let _ = writeln!(s, "\nFit");
    for l in fit_lines(r) {
        let _ = writeln!(s, "  {l}");
    }
    if let Some(g) = threshold_grid(r) {
        let _ = writeln!(s, "\nSoft-lockup threshold");
        s += &render_grid(&g);
    }
    if let Some(v) = &r.verdict {
        let _ = writeln!(s, "\nVerdict");
        for l in &v.summary {
            let _ = writeln!(s, "  {l}");
        }
    }
    if let Some(w) = &r.watchdog {
        let _ = writeln!(s, "\nWatchdog check (watchdog_thresh {} s, soft lockup after {:.0} s)", w.thresh_seconds, w.soft_lockup_threshold_seconds);
        s += &render_grid(&super::watchdog_grid(w));
        for l in &w.summary {
            let _ = writeln!(s, "  {l}");
        }
    }
    for f in &r.refused {
        let _ = writeln!(s, "\nRefused {}: {}", crate::size::human(f.target), f.reason);
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}
