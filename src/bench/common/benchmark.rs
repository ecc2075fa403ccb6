//! What a benchmark is to the command line: [`Benchmark`], implemented in
//! each benchmark's folder (`command.rs`) and listed once, on one line, in
//! the registry (`each_benchmark!` in `bench/mod.rs`, which `cli::registry`
//! expands), whose one generic handler drives every benchmark the same
//! way: plan (every usage error), open the outputs, run, emit, finish.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::output::{OutputArgs, Paths};
use crate::procfs::ProcRoot;
use crate::render::Render;

/// What a benchmark gets from the process and from the layers above
/// `bench`.
pub(crate) struct Context<'a> {
    pub proc: &'a ProcRoot,
    /// The lockup edge of the calibration `status` uses, read from the
    /// state directory given (`status` sits above `bench`, so the command
    /// line passes it in).
    pub lockup_edge: &'a dyn Fn(Option<&Path>) -> Result<LockupEdge>,
}

/// This node's lockup edge, from its calibration.
pub(crate) struct LockupEdge {
    /// The calibration's name.
    pub calibration: String,
    /// The dentry count at which a reclaim would trip the watchdog (none
    /// when the calibration never reaches it).
    pub dentries: Option<f64>,
}

/// The output files a command line names, opened before the run.
pub(crate) trait OutputPaths {
    fn output_paths(&self) -> Paths;
}

/// The command line of a benchmark whose one output is `--json`: its own
/// options (`A`, its folder's clap `Args`) beside the output file.
#[derive(Debug, clap::Args)]
pub(crate) struct WithJson<A: clap::Args> {
    #[command(flatten)]
    pub args: A,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl<A: clap::Args> OutputPaths for WithJson<A> {
    fn output_paths(&self) -> Paths {
        Paths::json(&self.output)
    }
}

/// One benchmark: its command (arguments and help), its result, and the
/// steps the generic handler runs in order.
pub(crate) trait Benchmark {
    /// Its command's arguments: the benchmark's options and its outputs
    /// ([`WithJson`] when `--json` is the only one).
    type Args: clap::Args + OutputPaths + std::fmt::Debug;
    /// What [`Benchmark::plan`] made of the arguments for the run.
    type Plan;
    /// Its result: printed, written as JSON, read back by `report`.
    type Result: Render + Serialize + DeserializeOwned + Clone + std::fmt::Debug + 'static;

    /// Its command's one-line help (in `dentrylab --help` and atop its
    /// own), without a final period.
    const ABOUT: &'static str;
    /// Its `--help` below that line, when it has more to say.
    const LONG_ABOUT: Option<&'static str> = None;
    /// Its place in `dentrylab --help`'s list of commands.
    const DISPLAY_ORDER: usize;
    /// The fewest arguments a valid run takes (besides the outputs):
    /// `tests/outputs.rs` runs each with `--json` into a missing directory.
    const MINIMAL_ARGS: &'static [&'static str] = &[];

    /// Its internal commands (`dentrylab __internal NAME`, hidden): the
    /// children and workers it re-executes itself as.
    const INTERNAL: &'static [&'static dyn crate::sys::internal::InternalCommand] = &[];

    /// Whether `report` renders its saved results (when not, a saved one
    /// is refused with a line naming the benchmark).
    const REPORTS: bool = true;
    /// Announcements go to standard output (unless the JSON goes there),
    /// not standard error: `create`, whose lines are its output.
    const ANNOUNCE_ON_STDOUT: bool = false;

    /// The options and their checks: every usage error (exit 2) is raised
    /// here, before any output is opened.
    fn plan(args: Self::Args, cx: &Context) -> Result<Self::Plan>;

    /// The run: guardians, the sandbox, the measurement.
    fn run(plan: &mut Self::Plan, cx: &Context, announce: &dyn Fn(&str)) -> Result<Self::Result>;

    /// After the outputs are written: what is left to do (`reclaim` saves
    /// its calibration) and the exit code.
    fn finish(plan: Self::Plan, result: &Self::Result) -> Result<ExitCode> {
        let _ = (plan, result);
        Ok(ExitCode::SUCCESS)
    }
}
