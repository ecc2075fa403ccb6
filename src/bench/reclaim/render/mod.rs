//! What a reclaim result says, for the engines in `report`: the
//! [`Render`] implementation of [`ReclaimResult`]. The tables and lines
//! are in [`grids`], the human table in [`text`], the Markdown part in
//! [`markdown`], the `--profile` tables in [`profile`], the figures in
//! [`figures`] and the verdict's sentences in [`verdict`].
//!
//! Inside, one way: `verdict` below `grids`; `grids`, `profile`, `figures`
//! below `text` and `markdown`.

pub(crate) mod figures;
pub(crate) mod grids;
pub(crate) mod markdown;
pub(crate) mod profile;
pub(crate) mod text;
pub(crate) mod verdict;
pub(crate) mod victims;

use crate::bench::layers::StackTeardown;
use crate::bench::reclaim::result::ReclaimResult;
use crate::render::{Doc, FigureSpec, Render};
use crate::result::Header;

/// The overlay teardowns of a result's probed runs, as (size, teardown).
fn stacks(r: &ReclaimResult) -> Vec<(u64, &StackTeardown)> {
    r.runs.iter().filter_map(|run| Some((run.target, run.layers.as_ref()?))).collect()
}

impl Render for ReclaimResult {
    const BENCHMARK: &'static str = "reclaim";

    fn header(&self) -> &Header {
        &self.header
    }

    fn text(&self) -> Doc {
        text::text(self)
    }

    fn facets(&self) -> Vec<String> {
        let o = &self.options;
        let e = &self.environment;
        vec![
            format!("{} dentries", o.kind.name()),
            format!("via {}", o.methods.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")),
            format!("on {}", o.fs),
            format!("{} layout", o.layout),
            format!("kernel {}", e.kernel),
            format!("{} preemption", e.preemption),
            format!(
                "watchdog_thresh {}",
                e.watchdog_thresh_seconds.map(|t| format!("{t} s")).unwrap_or_else(|| "unknown".into())
            ),
        ]
    }

    fn figures(results: &[&Self], labels: &[String], subtitle: &str) -> Vec<FigureSpec> {
        let mut f = figures::reclaim(results, labels, subtitle);
        f.extend(figures::longest_stretch(results, labels));
        f
    }

    fn part(results: &[&Self], labels: &[String], subtitle: &str, figures: &[FigureSpec]) -> Doc {
        markdown::part(results, labels, subtitle, figures)
    }

    fn section(&self) -> Doc {
        markdown::section(self)
    }
}
