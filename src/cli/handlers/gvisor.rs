//! `dentrylab gvisor`: the same workload natively and inside runsc, side by side.

use std::process::ExitCode;

use anyhow::Result;

use crate::error::UsageError;
use crate::{bench, cli, report};

pub fn run(a: cli::GvisorArgs) -> Result<ExitCode> {
    let opts = a.gvisor.options()?;
    if !nix::unistd::geteuid().is_root() {
        return Err(
            UsageError("gvisor needs root (runsc run creates namespaces and mounts): run it as root".into()).into()
        );
    }
    report::gvisor::emit(&bench::gvisor::run(&opts, &|m| eprintln!("{m}"))?, a.output.json.as_deref())
}
