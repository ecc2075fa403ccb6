//! Markdown: a report section in seed 000's layout (environment, method,
//! results, fit, threshold table, verdict, how to reproduce).

use std::fmt::Write;

use super::{Grid, comparison_grid, environment_line, fit_lines, methods_label, reclaim_grid, threshold_grid};
use crate::bench::reclaim::ReclaimResult;

pub fn render_grid(g: &Grid) -> String {
    let esc = |c: &String| c.replace('|', "\\|");
    let mut s = format!("| {} |\n", g.header.iter().map(esc).collect::<Vec<_>>().join(" | "));
    s += &format!("|{}\n", "---|".repeat(g.header.len()));
    for r in &g.rows {
        s += &format!("| {} |\n", r.iter().map(esc).collect::<Vec<_>>().join(" | "));
    }
    s
}

pub fn reclaim(r: &ReclaimResult) -> String {
    let o = &r.options;
    let e = &r.environment;
    let mut s = String::new();
    let _ = writeln!(s, "## Dentry reclaim: {} via {}\n", o.kind.name(), methods_label(r));
    let _ = writeln!(s, "### Environment\n");
    let _ = writeln!(s, "| Parameter | Value |\n|---|---|");
    for (k, v) in [
        ("Kernel", format!("{} ({})", e.kernel, e.kernel_version)),
        ("Preemption", format!("{} (from {})", e.preemption, e.preemption_source)),
        ("CPUs", e.cpus.to_string()),
        ("RAM", crate::size::bytes(e.mem_total_bytes)),
        ("watchdog_thresh", e.watchdog_thresh_seconds.map(|t| format!("{t} s")).unwrap_or("unknown".into())),
        ("vfs_cache_pressure", e.vfs_cache_pressure.map(|t| t.to_string()).unwrap_or("unknown".into())),
        ("Filesystem", format!("{} (private mount namespace)", o.fs)),
        ("Kind / layout", format!("{} / {}", o.kind.name(), o.layout)),
        ("Measured memory", format!("{:.0} bytes per dentry", r.bytes_per_dentry)),
    ] {
        let _ = writeln!(s, "| {k} | {v} |");
    }
    let _ = writeln!(s, "\n### Method\n");
    let _ = writeln!(
        s,
        "For each size, {} repetition(s): mount a fresh {} in a private mount namespace, create the dentries \
         with {} thread(s), count them with /proc/sys/fs/dentry-state, then time `{}` on CPU {} while a thread \
         pinned to the same CPU wakes every {} µs and records every gap between its wake-ups (the longest gap \
         is how long the reclaim monopolised the CPU){}. /dev/kmsg is watched for soft-lockup, RCU-stall and \
         hung-task messages.\n",
        o.reps,
        o.fs,
        o.threads,
        methods_label(r),
        o.cpu,
        o.probe_interval_us,
        o.control_cpu.map(|c| format!("; a control probe runs on CPU {c}")).unwrap_or_default()
    );
    let _ = writeln!(s, "### Results\n");
    s += &render_grid(&reclaim_grid(r));
    let _ = writeln!(s, "\n### Fit\n");
    for l in fit_lines(r) {
        let _ = writeln!(s, "- {l}");
    }
    if let Some(g) = threshold_grid(r) {
        let _ = writeln!(s, "\n### Soft-lockup threshold\n");
        s += &render_grid(&g);
    }
    if let Some(v) = &r.verdict {
        let _ = writeln!(s, "\n### Verdict\n");
        for l in &v.summary {
            let _ = writeln!(s, "- {l}");
        }
    }
    if let (Some(g), Some(d)) = (comparison_grid(r), &r.comparison) {
        let _ = writeln!(s, "\n### Reclaim paths compared\n");
        s += &render_grid(&g);
        let _ = writeln!(s);
        for l in &d.summary {
            let _ = writeln!(s, "- {l}");
        }
    }
    let _ = writeln!(s, "\n### Reproduce\n\n```\n{}\n```\n", r.header.command);
    let _ = writeln!(s, "{}", environment_line(e));
    s
}
