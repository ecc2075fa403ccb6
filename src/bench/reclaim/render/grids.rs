//! The reclaim tables and the lines under them: results per size, the
//! reclaim paths compared, the threshold table, several results side by
//! side, the fits, and the `--watchdog-check` table.

use crate::analysis::linearity::{LinearityTest, Shape};
use crate::bench::reclaim::result::ReclaimResult;
use crate::bench::reclaim::watchdog::{Agreement, Expect, WatchdogReport};
use crate::duration::secs;
use crate::render::Grid;
use crate::render::cell::{capitalise, spread_ns, spread_secs};
use crate::size::{grouped, human};
use crate::stats::Spread;

/// The node-lockup report's results table plus the gap columns; with several methods or
/// `--contend`, one row per method and contention as well.
pub(crate) fn reclaim_grid(r: &ReclaimResult) -> Grid {
    let o = &r.options;
    let many = o.methods.len() > 1;
    let contended = o.contend > 0;
    let witness = r.sizes.first().map(|s| s.witness.as_str()).unwrap_or("nr_dentry");
    let unpinned = r.sizes.iter().any(|s| s.unpinned.is_some());
    let mut header: Vec<String> = Vec::new();
    if many {
        header.push("Method".into());
    }
    if contended {
        header.push("Lookup threads".into());
    }
    header.extend([
        "Target".into(),
        if witness == "nr_dentry" { "Reclaimed".into() } else { format!("Reclaimed ({witness})") },
        "vs target".into(),
        "Freed".into(),
        match o.methods.first() {
            Some(m) if !many => format!("{} time", capitalise(m.name())),
            _ => "Reclaim time".into(),
        },
        if unpinned { format!("ns/dentry (pinned, CPU {})", o.cpu) } else { "ns/dentry".into() },
    ]);
    if unpinned {
        header.push("ns/dentry (unpinned)".into());
    }
    header.extend([
        format!("Extrapolated to {}", human(o.extrapolate)),
        format!("Max gap (CPU {})", o.cpu),
        "p99 gap".into(),
        o.control_cpu.map(|c| format!("Control max (CPU {c})")).unwrap_or_else(|| "Control max".into()),
        "Kernel msgs".into(),
    ]);
    let rows = r
        .sizes
        .iter()
        .map(|s| {
            let mut row = Vec::new();
            if many {
                row.push(s.method.name().to_string());
            }
            if contended {
                row.push(s.contenders.to_string());
            }
            row.extend([
                human(s.target),
                grouped(s.reclaimed.median.max(0.0) as u64),
                if s.method.frees() { format!("{:+.2}%", s.reclaimed_vs_target * 100.0) } else { "–".into() },
                if s.method.frees() { freed(s.freed_fraction) } else { WALK_FREES_NONE.into() },
                spread_secs(&s.reclaim_seconds),
                spread_ns(&s.ns_per_dentry),
            ]);
            if unpinned {
                row.push(s.unpinned.as_ref().map(|u| spread_ns(&u.ns_per_dentry)).unwrap_or_else(|| "–".into()));
            }
            row.extend([
                secs(s.extrapolated_seconds),
                spread_secs(&s.max_gap_seconds),
                secs(s.p99_gap_seconds),
                s.control_max_gap_seconds.map(secs).unwrap_or_else(|| "–".into()),
                if s.kernel_messages == 0 {
                    "none".into()
                } else {
                    format!("{} ({} soft lockup)", s.kernel_messages, s.soft_lockups)
                },
            ]);
            row
        })
        .collect();
    Grid { header, rows }
}

/// The Freed cell of a path that walks without freeing (`inotify`).
const WALK_FREES_NONE: &str = "none (a walk)";

/// The share of created dentries a reclaim freed, flagged when short.
fn freed(f: f64) -> String {
    if !f.is_finite() {
        "–".into()
    } else if f >= 0.99 {
        format!("{:.1}%", (f * 100.0).min(100.0))
    } else {
        format!("{:.1}% (fewer)", f * 100.0)
    }
}

/// The reclaim paths side by side at one size, most dangerous first.
pub(crate) fn methods_grid(r: &ReclaimResult) -> Option<Grid> {
    let d = r.comparison.as_ref()?;
    let contended = d.ranking.iter().any(|p| p.contended_max_gap_seconds.is_some());
    let mut header: Vec<String> = vec![
        "Rank".into(),
        "Method".into(),
        format!("Freed of {}", human(d.target)),
        "Reclaim time".into(),
        "Max gap".into(),
    ];
    if contended {
        header.push(format!("Max gap, {} lookup threads", r.options.contend));
    }
    header.push("Predicted lockup at".into());
    let rows = d
        .ranking
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut row = vec![
                (i + 1).to_string(),
                p.method.clone(),
                if p.walk_only { WALK_FREES_NONE.into() } else { freed(p.freed_fraction) },
                secs(p.reclaim_seconds),
                secs(p.max_gap_seconds),
            ];
            if contended {
                row.push(p.contended_max_gap_seconds.map(secs).unwrap_or_else(|| "–".into()));
            }
            row.push(p.lockup_count.map(|n| human(n as u64)).unwrap_or_else(|| "–".into()));
            row
        })
        .collect();
    Some(Grid { header, rows })
}

/// The methods of a run, for titles.
pub(crate) fn methods_label(r: &ReclaimResult) -> String {
    r.options.methods.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
}

/// The threshold table: predicted time and longest stretch at chosen counts.
pub(crate) fn threshold_grid(r: &ReclaimResult) -> Option<Grid> {
    let v = r.verdict.as_ref()?;
    let thr = v.soft_lockup_threshold_seconds;
    let header = vec![
        "Dentry count".into(),
        "Predicted reclaim time".into(),
        "Predicted longest stretch".into(),
        format!("Exceeds {thr:.0} s?"),
        "Note".into(),
    ];
    let rows = v
        .thresholds
        .iter()
        .map(|t| {
            let yes = |b: bool, x: Option<f64>| match x {
                Some(x) if b => format!("yes ({:.1}×)", x / thr),
                Some(_) => "no".to_string(),
                None => "–".to_string(),
            };
            vec![
                human(t.dentries as u64),
                t.reclaim_seconds.map(secs).unwrap_or_else(|| "–".into()),
                t.max_gap_seconds.map(secs).unwrap_or_else(|| "–".into()),
                format!(
                    "time: {}, stretch: {}",
                    yes(t.exceeds_by_time, t.reclaim_seconds),
                    yes(t.exceeds_by_gap, t.max_gap_seconds)
                ),
                super::verdict::row_label(t),
            ]
        })
        .collect();
    Some(Grid { header, rows })
}

/// Several reclaim results side by side: one row each, the figures that
/// decide the verdict.
pub(crate) fn comparison_grid(results: &[&ReclaimResult], labels: &[String]) -> Grid {
    let header = [
        "Result",
        "Sizes",
        "ns/dentry (largest size)",
        "Time exponent",
        "Longest gap (largest size)",
        "Soft lockup predicted from",
        "Decided by",
        "Reclaim time at target",
    ]
    .map(String::from)
    .to_vec();
    let rows = results
        .iter()
        .zip(labels)
        .map(|(r, label)| {
            let last = r.sizes.last();
            let v = r.verdict.as_ref();
            let first = r.sizes.first().map(|s| human(s.target)).unwrap_or_else(|| "–".into());
            let sizes = last.map(|l| format!("{first}…{}", human(l.target))).unwrap_or_else(|| "–".into());
            vec![
                label.clone(),
                sizes,
                last.map(|s| spread_ns(&s.ns_per_dentry)).unwrap_or_else(|| "–".into()),
                r.fits.time_power.map(|p| format!("{:.2}", p.exponent)).unwrap_or_else(|| "–".into()),
                last.map(|s| spread_secs(&s.max_gap_seconds)).unwrap_or_else(|| "–".into()),
                v.and_then(|v| v.lockup_count).map(|n| human(n as u64)).unwrap_or_else(|| "–".into()),
                v.map(|v| match v.governs {
                    crate::analysis::verdict::Governs::LongestStretch => "longest stretch",
                    crate::analysis::verdict::Governs::TotalTime => "total time",
                })
                .unwrap_or("–")
                .into(),
                v.and_then(|v| {
                    v.extrapolated_reclaim_seconds.map(|t| format!("{} at {}", secs(t), human(v.extrapolate_to)))
                })
                .unwrap_or_else(|| "–".into()),
            ]
        })
        .collect();
    Grid { header, rows }
}

/// The fit lines for people, per method when several ran.
/// The line under the reclaim table: where the times come from, and what
/// the probe costs.
pub(crate) fn overhead_line(r: &ReclaimResult) -> String {
    match (&r.probe_overhead, r.unobserved.is_empty()) {
        (Some(o), false) => format!(
            "Times and ns/dentry: {} unobserved repetition(s) per size (no probe, no control, no contenders). \
             Probe overhead (probed ÷ unobserved reclaim time): median {:.3}×, {:.3}–{:.3}×.",
            r.options.unobserved_reps, o.median, o.min, o.max
        ),
        (None, false) => format!(
            "Times and ns/dentry: {} unobserved repetition(s) per size (no probe); no probed repetition to compare.",
            r.options.unobserved_reps
        ),
        _ => "Times and ns/dentry include the probe's cost (no unobserved repetitions).".into(),
    }
}

/// Wall ÷ CPU time above which a reclaim is said to have shared its CPU:
/// alone on an idle 6.18 VM it is about 1.1 (725 ns/dentry wall against
/// 652 ns of system time at 4M: the RCU frees it leaves run on its CPU off
/// its clock); beside a busy loop on each CPU it was 2.
pub(crate) const WALL_CPU_PART: f64 = 1.3;

/// The reclaim's own CPU time per dentry beside its wall time, and the
/// load it ran under, at the largest size (first method, uncontended);
/// a second line when wall and CPU time part. None without CPU times.
pub(crate) fn load_lines(r: &ReclaimResult) -> Vec<String> {
    let first = r.options.methods.first().copied();
    let Some(s) =
        r.sizes.iter().rev().find(|s| Some(s.method) == first && s.contenders == 0 && s.cpu_ns_per_dentry.is_some())
    else {
        return Vec::new();
    };
    let (Some(cpu), Some(ratio)) = (s.cpu_ns_per_dentry, s.wall_over_cpu) else { return Vec::new() };
    let others = s.others_busy.map_or_else(
        || "the other CPUs' load was not read".to_string(),
        |o| format!("the other CPUs were {:.0}% busy during the reclaims", o * 100.0),
    );
    let mut out = vec![format!(
        "CPU time per dentry (the reclaim's own system time) at {}: {:.0} ns ({:.0}–{:.0}) against {:.0} ns of \
         wall time, wall ÷ CPU {ratio:.2}×; {others}.",
        human(s.target),
        cpu.median,
        cpu.min,
        cpu.max,
        s.ns_per_dentry.median
    )];
    if ratio > WALL_CPU_PART {
        out.push(format!(
            "Wall and CPU time part (over {WALL_CPU_PART}×): other tasks held the reclaiming CPU for about \
             {:.0}% of each reclaim, so the node was busy: ns/dentry is wall time, the CPU time per dentry is \
             the walk's own cost, and the longest stretch, what the watchdog sees, is measured either way.",
            (1.0 - 1.0 / ratio) * 100.0
        ));
    }
    out
}

/// Where the reclaim ran: pinned to the probed CPU, and with
/// `--unpinned-reps`, the unpinned times beside the pinned ones.
pub(crate) fn pinning_line(r: &ReclaimResult) -> String {
    let cpu = r.options.cpu;
    let pinned = format!(
        "The probed{} repetitions' reclaim ran pinned to CPU {cpu} (the probe needs a known CPU)",
        if r.unobserved.is_empty() { "" } else { " and unobserved" }
    );
    let Some(last) = r.sizes.iter().rev().find_map(|s| s.unpinned.as_ref().map(|u| (s, u))) else {
        return format!("{pinned}; no unpinned repetitions.");
    };
    let (s, u) = last;
    let allowed = r.unpinned.first().map(|f| f.placement.allowed.clone()).unwrap_or_default();
    let list = |v: &[usize]| v.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
    let ratio = |x: &Option<Spread>| match x {
        Some(o) => format!("median {:.3}×, {:.3}–{:.3}×", o.median, o.min, o.max),
        None => "–".into(),
    };
    format!(
        "{pinned}; {} unpinned unobserved repetition(s) per size ran free on CPUs {}{}. Pinned ÷ unpinned reclaim \
         time: {} over every size. At {}, reclaim time unpinned {}, pinned {} (pinned ÷ unpinned {}), probed {} \
         (probed ÷ unpinned {}).",
        r.options.unpinned_reps,
        list(&allowed),
        if u.end_cpus.is_empty() {
            String::new()
        } else {
            format!(" (ended on CPU {} at the largest size)", list(&u.end_cpus))
        },
        ratio(&r.pinning_cost),
        human(s.target),
        spread_secs(&u.reclaim_seconds),
        spread_secs(&s.reclaim_seconds),
        ratio(&u.pinned_over_unpinned),
        s.probed_reclaim_seconds.as_ref().map(spread_secs).unwrap_or_else(|| spread_secs(&s.reclaim_seconds)),
        ratio(&u.probed_over_unpinned),
    )
}

pub(crate) fn fit_lines(r: &ReclaimResult) -> Vec<String> {
    if r.per_method.len() < 2 {
        return fit_lines_of(&r.fits);
    }
    r.per_method
        .iter()
        .flat_map(|m| fit_lines_of(&m.fits).into_iter().map(move |l| format!("{}: {l}", m.method.name())))
        .collect()
}

fn fit_lines_of(fits: &crate::bench::reclaim::summary::Fits) -> Vec<String> {
    let mut out = Vec::new();
    let exponent = |p: &crate::analysis::fit::PowerFit| match p.band.map(|b| b.exponent(p)) {
        Some(i) => format!("exponent 90% {:.3}–{:.3}", i.low, i.high.unwrap_or(f64::NAN)),
        None if p.exponent_stderr.is_finite() => format!("exponent ± {:.3}, no interval", p.exponent_stderr),
        None => "no interval".into(),
    };
    if let Some(p) = fits.time_power {
        out.push(format!(
            "reclaim time ≈ {:.3e} · N^{:.3} s (power law, R² {:.4}, {}{}){}",
            p.coefficient,
            p.exponent,
            p.r2,
            exponent(&p),
            if fits.time_unobserved { ", unobserved repetitions" } else { "" },
            if p.superlinear() { " — super-linear" } else { "" }
        ));
    }
    if let Some(l) = fits.time_linear {
        out.push(format!("reclaim time ≈ {:.4} s + {:.1} ns · N (linear, R² {:.4})", l.intercept, l.slope * 1e9, l.r2));
    }
    if let Some(p) = fits.gap_power {
        out.push(format!(
            "longest gap  ≈ {:.3e} · N^{:.3} s (power law, R² {:.4}, {})",
            p.coefficient,
            p.exponent,
            p.r2,
            exponent(&p)
        ));
    }
    let linear = |what: &str, f: Option<crate::analysis::fit::PowerFit>, t: Option<LinearityTest>| {
        let (f, t) = (f?, t?);
        Some(format!(
            "{what} ≈ {:.1} ns · N (linear model, R² {:.4}): {}",
            f.coefficient * 1e9,
            f.r2,
            match (t.governs, t.rejected) {
                (Shape::Linear, _) if t.pinned => {
                    "governs: this run cannot test linearity, and the exponent measured past its sizes pins it".to_string()
                }
                (Shape::Linear, _) => "governs (the power law's exponent does not stand above 1)".to_string(),
                (Shape::PowerLaw, true) =>
                    format!("rejected: the power law's exponent stands above 1 (one-sided {:.0}%)", t.level * 100.0),
                (Shape::PowerLaw, false) if !t.testable => {
                    "not used: this run cannot test linearity (exponent not pinned near 1)".to_string()
                }
                (Shape::PowerLaw, false) => "not used".to_string(),
            }
        ))
    };
    out.extend(linear("reclaim time", fits.time_proportional, fits.time_linearity));
    out.extend(linear("longest gap ", fits.gap_proportional, fits.gap_linearity));
    for l in &fits.gap_left_out {
        out.push(format!("gap fit leaves out {}: {}", human(l.target), l.reason));
    }
    if out.is_empty() {
        out.push("no fit: at least two distinct sizes are needed".into());
    }
    out
}

/// The `--watchdog-check` table: prediction, probe and watchdog per reclaim.
pub(crate) fn watchdog_grid(w: &WatchdogReport) -> Grid {
    let header = vec![
        "Size".into(),
        "Rep".into(),
        "Predicted stretch".into(),
        "Predicted lockup".into(),
        "Probe max gap".into(),
        "Watchdog".into(),
        "Stuck for".into(),
        "Prediction vs watchdog".into(),
    ];
    let rows = w
        .rows
        .iter()
        .map(|r| {
            vec![
                human(r.target),
                (r.rep + 1).to_string(),
                r.predicted_gap_seconds.map(secs).unwrap_or_else(|| "–".into()),
                match r.predicted {
                    Some(Expect::Fires) => "yes".into(),
                    Some(Expect::Silent) => "no".into(),
                    Some(Expect::Either) => "in band".into(),
                    None => "–".into(),
                },
                secs(r.measured_gap_seconds),
                if r.watchdog_fired { "soft lockup".into() } else { "silent".into() },
                r.watchdog_stuck_seconds.map(|s| format!("{s} s")).unwrap_or_else(|| "–".into()),
                match r.agreement {
                    Agreement::TruePositive => "agree (fired)".into(),
                    Agreement::TrueNegative => "agree (silent)".into(),
                    Agreement::FalsePositive => "DISAGREE: predicted, silent".into(),
                    Agreement::FalseNegative => "DISAGREE: fired, not predicted".into(),
                    Agreement::Uncertain => "either fits (in band)".into(),
                    Agreement::Unpredicted => "no prediction".into(),
                },
            ]
        })
        .collect();
    Grid { header, rows }
}
