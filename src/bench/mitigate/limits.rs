//! `--setting memory-limit=16M,32M,…`: for each limit, whether the run's
//! cgroup reclaimed its dentries (the run reached its limit and ran to its
//! duration) or its OOM killer fired, and one verdict line: from which
//! limit a memory limit bounds the workload's dentries, and below which it
//! kills it, with the kernel-memory share the kernel reported at the kill.

use serde::{Deserialize, Serialize};

use super::knobs::{Knob, Value};
use super::{Options, Row};
use crate::stats::median;

/// One limit of the sweep, over its reps.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct LimitOutcome {
    pub limit_bytes: u64,
    pub reps: usize,
    pub oom_killed: usize,
    /// Reps that ran to their duration and hit the limit (memory.failcnt > 0).
    pub limit_reached: usize,
    /// Kernel memory / usage in the kernel's OOM reports (min, max).
    pub kernel_share_at_kill: Option<(f64, f64)>,
    /// The first report's failing allocation: flags and call site.
    pub failing_allocation: Option<String>,
    /// Median dentries the run's filesystem held at the end (runs that ran).
    pub dentries_held: Option<f64>,
    /// Largest kernel memory the cgroup held in a run that ran.
    pub kernel_peak_bytes: Option<u64>,
}

/// What a memory limit does to a workload.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct LimitSweep {
    pub outcomes: Vec<LimitOutcome>,
    /// Largest limit at which some rep was OOM-killed.
    pub kills_up_to: Option<u64>,
    /// Smallest limit from which every rep at it and above ran, reaching its limit.
    pub bounds_from: Option<u64>,
    pub verdict: String,
}

/// The memory limit a row sets (`--setting memory-limit=…`), if any.
pub(crate) fn limit_of(row: &Row) -> Option<u64> {
    row.settings.iter().find_map(|(k, v)| if *k == Knob::MemoryLimit { v.bytes() } else { None })
}

fn mib(b: u64) -> String {
    Value::Bytes(b).to_string()
}

/// The sweep over the rows that differ from the baseline in their limit
/// only (the other knobs at their first values); `None` without one.
pub(crate) fn sweep(rows: &[Row], opts: &Options) -> Option<LimitSweep> {
    let base = rows.first()?;
    let others_at_base = |r: &Row| {
        r.server_options.is_empty()
            && r.settings.iter().zip(&base.settings).all(|(a, b)| a.0 == Knob::MemoryLimit || a.1 == b.1)
    };
    let mut outcomes: Vec<LimitOutcome> = rows
        .iter()
        .filter(|r| others_at_base(r))
        .filter_map(|r| {
            let limit = limit_of(r)?;
            let shares: Vec<f64> = r.oom.iter().filter_map(|k| k.split.map(|s| s.kernel_share)).collect();
            let held: Vec<f64> = r.runs.iter().map(|x| x.fs_dentries_at_end as f64).collect();
            Some(LimitOutcome {
                limit_bytes: limit,
                reps: r.runs.len() + r.oom.len(),
                oom_killed: r.oom.len(),
                limit_reached: r.runs.iter().filter(|x| x.limit_reached).count(),
                kernel_share_at_kill: (!shares.is_empty())
                    .then(|| (shares.iter().copied().fold(1.0, f64::min), shares.iter().copied().fold(0.0, f64::max))),
                failing_allocation: r.oom.iter().find_map(|k| k.report.as_ref()).map(|rep| {
                    let flags = if rep.gfp_flags.is_empty() { rep.gfp_mask.clone() } else { rep.gfp_flags.join("|") };
                    match rep.call_site.last() {
                        Some(site) => format!("{flags} in {site}"),
                        None => flags,
                    }
                }),
                dentries_held: (!held.is_empty()).then(|| median(&held)),
                kernel_peak_bytes: r.runs.iter().flat_map(|x| x.samples.iter().map(|s| s.cgroup_kernel_bytes)).max(),
            })
        })
        .collect();
    if outcomes.is_empty() {
        return None;
    }
    outcomes.sort_by_key(|o| o.limit_bytes);
    let kills_up_to = outcomes.iter().filter(|o| o.oom_killed > 0).map(|o| o.limit_bytes).max();
    let bounded = |o: &LimitOutcome| o.oom_killed == 0 && o.reps > 0 && o.limit_reached == o.reps;
    // The smallest limit above every kill whose runs (and those of every
    // larger limit that was reached) ran to their duration at their limit.
    let bounds_from = outcomes
        .iter()
        .filter(|o| kills_up_to.is_none_or(|k| o.limit_bytes > k))
        .find(|o| bounded(o))
        .map(|o| o.limit_bytes);
    let what = format!("memory-limit on {} ({})", opts.workload.name(), opts.fs);
    let killed: Vec<String> = outcomes
        .iter()
        .filter(|o| o.oom_killed > 0)
        .map(|o| {
            let share = o.kernel_share_at_kill.map_or(String::new(), |(a, b)| {
                if (b - a).abs() < 0.005 {
                    format!(", {:.0}% kernel memory at the kill", a * 100.0)
                } else {
                    format!(", {:.0}–{:.0}% kernel memory at the kill", a * 100.0, b * 100.0)
                }
            });
            let alloc = o.failing_allocation.as_ref().map_or(String::new(), |a| format!(", failing allocation {a}"));
            format!("{} ({}/{} reps OOM-killed{share}{alloc})", mib(o.limit_bytes), o.oom_killed, o.reps)
        })
        .collect();
    let held: Vec<String> = outcomes
        .iter()
        .filter(|o| o.oom_killed == 0)
        .map(|o| {
            let state = if bounded(o) { "limit reached" } else { "limit not reached in every rep" };
            format!(
                "{}: {state}, {} dentries held at the end, kernel memory peak {}",
                mib(o.limit_bytes),
                crate::size::grouped(o.dentries_held.unwrap_or(0.0).max(0.0) as u64),
                crate::size::bytes(o.kernel_peak_bytes.unwrap_or(0))
            )
        })
        .collect();
    let headline = match (kills_up_to, bounds_from) {
        (None, Some(b)) => format!("a memory limit bounds this workload's dentries at every limit tried (from {})", mib(b)),
        (Some(k), Some(b)) => {
            format!("a memory limit kills this workload at {} and below; it bounds its dentries from {}", mib(k), mib(b))
        }
        (Some(k), None) => format!("a memory limit kills this workload at every limit tried up to {} that it reached", mib(k)),
        (None, None) => "no limit tried was reached in every rep: no evidence either way; give smaller limits or a longer --duration".into(),
    };
    let mut verdict = format!("{what}: {headline}");
    if !killed.is_empty() {
        verdict.push_str(&format!("; killed at {}", killed.join(", ")));
    }
    if !held.is_empty() {
        verdict.push_str(&format!("; ran at {}", held.join("; ")));
    }
    // An OOM kill above a limit that held: the edge is not sharp here.
    if let (Some(k), Some(first_ok)) = (kills_up_to, outcomes.iter().find(|o| bounded(o)).map(|o| o.limit_bytes))
        && first_ok < k
    {
        verdict.push_str(&format!(
            "; not a sharp edge: {} held in every rep, yet {} was OOM-killed in some",
            mib(first_ok),
            mib(k)
        ));
    }
    verdict.push_str(&format!("; {}", Knob::MemoryLimit.acts_on()));
    Some(LimitSweep { outcomes, kills_up_to, bounds_from, verdict })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts() -> Options {
        serde_json::from_value(json!({
            "workload": {"steady": "lookups"}, "settings": [], "memory_limit": null, "duration_seconds": 10.0,
            "reps": 2, "clients": 1, "mariadb_options": [], "fs": "ext4", "cpu": 0, "allow_global": false, "edge": null
        }))
        .unwrap()
    }

    fn run(reached: bool) -> serde_json::Value {
        json!({"rep": 1, "memory_limit_bytes": 0, "setup_usage_bytes": 0, "limit_reached": reached,
               "server_install_seconds": null, "server_start_seconds": null, "query_errors": 0,
               "fs_dentries_at_end": 1000, "fs_negative_at_end": 1000, "samples": [], "drops": [], "notes": []})
    }

    fn kill(share: f64) -> serde_json::Value {
        json!({"rep": 1, "kills": 1, "finding": "x", "report": null,
               "split": {"usage": 100, "limit": 100, "kernel": 90, "anon": 1, "file": 0, "filled": "kernel", "kernel_share": share},
               "cgroup_usage_bytes": null, "cgroup_kernel_bytes": null, "cgroup_stat": {}, "nr_dentry": 0, "nr_negative": 0,
               "fs_dentries": 0, "fs_negative": 0})
    }

    fn row(mib: u64, runs: Vec<serde_json::Value>, oom: Vec<serde_json::Value>) -> Row {
        serde_json::from_value(json!({"label": format!("memory-limit={mib}M"),
            "settings": [["memory-limit", {"bytes": mib << 20}]], "server_options": [], "runs": runs, "summary": null,
            "oom_killed": [], "oom": oom}))
        .unwrap()
    }

    /// Killed at the small limits, reached and survived above: the verdict
    /// names both edges and the kernel share at the kill.
    #[test]
    fn kills_below_and_bounds_from() {
        let rows = vec![
            row(16, vec![], vec![kill(0.96), kill(0.97)]),
            row(32, vec![run(true)], vec![kill(0.98)]),
            row(64, vec![run(true), run(true)], vec![]),
            row(128, vec![run(false), run(true)], vec![]),
        ];
        let s = sweep(&rows, &opts()).unwrap();
        assert_eq!(s.kills_up_to, Some(32 << 20));
        assert_eq!(s.bounds_from, Some(64 << 20));
        assert!(
            s.verdict.contains("kills this workload at 32M and below; it bounds its dentries from 64M"),
            "{}",
            s.verdict
        );
        assert!(s.verdict.contains("16M (2/2 reps OOM-killed, 96–97% kernel memory at the kill)"), "{}", s.verdict);
        assert!(s.verdict.contains("128M: limit not reached in every rep"), "{}", s.verdict);
        assert!(s.verdict.contains("super_cache_scan needs __GFP_FS"));
    }

    /// Every limit killed: no bound; no memory-limit setting: no sweep.
    #[test]
    fn kills_everywhere_or_no_sweep() {
        let s = sweep(&[row(16, vec![], vec![kill(0.9)]), row(32, vec![], vec![kill(0.9)])], &opts()).unwrap();
        assert_eq!((s.kills_up_to, s.bounds_from), (Some(32 << 20), None));
        assert!(s.verdict.contains("kills this workload at every limit tried up to 32M"), "{}", s.verdict);
        let mut plain = row(16, vec![run(true)], vec![]);
        plain.settings.clear();
        assert!(sweep(&[plain], &opts()).is_none());
    }
}
