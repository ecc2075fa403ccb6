//! The human table printed by default.

use std::fmt::Write;

use super::plain::render_grid;
use super::{
    Grid, churn_timeline_grid, environment_line, fit_lines, methods_grid, methods_label, pollute_counts_grid,
    pollute_latency_grid, pollute_slowdown_grid, reclaim_grid, scale_grid, threshold_grid,
};
use crate::bench::churn::ChurnResult;
use crate::bench::pollute::PolluteResult;
use crate::bench::reclaim::ReclaimResult;
use crate::bench::scale::{Mode, ScaleResult};

pub fn containers(r: &crate::bench::containers::ContainersResult) -> String {
    super::containers::table(r)
}

pub fn reclaim(r: &ReclaimResult) -> String {
    let o = &r.options;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "dentrylab reclaim: {} dentries, layout {}, {}, reclaimed by {}, {} rep(s), {} generator thread(s)",
        o.kind.name(),
        o.layout,
        o.fs_label(),
        methods_label(r),
        o.reps,
        o.threads
    );
    if o.contend > 0 {
        let _ = writeln!(s, "each repetition also ran with {} lookup thread(s) on the other CPUs", o.contend);
    }
    let _ = writeln!(s, "{}\n", environment_line(&r.environment));
    s += &render_grid(&reclaim_grid(r));
    let _ = writeln!(s, "{}", super::overhead_line(r));
    let _ = writeln!(s, "{}", super::pinning_line(r));
    if let Some(g) = super::layers::grid(r) {
        let _ = writeln!(s, "\nLayers of the overlay, torn down in turn (median of the probed repetitions)");
        s += &render_grid(&g);
        let _ = writeln!(s, "{}", super::layers::LEGEND);
        if let Some(l) = super::layers::longest_line(r) {
            let _ = writeln!(s, "{l}");
        }
    }
    let _ = writeln!(s, "\nFit");
    for l in fit_lines(r) {
        let _ = writeln!(s, "  {l}");
    }
    let of = match o.methods.first() {
        Some(m) if o.methods.len() > 1 => format!(" ({})", m.name()),
        _ => String::new(),
    };
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
    if let Some(g) = super::profile::runs_grid(r, false) {
        let _ = writeln!(s, "\nWhat held CPU {} (perf, --profile)", o.cpu);
        s += &render_grid(&g);
        for (title, g) in super::profile::longest_stacks(r, false) {
            let _ = writeln!(s, "\n{title}");
            s += &render_grid(&g);
        }
    }
    for p in super::profile::problems(r) {
        let _ = writeln!(s, "note: {p}");
    }
    for w in r.watchdog.iter().chain(&r.watchdog_more) {
        let _ = writeln!(
            s,
            "\nWatchdog check (watchdog_thresh {} s: soft lockup after {:.0} s nominally, reported for stretches of {:.2}–{:.2} s or more)",
            w.thresh_seconds, w.soft_lockup_threshold_seconds, w.detection_band_seconds.0, w.detection_band_seconds.1
        );
        s += &render_grid(&super::watchdog_grid(w));
        for l in &w.summary {
            let _ = writeln!(s, "  {l}");
        }
    }
    if let (Some(g), Some(d)) = (methods_grid(r), &r.comparison) {
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

/// `dentrylab status` for people.
pub fn status(st: &crate::status::StatusResult) -> String {
    use crate::size::{bytes, grouped, human};
    let d = &st.dentries;
    let p = &st.prediction;
    let m = &st.memory;
    let mut s = String::new();
    let _ = writeln!(s, "dentrylab status: {}\n", environment_line(&st.environment));
    let counts = Grid {
        header: vec!["Dentries".into(), "Count".into(), "Bytes".into()],
        rows: [
            ("all (nr_dentry)", d.nr_dentry, d.dentry_bytes),
            ("unused (nr_unused)", d.nr_unused, d.unused_bytes),
            ("negative (nr_negative)", d.nr_negative, d.negative_bytes),
        ]
        .iter()
        .map(|(k, n, b)| vec![k.to_string(), grouped(*n), bytes(*b)])
        .collect(),
    };
    s += &render_grid(&counts);
    let _ = writeln!(s, "(bytes at {} per dentry: the dentry slab object)", bytes(d.bytes_per_dentry));
    let _ = writeln!(
        s,
        "memory: {} total, {} available, {} reclaimable slab\n",
        bytes(m.mem_total_bytes),
        bytes(m.mem_available_bytes),
        bytes(m.s_reclaimable_bytes)
    );
    let c = &st.calibration;
    let _ = writeln!(s, "calibration: {}", c.name);
    let _ = writeln!(
        s,
        "  validated by the kernel watchdog: {}\n",
        if c.calibration.validated_by_watchdog { "yes" } else { "no" }
    );
    let or_dash = |x: Option<String>| x.unwrap_or_else(|| "–".into());
    let stretch_kind = match (c.source, p.governs) {
        (crate::status::calibration::Source::Builtin, _) => "built-in: as if the walk never yielded",
        (_, crate::analysis::verdict::Governs::LongestStretch) => "the kernel yields inside the walk",
        (_, crate::analysis::verdict::Governs::TotalTime) => "the walk does not yield: the whole reclaim",
    };
    let edge =
        |l: f64| crate::analysis::interval::count_with_interval(l, p.lockup_dentries_low, p.lockup_dentries_high);
    let end = if p.lockup_dentries_low.is_some() { "its low end" } else { "the edge" };
    let distance = match (p.lockup_dentries, p.dentries_to_lockup) {
        (Some(l), Some(t)) if t >= 0.0 => format!("{} dentries to {end} (edge at {})", human(t as u64), edge(l)),
        (Some(l), Some(t)) => format!("{} dentries past {end} (edge at {})", human((-t) as u64), edge(l)),
        _ => "–".into(),
    };
    let rows = vec![
        vec!["predicted full reclaim time".into(), or_dash(p.predicted_reclaim_seconds.map(crate::duration::secs))],
        vec![
            "predicted longest stretch".into(),
            or_dash(
                p.predicted_longest_stretch_seconds.map(|g| format!("{} ({stretch_kind})", crate::duration::secs(g))),
            ),
        ],
        vec![
            "soft-lockup threshold".into(),
            or_dash(
                p.soft_lockup_threshold_seconds.map(|t| format!("{} (2 × watchdog_thresh)", crate::duration::secs(t))),
            ),
        ],
        vec![
            "distance: ratio".into(),
            or_dash(p.lockup_ratio.map(|r| match p.lockup_ratio_high {
                Some(h) => format!("{} (90% up to {}; 1 = the watchdog fires)", ratio(r), ratio(h)),
                None => format!("{} (1 = the watchdog fires)", ratio(r)),
            })),
        ],
        vec!["distance: count".into(), distance],
        vec!["level".into(), p.level.name().into()],
    ];
    let _ = writeln!(s, "prediction for {} dentries reclaimed in one walk", grouped(d.nr_dentry));
    s += &render_grid(&Grid { header: vec!["Figure".into(), "Value".into()], rows });
    for n in &st.notes {
        let _ = writeln!(s, "note: {n}");
    }
    if let Some(b) = &st.by_cgroup {
        s += &super::node::by_cgroup(b, d.nr_dentry);
    }
    if let Some(k) = &st.kernel_log {
        s += &super::node::kernel_log(k);
    }
    s
}

/// Three significant digits: `0.000812`, `0.65`, `28.1`.
fn ratio(r: f64) -> String {
    if r == 0.0 || !r.is_finite() {
        return format!("{r}");
    }
    let digits = (2 - r.abs().log10().floor() as i32).max(0) as usize;
    format!("{r:.digits$}")
}

pub fn scale(r: &ScaleResult) -> String {
    let o = &r.options;
    let mut s = String::new();
    let mode = match o.mode {
        Mode::Threads => "threads of one process",
        Mode::Processes => "one process each",
    };
    let _ = writeln!(
        s,
        "\ndentrylab scale: {} s per step, workers as {mode}, one call in {} timed, on {}",
        o.seconds, o.sample_every, o.fs
    );
    let _ = writeln!(s, "{}", environment_line(&r.environment));
    for op in &r.operations {
        let _ = writeln!(s, "\n{}: {}", op.op, op.description);
        s += &render_grid(&scale_grid(op));
        if op.op == crate::workload::lookup::Op::StatMissing {
            let _ = writeln!(
                s,
                "negative dentries over the sweep: {:+} (dentry-state nr_negative, machine-wide: other \
                 activity counts too; ran on {})",
                op.nr_negative_delta, op.fs
            );
        }
        if let Some(p) = &op.profile {
            let _ = writeln!(s, "profile at {} workers ({:.1} s under each perf tool):", p.threads, p.samples_seconds);
            for sym in p.top_symbols.iter().take(8) {
                let _ = writeln!(s, "  {:>6.2}%  [{}] {}", sym.percent, sym.space, sym.symbol);
            }
            match &p.locks {
                Some(l) if l.is_empty() => {
                    let _ = writeln!(s, "  contended locks: none recorded");
                }
                Some(l) => {
                    let _ = writeln!(s, "  contended locks (perf lock contention):");
                    for row in l.iter().take(5) {
                        let _ = writeln!(
                            s,
                            "    {:>9} waits, {} total, {} max  {} {}",
                            row.contended,
                            crate::duration::nanos(row.total_wait_ns as f64),
                            crate::duration::nanos(row.max_wait_ns as f64),
                            row.kind,
                            row.caller
                        );
                    }
                }
                None => {}
            }
            for pr in &p.problems {
                let _ = writeln!(s, "  problem: {pr}");
            }
        }
    }
    if let Some(a) = &r.attribution {
        let _ = writeln!(s, "\nAttribution");
        for src in [&a.functions, &a.locks, &a.lock_stat] {
            let _ = writeln!(s, "  {}: {} — {}", src.name, if src.available { "used" } else { "not used" }, src.detail);
        }
    } else {
        let _ =
            writeln!(s, "\nAttribution: not attempted (add --profile to name kernel functions and locks with perf)");
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

pub fn pollute(r: &PolluteResult) -> String {
    let o = &r.options;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\ndentrylab pollute: negative dentries in polluted/ on {}, {} repetition(s), {} timed calls per probe and size",
        o.fs, o.reps, o.calls
    );
    let _ = writeln!(s, "{}\n", environment_line(&r.environment));
    let _ = writeln!(s, "Latency p50 and slowdown against unpolluted ({})", r.interval_method);
    s += &render_grid(&pollute_slowdown_grid(r));
    let _ = writeln!(s, "\nDistribution (all calls of all repetitions)");
    s += &render_grid(&pollute_latency_grid(r));
    let _ = writeln!(s, "\ndentry-state (median over repetitions, read before each size's probes)");
    s += &render_grid(&pollute_counts_grid(r));
    let _ = writeln!(s, "\nVerdict");
    for l in &r.summary {
        let _ = writeln!(s, "  {l}");
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

pub fn churn(r: &ChurnResult) -> String {
    let o = &r.options;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\ndentrylab churn: {} files in {} directories on {}, removed by {} workers ({}), sampled every {}",
        crate::size::human(o.files),
        o.dirs,
        o.fs,
        r.workers.len(),
        if o.warm { "warm cache" } else { "cold cache: remounted first" },
        crate::duration::secs(o.interval_seconds)
    );
    let _ = writeln!(s, "{}\n", environment_line(&r.environment));
    let _ = writeln!(s, "Timeline of the removal");
    s += &render_grid(&churn_timeline_grid(r, 20));
    let _ = writeln!(s, "\nSummary");
    for l in &r.summary {
        let _ = writeln!(s, "  {l}");
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}
