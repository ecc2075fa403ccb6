//! Markdown: a report section in the node-lockup report's layout (environment, method,
//! results, fit, threshold table, verdict, how to reproduce).

use std::fmt::Write;

use super::svg::Figure;
use super::{
    Grid, churn_timeline_grid, comparison_grid, environment_line, fit_lines, methods_grid, methods_label,
    pollute_counts_grid, pollute_latency_grid, pollute_slowdown_grid, reclaim_grid, threshold_grid,
};
use crate::bench::churn::ChurnResult;
use crate::bench::pollute::PolluteResult;
use crate::bench::reclaim::ReclaimResult;
use crate::bench::scale::ScaleResult;

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
    format!("## Dentry reclaim: {} via {}\n\n{}", o.kind.name(), methods_label(r), reclaim_body(r, 3))
}

/// The sections of one reclaim result, with headings at `level`.
fn reclaim_body(r: &ReclaimResult, level: usize) -> String {
    let o = &r.options;
    let e = &r.environment;
    let h = "#".repeat(level);
    let mut s = String::new();
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
    s += &render_grid(&reclaim_grid(r));
    if !r.unpinned.is_empty() {
        let _ = writeln!(s, "\n{}", super::pinning_line(r));
    }
    if let Some(g) = super::layers::grid(r) {
        let _ = writeln!(s, "\n{h} Layers of the overlay\n");
        s += &render_grid(&g);
        let _ = writeln!(s, "\n{}", super::layers::LEGEND);
        if let Some(l) = super::layers::longest_line(r) {
            let _ = writeln!(s, "\n{l}");
        }
    }
    let _ = writeln!(s, "\n{h} Fit\n");
    for l in fit_lines(r) {
        let _ = writeln!(s, "- {l}");
    }
    if let Some(g) = threshold_grid(r) {
        let _ = writeln!(s, "\n{h} Soft-lockup threshold\n");
        s += &render_grid(&g);
    }
    if let Some(v) = &r.verdict {
        let _ = writeln!(s, "\n{h} Verdict\n");
        for l in &v.summary {
            let _ = writeln!(s, "- {l}");
        }
    }
    if let Some(g) = super::profile::runs_grid(r, true) {
        let _ = writeln!(s, "\n{h} What held CPU {} (perf)\n", o.cpu);
        let _ = writeln!(
            s,
            "perf sampled CPU {} with call graphs during each reclaim, on the probe's clock. The heaviest path runs \
             from the root to the deepest frame that more than half of the window's samples pass through; shares \
             count every task on the CPU.\n",
            o.cpu
        );
        s += &render_grid(&g);
        for (title, g) in super::profile::longest_stacks(r, true) {
            let _ = writeln!(s, "\n{title}:\n");
            s += &render_grid(&g);
        }
        for p in super::profile::problems(r) {
            let _ = writeln!(s, "\n- {p}");
        }
    }
    for w in r.watchdog.iter().chain(&r.watchdog_more) {
        let _ = writeln!(s, "\n{h} Watchdog check\n");
        s += &render_grid(&super::watchdog_grid(w));
        s.push('\n');
        for l in &w.summary {
            let _ = writeln!(s, "- {l}");
        }
    }
    if let (Some(g), Some(d)) = (methods_grid(r), &r.comparison) {
        let _ = writeln!(s, "\n{h} Reclaim paths compared\n");
        s += &render_grid(&g);
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

/// `report.md`: a title, the results it was rendered from, then one part
/// per benchmark (each from its own `*_part` function).
pub fn report(sources: &[(Option<String>, &crate::result::Header)], parts: &[String]) -> String {
    let mut s = String::from("# dentrylab report\n\n");
    let _ = writeln!(s, "Rendered by `dentrylab report` from {} result file(s):\n", sources.len());
    for (label, h) in sources {
        let label = label.as_ref().map(|l| format!("{l}: ")).unwrap_or_default();
        let _ = writeln!(s, "- {label}`{}` benchmark, started {} (schema {})", h.benchmark, h.started_at, h.schema);
    }
    for p in parts {
        s.push('\n');
        s += p;
    }
    s
}

/// The reclaim part of a report: the plots first (people read the picture
/// before the table), a comparison table when there are several results,
/// then each result in the node-lockup report's layout.
pub fn reclaim_part(results: &[&ReclaimResult], labels: &[String], subtitle: &str, figures: &[Figure]) -> String {
    let mut s = format!("## Dentry reclaim: {subtitle}\n\n");
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
        s += &reclaim_body(results[0], 3);
        return s;
    }
    let _ = writeln!(s, "### Comparison\n");
    s += &render_grid(&comparison_grid(results, labels));
    for (r, label) in results.iter().zip(labels) {
        let _ = writeln!(s, "\n### {label}\n");
        s += &reclaim_body(r, 4);
    }
    s
}

/// The plots of a part, then each result under its own heading when there
/// are several (`body` renders one result with headings at a level).
pub(super) fn part<R>(
    title: String,
    figures: &[Figure],
    legend: &str,
    results: &[&R],
    labels: &[String],
    body: &dyn Fn(&R, usize) -> String,
) -> String {
    let mut s = format!("## {title}\n\n### Plots\n\n");
    for f in figures {
        let _ = writeln!(s, "![{}]({})\n", f.caption, f.file);
    }
    let _ = writeln!(s, "{legend}\n");
    if results.len() == 1 {
        return s + &body(results[0], 3);
    }
    for (r, label) in results.iter().zip(labels) {
        let _ = writeln!(s, "### {label}\n");
        s += &body(r, 4);
    }
    s
}

/// Notes and the command, closing every result's section.
pub(super) fn closing(h: &str, notes: &[String], command: &str, e: &crate::env::Environment) -> String {
    let mut s = String::new();
    if !notes.is_empty() {
        let _ = writeln!(s, "\n{h} Notes\n");
        for n in notes {
            let _ = writeln!(s, "- {n}");
        }
    }
    let _ = writeln!(s, "\n{h} Reproduce\n\n```\n{command}\n```\n");
    let _ = writeln!(s, "{}", environment_line(e));
    s
}

pub fn pollute_part(results: &[&PolluteResult], labels: &[String], subtitle: &str, figures: &[Figure]) -> String {
    part(
        format!("Lookup latency under negative-dentry pollution: {subtitle}"),
        figures,
        "Bars are the median latency of each probe (the median of the repetitions' medians); on the slowdown plot, \
         points are the geometric mean over repetitions of median after / median before, bars their 95% Student-t \
         interval; filled points are lookups of existing files, hollow ones lookups of negative names.",
        results,
        labels,
        &|r, level| pollute_body(r, level),
    )
}

fn pollute_body(r: &PolluteResult, level: usize) -> String {
    let h = "#".repeat(level);
    let o = &r.options;
    let mut s = String::new();
    let _ = writeln!(s, "{h} Method\n");
    let _ = writeln!(
        s,
        "{} repetition(s), each on a fresh {} in a private mount namespace. Every call of six probes is timed with \
         CLOCK_MONOTONIC ({} calls per probe and size, the miss probe a quarter of them, in interleaved rounds) on \
         CPU {}; then negative dentries are added to the polluted directory up to each size and the probes are \
         timed again. Slowdown: {}.\n",
        o.reps, o.fs, o.calls, o.cpu, r.interval_method
    );
    let _ = writeln!(s, "| Probe | What one call is |\n|---|---|");
    for (p, d) in &r.probes {
        let _ = writeln!(s, "| {p} | {} |", d.replace('|', "\\|"));
    }
    let _ = writeln!(s, "\n{h} Results\n");
    s += &render_grid(&pollute_slowdown_grid(r));
    let _ = writeln!(s, "\n{h} Verdict\n");
    for l in &r.summary {
        let _ = writeln!(s, "- {l}");
    }
    let _ = writeln!(s, "\n{h} dentry-state\n");
    s += &render_grid(&pollute_counts_grid(r));
    let _ = writeln!(s, "\n{h} Distributions\n");
    s += &render_grid(&pollute_latency_grid(r));
    s + &closing(&h, &r.notes, &r.header.command, &r.environment)
}

pub fn churn_part(results: &[&ChurnResult], labels: &[String], subtitle: &str, figures: &[Figure]) -> String {
    part(
        format!("Parallel unlink: {subtitle}"),
        figures,
        "The rate is unlinks per sampling interval; the dashed line is the median over the steady part (the middle \
         80% of the timeline). nr_dentry and nr_negative are machine-wide (dentry-state).",
        results,
        labels,
        &|r, level| churn_body(r, level),
    )
}

fn churn_body(r: &ChurnResult, level: usize) -> String {
    let h = "#".repeat(level);
    let o = &r.options;
    let mut s = String::new();
    let _ = writeln!(s, "{h} Method\n");
    let _ = writeln!(
        s,
        "{} empty files in {} directories on a fresh {} in a private mount namespace, built with {} threads in \
         {:.1} s; {}; then removed by {} worker threads (each its share of the directories, unlinkat by name) while \
         the unlink counter, dentry-state and meminfo were sampled every {}.\n",
        crate::size::grouped(o.files),
        o.dirs,
        o.fs,
        r.build.threads,
        r.build.seconds,
        if o.warm {
            "removed with the cache warm (--warm)".to_string()
        } else {
            "unmounted and mounted again so the removal started with a cold cache".to_string()
        },
        r.workers.len(),
        crate::duration::secs(o.interval_seconds)
    );
    let _ = writeln!(s, "{h} Summary\n");
    for l in &r.summary {
        let _ = writeln!(s, "- {l}");
    }
    let _ = writeln!(s, "\n{h} Timeline\n");
    s += &render_grid(&churn_timeline_grid(r, 20));
    s + &closing(&h, &r.notes, &r.header.command, &r.environment)
}

pub fn scale_part(results: &[&ScaleResult], labels: &[String], subtitle: &str, figures: &[Figure]) -> String {
    part(
        format!("Path-lookup scalability: {subtitle}"),
        figures,
        "Efficiency is ops(n) / (n · ops(base)) against the smallest worker count of the sweep: 1 is perfect \
         scaling. CPUs busy is the workers' CPU time over the step's wall time.",
        results,
        labels,
        &|r, level| scale_body(r, level),
    )
}

fn scale_body(r: &ScaleResult, level: usize) -> String {
    let h = "#".repeat(level);
    let o = &r.options;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{h} Method
"
    );
    let _ = writeln!(
        s,
        "Workers ({}) repeat one operation for {} s per step on a fresh filesystem in a private mount \
         namespace; worker counts {:?}; one call in {} timed for the latency percentiles.\n",
        match o.mode {
            crate::bench::scale::Mode::Threads => "threads of one process",
            crate::bench::scale::Mode::Processes => "processes",
        },
        o.seconds,
        o.threads,
        o.sample_every
    );
    for op in &r.operations {
        let _ = writeln!(s, "{h} {}\n\n{} (on {})\n", op.op.name(), op.description, op.fs);
        s += &render_grid(&super::scale_grid(op));
        s.push('\n');
    }
    s + &closing(&h, &r.notes, &r.header.command, &r.environment)
}
