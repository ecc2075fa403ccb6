//! SVG plots. One function per plot kind, each taking plain series so that
//! every benchmark draws with the same few kinds:
//!
//! - [`xy`]: points, fit and extrapolation lines, threshold guides and marks,
//!   on linear or log axes (reclaim cost and gap vs N);
//! - [`timeline`]: values over time in stacked panels sharing the time axis,
//!   one panel per unit (churn: throughput and dentry count);
//! - [`before_after`]: grouped bars per category (pollute: latency before and
//!   after pollution);
//! - [`scaling`]: throughput vs threads against perfect scaling (scale).
//!
//! Then one function per benchmark ([`reclaim`]) turns results into
//! [`Figure`]s. Rendering is a pure function of its input.
//!
//! Text is left to the SVG viewer (`font-family="sans-serif"`): plotters is
//! built without a font backend, so nothing here reads fonts or needs
//! fontconfig; label widths are estimated. Every axis is drawn in a linear
//! space: a log axis plots log10(v) and gets its own ticks.

use anyhow::{Result, anyhow};
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::analysis::fit::PowerFit;
use crate::bench::churn::ChurnResult;
use crate::bench::pollute::PolluteResult;
use crate::bench::reclaim::ReclaimResult;
use crate::bench::scale::ScaleResult;
use crate::workload::hot::Probe;
use crate::size::human;

pub const WIDTH: u32 = 880;
pub const HEIGHT: u32 = 540;
const FONT: &str = "sans-serif";

/// Series colours in order (Okabe–Ito: readable by colour-blind people).
const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(150, 120, 0),
];
const THRESHOLD_COLOR: RGBColor = RGBColor(205, 30, 30);
const REFERENCE_COLOR: RGBColor = RGBColor(120, 120, 120);

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// One rendered plot: its file name in the report directory, a one-line
/// description (the Markdown alt text), and the SVG document.
#[derive(Debug, Clone)]
pub struct Figure {
    pub file: String,
    pub caption: String,
    pub svg: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log,
}

/// What the numbers on an axis are: decides how ticks are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Dentries, operations: `100k`, `1.5G`.
    Count,
    /// `10 ms`, `2 s`, `500 s`.
    Seconds,
    /// `400 ns`, `2000 ns`.
    Nanoseconds,
    /// Per second: `250k/s`.
    Rate,
    /// A bare number.
    Plain,
}

#[derive(Debug, Clone)]
pub struct Axis {
    /// The axis title, with its unit.
    pub label: String,
    pub scale: Scale,
    pub unit: Unit,
}

impl Axis {
    pub fn new(label: impl Into<String>, scale: Scale, unit: Unit) -> Axis {
        Axis { label: label.into(), scale, unit }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Filled,
    Hollow,
    None,
}

/// A line drawn in its series' colour (a fit, its extrapolation, a curve).
#[derive(Debug, Clone)]
pub struct Line {
    pub label: Option<String>,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
}

/// Measured points and the lines that belong to them, in one colour.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub marker: Marker,
    pub lines: Vec<Line>,
    /// Palette index (series of one result share it across plots).
    pub colour: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuideKind {
    /// A limit that matters (the soft-lockup threshold): red, dashed.
    Threshold,
    /// A reference (the extrapolation target): grey, dotted.
    Reference,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// y = constant across the plot; always inside the y range.
    Horizontal(f64),
    /// x = constant across the plot; always inside the x range.
    Vertical(f64),
    /// Any curve; clipped to the plot, never widens it.
    Curve(Vec<(f64, f64)>),
}

#[derive(Debug, Clone)]
pub struct Guide {
    pub label: String,
    pub shape: Shape,
    pub kind: GuideKind,
}

/// A labelled point (a threshold crossing, an extrapolated value).
#[derive(Debug, Clone)]
pub struct Mark {
    pub x: f64,
    pub y: f64,
    pub text: String,
    pub colour: usize,
}

/// Points, lines, guides and marks on two axes.
#[derive(Debug, Clone)]
pub struct XyPlot {
    pub title: String,
    /// A smaller second title line (what the results share).
    pub subtitle: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub guides: Vec<Guide>,
    pub marks: Vec<Mark>,
    /// Force the x range (data units), for panels that share an axis.
    pub x_range: Option<(f64, f64)>,
}

impl XyPlot {
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> XyPlot {
        XyPlot {
            title: title.into(),
            subtitle: String::new(),
            x,
            y,
            series: Vec::new(),
            guides: Vec::new(),
            marks: Vec::new(),
            x_range: None,
        }
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn draw_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("cannot draw the plot: {e:?}")
}

/// Renders an [`XyPlot`] to an SVG document.
pub fn xy(plot: &XyPlot) -> Result<String> {
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
fn titled<'a>(area: &Area<'a>, title: &str, subtitle: &str) -> Result<Area<'a>> {
    let mut area = area.margin(8, 0, 0, 0);
    if !title.is_empty() {
        area = area.titled(title, (FONT, 19)).map_err(draw_err)?;
    }
    if !subtitle.is_empty() {
        area = area.titled(subtitle, (FONT, 14).into_font().color(&RGBColor(80, 80, 80))).map_err(draw_err)?;
    }
    Ok(area)
}

/// One panel of a [`timeline`]: a unit of its own over the shared time axis.
#[derive(Debug, Clone)]
pub struct Panel {
    pub y: Axis,
    pub series: Vec<Series>,
}

/// Values over time: one panel per unit, stacked, sharing the time axis.
#[derive(Debug, Clone)]
pub struct TimelinePlot {
    pub title: String,
    pub subtitle: String,
    pub x: Axis,
    pub panels: Vec<Panel>,
}

/// Renders a [`TimelinePlot`]: series are drawn as lines through their
/// points (give them [`Marker::None`] and no lines for a plain trace).
pub fn timeline(plot: &TimelinePlot) -> Result<String> {
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

/// Measured throughput against thread count; each series gets a dashed
/// "perfect scaling" line from its first point (y₁ · x / x₁).
#[derive(Debug, Clone)]
pub struct ScalingPlot {
    pub title: String,
    pub subtitle: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
}

pub fn scaling(plot: &ScalingPlot) -> Result<String> {
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

/// Grouped bars: for each category, one bar per group (for example
/// "before" and "after", or one per result file).
#[derive(Debug, Clone)]
pub struct BarPlot {
    pub title: String,
    pub subtitle: String,
    pub y: Axis,
    pub categories: Vec<String>,
    pub groups: Vec<BarGroup>,
}

#[derive(Debug, Clone)]
pub struct BarGroup {
    pub label: String,
    /// One value per category (`None`: not measured).
    pub values: Vec<Option<f64>>,
    pub colour: usize,
}

pub fn before_after(plot: &BarPlot) -> Result<String> {
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
const Y_LABEL_AREA: u32 = 84;

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<TickedAxis, TickedAxis>>;

fn mesh(chart: &mut Chart<'_, '_>, x_label: &str, y_label: &str, x_grid: bool) -> Result<()> {
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
enum Sample {
    Dot { colour: RGBColor, filled: bool },
    Line { colour: RGBColor, width: u32, dash: Option<(i32, i32)> },
    Bar(RGBColor),
}

#[derive(Debug, Clone)]
struct Entry {
    label: String,
    sample: Sample,
}

const LEGEND_ROW: u32 = 20;
const LEGEND_SAMPLE: i32 = 26;

/// Legend columns: two when every label fits in half the width (text
/// width estimated at 0.6 em per character, as no font is read).
fn legend_columns(entries: &[Entry], width: u32) -> usize {
    let longest = entries.iter().map(|e| e.label.chars().count()).max().unwrap_or(0) as f64;
    let half = (width - Y_LABEL_AREA - 40) as f64 / 2.0;
    if longest * 13.0 * 0.6 + LEGEND_SAMPLE as f64 + 16.0 < half { 2 } else { 1 }
}

fn legend_height(entries: &[Entry], width: u32) -> u32 {
    if entries.is_empty() {
        return 0;
    }
    let rows = entries.len().div_ceil(legend_columns(entries, width)) as u32;
    rows * LEGEND_ROW + 14
}

/// Draws the legend under the chart, in rows, aligned with the plot area.
fn draw_legend(area: &Area<'_>, entries: &[Entry]) -> Result<()> {
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

fn guide_style(kind: GuideKind) -> (RGBColor, u32, (i32, i32)) {
    match kind {
        GuideKind::Threshold => (THRESHOLD_COLOR, 2, (9, 5)),
        GuideKind::Reference => (REFERENCE_COLOR, 1, (3, 4)),
    }
}

/// The legend of an [`XyPlot`]: each series' points and labelled lines,
/// then the guides (one entry per label).
fn xy_legend(plot: &XyPlot) -> Vec<Entry> {
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
                _ => continue,
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
fn draw_xy(area: &Area<'_>, plot: &XyPlot) -> Result<()> {
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

/// Estimated size of a text in pixels (no font is read: about 0.5 em per
/// character, as DejaVu/Liberation/Arial set digits and lower case).
fn text_size(text: &str, size: u32) -> (i32, i32) {
    let em = f64::from(size) / 1.24;
    ((text.chars().count() as f64 * em * 0.58).ceil() as i32, (em * 1.3).ceil() as i32)
}

/// Top-left corners for labels beside anchor points, greedily: each label
/// takes the first spot that stays inside `bounds` and covers no label
/// already placed and no anchor. Labels right of 70% of the width prefer
/// the left side (rising curves leave the upper left of a point free,
/// and the lower right).
fn place_labels(anchors: &[(i32, i32)], sizes: &[(i32, i32)], bounds: ((i32, i32), (i32, i32))) -> Vec<(i32, i32)> {
    type Rect = (i32, i32, i32, i32);
    let overlaps = |a: Rect, b: Rect| a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3;
    let ((x0, x1), (y0, y1)) = bounds;
    let mut placed: Vec<Rect> = Vec::new();
    let mut out = Vec::new();
    for (i, (&(ax, ay), &(w, h))) in anchors.iter().zip(sizes).enumerate() {
        let right = |dy: i32| (ax + 9, ay + dy);
        let left = |dy: i32| (ax - 9 - w, ay + dy);
        let below = 7;
        let above = -7 - h;
        let mut candidates = if x1 > x0 && f64::from(ax - x0) / f64::from(x1 - x0) > 0.7 {
            vec![left(above), left(below), right(above), right(below)]
        } else {
            vec![right(below), left(above), right(above), left(below)]
        };
        for k in 1..6 {
            candidates.push(right(below + k * h));
            candidates.push(left(above - k * h));
        }
        let fits = |&(x, y): &(i32, i32)| {
            let r = (x, y, x + w, y + h);
            x >= x0
                && x + w <= x1
                && y >= y0
                && y + h <= y1
                && !placed.iter().any(|p| overlaps(*p, r))
                && !anchors
                    .iter()
                    .enumerate()
                    .any(|(j, &(bx, by))| j != i && overlaps((bx - 6, by - 6, bx + 6, by + 6), r))
        };
        let spot = candidates.iter().copied().find(fits).unwrap_or(candidates[0]);
        placed.push((spot.0, spot.1, spot.0 + w, spot.1 + h));
        out.push(spot);
    }
    out
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

/// Into the drawing space: log10 on a log axis (non-positive values drop).
fn tr(scale: Scale, v: f64) -> Option<f64> {
    match scale {
        _ if !v.is_finite() => None,
        Scale::Linear => Some(v),
        Scale::Log if v > 0.0 => Some(v.log10()),
        Scale::Log => None,
    }
}

fn inv(scale: Scale, t: f64) -> f64 {
    match scale {
        Scale::Linear => t,
        Scale::Log => 10f64.powf(t),
    }
}

fn data_range(vals: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    vals.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((a, b)) => Some((a.min(v), b.max(v))),
    })
}

/// The drawn range (transformed units) around the data, with a margin; a
/// linear axis over non-negative data starts at zero.
fn padded(scale: Scale, range: Option<(f64, f64)>, y: bool) -> (f64, f64) {
    let (mut lo, mut hi) = range.unwrap_or(match scale {
        Scale::Linear => (0.0, 1.0),
        Scale::Log => (0.0, 1.0),
    });
    if scale == Scale::Linear && lo >= 0.0 {
        lo = 0.0;
    }
    if hi - lo < 1e-12 {
        let w = match scale {
            Scale::Log => 0.5,
            Scale::Linear => hi.abs().max(1.0) * 0.1,
        };
        lo -= w;
        hi += w;
    }
    let pad = (hi - lo) * if y { 0.06 } else { 0.04 };
    let lo = if scale == Scale::Linear && lo == 0.0 { 0.0 } else { lo - pad };
    (lo, hi + pad)
}

/// Tick positions in drawing space: labelled ones with their text, and the
/// light grid lines between them.
#[derive(Clone)]
struct Ticks {
    bold: Vec<(f64, String)>,
    light: Vec<f64>,
}

/// Ticks for the drawn range `lo..hi` (transformed units). A log axis
/// labels powers of ten (and 2× and 5× when there are few decades, every
/// step when less than one); a linear axis labels 1-2-5 steps.
fn ticks(scale: Scale, unit: Unit, lo: f64, hi: f64) -> Ticks {
    let label = |v: f64| format_value(unit, v);
    if scale == Scale::Log {
        let (a, b) = (lo.floor() as i32, hi.ceil() as i32);
        let decades = hi - lo;
        let steps: &[f64] = if decades > 3.0 {
            &[1.0]
        } else if decades > 1.2 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
        };
        let mut bold = Vec::new();
        let mut light = Vec::new();
        for e in a..=b {
            for m in 1..10 {
                let v = m as f64 * 10f64.powi(e);
                if (lo..=hi).contains(&v.log10()) {
                    light.push(v.log10());
                }
            }
            for &m in steps {
                let v = m * 10f64.powi(e);
                if (lo..=hi).contains(&v.log10()) {
                    bold.push((v.log10(), label(v)));
                }
            }
        }
        // Thin out labels a long axis cannot hold.
        while bold.len() > 9 {
            bold = bold.into_iter().step_by(2).collect();
        }
        // Within a decade, round linear steps label better when they are more.
        let (dlo, dhi) = (10f64.powf(lo), 10f64.powf(hi));
        let lin: Vec<f64> = linear_ticks(dlo, dhi).into_iter().filter(|v| *v > 0.0).collect();
        if bold.len() >= 4 || (bold.len() >= 2 && bold.len() >= lin.len()) {
            return Ticks { bold, light };
        }
        return Ticks { bold: lin.iter().map(|&v| (v.log10(), label(v))).collect(), light };
    }
    let lin = linear_ticks(lo, hi);
    Ticks { bold: lin.iter().map(|&v| (v, label(v))).collect(), light: Vec::new() }
}

/// About six round values (steps of 1, 2 or 5 × 10^k) within `lo..=hi`.
fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let raw = (hi - lo) / 6.0;
    if raw.is_nan() || raw <= 0.0 {
        return vec![lo];
    }
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).filter(|v| *v > 0.0 || lo <= 0.0).collect()
}

/// A linear drawing axis over `lo..hi` with our own ticks and labels (the
/// values are already transformed: log10 on a log axis).
#[derive(Clone)]
struct TickedAxis {
    lo: f64,
    hi: f64,
    ticks: Ticks,
}

impl Ranged for TickedAxis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let r = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (r * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.ticks.light.clone()
        } else {
            self.ticks.bold.iter().map(|t| t.0).collect()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for TickedAxis {
    fn format_ext(&self, v: &f64) -> String {
        nearest_label(&self.ticks.bold, *v)
    }
}

fn nearest_label(ticks: &[(f64, String)], v: f64) -> String {
    ticks.iter().min_by(|a, b| (a.0 - v).abs().total_cmp(&(b.0 - v).abs())).map(|t| t.1.clone()).unwrap_or_default()
}

/// A number with at most three significant digits, no trailing zeros.
fn short(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// A value written in its unit, compactly (axis ticks, bar labels, marks).
pub fn format_value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Count => {
            if v >= 1.0 {
                human(v.round() as u64)
            } else {
                short(v)
            }
        }
        Unit::Seconds => {
            if v == 0.0 {
                "0".into()
            } else if v.abs() >= 1.0 {
                format!("{} s", short(v))
            } else if v.abs() >= 1e-3 {
                format!("{} ms", short(v * 1e3))
            } else {
                format!("{} µs", short(v * 1e6))
            }
        }
        Unit::Nanoseconds => format!("{} ns", short(v)),
        Unit::Rate => {
            if v >= 1000.0 {
                format!("{}/s", human(v.round() as u64))
            } else {
                format!("{}/s", short(v))
            }
        }
        Unit::Plain => short(v),
    }
}

fn inside(p: (f64, f64), ((x0, x1), (y0, y1)): ((f64, f64), (f64, f64))) -> bool {
    p.0 >= x0 && p.0 <= x1 && p.1 >= y0 && p.1 <= y1
}

/// Clips a polyline to the plot rectangle (Liang–Barsky per segment); a
/// line that leaves and re-enters comes back as several pieces.
fn clip(pts: &[(f64, f64)], rect: ((f64, f64), (f64, f64))) -> Vec<Vec<(f64, f64)>> {
    let ((x0, x1), (y0, y1)) = rect;
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    for w in pts.windows(2) {
        let ((ax, ay), (bx, by)) = (w[0], w[1]);
        let (dx, dy) = (bx - ax, by - ay);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        let mut visible = true;
        for (p, q) in [(-dx, ax - x0), (dx, x1 - ax), (-dy, ay - y0), (dy, y1 - ay)] {
            if p == 0.0 {
                if q < 0.0 {
                    visible = false;
                }
            } else {
                let r = q / p;
                if p < 0.0 {
                    t0 = t0.max(r);
                } else {
                    t1 = t1.min(r);
                }
            }
        }
        if !visible || t0 > t1 {
            if cur.len() >= 2 {
                out.push(std::mem::take(&mut cur));
            }
            cur.clear();
            continue;
        }
        let a = (ax + t0 * dx, ay + t0 * dy);
        let b = (ax + t1 * dx, ay + t1 * dy);
        if cur.last() != Some(&a) {
            if cur.len() >= 2 {
                out.push(std::mem::take(&mut cur));
            }
            cur = vec![a];
        }
        cur.push(b);
        if t1 < 1.0 {
            out.push(std::mem::take(&mut cur));
        }
    }
    if cur.len() >= 2 {
        out.push(cur);
    }
    out
}

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
fn fit_lines(p: &PowerFit, lo: f64, hi: f64, to: f64, label: String, f: &dyn Fn(f64, f64) -> f64) -> Vec<Line> {
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
                time.marks.push(Mark { x: to, y: t, text: crate::report::secs(t), colour: i });
                ns.marks.push(Mark { x: to, y: t * 1e9 / to, text: format!("{:.0} ns", t * 1e9 / to), colour: i });
            }
            if let Some(g) = v.extrapolated_max_gap_seconds {
                gap.marks.push(Mark { x: to, y: g, text: crate::report::secs(g), colour: i });
            }
        } else {
            targets.push(r.options.extrapolate);
        }
    }

    thresholds.sort_by(f64::total_cmp);
    thresholds.dedup();
    targets.sort_unstable();
    targets.dedup();
    let x_lo = results
        .iter()
        .flat_map(|r| &r.runs)
        .map(|r| r.fit_count())
        .fold(f64::INFINITY, f64::min);
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
/// no-change line and seed 001's figure.
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
    plot.guides.push(Guide { label: "no change (1×)".into(), shape: Shape::Horizontal(1.0), kind: GuideKind::Reference });
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
                label: Some(name(i, &format!("steady-part median {}", format_value(Unit::Rate, st.unlinks_per_second_median)))),
                points: vec![(st.from_seconds, st.unlinks_per_second_median), (st.to_seconds, st.unlinks_per_second_median)],
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
        caption: "Operations per second against the number of workers; dashed: perfect scaling from the smallest count".into(),
        svg: scaling(&plot)?,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels() {
        assert_eq!(format_value(Unit::Seconds, 0.01), "10 ms");
        assert_eq!(format_value(Unit::Seconds, 20.0), "20 s");
        assert_eq!(format_value(Unit::Seconds, 1500.0), "1500 s");
        assert_eq!(format_value(Unit::Seconds, 0.0002), "200 µs");
        assert_eq!(format_value(Unit::Count, 1.5e9), "1.5G");
        assert_eq!(format_value(Unit::Count, 1e5), "100k");
        assert_eq!(format_value(Unit::Nanoseconds, 1250.0), "1250 ns");
        assert_eq!(format_value(Unit::Rate, 250_000.0), "250k/s");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(3.0), "3");
    }

    #[test]
    fn log_ticks_follow_the_span() {
        // Five decades: powers of ten only.
        let t = ticks(Scale::Log, Unit::Count, 5.0, 9.2);
        let labels: Vec<_> = t.bold.iter().map(|b| b.1.as_str()).collect();
        assert_eq!(labels, ["100k", "1M", "10M", "100M", "1G"]);
        // Less than a decade: intermediate steps.
        let t = ticks(Scale::Log, Unit::Nanoseconds, 3.0, 3.35);
        assert!(t.bold.len() >= 3, "{:?}", t.bold.iter().map(|b| &b.1).collect::<Vec<_>>());
        // A sliver: linear steps inside it.
        let t = ticks(Scale::Log, Unit::Plain, 3.1, 3.12);
        assert!(t.bold.len() >= 2);
        assert!(t.bold.iter().all(|b| b.0 >= 3.1 && b.0 <= 3.12));
    }

    #[test]
    fn linear_ticks_are_round() {
        assert_eq!(linear_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(linear_ticks(0.0, 1.0).len(), 6);
    }

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

    #[test]
    fn clipping_keeps_the_inside() {
        let rect = ((0.0, 10.0), (0.0, 10.0));
        assert_eq!(clip(&[(-5.0, 5.0), (15.0, 5.0)], rect), vec![vec![(0.0, 5.0), (10.0, 5.0)]]);
        assert!(clip(&[(-5.0, 20.0), (15.0, 20.0)], rect).is_empty());
        let zigzag = clip(&[(1.0, 1.0), (5.0, 20.0), (9.0, 1.0)], rect);
        assert_eq!(zigzag.len(), 2);
        assert_eq!(clip(&[(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)], rect), vec![vec![(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)]]);
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
