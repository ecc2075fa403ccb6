//! The kernel matrix's chart: the longest-gap curve of every row (longest
//! gap against dentry count, log axes), one labelled series per row with
//! a result, with the row's gap fit over its measured range and the
//! soft-lockup threshold.

use super::matrix::VmMatrix;
use crate::render::FigureSpec;
use crate::render::plot::{
    Axis, Guide, GuideKind, Marker, Plot, Scale, Series, Shape, Unit, XyPlot, fit_lines, format_value,
};

/// The chart's spec, in `file` (`report`'s SVG engine draws it).
pub(crate) fn longest_gap(m: &VmMatrix, file: &str) -> FigureSpec {
    let mut plot = XyPlot {
        subtitle: format!("dentrylab {}", m.command.join(" ")),
        ..XyPlot::new(
            "Longest stretch without a reschedule, per kernel and preemption model",
            Axis::new("dentries (log scale)", Scale::Log, Unit::Count),
            Axis::new("longest gap seen by the probe (log scale)", Scale::Log, Unit::Seconds),
        )
    };
    let mut thresholds: Vec<f64> = Vec::new();
    let lines_of = m.rows.iter().filter_map(|row| row.result.as_ref().map(|r| (row, r)));
    let each = lines_of.flat_map(|(row, r)| r.options.methods.iter().map(move |&method| (row, r, method)));
    for (i, (row, r, method)) in each.enumerate() {
        let label =
            if r.options.methods.len() > 1 { format!("{}, {}", row.label(), method.name()) } else { row.label() };
        let runs: Vec<_> = r.runs.iter().filter(|x| x.method == method && x.contenders == 0).collect();
        let points: Vec<(f64, f64)> = runs.iter().map(|x| (x.fit_count(), x.probe.max_gap_seconds)).collect();
        let lo = points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let hi = points.iter().map(|p| p.0).fold(0.0, f64::max);
        let analysis = r.per_method.iter().find(|a| a.method == method);
        let lines = match analysis.and_then(|a| a.fits.gap_governing()) {
            Some(p) if hi > 0.0 => fit_lines(&p, lo, hi, hi, format!("{label}: fit ∝ N^{:.2}", p.exponent), &|_, g| g),
            _ => Vec::new(),
        };
        if let Some(v) = analysis.and_then(|a| a.verdict.as_ref()) {
            thresholds.push(v.soft_lockup_threshold_seconds);
        }
        plot.series.push(Series { label, points, marker: Marker::Filled, lines, colour: i });
    }
    thresholds.sort_by(f64::total_cmp);
    thresholds.dedup();
    for thr in thresholds {
        plot.guides.push(Guide {
            label: format!("soft-lockup threshold {} (2 × watchdog_thresh)", format_value(Unit::Seconds, thr)),
            shape: Shape::Horizontal(thr),
            kind: GuideKind::Threshold,
        });
    }
    FigureSpec {
        file: file.into(),
        caption: "Longest stretch the reclaiming CPU ran no other task against dentry count, one series per kernel \
                  and preemption model, with each row's gap fit and the soft-lockup threshold"
            .into(),
        plot: Plot::Xy(plot),
    }
}
