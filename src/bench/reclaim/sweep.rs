//! One sweep ([`run`]), stage by stage: the notes it opens with, the plan
//! of each size (the next listed one, or `--sizes auto`'s next, and the
//! checks that may refuse it), that size's schedule of probed, unobserved,
//! unpinned and victim repetitions for every method ([`measure`] runs each),
//! the notes on what the repetitions counted, and the analysis into a
//! [`ReclaimResult`].
//!
//! The sweep reaches the kernel only through an [`Executor`] (hyperfine's
//! model): [`Kernel`], the real one, stages each repetition in the
//! sandbox, creates its dentries, probes its reclaim and counts
//! ([`measure::one_run`]); a test's executor can stand in for it, so that
//! the schedule, the repetitions, the analysis, the rendering and the JSON
//! run without root (`mock_sweep`, a unit test).

use anyhow::Result;

use super::schedule::{self, Slot};
use super::{
    analyse, analyse::fit_runs, auto, checks, measure, options::Options, pinning, profile, repetition::Run,
    repetition::Unobserved, result::ReclaimResult, result::Refusal, victims,
};
use crate::env::Environment;
use crate::probe::kmsg::KmsgWatch;
use crate::probe::victims::Database;
use crate::procfs::ProcRoot;
use crate::sandbox::{Privilege, Sandbox};
use crate::size::human;

/// What a sweep drives: the kernel's side of its repetitions (the sandbox,
/// the workload, the probes). [`Kernel`] is the real one.
pub(super) trait Executor {
    /// The notes on what this machine's probes leave out (/dev/kmsg).
    fn kernel_notes(&self) -> Vec<String>;
    /// Whether `--profile` can record here (why not, in `notes`).
    fn profiling(&mut self, opts: &Options, notes: &mut Vec<String>) -> bool;
    /// The sandbox's privilege, as the result records it.
    fn privilege(&self) -> Privilege;
    /// One repetition: stage, create, reclaim (probed or not), count.
    fn repetition(&mut self, opts: &Options, at: &measure::At) -> Result<Run>;
}

/// The real executor: the entered sandbox, the live /proc, the kernel log
/// watch, and the `mariadb` victim's server when it runs.
struct Kernel<'a> {
    sandbox: &'a mut Sandbox,
    proc: &'a ProcRoot,
    kmsg: KmsgWatch,
    db: Option<&'a Database>,
}

impl Executor for Kernel<'_> {
    fn kernel_notes(&self) -> Vec<String> {
        kmsg_notes(&self.kmsg)
    }

    fn profiling(&mut self, opts: &Options, notes: &mut Vec<String>) -> bool {
        profile::available(opts.profile, opts.cpu, self.sandbox.scratch(), notes)
    }

    fn privilege(&self) -> Privilege {
        self.sandbox.privilege
    }

    fn repetition(&mut self, opts: &Options, at: &measure::At) -> Result<Run> {
        measure::one_run(opts, self.sandbox, self.proc, &self.kmsg, at, self.db)
    }
}

/// Runs the sweep. The sandbox must already be entered; `db` is the
/// `mariadb` victim's server ([`super::victim_db`]), when it runs.
pub(crate) fn run(
    opts: &Options,
    sandbox: &mut Sandbox,
    proc: &ProcRoot,
    db: Option<&Database>,
) -> Result<ReclaimResult> {
    let mut kernel = Kernel { sandbox, proc, kmsg: KmsgWatch::start(Some(opts.cpu)), db };
    run_on(opts, proc, &mut kernel)
}

/// The sweep on `exec`; `proc` is what its checks and notes read (the
/// memory available, slabinfo, the environment).
pub(super) fn run_on(opts: &Options, proc: &ProcRoot, exec: &mut dyn Executor) -> Result<ReclaimResult> {
    // The header says when the run started, not when it ended.
    let header = crate::result::Header::new("reclaim");
    let environment = Environment::capture(proc);
    let mut notes = opening_notes(opts, proc, exec.kernel_notes());
    let profiling = exec.profiling(opts, &mut notes);
    notes.push(format!("probes: {} ({})", opts.probe_policy.describe(), opts.probe_policy_why));
    let with = With { opts, profiling };
    let mut g = Gathered::default();
    while let Some(target) = g.next_size(opts, proc)? {
        g.size(&with, exec, target)?;
    }
    notes.extend(count_notes(opts, &g.runs));
    let Gathered { runs, unobserved, unpinned, victim_runs, refused, bpd_measured, ran, auto_stop } = g;
    let auto = auto_stop.map(|(stopped_by, reason)| auto::Outcome { sizes: ran.clone(), stopped_by, reason });
    if let Some(a) = &auto {
        notes.push(a.line());
        eprintln!("dentrylab: {}", a.line());
    }
    let opts = &if opts.auto.is_some() { Options { sizes: ran, ..opts.clone() } } else { opts.clone() };
    let sizes = analyse::summarise(&runs, &unobserved, &unpinned, opts);
    let per_method = analyse::per_method(&runs, &unobserved, &sizes, opts, &environment);
    let comparison = analyse::compare(&per_method, &sizes);
    let (fits, verdict) =
        per_method.first().map(|m| (m.fits.clone(), m.verdict.clone())).unwrap_or_else(|| (fit_runs(&[], &[], &environment.kernel), None));
    let probe_overhead = analyse::overhead(&runs, &unobserved);
    let pinning_cost = pinning::cost(&unobserved, &unpinned);
    let deadlines = super::deadline_keys::deadlines(&environment, proc);
    let victims = victims::analyse(&victim_runs, &sizes, fits.gap_governing(), &deadlines);
    Ok(ReclaimResult {
        header,
        environment,
        options: opts.clone(),
        sandbox: exec.privilege(),
        runs,
        unobserved,
        unpinned,
        sizes,
        probe_overhead,
        pinning_cost,
        fits,
        verdict,
        per_method,
        comparison,
        bytes_per_dentry: bpd_measured.unwrap_or(f64::NAN),
        refused,
        notes,
        watchdog: None,
        auto,
        watchdog_more: Vec::new(),
        victim_runs,
        victims,
    })
}

/// What the kernel log watch leaves out.
fn kmsg_notes(kmsg: &KmsgWatch) -> Vec<String> {
    let mut notes = Vec::new();
    match (&kmsg.unavailable, kmsg.offset_ns()) {
        (Some(why), _) => notes.push(why.clone()),
        (None, None) => notes.push(format!(
            "/dev/kmsg is not writable: the kernel clock's offset was not measured, so kernel messages are matched \
             to reclaims with {} ms of slack",
            crate::probe::kmsg::WINDOW_SLACK.as_millis()
        )),
        _ => {}
    }
    notes
}

/// The notes a sweep opens with: what this machine (`kernel`: its
/// executor's notes), or these options, leave out of it.
fn opening_notes(opts: &Options, proc: &ProcRoot, kernel: Vec<String>) -> Vec<String> {
    let mut notes = kernel;
    if proc.slab_dentry().is_none() {
        notes.push("/proc/slabinfo is not readable: counts come from dentry-state only".into());
    }
    if opts.control_cpu.is_none() {
        notes.push("only one CPU is available: no control probe".into());
    }
    notes.extend(checks::method_notes(opts));
    if let Some(why) = &opts.victims_skipped {
        eprintln!("dentrylab: {why}");
        notes.push(why.clone());
    }
    if opts.unobserved_reps == 0 {
        notes.push("no unobserved repetitions (--unobserved-reps 0): the times include the probe's cost".into());
    }
    notes
}

/// What every repetition of the sweep runs with.
struct With<'a> {
    opts: &'a Options,
    /// `--profile`, and perf can record here.
    profiling: bool,
}

/// What the sweep has gathered so far.
#[derive(Default)]
struct Gathered {
    runs: Vec<Run>,
    unobserved: Vec<Unobserved>,
    unpinned: Vec<Unobserved>,
    victim_runs: Vec<victims::VictimRun>,
    refused: Vec<Refusal>,
    /// The first repetition's bytes per dentry (what the checks plan with).
    bpd_measured: Option<f64>,
    /// The sizes that ran, in order.
    ran: Vec<u64>,
    /// What stopped an auto sweep.
    auto_stop: Option<(auto::StoppedBy, String)>,
}

impl Gathered {
    /// The size to run next: the next listed one, or `--sizes auto`'s next
    /// from what ran. `None` when the sweep is done: the list has run out,
    /// the auto sweep stopped, or the checks refused the size (recorded).
    fn next_size(&mut self, opts: &Options, proc: &ProcRoot) -> Result<Option<u64>> {
        let target = match opts.auto {
            None => match opts.sizes.get(self.ran.len()) {
                Some(&t) => t,
                None => return Ok(None),
            },
            Some(a) => {
                let last = self.ran.last().map(|&t| (t, auto::median_gap(&self.runs, t)));
                match auto::next(last, checks::memory_limit(opts, self.bpd_measured, proc)?, a.cap) {
                    Ok(t) => t,
                    Err(stop) => {
                        self.auto_stop = Some(stop);
                        return Ok(None);
                    }
                }
            }
        };
        if let Some(reason) = checks::refuse(opts, target, self.bpd_measured, &self.runs, proc)? {
            if opts.auto.is_some() {
                // An auto sweep stopped by the checks is done, not failed.
                self.auto_stop = Some((auto::StoppedBy::SafetyCheck, format!("size {}: {reason}", human(target))));
                return Ok(None);
            }
            eprintln!("dentrylab: refusing size {}: {reason}", human(target));
            self.refused.push(Refusal { target, reason });
            return Ok(None);
        }
        self.ran.push(target);
        Ok(Some(target))
    }

    /// Every method's repetitions of one size, in the schedule's order.
    fn size(&mut self, with: &With<'_>, exec: &mut dyn Executor, target: u64) -> Result<()> {
        let opts = with.opts;
        let schedule = schedule::Schedule::of(&schedule::Counts {
            probed: opts.reps,
            unobserved: opts.unobserved_reps,
            unpinned: opts.unpinned_reps,
            victims: if opts.victims.is_empty() { 0 } else { opts.reps },
            contention: if opts.contend > 0 { vec![0, opts.contend] } else { vec![0] },
        });
        for &method in &opts.methods {
            for &(rep, slot) in schedule.slots() {
                let profile = with.profiling && slot == Slot::Probed { contenders: 0 };
                let at = measure::At { target, rep, method, slot, profile };
                let r = exec.repetition(opts, &at)?;
                self.keep(r, slot);
            }
        }
        Ok(())
    }

    /// One repetition, said on a terminal and kept by its slot.
    fn keep(&mut self, r: Run, slot: Slot) {
        if self.bpd_measured.is_none() && r.bytes_per_dentry.is_finite() && r.bytes_per_dentry > 0.0 {
            self.bpd_measured = Some(r.bytes_per_dentry);
        }
        measure::report_progress(&r, slot.observed());
        match slot {
            Slot::Probed { .. } => self.runs.push(r),
            Slot::Unobserved { pinned: true } => self.unobserved.push(Unobserved::of(&r)),
            Slot::Unobserved { pinned: false } => self.unpinned.push(Unobserved::of(&r)),
            Slot::Victims => self.victim_runs.extend(victims::VictimRun::of(&r)),
        }
    }
}

/// What the probed repetitions' counts say about the sweep: an overlay's
/// reclaim that freed few of the dentries made through it, walks that
/// freed none, runs charged with their target instead of the counter's move.
fn count_notes(opts: &Options, runs: &[Run]) -> Vec<String> {
    let mut notes = Vec::new();
    if opts.overlay.is_some() {
        // Through an overlay most of the workload's dentries live in the
        // upper and lower filesystems, which the overlay's reclaim does not
        // touch: a small count here is the overlay, not other activity.
        let mut seen = std::collections::BTreeSet::new();
        for r in runs.iter().filter(|r| r.freed.max(0) as u64 * 2 < r.target && seen.insert(r.target)) {
            notes.push(format!(
                "size {}: the overlay's reclaim freed {} dentries of the {} made through it; the rest stayed in the \
                 upper and lower filesystems (the layers table counts them), so the fits are of the overlay's own \
                 reclaim",
                human(r.target),
                r.freed,
                human(r.target)
            ));
        }
    }
    notes.extend(checks::walk_notes(runs));
    for r in
        runs.iter().filter(|r| opts.overlay.is_none() && r.method.frees() && r.fit_count() != r.freed.max(1) as f64)
    {
        notes.push(format!(
            "size {} rep {}: the {} counter moved by {} instead of about {} (other activity on the machine); \
             this run is counted at its target",
            human(r.target),
            r.rep + 1,
            r.witness,
            r.freed,
            r.target
        ));
    }
    notes
}
