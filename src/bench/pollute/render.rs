//! What a pollute result says, for the engines in `report`: the
//! [`Render`] implementation of [`PolluteResult`] (the slowdown, latency
//! and dentry-state tables, the human table, the Markdown part, and the
//! latency and slowdown figures).

use std::fmt::Write;

use super::{PolluteResult, REPORTED_NEGATIVES, REPORTED_SLOWDOWN, ratio_text};
use crate::bench::pollute::prober::Probe;
use crate::duration::nanos;
use crate::render::cell::{environment_line, per_second, spread_ns};
use crate::render::plot::*;
use crate::render::{self, Doc, FigureSpec, Grid, Render, closing, common_facets};
use crate::result::Header;
use crate::size::{grouped, human};

impl Render for PolluteResult {
    const BENCHMARK: &'static str = "pollute";

    fn header(&self) -> &Header {
        &self.header
    }

    fn text(&self) -> Doc {
        text(self)
    }

    fn facets(&self) -> Vec<String> {
        common_facets(&self.environment, self.options.fs)
    }

    fn figures(results: &[&Self], labels: &[String], subtitle: &str) -> Vec<FigureSpec> {
        figures(results, labels, subtitle)
    }

    fn part(results: &[&Self], labels: &[String], subtitle: &str, figures: &[FigureSpec]) -> Doc {
        part(results, labels, subtitle, figures)
    }
}

/// Pollute: one row per probe, one column per size: the p50 and, after
/// pollution, the slowdown with its interval.
fn slowdown_grid(r: &PolluteResult) -> Grid {
    let mut header = vec!["Probe".to_string()];
    header.extend(r.levels.iter().map(|l| {
        if l.negatives == 0 {
            "unpolluted p50".to_string()
        } else {
            format!("{} negative: p50, slowdown", human(l.negatives))
        }
    }));
    let rows = Probe::ALL
        .iter()
        .map(|&probe| {
            let mut row = vec![probe.name().to_string()];
            for l in &r.levels {
                let cell = l.probes.iter().find(|p| p.probe == probe).map(|p| match &p.slowdown {
                    Some(s) => format!("{} {}", nanos(p.p50_ns), ratio_text(s)),
                    None => nanos(p.p50_ns),
                });
                row.push(cell.unwrap_or_else(|| "–".into()));
            }
            row
        })
        .collect();
    Grid { header, rows }
}

/// Pollute: every size and probe with its whole distribution.
fn latency_grid(r: &PolluteResult) -> Grid {
    let header =
        ["Negatives", "Probe", "Calls", "p50", "p99", "max", "mean", "Medians of reps"].map(String::from).to_vec();
    let rows = r
        .levels
        .iter()
        .flat_map(|l| {
            l.probes.iter().map(move |p| {
                vec![
                    human(l.negatives),
                    p.probe.name().to_string(),
                    grouped(p.calls),
                    nanos(p.p50_ns),
                    nanos(p.p99_ns),
                    nanos(p.max_ns as f64),
                    nanos(p.mean_ns),
                    spread_ns(&p.median_ns),
                ]
            })
        })
        .collect();
    Grid { header, rows }
}

/// Pollute: dentry-state at each size (medians over repetitions).
fn counts_grid(r: &PolluteResult) -> Grid {
    let header = ["Negatives", "Made (with misses)", "nr_dentry", "nr_negative", "nr_negative added", "Pollution rate"]
        .map(String::from)
        .to_vec();
    let rows = r
        .levels
        .iter()
        .map(|l| {
            vec![
                human(l.negatives),
                grouped(l.negatives_made),
                grouped(l.nr_dentry.median as u64),
                grouped(l.nr_negative.median as u64),
                format!("{:+}", l.nr_negative_added.median as i64),
                l.pollute_rate_per_second.map(|r| format!("{}/s", per_second(r))).unwrap_or_else(|| "–".into()),
            ]
        })
        .collect();
    Grid { header, rows }
}

fn text(r: &PolluteResult) -> Doc {
    let o = &r.options;
    let mut s = Doc::new();
    let _ = writeln!(
        s,
        "\ndentrylab pollute: negative dentries in polluted/ on {}, {} repetition(s), {} timed calls per probe and size",
        o.fs, o.reps, o.calls
    );
    let _ = writeln!(s, "{}\n", environment_line(&r.environment));
    let _ = writeln!(s, "Latency p50 and slowdown against unpolluted ({})", r.interval_method);
    s.grid(slowdown_grid(r));
    let _ = writeln!(s, "\nDistribution (all calls of all repetitions)");
    s.grid(latency_grid(r));
    let _ = writeln!(s, "\ndentry-state (median over repetitions, read before each size's probes)");
    s.grid(counts_grid(r));
    let _ = writeln!(s, "\nVerdict");
    for l in &r.summary {
        let _ = writeln!(s, "  {l}");
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

fn part(results: &[&PolluteResult], labels: &[String], subtitle: &str, figures: &[FigureSpec]) -> Doc {
    render::part(
        format!("Lookup latency under negative-dentry pollution: {subtitle}"),
        figures,
        "Bars are the median latency of each probe (the median of the repetitions' medians); on the slowdown plot, \
         points are the geometric mean over repetitions of median after / median before, bars their 95% Student-t \
         interval; filled points are lookups of existing files, hollow ones lookups of negative names.",
        results,
        labels,
        &body,
    )
}

fn body(r: &PolluteResult, level: usize) -> Doc {
    let h = "#".repeat(level);
    let o = &r.options;
    let mut s = Doc::new();
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
    s.grid(slowdown_grid(r));
    let _ = writeln!(s, "\n{h} Verdict\n");
    for l in &r.summary {
        let _ = writeln!(s, "- {l}");
    }
    let _ = writeln!(s, "\n{h} dentry-state\n");
    s.grid(counts_grid(r));
    let _ = writeln!(s, "\n{h} Distributions\n");
    s.grid(latency_grid(r));
    s + closing(&h, &r.notes, &r.header.command, &r.environment).as_str()
}

/// The pollute figures: per result, the p50 latency of every probe at every
/// pollution size (grouped bars); for all results together, the slowdown of
/// each probe against the pollution size, with its 95 % interval, the
/// no-change line and the lookup-pollution report's figure.
fn figures(results: &[&PolluteResult], labels: &[String], subtitle: &str) -> Vec<FigureSpec> {
    let many = results.len() > 1;
    let mut figures: Vec<FigureSpec> = results
        .iter()
        .enumerate()
        .map(|(i, r)| latency_figure(r, many.then(|| (i, labels[i].as_str())), subtitle))
        .collect();
    figures.push(slowdown_figure(results, labels, subtitle));
    figures
}

/// One result's p50 latency of every probe at every pollution size;
/// `which`: its index and label when there are several results.
fn latency_figure(r: &PolluteResult, which: Option<(usize, &str)>, subtitle: &str) -> FigureSpec {
    let groups = r
        .levels
        .iter()
        .enumerate()
        .map(|(k, l)| BarGroup {
            label: if l.negatives == 0 { "unpolluted".into() } else { format!("{} negative dentries", human(l.negatives)) },
            values: Probe::ALL
                .iter()
                .map(|&p| l.probes.iter().find(|s| s.probe == p).map(|s| s.p50_ns).filter(|v| v.is_finite()))
                .collect(),
            colour: k,
        })
        .collect();
    let plot = BarPlot {
        title: "Lookup latency (p50) before and after negative-dentry pollution".into(),
        subtitle: match which {
            Some((_, label)) => format!("{subtitle}; {label}"),
            None => subtitle.to_string(),
        },
        y: Axis::new("latency per call (p50 of the repetitions' medians)", Scale::Linear, Unit::Nanoseconds),
        categories: Probe::ALL.iter().map(|p| p.name().to_string()).collect(),
        groups,
    };
    FigureSpec {
        file: match which {
            Some((i, _)) => format!("pollute-latency-{}.svg", i + 1),
            None => "pollute-latency.svg".into(),
        },
        caption: format!(
            "Median latency of each probe, unpolluted and after each pollution size{}",
            match which {
                Some((_, label)) => format!(" ({label})"),
                None => String::new(),
            }
        ),
        plot: Plot::Bars(plot),
    }
}

/// Every result's slowdown of each probe against the pollution size, with
/// the no-change line and the report's figure.
fn slowdown_figure(results: &[&PolluteResult], labels: &[String], subtitle: &str) -> FigureSpec {
    let many = results.len() > 1;
    let mut plot = XyPlot::new(
        "Slowdown against the unpolluted measurement",
        Axis::new("negative dentries added (log scale)", Scale::Log, Unit::Count),
        Axis::new("median after / median before (95% interval)", Scale::Linear, Unit::Plain),
    );
    plot.subtitle = subtitle.to_string();
    for (i, r) in results.iter().enumerate() {
        for (k, &probe) in Probe::ALL.iter().enumerate() {
            // Each probe a little to the side (±7 % on the log axis), so
            // the intervals of probes at one size do not hide each other.
            let n = (results.len() * Probe::ALL.len()) as f64;
            let j = (i * Probe::ALL.len() + k) as f64;
            let dodge = 1.0 + 0.14 * (j - (n - 1.0) / 2.0) / n;
            let pts: Vec<(f64, f64, f64, f64)> = r
                .levels
                .iter()
                .filter(|l| l.negatives > 0)
                .filter_map(|l| {
                    let s = l.probes.iter().find(|s| s.probe == probe)?.slowdown?;
                    Some((l.negatives as f64 * dodge, s.estimate, s.ci_low, s.ci_high))
                })
                .collect();
            let mut lines = vec![Line { label: None, points: pts.iter().map(|p| (p.0, p.1)).collect(), dashed: false }];
            lines.extend(pts.iter().filter(|p| p.2.is_finite() && p.3.is_finite()).map(|p| Line {
                label: None,
                points: vec![(p.0, p.2), (p.0, p.3)],
                dashed: false,
            }));
            plot.series.push(Series {
                label: if many { format!("{}: {}", labels[i], probe) } else { probe.to_string() },
                points: pts.iter().map(|p| (p.0, p.1)).collect(),
                marker: if probe.is_hot() { Marker::Filled } else { Marker::Hollow },
                lines,
                colour: i * Probe::ALL.len() + k,
            });
        }
    }
    reported_guides(&mut plot);
    FigureSpec {
        file: "pollute-slowdown.svg".into(),
        caption: "Slowdown of each probe against the number of negative dentries added, with 95% intervals over \
                  the repetitions, the no-change line and the lookup-pollution report's figure"
            .into(),
        plot: Plot::Xy(plot),
    }
}

/// The no-change line and the lookup-pollution report's figure.
fn reported_guides(plot: &mut XyPlot) {
    plot.guides.push(Guide {
        label: "no change (1×)".into(),
        shape: Shape::Horizontal(1.0),
        kind: GuideKind::Reference,
    });
    plot.guides.push(Guide {
        label: format!(
            "lookup-pollution report: {:.1}× kernel time after {} (shell loop)",
            REPORTED_SLOWDOWN,
            human(REPORTED_NEGATIVES)
        ),
        shape: Shape::Curve(vec![
            (REPORTED_NEGATIVES as f64 * 0.8, REPORTED_SLOWDOWN),
            (REPORTED_NEGATIVES as f64 * 1.25, REPORTED_SLOWDOWN),
        ]),
        kind: GuideKind::Threshold,
    });
    plot.marks.push(Mark {
        x: REPORTED_NEGATIVES as f64,
        y: REPORTED_SLOWDOWN,
        text: "lookup-pollution report".into(),
        colour: 5,
    });
}
