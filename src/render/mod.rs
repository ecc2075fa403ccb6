//! The rendering contract: what a benchmark says about its results, in
//! neutral form, for the output engines in `report` to write out.
//!
//! Each benchmark implements [`Render`] for its result struct in its own
//! folder under `bench/` (`bench/reclaim/render.rs`, ...): the human table
//! printed after a run, its Markdown part of a report, and its figures.
//! What it yields is format-free: a [`Doc`] is prose and [`Grid`]s (a header
//! and rows of strings), a figure is a [`plot::FigureSpec`] (axes, series,
//! guides, marks; no SVG). The engines in `report` consume any `Render`:
//! `report::table` writes a `Doc` with aligned text grids, `report::markdown`
//! with pipe tables, `report::svg` draws the specs with plotters (the
//! drawing primitives, axes and plot kinds stay there), `report::emit`
//! writes the result as it is, and `report::document` puts the parts of
//! several results together. So a benchmark's tables, sections and figures
//! change in one folder, and a new benchmark renders by implementing one
//! trait.
//!
//! In: nothing but what a benchmark passes. Out: [`Doc`], [`Grid`],
//! [`plot::FigureSpec`]. Sits between `state` and `bench` in the layers:
//! imports `analysis`, `env`, `result` and the utilities; imported by
//! `bench` (the implementations) and `report` (the engines). Inside, one
//! way: `plot`, `cell` and `profile` below this file's items.

pub(crate) mod cell;
pub(crate) mod plot;
pub(crate) mod profile;

use std::fmt;

use crate::result::Header;
pub(crate) use plot::FigureSpec;

/// A table as header + rows of cells, rendered by an engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grid {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// A piece of a [`Doc`]: text as it is, or a table the engine lays out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Block {
    Text(String),
    Grid(Grid),
}

/// Prose and tables in reading order. Text is written with `write!` /
/// `writeln!` (or `+=`), tables with [`Doc::grid`]; an engine turns the
/// tables into its format and keeps the text as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Doc {
    pub blocks: Vec<Block>,
}

impl Doc {
    pub(crate) fn new() -> Doc {
        Doc::default()
    }

    pub(crate) fn push_str(&mut self, s: &str) {
        match self.blocks.last_mut() {
            Some(Block::Text(t)) => t.push_str(s),
            Some(Block::Grid(_)) | None => self.blocks.push(Block::Text(s.to_string())),
        }
    }

    pub(crate) fn push(&mut self, c: char) {
        self.push_str(c.encode_utf8(&mut [0; 4]));
    }

    pub(crate) fn grid(&mut self, g: Grid) {
        self.blocks.push(Block::Grid(g));
    }

    /// Another document's blocks after this one's.
    pub(crate) fn append(&mut self, other: Doc) {
        for b in other.blocks {
            match b {
                Block::Text(t) => self.push_str(&t),
                g => self.blocks.push(g),
            }
        }
    }

    /// The document as text, each grid laid out by `grid`.
    pub(crate) fn render(&self, grid: &dyn Fn(&Grid) -> String) -> String {
        let mut s = String::new();
        for b in &self.blocks {
            match b {
                Block::Text(t) => s.push_str(t),
                Block::Grid(g) => s.push_str(&grid(g)),
            }
        }
        s
    }
}

impl fmt::Write for Doc {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

impl std::ops::AddAssign<&str> for Doc {
    fn add_assign(&mut self, s: &str) {
        self.push_str(s);
    }
}

impl std::ops::AddAssign<Doc> for Doc {
    fn add_assign(&mut self, d: Doc) {
        self.append(d);
    }
}

impl std::ops::Add<&str> for Doc {
    type Output = Doc;
    fn add(mut self, s: &str) -> Doc {
        self.push_str(s);
        self
    }
}

impl std::ops::Add<Doc> for Doc {
    type Output = Doc;
    fn add(mut self, d: Doc) -> Doc {
        self.append(d);
        self
    }
}

/// What a benchmark's results say, for the engines in `report`.
pub(crate) trait Render: Sized {
    /// The benchmark's name, as its results' header says.
    const BENCHMARK: &'static str;

    fn header(&self) -> &Header;

    /// The human table printed after a run.
    fn text(&self) -> Doc;

    /// What tells results drawn together apart (kernel, filesystem, ...),
    /// in the same order for every result; see [`labels_of`].
    fn facets(&self) -> Vec<String>;

    /// Each result's label in legends and headings, and the subtitle of
    /// what they share.
    fn labels(results: &[&Self]) -> (Vec<String>, String) {
        labels_of(&results.iter().map(|r| (r.facets(), r.header())).collect::<Vec<_>>())
    }

    /// The figures of results of this benchmark, drawn on shared axes.
    fn figures(results: &[&Self], labels: &[String], subtitle: &str) -> Vec<FigureSpec>;

    /// This benchmark's part of a report: the figures' links, then the
    /// results' sections.
    fn part(results: &[&Self], labels: &[String], subtitle: &str, figures: &[FigureSpec]) -> Doc;

    /// One result alone as a Markdown section (`--markdown`).
    fn section(&self) -> Doc {
        let (labels, subtitle) = Self::labels(&[self]);
        Self::part(&[self], &labels, &subtitle, &[])
    }
}

/// A result of any benchmark, as `report` holds the saved ones it was
/// given: its benchmark's name, and the result itself to downcast to the
/// benchmark's type (every [`Render`] result is one).
pub(crate) trait AnyResult: fmt::Debug {
    /// The benchmark's name ([`Render::BENCHMARK`]).
    fn benchmark(&self) -> &'static str;
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<R: Render + fmt::Debug + 'static> AnyResult for R {
    fn benchmark(&self) -> &'static str {
        R::BENCHMARK
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Labels from facets: what all results share becomes the subtitle (the
/// first five facets at most), what tells them apart each one's label (the
/// start time when nothing does).
pub(crate) fn labels_of(results: &[(Vec<String>, &Header)]) -> (Vec<String>, String) {
    let Some((first, _)) = results.first() else { return (Vec::new(), String::new()) };
    let differs: Vec<bool> = (0..first.len()).map(|i| results.iter().any(|(f, _)| f[i] != first[i])).collect();
    let subtitle = first
        .iter()
        .zip(&differs)
        .take(5)
        .filter(|(_, d)| !**d)
        .map(|(f, _)| f.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let labels = results
        .iter()
        .map(|(f, h)| {
            let parts: Vec<&str> = f.iter().zip(&differs).filter(|(_, d)| **d).map(|(f, _)| f.as_str()).collect();
            if parts.is_empty() { format!("run of {}", h.started_at) } else { parts.join(", ") }
        })
        .collect();
    (labels, subtitle)
}

/// What tells results of one filesystem benchmark apart.
pub(crate) fn common_facets(e: &crate::env::Environment, fs: impl fmt::Display) -> Vec<String> {
    vec![format!("on {fs}"), format!("kernel {}", e.kernel), format!("{} CPUs", e.cpus)]
}

/// The plots of a part, then each result under its own heading when there
/// are several (`body` renders one result with headings at a level).
pub(crate) fn part<R>(
    title: String,
    figures: &[FigureSpec],
    legend: &str,
    results: &[&R],
    labels: &[String],
    body: &dyn Fn(&R, usize) -> Doc,
) -> Doc {
    use fmt::Write;
    let mut s = Doc::new();
    s.push_str(&format!("## {title}\n\n### Plots\n\n"));
    for f in figures {
        let _ = writeln!(s, "![{}]({})\n", f.caption, f.file);
    }
    let _ = writeln!(s, "{legend}\n");
    if results.len() == 1 {
        return s + body(results[0], 3);
    }
    for (r, label) in results.iter().zip(labels) {
        let _ = writeln!(s, "### {label}\n");
        s += body(r, 4);
    }
    s
}

/// Notes and the command, closing every result's section.
pub(crate) fn closing(h: &str, notes: &[String], command: &str, e: &crate::env::Environment) -> String {
    use fmt::Write;
    let mut s = String::new();
    if !notes.is_empty() {
        let _ = writeln!(s, "\n{h} Notes\n");
        for n in notes {
            let _ = writeln!(s, "- {n}");
        }
    }
    let _ = writeln!(s, "\n{h} Reproduce\n\n```\n{command}\n```\n");
    let _ = writeln!(s, "{}", cell::environment_line(e));
    s
}
