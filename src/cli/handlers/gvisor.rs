//! `dentrylab gvisor`: the same workload natively and inside runsc, side by side.

use std::process::ExitCode;

use anyhow::Result;

use crate::{bench, cli, report};

pub fn run(a: cli::GvisorArgs) -> Result<ExitCode> {
    report::gvisor::emit(&bench::gvisor::run(&a.options()?, &|m| eprintln!("{m}"))?, a.output.json.as_deref())
}
