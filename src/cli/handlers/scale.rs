//! `scale`: path-lookup throughput from 1 to N workers.

use std::process::ExitCode;

use anyhow::Result;

use crate::bench;
use crate::cli;
use crate::output;
use crate::procfs::ProcRoot;
use crate::report;
use crate::sandbox;

/// `dentrylab scale`.
pub fn run(a: cli::ScaleArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let cpus = crate::env::cpus();
    let opts = a.scale.options(cpus)?;
    bench::scale::validate(&opts)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    let mut sandbox = sandbox::Sandbox::enter()?;
    let to_stderr = json.as_ref().is_some_and(|j| j.is_stdout());
    let announce = |m: &str| eprintln!("{m}");
    let result = bench::scale::run(&opts, &mut sandbox, proc, &announce)?;
    let table = report::table::of(&result);
    if to_stderr {
        eprint!("{table}");
    } else {
        print!("{table}");
    }
    if let Some(j) = json.as_mut() {
        report::json::write(j, &result)?;
    }
    Ok(ExitCode::SUCCESS)
}
