//! What a scale result says, for the engines in `report`: the [`Render`]
//! implementation of [`ScaleResult`] (one table per operation, the human
//! table, the Markdown part and the throughput figure).

use std::fmt::Write;

use super::{Mode, OpSeries, ScaleResult};
use crate::duration::nanos;
use crate::render::cell::{environment_line, per_second};
use crate::render::plot::*;
use crate::render::{self, Doc, FigureSpec, Grid, Render, closing, common_facets};
use crate::result::Header;

impl Render for ScaleResult {
    const BENCHMARK: &'static str = "scale";

    fn header(&self) -> &Header {
        &self.header
    }

    fn text(&self) -> Doc {
        text(self)
    }

    fn facets(&self) -> Vec<String> {
        let fs = self.operations.first().map(|o| o.fs).unwrap_or(self.options.fs);
        let mut f = common_facets(&self.environment, fs);
        f.insert(
            0,
            match self.options.mode {
                Mode::Threads => "threads".to_string(),
                Mode::Processes => "processes".to_string(),
            },
        );
        f
    }

    fn figures(results: &[&Self], labels: &[String], subtitle: &str) -> Vec<FigureSpec> {
        figures(results, labels, subtitle)
    }

    fn part(results: &[&Self], labels: &[String], subtitle: &str, figures: &[FigureSpec]) -> Doc {
        part(results, labels, subtitle, figures)
    }
}

/// One operation's sweep: throughput, scaling, CPU and latency per count.
pub(crate) fn scale_grid(s: &OpSeries) -> Grid {
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

fn text(r: &ScaleResult) -> Doc {
    let o = &r.options;
    let mut s = Doc::new();
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
        s.grid(scale_grid(op));
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

fn part(results: &[&ScaleResult], labels: &[String], subtitle: &str, figures: &[FigureSpec]) -> Doc {
    render::part(
        format!("Path-lookup scalability: {subtitle}"),
        figures,
        "Efficiency is ops(n) / (n · ops(base)) against the smallest worker count of the sweep: 1 is perfect \
         scaling. CPUs busy is the workers' CPU time over the step's wall time.",
        results,
        labels,
        &body,
    )
}

fn body(r: &ScaleResult, level: usize) -> Doc {
    let h = "#".repeat(level);
    let o = &r.options;
    let mut s = Doc::new();
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
            Mode::Threads => "threads of one process",
            Mode::Processes => "processes",
        },
        o.seconds,
        o.threads,
        o.sample_every
    );
    for op in &r.operations {
        let _ = writeln!(s, "{h} {}\n\n{} (on {})\n", op.op.name(), op.description, op.fs);
        s.grid(scale_grid(op));
        s.push('\n');
    }
    s + closing(&h, &r.notes, &r.header.command, &r.environment).as_str()
}
/// `scale`: throughput against worker count for every operation, each
/// with its perfect-scaling line from the smallest count.
fn figures(results: &[&ScaleResult], labels: &[String], subtitle: &str) -> Vec<FigureSpec> {
    let many = results.len() > 1;
    let mut series = Vec::new();
    for (i, r) in results.iter().enumerate() {
        for (j, op) in r.operations.iter().enumerate() {
            let name = if many { format!("{}: {}", labels[i], op.op.name()) } else { op.op.name().to_string() };
            series.push(Series {
                label: format!("{name} on {}", op.fs),
                points: op.steps.iter().map(|s| (s.threads as f64, s.ops_per_second)).collect(),
                marker: Marker::Filled,
                lines: Vec::new(),
                colour: i * r.operations.len() + j,
            });
        }
    }
    let plot = ScalingPlot {
        title: "Path-lookup throughput against workers".into(),
        subtitle: subtitle.to_string(),
        x: Axis::new("workers", Scale::Linear, Unit::Plain),
        y: Axis::new("operations per second (all workers)", Scale::Linear, Unit::Rate),
        series,
    };
    vec![FigureSpec {
        file: "scale-throughput.svg".into(),
        caption: "Operations per second against the number of workers; dashed: perfect scaling from the smallest count"
            .into(),
        plot: Plot::Scaling(plot),
    }]
}
