//! `dentrylab reclaim` as a [`Benchmark`]: its command line, and the steps
//! the generic handler runs: check, (outputs opened), start the guardians,
//! enter the sandbox, sweep (once per `--watchdog-thresh`), (results
//! written), save the calibration.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use super::{options::Options, result::ReclaimResult};
use crate::bench::common::{self, Benchmark, Context, OutputPaths};
use crate::output::{OutputArgs, Paths};
use crate::probe::victims::Victim;
use crate::sandbox::{self, Sandbox};
use crate::size;
use crate::state;

/// `reclaim`: the benchmark's own options ([`super::args::Args`]) and the output
/// files: the JSON, a Markdown section, a full report.
#[derive(Debug, clap::Args)]
pub(crate) struct CommandArgs {
    #[command(flatten)]
    pub reclaim: super::args::Args,
    /// Also write a Markdown report section to FILE.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Also write the full report (report.md and SVG plots, as 'dentrylab report' does) into DIR, created if needed.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl OutputPaths for CommandArgs {
    fn output_paths(&self) -> Paths {
        Paths { json: self.output.json.clone(), markdown: self.markdown.clone(), report: self.report.clone() }
    }
}

/// The sweep: create, reclaim, time and probe, fit, extrapolate, verdict.
pub(crate) struct Reclaim;

/// What the sweep runs with, and where its calibration goes.
pub(crate) struct Plan {
    args: super::args::Args,
    opts: Options,
    state: Option<state::StateDir>,
}

impl Benchmark for Reclaim {
    type Args = CommandArgs;
    type Plan = Plan;
    type Result = ReclaimResult;

    const ABOUT: &'static str =
        "Sweep sizes: create dentries, reclaim them, time and probe the reclaim, fit, extrapolate, verdict";
    const DISPLAY_ORDER: usize = 0;
    const INTERNAL: &'static [&'static dyn crate::sys::internal::InternalCommand] =
        &[&super::child::CHILD_ENTRY, &super::fit_waits::FIT_WAITS_ENTRY];

    fn plan(a: Self::Args, cx: &Context) -> Result<Plan> {
        let (cpu, control_cpu) = common::choose_cpus(a.reclaim.cpu)?;
        // Every usage error (exit 2) before any output file or directory is made.
        let opts = a.reclaim.options(crate::env::cpus(), cpu, control_cpu)?;
        super::checks::validate(&opts)?;
        common::preflight(&opts.sizes, opts.kind, opts.force, cx.proc)?;
        if opts.census {
            // Where the census cannot run: its one line, before any work.
            crate::census::available(&crate::census::Source::of(cx.proc), cx.proc)?;
        }
        Ok(Plan { args: a.reclaim, opts, state: None })
    }

    fn run(plan: &mut Plan, cx: &Context, _announce: &dyn Fn(&str)) -> Result<ReclaimResult> {
        let a = &plan.args;
        plan.state = match (a.no_save, &a.state_dir) {
            (true, _) => None,
            // A directory the user named must work.
            (false, Some(dir)) => Some(state::StateDir::open(dir)?),
            // The default one may not (no home, read-only): say so and go on.
            (false, None) => match state::StateDir::open(&state::default_dir()) {
                Ok(s) => Some(s),
                Err(e) => {
                    eprintln!("dentrylab: warning: the calibration will not be saved: {e:#} (use --state-dir DIR)");
                    None
                }
            },
        };
        sweep(&plan.opts, a, cx)
    }

    fn finish(plan: Plan, result: &ReclaimResult) -> Result<ExitCode> {
        if let (Some(st), Some(cal)) = (&plan.state, result.calibration()) {
            let p = st.save(&cal)?;
            eprintln!("calibration saved to {}", p.display());
        }
        if let Some(r) = result.refused.first() {
            anyhow::bail!("stopped before size {}: {}", size::human(r.target), r.reason);
        }
        if let Some(n) = result.runs.iter().filter_map(|r| r.census.as_ref()).find(|n| !n.ok) {
            anyhow::bail!("{}", n.line());
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// The guardians, the sandbox, and the sweep once per `--watchdog-thresh`
/// (once without `--watchdog-check`).
fn sweep(opts: &Options, a: &super::args::Args, cx: &Context) -> Result<ReclaimResult> {
    // Both guardians are copies of dentrylab started outside the sandbox
    // (sys::guardian): they clean up when it ends, however it ends.
    // The pod-start victim makes its cgroups where the guardian can start;
    // where it cannot, it runs without them (its steps say so).
    let guardian = if opts.methods.iter().any(|m| m.about().uses_memcg)
        || opts.victims.iter().any(|v| matches!(v, Victim::Cgroup | Victim::Mariadb))
    {
        Some(sandbox::cgroup::Guardian::start(cx.proc)?)
    } else if opts.victims.contains(&Victim::PodStart) {
        sandbox::cgroup::Guardian::start(cx.proc).ok()
    } else {
        None
    };
    // With --watchdog-check, one sweep per threshold: lowered (and guarded:
    // the guardian puts the original back however the run ends) before
    // the sandbox, set to each threshold in turn, restored at the end.
    let mut lowered = match a.watchdog_thresh.first() {
        Some(&t) if a.watchdog_check => {
            let max = a.watchdog_thresh.iter().copied().max().unwrap_or(t);
            Some(super::watchdog::lower(t, super::watchdog::rcu_timeout_needed(max))?)
        }
        _ => None,
    };
    let mut sandbox = Sandbox::enter()?;
    if let Some(g) = guardian {
        sandbox.adopt(g);
    }
    // The mariadb victim's server, once for every sweep (in the sandbox, in
    // a cgroup of the guardian's); it goes when this returns, however.
    let db = super::victim_db::VictimDb::start(opts, &mut sandbox)?;
    let database = db.as_ref().map(super::victim_db::VictimDb::database).transpose()?;
    let mut result: Option<ReclaimResult> = None;
    let threshs: Vec<Option<u64>> =
        if a.watchdog_check { a.watchdog_thresh.iter().map(|&t| Some(t)).collect() } else { vec![None] };
    for thresh in threshs {
        if let (Some(l), Some(t)) = (lowered.as_mut(), thresh) {
            l.set(t)?;
        }
        let mut r = super::sweep::run(opts, &mut sandbox, cx.proc, database.as_ref())?;
        if let (Some(l), Some(t)) = (lowered.as_ref(), thresh) {
            let w = super::watchdog::compare(&r.runs, &r.fits, l.original, t, l.rcu_timeout());
            match result.as_mut() {
                Some(first) => first.watchdog_more.push(w),
                None => r.watchdog = Some(w),
            }
        }
        // --census: its line with the run's notes.
        r.notes.extend(r.runs.iter().filter_map(|x| x.census.as_ref()).map(|n| n.line()));
        result.get_or_insert(r);
    }
    if let Some(db) = db {
        db.stop()?;
    }
    if let Some(l) = lowered {
        l.restore()?;
    }
    result.context("no sweep ran")
}
