//! Cells and tables of a perf profile window (`--profile`), shared by the
//! benchmarks that profile: what held the CPU, and the top stacks.

use super::Grid;
use crate::analysis::folded::{Window, short_stack};

/// Frames of a stack shown in a table (leaf first).
const SHOWN_FRAMES: usize = 6;

pub(crate) fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// Code spans for Markdown (kernel names start with `__`).
pub(crate) fn code(s: String, md: bool) -> String {
    if md { format!("`{s}`") } else { s }
}

/// The reclaiming task's heaviest path in a window, with its share of
/// that task's samples (of all samples for results without a task).
pub(crate) fn path_cell(w: &Window, md: bool) -> String {
    let (path, samples) = match &w.reclaimer {
        Some(r) => (&r.path, r.samples),
        None => (&w.path, w.samples),
    };
    match path {
        Some(p) if p.frames.len() >= 2 => format!("{} ({})", code(p.name(), md), pct(p.share)),
        _ if samples == 0 => "no sample".into(),
        _ => "no majority path".into(),
    }
}

pub(crate) fn top_cell(w: &Window) -> String {
    match &w.reclaimer {
        Some(r) => r.top_stack.as_ref().map(|s| pct(s.share)).unwrap_or_else(|| "–".into()),
        None if w.samples == 0 => "–".into(),
        None => pct(w.top_share()),
    }
}

/// A window's top stacks, leaf first (`md`: for Markdown).
pub(crate) fn stacks_grid(w: &Window, md: bool) -> Grid {
    let header = ["Share", "Samples", "Stack (leaf first)"].map(String::from).to_vec();
    let rows = w
        .stacks
        .iter()
        .map(|s| vec![pct(s.share), s.samples.to_string(), code(short_stack(&s.stack, SHOWN_FRAMES), md)])
        .collect();
    Grid { header, rows }
}
