//! The handlers: one generic handler for every benchmark ([`run`]), and
//! one per other command (`node`: `status` and `exporter`; `report`;
//! `vm`). Each turns its clap arguments into the option struct of the code
//! that runs it, raises every usage error (exit 2) before any output file
//! is created, opens the outputs before the run, runs it, and writes the
//! result.
//!
//! In: the parsed arguments and the proc root. Out: the exit code. Only
//! `main` calls these; nothing imports them.

pub(crate) mod advise;
pub(crate) mod census;
pub(crate) mod node;
pub(crate) mod report;
#[cfg(test)]
mod report_tests;
pub(crate) mod vm;

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use crate::analysis;
use crate::bench::common::{Benchmark, Context, LockupEdge, OutputPaths};
use crate::env;
use crate::output::Outputs;
use crate::procfs::ProcRoot;
use crate::status;

/// Every benchmark, the same way: plan (the options and their checks:
/// every usage error), open the outputs (a bad path fails before any
/// work), run, write the result to every output, finish.
pub(crate) fn run<B: Benchmark>(args: B::Args, cx: &Context) -> Result<ExitCode> {
    let paths = args.output_paths();
    let mut plan = B::plan(args, cx)?;
    let mut out = Outputs::open(&paths)?;
    let on_stdout = B::ANNOUNCE_ON_STDOUT && !out.json_to_stdout();
    let announce = |m: &str| {
        if on_stdout { println!("{m}") } else { eprintln!("{m}") }
    };
    let result = B::run(&mut plan, cx, &announce)?;
    crate::report::emit::emit(&mut out, &result)?;
    B::finish(plan, &result)
}

/// The lockup edge of the calibration `status` uses (in `state_dir`), at
/// the watchdog threshold this node has now: what benchmarks that project
/// to the edge get through their [`Context`].
pub(crate) fn lockup_edge(state_dir: Option<&Path>, proc: &ProcRoot) -> Result<LockupEdge> {
    // A directory named: that one; else where status searches (the user's
    // own, then the node's).
    let dirs = state_dir.map_or_else(crate::state::read_dirs, |d| vec![d.to_path_buf()]);
    let used = status::calibration::Store::search(dirs).current()?;
    let thresh = proc.sysctl_u64("sys/kernel/watchdog_thresh").unwrap_or(env::DEFAULT_WATCHDOG_THRESH_SECONDS);
    let p = analysis::edge::predict(&used.model(), 0, thresh);
    Ok(LockupEdge { calibration: used.name.clone(), dentries: p.lockup_dentries })
}
