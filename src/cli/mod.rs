//! The command line: the clap definitions (this file, `experiments`,
//! `gvisor`, `node`, `vm`: the commands and their long help), the
//! registry of benchmarks (`registry`), the hidden internal command
//! (`internal`), and the handlers (`handlers/`): one generic handler for
//! every benchmark, one per other command. Each benchmark's command is its
//! own (`bench::<name>::command`: its options beside its output files).
//!
//! In: the process's arguments. Out: an exit code. The top layer: it may
//! import every module below it; only `main` imports it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use crate::output::OutputArgs;

mod experiments;
mod gvisor;
pub mod handlers;
mod internal;
mod node;
pub mod registry;
mod vm;

use experiments::*;
use gvisor::*;
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

/// The commands: the benchmarks (from the registry), the node's
/// (`status`, `exporter`), `report`, `vm`, and the hidden internal one.
#[derive(Debug, Subcommand)]
pub enum Command {
    #[command(flatten)]
    Bench(registry::Benchmarks),
    /// This node now: dentry counts and bytes, memory, watchdog and cache settings, and how far it is from a soft lockup (any user).
    #[command(long_about = STATUS_ABOUT, display_order = 7)]
    Status(StatusArgs),
    /// Serve the figures of 'status' as Prometheus metrics on /metrics (read-only, any user).
    #[command(long_about = EXPORTER_ABOUT, display_order = 8)]
    Exporter(ExporterArgs),
    /// Render saved JSON results as report.md and SVG plots (several results of one benchmark share the axes).
    #[command(long_about = REPORT_ABOUT, display_order = 9)]
    Report(ReportArgs),
    /// Run a dentrylab command in a virtual machine per kernel and preemption model; one matrix of the results.
    #[command(long_about = vm::VM_ABOUT, display_order = 11)]
    Vm(vm::VmArgs),
    /// Where the node's dentries are: per filesystem and per directory, positive and negative, from the kernel's own hash table (root, needs /proc/kcore and BTF).
    #[command(long_about = crate::census::args::ABOUT, display_order = 12)]
    Census(crate::census::Args),
    /// Internal: dentrylab re-executing itself (children, workers, guardians, the guest's init).
    #[command(name = crate::sys::INTERNAL_COMMAND, hide = true)]
    Internal {
        #[command(subcommand)]
        command: internal::Internal,
    },
}

const REPORT_ABOUT: &str = "Render saved JSON results (written by --json) as a Markdown report, report.md, and SVG plots \
                      beside it, in DIR. Reclaim results get reclaim time, ns per dentry and the longest gap \
                      against the dentry count on log axes, with the power-law fit, its extrapolation and the \
                      soft-lockup threshold. Several results of the same benchmark (two kernels, tmpfs vs ext4, \
                      hardlink vs file) are drawn on the same axes and compared in one table. A kernel matrix \
                      written by 'dentrylab vm --json' (schema dentrylab.vm-matrix/1) gets one table row per \
                      kernel, preemption model and accelerator/clock (ns/dentry, longest stretch and its share, \
                      gap exponent and predicted edge with their 90% intervals, watchdog, heaviest kernel path, \
                      or the row's error) and one chart of every row's longest-gap curve.\n\n\
                      Rendering reads only the files: the same files always give the same report. Results of \
                      an unknown or newer schema are refused with a line naming the file.";

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

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files written by --json (several of one benchmark are compared on shared axes).
    #[arg(value_name = "RESULT.json", required = true)]
    pub results: Vec<PathBuf>,
    /// Directory to write report.md and the SVG plots into (created if needed; files in it are replaced).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
}
