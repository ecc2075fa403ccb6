//! What a figure shows, as data: axes, series, guides and marks for the few
//! plot kinds every benchmark draws with (xy, timeline, grouped bars,
//! scaling, flame graph). A benchmark's [`super::Render::figures`] yields
//! [`FigureSpec`]s; `report::svg`, the engine, draws them. Nothing here
//! knows SVG or plotters: the same spec always gives the same SVG, and a
//! benchmark's figures can be checked without drawing.

use crate::analysis::fit::PowerFit;
use crate::size::human;

/// One figure of a report: its file name in the report directory, a
/// one-line description (the Markdown alt text), and what to draw.
#[derive(Debug, Clone)]
pub(crate) struct FigureSpec {
    pub file: String,
    pub caption: String,
    pub plot: Plot,
}

/// The plot kinds the SVG engine draws.
#[derive(Debug, Clone)]
pub(crate) enum Plot {
    Xy(XyPlot),
    Timeline(TimelinePlot),
    Scaling(ScalingPlot),
    /// Grouped bars ("before and after").
    Bars(BarPlot),
    Flame(FlamePlot),
}

/// Folded stacks (`stack count`) to draw as a flame graph.
#[derive(Debug, Clone)]
pub(crate) struct FlamePlot {
    pub title: String,
    pub subtitle: String,
    pub folded: Vec<(String, u64)>,
}

/// What a longest-stretch flame graph says about itself: its caption,
/// title and subtitle, the same for a reclaim's and a teardown's.
pub(crate) struct Flame<'a> {
    /// "A: " when several results are drawn, else empty.
    pub label: &'a str,
    /// "longest stretch", "longest teardown stretch".
    pub stretch: &'a str,
    /// The stretch in milliseconds, formatted.
    pub ms: String,
    /// What was reclaimed, in words.
    pub what: &'a str,
    pub cpu: usize,
    pub kernel: &'a str,
}

impl Flame<'_> {
    pub(crate) fn figure(&self, file: String, hz: u32, gap: &crate::analysis::folded::Window) -> FigureSpec {
        let (label, stretch, ms, what, cpu) = (self.label, self.stretch, &self.ms, self.what, self.cpu);
        let samples = gap.samples;
        let caption =
            format!("{label}flame graph of the {stretch} ({ms} ms, {samples} samples at {hz} Hz on CPU {cpu}), {what}");
        let title = format!("{label}What held CPU {cpu} in the {stretch}");
        let subtitle =
            format!("{what}: {ms} ms, {samples} samples at {hz} Hz (all tasks on the CPU; kernel {})", self.kernel);
        FigureSpec { file, caption, plot: Plot::Flame(FlamePlot { title, subtitle, folded: gap.folded.clone() }) }
    }
}

/// `n` values spread evenly on a log scale from `lo` to `hi`.
pub(crate) fn log_samples(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo) || n < 2 {
        return vec![lo, hi];
    }
    let (a, b) = (lo.ln(), hi.ln());
    (0..n).map(|i| (a + (b - a) * i as f64 / (n - 1) as f64).exp()).collect()
}

/// A power-law fit drawn over the measured counts (solid) and on to the
/// extrapolation target (dashed); `f` maps (N, fitted seconds) to the y value.
/// Both ends suffice: the reclaim plots are log-log, where a power law is straight.
pub(crate) fn fit_lines(
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scale {
    Linear,
    Log,
}

/// What the numbers on an axis are: decides how ticks are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
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
pub(crate) struct Axis {
    /// The axis title, with its unit.
    pub label: String,
    pub scale: Scale,
    pub unit: Unit,
}

impl Axis {
    pub(crate) fn new(label: impl Into<String>, scale: Scale, unit: Unit) -> Axis {
        Axis { label: label.into(), scale, unit }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    Filled,
    Hollow,
    None,
}

/// A line drawn in its series' colour (a fit, its extrapolation, a curve).
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub label: Option<String>,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
}

/// Measured points and the lines that belong to them, in one colour.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub marker: Marker,
    pub lines: Vec<Line>,
    /// Palette index (series of one result share it across plots).
    pub colour: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GuideKind {
    /// A limit that matters (the soft-lockup threshold): red, dashed.
    Threshold,
    /// A reference (the extrapolation target): grey, dotted.
    Reference,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Shape {
    /// y = constant across the plot; always inside the y range.
    Horizontal(f64),
    /// x = constant across the plot; always inside the x range.
    Vertical(f64),
    /// Any curve; clipped to the plot, never widens it.
    Curve(Vec<(f64, f64)>),
}

#[derive(Debug, Clone)]
pub(crate) struct Guide {
    pub label: String,
    pub shape: Shape,
    pub kind: GuideKind,
}

/// A labelled point (a threshold crossing, an extrapolated value).
#[derive(Debug, Clone)]
pub(crate) struct Mark {
    pub x: f64,
    pub y: f64,
    pub text: String,
    pub colour: usize,
}

/// Points, lines, guides and marks on two axes.
#[derive(Debug, Clone)]
pub(crate) struct XyPlot {
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
    pub(crate) fn new(title: impl Into<String>, x: Axis, y: Axis) -> XyPlot {
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

/// One panel of a [`TimelinePlot`]: a unit of its own over the shared time axis.
#[derive(Debug, Clone)]
pub(crate) struct Panel {
    pub y: Axis,
    pub series: Vec<Series>,
}

/// Values over time: one panel per unit, stacked, sharing the time axis.
#[derive(Debug, Clone)]
pub(crate) struct TimelinePlot {
    pub title: String,
    pub subtitle: String,
    pub x: Axis,
    pub panels: Vec<Panel>,
}

/// Measured throughput against thread count; each series gets a dashed
/// "perfect scaling" line from its first point (y₁ · x / x₁).
#[derive(Debug, Clone)]
pub(crate) struct ScalingPlot {
    pub title: String,
    pub subtitle: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
}

/// Grouped bars: for each category, one bar per group (for example
/// "before" and "after", or one per result file).
#[derive(Debug, Clone)]
pub(crate) struct BarPlot {
    pub title: String,
    pub subtitle: String,
    pub y: Axis,
    pub categories: Vec<String>,
    pub groups: Vec<BarGroup>,
}

#[derive(Debug, Clone)]
pub(crate) struct BarGroup {
    pub label: String,
    /// One value per category (`None`: not measured).
    pub values: Vec<Option<f64>>,
    pub colour: usize,
}

/// A number with at most three significant digits, no trailing zeros.
pub(crate) fn short(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// A value written in its unit, compactly (axis ticks, bar labels, marks).
pub(crate) fn format_value(unit: Unit, v: f64) -> String {
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
