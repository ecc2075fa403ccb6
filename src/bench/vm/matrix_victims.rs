//! The victims of a `vm` matrix (`reclaim --victims` run in each guest):
//! for each row (kernel, preemption model, accelerator/clock) and victim,
//! whether it waits for the reclaim, its longest wait against the
//! reclaiming CPU's longest stretch at each size and against the whole
//! reclaim, and where in the kernel it waited (the stack sampled while it
//! waited, when the row's kernel has `/proc/PID/stack`). `matrix` lays
//! it out under the matrix; a row that ran no victims has no line here.

use crate::bench::reclaim::victims::{Outcome, VictimRun, VictimSize};
use crate::bench::reclaim::{Method, ReclaimResult};
use crate::duration::secs;
use crate::probe::victims::{SAMPLE_AFTER, Victim};
use crate::render::Grid;
use crate::size::human;

/// A matrix whose rows hold reclaim results (`matrix::VmMatrix`, named
/// here without it: `matrix` uses this module).
type Matrix = super::Matrix<Box<ReclaimResult>>;
type Row = super::Row<Box<ReclaimResult>>;

/// What one victim did in one row, in the table's words.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Line {
    pub victim: Victim,
    /// `yes`, `no`, or `cannot run: …` (the error the victim met).
    pub waits: String,
    /// Per size: (count, longest wait ÷ longest stretch, or the wait alone).
    pub per_size: Vec<(u64, String)>,
    /// At the largest size: the longest wait and the longest call outside.
    pub longest: Option<(f64, f64)>,
    pub stretch: Option<f64>,
    /// The longest wait ÷ the time of the reclaim it overlapped.
    pub of_reclaim: Option<f64>,
    /// Where the longest call at the largest size waited, or why that is
    /// not known.
    pub waits_in: String,
}

/// The victims' lines of one reclaim result (its first method, the one
/// the victims ran beside); `proc_stack`: whether the kernel it ran on has
/// `/proc/PID/stack` (`None`: not known).
pub(crate) fn lines(r: &ReclaimResult, proc_stack: Option<bool>) -> Vec<Line> {
    let Some(method) = r.victim_runs.first().map(|v| v.method) else { return Vec::new() };
    let runs: Vec<&VictimRun> = r.victim_runs.iter().filter(|v| v.method == method).collect();
    let kinds: Vec<Victim> =
        Victim::ALL.iter().copied().filter(|k| runs.iter().any(|v| v.victims.iter().any(|o| o.victim == *k))).collect();
    kinds.into_iter().map(|k| line(r, method, &runs, k, proc_stack)).collect()
}

fn line(r: &ReclaimResult, method: Method, runs: &[&VictimRun], k: Victim, proc_stack: Option<bool>) -> Line {
    let analysis = r.victims.as_ref();
    let sizes: Vec<&VictimSize> =
        analysis.map(|a| a.sizes.iter().filter(|s| s.victim == k && s.method == method).collect()).unwrap_or_default();
    let largest = sizes.iter().map(|s| s.target).max();
    // The longest call at the largest size, over its repetitions.
    let worst: Option<(&VictimRun, &Outcome)> = runs
        .iter()
        .filter(|v| Some(v.target) == largest)
        .flat_map(|v| v.victims.iter().filter(|o| o.victim == k && o.during.calls > 0).map(move |o| (*v, o)))
        .max_by(|a, b| a.1.during.longest_seconds.total_cmp(&b.1.during.longest_seconds));
    let error = runs.iter().flat_map(|v| v.victims.iter()).filter(|o| o.victim == k).find_map(|o| o.error.clone());
    let waits = match (&error, analysis) {
        (Some(e), _) => format!("cannot run: {e}"),
        (None, Some(a)) if a.fits.iter().any(|f| f.who == k.name()) => "yes".into(),
        (None, Some(_)) => "no".into(),
        (None, None) => "–".into(),
    };
    let stretch = largest.and_then(|t| {
        r.sizes
            .iter()
            .find(|s| s.target == t && s.method == method && s.contenders == 0)
            .map(|s| s.max_gap_seconds.median)
    });
    let last = sizes.iter().find(|s| Some(s.target) == largest);
    let waits_in = match worst {
        Some((_, o)) if o.waits_in.is_some() => o.waits_in.clone().unwrap_or_default(),
        _ if proc_stack == Some(false) => "not known: the kernel has no /proc/PID/stack".into(),
        Some((_, o)) if o.during.longest_seconds < SAMPLE_AFTER.as_secs_f64() => {
            format!("– (no call lasted {} ms: none sampled)", SAMPLE_AFTER.as_millis())
        }
        Some(_) => "no stack sampled".into(),
        None => "–".into(),
    };
    Line {
        victim: k,
        waits,
        per_size: sizes
            .iter()
            .map(|s| {
                let v = match s.of_stretch {
                    Some(x) => format!("{x:.2}×"),
                    None => secs(s.longest_seconds.median),
                };
                (s.target, v)
            })
            .collect(),
        longest: last.map(|s| (s.longest_seconds.median, s.outside_longest_seconds)),
        stretch,
        of_reclaim: worst
            .filter(|(v, _)| v.reclaim_seconds > 0.0)
            .map(|(v, o)| o.during.longest_seconds / v.reclaim_seconds),
        waits_in,
    }
}

fn preempt_cell(row: &Row) -> String {
    match &row.preempt_requested {
        Some(asked) if asked != &row.preempt => format!("{} (asked {asked})", row.preempt),
        _ => row.preempt.clone(),
    }
}

/// One line per row and victim; `None` when no row ran victims. `md`:
/// Markdown cells (code spans for kernel functions).
pub(crate) fn grid(m: &Matrix, md: bool) -> Option<Grid> {
    let header = [
        "Kernel",
        "Preemption",
        "Accel / clock",
        "Victim",
        "Waits",
        "Longest wait ÷ longest stretch, per size",
        "Largest size: longest wait (outside)",
        "Longest stretch",
        "Wait ÷ reclaim",
        "Where it waited (stack)",
    ]
    .map(String::from)
    .to_vec();
    let dash = || "–".to_string();
    let mut rows = Vec::new();
    for row in &m.rows {
        let Some(r) = &row.result else { continue };
        for l in lines(r, row.proc_stack) {
            let code = md && l.waits_in.contains(" ← ");
            rows.push(vec![
                row.kernel_release.clone(),
                preempt_cell(row),
                row.machine(),
                l.victim.name().to_string(),
                l.waits.clone(),
                if l.per_size.is_empty() {
                    dash()
                } else {
                    l.per_size.iter().map(|(n, v)| format!("{} {v}", human(*n))).collect::<Vec<_>>().join(", ")
                },
                l.longest.map(|(w, o)| format!("{} ({})", secs(w), secs(o))).unwrap_or_else(dash),
                l.stretch.map(secs).unwrap_or_else(dash),
                l.of_reclaim.map(|x| format!("{:.0}%", x * 100.0)).unwrap_or_else(dash),
                if code { format!("`{}`", l.waits_in) } else { l.waits_in.clone() },
            ]);
        }
    }
    (!rows.is_empty()).then_some(Grid { header, rows })
}

/// The notes under the victims' table.
pub(crate) fn notes() -> Vec<String> {
    vec![
        "Victims: a victim waits (yes) when its longest call during the reclaim at the largest size is 2× its longest \
         call in the second before it and that wait grows with the count (reclaim --victims' own judgement); each \
         wait ÷ the reclaiming CPU's longest stretch at the same size (probed repetitions), and ÷ the whole reclaim \
         it overlapped."
            .into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::victims::CallStats;
    use crate::bench::reclaim::victims::{Analysis, Unaffected};
    use crate::stats::Spread;

    fn stats(longest: f64) -> CallStats {
        CallStats { calls: 10, longest_seconds: longest, p50_seconds: 0.001, p99_seconds: longest, per_second: 100.0 }
    }

    fn outcome(v: Victim, longest: f64, waits_in: Option<&str>, error: Option<&str>) -> Outcome {
        let during = if error.is_some() { CallStats { calls: 0, ..stats(f64::NAN) } } else { stats(longest) };
        Outcome {
            victim: v,
            during,
            outside: stats(0.002),
            longest_started_seconds: Some(0.1),
            waits_in: waits_in.map(String::from),
            stack: vec![],
            stack_samples: usize::from(waits_in.is_some()),
            steps: vec![],
            error: error.map(String::from),
        }
    }

    fn size(v: Victim, target: u64, longest: f64, of_stretch: f64) -> VictimSize {
        VictimSize {
            victim: v,
            target,
            method: "inotify".parse().unwrap(),
            longest_seconds: Spread::of(&[longest]),
            p99_seconds: longest,
            per_second: 100.0,
            outside_longest_seconds: 0.002,
            outside_p99_seconds: 0.002,
            outside_per_second: 100.0,
            of_stretch: Some(of_stretch),
            waits_in: None,
            slowest_step: None,
        }
    }

    /// A measured 6.18 result (no victims in it) given synthetic victim
    /// repetitions: only the rendering is under test.
    fn result() -> ReclaimResult {
        let mut r: ReclaimResult =
            serde_json::from_str(include_str!("../../../docs/results/inotify-ext4-negative-6.18.json")).unwrap();
        let method = r.options.methods[0];
        let largest = r.sizes.iter().filter(|s| s.method == method && s.contenders == 0).map(|s| s.target).max();
        let (small, big) = (r.sizes[0].target, largest.unwrap());
        let run = |target, umount: f64| VictimRun {
            target,
            rep: 0,
            method,
            reclaim_seconds: 2.0,
            victims: vec![
                outcome(Victim::Umount, umount, Some("synchronize_rcu_expedited ← namespace_unlock"), None),
                outcome(Victim::Stat, 0.0001, None, None),
                outcome(Victim::ForkExec, f64::NAN, None, Some("victim: fork + exec /bin/true: ENOENT")),
            ],
        };
        r.victim_runs = vec![run(small, 0.1), run(big, 0.5)];
        let sizes = vec![
            size(Victim::Umount, small, 0.1, 0.9),
            size(Victim::Umount, big, 0.5, 1.1),
            size(Victim::Stat, big, 0.0001, 0.0002),
        ];
        let fit = crate::analysis::fit::PowerFit {
            coefficient: 1e-7,
            exponent: 1.0,
            r2: 1.0,
            exponent_stderr: 0.0,
            band: None,
        };
        r.victims = Some(Analysis {
            sizes,
            fits: vec![crate::analysis::victims::WaitFit {
                who: "umount".into(),
                watches: crate::analysis::victims::Watches::Victims,
                fit,
                shape: None,
                may_wait: None,
            }],
            unaffected: vec![Unaffected { victim: Victim::Stat, why: "flat".into() }],
            failed: vec![],
            incidents: vec![],
            stalls: vec![],
        });
        r
    }

    #[test]
    fn each_victim_says_whether_it_waits_how_long_and_where_or_why_not() {
        let r = result();
        let l = lines(&r, Some(true));
        assert_eq!(l.iter().map(|x| x.victim).collect::<Vec<_>>(), [Victim::Umount, Victim::ForkExec, Victim::Stat]);
        let umount = &l[0];
        assert_eq!(umount.waits, "yes");
        assert_eq!(umount.per_size.iter().map(|x| x.1.as_str()).collect::<Vec<_>>(), ["0.90×", "1.10×"]);
        assert_eq!(umount.longest, Some((0.5, 0.002)));
        assert!((umount.of_reclaim.unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(umount.waits_in, "synchronize_rcu_expedited ← namespace_unlock");
        // A victim that could not run says why, in its own words.
        assert!(l[1].waits.starts_with("cannot run: victim: fork + exec /bin/true"), "{:?}", l[1]);
        assert_eq!(l[2].waits, "no");
        assert!(l[2].waits_in.contains("none sampled"), "{:?}", l[2]);
        // A kernel without /proc/PID/stack: said, not left blank.
        let l = lines(&r, Some(false));
        assert_eq!(l[2].waits_in, "not known: the kernel has no /proc/PID/stack");
        assert_eq!(l[0].waits_in, "synchronize_rcu_expedited ← namespace_unlock");
    }

    #[test]
    fn the_grid_has_a_line_per_row_and_victim_and_none_without_victims() {
        let row = |result: Option<ReclaimResult>| Row {
            kernel_spec: "linux-image-6.12.117+deb13-rt-amd64".into(),
            kernel_release: "6.12.117+deb13-rt-amd64".into(),
            preempt: "rt".into(),
            preempt_requested: None,
            accel: "tcg".into(),
            clock: "icount:4".into(),
            emulated: true,
            memory_bytes: 1 << 31,
            cpus: 2,
            wall_seconds: 1.0,
            proc_stack: Some(true),
            result: result.map(Box::new),
            kernel_log: vec![],
            error: None,
            console_tail: vec![],
            build: None,
            selftests: vec![],
        };
        let mut m = Matrix {
            schema: super::super::SCHEMA.into(),
            started_at: "2026-11-26T09:00:00Z".into(),
            host: super::super::HostInfo { kernel: "6.18.44".into(), cpus: 2, memory_bytes: 1 << 34 },
            command: vec!["reclaim".into(), "--victims".into(), "umount".into()],
            accel_reason: String::new(),
            rows: vec![row(Some(result())), row(None)],
        };
        let g = grid(&m, true).unwrap();
        assert_eq!(g.rows.len(), 3, "{g:?}");
        assert_eq!(g.rows[0][..5], ["6.12.117+deb13-rt-amd64", "rt", "tcg icount:4 (emulated)", "umount", "yes"]);
        assert_eq!(g.rows[0][9], "`synchronize_rcu_expedited ← namespace_unlock`");
        assert_eq!(g.rows[0][8], "25%");
        m.rows[0].result.as_mut().unwrap().victim_runs.clear();
        assert!(grid(&m, false).is_none());
    }

    /// The idle TCG matrix of docs/vm.md reads back (a row with no gap fit
    /// saves null exponents), and its grid says what the docs quote: on
    /// every RT build the umount victim waits, though the stretch stays
    /// at a few ms; on the cloud builds `stat` does not.
    #[test]
    fn the_recorded_idle_guest_matrix_reads_back_and_rt_umount_waits() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results/vm-victims-tcg-idle-4M.json");
        let m: Matrix = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let g = grid(&m, false).unwrap();
        let cell = |release: &str, victim: &str| {
            let r = g.rows.iter().find(|r| r[0].starts_with(release) && r[3] == victim);
            r.unwrap_or_else(|| panic!("no {release} {victim} line")).clone()
        };
        for rt in ["6.1.0-56-rt", "6.12.118+deb13-rt", "7.3.4+deb13-rt"] {
            let l = cell(rt, "umount");
            assert_eq!(l[4], "yes", "{l:?}");
            assert!(l[9].contains("synchronize_rcu"), "{l:?}");
        }
        for cloud in ["6.1.0-56-cloud", "6.12.118+deb13-cloud"] {
            assert_eq!(cell(cloud, "umount")[4], "yes");
            assert_eq!(cell(cloud, "stat")[4], "no");
        }
    }

    #[test]
    fn a_result_without_victims_has_no_lines() {
        let mut r = result();
        r.victim_runs.clear();
        r.victims = None;
        assert!(lines(&r, Some(true)).is_empty());
    }
}
