//! What a mitigate result says, for the engines in `report`: the
//! [`Render`] implementation of [`MitigateResult`] (the comparison grid,
//! one row per combination, the verdicts, and what was changed and
//! restored; as a terminal table and as a section of report.md, without
//! figures).

use std::fmt::Write;

use super::MitigateResult;
use crate::duration::secs;
use crate::render::cell::environment_line;
use crate::render::{Doc, FigureSpec, Grid, Render};
use crate::result::Header;
use crate::size::{bytes, grouped};

impl Render for MitigateResult {
    const BENCHMARK: &'static str = "mitigate";

    fn header(&self) -> &Header {
        &self.header
    }

    fn text(&self) -> Doc {
        text(self)
    }

    /// Only the workload tells mitigate results apart.
    fn facets(&self) -> Vec<String> {
        vec![self.options.workload.name().to_string()]
    }

    /// Each result is labelled by its workload, results that share it alike.
    fn labels(results: &[&Self]) -> (Vec<String>, String) {
        (results.iter().map(|r| r.options.workload.name().to_string()).collect(), String::new())
    }

    fn figures(_: &[&Self], _: &[String], _: &str) -> Vec<FigureSpec> {
        Vec::new()
    }

    fn part(results: &[&Self], _: &[String], _: &str, _: &[FigureSpec]) -> Doc {
        part(results)
    }
}

fn signed(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let s = grouped(v.abs().round() as u64);
    if v < 0.0 { format!("-{s}") } else { format!("+{s}") }
}

fn per_k(v: f64) -> String {
    if !v.is_finite() { "–".into() } else { format!("{v:.1}") }
}

/// One row per combination: the figures a reader compares.
pub(crate) fn grid(r: &MitigateResult) -> Grid {
    let ops = if r.options.workload == super::Workload::Mariadb { "queries" } else { "ops" };
    let header = vec![
        "combination".to_string(),
        format!("{ops}/s"),
        "vs baseline".into(),
        "dentries held (negative)".into(),
        format!("dentries /1k {ops}"),
        format!("negative /1k {ops}"),
        format!("negative /1k {ops} (machine-wide)"),
        "growth/min".into(),
        "cgroup kernel peak".into(),
        "machine-wide added (peak)".into(),
        "longest stretch".into(),
        "30 days: share of lockup edge".into(),
        "limit reached".into(),
    ];
    let containers = r.options.workload == super::Workload::Containers;
    let mut header = header;
    if containers {
        header.extend(
            ["containers/min", "left per container (negative)", "teardown (longest stretch)"].map(String::from),
        );
    }
    let width = header.len();
    let rows = r
        .rows
        .iter()
        .enumerate()
        .filter_map(|(i, row)| {
            let Some(s) = row.summary.as_ref() else {
                // Every rep OOM-killed (or not run): what the kernel said.
                if row.oom.is_empty() && row.not_run.is_empty() {
                    return None;
                }
                let mut cells = vec![row.label.clone(), "–".into()];
                cells.push(match row.oom.iter().filter_map(|k| k.split).map(|s| s.kernel_share).reduce(f64::max) {
                    Some(sh) => format!(
                        "OOM-killed {}/{} ({:.0}% kernel)",
                        row.oom.len(),
                        row.oom.len() + row.not_run.len(),
                        sh * 100.0
                    ),
                    None if !row.oom.is_empty() => {
                        format!("OOM-killed {}/{}", row.oom.len(), row.oom.len() + row.not_run.len())
                    }
                    None => "not run".into(),
                });
                cells.resize(width, "–".into());
                return Some(cells);
            };
            let spread =
                |a: f64, b: f64| if (b - a).abs() < 1e-9 { String::new() } else { format!(" ({a:.2}–{b:.2})") };
            Some(vec![
                row.label.clone(),
                format!("{:.0}", s.ops_per_second.median),
                s.throughput_vs_baseline
                    .map_or(if i == 0 { "baseline".into() } else { "– (no baseline run)".into() }, |t| {
                        format!("×{:.2}{}", t.median, spread(t.min, t.max))
                    }),
                format!(
                    "{} ({})",
                    grouped(s.fs_dentries_at_end.max(0.0) as u64),
                    grouped(s.fs_negative_at_end.max(0.0) as u64)
                ),
                per_k(s.dentries_per_1000_ops),
                per_k(s.negative_per_1000_ops),
                per_k(s.machine_negative_per_1000_ops),
                signed(s.growth_per_minute.median),
                bytes(s.runs.iter().map(|r| r.cgroup_kernel_peak_bytes).max().unwrap_or(0)),
                format!("{} ({})", signed(s.dentries_added_end), signed(s.dentries_added_peak)),
                match s.longest_drop_stretch_seconds {
                    Some(d) => format!("{} (drops: {})", secs(s.longest_stretch_seconds), secs(d)),
                    None => secs(s.longest_stretch_seconds),
                },
                s.projected_30d_edge_share.map_or("– (no calibration)".into(), |e| {
                    format!("{:.0}% ({:.0}–{:.0}%)", e.median * 100.0, e.min * 100.0, e.max * 100.0)
                }),
                if row.oom.is_empty() {
                    format!("{}/{}", s.limit_reached_runs, s.runs.len())
                } else {
                    format!("{}/{} (+{} OOM-killed)", s.limit_reached_runs, s.runs.len(), row.oom.len())
                },
            ])
            .map(|mut cells: Vec<String>| {
                if containers {
                    match s.containers {
                        Some(c) => cells.extend([
                            format!("{:.0}", c.containers_per_minute),
                            format!("{:.0} ({:.0})", c.left_per_container, c.left_negative_per_container),
                            format!("{} ({})", secs(c.teardown_seconds), secs(c.teardown_stretch_seconds)),
                        ]),
                        None => cells.extend(["–", "–", "–"].map(String::from)),
                    }
                }
                cells
            })
        })
        .collect();
    Grid { header, rows }
}

fn method(r: &MitigateResult) -> String {
    let o = &r.options;
    let limits: Vec<u64> = r.rows.iter().flat_map(|row| row.runs.iter().map(|x| x.memory_limit_bytes)).collect();
    let (lo, hi) = (limits.iter().copied().min().unwrap_or(0), limits.iter().copied().max().unwrap_or(0));
    let per_row = o.settings.iter().any(|s| s.knob == super::knobs::Knob::MemoryLimit);
    let limit = match o.memory_limit {
        None if per_row => "a memory cgroup limited to each combination's memory-limit".to_string(),
        Some(b) => format!("a memory cgroup limited to {}", bytes(b)),
        None if lo == hi => {
            format!("a memory cgroup limited to {} (its usage once set up plus the headroom)", bytes(lo))
        }
        None => {
            format!("a memory cgroup limited to {}–{} (its usage once set up plus the headroom)", bytes(lo), bytes(hi))
        }
    };
    let mut s = format!(
        "Workload {} on a fresh {} per run, its processes in {limit}, pinned to CPU {} (probed); {} s per \
         combination, {} rep(s) interleaved",
        o.workload.name(),
        o.fs,
        o.cpu,
        o.duration_seconds,
        o.reps
    );
    if o.workload == super::Workload::Mariadb {
        let _ = write!(s, ", {} client connection(s)", o.clients);
    }
    if o.workload == super::Workload::Containers {
        let _ = write!(
            s,
            ", one container at a time, each running {} × {} operations",
            o.container_mix.name(),
            crate::size::human(o.container_ops)
        );
    }
    s.push('.');
    s
}

fn changes(r: &MitigateResult) -> Vec<String> {
    r.sysctls
        .iter()
        .map(|c| {
            format!(
                "{}: set to {} during the run; restored to {} (read back: {})",
                c.name,
                c.written.join(", "),
                c.original,
                c.restored.as_deref().unwrap_or("?")
            )
        })
        .collect()
}

/// The terminal table.
fn text(r: &MitigateResult) -> Doc {
    let mut s = Doc::new();
    s.push_str(&format!("{}\n{}\n\n", method(r), environment_line(&r.environment)));
    s.grid(grid(r));
    if !r.verdicts.is_empty() {
        s += "\nVerdicts:\n";
        for v in &r.verdicts {
            let _ = writeln!(s, "- {v}");
        }
    }
    for c in changes(r) {
        let _ = writeln!(s, "{c}");
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// A section of report.md for each result.
fn part(results: &[&MitigateResult]) -> Doc {
    let mut s = Doc::new();
    for r in results {
        let _ = writeln!(s, "## Mitigations: {}\n\n{}\n", r.options.workload.name(), method(r));
        s.grid(grid(r));
        if !r.verdicts.is_empty() {
            let _ = writeln!(s, "\n### Verdicts\n");
            for v in &r.verdicts {
                let _ = writeln!(s, "- {v}");
            }
        }
        let ch = changes(r);
        if !ch.is_empty() {
            let _ = writeln!(s, "\n### Changed and restored\n");
            for c in ch {
                let _ = writeln!(s, "- {c}");
            }
        }
        let _ = writeln!(s, "\n### Notes\n");
        for n in &r.notes {
            let _ = writeln!(s, "- {n}");
        }
        let _ = writeln!(s, "\n`{}`\n\n{}\n", r.header.command, environment_line(&r.environment));
    }
    s
}
