//! The hidden subcommands: dentrylab re-executing itself as a generator in
//! its own mount namespace, a container, a worker process, or a guardian
//! that restores sysctls and removes cgroups however the parent ends. Each
//! one's entry lives beside the code it serves, with its arguments (those
//! that take only a JSON spec share `cli::SpecArg`); this only dispatches,
//! and exits 0, or 1 with the error.

use std::process::ExitCode;

use anyhow::Result;

use crate::bench;
use crate::cli::Command;

/// Runs one hidden subcommand (`main` sends only those here).
pub fn run(command: &Command) -> Result<ExitCode> {
    match command {
        Command::MitigateContainers(a) => bench::mitigate::containers::worker_main(&a.spec),
        Command::MitigateWorker(a) => a.run(),
        Command::ScaleWorker(a) => a.run(),
        Command::VmGuard { paths } => bench::vm::guard_main(paths),
        Command::GvisorWorker(a) => bench::gvisor::worker::worker_main(&a.spec),
        Command::ContainerChild(a) => bench::containers::child::child_main(&a.spec),
        Command::ReclaimChild(a) => bench::reclaim::child::child_main(&a.spec),
        Command::SysctlGuard(a) => a.run(),
        Command::CgroupGuard(a) => a.run(),
        public => Err(anyhow::anyhow!("{public:?} is not a hidden subcommand")),
    }?;
    Ok(ExitCode::SUCCESS)
}
