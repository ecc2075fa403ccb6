//! `dentrylab create`'s options as clap parses them, and the run's
//! [`Options`] they give (defaults resolved: one generator thread per CPU;
//! `--fs overlay`'s stack). `cli` flattens [`Args`] into its command and
//! adds the output files.

use super::Options;
use crate::bench::layers::WorkloadArgs;
use crate::error::UsageError;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// How many dentries to create (suffixes k, M, G).
    #[arg(long, value_parser = crate::size::parse_count, allow_hyphen_values = true)]
    pub count: u64,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Seconds to hold the dentries before reclaiming them with umount (0: at once; default: until Ctrl-C).
    #[arg(long, value_name = "SECONDS")]
    pub hold: Option<u64>,
    /// Create even if the memory estimate is over half of MemAvailable (or of what the memory cgroup's limit leaves).
    #[arg(long)]
    pub force: bool,
    /// Create inside a memory cgroup of its own (root; removed when the run ends, however it ends) and report that cgroup's memory as cAdvisor reads it: its working set, the slab in it and the working set without it.
    #[arg(long)]
    pub memcg: bool,
}

impl Args {
    /// The run's options: `cpus` is the default generator thread count; an
    /// overlay layer named without `--fs overlay` is a usage error.
    /// (`--force` is the memory check's, not the run's.)
    pub(crate) fn options(&self, cpus: usize) -> Result<Options, UsageError> {
        let (fs, overlay) = self.workload.fs()?;
        Ok(Options {
            count: self.count,
            kind: self.workload.kind,
            layout: self.workload.layout,
            threads: self.workload.threads(cpus),
            fs,
            hold_seconds: self.hold,
            overlay,
            memcg: self.memcg,
        })
    }
}
