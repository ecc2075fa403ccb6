//! The options of the experiments that run a workload: `containers` and
//! `mitigate`.

use std::path::PathBuf;

use clap::Args;

use super::{OutputArgs, parse_fs};
use crate::sandbox::FsType;

pub(super) const CONTAINERS_ABOUT: &str = "A node's life in fast-forward. --count containers, --parallel at a time, each in a mount \
namespace of its own with an overlay of one shared image (the lower layer, on an ext4 or xfs loop filesystem of \
the sandbox) and a snapshot of its own (upper and work directories on the same filesystem, as containerd's \
overlayfs snapshotter keeps them). Each runs --workload for --ops operations, then dies as a container does (its \
last process exits and the overlay goes with its mount namespace), and its snapshot is removed.\n\n\
Workloads: temp-tables (create, write 4 KiB, unlink: an on-disk temporary table), lookups (stat of names that do \
not exist, over 8 directories), files (create and keep), mixed=temp-tables=60,lookups=30,files=10 (shares in \
percent, summing to 100).\n\n\
Per container: dentries created, freed at teardown and left on the host, teardown time and the longest stretch \
on the teardown CPU (the latency probe). At the end the run's own filesystem is unmounted (untimed): what that \
frees is exactly what the containers left, whatever else the node did. From that growth, at --rate containers \
an hour, the time until the host reaches the lockup count of the calibration 'status' uses. Runs whose memory \
estimate exceeds half of MemAvailable are refused unless --force. Needs root.\n\n\
--profile: perf samples the teardown CPU with call graphs during each teardown (at 4000 Hz, perf itself on the \
other CPUs, timestamps on the probe's clock); for the container with the longest teardown stretch the stacks \
inside that stretch (top 5 with their share, counted for the task of the phase it lies in: the exiting container \
or the harness removing the snapshot), over all teardowns the top stacks, and one line naming the path. The JSON \
carries the folded stacks; 'report' draws the flame graph. Where perf or kernel symbols are not available, one \
line says so and the run goes on without it. Starting and stopping perf around each teardown makes the run \
slower (the harness time is not comparable with a run without --profile).";

#[derive(Debug, Args)]
pub struct ContainersArgs {
    /// Containers to run, one after another or --parallel at a time (suffixes k allowed).
    #[arg(long, default_value = crate::bench::containers::DEFAULT_COUNT, value_parser = crate::size::parse_count, allow_hyphen_values = true)]
    pub count: u64,
    /// Containers running at once.
    #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
    pub parallel: u32,
    /// temp-tables, lookups, files, or mixed=temp-tables=60,lookups=30,files=10.
    #[arg(long, default_value = "temp-tables", value_parser = parse_mix)]
    pub workload: crate::workload::container::Mix,
    /// Operations per container (suffixes k, M); 0 measures the harness alone.
    #[arg(long, default_value = crate::bench::containers::DEFAULT_OPS, value_parser = parse_op_count, allow_hyphen_values = true)]
    pub ops: u64,
    /// Containers started per hour on the node, for the projection to the lockup edge.
    #[arg(long, default_value_t = crate::bench::containers::DEFAULT_RATE_PER_HOUR, allow_hyphen_values = true)]
    pub rate: f64,
    /// The host's disk filesystem holding the image and the snapshots: ext4 or xfs.
    #[arg(long, default_value = "ext4", value_parser = parse_fs)]
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
    /// Sample the teardown CPU with perf call graphs during each teardown and name the code behind the longest stretch.
    #[arg(long)]
    pub profile: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// A count of operations, where 0 (the harness alone) is allowed.
fn parse_op_count(s: &str) -> Result<u64, String> {
    if s.trim() == "0" { Ok(0) } else { crate::size::parse_count(s) }
}

fn parse_mix(s: &str) -> Result<crate::workload::container::Mix, String> {
    s.parse()
}

pub(super) const MITIGATE_ABOUT: &str = "Runs a workload that grows the dentry cache under every combination of the --setting \
values (the first values are the baseline), each combination in a fresh filesystem of the sandbox with the \
workload's processes in a fresh memory cgroup limited to --memory-limit, so the memory pressure is the run's own. \
Every second it samples dentry-state (total, unused, negative), the cgroup's kernel memory, the workload's \
operations (queries for mariadb) and the longest stretch the latency probe sees on the workload's CPU. Per \
combination: dentries at the end and at the peak, growth per minute and per 1,000 operations, the negative \
share, the longest stretch, the throughput relative to the baseline (with its spread over --reps), and where 30 \
days of that growth would put the node against its lockup edge. Then a verdict line per knob.\n\n\
Knobs: vm.vfs_cache_pressure=N, vm.vfs_cache_pressure_denom=N, fs.dentry-negative=0|1, and \
drop-caches-every=DURATION|off (dentrylab writes 2 to /proc/sys/vm/drop_caches on that period, from the \
probed CPU, so the drops' own stretch is measured; one value compares it with no drops). All of them act on the \
whole machine: --allow-global is required, and every sysctl's original value is written back when the run ends, \
however it ends (a guardian process does it even after SIGKILL); the output names what was changed and \
restored.\n\n\
Workloads: temp-tables (create, write 4 KiB, unlink uniquely named files, as MariaDB's on-disk temporary \
tables), lookups (stat names that do not exist), files (create files that stay), and mariadb: a real MariaDB \
server (mariadbd, started by dentrylab with --no-defaults in the sandbox, as the mysql user, datadir and tmpdir on \
the sandbox's filesystem, a unix socket, --skip-networking) driven by --clients connections with GROUP BY queries \
that need an on-disk temporary table, Aria and InnoDB temporary tables and INFORMATION_SCHEMA scans. \
--mariadb-option NAME=VALUE (repeatable) adds one more row: the baseline settings with those server options \
(for example tmp_table_size=256M and max_heap_table_size=256M). containers: the life of 'dentrylab containers' \
over and over, one container at a time, all of it in the cgroup: a container in a mount namespace of its own on \
an overlay of a shared image, --container-workload (temp-tables, lookups, files or \
mixed=temp-tables=60,lookups=30,files=10; default mixed) for --container-ops operations (default 1k), its exit \
(the overlay goes with the namespace), its snapshot removed; per combination also the containers torn down per \
minute, the dentries each left on the host (what the run's filesystem still held at the end, per container) and \
the longest stretch of the teardowns (a probe of their own on the same CPU, during each teardown only).\n\n\
A rep that the cgroup's OOM killer ends is named in the notes and the run goes on with the other \
combinations, whose results are kept; the run fails only when every combination was OOM-killed.\n\n\
Default --memory-limit: the cgroup's usage once the workload is set up (for mariadb: the server started and its \
tables loaded) plus 32 MiB (64 MiB for containers: the container processes), so the dentries and the page cache the workload makes compete for memory within \
seconds. Keep runs that change sysctls short on shared machines.";

#[derive(Debug, Args)]
pub struct MitigateArgs {
    /// What grows the dentry cache: temp-tables, lookups, files, mariadb, containers.
    #[arg(long, value_parser = clap::value_parser!(crate::bench::mitigate::Workload))]
    pub workload: crate::bench::mitigate::Workload,
    /// KNOB=V1,V2,... (repeatable; first values = baseline): vm.vfs_cache_pressure, vm.vfs_cache_pressure_denom, fs.dentry-negative, drop-caches-every (these four are global: --allow-global), memory-limit (the run's own cgroup; tmpfs allowed with it alone). fs.dentry-negative acts in d_delete() only (unlinked files), not on failed lookups' negatives.
    #[arg(long = "setting", value_name = "KNOB=V1,V2", value_parser = crate::bench::mitigate::knobs::parse_setting)]
    pub settings: Vec<crate::bench::mitigate::knobs::Setting>,
    /// Memory limit of the workload's cgroup: 256M, 1G. Default: its usage once set up + a headroom for its own memory and freed kernel memory not yet returned (128 MiB; mariadb 160 MiB + 16 MiB per client; containers 64 MiB) + 2 × the largest kernel-memory growth per second measured for the workload idle (lookups 160 MiB, files 170 MiB, temp-tables 48 MiB, containers 9 MiB, mariadb 32 MiB: its page cache and buffers) × --duration, at most half of MemAvailable: a default run does not reach its limit. A reached limit may OOM-kill the workload (its cgroup full of dentries and inodes): the run then reports the kernel's OOM report and goes on. Compare limits with --setting memory-limit=16M,64M.
    #[arg(long, value_parser = crate::bench::mitigate::knobs::parse_memory)]
    pub memory_limit: Option<u64>,
    /// How long each combination runs: 10s, 60s, 2m (1s to 1h).
    #[arg(long, default_value = crate::bench::mitigate::DEFAULT_DURATION, value_parser = parse_mitigate_duration)]
    pub duration: f64,
    /// Repetitions of every combination (interleaved).
    #[arg(long, default_value_t = crate::bench::mitigate::DEFAULT_REPS, value_parser = clap::value_parser!(u32).range(1..=crate::bench::mitigate::MAX_REPS as i64))]
    pub reps: u32,
    /// mariadb: client connections.
    #[arg(long, default_value_t = crate::bench::mitigate::DEFAULT_CLIENTS as u32, value_parser = clap::value_parser!(u32).range(1..=crate::bench::mitigate::MAX_CLIENTS as i64))]
    pub clients: u32,
    /// mariadb: NAME=VALUE server option for one more row (repeatable), e.g. tmp_table_size=256M.
    #[arg(long = "mariadb-option", value_name = "NAME=VALUE", value_parser = crate::bench::mitigate::mariadb::parse_option)]
    pub mariadb_options: Vec<(String, String)>,
    /// containers: each container's workload, as 'containers --workload' (default: mixed=temp-tables=60,lookups=30,files=10).
    #[arg(long, value_name = "MIX", value_parser = parse_mix)]
    pub container_workload: Option<crate::workload::container::Mix>,
    /// containers: operations per container, as 'containers --ops' (default: 1k; suffixes k, M; 0: the harness alone).
    #[arg(long, value_parser = parse_op_count, allow_hyphen_values = true)]
    pub container_ops: Option<u64>,
    /// Filesystem of the workload: ext4 or xfs (tmpfs with --setting memory-limit=… alone).
    #[arg(long, default_value = "ext4", value_parser = parse_fs)]
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
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `--duration`: any non-negative duration; the bounds are checked with the other options.
fn parse_mitigate_duration(s: &str) -> Result<f64, String> {
    crate::bench::mitigate::knobs::parse_duration(s)
        .map(|d| d.as_secs_f64())
        .ok_or_else(|| format!("{s:?} is not a duration (write for example 10s, 60s or 2m)"))
}
