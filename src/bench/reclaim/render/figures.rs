//! The reclaim figures: reclaim time, cost per dentry and longest gap
//! against the dentry count (fits, extrapolation, soft-lockup threshold),
//! and a flame graph of each profiled method's longest stretch. Specs
//! only: `report::svg` draws them.

use crate::analysis::fit::PowerFit;
use crate::bench::reclaim::{profile::longest, result::ReclaimResult};
use crate::render::FigureSpec;
use crate::render::plot::*;
use crate::size::human;

/// The reclaim figures for one or more results of the same benchmark, drawn
/// on shared axes: reclaim time, ns per dentry and longest gap against the
/// dentry count, each with the power-law fit, its extrapolation and the
/// soft-lockup threshold. `labels` name the results in legends.
pub(crate) fn reclaim(results: &[&ReclaimResult], labels: &[String], subtitle: &str) -> Vec<FigureSpec> {
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
        let n = |run: &crate::bench::reclaim::repetition::Run| run.fit_count();
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
        let tl = r.fits.time_governing().filter(|_| have);
        let time_lines =
            tl.map(|p| fit_lines(&p, lo, hi, to, fit_label(&p, "fit: time"), &|_, t| t)).unwrap_or_default();
        let ns_lines = tl
            .map(|p| fit_lines(&p, lo, hi, to, fit_label(&p, "fit: time/N"), &|n, t| t * 1e9 / n))
            .unwrap_or_default();
        let gl = r.fits.gap_governing().filter(|_| have);
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

    threshold_guides(results, thresholds, targets, &mut time, &mut ns, &mut gap);
    specs(time, ns, gap)
}

/// Every result's soft-lockup threshold (a line on the time and gap plots,
/// a curve on the per-dentry one) and extrapolation target, as guides.
fn threshold_guides(
    results: &[&ReclaimResult],
    mut thresholds: Vec<f64>,
    mut targets: Vec<u64>,
    time: &mut XyPlot,
    ns: &mut XyPlot,
    gap: &mut XyPlot,
) {
    thresholds.sort_by(f64::total_cmp);
    thresholds.dedup();
    targets.sort_unstable();
    targets.dedup();
    let x_lo = results.iter().flat_map(|r| &r.runs).map(|r| r.fit_count()).fold(f64::INFINITY, f64::min);
    let x_hi = targets.last().map(|&t| t as f64).unwrap_or(x_lo);
    for thr in &thresholds {
        let label = format!("soft-lockup threshold {} (2 × watchdog_thresh)", format_value(Unit::Seconds, *thr));
        for p in [&mut *time, &mut *gap] {
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
        for p in [&mut *time, &mut *ns, &mut *gap] {
            p.guides.push(Guide {
                label: format!("extrapolation target {}", human(*t)),
                shape: Shape::Vertical(*t as f64),
                kind: GuideKind::Reference,
            });
        }
    }
}

/// The three plots as figures, in report order.
fn specs(time: XyPlot, ns: XyPlot, gap: XyPlot) -> Vec<FigureSpec> {
    vec![
        FigureSpec {
            file: "reclaim-time.svg".into(),
            caption: "Reclaim time against dentry count, with the power-law fit, its extrapolation and the \
                      soft-lockup threshold"
                .into(),
            plot: Plot::Xy(time),
        },
        FigureSpec {
            file: "reclaim-ns-per-dentry.svg".into(),
            caption: "Reclaim cost per dentry against dentry count, with the fit and where the total time \
                      reaches the soft-lockup threshold"
                .into(),
            plot: Plot::Xy(ns),
        },
        FigureSpec {
            file: "reclaim-longest-gap.svg".into(),
            caption: "Longest stretch the reclaiming CPU ran no other task, against dentry count, with the fit \
                      and the soft-lockup threshold"
                .into(),
            plot: Plot::Xy(gap),
        },
    ]
}

/// One flame graph per result and method that was profiled: the run with
/// the longest gap.
pub(crate) fn longest_stretch(results: &[&ReclaimResult], labels: &[String]) -> Vec<FigureSpec> {
    let mut out = Vec::new();
    for (i, r) in results.iter().enumerate() {
        for &method in &r.options.methods {
            let Some(run) = longest(&r.runs, method) else { continue };
            let Some(p) = run.profile.as_ref() else { continue };
            if p.longest_gap.folded.is_empty() {
                continue;
            }
            let mut file = "reclaim-longest-stretch".to_string();
            if results.len() > 1 {
                file += &format!("-{}", i + 1);
            }
            if r.options.methods.len() > 1 {
                file += &format!("-{}", method.name());
            }
            file += ".svg";
            let what = format!(
                "{} of {} {} dentries on {}, rep {}",
                method.words(),
                human(run.target),
                r.options.kind.name(),
                r.options.fs,
                run.rep + 1
            );
            let label = if results.len() > 1 { format!("{}: ", labels[i]) } else { String::new() };
            let ms = format!("{:.0}", run.probe.max_gap_seconds * 1e3);
            let f = Flame {
                label: &label,
                stretch: "longest stretch",
                ms,
                what: &what,
                cpu: r.options.cpu,
                kernel: &r.environment.kernel,
            };
            out.push(f.figure(file, p.frequency_hz, &p.longest_gap));
        }
    }
    out
}
