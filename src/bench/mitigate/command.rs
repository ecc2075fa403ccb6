//! `dentrylab mitigate` as a [`Benchmark`]: its command line, and the
//! steps the generic handler runs.

use anyhow::{Context as _, Result};

use super::{Edge, MitigateResult, Options};
use crate::bench::common::{Benchmark, Context};
use crate::error::UsageError;
use crate::output::{OutputArgs, Paths};
use crate::sandbox::{self, Sandbox};
use crate::sys;

/// `mitigate`: the benchmark's own options ([`super::Args`]) and the
/// output files.
#[derive(Debug, clap::Args)]
pub struct CommandArgs {
    #[command(flatten)]
    pub mitigate: super::Args,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// A/B of mitigations on a workload in a memory cgroup.
pub struct Mitigate;

impl Benchmark for Mitigate {
    type Args = CommandArgs;
    type Plan = Options;
    type Result = MitigateResult;

    fn outputs(a: &CommandArgs) -> Paths {
        Paths::json(&a.output)
    }

    fn plan(a: CommandArgs, cx: &Context) -> Result<Options> {
        let cpus = sys::allowed_cpus()?;
        let cpu = match a.mitigate.cpu {
            Some(c) if !cpus.contains(&c) => {
                return Err(UsageError(format!(
                    "--cpu {c}: this process may only run on CPUs {cpus:?}; choose one of them"
                ))
                .into());
            }
            Some(c) => c,
            None => *cpus.last().context("no CPU is available to this process")?,
        };
        // This node's lockup edge, from its calibration (as `status` finds it).
        let edge = (cx.lockup_edge)(a.mitigate.state_dir.as_deref())
            .ok()
            .and_then(|e| e.dentries.map(|d| Edge { dentries: d, calibration: e.calibration }));
        let opts = a.mitigate.options(cpu, edge)?;
        super::validate(&opts)?;
        Ok(opts)
    }

    fn run(opts: &mut Options, cx: &Context, announce: &dyn Fn(&str)) -> Result<MitigateResult> {
        // Guardians first, outside the sandbox: the sysctls' originals and the
        // cgroups (with the server in them) are put right however this ends.
        let sysctls = super::knobs::Sysctls::guard(&opts.settings)?;
        let guardian = sandbox::cgroup::Guardian::start(cx.proc)?;
        let mut sandbox = Sandbox::enter()?;
        sandbox.adopt(guardian);
        super::run(opts, sysctls, &mut sandbox, cx.proc, announce)
    }
}
