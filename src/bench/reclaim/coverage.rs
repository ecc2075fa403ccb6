//! Tests only: the 90% interval checked on runs nothing was tuned on.
//!
//! The recorded runs are split in two (docs/method.md, "Coverage on
//! held-out runs"). The tuning set is every run the constants of
//! `analysis::run_scatter` and `analysis::interval` were measured or chosen
//! on: on build fc-v669 `quick-1`–`quick-3` and `sweep-250k-8M-x3` of
//! `edges-quick-8M-6.18/`, on fc-v782 `edges-6.18/`, `edges-run-scatter-6.18/`
//! and `edges-quick-4M-6.18/`, on fc-v769 `edges-6.18-v769/`, and the
//! deep sweep of fc-v857. The test set is what no constant saw: fc-v669's
//! `quick-4`–`quick-6`, taken four hours after the first three, and
//! fc-v857's eleven quick runs (`edges-quick-8M-6.18-v857/`: `quick-1`–`quick-3`
//! recorded before the interval changed, `quick-4`–`quick-7` after every
//! constant was fixed, `quick-8`–`quick-11` with the measured exponent
//! pinning untestable runs), and the four of fc-v1045 and of fc-v1252
//! (`edges-quick-8M-6.18-v1045/`, `…-v1252/`, builds that came after every
//! constant was fixed). Each held-out run's interval is recomputed
//! with the code as it is, and judged against the points of the other
//! held-out runs of its build: the node's next reclaims.

use super::analyse::fit_runs;
use super::repetition::Run;
use super::result::ReclaimResult;
use crate::analysis::fit::PowerFit;

/// The held-out runs, by build (folder under docs/results, files).
const HELD_OUT: &[(&str, &[&str])] = &[
    ("edges-quick-8M-6.18", &["quick-4.json", "quick-5.json", "quick-6.json"]),
    (
        "edges-quick-8M-6.18-v857",
        &[
            "quick-1.json",
            "quick-2.json",
            "quick-3.json",
            "quick-4.json",
            "quick-5.json",
            "quick-6.json",
            "quick-7.json",
            "quick-8.json",
            "quick-9.json",
            "quick-10.json",
            "quick-11.json",
        ],
    ),
    ("edges-quick-8M-6.18-v1045", &["quick-1.json", "quick-2.json", "quick-3.json", "quick-4.json"]),
    ("edges-quick-8M-6.18-v1252", &["quick-1.json", "quick-2.json", "quick-3.json", "quick-4.json"]),
];

/// The coverage asked of the intervals, and their widest.
const COVERAGE: f64 = 0.85;
const MAX_WIDTH: f64 = 2.0;

/// One run refitted: its edge (where the governing stretch fit reaches 2 ×
/// watchdog_thresh), that edge's 90% interval, and whether the run could
/// test linearity (one that cannot falls back to the power law and says
/// so: its interval widens, never narrows, and may pass 2×).
fn edge(dir: &str, file: &str) -> (f64, f64, f64, bool) {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results").join(dir).join(file);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let r: ReclaimResult = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let runs: Vec<Run> = r.runs.iter().filter(|x| x.contenders == 0).cloned().collect();
    let fits = fit_runs(&runs, &r.unobserved, &r.environment.kernel);
    // Pinned by the exponent measured past the sizes, a run is held to 2×
    // like one that tested linearity itself.
    let testable = fits.gap_model().is_some_and(|m| m.test.testable || m.test.pinned);
    let fit: PowerFit = fits.gap_governing().unwrap();
    let thr = 2.0 * r.environment.watchdog_thresh_seconds.unwrap_or(10) as f64;
    let i = fit.band.and_then(|b| b.count_reaching(&fit, thr)).unwrap_or_else(|| panic!("{file}: no interval"));
    let high = i.high.unwrap_or_else(|| panic!("{dir}/{file}: unbounded interval {i:?}"));
    (fit.solve(thr).unwrap(), i.low, high, testable)
}

#[test]
fn held_out_runs_hold_each_others_points() {
    let (mut held, mut pairs, mut wide, mut report) = (0, 0, 0, Vec::new());
    for (dir, files) in HELD_OUT {
        let edges: Vec<(f64, f64, f64, bool)> = files.iter().map(|f| edge(dir, f)).collect();
        for (i, (point, low, high, testable)) in edges.iter().enumerate() {
            // Within 2×, or a run that cannot test linearity and says so
            // (its verdict: "This run cannot test linearity", and the
            // interval's width past 2×).
            assert!(
                high / low <= MAX_WIDTH || !testable,
                "{dir}/{}: interval {low:.3e}–{high:.3e} wider than 2× in a run that tested linearity",
                files[i]
            );
            wide += usize::from(high / low > MAX_WIDTH);
            let others = edges.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, e)| e.0);
            let inside = others.clone().filter(|n| (*low..=*high).contains(n)).count();
            held += inside;
            pairs += others.count();
            report.push(format!(
                "{dir}/{}: {point:.3e} ({low:.3e}–{high:.3e}, {:.2}×{}) holds {inside}",
                files[i],
                high / low,
                if *testable { "" } else { ", cannot test linearity" }
            ));
        }
    }
    let share = held as f64 / pairs as f64;
    println!("{held} of {pairs} points held ({:.0}%), {wide} interval(s) past 2×:\n{}", share * 100.0, report.join("\n"));
    assert!(share >= COVERAGE, "{held} of {pairs} points held ({:.0}%):\n{}", share * 100.0, report.join("\n"));
    assert!(pairs >= 12, "both builds' held-out runs: {pairs} pairs");
}
