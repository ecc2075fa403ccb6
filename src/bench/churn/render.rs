//! What a churn result says, for the engines in `report`: the [`Render`]
//! implementation of [`ChurnResult`] (the timeline table, the human table,
//! the Markdown part and the timeline figure).

use std::fmt::Write;

use super::ChurnResult;
use crate::render::cell::{environment_line, per_second};
use crate::render::plot::*;
use crate::render::{self, Doc, FigureSpec, Grid, Render, closing, common_facets};
use crate::result::Header;
use crate::size::human;

impl Render for ChurnResult {
    const BENCHMARK: &'static str = "churn";

    fn header(&self) -> &Header {
        &self.header
    }

    fn text(&self) -> Doc {
        text(self)
    }

    fn facets(&self) -> Vec<String> {
        let mut f = common_facets(&self.environment, self.options.fs);
        f.insert(0, format!("{} files, {} workers", human(self.options.files), self.workers.len()));
        f
    }

    fn figures(results: &[&Self], labels: &[String], subtitle: &str) -> Vec<FigureSpec> {
        figures(results, labels, subtitle)
    }

    fn part(results: &[&Self], labels: &[String], subtitle: &str, figures: &[FigureSpec]) -> Doc {
        part(results, labels, subtitle, figures)
    }
}

/// Churn: the timeline in at most `max_rows` rows (rates averaged over
/// each row's samples, counters as at its end).
pub(crate) fn timeline_grid(r: &ChurnResult, max_rows: usize) -> Grid {
    let header =
        ["t (s)", "unlinks/s", "unlinked", "nr_dentry", "nr_negative", "MemAvailable"].map(String::from).to_vec();
    let body = r.samples.get(1..).unwrap_or(&[]);
    let per = body.len().div_ceil(max_rows.max(1)).max(1);
    let rows = body
        .chunks(per)
        .map(|c| {
            let last = c[c.len() - 1];
            let first_t = r.samples[0].seconds.max(0.0);
            let prev = r.samples.iter().rev().find(|s| s.seconds < c[0].seconds);
            let t0 = prev.map_or(first_t, |p| p.seconds);
            let u0 = prev.map_or(0, |p| p.unlinks_total);
            let rate = if last.seconds > t0 { (last.unlinks_total - u0) as f64 / (last.seconds - t0) } else { 0.0 };
            vec![
                format!("{:.1}", last.seconds),
                per_second(rate),
                human(last.unlinks_total),
                human(last.nr_dentry),
                human(last.nr_negative),
                crate::size::bytes(last.mem_available_bytes),
            ]
        })
        .collect();
    Grid { header, rows }
}
fn text(r: &ChurnResult) -> Doc {
    let o = &r.options;
    let mut s = Doc::new();
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
    s.grid(timeline_grid(r, 20));
    let _ = writeln!(s, "\nSummary");
    for l in &r.summary {
        let _ = writeln!(s, "  {l}");
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}
fn part(results: &[&ChurnResult], labels: &[String], subtitle: &str, figures: &[FigureSpec]) -> Doc {
    render::part(
        format!("Parallel unlink: {subtitle}"),
        figures,
        "The rate is unlinks per sampling interval; the dashed line is the median over the steady part (the middle \
         80% of the timeline). nr_dentry and nr_negative are machine-wide (dentry-state).",
        results,
        labels,
        &body,
    )
}

fn body(r: &ChurnResult, level: usize) -> Doc {
    let h = "#".repeat(level);
    let o = &r.options;
    let mut s = Doc::new();
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
    s.grid(timeline_grid(r, 20));
    s + closing(&h, &r.notes, &r.header.command, &r.environment).as_str()
}

/// The churn figure: unlinks per second and the dentry counters over the
/// removal, one panel each, every result on the same time axis.
fn figures(results: &[&ChurnResult], labels: &[String], subtitle: &str) -> Vec<FigureSpec> {
    let many = results.len() > 1;
    let name = |i: usize, what: &str| if many { format!("{}: {what}", labels[i]) } else { what.to_string() };
    let mut rate = Vec::new();
    let mut dentries = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let body = r.samples.get(1..).unwrap_or(&[]);
        let mut s = Series {
            label: name(i, "unlinks per second"),
            points: body.iter().map(|s| (s.seconds, s.unlinks_per_second)).collect(),
            marker: Marker::None,
            lines: Vec::new(),
            colour: i * 3,
        };
        if let Some(st) = &r.steady {
            s.lines.push(Line { label: None, points: s.points.clone(), dashed: false });
            s.lines.push(Line {
                label: Some(name(
                    i,
                    &format!("steady-part median {}", format_value(Unit::Rate, st.unlinks_per_second_median)),
                )),
                points: vec![
                    (st.from_seconds, st.unlinks_per_second_median),
                    (st.to_seconds, st.unlinks_per_second_median),
                ],
                dashed: true,
            });
        }
        rate.push(s);
        dentries.push(Series {
            label: name(i, "nr_dentry (machine-wide)"),
            points: r.samples.iter().map(|s| (s.seconds, s.nr_dentry as f64)).collect(),
            marker: Marker::None,
            lines: Vec::new(),
            colour: i * 3 + 1,
        });
        dentries.push(Series {
            label: name(i, "nr_negative"),
            points: r.samples.iter().map(|s| (s.seconds, s.nr_negative as f64)).collect(),
            marker: Marker::None,
            lines: Vec::new(),
            colour: i * 3 + 2,
        });
    }
    let plot = TimelinePlot {
        title: "Parallel unlink: throughput and dentry counts".into(),
        subtitle: subtitle.to_string(),
        x: Axis::new("time since the removal started", Scale::Linear, Unit::Seconds),
        panels: vec![
            Panel { y: Axis::new("unlinks per second", Scale::Linear, Unit::Rate), series: rate },
            Panel { y: Axis::new("dentries", Scale::Linear, Unit::Count), series: dentries },
        ],
    };
    vec![FigureSpec {
        file: "churn-timeline.svg".into(),
        caption: "Unlinks per second and the dentry counters (dentry-state) over the removal".into(),
        plot: Plot::Timeline(plot),
    }]
}
