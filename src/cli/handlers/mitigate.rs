//! `mitigate`: A/B of mitigations on a workload in a memory cgroup.

use std::process::ExitCode;

use anyhow::{Context, Result};

use super::print_table_and_json;
use crate::analysis;
use crate::bench;
use crate::cli;
use crate::env;
use crate::error::UsageError;
use crate::output;
use crate::procfs::ProcRoot;
use crate::report;
use crate::sandbox;
use crate::state;
use crate::status;
use crate::sys;

/// `dentrylab mitigate`.
pub fn run(a: cli::MitigateArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let cpus = sys::allowed_cpus()?;
    let cpu = match a.mitigate.cpu {
        Some(c) if !cpus.contains(&c) => {
            return Err(UsageError(format!(
                "--cpu {c}: this process may only run on CPUs {cpus:?}; choose one of them"
            ))
            .into());
        }
        Some(c) => c,
        None => *cpus.last().context("no CPU is available to this process")?,
    };
    // This node's lockup edge, from its calibration (as `status` finds it).
    let state_dirs = a.mitigate.state_dir.clone().map_or_else(state::read_dirs, |d| vec![d]);
    let edge = status::calibration::Store::search(state_dirs).current().ok().and_then(|cal| {
        let thresh = proc.sysctl_u64("sys/kernel/watchdog_thresh").unwrap_or(env::DEFAULT_WATCHDOG_THRESH_SECONDS);
        analysis::edge::predict(&cal.model(), 0, thresh)
            .lockup_dentries
            .map(|d| bench::mitigate::Edge { dentries: d, calibration: cal.name.clone() })
    });
    let opts = a.mitigate.options(cpu, edge)?;
    bench::mitigate::validate(&opts)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    // Guardians first, outside the sandbox: the sysctls' originals and the
    // cgroups (with the server in them) are put right however this ends.
    let sysctls = bench::mitigate::knobs::Sysctls::guard(&opts.settings)?;
    let guardian = sandbox::cgroup::Guardian::start(proc)?;
    let mut sandbox = sandbox::Sandbox::enter()?;
    sandbox.adopt(guardian);
    let announce = |m: &str| eprintln!("{m}");
    let result = bench::mitigate::run(&opts, sysctls, &mut sandbox, proc, &announce)?;
    print_table_and_json(&report::table::of(&result), json.as_mut(), &result)?;
    Ok(ExitCode::SUCCESS)
}
