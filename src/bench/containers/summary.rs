//! The containers' figures summarised, and the projection to the lockup
//! edge: per container created / freed at teardown / left on the host,
//! host growth per 1,000 containers (from the witness), teardown time and
//! longest stretch against the containers run, and at `--rate` containers
//! an hour how long until the host's dentries reach the calibration's
//! lockup count — by the growth that *stays*, not the growth that is freed.

use serde::{Deserialize, Serialize};

use super::{ContainerRun, Edge, Options, Witness};
use crate::analysis::fit::{self, LinearFit};
use crate::stats::{Spread, median, percentile_sorted};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Summary {
    pub containers: u64,
    /// Operations per container that named something new to the image.
    pub new_names_per_container: f64,
    /// dentry-state deltas per container (machine-wide counters).
    pub created: Spread,
    pub freed: Spread,
    pub left: Spread,
    pub left_negative: Spread,
    /// 10th and 90th percentiles of `left`.
    pub left_p10: f64,
    pub left_p90: f64,
    /// From the witness (this run's own filesystem): dentries left per
    /// container, and per 1,000 containers.
    pub witness_left_per_container: f64,
    pub witness_negative_per_container: f64,
    pub host_growth_per_1000: f64,
    /// Witness dentries left per new name a container used.
    pub left_per_new_name: f64,
    pub teardown_seconds: Spread,
    pub exit_seconds: Spread,
    pub remove_seconds: Spread,
    pub max_gap_seconds: Spread,
    /// Teardown time and longest stretch against the containers run before.
    pub teardown_vs_n: Option<LinearFit>,
    pub max_gap_vs_n: Option<LinearFit>,
    pub setup_seconds: Spread,
    /// Spawn to teardown done, less the workload.
    pub harness_seconds: Spread,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Projection {
    pub rate_per_hour: f64,
    pub calibration: String,
    pub lockup_dentries: Option<f64>,
    pub host_dentries: u64,
    /// Dentries that stay per container (the witness), and the range from
    /// the per-container counters' 10th to 90th percentile.
    pub growth_per_container: f64,
    pub growth_per_container_low: f64,
    pub growth_per_container_high: f64,
    pub growth_per_hour: f64,
    /// Hours until the host reaches the lockup count; `None` when the
    /// workload leaves nothing or there is no edge. The range comes from
    /// the growth range and the calibration's low end.
    pub hours_to_edge: Option<f64>,
    pub hours_to_edge_low: Option<f64>,
    pub hours_to_edge_high: Option<f64>,
}

pub(crate) fn summarise(runs: &[ContainerRun], w: &Witness) -> Summary {
    let col = |f: &dyn Fn(&ContainerRun) -> f64| runs.iter().map(f).collect::<Vec<f64>>();
    let n = runs.len().max(1) as f64;
    let mut left = col(&|r| r.left as f64);
    left.sort_by(f64::total_cmp);
    // The witness when it was undisturbed; else the median container's
    // negative dentries left (the least noisy per-container counter).
    let stayed = if w.disturbed {
        median(&runs.iter().map(|r| r.left_negative as f64).collect::<Vec<_>>()).max(0.0) * n
    } else {
        (w.dentries_counted() - w.image_dentries as i64).max(0) as f64
    };
    let new_names = runs.iter().map(|r| r.outcome.new_names()).sum::<u64>() as f64 / n;
    let vs_n = |f: &dyn Fn(&ContainerRun) -> f64| {
        fit::linear(&runs.iter().map(|r| (r.index as f64, f(r))).collect::<Vec<_>>())
    };
    Summary {
        containers: runs.len() as u64,
        new_names_per_container: new_names,
        created: Spread::of(&col(&|r| r.created as f64)),
        freed: Spread::of(&col(&|r| r.freed as f64)),
        left: Spread::of(&left),
        left_negative: Spread::of(&col(&|r| r.left_negative as f64)),
        left_p10: percentile_sorted(&left, 0.10),
        left_p90: percentile_sorted(&left, 0.90),
        witness_left_per_container: stayed / n,
        witness_negative_per_container: w.negative.max(0) as f64 / n,
        host_growth_per_1000: stayed / n * 1000.0,
        left_per_new_name: if new_names > 0.0 { stayed / n / new_names } else { f64::NAN },
        teardown_seconds: Spread::of(&col(&|r| r.teardown_seconds)),
        exit_seconds: Spread::of(&col(&|r| r.exit_seconds)),
        remove_seconds: Spread::of(&col(&|r| r.remove_seconds)),
        max_gap_seconds: Spread::of(&col(&|r| r.probe.max_gap_seconds)),
        teardown_vs_n: vs_n(&|r| r.teardown_seconds),
        max_gap_vs_n: vs_n(&|r| r.probe.max_gap_seconds),
        setup_seconds: Spread::of(&col(&|r| r.setup_seconds)),
        harness_seconds: Spread::of(&col(&|r| r.harness_seconds)),
    }
}

/// Hours until `host` dentries grow to `edge` at `per_hour`.
fn hours(edge: f64, host: u64, per_hour: f64) -> Option<f64> {
    (per_hour > 0.0 && edge.is_finite()).then(|| ((edge - host as f64) / per_hour).max(0.0))
}

pub(crate) fn project(s: &Summary, edge: &Edge, rate_per_hour: f64, host_dentries: u64) -> Projection {
    let g = s.witness_left_per_container;
    // The per-container counters are noisy (other work on the machine);
    // their spread, centred on the witness, bounds the growth.
    let (lo, hi) = if s.left.median.is_finite() {
        (g + (s.left_p10 - s.left.median), g + (s.left_p90 - s.left.median))
    } else {
        (g, g)
    };
    let (lo, hi) = (lo.clamp(0.0, g), hi.max(g));
    let edge_hi = edge.lockup_dentries;
    let edge_lo = edge.lockup_dentries_low.or(edge_hi);
    Projection {
        rate_per_hour,
        calibration: edge.calibration.clone(),
        lockup_dentries: edge_hi,
        host_dentries,
        growth_per_container: g,
        growth_per_container_low: lo,
        growth_per_container_high: hi,
        growth_per_hour: g * rate_per_hour,
        hours_to_edge: edge_hi.and_then(|e| hours(e, host_dentries, g * rate_per_hour)),
        hours_to_edge_low: edge_lo.and_then(|e| hours(e, host_dentries, hi * rate_per_hour)),
        hours_to_edge_high: edge_hi.and_then(|e| hours(e, host_dentries, lo * rate_per_hour)),
    }
}

/// What a reader must know to read the figures right.
pub(crate) fn notes(opts: &Options, s: &Summary, w: &Witness) -> Vec<String> {
    let mut out = vec![format!(
        "dentry-state is machine-wide: the per-container created/freed/left include other activity on the node \
         over the same milliseconds; 'left per container' and the projection use the witness instead (the \
         run's own {} filesystem, unmounted at the end: {} dentries, {} negative, of which {} are the image's \
         directories)",
        opts.fs, w.dentries, w.negative, w.image_dentries
    )];
    if w.disturbed {
        out.push(format!(
            "the witness was disturbed (the counters moved by up to {} in the quiet windows around its umount, or \
             its dentries and negative dentries disagree): 'left per container' and the projection use the median \
             container's negative dentries left instead; run again on a quieter machine for the exact figure",
            w.noise
        ));
    } else if w.negative > w.dentries {
        out.push(format!(
            "the umount that counts the witness took {} negative dentries off the counter but only {} dentries: \
             other processes allocated dentries during it, so the negative count (a lower bound) is used",
            w.negative, w.dentries
        ));
    }
    if opts.parallel > 1 {
        out.push(format!(
            "--parallel {}: other containers ran their workloads during each one's workload and teardown, so its \
             counters and its teardown stretch include theirs",
            opts.parallel
        ));
    }
    if s.witness_left_per_container > 0.0 && s.new_names_per_container > 0.0 {
        out.push(format!(
            "each container left {:.2} dentries on the host per new name it used ({:.0} per container)",
            s.left_per_new_name, s.witness_left_per_container
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(g: f64, p10: f64, med: f64, p90: f64) -> Summary {
        let sp = |v| Spread { min: v, median: v, max: v };
        Summary {
            containers: 10,
            new_names_per_container: g,
            created: sp(g),
            freed: sp(0.0),
            left: Spread { min: p10, median: med, max: p90 },
            left_negative: sp(g),
            left_p10: p10,
            left_p90: p90,
            witness_left_per_container: g,
            witness_negative_per_container: g,
            host_growth_per_1000: g * 1000.0,
            left_per_new_name: 1.0,
            teardown_seconds: sp(0.01),
            exit_seconds: sp(0.01),
            remove_seconds: sp(0.0),
            max_gap_seconds: sp(0.001),
            teardown_vs_n: None,
            max_gap_vs_n: None,
            setup_seconds: sp(0.001),
            harness_seconds: sp(0.01),
        }
    }

    #[test]
    fn projection_uses_what_stays_and_carries_a_range() {
        let edge = Edge { calibration: "test".into(), lockup_dentries: Some(46e6), lockup_dentries_low: Some(30e6) };
        // 10k left per container at 60/h: 600k/h; 45M to go: 75 h.
        let p = project(&summary(10_000.0, 9_000.0, 10_000.0, 12_000.0), &edge, 60.0, 1_000_000);
        assert_eq!(p.growth_per_hour, 600_000.0);
        assert!((p.hours_to_edge.unwrap() - 75.0).abs() < 1e-9);
        // Low end: the calibration's low edge at the high growth (12k·60/h).
        assert!((p.hours_to_edge_low.unwrap() - 29e6 / 720_000.0).abs() < 1e-6);
        assert!((p.hours_to_edge_high.unwrap() - 45e6 / 540_000.0).abs() < 1e-6);
        // Nothing stays: no edge is ever reached.
        let p = project(&summary(0.0, -5.0, 0.0, 5.0), &edge, 60.0, 1_000_000);
        assert_eq!(p.hours_to_edge, None);
        // Already past the edge: zero hours.
        let p = project(&summary(10.0, 10.0, 10.0, 10.0), &edge, 60.0, 50_000_000);
        assert_eq!(p.hours_to_edge, Some(0.0));
    }
}
