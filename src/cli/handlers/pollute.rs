//! `pollute`: hot lookups before and after negative dentries.

use std::process::ExitCode;

use anyhow::Result;

use super::print_table_and_json;
use crate::bench;
use crate::cli;
use crate::output;
use crate::procfs::ProcRoot;
use crate::report;
use crate::sandbox;

/// `dentrylab pollute`.
pub fn run(a: cli::PolluteArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let opts = a.pollute.options(bench::pollute::choose_cpu(a.pollute.cpu)?);
    bench::pollute::validate(&opts)?;
    bench::pollute::preflight(&opts, proc)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    let mut sandbox = sandbox::Sandbox::enter()?;
    let announce = |m: &str| eprintln!("{m}");
    let result = bench::pollute::run(&opts, &mut sandbox, proc, &announce)?;
    print_table_and_json(&report::table::of(&result), json.as_mut(), &result)?;
    Ok(ExitCode::SUCCESS)
}
