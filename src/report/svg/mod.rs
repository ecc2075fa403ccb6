//! SVG plots. One function per plot kind, each taking plain series so that
//! every benchmark draws with the same few kinds ([`kinds`]: `xy`,
//! `timeline`, `before_after`, `scaling`), then one function per benchmark
//! ([`figures`]) that turns results into [`Figure`]s. [`axis`] holds ranges,
//! ticks, value formatting and clipping. Rendering is a pure function of its
//! input.
//!
//! Text is left to the SVG viewer (`font-family="sans-serif"`): plotters is
//! built without a font backend, so nothing here reads fonts or needs
//! fontconfig; label widths are estimated. Every axis is drawn in a linear
//! space: a log axis plots log10(v) and gets its own ticks.
//!
//! In: plain series and result structs. Out: SVG text. Imported only by
//! `report`. Inside, one way: `axis` below `kinds` below `figures` and
//! `containers`; `flame` on its own.

mod axis;
mod containers;
mod figures;
mod flame;
mod kinds;
mod matrix;

pub use containers::containers;
pub use figures::{churn, pollute, reclaim, scale};
pub use flame::{containers_longest_stretch, longest_stretch};
pub use matrix::matrix_longest_gap;

use plotters::prelude::*;

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
