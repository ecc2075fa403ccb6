//! `dentrylab scale` as a [`Benchmark`]: its command line, and the steps
//! the generic handler runs.

use anyhow::Result;

use super::{Options, ScaleResult};
use crate::bench::common::{Benchmark, Context};
use crate::output::{OutputArgs, Paths};
use crate::sandbox::Sandbox;

/// `scale`: the benchmark's own options ([`super::Args`]) and the output
/// files.
#[derive(Debug, clap::Args)]
pub struct CommandArgs {
    #[command(flatten)]
    pub scale: super::Args,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Path-lookup throughput from 1 to N workers.
pub struct Scale;

impl Benchmark for Scale {
    type Args = CommandArgs;
    type Plan = Options;
    type Result = ScaleResult;

    fn outputs(a: &CommandArgs) -> Paths {
        Paths::json(&a.output)
    }

    fn plan(a: CommandArgs, _cx: &Context) -> Result<Options> {
        let opts = a.scale.options(crate::env::cpus())?;
        super::validate(&opts)?;
        Ok(opts)
    }

    fn run(opts: &mut Options, cx: &Context, announce: &dyn Fn(&str)) -> Result<ScaleResult> {
        let mut sandbox = Sandbox::enter()?;
        super::run(opts, &mut sandbox, cx.proc, announce)
    }
}
