//! One function per benchmark: results in, [`Figure`]s out.

use anyhow::Result;

use crate::analysis::fit::PowerFit;
use crate::bench::churn::ChurnResult;
use crate::bench::pollute::PolluteResult;
use crate::bench::reclaim::ReclaimResult;
use crate::bench::scale::ScaleResult;
use crate::size::human;
use crate::workload::hot::Probe;

use super::axis::*;
use super::kinds::*;
use super::*;

/// `n` values spread evenly on a log scale from `lo` to `hi`.
pub fn log_samples(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo) || n < 2 {
        return vec![lo, hi];
    }
    let (a, b) = (lo.ln(), hi.ln());
    (0..n).map(|i| (a + (b - a) * i as f64 / (n - 1) as f64).exp()).collect()
}

// ---------------------------------------------------------------------------
// reclaim

/// A power-law fit drawn over the measured counts (solid) and on to the
/// extrapolation target (dashed); `f` maps (N, fitted seconds) to the y value.
/// Both ends suffice: the reclaim plots are log-log, where a power law is straight.
pub(super) fn fit_lines(
    p: &PowerFit,
    lo: f64,
    hi: f64,
    to: f64,
    label: String,
    f: &dyn Fn(f64, f64) -> f64,
) -> Vec<Line> {
    let curve = |a: f64, b: f64| log_samples(a, b, 2).into_iter().map(|n| (n, f(n, p.at(n)))).collect();
    let mut lines = vec![Line { label: Some(label), points: curve(lo, hi), dashed: false }];
    if to > hi {
        lines.push(Line { label: None, points: curve(hi, to), dashed: true });
    }
    lines
}

/// The reclaim figures for one or more results of the same benchmark, drawn
/// on shared axes: reclaim time, ns per dentry and longest gap against the
/// dentry count, each with the power-law fit, its extrapolation and the
/// soft-lockup threshold. `labels` name the results in legends.
pub fn reclaim(results: &[&ReclaimResult], labels: &[String], subtitle: &str) -> Result<Vec<Figure>> {
    let x_axis = || Axis::new("dentries reclaimed (log scale)", Scale::Log, Unit::Count);
    let many = results.len() > 1;
    let name = |i: usize, what: &str| if many { format!("{}: {what}", labels[i]) } else { what.to_string() };
    let plot = |title: &str, y: Axis| XyPlot { subtitle: subtitle.to_string(), ..XyPlot::new(title, x_axis(), y) };
    let mut time =
        plot("Reclaim time vs dentry count", Axis::new("reclaim time (log scale)", Scale::Log, Unit::Seconds));
    let mut ns = plot(
        "Reclaim cost per dentry vs dentry count",
        Axis::new("reclaim cost per dentry (log scale)", Scale::Log, Unit::Nanoseconds),
    );
    let mut gap = plot(
        "Longest stretch without a reschedule on the reclaiming CPU",
        Axis::new("longest gap seen by the probe (log scale)", Scale::Log, Unit::Seconds),
    );
    let mut thresholds: Vec<f64> = Vec::new();
    let mut targets: Vec<u64> = Vec::new();

    for (i, r) in results.iter().enumerate() {
        // The count each run is fitted at (what it freed, or its target when
        // other activity disturbed the machine-wide counter).
        let ok: Vec<_> = r.runs.iter().collect();
        let n = |run: &crate::bench::reclaim::Run| run.fit_count();
        let lo = ok.iter().map(|r| n(r)).fold(f64::INFINITY, f64::min);
        let hi = ok.iter().map(|r| n(r)).fold(0.0, f64::max);
        let to = r.options.extrapolate as f64;
        let reps = r.options.reps;
        let what = format!("measured ({reps} rep{} per size)", if reps == 1 { "" } else { "s" });
        let series = |points: Vec<(f64, f64)>, lines: Vec<Line>| Series {
            label: name(i, &what),
            points,
            marker: Marker::Filled,
            lines,
            colour: i,
        };
        let have = !ok.is_empty();

        let fit_label = |p: &PowerFit, what: &str| {
            name(i, &format!("{what} ∝ N^{:.2} (R² {:.3}); dashed: extrapolated", p.exponent, p.r2))
        };
        let tl = r.fits.time_power.filter(|_| have);
        let time_lines =
            tl.map(|p| fit_lines(&p, lo, hi, to, fit_label(&p, "fit: time"), &|_, t| t)).unwrap_or_default();
        let ns_lines = tl
            .map(|p| fit_lines(&p, lo, hi, to, fit_label(&p, "fit: time/N"), &|n, t| t * 1e9 / n))
            .unwrap_or_default();
        let gl = r.fits.gap_power.filter(|_| have);
        let gap_lines = gl.map(|p| fit_lines(&p, lo, hi, to, fit_label(&p, "fit: gap"), &|_, g| g)).unwrap_or_default();
        time.series.push(series(ok.iter().map(|r| (n(r), r.reclaim_seconds)).collect(), time_lines));
        ns.series.push(series(ok.iter().map(|r| (n(r), r.ns_per_dentry)).collect(), ns_lines));
        gap.series.push(series(ok.iter().map(|r| (n(r), r.probe.max_gap_seconds)).collect(), gap_lines));
        let control: Vec<_> = ok.iter().filter_map(|r| r.control.as_ref().map(|c| (n(r), c.max_gap_seconds))).collect();
        if !control.is_empty() {
            let cpus: std::collections::BTreeSet<usize> =
                ok.iter().filter_map(|r| r.control.as_ref().map(|c| c.cpu)).collect();
            let cpus: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
            gap.series.push(Series {
                label: name(i, &format!("control probe (CPU {}, no reclaim)", cpus.join(", "))),
                points: control,
                marker: Marker::Hollow,
                lines: Vec::new(),
                // Hollow rings in the result's colour; alone, a colour of its own.
                colour: if many { i } else { 1 },
            });
        }

        if let Some(v) = &r.verdict {
            let thr = v.soft_lockup_threshold_seconds;
            thresholds.push(thr);
            targets.push(v.extrapolate_to);
            if let Some(c) = v.lockup_count_by_total_time {
                time.marks.push(Mark { x: c, y: thr, text: format!("{} dentries", human(c as u64)), colour: i });
                ns.marks.push(Mark { x: c, y: thr * 1e9 / c, text: human(c as u64), colour: i });
            }
            if let Some(c) = v.lockup_count_by_gap {
                gap.marks.push(Mark { x: c, y: thr, text: format!("{} dentries", human(c as u64)), colour: i });
            }
            if let Some(t) = v.extrapolated_reclaim_seconds {
                time.marks.push(Mark { x: to, y: t, text: crate::duration::secs(t), colour: i });
                ns.marks.push(Mark { x: to, y: t * 1e9 / to, text: format!("{:.0} ns", t * 1e9 / to), colour: i });
            }
            if let Some(g) = v.extrapolated_max_gap_seconds {
                gap.marks.push(Mark { x: to, y: g, text: crate::duration::secs(g), colour: i });
            }
        } else {
            targets.push(r.options.extrapolate);
        }
    }

    thresholds.sort_by(f64::total_cmp);
    thresholds.dedup();
    targets.sort_unstable();
    targets.dedup();
    let x_lo = results.iter().flat_map(|r| &r.runs).map(|r| r.fit_count()).fold(f64::INFINITY, f64::min);
    let x_hi = targets.last().map(|&t| t as f64).unwrap_or(x_lo);
    for thr in &thresholds {
        let label = format!("soft-lockup threshold {} (2 × watchdog_thresh)", format_value(Unit::Seconds, *thr));
        for p in [&mut time, &mut gap] {
            p.guides.push(Guide { label: label.clone(), shape: Shape::Horizontal(*thr), kind: GuideKind::Threshold });
        }
        // On the per-dentry axis the threshold is a curve: thr / N.
        let curve = log_samples(x_lo.min(x_hi) / 2.0, x_hi * 2.0, 32).into_iter().map(|n| (n, thr * 1e9 / n));
        ns.guides.push(Guide {
            label: format!("reclaim time = {} (soft-lockup threshold)", format_value(Unit::Seconds, *thr)),
            shape: Shape::Curve(curve.collect()),
            kind: GuideKind::Threshold,
        });
    }
    for t in &targets {
        for p in [&mut time, &mut ns, &mut gap] {
            p.guides.push(Guide {
                label: format!("extrapolation target {}", human(*t)),
                shape: Shape::Vertical(*t as f64),
                kind: GuideKind::Reference,
            });
        }
    }
    Ok(vec![
        Figure {
            file: "reclaim-time.svg".into(),
            caption: "Reclaim time against dentry count, with the power-law fit, its extrapolation and the \
                      soft-lockup threshold"
                .into(),
            svg: xy(&time)?,
        },
        Figure {
            file: "reclaim-ns-per-dentry.svg".into(),
            caption: "Reclaim cost per dentry against dentry count, with the fit and where the total time \
                      reaches the soft-lockup threshold"
                .into(),
            svg: xy(&ns)?,
        },
        Figure {
            file: "reclaim-longest-gap.svg".into(),
            caption: "Longest stretch the reclaiming CPU ran no other task, against dentry count, with the fit \
                      and the soft-lockup threshold"
                .into(),
            svg: xy(&gap)?,
        },
    ])
}

// ---------------------------------------------------------------------------
// pollute

/// The pollute figures: per result, the p50 latency of every probe at every
/// pollution size (grouped bars); for all results together, the slowdown of
/// each probe against the pollution size, with its 95 % interval, the
/// no-change line and the lookup-pollution report's figure.
pub fn pollute(results: &[&PolluteResult], labels: &[String], subtitle: &str) -> Result<Vec<Figure>> {
    let many = results.len() > 1;
    let mut figures = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let groups = r
            .levels
            .iter()
            .enumerate()
            .map(|(k, l)| BarGroup {
                label: if l.negatives == 0 {
                    "unpolluted".into()
                } else {
                    format!("{} negative dentries", human(l.negatives))
                },
                values: Probe::ALL
                    .iter()
                    .map(|&p| l.probes.iter().find(|s| s.probe == p).map(|s| s.p50_ns).filter(|v| v.is_finite()))
                    .collect(),
                colour: k,
            })
            .collect();
        let plot = BarPlot {
            title: "Lookup latency (p50) before and after negative-dentry pollution".into(),
            subtitle: if many { format!("{subtitle}; {}", labels[i]) } else { subtitle.to_string() },
            y: Axis::new("latency per call (p50 of the repetitions' medians)", Scale::Linear, Unit::Nanoseconds),
            categories: Probe::ALL.iter().map(|p| p.name().to_string()).collect(),
            groups,
        };
        figures.push(Figure {
            file: if many { format!("pollute-latency-{}.svg", i + 1) } else { "pollute-latency.svg".into() },
            caption: format!(
                "Median latency of each probe, unpolluted and after each pollution size{}",
                if many { format!(" ({})", labels[i]) } else { String::new() }
            ),
            svg: before_after(&plot)?,
        });
    }
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
    plot.guides.push(Guide {
        label: "no change (1×)".into(),
        shape: Shape::Horizontal(1.0),
        kind: GuideKind::Reference,
    });
    plot.guides.push(Guide {
        label: format!(
            "seed 001: {:.1}× kernel time after {} (shell loop)",
            crate::bench::pollute::SEED_001_SLOWDOWN,
            human(crate::bench::pollute::SEED_001_NEGATIVES)
        ),
        shape: Shape::Curve(vec![
            (crate::bench::pollute::SEED_001_NEGATIVES as f64 * 0.8, crate::bench::pollute::SEED_001_SLOWDOWN),
            (crate::bench::pollute::SEED_001_NEGATIVES as f64 * 1.25, crate::bench::pollute::SEED_001_SLOWDOWN),
        ]),
        kind: GuideKind::Threshold,
    });
    plot.marks.push(Mark {
        x: crate::bench::pollute::SEED_001_NEGATIVES as f64,
        y: crate::bench::pollute::SEED_001_SLOWDOWN,
        text: "seed 001".into(),
        colour: 5,
    });
    figures.push(Figure {
        file: "pollute-slowdown.svg".into(),
        caption: "Slowdown of each probe against the number of negative dentries added, with 95% intervals over \
                  the repetitions, the no-change line and seed 001's figure"
            .into(),
        svg: xy(&plot)?,
    });
    Ok(figures)
}

// ---------------------------------------------------------------------------
// churn

/// The churn figure: unlinks per second and the dentry counters over the
/// removal, one panel each, every result on the same time axis.
pub fn churn(results: &[&ChurnResult], labels: &[String], subtitle: &str) -> Result<Vec<Figure>> {
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
    Ok(vec![Figure {
        file: "churn-timeline.svg".into(),
        caption: "Unlinks per second and the dentry counters (dentry-state) over the removal".into(),
        svg: timeline(&plot)?,
    }])
}

/// `scale`: throughput against worker count for every operation, each
/// with its perfect-scaling line from the smallest count.
pub fn scale(results: &[&ScaleResult], labels: &[String], subtitle: &str) -> Result<Vec<Figure>> {
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
    Ok(vec![Figure {
        file: "scale-throughput.svg".into(),
        caption: "Operations per second against the number of workers; dashed: perfect scaling from the smallest count"
            .into(),
        svg: scaling(&plot)?,
    }])
}
