//! `dentrylab churn` as a [`Benchmark`]: its command line, and the steps
//! the generic handler runs.

use anyhow::Result;

use super::{ChurnResult, Options};
use crate::bench::common::{Benchmark, Context};
use crate::output::{OutputArgs, Paths};
use crate::sandbox::Sandbox;

/// `churn`: the benchmark's own options ([`super::Args`]) and the output
/// files.
#[derive(Debug, clap::Args)]
pub struct CommandArgs {
    #[command(flatten)]
    pub churn: super::Args,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// A parallel unlink of a large tree.
pub struct Churn;

impl Benchmark for Churn {
    type Args = CommandArgs;
    type Plan = Options;
    type Result = ChurnResult;

    fn outputs(a: &CommandArgs) -> Paths {
        Paths::json(&a.output)
    }

    fn plan(a: CommandArgs, cx: &Context) -> Result<Options> {
        let opts = a.churn.options(crate::env::cpus());
        super::validate(&opts)?;
        super::preflight(&opts, cx.proc)?;
        Ok(opts)
    }

    fn run(opts: &mut Options, cx: &Context, announce: &dyn Fn(&str)) -> Result<ChurnResult> {
        let mut sandbox = Sandbox::enter()?;
        super::run(opts, &mut sandbox, cx.proc, announce)
    }
}
