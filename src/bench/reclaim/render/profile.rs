//! `reclaim --profile` for people: per run, what held the reclaiming CPU
//! in the longest gap and over the whole reclaim; for the longest stretch
//! of each method, its top stacks. Tables only: the flame graph is among
//! the figures.

use crate::bench::reclaim::{profile::longest, result::ReclaimResult};
use crate::render::Grid;
use crate::render::profile::{code, path_cell, pct, stacks_grid, top_cell};
use crate::size::human;

/// One row per profiled run, when any run was profiled. `md`: cells for Markdown.
pub(crate) fn runs_grid(r: &ReclaimResult, md: bool) -> Option<Grid> {
    let many = r.options.methods.len() > 1;
    let runs: Vec<_> = r.runs.iter().filter(|x| x.profile.is_some()).collect();
    if runs.is_empty() {
        return None;
    }
    let mut header: Vec<String> = Vec::new();
    if many {
        header.push("Method".into());
    }
    header.extend(
        [
            "Target",
            "Rep",
            "Longest gap",
            "Samples",
            "Reclaimer's share",
            "Its heaviest path",
            "Its top stack",
            "All tasks: heaviest call",
            "Whole reclaim: heaviest path",
        ]
        .map(String::from),
    );
    let rows = runs
        .iter()
        .map(|run| {
            let p = run.profile.as_ref().expect("filtered");
            let g = &p.longest_gap;
            let mut row = Vec::new();
            if many {
                row.push(run.method.name().to_string());
            }
            row.extend([
                human(run.target),
                (run.rep + 1).to_string(),
                format!("{:.0} ms", run.probe.max_gap_seconds * 1e3),
                g.samples.to_string(),
                g.reclaimer.as_ref().map(|m| pct(m.share)).unwrap_or_else(|| "–".into()),
                path_cell(g, md),
                top_cell(g),
                g.call
                    .as_ref()
                    .map(|c| format!("{} ({})", code(c.name(), md), pct(c.share)))
                    .unwrap_or_else(|| "–".into()),
                path_cell(&p.reclaim, md),
            ]);
            row
        })
        .collect();
    Some(Grid { header, rows })
}

/// Per method: a title and the top stacks of its longest stretch, then of
/// that run's whole reclaim.
pub(crate) fn longest_stacks(r: &ReclaimResult, md: bool) -> Vec<(String, Grid)> {
    let mut out = Vec::new();
    for &m in &r.options.methods {
        let Some(run) = longest(&r.runs, m) else { continue };
        let Some(p) = run.profile.as_ref() else { continue };
        let at = format!("{} {} rep {}", m.name(), human(run.target), run.rep + 1);
        out.push((
            format!(
                "Longest stretch ({at}: {:.0} ms, {} samples at {} Hz): top stacks",
                run.probe.max_gap_seconds * 1e3,
                p.longest_gap.samples,
                p.frequency_hz
            ),
            stacks_grid(&p.longest_gap, md),
        ));
        out.push((
            format!("Whole reclaim ({at}: {} samples): top stacks", p.reclaim.samples),
            stacks_grid(&p.reclaim, md),
        ));
    }
    out
}

/// Why some runs have no profile.
pub(crate) fn problems(r: &ReclaimResult) -> Vec<String> {
    r.runs
        .iter()
        .filter_map(|x| {
            x.profile_problem
                .as_ref()
                .map(|p| format!("{} {} rep {}: no profile: {p}", x.method.name(), human(x.target), x.rep + 1))
        })
        .collect()
}
