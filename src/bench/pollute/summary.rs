//! The repetitions of `dentrylab pollute` pooled per size and probe: each
//! probe's slowdown against size 0 relative to the control, with its
//! interval, and the lines that say what it means.

use crate::analysis::slowdown::{self, Effect, Ratio};
use crate::bench::pollute::prober::Probe;
use crate::size::human;
use crate::stats::Spread;

use super::{LevelRun, LevelSummary, MIN_EFFECT, ProbeRun, ProbeSummary, REPORTED_NEGATIVES, REPORTED_SLOWDOWN, Rep};

/// Pools the repetitions per size and probe, and computes the slowdowns
/// against size 0.
pub(crate) fn summarise(reps: &[Rep]) -> Vec<LevelSummary> {
    let Some(first) = reps.first() else { return Vec::new() };
    let nlevels = first.levels.len();
    // A probe's median relative to the control's at the same size and
    // repetition: a change of the whole machine's speed cancels out (the
    // control itself is taken raw, and shows that change).
    let relative = |l: &LevelRun, probe: Probe| -> f64 {
        let m = |q: Probe| l.probes.iter().find(|p| p.probe == q).map_or(f64::NAN, |p| p.median_ns);
        if probe == Probe::Control { m(probe) } else { m(probe) / m(Probe::Control) }
    };
    let baseline = |probe: Probe| -> Vec<f64> { reps.iter().map(|r| relative(&r.levels[0], probe)).collect() };
    (0..nlevels)
        .map(|li| {
            let at: Vec<&LevelRun> = reps.iter().filter_map(|r| r.levels.get(li)).collect();
            let spread = |f: &dyn Fn(&LevelRun) -> f64| Spread::of(&at.iter().map(|l| f(l)).collect::<Vec<_>>());
            let probes = Probe::ALL
                .iter()
                .map(|&probe| {
                    let runs: Vec<&ProbeRun> =
                        at.iter().filter_map(|l| l.probes.iter().find(|p| p.probe == probe)).collect();
                    let calls: u64 = runs.iter().map(|p| p.calls).sum();
                    let medians: Vec<f64> = runs.iter().map(|p| p.median_ns).collect();
                    let rel: Vec<f64> = at.iter().map(|l| relative(l, probe)).collect();
                    let slowdown = (li > 0).then(|| slowdown::ratio(&baseline(probe), &rel));
                    // Over the repetitions: the median of their medians,
                    // the largest p99 and max, the mean of all calls.
                    ProbeSummary {
                        probe,
                        calls,
                        p50_ns: crate::stats::median(&medians),
                        p99_ns: runs.iter().map(|p| p.p99_ns).fold(f64::NAN, f64::max),
                        max_ns: runs.iter().map(|p| p.max_ns).max().unwrap_or(0),
                        mean_ns: if calls == 0 {
                            f64::NAN
                        } else {
                            runs.iter().map(|p| p.mean_ns * p.calls as f64).sum::<f64>() / calls as f64
                        },
                        median_ns: Spread::of(&medians),
                        effect: slowdown.map(|r| r.effect(MIN_EFFECT)),
                        slowdown,
                    }
                })
                .collect();
            let rate: Vec<f64> = at
                .iter()
                .zip(reps)
                .filter(|(l, _)| l.pollute_seconds > 0.0 && li > 0)
                .map(|(l, r)| (l.negatives - r.levels[li - 1].negatives) as f64 / l.pollute_seconds)
                .collect();
            LevelSummary {
                negatives: at[0].negatives,
                nr_dentry: spread(&|l| l.counts.dentry_state.nr_dentry as f64),
                nr_negative: spread(&|l| l.counts.dentry_state.nr_negative as f64),
                nr_negative_added: spread(&|l| l.nr_negative_added as f64),
                negatives_made: at[0].negatives_made,
                pollute_rate_per_second: (!rate.is_empty()).then(|| crate::stats::median(&rate)),
                probes,
            }
        })
        .collect()
}

/// `1.23× [1.10–1.37]`, or `1.23×` without an interval.
pub(crate) fn ratio_text(r: &Ratio) -> String {
    if r.ci_low.is_finite() && r.ci_high.is_finite() {
        format!("{:.2}× [{:.2}–{:.2}]", r.estimate, r.ci_low, r.ci_high)
    } else {
        format!("{:.2}×", r.estimate)
    }
}

pub(super) fn find(l: &LevelSummary, p: Probe) -> Option<&ProbeSummary> {
    l.probes.iter().find(|s| s.probe == p)
}

/// The plain-language findings: whether the report's effect shows, what
/// the report saw against what was measured here, the polluted directory
/// against another, a negative hit against a miss, and the witness.
pub(crate) fn summary_lines(levels: &[LevelSummary], shows: bool, reps: u32) -> Vec<String> {
    let Some(last) = levels.last().filter(|_| levels.len() > 1) else { return Vec::new() };
    let mut out: Vec<String> = [
        effect_line(levels, shows),
        reported_line(levels),
        directories_line(last),
        negative_line(&levels[0], last),
    ]
    .into_iter()
    .flatten()
    .collect();
    out.push(format!(
        "dentry-state witnessed the pollution: nr_negative grew by {} (median of {reps} repetition(s)) when {} \
         negative dentries had been made",
        human(last.nr_negative_added.median.max(0.0) as u64),
        human(last.negatives_made)
    ));
    out
}

/// Whether the report's effect shows: where hot lookups first got
/// measurably slower, or the largest change when none did.
fn effect_line(levels: &[LevelSummary], shows: bool) -> Option<String> {
    let last = levels.last()?;
    let hot: Vec<&ProbeSummary> = last.probes.iter().filter(|p| p.probe.is_hot()).collect();
    let worst = hot
        .iter()
        .filter(|p| p.slowdown.is_some())
        .max_by(|a, b| a.slowdown.unwrap().estimate.total_cmp(&b.slowdown.unwrap().estimate));
    let first_slow = levels.iter().skip(1).find_map(|l| {
        l.probes.iter().find(|p| p.probe.is_hot() && p.effect == Some(Effect::Slower)).map(|p| (l.negatives, p))
    });
    match (shows, first_slow, worst) {
        (true, Some((n, p)), Some(w)) => Some(format!(
            "the lookup-pollution report's effect shows on this kernel: hot lookups slow down as negative dentries pile up. First \
             measurable at {}: {} {} slower; at {}: {} {}",
            human(n),
            p.probe,
            ratio_text(&p.slowdown.unwrap()),
            human(last.negatives),
            w.probe,
            ratio_text(&w.slowdown.unwrap())
        )),
        (_, _, Some(w)) => {
            let small: Vec<String> = hot
                .iter()
                .filter(|p| p.effect == Some(Effect::Small))
                .map(|p| format!("{} {}", p.probe, ratio_text(&p.slowdown.unwrap())))
                .collect();
            Some(format!(
                "the lookup-pollution report's effect does not show on this kernel: no hot lookup is measurably slower (more than \
                 {:.0}% with 95% confidence) after up to {} negative dentries; the largest change is {} {}{}",
                MIN_EFFECT * 100.0,
                human(last.negatives),
                w.probe,
                ratio_text(&w.slowdown.unwrap()),
                if small.is_empty() {
                    String::new()
                } else {
                    format!(". A smaller slowdown is measurable at {}: {}", human(last.negatives), small.join(", "))
                }
            ))
        }
        _ => None,
    }
}

/// The report's own figure beside the hot lookups at its count.
fn reported_line(levels: &[LevelSummary]) -> Option<String> {
    let l = levels.iter().find(|l| l.negatives == REPORTED_NEGATIVES)?;
    let parts: Vec<String> = l
        .probes
        .iter()
        .filter(|p| p.probe.is_hot())
        .filter_map(|p| p.slowdown.map(|r| format!("{} {}", p.probe, ratio_text(&r))))
        .collect();
    Some(format!(
        "the lookup-pollution report saw about {:.1}× the kernel time of its hot loop after {} failed lookups; here after {}: {}",
        REPORTED_SLOWDOWN,
        human(REPORTED_NEGATIVES),
        human(REPORTED_NEGATIVES),
        parts.join(", ")
    ))
}

/// The polluted directory against another one, at the largest count.
fn directories_line(last: &LevelSummary) -> Option<String> {
    let pair = |a: Probe, b: Probe| -> Option<String> {
        let (x, y) = (find(last, a)?.slowdown?, find(last, b)?.slowdown?);
        let overlap = x.ci_low <= y.ci_high && y.ci_low <= x.ci_high;
        Some(format!(
            "{a} {} vs {b} {}{}",
            ratio_text(&x),
            ratio_text(&y),
            if !x.ci_low.is_finite() || !y.ci_low.is_finite() {
                ""
            } else if overlap {
                " (intervals overlap)"
            } else {
                " (intervals apart)"
            }
        ))
    };
    let pairs: Vec<String> = [pair(Probe::StatSame, Probe::StatOther), pair(Probe::OpenSame, Probe::OpenOther)]
        .into_iter()
        .flatten()
        .collect();
    (!pairs.is_empty()).then(|| {
        format!(
            "polluted directory vs another one at {}: {}; the dentry hash table is global, so a directory's own \
             negative dentries lengthen the same hash chains as anyone's",
            human(last.negatives),
            pairs.join("; ")
        )
    })
}

/// A hit on a cached negative dentry, unpolluted and at the largest count,
/// against a miss.
fn negative_line(base: &LevelSummary, last: &LevelSummary) -> Option<String> {
    let (h0, h1, m) = (find(base, Probe::NegativeHit)?, find(last, Probe::NegativeHit)?, find(last, Probe::NegativeMiss)?);
    Some(format!(
        "a lookup that hits a cached negative dentry takes {} (p50) unpolluted and {} at {}; a miss (a name \
         never looked up, answered by the filesystem) takes {}, {:.1}× a hit",
        crate::duration::nanos(h0.p50_ns),
        crate::duration::nanos(h1.p50_ns),
        human(last.negatives),
        crate::duration::nanos(m.p50_ns),
        m.p50_ns / h1.p50_ns
    ))
}
