//! `dentrylab gvisor` as a [`Benchmark`]: its command line, and the steps
//! the generic handler runs.

use anyhow::Result;

use super::{GvisorResult, Options};
use crate::bench::common::{Benchmark, Context};
use crate::error::UsageError;
use crate::output::{OutputArgs, Paths};

/// `gvisor`: the benchmark's own options ([`super::Args`]) and the output
/// files.
#[derive(Debug, clap::Args)]
pub struct CommandArgs {
    #[command(flatten)]
    pub gvisor: super::Args,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The same workload natively and inside runsc, side by side.
pub struct Gvisor;

impl Benchmark for Gvisor {
    type Args = CommandArgs;
    type Plan = Options;
    type Result = GvisorResult;

    const REPORTS: bool = false;

    fn outputs(a: &CommandArgs) -> Paths {
        Paths::json(&a.output)
    }

    fn plan(a: CommandArgs, _cx: &Context) -> Result<Options> {
        let opts = a.gvisor.options()?;
        if !nix::unistd::geteuid().is_root() {
            return Err(UsageError(
                "gvisor needs root (runsc run creates namespaces and mounts): run it as root".into(),
            )
            .into());
        }
        Ok(opts)
    }

    fn run(opts: &mut Options, _cx: &Context, announce: &dyn Fn(&str)) -> Result<GvisorResult> {
        super::run(opts, announce)
    }
}
