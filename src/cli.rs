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
    /// This node now: dentry counts and bytes, memory, watchdog and cache settings, and how far it is from a soft lockup (any user).
    #[command(long_about = STATUS_ABOUT)]
    Status(StatusArgs),
    /// Serve the figures of 'status' as Prometheus metrics on /metrics (read-only, any user).
    #[command(long_about = EXPORTER_ABOUT)]
    Exporter(ExporterArgs),
}

const STATUS_ABOUT: &str = "This node now: nr_dentry, nr_unused and nr_negative from /proc/sys/fs/dentry-state \
    and their bytes, memory, watchdog_thresh, vfs_cache_pressure and the preemption model; then, from the \
    calibration that 'reclaim' saved in the state directory (or a built-in conservative default when there is \
    none, named as such), the predicted time to reclaim every dentry in one walk, the predicted longest stretch \
    without a reschedule, and the distance to the soft-lockup threshold (2 × watchdog_thresh) as a ratio and as \
    a count.\n\nReads only world-readable files (never /proc/slabinfo): works as any user.\n\n\
    Levels: ok; warn when the predicted longest stretch is at least half the threshold (the stretch varies about \
    2× from run to run); danger when it reaches the threshold.\n\n\
    Exit status: 0; 3 when --fail-on warn and the level is warn; 4 when --fail-on is given and the level is \
    danger; 1 on a failure; 2 on bad input.";

const EXPORTER_ABOUT: &str = "Serves the figures of 'status' as Prometheus metrics (dentrylab_* gauges, units in \
    their names) on http://ADDR/metrics. Each scrape reads dentry-state, meminfo and two sysctls (never \
    /proc/slabinfo) and reports its own duration; the calibration file is re-read when it changes. A fixed \
    number of worker threads answers; further connections wait in the kernel's accept queue. Read-only, runs \
    as any user; stops on SIGTERM or Ctrl-C.";

/// Where the node's figures and its calibration are read from.
#[derive(Debug, Args)]
pub struct NodeArgs {
    /// Where the proc filesystem is: the host's /proc mounted in a container, or a fixture tree laid out like /proc.
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    pub proc_root: PathBuf,
    /// Directory holding the calibration saved by 'reclaim' [default: $DENTRYLAB_STATE_DIR, /var/lib/dentrylab as root, else ~/.local/state/dentrylab].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub node: NodeArgs,
    /// Also write the metrics to PATH (must end in .prom) for node_exporter's textfile collector, atomically.
    #[arg(long, value_name = "PATH")]
    pub textfile: Option<PathBuf>,
    /// Exit 3 (warn) or 4 (danger) when the level reaches LEVEL: 'warn' or 'danger'.
    #[arg(long, value_name = "LEVEL", value_parser = parse_level)]
    pub fail_on: Option<crate::analysis::edge::Level>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct ExporterArgs {
    /// Address to serve on (IP:PORT; port 0 picks a free one). Use 0.0.0.0:10366 to be scraped from other hosts.
    #[arg(long, value_name = "ADDR", default_value = crate::exporter::DEFAULT_LISTEN, value_parser = parse_listen)]
    pub listen: std::net::SocketAddr,
    /// Worker threads answering scrapes.
    #[arg(long, default_value_t = crate::exporter::DEFAULT_WORKERS as u32,
          value_parser = clap::value_parser!(u32).range(1..=crate::exporter::MAX_WORKERS as i64))]
    pub workers: u32,
    #[command(flatten)]
    pub node: NodeArgs,
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
    /// Kind of dentry to create.
    #[arg(long, default_value = "hardlink", value_parser = parse_kind)]
    pub kind: Kind,
    /// 'flat' (all in one directory, as seed 000) or 'dirs=K' (spread over K directories).
    #[arg(long, default_value = "flat", value_parser = parse_layout)]
    pub layout: Layout,
    /// Generator threads (default: one per CPU, at most one per directory; flat uses one unless set).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Option<u32>,
    /// Filesystem that holds the dentries.
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
    /// How to reclaim.
    #[arg(long, default_value = "umount", value_parser = parse_method)]
    pub method: crate::bench::reclaim::Method,
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
    /// Allow actions that affect the whole machine (drop_caches, memory-cgroup reclaim).
    #[arg(long)]
    pub allow_global: bool,
    /// Lower kernel.watchdog_thresh for the run and compare, size by size, the predicted lockups with what the kernel's soft-lockup watchdog reports (needs --allow-global; the original value is restored however the run ends).
    #[arg(long)]
    pub watchdog_check: bool,
    /// watchdog_thresh to use with --watchdog-check, seconds (soft lockup after twice this).
    #[arg(long, value_name = "S", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=60))]
    pub watchdog_thresh: u64,
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
    match s {
        "tmpfs" => Ok(FsType::Tmpfs),
        other => Err(format!("unknown filesystem {other:?}: use tmpfs")),
    }
}

/// The sizes of a sweep, in ascending order.
#[derive(Debug, Clone)]
pub struct Sizes(pub Vec<u64>);

fn parse_sizes(s: &str) -> Result<Sizes, String> {
    crate::size::parse_sizes(s).map(Sizes)
}

fn parse_method(s: &str) -> Result<crate::bench::reclaim::Method, String> {
    s.parse()
}

fn parse_kind(s: &str) -> Result<Kind, String> {
    s.parse()
}

fn parse_level(s: &str) -> Result<crate::analysis::edge::Level, String> {
    s.parse()
}

fn parse_listen(s: &str) -> Result<std::net::SocketAddr, String> {
    s.parse().map_err(|_| format!("{s:?} is not an IP:PORT address (for example 127.0.0.1:10366 or [::1]:10366)"))
}
