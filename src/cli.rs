//! The command line: clap definitions and nothing else. The benchmarks
//! never see clap; `main` turns these into their option structs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::sandbox::FsType;
use crate::workload::{Kind, Layout};

#[derive(Debug, Parser)]
#[command(
    name = "dentrylab",
    version,
    about = "Measure the Linux dentry cache on the real kernel: reclaim cost, CPU monopolisation, soft-lockup risk",
    long_about = "dentrylab creates millions of dentries in a private sandbox, reclaims them by the kernel's own \
                  paths, times the reclaim, measures how long the reclaiming CPU is monopolised, fits and \
                  extrapolates the cost, and predicts the dentry count at which a node will soft-lock.\n\n\
                  Everything it mounts lives in a private mount namespace and vanishes when it exits, however \
                  it exits.",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Sweep sizes: create dentries, reclaim them, time and probe the reclaim, fit, extrapolate, verdict.
    Reclaim(ReclaimArgs),
    /// Only create dentries in a sandbox and hold them for manual experiments.
    Create(CreateArgs),
    /// Internal: the generator child of `reclaim --method ns-exit|memcg`.
    #[command(name = "__reclaim-child", hide = true)]
    ReclaimChild {
        /// The child's spec, as JSON.
        spec: String,
    },
    /// Internal: removes dentrylab's memory cgroups when dentrylab ends, however it ends.
    #[command(name = "__cgroup-guard", hide = true)]
    CgroupGuard {
        /// Directory the cgroups are made in.
        parent: PathBuf,
        /// The dentrylab process whose cgroups to remove.
        pid: u32,
    },
}

/// Output options every command shares.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Write the result as JSON to FILE ('-' for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// What to create and where.
#[derive(Debug, Args)]
pub struct WorkloadArgs {
    /// Kind of dentry to create: hardlink, file, negative (failed lookups of names that do not exist) or
    /// unlinked (create then unlink, as temporary tables do). negative and unlinked need --fs ext4 or xfs:
    /// tmpfs keeps no negative dentries.
    #[arg(long, default_value = "hardlink", value_parser = parse_kind)]
    pub kind: Kind,
    /// 'flat' (all in one directory, as seed 000) or 'dirs=K' (spread over K directories).
    #[arg(long, default_value = "flat", value_parser = parse_layout)]
    pub layout: Layout,
    /// Generator threads (default: one per CPU, at most one per directory; flat uses one unless set).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Option<u32>,
    /// Filesystem that holds the dentries: tmpfs, or ext4 / xfs made on a loop device over a sparse file in
    /// the sandbox (mkfs.ext4 / mkfs.xfs must be installed). The loop device detaches itself when the run
    /// ends, however it ends.
    #[arg(long, default_value = "tmpfs", value_parser = parse_fs)]
    pub fs: FsType,
}

#[derive(Debug, Args)]
pub struct ReclaimArgs {
    /// Sizes to sweep: a comma-separated list with suffixes (100k,2.5M,1.5G), 'quick' (100k,500k,1M,2M) or 'seed' (seed 000's 100k…10M).
    #[arg(long, default_value = "quick", value_parser = parse_sizes, allow_hyphen_values = true)]
    pub sizes: Sizes,
    /// Repetitions of each size (the longest gap is noisy: repeat and read the spread).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub reps: u32,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// How to reclaim: umount (umount(2), seed 000), ns-exit (the mount namespace's last process exits, as a
    /// container dies), drop-caches (echo 2 > /proc/sys/vm/drop_caches: machine-wide, needs --allow-global),
    /// memcg (reclaim the generator's own memory cgroup: memory.reclaim on cgroup v2, memory.force_empty on
    /// v1). A comma-separated list, or 'all', runs each at every size and compares them.
    #[arg(long, default_value = "umount", value_parser = parse_methods)]
    pub method: Methods,
    /// Run every repetition twice: alone, and with T threads doing path lookups in the same filesystem on the
    /// other CPUs during the reclaim.
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u32).range(1..=crate::bench::reclaim::MAX_CONTEND as i64))]
    pub contend: Option<u32>,
    /// Count to extrapolate the fit to (seed 000's nodes had 1.5G).
    #[arg(long, default_value = "1.5G", value_parser = crate::size::parse_count, allow_hyphen_values = true)]
    pub extrapolate: u64,
    /// CPU that runs the reclaim and its latency probe (default: the first allowed CPU).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Probe wake-up interval in microseconds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(10..=100_000))]
    pub probe_interval_us: u64,
    /// Run sizes that the safety checks refuse (more than half of MemAvailable, or a predicted monopolisation over 10 s).
    #[arg(long)]
    pub force: bool,
    /// Allow actions that affect the whole machine (--method drop-caches drops every unused dentry and inode on the node).
    #[arg(long)]
    pub allow_global: bool,
    /// Do not save the fit as this node's calibration (used by 'status').
    #[arg(long)]
    pub no_save: bool,
    /// Directory for the saved calibration [default: $DENTRYLAB_STATE_DIR, /var/lib/dentrylab as root, else ~/.local/state/dentrylab].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Also write a Markdown report section to FILE.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// How many dentries to create (suffixes k, M, G).
    #[arg(long, value_parser = crate::size::parse_count, allow_hyphen_values = true)]
    pub count: u64,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Seconds to hold the dentries before reclaiming them with umount (0: at once; default: until Ctrl-C).
    #[arg(long, value_name = "SECONDS")]
    pub hold: Option<u64>,
    /// Create even if the memory estimate is over half of MemAvailable.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

fn parse_layout(s: &str) -> Result<Layout, String> {
    s.parse()
}

fn parse_fs(s: &str) -> Result<FsType, String> {
    s.parse()
}

/// The sizes of a sweep, in ascending order.
#[derive(Debug, Clone)]
pub struct Sizes(pub Vec<u64>);

fn parse_sizes(s: &str) -> Result<Sizes, String> {
    crate::size::parse_sizes(s).map(Sizes)
}

/// The reclaim methods of a sweep, in the order given.
#[derive(Debug, Clone)]
pub struct Methods(pub Vec<crate::bench::reclaim::Method>);

fn parse_methods(s: &str) -> Result<Methods, String> {
    crate::bench::reclaim::methods::parse_list(s).map(Methods)
}

fn parse_kind(s: &str) -> Result<Kind, String> {
    s.parse()
}
