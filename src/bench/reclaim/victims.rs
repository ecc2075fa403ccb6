//! `reclaim --victims`: what the node's other tasks wait for while the
//! reclaim holds its CPU, and the first deadline of the node they miss.
//!
//! Victim repetitions are slots of their own in the [`super::schedule`]:
//! the reclaim runs pinned with no probe beside it, and the victims
//! ([`crate::probe::victims`]) run on the other CPUs, from
//! [`CONTROL_WINDOW`] before the reclaim (their control) to its end. Each
//! victim's figure is its longest call that overlaps the reclaim, next to
//! the size's longest stretch (from the probed repetitions); the fits of
//! those waits against the count give, for each deadline a node has, the
//! smallest count at which some victim misses it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{methods::Method, repetition::Run, summary::SizeSummary};
use crate::analysis::interval::SizeValues;
use crate::analysis::linearity::Shape;
use crate::analysis::victims::{self, CallStats, Deadline, Incident, WaitFit, Watches};
use crate::probe::victims::{Record, Victim};
use crate::stats::{Spread, median};

/// How long the victims run before the reclaim: their control.
pub(crate) const CONTROL_WINDOW: Duration = Duration::from_secs(1);

/// What the victims recorded in one repetition (a repetition's own record).
pub(crate) use super::repetition::Observed;

/// One victim in one repetition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Outcome {
    pub victim: Victim,
    /// Its calls that overlapped the reclaim.
    pub during: CallStats,
    /// Its calls in the [`CONTROL_WINDOW`] before the reclaim.
    pub outside: CallStats,
    /// When its longest call during the reclaim started, seconds after the
    /// reclaim did (negative: before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_started_seconds: Option<f64>,
    /// The function its longest call waited in, from the kernel stacks
    /// sampled during that call (the most frequent), and that stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits_in: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
    /// Stacks sampled during the longest call.
    pub stack_samples: usize,
    /// The longest call's steps (the `pod-start` victim's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<crate::probe::victims::StepTime>,
    /// The error that stopped it, as the kernel reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Outcome {
    fn of(r: &Record, start_ns: u64, end_ns: u64) -> Outcome {
        let longest = victims::longest_during(&r.calls, start_ns, end_ns);
        let in_longest: Vec<&Vec<String>> = longest
            .map(|c| {
                r.samples.iter().filter(|s| s.at_ns >= c.start_ns && s.at_ns <= c.end_ns()).map(|s| &s.frames).collect()
            })
            .unwrap_or_default();
        let stack = most_frequent(&in_longest);
        Outcome {
            victim: r.victim,
            during: CallStats::during(&r.calls, start_ns, end_ns),
            outside: CallStats::before(&r.calls, start_ns),
            longest_started_seconds: longest.map(|c| (c.start_ns as f64 - start_ns as f64) / 1e9),
            waits_in: stack.as_deref().and_then(crate::procfs::stack::waits_in),
            stack: stack.unwrap_or_default(),
            stack_samples: in_longest.len(),
            steps: crate::probe::victims::steps_of(r, longest),
            error: r.error.clone(),
        }
    }
}

fn most_frequent(stacks: &[&Vec<String>]) -> Option<Vec<String>> {
    let mut counts: std::collections::BTreeMap<&Vec<String>, usize> = std::collections::BTreeMap::new();
    for s in stacks {
        *counts.entry(s).or_default() += 1;
    }
    counts.into_iter().max_by_key(|(_, n)| *n).map(|(s, _)| s.clone())
}

/// A victim repetition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct VictimRun {
    pub target: u64,
    pub rep: u32,
    pub method: Method,
    pub reclaim_seconds: f64,
    pub victims: Vec<Outcome>,
}

impl VictimRun {
    pub(crate) fn of(r: &Run) -> Option<VictimRun> {
        let o = r.victims.as_ref()?;
        Some(VictimRun {
            target: r.target,
            rep: r.rep,
            method: r.method,
            reclaim_seconds: r.reclaim_seconds,
            victims: o.records.iter().map(|rec| Outcome::of(rec, o.start_ns, o.end_ns)).collect(),
        })
    }
}

/// One victim at one size, over its repetitions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct VictimSize {
    pub victim: Victim,
    pub target: u64,
    pub method: Method,
    /// The longest call during the reclaim, over the repetitions.
    pub longest_seconds: Spread,
    /// Median p99 and rate during the reclaim.
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub p99_seconds: f64,
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub per_second: f64,
    /// The same outside the reclaim (the control window; NaN, saved as
    /// null, when no call ended in it).
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub outside_longest_seconds: f64,
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub outside_p99_seconds: f64,
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub outside_per_second: f64,
    /// Median longest call ÷ the size's median longest stretch (probed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of_stretch: Option<f64>,
    /// Where the longest call of all waited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits_in: Option<String>,
    /// The step of that call that took longest (the `pod-start` victim's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowest_step: Option<String>,
}

/// The victims' part of a result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Analysis {
    pub sizes: Vec<VictimSize>,
    /// Each victim's longest wait against the count (power law, with its
    /// 90% band), and the reclaiming CPU's longest stretch.
    pub fits: Vec<WaitFit>,
    /// The victims whose calls do not wait for the reclaim (not fitted).
    #[serde(default)]
    pub unaffected: Vec<Unaffected>,
    /// The victims none of whose calls overlapped a reclaim, with the
    /// first error their calls met: not measured, never "not waiting".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<Unaffected>,
    pub incidents: Vec<Incident>,
    /// For every method and victim: whether that reclaim path stalls it
    /// (judged as [`Analysis::unaffected`] is; fits and deadlines are the
    /// first method's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls: Vec<Stall>,
}

/// Whether one reclaim path stalls one victim, and if not, why not.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Stall {
    pub method: Method,
    pub victim: Victim,
    pub waits: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A victim that does not wait for the reclaim, and how that was judged.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Unaffected {
    pub victim: Victim,
    pub why: String,
}

/// A victim's longest call at the largest size must exceed its own
/// longest call outside the reclaim by this factor to count as waiting.
pub(crate) const WAIT_FACTOR: f64 = 2.0;

/// What the data say of one victim.
#[derive(Debug, Clone, PartialEq)]
enum Judged {
    /// It waits, and its wait grows with the count.
    Waits,
    /// It waits, but the data cannot exclude that the wait grows, nor show
    /// it: kept with its upper fit, never called unaffected.
    MayWait(String),
    /// Its calls during the reclaim are within what they take without one.
    Unaffected(String),
}

/// Why a victim was not measured.
const NO_CALL: &str = "no call overlapped a reclaim";

/// Whether a victim waits for the reclaim: its longest call during the
/// reclaim at the largest size must be [`WAIT_FACTOR`]× its longest
/// outside, taken over every size's control window (the median of all of
/// them: one 1 s window is few calls), else it is unaffected; a wait that
/// clears its control grows with the count when the fit's exponent's 90%
/// interval lies above 0, and may grow (kept, with its upper fit) when it
/// does not: the safe side, as the stretch's fit falls back to the wider
/// model when a run cannot test.
fn judge(fit: Option<&crate::analysis::fit::PowerFit>, last: Option<&VictimSize>, controls: &[f64]) -> Judged {
    let Some(last) = last else { return Judged::Unaffected(NO_CALL.into()) };
    let controls: Vec<f64> = controls.iter().copied().filter(|c| c.is_finite()).collect();
    let outside = if controls.is_empty() { last.outside_longest_seconds } else { median(&controls) };
    let during = last.longest_seconds.median;
    let clear = during > WAIT_FACTOR * outside;
    if !clear {
        return Judged::Unaffected(format!(
            "at {} its longest call during the reclaim ({}) is not {WAIT_FACTOR}× its longest outside ({}, the \
             median over {} control windows)",
            crate::size::human(last.target),
            crate::duration::secs(during),
            crate::duration::secs(outside),
            controls.len()
        ));
    }
    // One size: nothing to judge the growth by; the table still shows it.
    let Some(fit) = fit else { return Judged::Waits };
    let Some(band) = fit.band else {
        return Judged::MayWait(format!(
            "too few calls to tell whether its wait grows with the count (exponent {:.2}, no interval)",
            fit.exponent
        ));
    };
    let e = band.exponent(fit);
    if e.low > 0.0 {
        return Judged::Waits;
    }
    Judged::MayWait(format!(
        "it may wait: its wait is not shown to grow with the count, nor to stay flat (exponent {:.2}, 90% \
         interval {:.2} to {}); its upper fit is kept",
        fit.exponent,
        e.low,
        e.high.map_or("unbounded".into(), |h| format!("{h:.2}"))
    ))
}

impl Analysis {
    pub(crate) fn first(&self) -> Option<&Incident> {
        victims::first(&self.incidents)
    }
}

/// One victim at every size of one method: its rows, and its longest
/// waits by count (for the fit).
fn rows_of(runs: &[VictimRun], sizes: &[SizeSummary], method: Method, v: Victim) -> Rows {
    let mut targets: Vec<u64> = runs.iter().filter(|r| r.method == method).map(|r| r.target).collect();
    targets.dedup();
    let (mut rows, mut points, mut controls) = (Vec::new(), Vec::new(), Vec::new());
    for &t in &targets {
        let of: Vec<&Outcome> = runs
            .iter()
            .filter(|r| r.target == t && r.method == method)
            .flat_map(|r| r.victims.iter().filter(|o| o.victim == v && o.during.calls > 0))
            .collect();
        if of.is_empty() {
            continue;
        }
        let m = |f: &dyn Fn(&Outcome) -> f64| median(&of.iter().map(|o| f(o)).collect::<Vec<_>>());
        controls.extend(of.iter().map(|o| o.outside.longest_seconds));
        let longest: Vec<f64> = of.iter().map(|o| o.during.longest_seconds).collect();
        let stretch = sizes.iter().find(|s| s.target == t && s.method == method && s.contenders == 0);
        let spread = Spread::of(&longest);
        let worst = of.iter().max_by(|a, b| a.during.longest_seconds.total_cmp(&b.during.longest_seconds));
        rows.push(VictimSize {
            victim: v,
            target: t,
            method,
            longest_seconds: spread,
            p99_seconds: m(&|o| o.during.p99_seconds),
            per_second: m(&|o| o.during.per_second),
            outside_longest_seconds: m(&|o| o.outside.longest_seconds),
            outside_p99_seconds: m(&|o| o.outside.p99_seconds),
            outside_per_second: m(&|o| o.outside.per_second),
            of_stretch: stretch.map(|s| spread.median / s.max_gap_seconds.median).filter(|x| x.is_finite()),
            waits_in: worst.and_then(|o| o.waits_in.clone()),
            slowest_step: worst.and_then(|o| crate::probe::victims::slowest(&o.steps)).map(|s| s.step.clone()),
        });
        points.push(SizeValues { count: t as f64, values: longest });
    }
    (rows, points, controls)
}

/// One victim's rows, its longest waits by count, and every control
/// window's longest call.
type Rows = (Vec<VictimSize>, Vec<SizeValues>, Vec<f64>);

/// Summarises the victim repetitions: rows and a stall judgement for
/// every method, fits and deadlines for the first (the verdict's); `gap`
/// is the reclaiming CPU's governing stretch fit (the verdict's).
pub(crate) fn analyse(
    runs: &[VictimRun],
    sizes: &[SizeSummary],
    gap: Option<crate::analysis::fit::PowerFit>,
    deadlines: &[Deadline],
) -> Option<Analysis> {
    let first = runs.first()?.method;
    let mut methods: Vec<Method> = Vec::new();
    for r in runs {
        if !methods.contains(&r.method) {
            methods.push(r.method);
        }
    }
    let mut kinds: Vec<Victim> = runs.iter().flat_map(|r| r.victims.iter().map(|o| o.victim)).collect();
    kinds.sort();
    kinds.dedup();
    let (mut out, mut fits, mut unaffected, mut stalls) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut failed = Vec::new();
    for &method in &methods {
        for &v in &kinds {
            let (rows, points, controls) = rows_of(runs, sizes, method, v);
            if rows.is_empty() && method == first {
                // Nothing measured: say why, and judge no deadline by it.
                let error = runs.iter().flat_map(|r| &r.victims).find_map(|o| o.error.clone().filter(|_| o.victim == v));
                let why = error.map_or_else(|| NO_CALL.to_string(), |e| format!("{NO_CALL}: {e}"));
                failed.push(Unaffected { victim: v, why });
                continue;
            }
            // The reclaim's own machinery: c·N unless the waits reject it,
            // with the victims' own run scatter carried into the band.
            let model = crate::analysis::linearity::choose(&points, crate::analysis::run_scatter::VICTIM);
            let judged = judge(model.as_ref().and_then(|m| m.power).as_ref(), rows.last(), &controls);
            let why = match &judged {
                Judged::Waits => None,
                Judged::MayWait(w) | Judged::Unaffected(w) => Some(w.clone()),
            };
            let waits = !matches!(judged, Judged::Unaffected(_));
            stalls.push(Stall { method, victim: v, waits, why });
            out.extend(rows);
            if method != first {
                continue;
            }
            match judged {
                Judged::Waits | Judged::MayWait(_) => {
                    let may_wait = match &judged {
                        Judged::MayWait(w) => Some(w.clone()),
                        Judged::Waits | Judged::Unaffected(_) => None,
                    };
                    // A victim that may wait is fitted by the model that
                    // governs an untestable run: the power law, whose upper
                    // edge is what it is judged by.
                    let fit = model.and_then(|m| {
                        let f = if may_wait.is_some() { m.power.or(m.governing()) } else { m.governing() };
                        f.map(|f| (f, if may_wait.is_some() && m.power.is_some() { Shape::PowerLaw } else { m.test.governs }))
                    });
                    fits.extend(fit.map(|(fit, shape)| WaitFit {
                        who: v.name().into(),
                        watches: Watches::Victims,
                        fit,
                        shape: Some(shape),
                        may_wait: may_wait.clone(),
                    }));
                }
                Judged::Unaffected(why) => unaffected.push(Unaffected { victim: v, why }),
            }
        }
    }
    if let Some(fit) = gap {
        fits.push(WaitFit {
            who: "reclaiming CPU".into(),
            watches: Watches::ReclaimingCpu,
            fit,
            shape: None,
            may_wait: None,
        });
    }
    let incidents = super::deadline_keys::incidents(deadlines, &fits);
    Some(Analysis { sizes: out, fits, unaffected, failed, incidents, stalls })
}

/// Starts the victims of `--victims` on every allowed CPU but the
/// reclaiming one; the `cgroup` victim's cgroup is named for the cgroup
/// guardian (the handler starts it when that victim is asked for), and the
/// `mariadb` victim queries `db` (the sweep's server, [`super::victim_db`]).
pub(crate) fn start(
    opts: &super::options::Options,
    sandbox: &crate::sandbox::Sandbox,
    db: Option<&crate::probe::victims::Database>,
) -> anyhow::Result<crate::probe::victims::Victims> {
    let cpus: Vec<usize> = crate::sys::allowed_cpus()?.into_iter().filter(|&c| c != opts.cpu).collect();
    let cgroup = if opts.victims.contains(&Victim::Cgroup) {
        Some(sandbox.victim_cgroup()?)
    } else {
        sandbox.victim_cgroup().ok().filter(|_| opts.victims.contains(&Victim::PodStart))
    };
    let container = if opts.victims.contains(&Victim::Container) {
        Some(container_run(sandbox.scratch().join("victim-container"))?)
    } else {
        None
    };
    let mariadb = match (opts.victims.contains(&Victim::Mariadb), db) {
        (true, None) => anyhow::bail!("internal error: the mariadb victim's server was not started"),
        (_, db) => db.cloned(),
    };
    let places = crate::probe::victims::Places { scratch: sandbox.scratch().to_path_buf(), cgroup, container, mariadb };
    crate::probe::victims::Victims::start(&opts.victims, &cpus, &places)
}

/// The `container` victim's call: `runsc run` of /bin/true in a bundle of
/// the gvisor benchmark's shape (root the host's `/`, no network, no
/// cgroups), one container id per call, from sandbox start to exit.
fn container_run(scratch: std::path::PathBuf) -> anyhow::Result<crate::probe::victims::ContainerRun> {
    use anyhow::Context;
    let runsc = crate::bench::common::runsc::find(None)?;
    let volume = scratch.join("volume");
    std::fs::create_dir_all(&volume).with_context(|| format!("cannot make {}", volume.display()))?;
    let n = std::sync::atomic::AtomicU64::new(0);
    let call: crate::probe::victims::ContainerRun = std::sync::Arc::new(move || {
        let id =
            format!("dentrylab-victim-{}-{}", std::process::id(), n.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let run = crate::bench::common::runsc::Run {
            runsc: &runsc,
            dcache: crate::bench::common::runsc::Dcache::PerMount,
            scratch: &scratch,
            volume: &volume,
            id,
            extra_flags: &[],
        };
        crate::bench::common::runsc::run(&run, &["/bin/true".to_string()]).map(|_| ())
    });
    // A first run reads runsc from disk (seconds when the page cache is
    // cold): once here, so the control window does not time it.
    call().context("a first runsc run, before the victims start")?;
    Ok(call)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn stats(calls: usize, longest: f64) -> CallStats {
        CallStats { calls, longest_seconds: longest, p50_seconds: 0.001, p99_seconds: longest, per_second: 100.0 }
    }

    /// `umount` waits 100 ms per million dentries under one path and not
    /// under the other; `stat` waits under neither.
    fn run(method: &str, target: u64, rep: u32) -> VictimRun {
        let method: Method = method.parse().unwrap();
        let grows = method.name() == "umount";
        let outcome = |victim, during: f64| Outcome {
            victim,
            during: stats(10, during),
            outside: stats(200, 0.002),
            longest_started_seconds: None,
            waits_in: None,
            stack: Vec::new(),
            stack_samples: 0,
            steps: Vec::new(),
            error: None,
        };
        let wait = if grows { 0.1 * target as f64 / 1e6 * (1.0 + 0.01 * rep as f64) } else { 0.002 };
        VictimRun {
            target,
            rep,
            method,
            reclaim_seconds: 1.0,
            victims: vec![outcome(Victim::Umount, wait), outcome(Victim::Stat, 0.0021)],
        }
    }

    /// Victims under two reclaim paths, umount and ns-exit, at 1M–4M.
    pub(crate) fn two_methods() -> Analysis {
        let mut runs = Vec::new();
        for method in ["umount", "ns-exit"] {
            for target in [1_000_000, 2_000_000, 4_000_000] {
                runs.extend((0..3).map(|rep| run(method, target, rep)));
            }
        }
        analyse(&runs, &[], None, &[]).unwrap()
    }

    /// One victim at 1M–4M × 3 with the waits `during(target, rep)` and
    /// the control windows' longest calls `outside(target, rep)`.
    fn one(victim: Victim, during: &dyn Fn(u64, u32) -> f64, outside: &dyn Fn(u64, u32) -> f64) -> Analysis {
        let mut runs = Vec::new();
        for target in [1_000_000, 2_000_000, 4_000_000] {
            for rep in 0..3 {
                let mut r = run("umount", target, rep);
                r.victims.truncate(1);
                r.victims[0].victim = victim;
                r.victims[0].during = stats(10, during(target, rep));
                r.victims[0].outside = stats(200, outside(target, rep));
                runs.push(r);
            }
        }
        analyse(&runs, &[], None, &[]).unwrap()
    }

    /// A victim whose every call failed measured nothing: it is named with
    /// its error as failed, never "not waiting", and judges no deadline.
    #[test]
    fn a_victim_whose_calls_all_failed_is_failed_not_unaffected() {
        let mut runs = Vec::new();
        for target in [1_000_000, 2_000_000] {
            let mut r = run("umount", target, 0);
            r.victims.truncate(1);
            r.victims[0].victim = Victim::PodStart;
            r.victims[0].during = stats(0, 0.0);
            r.victims[0].error = Some("pod-start step 'cgroup mkdir': File exists (os error 17)".into());
            runs.push(r);
        }
        let a = analyse(&runs, &[], None, &[]).unwrap();
        assert!(a.unaffected.is_empty() && a.fits.is_empty(), "{a:?}");
        assert_eq!(a.failed.len(), 1, "{a:?}");
        assert_eq!(a.failed[0].victim, Victim::PodStart);
        assert!(a.failed[0].why.contains("no call overlapped a reclaim: pod-start step"), "{}", a.failed[0].why);
    }

    /// A wait clear of its control whose growth the data can neither show
    /// nor exclude (flat on average, scattered) may wait: it is fitted and
    /// kept with its upper fit, never called unaffected.
    #[test]
    fn a_wait_whose_growth_cannot_be_excluded_may_wait() {
        let a = one(Victim::Netns, &|_, rep| [0.03, 0.09, 0.05][rep as usize], &|_, _| 0.002);
        assert!(a.unaffected.is_empty(), "{:?}", a.unaffected);
        let f = a.fits.iter().find(|f| f.who == "netns").unwrap();
        let why = f.may_wait.as_deref().unwrap();
        assert!(why.contains("may wait") && why.contains("upper fit"), "{why}");
        assert!(a.stalls[0].waits && a.stalls[0].why.as_deref() == Some(why));
        // Growing clearly: it waits, without the caveat.
        let g = one(Victim::Umount, &|t, rep| 0.1 * t as f64 / 1e6 * (1.0 + 0.01 * rep as f64), &|_, _| 0.002);
        assert!(g.fits[0].may_wait.is_none(), "{:?}", g.fits[0]);
    }

    /// The control is every size's window, not the largest size's one:
    /// an unlucky long call in the last size's windows does not make a
    /// growing wait unaffected.
    #[test]
    fn the_growth_gate_uses_every_sizes_control_window() {
        let a = one(
            Victim::Umount,
            &|t, rep| 0.1 * t as f64 / 1e6 * (1.0 + 0.01 * rep as f64),
            &|t, _| if t == 4_000_000 { 0.3 } else { 0.002 },
        );
        assert!(a.unaffected.is_empty(), "{:?}", a.unaffected);
        assert_eq!(a.fits.iter().map(|f| f.who.as_str()).collect::<Vec<_>>(), ["umount"]);
        // Within 2× of what the call takes without a reclaim at every size: unaffected.
        let b = one(Victim::Stat, &|_, _| 0.003, &|_, _| 0.002);
        assert_eq!(b.unaffected.len(), 1);
        assert!(b.unaffected[0].why.contains("median over 9 control windows"), "{}", b.unaffected[0].why);
    }

    #[test]
    fn every_method_is_judged_and_only_the_first_is_fitted() {
        let a = two_methods();
        let judged = |m: &str, v: Victim| a.stalls.iter().find(|s| s.method.name() == m && s.victim == v).unwrap();
        assert!(judged("umount", Victim::Umount).waits);
        assert!(!judged("umount", Victim::Stat).waits);
        assert!(!judged("ns-exit", Victim::Umount).waits, "{:?}", judged("ns-exit", Victim::Umount));
        assert!(judged("ns-exit", Victim::Umount).why.as_deref().is_some_and(|w| w.contains("2×")));
        assert_eq!(a.stalls.len(), 4);
        assert_eq!(a.sizes.iter().filter(|s| s.method.name() == "ns-exit").count(), 6, "rows for both methods");
        assert_eq!(a.fits.iter().map(|f| f.who.as_str()).collect::<Vec<_>>(), ["umount"], "the first method's fit");
        assert_eq!(a.unaffected.iter().map(|u| u.victim).collect::<Vec<_>>(), [Victim::Stat]);
    }
}
