//! `churn`: a parallel unlink of a large tree.

use std::process::ExitCode;

use anyhow::Result;

use super::print_table_and_json;
use crate::bench;
use crate::cli;
use crate::output;
use crate::procfs::ProcRoot;
use crate::report;
use crate::sandbox;

/// `dentrylab churn`.
pub fn run(a: cli::ChurnArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let cpus = crate::env::cpus();
    let opts = a.churn.options(cpus);
    bench::churn::validate(&opts)?;
    bench::churn::preflight(&opts, proc)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    let mut sandbox = sandbox::Sandbox::enter()?;
    let announce = |m: &str| eprintln!("{m}");
    let result = bench::churn::run(&opts, &mut sandbox, proc, &announce)?;
    print_table_and_json(&report::table::of(&result), json.as_mut(), &result)?;
    Ok(ExitCode::SUCCESS)
}
