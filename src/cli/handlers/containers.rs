//! `containers`: containers on overlayfs run a workload and die.

use std::process::ExitCode;

use anyhow::Result;

use super::print_table_and_json;
use crate::analysis;
use crate::bench;
use crate::cli;
use crate::env;
use crate::output;
use crate::procfs::ProcRoot;
use crate::report;
use crate::sandbox;
use crate::state;
use crate::status;

/// `dentrylab containers`.
pub fn run(a: cli::ContainersArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let (cpu, _) = bench::reclaim::choose_cpus(a.containers.cpu)?;
    let opts = a.containers.options(cpu);
    bench::containers::validate(&opts)?;
    bench::containers::preflight(&opts, proc)?;
    let edge = containers_edge(a.containers.state_dir.map_or_else(state::read_dirs, |d| vec![d]), proc)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    let mut sandbox = sandbox::Sandbox::enter()?;
    let announce = |m: &str| eprintln!("{m}");
    let result = bench::containers::run(&opts, &edge, &mut sandbox, proc, &announce)?;
    print_table_and_json(&report::table::of(&result), json.as_mut(), &result)?;
    Ok(ExitCode::SUCCESS)
}

/// The lockup count of the calibration `status` uses, for the projection.
fn containers_edge(state_dirs: Vec<std::path::PathBuf>, proc: &ProcRoot) -> Result<bench::containers::Edge> {
    let used = status::calibration::Store::search(state_dirs).current()?;
    let thresh = proc.sysctl_u64("sys/kernel/watchdog_thresh").unwrap_or(env::DEFAULT_WATCHDOG_THRESH_SECONDS);
    let p = analysis::edge::predict(&used.model(), 0, thresh);
    Ok(bench::containers::Edge {
        calibration: used.name.clone(),
        lockup_dentries: p.lockup_dentries,
        lockup_dentries_low: None,
    })
}
