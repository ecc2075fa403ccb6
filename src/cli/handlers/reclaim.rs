//! `reclaim`: the sweep, with `--watchdog-check` and the calibration it
//! saves.

use std::process::ExitCode;

use anyhow::{Context, Result};

use super::print_table_and_json;
use super::report::write_report;
use crate::bench;
use crate::cli;
use crate::output;
use crate::procfs::ProcRoot;
use crate::report;
use crate::sandbox;
use crate::size;
use crate::state;

/// `dentrylab reclaim`: check, open the outputs, start the guardians, enter the
/// sandbox, sweep (once per `--watchdog-thresh`), print, save the calibration.
pub fn run(a: cli::ReclaimArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let cpus = crate::env::cpus();
    let (cpu, control_cpu) = bench::reclaim::choose_cpus(a.reclaim.cpu)?;
    // Every usage error (exit 2) before any output file or directory is made.
    let opts = a.reclaim.options(cpus, cpu, control_cpu)?;
    bench::reclaim::validate(&opts)?;
    bench::reclaim::preflight(&opts.sizes, opts.kind, opts.force, proc)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    let mut markdown = output::open_opt(a.markdown.as_deref())?;
    let report_dir = a.report.as_deref().map(output::OutDir::create).transpose()?;
    let state = match (a.reclaim.no_save, &a.reclaim.state_dir) {
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
    // Both guardians are copies of dentrylab started outside the sandbox
    // (sys::guardian): they clean up when it ends, however it ends.
    let guardian = if opts.methods.iter().any(|m| m.about().uses_memcg)
        || opts.victims.contains(&crate::probe::victims::Victim::Cgroup)
    {
        Some(sandbox::cgroup::Guardian::start(proc)?)
    } else {
        None
    };
    // With --watchdog-check, one sweep per threshold: lowered (and guarded:
    // the guardian puts the original back however the run ends) before
    // the sandbox, set to each threshold in turn, restored at the end.
    let mut lowered = match a.reclaim.watchdog_thresh.first() {
        Some(&t) if a.reclaim.watchdog_check => {
            let max = a.reclaim.watchdog_thresh.iter().copied().max().unwrap_or(t);
            Some(bench::reclaim::watchdog::lower(t, bench::reclaim::watchdog::rcu_timeout_needed(max))?)
        }
        _ => None,
    };
    let mut sandbox = sandbox::Sandbox::enter()?;
    if let Some(g) = guardian {
        sandbox.adopt(g);
    }
    let mut result: Option<bench::reclaim::ReclaimResult> = None;
    let threshs: Vec<Option<u64>> = if a.reclaim.watchdog_check {
        a.reclaim.watchdog_thresh.iter().map(|&t| Some(t)).collect()
    } else {
        vec![None]
    };
    for thresh in threshs {
        if let (Some(l), Some(t)) = (lowered.as_mut(), thresh) {
            l.set(t)?;
        }
        let mut r = bench::reclaim::run(&opts, &mut sandbox, proc)?;
        if let (Some(l), Some(t)) = (lowered.as_ref(), thresh) {
            let w = bench::reclaim::watchdog::compare(&r, l.original, t, l.rcu_timeout());
            match result.as_mut() {
                Some(first) => first.watchdog_more.push(w),
                None => r.watchdog = Some(w),
            }
        }
        result.get_or_insert(r);
    }
    if let Some(l) = lowered {
        l.restore()?;
    }
    let result = result.context("no sweep ran")?;

    print_table_and_json(&report::table::of(&result), json.as_mut(), &result)?;
    if let Some(m) = markdown.as_mut() {
        m.write_str(&report::markdown::section(&result))?;
    }
    if let Some(dir) = &report_dir {
        let loaded = [report::document::Loaded::Reclaim(Box::new(result.clone()))];
        let written = write_report(dir, &loaded)?;
        eprintln!("report written to {}", written.display());
    }
    if let (Some(st), Some(cal)) = (&state, result.calibration()) {
        let p = st.save(&cal)?;
        eprintln!("calibration saved to {}", p.display());
    }
    if let Some(r) = result.refused.first() {
        anyhow::bail!("stopped before size {}: {}", size::human(r.target), r.reason);
    }
    Ok(ExitCode::SUCCESS)
}
