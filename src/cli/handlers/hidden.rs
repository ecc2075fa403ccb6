//! The hidden subcommands: dentrylab re-executing itself as a generator in
//! its own mount namespace, a container, a worker process, or a guardian
//! that restores sysctls and removes cgroups however the parent ends. Each
//! runs the code it serves and exits 0, or 1 with the error.

use std::process::ExitCode;

use anyhow::Result;

use crate::bench;
use crate::cli::Command;
use crate::sandbox;
use crate::sys;

/// Runs one hidden subcommand (`main` sends only those here).
pub fn run(command: &Command) -> Result<ExitCode> {
    match command {
        Command::MitigateContainers { spec } => bench::mitigate::containers::worker_main(spec),
        Command::MitigateWorker { workload, root } => bench::mitigate::worker_main(workload, root),
        Command::ScaleWorker(a) => sys::die_with_parent()
            .and_then(|()| bench::scale::worker_main(&a.root, a.op, a.index, a.seconds, a.sample_every)),
        Command::VmGuard { paths } => bench::vm::guard_main(paths),
        Command::GvisorWorker { spec } => bench::gvisor::worker::worker_main(spec),
        Command::ContainerChild { spec } => bench::containers::child::child_main(spec),
        Command::ReclaimChild { spec } => bench::reclaim::child::child_main(spec),
        Command::SysctlGuard { path, value } => bench::reclaim::watchdog::guard_main(path, value),
        Command::CgroupGuard { parent, pid } => sandbox::cgroup::guard_main(parent, *pid),
        public => Err(anyhow::anyhow!("{public:?} is not a hidden subcommand")),
    }?;
    Ok(ExitCode::SUCCESS)
}
