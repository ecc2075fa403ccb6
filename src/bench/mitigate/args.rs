//! `dentrylab mitigate`'s options as clap parses them, and the run's
//! [`Options`] they give (defaults resolved: `--container-workload` and
//! `--container-ops`, refused with another workload). The CPU, which needs
//! the machine, and the node's lockup edge, read from the calibration in
//! `--state-dir`, are found by the caller. `cli` flattens [`Args`] into its
//! command and adds the output files.

use std::path::PathBuf;

use anyhow::Result;

use super::knobs::Setting;
use super::{Edge, Options, Workload};
use crate::sandbox::FsType;
use crate::workload::container::Mix;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// What grows the dentry cache: temp-tables, lookups, files, mariadb, containers.
    #[arg(long, value_parser = clap::value_parser!(Workload))]
    pub workload: Workload,
    /// KNOB=V1,V2,... (repeatable; first values = baseline): vm.vfs_cache_pressure, vm.vfs_cache_pressure_denom, fs.dentry-negative, drop-caches-every (these four are global: --allow-global), memory-limit (the run's own cgroup; tmpfs allowed with it alone). fs.dentry-negative acts in d_delete() only (unlinked files), not on failed lookups' negatives.
    #[arg(long = "setting", value_name = "KNOB=V1,V2", value_parser = super::knobs::parse_setting)]
    pub settings: Vec<Setting>,
    /// Memory limit of the workload's cgroup: 256M, 1G. Default: its usage once set up + a headroom for its own memory and freed kernel memory not yet returned (128 MiB; mariadb 160 MiB + 16 MiB per client; containers 64 MiB) + 2 × the largest kernel-memory growth per second measured for the workload idle (lookups 160 MiB, files 170 MiB, temp-tables 48 MiB, containers 9 MiB, mariadb 32 MiB: its page cache and buffers) × --duration, at most half of MemAvailable: a default run does not reach its limit. A reached limit may OOM-kill the workload (its cgroup full of dentries and inodes): the run then reports the kernel's OOM report and goes on. Compare limits with --setting memory-limit=16M,64M.
    #[arg(long, value_parser = super::knobs::parse_memory)]
    pub memory_limit: Option<u64>,
    /// How long each combination runs: 10s, 60s, 2m (1s to 1h).
    #[arg(long, default_value = super::DEFAULT_DURATION, value_parser = parse_duration)]
    pub duration: f64,
    /// Repetitions of every combination (interleaved).
    #[arg(long, default_value_t = super::DEFAULT_REPS, value_parser = clap::value_parser!(u32).range(1..=super::MAX_REPS as i64))]
    pub reps: u32,
    /// mariadb: client connections.
    #[arg(long, default_value_t = super::DEFAULT_CLIENTS as u32, value_parser = clap::value_parser!(u32).range(1..=super::MAX_CLIENTS as i64))]
    pub clients: u32,
    /// mariadb: NAME=VALUE server option for one more row (repeatable), e.g. tmp_table_size=256M.
    #[arg(long = "mariadb-option", value_name = "NAME=VALUE", value_parser = crate::bench::common::mariadb::parse_option)]
    pub mariadb_options: Vec<(String, String)>,
    /// containers: each container's workload, as 'containers --workload' (default: mixed=temp-tables=60,lookups=30,files=10).
    #[arg(long, value_name = "MIX", value_parser = |s: &str| s.parse::<Mix>())]
    pub container_workload: Option<Mix>,
    /// containers: operations per container, as 'containers --ops' (default: 1k; suffixes k, M; 0: the harness alone).
    #[arg(long, value_parser = crate::bench::common::container::parse_op_count, allow_hyphen_values = true)]
    pub container_ops: Option<u64>,
    /// Filesystem of the workload: ext4 or xfs (tmpfs with --setting memory-limit=… alone).
    #[arg(long, default_value = "ext4", value_parser = |s: &str| s.parse::<FsType>())]
    pub fs: FsType,
    /// CPU the workload is pinned to and probed on (default: the last this process may use).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Allow changing sysctls and dropping caches for the whole machine during the run.
    #[arg(long)]
    pub allow_global: bool,
    /// Where the node's calibration is read from (for the distance to the lockup edge).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl Args {
    /// The run's options: `cpu` is the one chosen for `--cpu`, `edge` this
    /// node's lockup edge (if it has a calibration). `--container-workload`
    /// or `--container-ops` with another workload is a usage error.
    pub(crate) fn options(&self, cpu: usize, edge: Option<Edge>) -> Result<Options> {
        let (container_mix, container_ops) =
            super::containers::options(self.workload, self.container_workload, self.container_ops)?;
        Ok(Options {
            workload: self.workload,
            settings: self.settings.clone(),
            memory_limit: self.memory_limit,
            duration_seconds: self.duration,
            reps: self.reps,
            clients: self.clients as usize,
            mariadb_options: self.mariadb_options.clone(),
            container_mix,
            container_ops,
            fs: self.fs,
            cpu,
            allow_global: self.allow_global,
            edge,
        })
    }
}

/// `--duration`: any non-negative duration; the bounds are checked with the other options.
fn parse_duration(s: &str) -> Result<f64, String> {
    super::knobs::parse_duration(s)
        .map(|d| d.as_secs_f64())
        .ok_or_else(|| format!("{s:?} is not a duration (write for example 10s, 60s or 2m)"))
}
