//! Where a reclaim ran. The probed repetitions (and by default the
//! unobserved ones) pin the reclaiming task to `--cpu`: the gap probe needs
//! a known CPU. `--unpinned-reps` adds unobserved repetitions whose
//! reclaiming task may run on any allowed CPU, as a reclaim does on a real
//! node; the table puts both times side by side (docs/pinning.md measures
//! and explains the difference on the project's VM).

use serde::{Deserialize, Serialize};

use super::{Run, Unobserved};
use crate::stats::Spread;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Placement {
    /// Pinned to `cpu` alone (sched_setaffinity), or free to run on any of
    /// `allowed`.
    pub pinned: bool,
    /// Pinned: that CPU. Unpinned: the CPU the reclaiming thread was on when
    /// the reclaim call returned; `None` when the reclaim ran in a child
    /// process that is gone by then (`ns-exit`).
    pub cpu: Option<usize>,
    /// Unpinned: the CPU the thread was on when the reclaim call started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_cpu: Option<usize>,
    /// Migrations of the reclaiming thread during the call
    /// (`se.nr_migrations` of /proc/thread-self/sched), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrations: Option<u64>,
    /// The CPUs the task was allowed to run on.
    #[serde(default)]
    pub allowed: Vec<usize>,
}

impl Placement {
    /// Results saved before the placement was recorded: every reclaim was
    /// pinned (to `options.cpu`).
    pub(crate) fn before_recorded() -> Placement {
        Placement { pinned: true, cpu: None, start_cpu: None, migrations: None, allowed: Vec::new() }
    }

    /// "CPU 0, pinned" or "unpinned (CPUs 0,1), ended on CPU 1, 2 migrations".
    pub(crate) fn describe(&self) -> String {
        let cpu = self.cpu.map(|c| format!("CPU {c}")).unwrap_or_else(|| "CPU unknown".into());
        if self.pinned {
            return format!("{cpu}, pinned");
        }
        let mut s = format!("unpinned ({})", cpus(&self.allowed));
        if let Some(c) = self.cpu {
            s += &format!(", ended on CPU {c}");
        }
        if let Some(m) = self.migrations {
            s += &format!(", {m} migration(s)");
        }
        s
    }
}

fn cpus(list: &[usize]) -> String {
    let l: Vec<String> = list.iter().map(|c| c.to_string()).collect();
    format!("CPU{} {}", if l.len() == 1 { "" } else { "s" }, l.join(","))
}

/// The calling thread's CPU now and its migrations so far.
pub(super) fn here() -> (Option<usize>, Option<u64>) {
    let cpu = nix::sched::sched_getcpu().ok();
    let migrations = std::fs::read_to_string("/proc/thread-self/sched").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("se.nr_migrations"))
            .and_then(|l| l.split(':').nth(1))
            .and_then(|v| v.trim().parse().ok())
    });
    (cpu, migrations)
}

/// The unpinned unobserved repetitions of one size, beside the pinned.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct UnpinnedSummary {
    pub reps: u32,
    pub reclaim_seconds: Spread,
    pub ns_per_dentry: Spread,
    /// Pinned unobserved ÷ unpinned unobserved reclaim time, pairing the
    /// repetitions of the same number (they ran back to back).
    pub pinned_over_unpinned: Option<Spread>,
    /// Probed (pinned) ÷ unpinned unobserved.
    pub probed_over_unpinned: Option<Spread>,
    /// The CPUs the unpinned reclaims ended on (those known), in order.
    pub end_cpus: Vec<usize>,
    /// Their migrations during the reclaim (those known).
    pub migrations: Vec<u64>,
}

/// `a` ÷ `b` for the pairs of the same repetition number.
fn ratios(a: &[(u32, f64)], b: &[(u32, f64)]) -> Vec<f64> {
    a.iter().filter_map(|&(rep, x)| b.iter().find(|&&(r, y)| r == rep && y > 0.0).map(|&(_, y)| x / y)).collect()
}

/// Summary of the unpinned repetitions `free` against the pinned
/// unobserved `pinned` and the probed `probed`, all of one size and method.
pub(super) fn summarise(free: &[&Unobserved], pinned: &[&Unobserved], probed: &[&Run]) -> Option<UnpinnedSummary> {
    if free.is_empty() {
        return None;
    }
    let t = |u: &&Unobserved| (u.rep, u.reclaim_seconds);
    let (f, p): (Vec<_>, Vec<_>) = (free.iter().map(t).collect(), pinned.iter().map(t).collect());
    let probed: Vec<(u32, f64)> = probed.iter().map(|r| (r.rep, r.reclaim_seconds)).collect();
    let spread = |v: Vec<f64>| (!v.is_empty()).then(|| Spread::of(&v));
    Some(UnpinnedSummary {
        reps: free.len() as u32,
        reclaim_seconds: Spread::of(&free.iter().map(|u| u.reclaim_seconds).collect::<Vec<_>>()),
        ns_per_dentry: Spread::of(&free.iter().map(|u| u.ns_per_dentry).collect::<Vec<_>>()),
        pinned_over_unpinned: spread(ratios(&p, &f)),
        probed_over_unpinned: spread(ratios(&probed, &f)),
        end_cpus: free.iter().filter_map(|u| u.placement.cpu).collect(),
        migrations: free.iter().filter_map(|u| u.placement.migrations).collect(),
    })
}

/// Pinned ÷ unpinned unobserved reclaim time over the whole sweep.
pub(super) fn cost(pinned: &[Unobserved], free: &[Unobserved]) -> Option<Spread> {
    let v: Vec<f64> = free
        .iter()
        .filter_map(|f| {
            let p = pinned.iter().find(|p| p.rep == f.rep && p.target == f.target && p.method == f.method)?;
            (f.reclaim_seconds > 0.0).then(|| p.reclaim_seconds / f.reclaim_seconds)
        })
        .collect();
    (!v.is_empty()).then(|| Spread::of(&v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_both() {
        let p = Placement { pinned: true, cpu: Some(0), start_cpu: Some(0), migrations: Some(0), allowed: vec![0, 1] };
        assert_eq!(p.describe(), "CPU 0, pinned");
        let f = Placement { pinned: false, cpu: Some(1), start_cpu: Some(0), migrations: Some(2), allowed: vec![0, 1] };
        assert_eq!(f.describe(), "unpinned (CPUs 0,1), ended on CPU 1, 2 migration(s)");
    }

    #[test]
    fn pairs_by_repetition() {
        assert_eq!(ratios(&[(0, 2.0), (1, 3.0), (2, 9.0)], &[(1, 1.5), (0, 1.0)]), vec![2.0, 2.0]);
    }
}
