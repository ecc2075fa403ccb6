//! The command line: the clap definitions (this file, `node`, `vm`: the
//! commands and their long help), the registry of benchmarks (`registry`,
//! which expands `bench::each_benchmark!`), the hidden internal command
//! (`internal`), and the handlers (`handlers/`): one generic handler for
//! every benchmark, one per other command. Each benchmark's command is its
//! own (`bench::<name>::command`: its options beside its output files, its
//! help).
//!
//! In: the process's arguments. Out: an exit code ([`run`]). The top layer:
//! it may import every module below it; only the binary (`main.rs`) uses it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use crate::bench::common::Context;
use crate::procfs::ProcRoot;

pub(crate) use crate::output::OutputArgs;

pub(crate) mod handlers;
mod internal;
mod node;
pub mod registry;
mod vm;

pub(crate) use node::*;
pub(crate) use vm::VmArgs;

/// `--version`: the package's version, the git revision and the compiler
/// of the build (build.rs), as `dentrylab_build_info` says them.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (revision ",
    env!("DENTRYLAB_REVISION"),
    ", rustc ",
    env!("DENTRYLAB_RUSTC"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "dentrylab",
    version = VERSION,
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
    pub(crate) command: Command,
}

/// The commands: the benchmarks (from the registry), the node's
/// (`status`, `exporter`), `report`, `vm`, and the hidden internal one.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
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
    /// What to set on this node: per knob the kernel has, the value, its measured effect on the count and the first incident, its cost and failure mode (any user).
    #[command(long_about = ADVISE_ABOUT, display_order = 13)]
    Advise(AdviseArgs),
    /// Internal: dentrylab re-executing itself (children, workers, guardians, the guest's init).
    #[command(name = crate::sys::INTERNAL_COMMAND, hide = true)]
    Internal(internal::Internal),
}

/// Runs a parsed command: a benchmark through the generic handler (with
/// the live `/proc` and the lockup edge of the calibration it would use),
/// every other command through its own.
pub fn run(cli: Cli) -> Result<ExitCode> {
    let proc = ProcRoot::default();
    let lockup_edge = |dir: Option<&std::path::Path>| handlers::lockup_edge(dir, &proc);
    let cx = Context { proc: &proc, lockup_edge: &lockup_edge };
    match cli.command {
        Command::Bench(b) => b.run(&cx),
        Command::Status(a) => handlers::node::status(a),
        Command::Exporter(a) => handlers::node::exporter(a),
        Command::Report(a) => handlers::report::run(a),
        Command::Vm(a) => handlers::vm::run(a),
        Command::Census(a) => handlers::census::run(a),
        Command::Advise(a) => handlers::advise::run(a),
        Command::Internal(command) => command.run(),
    }
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

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// Result files written by --json (several of one benchmark are compared on shared axes).
    #[arg(value_name = "RESULT.json", required = true)]
    pub results: Vec<PathBuf>,
    /// Directory to write report.md and the SVG plots into (created if needed; files in it are replaced).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
}
