//! The command line: the clap definitions (this file, `experiments`,
//! `gvisor`, `node`, `vm`) and one handler per command (`handlers/`), which
//! turns its arguments into the option struct of the code that runs it.
//! Each benchmark's own options are its clap `Args` (`bench::<name>::Args`,
//! whose `options` gives that struct); its command here flattens them
//! beside the output files.
//!
//! In: the process's arguments. Out: an exit code. The top layer: it may
//! import every module below it; only `main` imports it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod experiments;
mod gvisor;
pub mod handlers;
mod node;
mod vm;

pub use experiments::*;
pub use gvisor::*;
pub use node::*;
pub use vm::VmArgs;

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
    /// Lookup latency of hot paths before and after N negative dentries, same and other directory (the 2020 lookup-pollution report's question; docs/background.md).
    #[command(long_about = POLLUTE_ABOUT)]
    Pollute(PolluteArgs),
    /// Parallel unlink of a large tree: throughput timeline, dentry high-water mark, oscillation (the 2011 unlink-regression report's experiment; docs/background.md).
    #[command(long_about = CHURN_ABOUT)]
    Churn(ChurnArgs),
    /// Test dentry-cache mitigations A/B (sysctls, periodic drop_caches, MariaDB options) on a workload in a memory cgroup.
    #[command(long_about = MITIGATE_ABOUT)]
    Mitigate(MitigateArgs),
    /// Internal: the workload process of 'mitigate'.
    #[command(name = crate::bench::mitigate::one::WORKER_COMMAND, hide = true)]
    MitigateWorker(crate::bench::mitigate::WorkerArgs),
    /// Path-lookup scalability: stat, negative stat, open+close, create+unlink from 1..N threads.
    #[command(long_about = SCALE_ABOUT)]
    Scale(ScaleArgs),
    /// Internal: one worker process of 'scale --procs'.
    #[command(name = crate::bench::scale::SCALE_WORKER, hide = true)]
    ScaleWorker(crate::bench::scale::WorkerArgs),
    /// The same workload natively and inside gVisor's runsc: lookups against -dcache sizes, a build-like tree.
    #[command(long_about = GVISOR_ABOUT)]
    Gvisor(GvisorArgs),
    /// Internal: the workload process of 'gvisor' (native or inside runsc).
    #[command(name = crate::bench::gvisor::WORKER, hide = true)]
    GvisorWorker(SpecArg),
    /// This node now: dentry counts and bytes, memory, watchdog and cache settings, and how far it is from a soft lockup (any user).
    #[command(long_about = STATUS_ABOUT)]
    Status(StatusArgs),
    /// Serve the figures of 'status' as Prometheus metrics on /metrics (read-only, any user).
    #[command(long_about = EXPORTER_ABOUT)]
    Exporter(ExporterArgs),
    /// Render saved JSON results as report.md and SVG plots (several results of one benchmark share the axes).
    #[command(
        long_about = "Render saved JSON results (written by --json) as a Markdown report, report.md, and SVG plots \
                      beside it, in DIR. Reclaim results get reclaim time, ns per dentry and the longest gap \
                      against the dentry count on log axes, with the power-law fit, its extrapolation and the \
                      soft-lockup threshold. Several results of the same benchmark (two kernels, tmpfs vs ext4, \
                      hardlink vs file) are drawn on the same axes and compared in one table. A kernel matrix \
                      written by 'dentrylab vm --json' (schema dentrylab.vm-matrix/1) gets one table row per \
                      kernel, preemption model and accelerator/clock (ns/dentry, longest stretch and its share, \
                      gap exponent and predicted edge with their 90% intervals, watchdog, heaviest kernel path, \
                      or the row's error) and one chart of every row's longest-gap curve.\n\n\
                      Rendering reads only the files: the same files always give the same report. Results of \
                      an unknown or newer schema are refused with a line naming the file."
    )]
    Report(ReportArgs),
    /// Containers on overlayfs run a workload and die: what each leaves on the host, teardown stretch, time to the lockup edge.
    #[command(long_about = CONTAINERS_ABOUT)]
    Containers(ContainersArgs),
    /// Internal: the containers worker of 'mitigate --workload containers'.
    #[command(name = crate::bench::mitigate::containers::WORKER_COMMAND, hide = true)]
    MitigateContainers(SpecArg),
    /// Internal: one container of 'containers'.
    #[command(name = crate::bench::containers::child::CHILD_COMMAND, hide = true)]
    ContainerChild(SpecArg),
    /// Where the node's dentries are: per filesystem and per directory, positive and negative, from the kernel's own hash table (root, needs /proc/kcore and BTF).
    #[command(long_about = crate::census::args::ABOUT)]
    Census(crate::census::Args),
    /// Run a dentrylab command in a virtual machine per kernel and preemption model; one matrix of the results.
    #[command(long_about = vm::VM_ABOUT)]
    Vm(vm::VmArgs),
    /// Internal: the guest's init (PID 1 of the initramfs 'vm' builds).
    #[command(name = "__vm-init", hide = true)]
    VmInit,
    /// Internal: removes a 'vm' run's temporary directories when dentrylab ends, however it ends.
    #[command(name = "__vm-guard", hide = true)]
    VmGuard {
        /// Directories to remove.
        paths: Vec<PathBuf>,
    },
    /// Internal: the generator child of `reclaim --method ns-exit|memcg`.
    #[command(name = crate::bench::reclaim::child::CHILD_COMMAND, hide = true)]
    ReclaimChild(SpecArg),
    /// Internal: puts a sysctl (watchdog_thresh) back when dentrylab ends, however it ends.
    #[command(name = crate::sys::guardian::SYSCTL_GUARD_COMMAND, hide = true)]
    SysctlGuard(crate::bench::reclaim::sysctl_guard::GuardArgs),
    /// Internal: removes dentrylab's memory cgroups when dentrylab ends, however it ends.
    #[command(name = crate::sandbox::cgroup::GUARD_COMMAND, hide = true)]
    CgroupGuard(crate::sandbox::cgroup::GuardArgs),
}

const SCALE_ABOUT: &str = "Path-lookup scalability across CPUs: the 2002 dcache scalability paper's question, asked of today's RCU path walk (docs/background.md).\n\n\
For each operation and each worker count of the sweep, the workers repeat the operation for --seconds on a \
fresh filesystem in the sandbox. Operations: stat (an existing file 8 path components deep), stat-missing \
(a missing name in the same directory: a negative lookup), open-close (the deep file), create-unlink-shared \
(create+close+unlink, all workers in one directory), create-unlink-private (one directory per worker).\n\n\
Reported per count: operations/s, speedup and efficiency against perfect scaling from the smallest count \
(ops(n) / (n · ops(1))), the system-time share and how many CPUs were busy (getrusage per worker), and the \
per-call latency p50/p99 (one call in --sample-every timed with CLOCK_MONOTONIC). With --profile, two more \
steps at the largest count run under perf (one with cpu-clock samples, one with the lock-contention \
tracepoints) to name the kernel functions and locks the time goes to; what this machine cannot do is said, not guessed.\n\n\
tmpfs keeps no negative dentries, so stat-missing on tmpfs measures dentry allocation under the directory \
lock; use a disk filesystem (--fs) for cached negative lookups.";

const POLLUTE_ABOUT: &str = "The question of the 2020 lookup-pollution report (docs/background.md), measured call by call: do negative dentries slow down lookups of \
hot, existing paths?\n\n\
Each repetition mounts a fresh ext4 (or xfs) in the sandbox with two directories of hot files: polluted/ (where \
the negative dentries go, as that report's /dev/null$i went into /dev) and other/. Every call of six probes is timed \
with CLOCK_MONOTONIC: stat and open+close of a hot file in each directory, a stat that hits a cached negative \
dentry, and a stat of a name never looked up (a miss, answered by the filesystem). Then negative dentries are \
added to polluted/ up to each size of --negatives in turn, and the probes are timed again, in the same run.\n\n\
Reported per size and probe: p50, p99, max and mean latency, and the slowdown against the unpolluted \
measurement: per repetition the ratio of medians, over repetitions their geometric mean with a 95% Student-t \
interval. dentry-state before and after each size (nr_negative is the witness). The output says plainly whether \
the report's effect (hot lookups slowing as negative dentries pile up) shows on this kernel.\n\n\
tmpfs (and devtmpfs, where that report polluted /dev) keeps no negative dentries: --fs tmpfs is refused.";

const CHURN_ABOUT: &str = "The experiment of the 2011 unlink-regression report (docs/background.md): an N-way parallel unlink of a large tree.\n\n\
A fresh ext4 (or xfs) in the sandbox gets --files empty files spread over --dirs directories; it is then \
unmounted and mounted again so the removal starts with a cold cache, as the report's did (--warm skips this). \
--workers threads unlink the files, each its share of the directories, while the unlink counter, dentry-state \
(nr_dentry, nr_negative) and meminfo are sampled every --interval.\n\n\
Reported: the throughput timeline, the steady-state rate and dentry count (the middle 80% of the timeline), the \
dentry high-water mark, how many unlinked files stayed cached as negative dentries, what the rmdirs and the final umount freed, \
and whether the throughput oscillates: the autocorrelation of the detrended rate gives the period, and the \
peak/trough ratio its depth (the report saw about 20 s, 80k against 20k unlinks/s).\n\n\
Sizes that would take more than half of MemAvailable (about 2000 bytes per file) are refused unless --force.";

/// Output options every command shares.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Write the result as JSON to FILE ('-' for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `reclaim`: the benchmark's own options ([`crate::bench::reclaim::Args`])
/// and the output files: the JSON, a Markdown section, a full report.
#[derive(Debug, Args)]
pub struct ReclaimArgs {
    #[command(flatten)]
    pub reclaim: crate::bench::reclaim::Args,
    /// Also write a Markdown report section to FILE.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Also write the full report (report.md and SVG plots, as 'dentrylab report' does) into DIR, created if needed.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files written by --json (several of one benchmark are compared on shared axes).
    #[arg(value_name = "RESULT.json", required = true)]
    pub results: Vec<PathBuf>,
    /// Directory to write report.md and the SVG plots into (created if needed; files in it are replaced).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
}

/// `create`: the benchmark's own options ([`crate::bench::create::Args`])
/// and the output files.
#[derive(Debug, Args)]
pub struct CreateArgs {
    #[command(flatten)]
    pub create: crate::bench::create::Args,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `scale`: the benchmark's own options ([`crate::bench::scale::Args`])
/// and the output files.
#[derive(Debug, Args)]
pub struct ScaleArgs {
    #[command(flatten)]
    pub scale: crate::bench::scale::Args,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `pollute`: the benchmark's own options ([`crate::bench::pollute::Args`])
/// and the output files.
#[derive(Debug, Args)]
pub struct PolluteArgs {
    #[command(flatten)]
    pub pollute: crate::bench::pollute::Args,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `churn`: the benchmark's own options ([`crate::bench::churn::Args`]) and
/// the output files.
#[derive(Debug, Args)]
pub struct ChurnArgs {
    #[command(flatten)]
    pub churn: crate::bench::churn::Args,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The one argument of the hidden re-exec subcommands that take a spec
/// (`__container-child`, `__reclaim-child`, `__gvisor-worker`, the
/// mitigate containers worker): what the parent serialised for the child.
#[derive(Debug, clap::Args)]
pub struct SpecArg {
    /// The spec, as JSON.
    pub spec: String,
}
