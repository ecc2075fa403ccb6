//! `reclaim --watchdog-check`: prove the verdict against the kernel's own
//! soft-lockup watchdog.
//!
//! The threshold is lowered for the run (`kernel.watchdog_thresh`, soft
//! lockup after 2 × thresh seconds), so lockups are reachable at sizes the
//! machine holds. For each size, dentrylab predicts from the sizes *below
//! it* whether the reclaim's longest stretch will pass the threshold, then
//! compares that prediction (and the probe's measured gap) with what the
//! watchdog said in /dev/kmsg about the reclaiming task.

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::analysis::fit;
use crate::bench::reclaim::{ReclaimResult, Run};
use crate::procfs::kmsg::Kind as AlertKind;
use crate::sys::guardian::Guardian;

pub const SYSCTL: &str = "/proc/sys/kernel/watchdog_thresh";
/// The kernel's default (and boot-time) watchdog_thresh.
pub const DEFAULT_THRESH_SECONDS: u64 = 10;
/// Default `--watchdog-thresh` for a check: a 2 s soft-lockup threshold.
pub const CHECK_THRESH_SECONDS: u64 = 1;

/// The lowered threshold, guarded so that it comes back however the run ends.
pub struct Lowered {
    guardian: Guardian,
    pub original: u64,
    pub lowered: u64,
}

/// Lowers watchdog_thresh to `to`. Call while single-threaded.
pub fn lower(to: u64) -> Result<Lowered> {
    let path = PathBuf::from(SYSCTL);
    let original_text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {SYSCTL}"))?;
    let original: u64 = original_text.trim().parse().with_context(|| format!("{SYSCTL}: not a number"))?;
    let guardian = Guardian::start(path.clone(), format!("{original}\n"))?;
    std::fs::write(&path, format!("{to}\n")).with_context(|| {
        format!("cannot set {SYSCTL} to {to} (lowering the watchdog threshold needs root in the initial namespace)")
    })?;
    Ok(Lowered { guardian, original, lowered: to })
}

impl Lowered {
    pub fn restore(self) -> Result<()> {
        self.guardian.finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Agreement {
    /// Predicted a lockup and the watchdog fired.
    TruePositive,
    /// Predicted none and the watchdog stayed silent.
    TrueNegative,
    /// Predicted a lockup; the watchdog stayed silent.
    FalsePositive,
    /// Predicted none; the watchdog fired.
    FalseNegative,
    /// No prediction (no smaller sizes to predict from).
    Unpredicted,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckRow {
    pub target: u64,
    pub rep: u32,
    /// Longest stretch predicted from the sizes below this one.
    pub predicted_gap_seconds: Option<f64>,
    pub predicted_lockup: Option<bool>,
    pub measured_gap_seconds: f64,
    pub measured_over_threshold: bool,
    pub watchdog_fired: bool,
    /// The largest "stuck for" figure the watchdog gave for the reclaiming task.
    pub watchdog_stuck_seconds: Option<u64>,
    pub agreement: Agreement,
    /// Whether the probe's gap and the watchdog agree with each other.
    pub probe_agrees_with_watchdog: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WatchdogReport {
    pub original_thresh_seconds: u64,
    pub thresh_seconds: u64,
    pub soft_lockup_threshold_seconds: f64,
    pub rows: Vec<CheckRow>,
    pub true_positive: usize,
    pub true_negative: usize,
    pub false_positive: usize,
    pub false_negative: usize,
    pub unpredicted: usize,
    /// The prediction held for every size it could be made for, and the
    /// watchdog fired at least once and stayed silent at least once.
    pub validated: bool,
    pub summary: Vec<String>,
}

/// Predicts the longest stretch at `n` from runs of smaller sizes.
fn predict_gap(runs: &[Run], n: u64) -> Option<f64> {
    let below: Vec<&Run> = runs.iter().filter(|r| r.target < n).collect();
    let distinct: std::collections::BTreeSet<u64> = below.iter().map(|r| r.target).collect();
    match distinct.len() {
        0 => None,
        1 => {
            // One size: scale its largest gap in proportion to the count.
            let r = below.iter().max_by(|a, b| a.probe.max_gap_seconds.total_cmp(&b.probe.max_gap_seconds))?;
            Some(r.probe.max_gap_seconds * n as f64 / r.target as f64)
        }
        _ => {
            let pts: Vec<_> = below.iter().map(|r| (r.reclaimed.max(1) as f64, r.probe.max_gap_seconds)).collect();
            fit::power(&pts).map(|p| p.at(n as f64))
        }
    }
}

pub fn compare(result: &ReclaimResult, original: u64, thresh: u64) -> WatchdogReport {
    let limit = 2.0 * thresh as f64;
    let rows: Vec<CheckRow> = result
        .runs
        .iter()
        .map(|r| {
            let predicted_gap = predict_gap(&result.runs, r.target);
            let predicted = predicted_gap.map(|g| g >= limit);
            let lockups: Vec<_> = r
                .kernel_messages
                .iter()
                .filter(|a| a.kind == AlertKind::SoftLockup && a.pid == Some(r.reclaim_task_pid))
                .collect();
            let fired = !lockups.is_empty();
            let measured_over = r.probe.max_gap_seconds >= limit;
            let agreement = match (predicted, fired) {
                (None, _) => Agreement::Unpredicted,
                (Some(true), true) => Agreement::TruePositive,
                (Some(false), false) => Agreement::TrueNegative,
                (Some(true), false) => Agreement::FalsePositive,
                (Some(false), true) => Agreement::FalseNegative,
            };
            CheckRow {
                target: r.target,
                rep: r.rep,
                predicted_gap_seconds: predicted_gap,
                predicted_lockup: predicted,
                measured_gap_seconds: r.probe.max_gap_seconds,
                measured_over_threshold: measured_over,
                watchdog_fired: fired,
                watchdog_stuck_seconds: lockups.iter().filter_map(|a| a.stuck_seconds).max(),
                agreement,
                probe_agrees_with_watchdog: measured_over == fired,
            }
        })
        .collect();
    let count = |a: Agreement| rows.iter().filter(|r| r.agreement == a).count();
    let (tp, tn, fp, fneg, un) = (
        count(Agreement::TruePositive),
        count(Agreement::TrueNegative),
        count(Agreement::FalsePositive),
        count(Agreement::FalseNegative),
        count(Agreement::Unpredicted),
    );
    let any_fired = rows.iter().any(|r| r.watchdog_fired);
    let any_silent = rows.iter().any(|r| !r.watchdog_fired);
    let validated = fp == 0 && fneg == 0 && tp + tn > 0 && any_fired && any_silent;
    let mut summary = vec![format!(
        "watchdog_thresh lowered from {original} to {thresh} s for the run: soft lockup after {limit:.0} s."
    )];
    summary.push(format!(
        "Prediction vs watchdog: {tp} fired as predicted, {tn} silent as predicted, {fp} predicted but silent, \
         {fneg} fired but not predicted, {un} with nothing smaller to predict from."
    ));
    for r in rows.iter().filter(|r| matches!(r.agreement, Agreement::FalsePositive | Agreement::FalseNegative)) {
        summary.push(format!(
            "DISAGREEMENT at {} rep {}: predicted a longest stretch of {:.2} s ({}), measured {:.2} s, and the watchdog {}.",
            crate::size::human(r.target),
            r.rep + 1,
            r.predicted_gap_seconds.unwrap_or(f64::NAN),
            if r.predicted_lockup == Some(true) { "a lockup" } else { "no lockup" },
            r.measured_gap_seconds,
            if r.watchdog_fired { "fired" } else { "stayed silent" }
        ));
    }
    let probe_off = rows.iter().filter(|r| !r.probe_agrees_with_watchdog).count();
    if probe_off > 0 {
        summary.push(format!(
            "In {probe_off} reclaim(s) the probe's measured gap and the watchdog disagree about crossing {limit:.0} s \
             (the watchdog samples every {:.1} s, so a gap just over the threshold can go unreported).",
            limit / 5.0
        ));
    }
    if !any_fired {
        summary.push("The watchdog never fired: add a larger size to test the prediction's positive side.".into());
    }
    summary.push(if validated {
        "Validated: the watchdog fired exactly where predicted.".into()
    } else {
        "Not validated: see the table.".into()
    });
    WatchdogReport {
        original_thresh_seconds: original,
        thresh_seconds: thresh,
        soft_lockup_threshold_seconds: limit,
        rows,
        true_positive: tp,
        true_negative: tn,
        false_positive: fp,
        false_negative: fneg,
        unpredicted: un,
        validated,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::kmsg::{Alert, Kind};

    fn fixture() -> ReclaimResult {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/reclaim-small.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    fn lockup(pid: u32, stuck: u64) -> Alert {
        Alert {
            kind: Kind::SoftLockup,
            usec: 1,
            message: format!("watchdog: BUG: soft lockup - CPU#0 stuck for {stuck}s! [dentrylab:{pid}]"),
            cpu: Some(0),
            stuck_seconds: Some(stuck),
            task: Some("dentrylab".into()),
            pid: Some(pid),
        }
    }

    #[test]
    fn fired_where_predicted_is_validated() {
        let mut r = fixture();
        // Make the gap grow steeply so the largest size is predicted to lock up.
        for run in &mut r.runs {
            run.probe.max_gap_seconds = 3.0 * (run.target as f64 / 80_000.0).powi(3);
            run.kernel_messages.clear();
        }
        for run in r.runs.iter_mut().filter(|x| x.target == 80_000) {
            let pid = run.reclaim_task_pid;
            run.kernel_messages.push(lockup(pid, 3));
        }
        let w = compare(&r, 10, 1);
        assert!(w.true_positive >= 1, "{:?}", w.summary);
        assert_eq!((w.false_positive, w.false_negative), (0, 0), "{:?}", w.summary);
        assert!(w.validated);
        let row = w.rows.iter().find(|x| x.target == 80_000).unwrap();
        assert_eq!(row.watchdog_stuck_seconds, Some(3));
    }

    #[test]
    fn disagreement_is_said_plainly() {
        let mut r = fixture();
        for run in &mut r.runs {
            run.kernel_messages.clear();
        }
        // The watchdog fires at the largest size though the small gaps predict nothing.
        let run = r.runs.iter_mut().rfind(|x| x.target == 80_000).unwrap();
        let pid = run.reclaim_task_pid;
        run.kernel_messages.push(lockup(pid, 2));
        // A lockup of another task is not the reclaim's.
        r.runs[0].kernel_messages.push(lockup(pid + 100_000, 5));
        let w = compare(&r, 10, 1);
        assert_eq!(w.false_negative, 1);
        assert!(!w.validated);
        assert!(w.summary.iter().any(|s| s.starts_with("DISAGREEMENT at 80k")), "{:?}", w.summary);
        assert!(!w.rows[0].watchdog_fired);
    }
}
