//! A run the cgroup's OOM killer ended: what the kernel's own report says
//! filled the cgroup ([`crate::procfs::oom`]), the cgroup's counters and
//! the dentry counts when the run noticed, kept as a finding of the run
//! (the other combinations go on).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::probe::oom::LogMark;
use crate::procfs::ProcRoot;
use crate::procfs::oom::{OomReport, Split};
use crate::sandbox::cgroup::MemCgroup;

/// One OOM-killed run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct OomKill {
    pub rep: u32,
    /// Processes the cgroup's OOM killer killed (memory.oom_control / memory.events).
    pub kills: u64,
    /// What filled the cgroup and the allocation that failed, in one line
    /// (from the kernel's report; without it, from the counters below).
    pub finding: String,
    /// The kernel's first report for this cgroup in the run.
    pub report: Option<OomReport>,
    /// Its usage at the kill, split into kernel memory, anon and file.
    pub split: Option<Split>,
    /// Why there is no report, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_missing: Option<String>,
    /// The cgroup's counters when the run noticed the kill (within a
    /// second of it, the killed processes gone): usage, kernel memory
    /// (memory.kmem.usage_in_bytes on v1), memory.stat.
    pub cgroup_usage_bytes: Option<u64>,
    pub cgroup_kernel_bytes: Option<u64>,
    pub cgroup_stat: BTreeMap<String, u64>,
    /// dentry-state (machine-wide) when the run noticed.
    pub nr_dentry: u64,
    pub nr_negative: u64,
    /// Dentries (negative ones) the run's filesystem held after the kill:
    /// what its umount freed.
    pub fs_dentries: i64,
    pub fs_negative: i64,
}

/// The error a run returns when the OOM killer ended it.
#[derive(Debug)]
pub(crate) struct OomKilled(pub Box<OomKill>);

impl std::fmt::Display for OomKilled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.finding)
    }
}

impl std::error::Error for OomKilled {}

fn stat(cg: &MemCgroup) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(cg.dir.join("memory.stat")).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(k, v)| Some((k.to_string(), v.trim().parse().ok()?)))
        .collect()
}

/// Reads the counters and the kernel's report (call before the cgroup's
/// processes are killed and it is removed).
pub(crate) fn diagnose(rep: u32, kills: u64, cg: &MemCgroup, mark: &mut LogMark, proc: &ProcRoot) -> OomKill {
    let name = cg.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (report, report_missing) = match mark.reports_of(&name) {
        Ok(mut r) if !r.is_empty() => (Some(r.remove(0)), None),
        Ok(_) => (None, Some(format!("no OOM report for {name} in the kernel log since the run started"))),
        Err(e) => (None, Some(e)),
    };
    let d = proc.dentry_state().ok();
    let mut k = OomKill {
        rep,
        kills,
        finding: String::new(),
        split: report.as_ref().and_then(|r| r.split()),
        report,
        report_missing,
        cgroup_usage_bytes: cg.usage_bytes(),
        cgroup_kernel_bytes: cg.kernel_bytes(),
        cgroup_stat: stat(cg),
        nr_dentry: d.map_or(0, |d| d.nr_dentry),
        nr_negative: d.map_or(0, |d| d.nr_negative),
        fs_dentries: 0,
        fs_negative: 0,
    };
    k.finding = match &k.report {
        Some(r) => r.finding(),
        None => format!(
            "OOM-killed ({} process(es)); {}; after the kill the cgroup held {} of kernel memory of {} charged",
            kills,
            k.report_missing.as_deref().unwrap_or("no report"),
            crate::size::bytes(k.cgroup_kernel_bytes.unwrap_or(0)),
            crate::size::bytes(k.cgroup_usage_bytes.unwrap_or(0))
        ),
    };
    k
}
