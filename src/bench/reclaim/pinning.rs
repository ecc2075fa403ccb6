//! What pinning costs: the unpinned unobserved repetitions
//! (`--unpinned-reps`) summarised beside the pinned ones of the same size,
//! and over the whole sweep (docs/pinning.md).

use serde::{Deserialize, Serialize};

use super::repetition::{Run, Unobserved};
use crate::stats::Spread;

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
    fn pairs_by_repetition() {
        assert_eq!(ratios(&[(0, 2.0), (1, 3.0), (2, 9.0)], &[(1, 1.5), (0, 1.0)]), vec![2.0, 2.0]);
    }
}
