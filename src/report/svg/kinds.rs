//! The plot kinds: xy, timeline, grouped bars, scaling; the title, mesh,
//! legend and label placement they share.

use anyhow::{Result, anyhow};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::*;
use super::*;

pub(super) type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

pub(super) fn draw_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("cannot draw the plot: {e:?}")
}

/// Renders an [`XyPlot`] to an SVG document.
pub(super) fn xy(plot: &XyPlot) -> Result<String> {
    let mut svg = String::new();
    {
        let entries = xy_legend(plot);
        let height = HEIGHT + legend_height(&entries, WIDTH);
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let root = titled(&root, &plot.title, &plot.subtitle)?;
        let (chart, legend) = root.split_vertically(root.dim_in_pixel().1 - legend_height(&entries, WIDTH));
        draw_xy(&chart, plot)?;
        draw_legend(&legend, &entries)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// The title, and the subtitle in smaller type under it; returns the rest.
pub(super) fn titled<'a>(area: &Area<'a>, title: &str, subtitle: &str) -> Result<Area<'a>> {
    let mut area = area.margin(8, 0, 0, 0);
    if !title.is_empty() {
        area = area.titled(title, (FONT, 19)).map_err(draw_err)?;
    }
    if !subtitle.is_empty() {
        area = area.titled(subtitle, (FONT, 14).into_font().color(&RGBColor(80, 80, 80))).map_err(draw_err)?;
    }
    Ok(area)
}

/// Renders a [`TimelinePlot`]: series are drawn as lines through their
/// points (give them [`Marker::None`] and no lines for a plain trace).
pub(super) fn timeline(plot: &TimelinePlot) -> Result<String> {
    let xs = plot.panels.iter().flat_map(|p| &p.series).flat_map(|s| &s.points).map(|p| p.0);
    let range = data_range(xs.filter_map(|x| tr(plot.x.scale, x)));
    let x_range = range.map(|(a, b)| (inv(plot.x.scale, a), inv(plot.x.scale, b)));
    let panels: Vec<XyPlot> = plot
        .panels
        .iter()
        .map(|panel| {
            let series = panel
                .series
                .iter()
                .map(|s| {
                    let mut s = s.clone();
                    if s.lines.is_empty() {
                        s.lines.push(Line { label: None, points: s.points.clone(), dashed: false });
                    }
                    s
                })
                .collect();
            XyPlot { series, x_range, ..XyPlot::new("", plot.x.clone(), panel.y.clone()) }
        })
        .collect();
    let mut svg = String::new();
    {
        let entries: Vec<Entry> = panels.iter().flat_map(xy_legend).collect();
        let panel_height = HEIGHT * 2 / 3;
        let height = panel_height * panels.len().max(1) as u32 + 60 + legend_height(&entries, WIDTH);
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let root = titled(&root, &plot.title, &plot.subtitle)?;
        let (charts, legend) = root.split_vertically(root.dim_in_pixel().1 - legend_height(&entries, WIDTH));
        for (area, p) in charts.split_evenly((panels.len().max(1), 1)).iter().zip(&panels) {
            draw_xy(area, p)?;
        }
        draw_legend(&legend, &entries)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

pub(super) fn scaling(plot: &ScalingPlot) -> Result<String> {
    let mut p = XyPlot::new(plot.title.clone(), plot.x.clone(), plot.y.clone());
    p.subtitle = plot.subtitle.clone();
    for s in &plot.series {
        let mut s = s.clone();
        let mut pts = s.points.clone();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        if let (Some(&(x1, y1)), Some(&(xn, _))) = (pts.first(), pts.last())
            && x1 > 0.0
        {
            let ideal = vec![(x1, y1), (xn, y1 * xn / x1)];
            s.lines.push(Line { label: Some(format!("{}: perfect scaling", s.label)), points: ideal, dashed: true });
        }
        s.lines.insert(0, Line { label: None, points: pts, dashed: false });
        p.series.push(s);
    }
    xy(&p)
}

pub(super) fn before_after(plot: &BarPlot) -> Result<String> {
    let ys = plot.groups.iter().flat_map(|g| g.values.iter().flatten()).filter_map(|&v| tr(plot.y.scale, v));
    let (y0, y1) = padded(plot.y.scale, data_range(ys), true);
    let ncat = plot.categories.len().max(1);
    let (x0, x1) = (-0.5, ncat as f64 - 0.5);
    let cats: Vec<(f64, String)> = plot.categories.iter().enumerate().map(|(i, c)| (i as f64, c.clone())).collect();
    let entries: Vec<Entry> =
        plot.groups.iter().map(|g| Entry { label: g.label.clone(), sample: Sample::Bar(colour(g.colour)) }).collect();
    let mut svg = String::new();
    {
        let height = HEIGHT + legend_height(&entries, WIDTH);
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let root = titled(&root, &plot.title, &plot.subtitle)?;
        let (area, legend) = root.split_vertically(root.dim_in_pixel().1 - legend_height(&entries, WIDTH));
        let xr = TickedAxis { lo: x0, hi: x1, ticks: Ticks { bold: cats, light: Vec::new() } };
        let yr = TickedAxis { lo: y0, hi: y1, ticks: ticks(plot.y.scale, plot.y.unit, y0, y1) };
        let mut chart = ChartBuilder::on(&area)
            .margin(12)
            .margin_right(28)
            .x_label_area_size(40)
            .y_label_area_size(Y_LABEL_AREA)
            .build_cartesian_2d(xr, yr)
            .map_err(draw_err)?;
        mesh(&mut chart, "", &plot.y.label, false)?;
        let ng = plot.groups.len().max(1) as f64;
        let width = 0.8 / ng;
        // A bar's width in pixels: value labels wider than their bar are
        // left out (they would run into the next bar; the tables have them).
        let (px, _) = chart.plotting_area().get_pixel_range();
        let bar_px = f64::from(px.end - px.start) / (x1 - x0) * width;
        for (gi, g) in plot.groups.iter().enumerate() {
            let c = colour(g.colour);
            let mut bars = Vec::new();
            let mut values = Vec::new();
            for (ci, v) in g.values.iter().enumerate() {
                let Some((v, y)) = v.and_then(|v| Some((v, tr(plot.y.scale, v)?))) else { continue };
                let left = ci as f64 - 0.4 + gi as f64 * width;
                bars.push(Rectangle::new([(left + width * 0.08, y0), (left + width * 0.92, y)], c.filled()));
                let text = format_value(plot.y.unit, v);
                if f64::from(text_size(&text, 12).0) > bar_px {
                    continue;
                }
                let style = TextStyle::from((FONT, 12).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
                values.push(Text::new(text, (left + width / 2.0, y), style));
            }
            chart.draw_series(bars).map_err(draw_err)?;
            chart.draw_series(values).map_err(draw_err)?;
        }
        draw_legend(&legend, &entries)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// Room for the y tick labels and the y axis title, pixels.
pub(super) const Y_LABEL_AREA: u32 = 84;

pub(super) type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<TickedAxis, TickedAxis>>;

pub(super) fn mesh(chart: &mut Chart<'_, '_>, x_label: &str, y_label: &str, x_grid: bool) -> Result<()> {
    let mut m = chart.configure_mesh();
    m.x_desc(x_label)
        .y_desc(y_label)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .bold_line_style(RGBColor(210, 210, 210))
        .light_line_style(RGBColor(242, 242, 242));
    if !x_grid {
        m.disable_x_mesh();
    }
    m.draw().map_err(draw_err)
}

/// What a legend entry shows beside its text.
#[derive(Debug, Clone, Copy)]
pub(super) enum Sample {
    Dot { colour: RGBColor, filled: bool },
    Line { colour: RGBColor, width: u32, dash: Option<(i32, i32)> },
    Bar(RGBColor),
}

#[derive(Debug, Clone)]
pub(super) struct Entry {
    label: String,
    sample: Sample,
}

pub(super) const LEGEND_ROW: u32 = 20;
pub(super) const LEGEND_SAMPLE: i32 = 26;

/// Legend columns: two when every label fits in half the width (text
/// width estimated at 0.6 em per character, as no font is read).
pub(super) fn legend_columns(entries: &[Entry], width: u32) -> usize {
    let longest = entries.iter().map(|e| e.label.chars().count()).max().unwrap_or(0) as f64;
    let half = (width - Y_LABEL_AREA - 40) as f64 / 2.0;
    if longest * 13.0 * 0.6 + LEGEND_SAMPLE as f64 + 16.0 < half { 2 } else { 1 }
}

pub(super) fn legend_height(entries: &[Entry], width: u32) -> u32 {
    if entries.is_empty() {
        return 0;
    }
    let rows = entries.len().div_ceil(legend_columns(entries, width)) as u32;
    rows * LEGEND_ROW + 14
}

/// Draws the legend under the chart, in rows, aligned with the plot area.
pub(super) fn draw_legend(area: &Area<'_>, entries: &[Entry]) -> Result<()> {
    let (w, _) = area.dim_in_pixel();
    let cols = legend_columns(entries, w);
    let rows = entries.len().div_ceil(cols.max(1));
    let left = Y_LABEL_AREA as i32 + 12;
    let col_width = (w as i32 - left - 28) / cols.max(1) as i32;
    let text = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, e) in entries.iter().enumerate() {
        // Fill column by column, so related entries stay together.
        let (c, r) = (i / rows, i % rows);
        let x = left + c as i32 * col_width;
        let y = 6 + r as i32 * LEGEND_ROW as i32 + LEGEND_ROW as i32 / 2;
        let mid = x + LEGEND_SAMPLE / 2 - 2;
        match e.sample {
            Sample::Dot { colour, filled } => {
                let style = if filled { colour.filled() } else { colour.stroke_width(2) };
                area.draw(&Circle::new((mid, y), 4, style)).map_err(draw_err)?;
            }
            Sample::Line { colour, width, dash: None } => {
                let path = PathElement::new(vec![(x, y), (x + LEGEND_SAMPLE - 4, y)], colour.stroke_width(width));
                area.draw(&path).map_err(draw_err)?;
            }
            Sample::Line { colour, width, dash: Some((on, off)) } => {
                let mut a = x;
                while a < x + LEGEND_SAMPLE - 4 {
                    let b = (a + on).min(x + LEGEND_SAMPLE - 4);
                    area.draw(&PathElement::new(vec![(a, y), (b, y)], colour.stroke_width(width))).map_err(draw_err)?;
                    a = b + off;
                }
            }
            Sample::Bar(colour) => {
                area.draw(&Rectangle::new([(x + 2, y - 6), (x + LEGEND_SAMPLE - 6, y + 6)], colour.filled()))
                    .map_err(draw_err)?;
            }
        }
        area.draw(&Text::new(e.label.clone(), (x + LEGEND_SAMPLE + 4, y), text.clone())).map_err(draw_err)?;
    }
    Ok(())
}

pub(super) fn guide_style(kind: GuideKind) -> (RGBColor, u32, (i32, i32)) {
    match kind {
        GuideKind::Threshold => (THRESHOLD_COLOR, 2, (9, 5)),
        GuideKind::Reference => (REFERENCE_COLOR, 1, (3, 4)),
    }
}

/// The legend of an [`XyPlot`]: each series' points and labelled lines,
/// then the guides (one entry per label).
pub(super) fn xy_legend(plot: &XyPlot) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for s in &plot.series {
        let c = colour(s.colour);
        if s.marker != Marker::None && !s.points.is_empty() {
            out.push(Entry {
                label: s.label.clone(),
                sample: Sample::Dot { colour: c, filled: s.marker == Marker::Filled },
            });
        }
        for (i, l) in s.lines.iter().enumerate() {
            let label = match (&l.label, s.marker, i) {
                (Some(t), _, _) => t.clone(),
                (None, Marker::None, 0) => s.label.clone(),
                // An unlabelled line beside points: the points' entry names the series.
                (None, Marker::None, _) | (None, Marker::Filled | Marker::Hollow, _) => continue,
            };
            let dash = l.dashed.then_some((8, 5));
            out.push(Entry { label, sample: Sample::Line { colour: c, width: 2, dash } });
        }
    }
    for g in &plot.guides {
        if out.iter().any(|e| e.label == g.label) {
            continue;
        }
        let (c, width, dash) = guide_style(g.kind);
        out.push(Entry { label: g.label.clone(), sample: Sample::Line { colour: c, width, dash: Some(dash) } });
    }
    out
}

/// Draws one x/y chart (axes, guides, lines, points, marks) into `area`.
pub(super) fn draw_xy(area: &Area<'_>, plot: &XyPlot) -> Result<()> {
    let (xs, ys) = extent(plot);
    let (x0, x1) = match plot.x_range {
        Some((a, b)) => padded(plot.x.scale, data_range([a, b].into_iter().filter_map(|v| tr(plot.x.scale, v))), false),
        None => padded(plot.x.scale, data_range(xs.into_iter()), false),
    };
    let (y0, y1) = padded(plot.y.scale, data_range(ys.into_iter()), true);
    let xr = TickedAxis { lo: x0, hi: x1, ticks: ticks(plot.x.scale, plot.x.unit, x0, x1) };
    let yr = TickedAxis { lo: y0, hi: y1, ticks: ticks(plot.y.scale, plot.y.unit, y0, y1) };
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .margin_right(28)
        .x_label_area_size(48)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(xr, yr)
        .map_err(draw_err)?;
    mesh(&mut chart, &plot.x.label, &plot.y.label, true)?;
    let rect = ((x0, x1), (y0, y1));
    let to_t = |pts: &[(f64, f64)]| -> Vec<(f64, f64)> {
        pts.iter().filter_map(|&(x, y)| Some((tr(plot.x.scale, x)?, tr(plot.y.scale, y)?))).collect()
    };

    // Guides under the data.
    for g in &plot.guides {
        let pts = match &g.shape {
            Shape::Horizontal(y) => tr(plot.y.scale, *y).map(|y| vec![(x0, y), (x1, y)]).unwrap_or_default(),
            Shape::Vertical(x) => tr(plot.x.scale, *x).map(|x| vec![(x, y0), (x, y1)]).unwrap_or_default(),
            Shape::Curve(c) => to_t(c),
        };
        let (c, width, (on, off)) = guide_style(g.kind);
        for seg in clip(&pts, rect) {
            chart.draw_series(DashedLineSeries::new(seg, on, off, c.stroke_width(width))).map_err(draw_err)?;
        }
    }

    for s in &plot.series {
        let style = colour(s.colour).stroke_width(2);
        for l in &s.lines {
            for seg in clip(&to_t(&l.points), rect) {
                if l.dashed {
                    chart.draw_series(DashedLineSeries::new(seg, 8, 5, style)).map_err(draw_err)?;
                } else {
                    chart.draw_series(LineSeries::new(seg, style)).map_err(draw_err)?;
                }
            }
        }
    }
    for s in &plot.series {
        if s.marker == Marker::None {
            continue;
        }
        let c = colour(s.colour);
        let style = if s.marker == Marker::Filled { c.filled() } else { c.stroke_width(2) };
        let inside: Vec<_> = to_t(&s.points).into_iter().filter(|p| inside(*p, rect)).collect();
        chart.draw_series(inside.into_iter().map(|p| Circle::new(p, 4, style))).map_err(draw_err)?;
    }

    // Marks: a ring on the curve, and a label placed where it covers no
    // other label or mark.
    let marks: Vec<(&Mark, (f64, f64))> = plot
        .marks
        .iter()
        .filter_map(|m| Some((m, (tr(plot.x.scale, m.x)?, tr(plot.y.scale, m.y)?))))
        .filter(|(_, p)| inside(*p, rect))
        .collect();
    let base = area.get_base_pixel();
    let rel = |p: (f64, f64)| {
        let (x, y) = chart.backend_coord(&p);
        (x - base.0, y - base.1)
    };
    let anchors: Vec<(i32, i32)> = marks.iter().map(|(_, p)| rel(*p)).collect();
    let sizes: Vec<(i32, i32)> = marks.iter().map(|(m, _)| text_size(&m.text, 13)).collect();
    let (px, py) = chart.plotting_area().get_pixel_range();
    let bounds = ((px.start - base.0, px.end - base.0), (py.start - base.1, py.end - base.1));
    let spots = place_labels(&anchors, &sizes, bounds);
    for (((m, p), size), spot) in marks.iter().zip(&sizes).zip(spots) {
        let c = colour(m.colour);
        let ring = EmptyElement::at(*p)
            + Circle::new((0, 0), 5, ShapeStyle::from(&WHITE).filled())
            + Circle::new((0, 0), 5, c.stroke_width(2));
        chart.draw_series(std::iter::once(ring)).map_err(draw_err)?;
        // A light box behind the text keeps it readable over grid and lines.
        let halo = Rectangle::new(
            [(spot.0 - 2, spot.1 - 1), (spot.0 + size.0 + 2, spot.1 + size.1)],
            WHITE.mix(0.85).filled(),
        );
        area.draw(&halo).map_err(draw_err)?;
        let style = TextStyle::from((FONT, 13).into_font()).color(&c).pos(Pos::new(HPos::Left, VPos::Top));
        area.draw(&Text::new(m.text.clone(), (spot.0, spot.1 + 1), style)).map_err(draw_err)?;
    }

    if plot.series.iter().all(|s| s.points.is_empty()) {
        let style = TextStyle::from((FONT, 16).into_font()).pos(Pos::new(HPos::Center, VPos::Center));
        chart
            .draw_series(std::iter::once(Text::new("no data", ((x0 + x1) / 2.0, (y0 + y1) / 2.0), style)))
            .map_err(draw_err)?;
    }
    Ok(())
}

/// The transformed x and y values that set the ranges: points, lines,
/// marks, and the straight guides (curves never widen a plot).
fn extent(plot: &XyPlot) -> (Vec<f64>, Vec<f64>) {
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    let mut add = |x: f64, y: f64| {
        if let (Some(x), Some(y)) = (tr(plot.x.scale, x), tr(plot.y.scale, y)) {
            xs.push(x);
            ys.push(y);
        }
    };
    for s in &plot.series {
        for &(x, y) in s.points.iter().chain(s.lines.iter().flat_map(|l| &l.points)) {
            add(x, y);
        }
    }
    for m in &plot.marks {
        add(m.x, m.y);
    }
    for g in &plot.guides {
        match g.shape {
            Shape::Horizontal(y) => ys.extend(tr(plot.y.scale, y)),
            Shape::Vertical(x) => xs.extend(tr(plot.x.scale, x)),
            Shape::Curve(_) => {}
        }
    }
    (xs, ys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::plot::{Axis, BarGroup, Panel, Series};

    #[test]
    fn labels_do_not_collide() {
        let bounds = ((0, 800), (0, 400));
        // Two marks close together on the threshold line: the second label moves.
        let spots = place_labels(&[(300, 200), (320, 200)], &[(80, 14), (80, 14)], bounds);
        let r = |(x, y): (i32, i32)| (x, y, x + 80, y + 14);
        let (a, b) = (r(spots[0]), r(spots[1]));
        assert!(!(a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3), "{spots:?}");
        // Near the right edge the label goes left of the point.
        let spots = place_labels(&[(790, 200)], &[(80, 14)], bounds);
        assert!(spots[0].0 + 80 <= 790);
    }

    fn series(label: &str, points: Vec<(f64, f64)>, colour: usize) -> Series {
        Series { label: label.into(), points, marker: Marker::Filled, lines: Vec::new(), colour }
    }

    // The plot kinds the other benchmarks use render well-formed SVG with
    // their labels (their own golden tests come with them).
    #[test]
    fn other_kinds_render() {
        let t = timeline(&TimelinePlot {
            title: "churn".into(),
            subtitle: String::new(),
            x: Axis::new("time since start (s)", Scale::Linear, Unit::Seconds),
            panels: vec![
                Panel {
                    y: Axis::new("unlinks per second", Scale::Linear, Unit::Rate),
                    series: vec![series("4 threads", vec![(0.0, 1e5), (1.0, 2e5), (2.0, 1.5e5)], 0)],
                },
                Panel {
                    y: Axis::new("dentries", Scale::Linear, Unit::Count),
                    series: vec![series("nr_dentry", vec![(0.0, 1e6), (1.0, 2e6), (2.0, 2.5e6)], 1)],
                },
            ],
        })
        .unwrap();
        assert!(t.starts_with("<svg") && t.contains("unlinks per second") && t.contains("nr_dentry"));
        let b = before_after(&BarPlot {
            title: "lookup latency".into(),
            subtitle: "1M negative dentries".into(),
            y: Axis::new("latency per lookup", Scale::Log, Unit::Nanoseconds),
            categories: vec!["same directory".into(), "other directory".into()],
            groups: vec![
                BarGroup { label: "before".into(), values: vec![Some(200.0), Some(190.0)], colour: 0 },
                BarGroup { label: "after 1M negative".into(), values: vec![Some(900.0), None], colour: 1 },
            ],
        })
        .unwrap();
        assert!(b.contains("same directory") && b.contains("after 1M negative") && b.contains("900 ns"));
        let s = scaling(&ScalingPlot {
            title: "path lookup".into(),
            subtitle: String::new(),
            x: Axis::new("threads", Scale::Linear, Unit::Plain),
            y: Axis::new("lookups per second", Scale::Linear, Unit::Rate),
            series: vec![series("positive", vec![(1.0, 1e6), (2.0, 1.8e6)], 0)],
        })
        .unwrap();
        assert!(s.contains("perfect scaling"));
        let empty = xy(&XyPlot::new(
            "nothing",
            Axis::new("x", Scale::Log, Unit::Count),
            Axis::new("y", Scale::Log, Unit::Seconds),
        ))
        .unwrap();
        assert!(empty.contains("no data"));
    }
}
