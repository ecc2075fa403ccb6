//! `dentrylab pollute` as a [`Benchmark`]: its command line, and the steps
//! the generic handler runs.

use anyhow::Result;

use super::{Options, PolluteResult};
use crate::bench::common::{Benchmark, Context};
use crate::output::{OutputArgs, Paths};
use crate::sandbox::Sandbox;

/// `pollute`: the benchmark's own options ([`super::Args`]) and the output
/// files.
#[derive(Debug, clap::Args)]
pub struct CommandArgs {
    #[command(flatten)]
    pub pollute: super::Args,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Hot lookups before and after negative dentries.
pub struct Pollute;

impl Benchmark for Pollute {
    type Args = CommandArgs;
    type Plan = Options;
    type Result = PolluteResult;

    fn outputs(a: &CommandArgs) -> Paths {
        Paths::json(&a.output)
    }

    fn plan(a: CommandArgs, cx: &Context) -> Result<Options> {
        let opts = a.pollute.options(super::choose_cpu(a.pollute.cpu)?);
        super::validate(&opts)?;
        super::preflight(&opts, cx.proc)?;
        Ok(opts)
    }

    fn run(opts: &mut Options, cx: &Context, announce: &dyn Fn(&str)) -> Result<PolluteResult> {
        let mut sandbox = Sandbox::enter()?;
        super::run(opts, &mut sandbox, cx.proc, announce)
    }
}
