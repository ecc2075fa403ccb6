//! `--sizes auto`: the sweep chooses its own sizes. It starts at
//! [`START`] and doubles until the median longest gap of a size reaches
//! [`TARGET_GAP_SECONDS`], so that the lockup count is extrapolated as little
//! as the machine allows; the memory limit (half of MemAvailable at the
//! measured bytes per dentry, or a cap given as `auto:SIZE`) or the safety
//! checks stop it earlier, and the output says which stopped it.

use serde::{Deserialize, Serialize};

use super::repetition::Run;
use crate::probe::victims::Victim;
use crate::size::human;
use crate::stats::median;

/// The first size of an auto sweep.
pub(crate) const START: u64 = 500_000;
/// The sweep stops once a size's median longest gap reaches this.
pub(crate) const TARGET_GAP_SECONDS: f64 = 1.0;
/// A limit this much above the last size still gets one last size, the
/// limit itself, rather than stopping short of it.
pub(crate) const LAST_STEP_AT_LEAST: f64 = 1.25;

/// `--sizes auto` or `auto:CAP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Auto {
    /// The largest size the user allows (`auto:8M`); none: only memory limits it.
    pub cap: Option<u64>,
}

/// What stopped the doubling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StoppedBy {
    /// A size's median longest gap reached [`TARGET_GAP_SECONDS`].
    Gap,
    /// The next size would not fit in half of MemAvailable (or of a memory
    /// cgroup's headroom, when less).
    Memory,
    /// The next size would pass the cap given with `auto:SIZE`.
    Cap,
    /// The safety checks refused the next size (a predicted stretch over 10 s).
    SafetyCheck,
}

/// How an auto sweep ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Outcome {
    pub sizes: Vec<u64>,
    pub stopped_by: StoppedBy,
    pub reason: String,
}

impl Outcome {
    /// One line for the notes.
    pub(crate) fn line(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(|&s| human(s)).collect();
        format!(
            "--sizes auto ran {}; stopped by the {}: {}",
            if sizes.is_empty() { "no size".into() } else { sizes.join(", ") },
            match self.stopped_by {
                StoppedBy::Gap => "gap target",
                StoppedBy::Memory => "memory limit",
                StoppedBy::Cap => "cap",
                StoppedBy::SafetyCheck => "safety checks",
            },
            self.reason
        )
    }
}

/// The next size of an auto sweep, or what stops it. `last` is the last
/// size run and its median longest gap (none before the first size);
/// `memory_limit` the largest size that fits in the memory allowed. Never
/// returns a size over `memory_limit` or `cap`.
pub(crate) fn next(last: Option<(u64, f64)>, memory_limit: u64, cap: Option<u64>) -> Result<u64, (StoppedBy, String)> {
    let (limit, by) = match cap {
        Some(c) if c < memory_limit => (c, StoppedBy::Cap),
        _ => (memory_limit, StoppedBy::Memory),
    };
    let why_limit = |want: u64| match by {
        StoppedBy::Cap => format!("the next size ({}) would pass the cap of {}", human(want), human(limit)),
        StoppedBy::Memory | StoppedBy::Gap | StoppedBy::SafetyCheck => format!(
            "the next size ({}) would need more than half of the memory available (MemAvailable, or what a memory cgroup's limit leaves when less: at most {} fit)",
            human(want),
            human(limit)
        ),
    };
    let want = match last {
        None => START,
        Some((n, gap)) if gap >= TARGET_GAP_SECONDS => {
            return Err((
                StoppedBy::Gap,
                format!("the median longest gap at {} was {gap:.2} s (≥ {TARGET_GAP_SECONDS:.0} s)", human(n)),
            ));
        }
        Some((n, _)) => n.saturating_mul(2),
    };
    if want <= limit {
        return Ok(want);
    }
    // Short of doubling, the limit itself is still worth a size when it
    // is clearly beyond the last one (a round thousand under it).
    let at_limit = limit / 1000 * 1000;
    match last {
        Some((n, _)) if at_limit as f64 >= n as f64 * LAST_STEP_AT_LEAST => Ok(at_limit),
        None if at_limit >= 1000 && cap.is_some_and(|c| c == limit) => Ok(at_limit),
        _ => Err((by, why_limit(want))),
    }
}

/// The victims of a sweep, and why an auto sweep runs without its default
/// ones. `given` is `--victims` (an empty list: `none`). Without it a list
/// of sizes runs none, and an auto sweep (the node's calibration) runs the
/// standard victims where they can run: as root (`root`: umount and netns
/// make namespaces of their own) with an allowed CPU besides the
/// reclaiming one (`allowed`, `cpu`).
pub(crate) fn victims(
    given: Option<&[Victim]>,
    auto: bool,
    (root, cpu, allowed): (bool, usize, &[usize]),
) -> (Vec<Victim>, Option<String>) {
    let without = |why: String| {
        let names: Vec<&str> = Victim::STANDARD.iter().map(|v| v.name()).collect();
        let line = format!(
            "--sizes auto ran without the standard victims ({}): {why}, so the calibration cannot say at what \
             count the node's first incident comes",
            names.join(", ")
        );
        (Vec::new(), Some(line))
    };
    match given {
        Some([]) if auto => without("--victims none".into()),
        Some(v) => (v.to_vec(), None),
        None if !auto => (Vec::new(), None),
        None if !root => without(
            "umount and netns need root (a mount and a network namespace of their own); run it with sudo, or \
             pass --victims none to run without them"
                .into(),
        ),
        None if !allowed.iter().any(|&c| c != cpu) => without(format!(
            "they run on a CPU other than the reclaiming one (CPU {cpu}), and this process may only use CPUs \
             {allowed:?}"
        )),
        None => (Victim::STANDARD.to_vec(), None),
    }
}

/// The median longest gap of `target`'s uncontended probed repetitions,
/// the largest over the methods (the sweep serves the most dangerous).
pub(crate) fn median_gap(runs: &[Run], target: u64) -> f64 {
    let mut methods: Vec<_> = runs.iter().filter(|r| r.target == target).map(|r| r.method).collect();
    methods.dedup();
    methods
        .into_iter()
        .map(|m| {
            let gaps: Vec<f64> = runs
                .iter()
                .filter(|r| r.target == target && r.method == m && r.contenders == 0)
                .map(|r| r.probe.max_gap_seconds)
                .collect();
            median(&gaps)
        })
        .filter(|g| g.is_finite())
        .fold(f64::NAN, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the policy on synthetic gaps: `gap(n)` is the median longest
    /// gap a size n would show. Returns the sizes run and what stopped it.
    fn sweep(gap: impl Fn(u64) -> f64, memory_limit: u64, cap: Option<u64>) -> (Vec<u64>, StoppedBy) {
        let mut sizes = Vec::new();
        let mut last = None;
        loop {
            match next(last, memory_limit, cap) {
                Ok(n) => {
                    assert!(last.is_none_or(|(l, _)| n > l), "sizes grow");
                    sizes.push(n);
                    last = Some((n, gap(n)));
                }
                Err((by, _)) => return (sizes, by),
            }
        }
    }

    #[test]
    fn doubles_from_500k_and_stops_at_one_second() {
        // 100 ns per dentry: 8M → 0.8 s, 16M → 1.6 s.
        let (sizes, by) = sweep(|n| n as f64 * 1e-7, 1_000_000_000, None);
        assert_eq!(sizes, vec![500_000, 1_000_000, 2_000_000, 4_000_000, 8_000_000, 16_000_000]);
        assert_eq!(by, StoppedBy::Gap);
        // Exactly 1 s stops too.
        let (sizes, by) = sweep(|n| if n >= 2_000_000 { 1.0 } else { 0.1 }, 1_000_000_000, None);
        assert_eq!((sizes.last().copied(), by), (Some(2_000_000), StoppedBy::Gap));
        let e = next(Some((2_000_000, 1.0)), 1_000_000_000, None).unwrap_err();
        assert!(e.1.contains("2M") && e.1.contains("1.00 s"), "{}", e.1);
    }

    #[test]
    fn stops_at_the_memory_limit_and_never_exceeds_it() {
        // A gap that never reaches 1 s: only memory stops it.
        for limit in [499_999u64, 500_000, 700_000, 1_100_000, 5_000_000, 7_000_000, 12_345_678] {
            let (sizes, by) = sweep(|_| 0.05, limit, None);
            assert_eq!(by, StoppedBy::Memory, "{limit}");
            assert!(sizes.iter().all(|&s| s <= limit), "{limit}: {sizes:?}");
        }
        // Doubling past the limit takes the limit itself when it is well beyond the last size…
        let (sizes, _) = sweep(|_| 0.05, 7_000_000, None);
        assert_eq!(sizes, vec![500_000, 1_000_000, 2_000_000, 4_000_000, 7_000_000]);
        // …and stops when it is not (5M is only 1.25× 4M: taken; 4.9M: not).
        let (sizes, _) = sweep(|_| 0.05, 4_900_000, None);
        assert_eq!(sizes, vec![500_000, 1_000_000, 2_000_000, 4_000_000]);
        // Not even the first size fits.
        let (sizes, by) = sweep(|_| 0.05, 400_000, None);
        assert!(sizes.is_empty() && by == StoppedBy::Memory);
        let e = next(Some((4_000_000, 0.2)), 4_900_000, None).unwrap_err();
        assert!(e.1.contains("8M") && e.1.contains("MemAvailable") && e.1.contains("4.9M"), "{}", e.1);
    }

    #[test]
    fn a_cap_stops_it_like_memory_and_says_so() {
        let (sizes, by) = sweep(|_| 0.05, 1_000_000_000, Some(2_000_000));
        assert_eq!((sizes, by), (vec![500_000, 1_000_000, 2_000_000], StoppedBy::Cap));
        // A cap under the first size is the only size.
        let (sizes, by) = sweep(|_| 0.05, 1_000_000_000, Some(20_000));
        assert_eq!((sizes, by), (vec![20_000], StoppedBy::Cap));
        // Memory under the cap: memory decides.
        let (_, by) = sweep(|_| 0.05, 3_000_000, Some(8_000_000));
        assert_eq!(by, StoppedBy::Memory);
        // The gap target before the cap.
        let (sizes, by) = sweep(|n| n as f64 * 1e-6, 1_000_000_000, Some(8_000_000));
        assert_eq!((sizes, by), (vec![500_000, 1_000_000], StoppedBy::Gap));
    }

    #[test]
    fn an_auto_sweep_runs_the_standard_victims_unless_told_or_unable() {
        let root_two = (true, 0, &[0usize, 1][..]);
        // A list of sizes: only what --victims says.
        assert_eq!(victims(None, false, root_two), (vec![], None));
        assert_eq!(victims(Some(&[]), false, root_two), (vec![], None));
        assert_eq!(victims(Some(&[Victim::Stat]), true, root_two), (vec![Victim::Stat], None));
        // Auto: the standard ones as root with a second CPU.
        assert_eq!(victims(None, true, root_two), (Victim::STANDARD.to_vec(), None));
        // Otherwise none, and one line why, which the calibration keeps.
        let cases = [
            (Some(&[][..]), root_two, "--victims none"),
            (None, (false, 0, &[0, 1][..]), "need root"),
            (None, (true, 1, &[1][..]), "CPU 1"),
        ];
        for (given, at, why) in cases {
            let (v, line) = victims(given, true, at);
            let line = line.expect("a reason");
            assert!(v.is_empty(), "{line}");
            assert!(line.starts_with("--sizes auto ran without the standard victims (umount, netns, fork-exec, stat, pod-start)"));
            assert!(line.contains(why) && line.lines().count() == 1, "{line}");
        }
    }

    #[test]
    fn the_outcome_line_names_the_sizes_and_the_stop() {
        let o = Outcome { sizes: vec![500_000, 1_000_000], stopped_by: StoppedBy::Memory, reason: "x".into() };
        assert_eq!(o.line(), "--sizes auto ran 500k, 1M; stopped by the memory limit: x");
    }
}
