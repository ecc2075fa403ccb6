//! `scale`: path-lookup throughput from 1 to N workers.

use std::process::ExitCode;

use anyhow::Result;

use crate::bench;
use crate::cli;
use crate::error::UsageError;
use crate::output;
use crate::procfs::ProcRoot;
use crate::report;
use crate::sandbox;
use crate::workload;

/// `dentrylab scale`.
pub fn run(a: cli::ScaleArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let threads = match &a.threads {
        Some(spec) => spec.resolve(cpus).map_err(|e| UsageError(format!("--threads: {e}")))?,
        None => bench::scale::default_threads(cpus),
    };
    let opts = bench::scale::Options {
        ops: a.ops.map(|o| o.0).unwrap_or_else(|| workload::lookup::Op::ALL.to_vec()),
        threads,
        mode: if a.procs { bench::scale::Mode::Processes } else { bench::scale::Mode::Threads },
        seconds: a.seconds,
        fs: a.fs,
        sample_every: a.sample_every,
        profile: a.profile,
    };
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
