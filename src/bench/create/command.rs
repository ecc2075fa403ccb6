//! `dentrylab create` as a [`Benchmark`]: its command line, and the steps
//! the generic handler runs.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::{CreateResult, Options};
use crate::bench::common::{self, Benchmark, Context};
use crate::output::{OutputArgs, Paths};
use crate::sandbox::Sandbox;

/// `create`: the benchmark's own options ([`super::Args`]) and the output
/// files.
#[derive(Debug, clap::Args)]
pub struct CommandArgs {
    #[command(flatten)]
    pub create: super::Args,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Make dentries in the sandbox and hold them.
pub struct Create;

impl Benchmark for Create {
    type Args = CommandArgs;
    type Plan = Options;
    type Result = CreateResult;

    const REPORTS: bool = false;
    const ANNOUNCE_ON_STDOUT: bool = true;

    fn outputs(a: &CommandArgs) -> Paths {
        Paths::json(&a.output)
    }

    fn plan(a: CommandArgs, cx: &Context) -> Result<Options> {
        let opts = a.create.options(crate::env::cpus())?;
        common::check_kind(opts.kind, opts.fs)?;
        common::preflight(&[opts.count], opts.kind, a.create.force, cx.proc)?;
        Ok(opts)
    }

    fn run(opts: &mut Options, cx: &Context, announce: &dyn Fn(&str)) -> Result<CreateResult> {
        let mut sandbox = Sandbox::enter()?;
        let interrupted = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, Arc::clone(&interrupted))?;
        }
        super::run(opts, &mut sandbox, cx.proc, &interrupted, announce)
    }
}
