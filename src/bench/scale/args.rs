//! `dentrylab scale`'s options as clap parses them, and the run's
//! [`Options`] they give (defaults resolved: the thread sweep from the CPU
//! count, every operation). `cli` flattens [`Args`] into its command and
//! adds the output files.

use super::{MAX_SECONDS, MIN_SECONDS, Mode, Options, ThreadSpec};
use crate::error::UsageError;
use crate::sandbox::FsType;
use crate::workload::lookup::Op;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Worker counts: counts, ranges and 'cpus', e.g. 1..8, 1,2,4, 1..cpus [default: every count up to the CPU count; powers of two and the CPU count above 8 CPUs].
    #[arg(long, value_parser = |s: &str| s.parse::<ThreadSpec>(), allow_hyphen_values = true)]
    pub threads: Option<ThreadSpec>,
    /// Run each worker as a process of its own (own file table) instead of a thread.
    #[arg(long)]
    pub procs: bool,
    /// Seconds each worker loops per step.
    #[arg(long, default_value_t = super::DEFAULT_SECONDS, value_parser = parse_seconds, allow_hyphen_values = true)]
    pub seconds: f64,
    /// Operations to run, comma-separated [default: all]: stat, stat-missing, open-close, create-unlink-shared, create-unlink-private.
    #[arg(long, value_parser = parse_ops)]
    pub ops: Option<Ops>,
    /// Filesystem the operations run on.
    #[arg(long, default_value = "tmpfs", value_parser = |s: &str| s.parse::<FsType>())]
    pub fs: FsType,
    /// Time one call in this many (the others are only counted).
    #[arg(long, default_value_t = super::DEFAULT_SAMPLE_EVERY, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub sample_every: u64,
    /// After the sweep, run each operation twice more at the largest count under perf (perf record, perf lock) and name the kernel functions and locks its time goes to.
    #[arg(long)]
    pub profile: bool,
}

impl Args {
    /// The run's options: `cpus` is what `--threads` counts against
    /// (`cpus`, its default sweep); a count it cannot resolve is a usage
    /// error.
    pub(crate) fn options(&self, cpus: usize) -> Result<Options, UsageError> {
        let threads = match &self.threads {
            Some(spec) => spec.resolve(cpus).map_err(|e| UsageError(format!("--threads: {e}")))?,
            None => super::default_threads(cpus),
        };
        Ok(Options {
            ops: self.ops.as_ref().map_or_else(|| Op::ALL.to_vec(), |o| o.0.clone()),
            threads,
            mode: if self.procs { Mode::Processes } else { Mode::Threads },
            seconds: self.seconds,
            fs: self.fs,
            sample_every: self.sample_every,
            profile: self.profile,
        })
    }
}

/// The operations of `--ops`, in the order given (one value to clap, not
/// a list of values).
#[derive(Debug, Clone)]
pub(crate) struct Ops(pub Vec<Op>);

fn parse_ops(s: &str) -> Result<Ops, String> {
    let mut v: Vec<Op> = Vec::new();
    for part in s.split(',') {
        let op: Op = part.trim().parse()?;
        if v.contains(&op) {
            return Err(format!("{op} is listed twice"));
        }
        v.push(op);
    }
    Ok(Ops(v))
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (MIN_SECONDS..=MAX_SECONDS).contains(&v) => Ok(v),
        _ => Err(format!("use a number of seconds from {MIN_SECONDS} to {MAX_SECONDS}")),
    }
}
