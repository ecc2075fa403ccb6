//! The human table printed by default.

use std::fmt::Write;

use super::{Grid, comparison_grid, environment_line, fit_lines, methods_label, reclaim_grid, threshold_grid};
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
        methods_label(r),
        o.reps,
        o.threads
    );
    if o.contend > 0 {
        let _ = writeln!(s, "each repetition also ran with {} lookup thread(s) on the other CPUs", o.contend);
    }
    let _ = writeln!(s, "{}\n", environment_line(&r.environment));
    s += &render_grid(&reclaim_grid(r));
    let _ = writeln!(s, "\nFit");
    for l in fit_lines(r) {
        let _ = writeln!(s, "  {l}");
    }
    let of = if o.methods.len() > 1 { format!(" ({})", o.methods[0].name()) } else { String::new() };
    if let Some(g) = threshold_grid(r) {
        let _ = writeln!(s, "\nSoft-lockup threshold{of}");
        s += &render_grid(&g);
    }
    if let Some(v) = &r.verdict {
        let _ = writeln!(s, "\nVerdict{of}");
        for l in &v.summary {
            let _ = writeln!(s, "  {l}");
        }
    }
    if let (Some(g), Some(d)) = (comparison_grid(r), &r.comparison) {
        let _ = writeln!(s, "\nReclaim paths compared");
        s += &render_grid(&g);
        for l in &d.summary {
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
