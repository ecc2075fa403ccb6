//! `--fs overlay`: the per-layer table (overlay, upper, lower: what each
//! freed, how long its umount took, the longest gap on the CPU) and the
//! line naming the layer whose teardown holds the CPU longest. Shared by
//! the human table, the Markdown report and `create`. Each function takes
//! the teardowns as (size, teardown) pairs, so the benchmarks that stack
//! overlays (`reclaim`, `create`) render them alike.

use super::{LayerUmount, StackTeardown};
use crate::render::Grid;
use crate::size::{grouped, human};
use crate::stats::median;

const LAYERS: [&str; 3] = ["overlay", "upper", "lower"];

/// What a row's count means, per layer.
fn role(layer: &str) -> &'static str {
    match layer {
        "overlay" => "freed by the reclaim",
        "upper" => "stayed in upper, freed by its umount",
        _ => "stayed in lower, freed by its umount",
    }
}

fn signed(n: f64) -> String {
    let v = n.round() as i64;
    if v < 0 { format!("-{}", grouped(v.unsigned_abs())) } else { grouped(v as u64) }
}

fn ms(s: f64) -> String {
    crate::duration::secs(s)
}

/// One row per size and layer, medians over the probed repetitions.
pub(crate) fn grid(stacks: &[(u64, &StackTeardown)], cpu: usize) -> Option<Grid> {
    if stacks.is_empty() {
        return None;
    }
    let mut sizes: Vec<u64> = stacks.iter().map(|(t, _)| *t).collect();
    sizes.dedup();
    let mut rows = Vec::new();
    for size in sizes {
        for name in LAYERS {
            let ls: Vec<&LayerUmount> =
                stacks.iter().filter(|(t, _)| *t == size).filter_map(|(_, s)| s.layer(name)).collect();
            if let Some(first) = ls.first() {
                rows.push(row(&human(size), first, &ls));
            }
        }
    }
    Some(Grid { header: header(cpu), rows })
}

fn header(cpu: usize) -> Vec<String> {
    [
        "Size",
        "Layer",
        "FS",
        "Dentries",
        "Of them negative",
        "What the count is",
        "Umount time",
        &format!("Longest gap (CPU {cpu})"),
        "Note",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect()
}

/// The counts are the median of the undisturbed repetitions when there are
/// any (the note says how many were left out); times and gaps are of all.
fn row(size: &str, first: &LayerUmount, ls: &[&LayerUmount]) -> Vec<String> {
    let quiet: Vec<&LayerUmount> = ls.iter().copied().filter(|l| !l.disturbed).collect();
    let counted = if quiet.is_empty() { ls } else { &quiet[..] };
    let med_of =
        |of: &[&LayerUmount], f: &dyn Fn(&LayerUmount) -> f64| median(&of.iter().map(|l| f(l)).collect::<Vec<_>>());
    let med = |f: &dyn Fn(&LayerUmount) -> f64| med_of(ls, f);
    let gaps: Vec<f64> = ls.iter().filter_map(|l| l.max_gap_seconds).collect();
    let disturbed = ls.len() - quiet.len();
    let uncertainty = counted.iter().filter_map(|l| l.uncertainty).reduce(f64::max);
    let note = match (disturbed, uncertainty) {
        (0, Some(u)) => format!("± {}", signed(u)),
        (0, None) => String::new(),
        (d, _) if d == ls.len() => format!("all {d} disturbed by other activity"),
        (d, Some(u)) => format!("± {} ({d} of {} disturbed, left out)", signed(u), ls.len()),
        (d, None) => format!("{d} of {} disturbed, left out", ls.len()),
    };
    vec![
        size.to_string(),
        first.layer.clone(),
        first.fs.clone(),
        signed(med_of(counted, &|l| l.dentries as f64)),
        signed(med_of(counted, &|l| l.negative as f64)),
        role(&first.layer).into(),
        ms(med(&|l| l.umount_seconds)),
        if gaps.is_empty() { "–".into() } else { ms(median(&gaps)) },
        note,
    ]
}

/// The rows of one `create --fs overlay`.
pub(crate) fn create_grid(t: &StackTeardown) -> Grid {
    let rows = t
        .layers
        .iter()
        .map(|l| {
            let mut r = row("", l, &[l]);
            r.remove(0);
            r
        })
        .collect();
    let mut header = header(t.cpu);
    header.remove(0);
    Grid { header, rows }
}

/// The median longest gap of each layer at size `size`, top down.
fn layer_gaps(stacks: &[(u64, &StackTeardown)], size: u64) -> Vec<(String, String, f64)> {
    LAYERS
        .iter()
        .filter_map(|name| {
            let ls: Vec<&LayerUmount> =
                stacks.iter().filter(|(t, _)| *t == size).filter_map(|(_, s)| s.layer(name)).collect();
            let gaps: Vec<f64> = ls.iter().filter_map(|l| l.max_gap_seconds).collect();
            let first = ls.first()?;
            (!gaps.is_empty()).then(|| (first.layer.clone(), first.fs.clone(), median(&gaps)))
        })
        .collect()
}

/// "Which layer holds the CPU longest", at the largest size with layers.
pub(crate) fn longest_line(stacks: &[(u64, &StackTeardown)]) -> Option<String> {
    let top = stacks.iter().map(|(t, _)| *t).max()?;
    let gaps = layer_gaps(stacks, top);
    let (name, fs, gap) = gaps.iter().max_by(|a, b| a.2.partial_cmp(&b.2).unwrap_or(std::cmp::Ordering::Equal))?;
    let all: Vec<String> = gaps.iter().map(|(n, _, g)| format!("{n} {}", ms(*g))).collect();
    Some(format!(
        "Longest stretch on the CPU at {}: the {name} layer's teardown ({fs}), median longest gap {} ({}).",
        human(top),
        ms(*gap),
        all.join(", ")
    ))
}

/// What the table's counts mean, said once under it.
pub(crate) const LEGEND: &str = "overlay: what the reclaim (its umount, or the death of its namespace) freed; upper and \
lower: what stayed in that filesystem after the overlay was gone, counted by unmounting it (untimed as a reclaim, \
probed like one). Counts are dentry-state deltas corrected for other processes' drift, measured in quiet windows \
around each umount (± the correction's uncertainty).";
