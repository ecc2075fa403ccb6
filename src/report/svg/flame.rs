//! Flame graphs of the longest stretch: the folded stacks perf sampled in
//! the probe's longest gap (`reclaim --profile`, `containers --profile`), drawn by inferno (the
//! Rust port of Brendan Gregg's flamegraph.pl). Colours come from a hash
//! of each function's name, so the same input gives the same SVG.

use anyhow::{Context, Result};

/// Width of a flame graph, pixels.
pub(super) const FLAME_WIDTH: usize = 1200;
/// Frames narrower than this many pixels are left out (flamegraph.pl's
/// `--minwidth`): at [`FLAME_WIDTH`], stacks under about 0.17% of the
/// samples, which would otherwise only make the graph tall.
pub(super) const FLAME_MIN_WIDTH_PX: f64 = 2.0;

/// One flame graph of folded stacks (`stack count`), the same for the same input.
pub(super) fn draw(title: String, subtitle: String, folded: &[(String, u64)]) -> Result<String> {
    let mut o = inferno::flamegraph::Options::default();
    o.title = title;
    o.subtitle = Some(subtitle);
    o.count_name = "samples".into();
    o.deterministic = true;
    o.image_width = Some(FLAME_WIDTH);
    o.min_width = FLAME_MIN_WIDTH_PX;
    let lines: Vec<String> = folded.iter().map(|(s, c)| format!("{s} {c}")).collect();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut o, lines.iter().map(String::as_str), &mut svg)
        .context("drawing the flame graph")?;
    String::from_utf8(svg).context("flame graph SVG")
}
