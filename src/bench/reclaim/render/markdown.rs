//! The reclaim part of a report (`report.md`) and the `--markdown`
//! section: the node-lockup report's layout (environment, method, results,
//! fit, threshold table, verdict, how to reproduce).

use std::fmt::Write;

use super::grids::{
    comparison_grid, fit_lines, load_lines, methods_grid, methods_label, pinning_line, reclaim_grid, threshold_grid,
    watchdog_grid,
};
use super::{profile, stacks, victims};
use crate::bench::layers::grid;
use crate::bench::reclaim::result::ReclaimResult;
use crate::render::cell::environment_line;
use crate::render::{Doc, FigureSpec};

pub(crate) fn section(r: &ReclaimResult) -> Doc {
    let o = &r.options;
    let mut s = Doc::new();
    s.push_str(&format!("## Dentry reclaim: {} via {}\n\n", o.kind.name(), methods_label(r)));
    s + body(r, 3)
}

/// The sections of one reclaim result, with headings at `level`.
pub(crate) fn body(r: &ReclaimResult, level: usize) -> Doc {
    let o = &r.options;
    let e = &r.environment;
    let h = "#".repeat(level);
    let mut s = Doc::new();
    let _ = writeln!(s, "{h} Environment\n");
    let _ = writeln!(s, "| Parameter | Value |\n|---|---|");
    for (k, v) in [
        ("Kernel", format!("{} ({})", e.kernel, e.kernel_version)),
        ("Preemption", format!("{} (from {})", e.preemption, e.preemption_source)),
        ("CPUs", e.cpus.to_string()),
        ("RAM", crate::size::bytes(e.mem_total_bytes)),
        ("watchdog_thresh", e.watchdog_thresh_seconds.map(|t| format!("{t} s")).unwrap_or("unknown".into())),
        ("vfs_cache_pressure", e.vfs_cache_pressure.map(|t| t.to_string()).unwrap_or("unknown".into())),
        ("Filesystem", format!("{} (private mount namespace)", o.fs_label())),
        ("Kind / layout", format!("{} / {}", o.kind.name(), o.layout)),
        ("Measured memory", format!("{:.0} bytes per dentry", r.bytes_per_dentry)),
    ] {
        let _ = writeln!(s, "| {k} | {v} |");
    }
    let _ = writeln!(s, "\n{h} Method\n");
    let _ = writeln!(
        s,
        "For each size, {} repetition(s): mount a fresh {} in a private mount namespace, create the dentries \
         with {} thread(s), count them with /proc/sys/fs/dentry-state, then time `{}` on CPU {} while a thread \
         pinned to the same CPU wakes every {} µs and records every gap between its wake-ups (the longest gap \
         is how long the reclaim monopolised the CPU){}. /dev/kmsg is watched for soft-lockup, RCU-stall and \
         hung-task messages.\n",
        o.reps,
        o.fs_label(),
        o.threads,
        methods_label(r),
        o.cpu,
        o.probe_interval_us,
        o.control_cpu.map(|c| format!("; a control probe runs on CPU {c}")).unwrap_or_default()
    );
    let _ = writeln!(s, "{h} Results\n");
    s.grid(reclaim_grid(r));
    if !r.unpinned.is_empty() {
        let _ = writeln!(s, "\n{}", pinning_line(r));
    }
    for l in load_lines(r) {
        let _ = writeln!(s, "\n{l}");
    }
    let stacks = stacks(r);
    if let Some(g) = grid::grid(&stacks, o.cpu) {
        let _ = writeln!(s, "\n{h} Layers of the overlay\n");
        s.grid(g);
        let _ = writeln!(s, "\n{}", grid::LEGEND);
        if let Some(l) = grid::longest_line(&stacks) {
            let _ = writeln!(s, "\n{l}");
        }
    }
    victims_sections(&mut s, r, &h);
    fit_and_verdict(&mut s, r, &h);
    if let Some(g) = profile::runs_grid(r, true) {
        let _ = writeln!(s, "\n{h} What held CPU {} (perf)\n", o.cpu);
        let _ = writeln!(
            s,
            "perf sampled CPU {} with call graphs during each reclaim, on the probe's clock. The heaviest path runs \
             from the root to the deepest frame that more than half of the window's samples pass through; shares \
             count every task on the CPU.\n",
            o.cpu
        );
        s.grid(g);
        for (title, g) in profile::longest_stacks(r, true) {
            let _ = writeln!(s, "\n{title}:\n");
            s.grid(g);
        }
        for p in profile::problems(r) {
            let _ = writeln!(s, "\n- {p}");
        }
    }
    for w in r.watchdog.iter().chain(&r.watchdog_more) {
        let _ = writeln!(s, "\n{h} Watchdog check\n");
        s.grid(watchdog_grid(w));
        s.push('\n');
        for l in &w.summary {
            let _ = writeln!(s, "- {l}");
        }
    }
    if let (Some(g), Some(d)) = (methods_grid(r), &r.comparison) {
        let _ = writeln!(s, "\n{h} Reclaim paths compared\n");
        s.grid(g);
        let _ = writeln!(s);
        for l in &d.summary {
            let _ = writeln!(s, "- {l}");
        }
    }
    if !r.refused.is_empty() || !r.notes.is_empty() {
        let _ = writeln!(s, "\n{h} Notes\n");
        for f in &r.refused {
            let _ = writeln!(s, "- Refused {}: {}", crate::size::human(f.target), f.reason);
        }
        for n in &r.notes {
            let _ = writeln!(s, "- {n}");
        }
    }
    let _ = writeln!(s, "\n{h} Reproduce\n\n```\n{}\n```\n", r.header.command);
    let _ = writeln!(s, "{}", environment_line(e));
    s
}

/// The reclaim part of a report: the plots first (people read the picture
/// before the table), a comparison table when there are several results,
/// then each result in the node-lockup report's layout.
pub(crate) fn part(results: &[&ReclaimResult], labels: &[String], subtitle: &str, figures: &[FigureSpec]) -> Doc {
    let mut s = Doc::new();
    s.push_str(&format!("## Dentry reclaim: {subtitle}\n\n"));
    let _ = writeln!(s, "### Plots\n");
    for f in figures {
        let _ = writeln!(s, "![{}]({})\n", f.caption, f.file);
    }
    let _ = writeln!(
        s,
        "Points are single runs; solid lines are power-law fits over the measured sizes, dashed lines their \
         extrapolation; the red dashed line is the soft-lockup threshold (2 × watchdog_thresh).\n"
    );
    if results.len() == 1 {
        s += body(results[0], 3);
        return s;
    }
    let _ = writeln!(s, "### Comparison\n");
    s.grid(comparison_grid(results, labels));
    for (r, label) in results.iter().zip(labels) {
        let _ = writeln!(s, "\n### {label}\n");
        s += body(r, 4);
    }
    s
}

/// The fit, the threshold table and the verdict, under headings of level `h`.
fn fit_and_verdict(s: &mut Doc, r: &ReclaimResult, h: &str) {
    let _ = writeln!(s, "\n{h} Fit\n");
    for l in fit_lines(r) {
        let _ = writeln!(s, "- {l}");
    }
    if let Some(g) = threshold_grid(r) {
        let _ = writeln!(s, "\n{h} Soft-lockup threshold\n");
        s.grid(g);
    }
    if let Some(v) = &r.verdict {
        let _ = writeln!(s, "\n{h} Verdict\n");
        if let Some(l) = victims::first_incident_line(r) {
            let _ = writeln!(s, "- {l}");
        }
        for l in super::verdict::lines(v, &r.runs, r.options.methods.first().copied()) {
            let _ = writeln!(s, "- {l}");
        }
    }
}

/// `--victims`: the victims and the deadlines, before the fit.
fn victims_sections(s: &mut Doc, r: &ReclaimResult, h: &str) {
    let Some(a) = &r.victims else { return };
    if let Some(g) = victims::victims_grid(a) {
        let _ = writeln!(s, "\n{h} Victims\n");
        let _ = writeln!(
            s,
            "On the CPUs other than {}, during the reclaim (median of {} victim repetition(s); outside: the 1 s \
             before it).\n",
            r.options.cpu, r.options.reps
        );
        s.grid(g);
    }
    for u in &a.unaffected {
        let _ = writeln!(s, "\n- {} does not wait for the reclaim: {}", u.victim.name(), u.why);
    }
    for (who, why) in a.fits.iter().filter_map(|f| Some((&f.who, f.may_wait.as_deref()?))) {
        let _ = writeln!(s, "\n- {who} may wait for the reclaim: {why}");
    }
    if let Some(g) = victims::stalls_grid(a) {
        let _ = writeln!(s, "\n{h} Which reclaim path stalls whom\n");
        let _ = writeln!(
            s,
            "At each path's largest size: the victim's longest call during the reclaim (× the longest stretch); \
             'no': not judged waiting, by the rule the lines above use.\n"
        );
        s.grid(g);
    }
    if let Some(g) = victims::deadlines_grid(a) {
        let _ = writeln!(s, "\n{h} Deadlines of the node\n");
        s.grid(g);
    }
}
