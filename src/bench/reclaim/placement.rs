//! Where a reclaim ran. The probed repetitions (and by default the
//! unobserved ones) pin the reclaiming task to `--cpu`: the gap probe needs
//! a known CPU. `--unpinned-reps` adds unobserved repetitions whose
//! reclaiming task may run on any allowed CPU, as a reclaim does on a real
//! node; the table puts both times side by side (docs/pinning.md measures
//! and explains the difference on the project's VM).

use serde::{Deserialize, Serialize};

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
}
