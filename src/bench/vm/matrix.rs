//! The kernel matrix: one row per (kernel, preemption model, accelerator
//! and clock), each holding the reclaim result its guest (or the host)
//! wrote. [`VmMatrix`] is the file `dentrylab vm --json` writes (schema
//! [`VM_MATRIX_SCHEMA`]); [`Matrix`] turns its rows into the columns people
//! compare, and [`text`] and [`markdown`] lay them out as a [`Doc`], for
//! `vm`'s own output and, through [`MatrixFile`]'s [`Render`], for
//! `report` (`cli::registry` gives it the reader of this schema).

use serde::Deserialize;

use crate::analysis::verdict::MAX_PREDICTED_COUNT;
use crate::bench::reclaim::{Method, ReclaimResult, Run, profile};
use crate::duration::secs;
use crate::render::plot::{
    Axis, Guide, GuideKind, Marker, Plot, Scale, Series, Shape, Unit, XyPlot, fit_lines, format_value,
};
use crate::render::{Doc, FigureSpec, Grid, Render};
use crate::result::Header;
use crate::size::human;
use crate::stats::median;

/// The `schema` field of a matrix file.
pub(crate) const VM_MATRIX_SCHEMA: &str = super::SCHEMA;
/// What every matrix schema starts with (the version follows).
pub(crate) const VM_MATRIX_SCHEMA_PREFIX: &str = "dentrylab.vm-matrix/";

/// A matrix file, its rows' results read as reclaim results (the one
/// contract type lives with the command that writes it: `bench::vm`).
pub(crate) type VmMatrix = super::Matrix<Box<ReclaimResult>>;
/// One kernel, preemption model and accelerator/clock.
pub(crate) type MatrixRow = super::Row<Box<ReclaimResult>>;

impl MatrixRow {
    fn preempt_cell(&self) -> String {
        match &self.preempt_requested {
            Some(asked) if asked != &self.preempt => format!("{} (asked {asked})", self.preempt),
            _ => self.preempt.clone(),
        }
    }
}

/// What a row's result says, in the matrix's columns (`None`: not in
/// the result).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Cells {
    pub method: Option<String>,
    /// The largest size of the first method.
    pub largest: Option<u64>,
    pub ns_per_dentry: Option<f64>,
    pub longest_gap_seconds: Option<f64>,
    /// Median over that size's repetitions of the longest stretch on either
    /// probed CPU, when it is longer than the reclaiming CPU's: the kernel
    /// held the other CPU instead (a deferred teardown's kworker).
    pub longest_either_cpu_seconds: Option<f64>,
    /// Median of longest gap ÷ reclaim time over that size's repetitions.
    pub longest_share: Option<f64>,
    /// The gap fit's exponent and its 90% interval.
    #[allow(clippy::type_complexity)]
    pub gap_exponent: Option<(f64, Option<(f64, Option<f64>)>)>,
    /// The predicted soft-lockup count and its 90% interval.
    pub edge: Option<(f64, Option<f64>, Option<f64>)>,
    pub watchdog: Option<String>,
    /// The reclaiming task's heaviest path in the longest profiled stretch
    /// (`callee ← caller`) and its share of that task's samples.
    pub heaviest_path: Option<(String, f64)>,
}

impl Cells {
    /// The columns of one reclaim result, one set per method it ran
    /// (without contending lookups), in the order it ran them.
    pub(crate) fn all(r: &ReclaimResult) -> Vec<Cells> {
        if r.options.methods.is_empty() {
            return vec![Cells::default()];
        }
        r.options.methods.iter().map(|&m| Cells::of(r, m)).collect()
    }

    /// The columns of one method of a reclaim result.
    pub(crate) fn of(r: &ReclaimResult, method: Method) -> Cells {
        let largest = r.sizes.iter().filter(|s| s.method == method && s.contenders == 0).max_by_key(|s| s.target);
        let at_largest: Vec<&Run> = largest
            .map(|s| {
                r.runs.iter().filter(|x| x.method == method && x.contenders == 0 && x.target == s.target).collect()
            })
            .unwrap_or_default();
        let shares: Vec<f64> = at_largest
            .iter()
            .filter(|x| x.reclaim_seconds > 0.0)
            .map(|x| (x.probe.max_gap_seconds / x.reclaim_seconds).min(1.0))
            .collect();
        let own = largest.map(|s| s.max_gap_seconds.median);
        let either: Vec<f64> = at_largest.iter().map(|x| x.longest_on_either_cpu()).collect();
        let either = (!either.is_empty()).then(|| median(&either)).filter(|&e| own.is_none_or(|o| e > o));
        let analysis = r.per_method.iter().find(|m| m.method == method);
        let gap = analysis.and_then(|m| m.fits.gap_governing());
        let verdict = analysis.and_then(|m| m.verdict.as_ref());
        Cells {
            method: Some(method.name().into()),
            largest: largest.map(|s| s.target),
            ns_per_dentry: largest.map(|s| s.ns_per_dentry.median),
            longest_gap_seconds: own,
            longest_either_cpu_seconds: either,
            longest_share: (!shares.is_empty()).then(|| median(&shares)),
            gap_exponent: gap.map(|p| (p.exponent, p.band.map(|b| b.exponent(&p)).map(|i| (i.low, i.high)))),
            edge: verdict.and_then(|v| {
                v.lockup_count
                    .filter(|&n| n <= MAX_PREDICTED_COUNT)
                    .map(|n| (n, v.lockup_count_low, v.lockup_count_high))
            }),
            watchdog: watchdog_cell(r),
            heaviest_path: heaviest_path(r, method),
        }
    }
}

/// The watchdog checks of a result, one clause per threshold.
fn watchdog_cell(r: &ReclaimResult) -> Option<String> {
    let checks: Vec<String> = r
        .watchdog
        .iter()
        .chain(&r.watchdog_more)
        .map(|w| {
            format!(
                "thresh {} s: {} fired, {} silent as predicted, {} FP, {} FN{}",
                w.thresh_seconds,
                w.true_positive,
                w.true_negative,
                w.false_positive,
                w.false_negative,
                if w.validated { " (validated)" } else { "" }
            )
        })
        .collect();
    (!checks.is_empty()).then(|| checks.join("; "))
}

/// The reclaiming task's heaviest path in the longest profiled stretch.
fn heaviest_path(r: &ReclaimResult, method: Method) -> Option<(String, f64)> {
    let w = &profile::longest(&r.runs, method)?.profile.as_ref()?.longest_gap;
    let path = match &w.reclaimer {
        Some(me) => me.path.as_ref(),
        None => w.path.as_ref(),
    }?;
    (path.frames.len() >= 2).then(|| (path.name(), path.share))
}

/// The matrix's rows as columns: a line per row and method.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Matrix {
    /// Per line: the index of its row in the file, the row's label, and
    /// what its result says for one method (or the row's error).
    pub rows: Vec<(usize, String, Result<Cells, String>)>,
}

impl Matrix {
    pub(crate) fn of(m: &VmMatrix) -> Matrix {
        let rows = m
            .rows
            .iter()
            .enumerate()
            .flat_map(|(i, row)| {
                let cells: Vec<Result<Cells, String>> = match (&row.error, &row.result) {
                    (Some(e), _) => vec![Err(e.clone())],
                    (None, Some(r)) => Cells::all(r).into_iter().map(Ok).collect(),
                    (None, None) => vec![Err("no result came back".into())],
                };
                cells.into_iter().map(move |c| (i, row.label(), c))
            })
            .collect();
        Matrix { rows }
    }

    /// One line per row. `md`: Markdown cells (code spans for kernel functions).
    pub(crate) fn grid(&self, m: &VmMatrix, md: bool) -> Grid {
        let header = [
            "Kernel",
            "Preemption",
            "Accel / clock",
            "Method, largest size",
            "ns/dentry",
            "Longest stretch (share of reclaim)",
            "Gap exponent (90%)",
            "Predicted edge (90%)",
            "Watchdog",
            "Heaviest kernel path",
            "Error",
        ]
        .map(String::from)
        .to_vec();
        let dash = || "–".to_string();
        let rows = self
            .rows
            .iter()
            .map(|(i, _, cells)| {
                let row = &m.rows[*i];
                let mut out = vec![row.kernel_release.clone(), row.preempt_cell(), row.machine()];
                match cells {
                    Err(e) => {
                        out.extend(std::iter::repeat_with(dash).take(7));
                        out.push(e.clone());
                    }
                    Ok(c) => {
                        out.push(match (&c.method, c.largest) {
                            (Some(m), Some(n)) => format!("{m}, {}", human(n)),
                            (Some(m), None) => m.clone(),
                            _ => dash(),
                        });
                        out.push(c.ns_per_dentry.map(|n| format!("{n:.0} ns")).unwrap_or_else(dash));
                        let either = c
                            .longest_either_cpu_seconds
                            .map(secs)
                            .filter(|e| c.longest_gap_seconds.map(secs).as_ref() != Some(e))
                            .map(|e| format!("; either CPU {e}"))
                            .unwrap_or_default();
                        out.push(match (c.longest_gap_seconds, c.longest_share) {
                            (Some(g), Some(s)) => format!("{} ({:.0}%){either}", secs(g), s * 100.0),
                            (Some(g), None) => format!("{}{either}", secs(g)),
                            _ => dash(),
                        });
                        out.push(match c.gap_exponent {
                            Some((e, Some((lo, Some(hi))))) => format!("{e:.2} ({lo:.2}–{hi:.2})"),
                            Some((e, _)) => format!("{e:.2} (no interval)"),
                            None => dash(),
                        });
                        out.push(match c.edge {
                            Some((n, Some(lo), hi)) => format!(
                                "{} ({}–{})",
                                human(n as u64),
                                human(lo as u64),
                                hi.map(|h| human(h as u64)).unwrap_or_else(|| "unbounded".into())
                            ),
                            Some((n, None, _)) => format!("{} (no interval)", human(n as u64)),
                            None => "none predicted".into(),
                        });
                        out.push(c.watchdog.clone().unwrap_or_else(|| "not checked".into()));
                        out.push(match &c.heaviest_path {
                            Some((p, share)) if md => format!("`{p}` ({:.0}%)", share * 100.0),
                            Some((p, share)) => format!("{p} ({:.0}%)", share * 100.0),
                            None => dash(),
                        });
                        out.push(String::new());
                    }
                }
                out
            })
            .collect();
        Grid { header, rows }
    }
}

/// The notes under the table: what the command was, and what the emulated
/// times may be compared with.
fn notes(m: &VmMatrix) -> Vec<String> {
    let mut out = vec![format!(
        "Every row ran `dentrylab {}`; host: kernel {}, {} CPUs, {}; started {}.",
        m.command.join(" "),
        m.host.kernel,
        m.host.cpus,
        crate::size::bytes(m.host.memory_bytes),
        m.started_at
    )];
    if m.rows.iter().any(|r| r.emulated) {
        out.push(
            "Emulated rows (TCG) have an emulator's times: compare them with each other within this matrix, never \
             with the host's row."
                .into(),
        );
    }
    out
}

/// The matrix as a plain table, for the terminal (`dentrylab vm` prints it).
pub(crate) fn text(m: &VmMatrix) -> Doc {
    let mut d = Doc::new();
    d.grid(Matrix::of(m).grid(m, false));
    for n in notes(m) {
        d.push_str(&format!("note: {n}\n"));
    }
    if let Some(g) = super::matrix_victims::grid(m, false) {
        d.push_str("\nWhat the rest of the guest waits for (--victims)\n");
        d.grid(g);
        for n in super::matrix_victims::notes() {
            d.push_str(&format!("note: {n}\n"));
        }
    }
    if let Some(g) = super::matrix_ab::grid(m) {
        d.push_str("\nPatched ÷ unpatched (--kernel-source --patch)\n");
        d.grid(g);
        d.push_str(&format!("note: {}\n", super::matrix_ab::NOTE));
    }
    if let Some(g) = super::selftests::grid(m) {
        d.push_str("\nThe kernel's own selftests in each guest (--selftests)\n");
        d.grid(g);
        for l in super::selftests::failures(m) {
            d.push_str(&format!("note: {l}\n"));
        }
    }
    d
}

/// The matrix as a Markdown section (the chart, when given, first).
pub(crate) fn markdown(m: &VmMatrix, chart: Option<&FigureSpec>) -> Doc {
    let mut d = Doc::new();
    d.push_str("## Kernel matrix: the longest stretch per kernel and preemption model\n\n");
    if let Some(f) = chart {
        d.push_str(&format!("![{}]({})\n\n", f.caption, f.file));
    }
    d.grid(Matrix::of(m).grid(m, true));
    d.push('\n');
    for n in notes(m) {
        d.push_str(&format!("{n}\n\n"));
    }
    if let Some(g) = super::matrix_victims::grid(m, true) {
        d.push_str("### What the rest of the guest waits for (`--victims`)\n\n");
        d.grid(g);
        d.push('\n');
        for n in super::matrix_victims::notes() {
            d.push_str(&format!("{n}\n\n"));
        }
    }
    if let Some(g) = super::matrix_ab::grid(m) {
        d.push_str("### Patched ÷ unpatched (`--kernel-source --patch`)\n\n");
        d.grid(g);
        d.push_str(&format!("\n{}\n\n", super::matrix_ab::NOTE));
    }
    if let Some(g) = super::selftests::grid(m) {
        d.push_str("### The kernel's own selftests in each guest (`--selftests`)\n\n");
        d.grid(g);
        d.push('\n');
        for l in super::selftests::failures(m) {
            d.push_str(&format!("- `{l}`\n"));
        }
        d.push('\n');
    }
    d
}

/// A loaded matrix file with the header `report` lists it by.
#[derive(Debug, Clone, Deserialize)]
#[serde(from = "VmMatrix")]
pub(crate) struct MatrixFile {
    pub matrix: VmMatrix,
    pub header: Header,
}

impl MatrixFile {
    pub(crate) fn new(matrix: VmMatrix) -> MatrixFile {
        let version = matrix.schema.strip_prefix(VM_MATRIX_SCHEMA_PREFIX).and_then(|v| v.parse().ok()).unwrap_or(0);
        let header = Header {
            schema: version,
            benchmark: "vm".into(),
            command: format!("dentrylab vm -- {}", matrix.command.join(" ")),
            started_at: matrix.started_at.clone(),
        };
        MatrixFile { matrix, header }
    }
}

impl From<VmMatrix> for MatrixFile {
    fn from(m: VmMatrix) -> MatrixFile {
        MatrixFile::new(m)
    }
}

/// The chart's file of the `i`th matrix of a report.
fn chart_file(i: usize) -> String {
    if i == 0 { "vm-matrix-longest-gap.svg".to_string() } else { format!("vm-matrix-{}-longest-gap.svg", i + 1) }
}

/// `vm`'s part of a report: a chart and a table per matrix, each matrix
/// listed as "matrix of" its start.
impl Render for MatrixFile {
    const BENCHMARK: &'static str = "vm";

    fn header(&self) -> &Header {
        &self.header
    }

    fn text(&self) -> Doc {
        text(&self.matrix)
    }

    fn facets(&self) -> Vec<String> {
        vec![self.header.started_at.clone()]
    }

    fn labels(results: &[&Self]) -> (Vec<String>, String) {
        (results.iter().map(|m| format!("matrix of {}", m.header.started_at)).collect(), String::new())
    }

    fn figures(results: &[&Self], _labels: &[String], _subtitle: &str) -> Vec<FigureSpec> {
        results.iter().enumerate().map(|(i, m)| longest_gap(&m.matrix, &chart_file(i))).collect()
    }

    fn part(results: &[&Self], _labels: &[String], _subtitle: &str, figures: &[FigureSpec]) -> Doc {
        let mut d = Doc::new();
        for (i, m) in results.iter().enumerate() {
            d.append(markdown(&m.matrix, figures.get(i)));
        }
        d
    }
}

// The kernel matrix's chart: the longest-gap curve of every row (longest
// gap against dentry count, log axes), one labelled series per row with
// a result, with the row's gap fit over its measured range and the
// soft-lockup threshold.

/// The chart's spec, in `file` (`report`'s SVG engine draws it).
pub(crate) fn longest_gap(m: &VmMatrix, file: &str) -> FigureSpec {
    let mut plot = XyPlot {
        subtitle: format!("dentrylab {}", m.command.join(" ")),
        ..XyPlot::new(
            "Longest stretch without a reschedule, per kernel and preemption model",
            Axis::new("dentries (log scale)", Scale::Log, Unit::Count),
            Axis::new("longest gap seen by the probe (log scale)", Scale::Log, Unit::Seconds),
        )
    };
    let mut thresholds: Vec<f64> = Vec::new();
    let lines_of = m.rows.iter().filter_map(|row| row.result.as_ref().map(|r| (row, r)));
    let each = lines_of.flat_map(|(row, r)| r.options.methods.iter().map(move |&method| (row, r, method)));
    for (i, (row, r, method)) in each.enumerate() {
        let label =
            if r.options.methods.len() > 1 { format!("{}, {}", row.label(), method.name()) } else { row.label() };
        let runs: Vec<_> = r.runs.iter().filter(|x| x.method == method && x.contenders == 0).collect();
        let points: Vec<(f64, f64)> = runs.iter().map(|x| (x.fit_count(), x.probe.max_gap_seconds)).collect();
        let lo = points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let hi = points.iter().map(|p| p.0).fold(0.0, f64::max);
        let analysis = r.per_method.iter().find(|a| a.method == method);
        let lines = match analysis.and_then(|a| a.fits.gap_governing()) {
            Some(p) if hi > 0.0 => fit_lines(&p, lo, hi, hi, format!("{label}: fit ∝ N^{:.2}", p.exponent), &|_, g| g),
            _ => Vec::new(),
        };
        if let Some(v) = analysis.and_then(|a| a.verdict.as_ref()) {
            thresholds.push(v.soft_lockup_threshold_seconds);
        }
        plot.series.push(Series { label, points, marker: Marker::Filled, lines, colour: i });
    }
    thresholds.sort_by(f64::total_cmp);
    thresholds.dedup();
    for thr in thresholds {
        plot.guides.push(Guide {
            label: format!("soft-lockup threshold {} (2 × watchdog_thresh)", format_value(Unit::Seconds, thr)),
            shape: Shape::Horizontal(thr),
            kind: GuideKind::Threshold,
        });
    }
    FigureSpec {
        file: file.into(),
        caption: "Longest stretch the reclaiming CPU ran no other task against dentry count, one series per kernel \
                  and preemption model, with each row's gap fit and the soft-lockup threshold"
            .into(),
        plot: Plot::Xy(plot),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A two-row matrix: a measured 6.18 result as the host row, and a
    /// failed guest (synthetic: only the rendering is under test).
    fn matrix() -> VmMatrix {
        let result: ReclaimResult =
            serde_json::from_str(include_str!("../../../docs/results/inotify-ext4-negative-6.18.json")).unwrap();
        let row = |release: &str, accel: &str, result: Option<Box<ReclaimResult>>, error: Option<&str>| MatrixRow {
            kernel_spec: release.into(),
            kernel_release: release.into(),
            preempt: "none".into(),
            preempt_requested: Some("full".into()),
            accel: accel.into(),
            clock: "host".into(),
            emulated: accel == "tcg",
            memory_bytes: 1 << 30,
            cpus: 2,
            wall_seconds: 1.0,
            proc_stack: None,
            result,
            kernel_log: Vec::new(),
            error: error.map(String::from),
            console_tail: Vec::new(),
            build: None,
            selftests: vec![],
        };
        VmMatrix {
            schema: VM_MATRIX_SCHEMA.into(),
            started_at: "2026-11-25T08:00:00Z".into(),
            host: super::super::HostInfo { kernel: "6.18.44".into(), cpus: 2, memory_bytes: 1 << 34 },
            command: vec!["reclaim".into(), "--method".into(), "inotify".into()],
            accel_reason: String::new(),
            rows: vec![row("6.18.44", "host", Some(Box::new(result)), None), row("6.1.0-9", "tcg", None, None)],
        }
    }

    /// The plain text of a matrix: each grid its header, a rule and its
    /// rows, cells apart by a space (the layout is `report`'s).
    fn table(m: &VmMatrix) -> String {
        text(m).render(&|g: &Grid| {
            let mut s = g.header.join(" ") + "\n---\n";
            for r in &g.rows {
                s += &(r.join(" ") + "\n");
            }
            s
        })
    }

    #[test]
    fn the_table_has_a_line_per_row_and_says_what_failed() {
        let m = matrix();
        let t = table(&m);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("Kernel") && lines[1].starts_with("---"), "{t}");
        assert!(lines[2].starts_with("6.18.44 ") && lines[2].contains("400M (309M–531M)"), "{t}");
        assert!(lines[2].contains("none (asked full)") && lines[2].contains("not checked"), "{t}");
        assert!(lines[3].starts_with("6.1.0-9 ") && lines[3].trim_end().ends_with("no result came back"), "{t}");
        assert!(lines[3].contains("tcg (emulated)"), "{t}");
        assert!(t.contains("note: Emulated rows (TCG)"), "{t}");
        // The matrix survives a round trip through its JSON (the contract).
        let back: VmMatrix = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(Matrix::of(&back).rows, Matrix::of(&m).rows);
        let v: serde_json::Value = serde_json::to_value(&m).unwrap();
        assert!(v["rows"][1]["result"].is_null() && v["rows"][1]["error"].is_null(), "{}", v["rows"][1]);
    }

    #[test]
    fn a_result_with_several_methods_has_a_line_per_method() {
        let mut m = matrix();
        let r = m.rows[0].result.as_mut().unwrap();
        assert_eq!(r.options.methods, vec!["inotify".parse::<Method>().unwrap()]);
        r.options.methods.push("umount".parse().unwrap());
        let t = table(&m);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[2].starts_with("6.18.44 ") && lines[2].contains("inotify, "), "{t}");
        // The second method ran nothing in this file: its line says so, not the first's numbers.
        assert!(lines[3].starts_with("6.18.44 ") && lines[3].contains("umount ") && !lines[3].contains("400M"), "{t}");
        assert!(lines[4].starts_with("6.1.0-9 "), "{t}");
        assert_eq!(Matrix::of(&m).rows.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 0, 1]);
    }

    #[test]
    fn selftests_are_a_grid_per_test_and_row_with_the_failures_under_it() {
        use super::super::selftests::{Outcome, Verdict};
        let mut m = matrix();
        let o = |test: &str, verdict, fail, lines: &[&str]| Outcome {
            test: test.into(),
            verdict,
            exit: Some(if fail > 0 { 1 } else { 0 }),
            pass: 3,
            fail,
            skip: 1,
            seconds: 1.0,
            lines: lines.iter().map(|l| l.to_string()).collect(),
        };
        m.rows[0].selftests = vec![o("mount_setattr:mount_setattr_test", Verdict::Pass, 0, &[])];
        m.rows[1].selftests = vec![
            o("mount_setattr:mount_setattr_test", Verdict::Fail, 2, &["not ok 4 mount_setattr.x"]),
            o("mount:run_nosymfollow.sh", Verdict::Pass, 0, &[]),
        ];
        let t = table(&m);
        let at = t.find("The kernel's own selftests").expect("the grid");
        let lines: Vec<&str> = t[at..].lines().collect();
        assert_eq!(lines[1], "Selftest 6.18.44 6.1.0-9", "{t}");
        assert_eq!(
            lines[3],
            "mount_setattr:mount_setattr_test pass (ok 3, not ok 0, skip 1) FAIL (ok 3, not ok 2, skip 1)"
        );
        assert_eq!(lines[4], "mount:run_nosymfollow.sh not run pass (ok 3, not ok 0, skip 1)");
        assert_eq!(lines[5], "note: 6.1.0-9: mount_setattr:mount_setattr_test: not ok 4 mount_setattr.x");
        let back: VmMatrix = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back.rows[1].selftests, m.rows[1].selftests);
    }
}
