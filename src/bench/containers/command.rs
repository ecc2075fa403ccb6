//! `dentrylab containers` as a [`Benchmark`]: its command line, and the
//! steps the generic handler runs.

use anyhow::Result;

use super::{ContainersResult, Edge, Options};
use crate::bench::common::{self, Benchmark, Context};
use crate::output::{OutputArgs, Paths};
use crate::sandbox::Sandbox;

/// `containers`: the benchmark's own options ([`super::Args`]) and the
/// output files.
#[derive(Debug, clap::Args)]
pub struct CommandArgs {
    #[command(flatten)]
    pub containers: super::Args,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Containers on overlayfs run a workload and die.
pub struct Containers;

impl Benchmark for Containers {
    type Args = CommandArgs;
    type Plan = (Options, Edge);
    type Result = ContainersResult;

    fn outputs(a: &CommandArgs) -> Paths {
        Paths::json(&a.output)
    }

    fn plan(a: CommandArgs, cx: &Context) -> Result<(Options, Edge)> {
        let (cpu, _) = common::choose_cpus(a.containers.cpu)?;
        let opts = a.containers.options(cpu);
        super::validate(&opts)?;
        super::preflight(&opts, cx.proc)?;
        if opts.census {
            // Where the census cannot run: its one line, before any work.
            crate::census::available(&crate::census::Source::of(cx.proc), cx.proc)?;
        }
        // The lockup count of the calibration `status` uses, for the projection.
        let edge = (cx.lockup_edge)(a.containers.state_dir.as_deref())?;
        let edge = Edge { calibration: edge.calibration, lockup_dentries: edge.dentries, lockup_dentries_low: None };
        Ok((opts, edge))
    }

    fn run((opts, edge): &mut (Options, Edge), cx: &Context, announce: &dyn Fn(&str)) -> Result<ContainersResult> {
        let mut sandbox = Sandbox::enter()?;
        super::run(opts, edge, &mut sandbox, cx.proc, announce)
    }

    fn finish(_: (Options, Edge), result: &ContainersResult) -> Result<std::process::ExitCode> {
        if let Some(n) = result.census.as_ref().filter(|n| !n.ok) {
            anyhow::bail!("{}", n.line());
        }
        Ok(std::process::ExitCode::SUCCESS)
    }
}
