//! `__internal __guidance MATRIX.json...`: docs/guidance.md's table,
//! computed from recorded `vm` matrices of `reclaim` (every kernel, model
//! and clock of each, the host's own row included): per row and reclaim
//! path, the cost per dentry of the longest stretch and the largest count
//! one walk may reach within each deadline (an exec probe's 1 s, the 5 s
//! pod-startup SLO, the 20 s soft-lockup threshold), with the range the
//! sizes and repetitions allow ([`crate::analysis::guidance`]). Emulated
//! (TCG) rows are marked so beside each figure.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::Matrix;
use crate::analysis::guidance::{self, Cost, Size};
use crate::bench::reclaim::ReclaimResult;
use crate::size::human;

/// The hidden command's name.
pub(crate) const GUIDANCE_COMMAND: &str = "__guidance";

/// The deadlines of the table: an exec probe's timeout, the pod-startup
/// SLO, the soft-lockup threshold at the default watchdog_thresh.
pub(crate) const DEADLINES: [(&str, f64); 3] = [("probe", 1.0), ("pod start", 5.0), ("watchdog", 20.0)];

#[derive(Debug, clap::Args)]
pub(crate) struct GuidanceArgs {
    /// Matrices written by `dentrylab vm --json` of a `reclaim` command.
    #[arg(required = true, value_name = "MATRIX.json")]
    pub files: Vec<PathBuf>,
}

pub(crate) const GUIDANCE_ENTRY: crate::sys::internal::Entry<GuidanceArgs> = crate::sys::internal::Entry {
    name: GUIDANCE_COMMAND,
    about: "docs/guidance.md's table from recorded vm matrices of reclaim: the count one walk may reach per deadline",
    aliases: &[],
    run: |a| {
        print!("{}", table(&a.files)?);
        Ok(())
    },
};

/// One reclaim path of one row: its cost per dentry, or why none.
struct Line {
    label: String,
    path: String,
    emulated: bool,
    cost: Option<Cost>,
    largest: Option<(u64, f64)>,
}

fn lines_of(m: &Matrix<ReclaimResult>) -> Vec<Line> {
    let mut out = Vec::new();
    for row in &m.rows {
        let Some(r) = &row.result else { continue };
        let o = &r.options;
        let clock = if row.emulated { format!("TCG, clock {}", row.clock) } else { row.accel.clone() };
        let label = format!("{} ({}, {clock})", row.kernel_release, row.preempt);
        for pm in &r.per_method {
            let left_out: Vec<u64> = pm.fits.gap_left_out.iter().map(|l| l.target).collect();
            let of_method = r.sizes.iter().filter(|s| s.method == pm.method);
            let largest = of_method.clone().max_by_key(|s| s.target).map(|s| (s.target, s.max_gap_seconds.median));
            let sizes: Vec<Size> = of_method
                .filter(|s| !left_out.contains(&s.target))
                .map(|s| Size {
                    dentries: s.target as f64,
                    gap_min_seconds: s.max_gap_seconds.min,
                    gap_median_seconds: s.max_gap_seconds.median,
                    gap_max_seconds: s.max_gap_seconds.max,
                })
                .collect();
            out.push(Line {
                label: label.clone(),
                path: format!("{} {} {}, {}", o.fs, o.kind.name(), layout(&o.layout), pm.method.name()),
                emulated: row.emulated,
                cost: guidance::cost(&sizes),
                largest,
            });
        }
    }
    out
}

fn layout(l: &crate::workload::Layout) -> String {
    match l {
        crate::workload::Layout::Flat => "in one directory".into(),
        crate::workload::Layout::Dirs(k) => format!("over {k} directories"),
    }
}

fn count(n: f64) -> String {
    if n.is_finite() { human(n as u64) } else { "∞".into() }
}

/// The Markdown table of every file's rows, each file's guest command
/// above its rows.
pub(crate) fn table(files: &[PathBuf]) -> Result<String> {
    let mut s = String::new();
    for f in files {
        let text = std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?;
        let m: Matrix<ReclaimResult> = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a vm matrix of reclaim results", f.display()))?;
        let name = f.file_name().map_or_else(|| f.display().to_string(), |n| n.to_string_lossy().into_owned());
        let _ = writeln!(s, "\n`{name}`: `dentrylab {}` in each guest\n", m.command.join(" "));
        let _ = writeln!(
            s,
            "| kernel (model, clock) | reclaim | stretch per dentry | {} |",
            DEADLINES.map(|(n, d)| format!("{n} {d} s")).join(" | ")
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|");
        for l in lines_of(&m) {
            let tcg = if l.emulated { " (TCG, emulated)" } else { "" };
            let cells = match &l.cost {
                Some(c) => {
                    let n = if c.sizes == 1 { "1 size".to_string() } else { format!("{} sizes", c.sizes) };
                    let per = format!("{:.0} ns ({:.0}–{:.0}; {n}){tcg}", c.median * 1e9, c.low * 1e9, c.high * 1e9);
                    let each = DEADLINES.map(|(_, d)| {
                        let a = guidance::allowed(c, d);
                        format!("{} ({}–{}){tcg}", count(a.dentries), count(a.dentries_low), count(a.dentries_high))
                    });
                    format!("{per} | {}", each.join(" | "))
                }
                None => {
                    let (n, g) = l.largest.unwrap_or((0, 0.0));
                    let note = format!("no bound from these sizes{tcg}");
                    format!(
                        "under the probe's noise floor at every size (largest {}: {:.1} ms){tcg} | {note} | {note} | {note}",
                        human(n),
                        g * 1e3
                    )
                }
            };
            let _ = writeln!(s, "| {} | {} | {cells} |", l.label, l.path);
        }
    }
    Ok(s)
}
