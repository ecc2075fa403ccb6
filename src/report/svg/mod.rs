//! The SVG engine: draws the figure specs a benchmark yields
//! ([`crate::render::plot`]: axes, series, guides, marks) with the few plot
//! kinds every benchmark shares ([`kinds`]: `xy`, `timeline`,
//! `before_after`, `scaling`; [`flame`]: flame graphs by inferno).
//! [`axis`] holds ranges, ticks and clipping. The choice: benchmarks yield
//! data series and labels, never SVG, so the drawing primitives live here
//! once ([`draw`]). Rendering is a pure function of its input.
//!
//! Text is left to the SVG viewer (`font-family="sans-serif"`): plotters is
//! built without a font backend, so nothing here reads fonts or needs
//! fontconfig; label widths are estimated. Every axis is drawn in a linear
//! space: a log axis plots log10(v) and gets its own ticks.
//!
//! In: figure specs and plain series. Out: SVG text. Imported only by
//! `report`. Inside, one way: `axis` below `kinds`; `flame` on its own.

mod axis;
mod flame;
mod kinds;

use anyhow::Result;
use plotters::prelude::*;

use crate::render::FigureSpec;
pub(crate) use crate::render::plot::{
    BarPlot, GuideKind, Line, Mark, Marker, Plot, Scale, ScalingPlot, Shape, TimelinePlot, Unit, XyPlot,
};

pub(crate) const WIDTH: u32 = 880;
pub(crate) const HEIGHT: u32 = 540;
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

/// One rendered plot: its file name in the report directory and the SVG
/// document (its caption stays in the spec, where the parts read it).
#[derive(Debug, Clone)]
pub(crate) struct Figure {
    pub file: String,
    pub svg: String,
}

/// Draws one figure spec.
pub(crate) fn draw(spec: &FigureSpec) -> Result<Figure> {
    let svg = match &spec.plot {
        Plot::Xy(p) => kinds::xy(p)?,
        Plot::Timeline(p) => kinds::timeline(p)?,
        Plot::Scaling(p) => kinds::scaling(p)?,
        Plot::Bars(p) => kinds::before_after(p)?,
        Plot::Flame(f) => flame::draw(f.title.clone(), f.subtitle.clone(), &f.folded)?,
    };
    Ok(Figure { file: spec.file.clone(), svg })
}

/// Draws figure specs, in order.
pub(crate) fn draw_all(specs: &[FigureSpec]) -> Result<Vec<Figure>> {
    specs.iter().map(draw).collect()
}
