//! `dentrylab containers`' options as clap parses them, and the run's
//! [`Options`] they give (the CPU, which needs the machine, is chosen by the
//! caller; `--state-dir` is read by the caller for the projection's edge).
//! `cli` flattens [`Args`] into its command and adds the output files.
//! `--ops`' parser is shared with `mitigate --container-ops`
//! ([`crate::bench::common::container::parse_op_count`]).

use std::path::PathBuf;

use super::Options;
use crate::sandbox::FsType;
use crate::workload::container::Mix;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Containers to run, one after another or --parallel at a time (suffixes k allowed).
    #[arg(long, default_value = super::DEFAULT_COUNT, value_parser = crate::size::parse_count, allow_hyphen_values = true)]
    pub count: u64,
    /// Containers running at once.
    #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
    pub parallel: u32,
    /// temp-tables, lookups, files, or mixed=temp-tables=60,lookups=30,files=10.
    #[arg(long, default_value = "temp-tables", value_parser = |s: &str| s.parse::<Mix>())]
    pub workload: Mix,
    /// Operations per container (suffixes k, M); 0 measures the harness alone.
    #[arg(long, default_value = super::DEFAULT_OPS, value_parser = crate::bench::common::container::parse_op_count, allow_hyphen_values = true)]
    pub ops: u64,
    /// Containers started per hour on the node, for the projection to the lockup edge.
    #[arg(long, default_value_t = super::DEFAULT_RATE_PER_HOUR, allow_hyphen_values = true)]
    pub rate: f64,
    /// The host's disk filesystem holding the image and the snapshots: ext4 or xfs.
    #[arg(long, default_value = "ext4", value_parser = |s: &str| s.parse::<FsType>())]
    pub fs: FsType,
    /// CPU the containers exit on and the teardown is probed on (default: the first allowed CPU).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Probe wake-up interval in microseconds.
    #[arg(long, default_value_t = crate::probe::gap::DEFAULT_INTERVAL.as_micros() as u64, value_parser = clap::value_parser!(u64).range(10..=100_000))]
    pub probe_interval_us: u64,
    /// Directory holding the calibration for the projection (as 'status --state-dir').
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Run even if the memory estimate exceeds half of MemAvailable.
    #[arg(long)]
    pub force: bool,
    /// A check: once every container has died, a full census of the kernel's dentry hash table names the top directory of the run's disk filesystem and counts the negatives the containers left in each image directory against the names they made (exit 1 if they differ). Root and a kernel with /proc/kcore and BTF (see 'dentrylab census'); refused at once (one line, exit 1) where the census cannot run.
    #[arg(long)]
    pub census: bool,
    /// Sample the teardown CPU with perf call graphs during each teardown and name the code behind the longest stretch.
    #[arg(long)]
    pub profile: bool,
}

impl Args {
    /// The run's options: `cpu` is the one chosen for `--cpu`.
    pub(crate) fn options(&self, cpu: usize) -> Options {
        Options {
            count: self.count,
            parallel: self.parallel,
            mix: self.workload,
            ops: self.ops,
            rate_per_hour: self.rate,
            fs: self.fs,
            cpu,
            probe_interval_us: self.probe_interval_us,
            force: self.force,
            profile: self.profile,
            census: self.census,
        }
    }
}
