//! The internal command (`dentrylab __internal NAME ...`, hidden): dentrylab
//! re-executing itself as a generator in its own mount namespace, a
//! container, a worker process, the guest's init, or a guardian that
//! restores sysctls and removes cgroups and directories however the parent
//! ends; or the victims' fit for a script's series (`fit-waits`). Each
//! one's entry lives beside the code it serves, under the
//! command-name constant the parent spawns it with (behind
//! [`crate::sys::INTERNAL_COMMAND`]); this only parses and dispatches, and
//! exits 0, or 1 with the error.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

use crate::bench;

/// The one argument of the internal commands that take a spec: what the
/// parent serialised for the child, as JSON.
#[derive(Debug, clap::Args)]
pub(crate) struct SpecArg {
    /// The spec, as JSON.
    pub spec: String,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Internal {
    /// The workload process of 'mitigate'.
    #[command(name = bench::mitigate::one::WORKER_COMMAND)]
    MitigateWorker(bench::mitigate::WorkerArgs),
    /// One worker process of 'scale --procs'.
    #[command(name = bench::scale::SCALE_WORKER)]
    ScaleWorker(bench::scale::WorkerArgs),
    /// The workload process of 'gvisor' (native or inside runsc).
    #[command(name = bench::gvisor::WORKER)]
    GvisorWorker(SpecArg),
    /// The containers worker of 'mitigate --workload containers'.
    #[command(name = bench::mitigate::containers::WORKER_COMMAND)]
    MitigateContainers(SpecArg),
    /// One container of 'containers'.
    #[command(name = bench::common::container::child::CHILD_COMMAND)]
    ContainerChild(SpecArg),
    /// The guest's init (PID 1 of the initramfs 'vm' builds).
    #[command(name = bench::vm::init::INIT_COMMAND)]
    VmInit,
    /// Removes a 'vm' run's temporary directories when dentrylab ends, however it ends.
    #[command(name = bench::vm::GUARD_COMMAND)]
    VmGuard {
        /// Directories to remove.
        paths: Vec<PathBuf>,
    },
    /// The generator child of `reclaim --method ns-exit|memcg`.
    #[command(name = bench::reclaim::child::CHILD_COMMAND)]
    ReclaimChild(SpecArg),
    /// Puts a sysctl (watchdog_thresh) back when dentrylab ends, however it ends.
    #[command(name = crate::sys::guardian::SYSCTL_GUARD_COMMAND)]
    SysctlGuard(crate::sys::guardian::SysctlGuardArgs),
    /// Removes dentrylab's memory cgroups when dentrylab ends, however it ends.
    #[command(name = crate::sandbox::cgroup::GUARD_COMMAND)]
    CgroupGuard(crate::sandbox::cgroup::GuardArgs),
    /// Fits (N, wait) points, JSON on stdin, as 'reclaim --victims' fits its victims' waits, and prints the fit
    /// and the count reaching --deadline (for deploy/local/kubelet-victim.py).
    #[command(name = bench::reclaim::fit_waits::FIT_WAITS_COMMAND)]
    FitWaits(bench::reclaim::fit_waits::FitWaitsArgs),
}

impl Internal {
    /// Runs one internal command.
    pub(crate) fn run(self) -> Result<ExitCode> {
        match self {
            Internal::MitigateWorker(a) => a.run(),
            Internal::ScaleWorker(a) => a.run(),
            Internal::GvisorWorker(a) => bench::gvisor::worker::worker_main(&a.spec),
            Internal::MitigateContainers(a) => bench::mitigate::containers::worker_main(&a.spec),
            Internal::ContainerChild(a) => bench::common::container::child::child_main(&a.spec),
            Internal::VmInit => bench::vm::init::main(),
            Internal::VmGuard { paths } => bench::vm::guard_main(&paths),
            Internal::ReclaimChild(a) => bench::reclaim::child::child_main(&a.spec),
            Internal::SysctlGuard(a) => a.run(),
            Internal::CgroupGuard(a) => a.run(),
            Internal::FitWaits(a) => a.run(),
        }?;
        Ok(ExitCode::SUCCESS)
    }
}
