//! `dentrylab pollute`'s options as clap parses them, and the run's
//! [`Options`] they give (the CPU, which needs the machine, is chosen by the
//! caller with [`super::choose_cpu`]). `cli` flattens [`Args`] into its
//! command and adds the output files.

use super::Options;
use crate::sandbox::FsType;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Negative dentries to add, a sweep: comma-separated totals with suffixes, ascending (each size adds to the last).
    #[arg(long, default_value = super::DEFAULT_NEGATIVES, value_parser = parse_sizes, allow_hyphen_values = true)]
    pub negatives: Sizes,
    /// Repetitions, each on a fresh filesystem (the slowdown's interval needs at least 2).
    #[arg(long, default_value_t = super::DEFAULT_REPS, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub reps: u32,
    /// Timed calls of each probe at each size in each repetition (the miss probe makes a quarter of them).
    #[arg(long, default_value_t = super::DEFAULT_CALLS as u64,
          value_parser = clap::value_parser!(u64).range(super::MIN_CALLS as u64..=super::MAX_CALLS as u64))]
    pub calls: u64,
    /// Filesystem to pollute: ext4 or xfs (tmpfs keeps no negative dentries).
    #[arg(long, default_value = "ext4", value_parser = |s: &str| s.parse::<FsType>())]
    pub fs: FsType,
    /// CPU the measuring thread is pinned to (default: the last allowed CPU).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Run even if the negative dentries would take more than half of MemAvailable.
    #[arg(long)]
    pub force: bool,
}

impl Args {
    /// The run's options: `cpu` is the one chosen for `--cpu`.
    pub(crate) fn options(&self, cpu: usize) -> Options {
        Options {
            negatives: self.negatives.0.clone(),
            reps: self.reps,
            calls: self.calls as usize,
            fs: self.fs,
            cpu,
            force: self.force,
        }
    }
}

/// The sizes of `--negatives`, in ascending order (one value to clap, not
/// a list of values).
#[derive(Debug, Clone)]
pub(crate) struct Sizes(pub Vec<u64>);

fn parse_sizes(s: &str) -> Result<Sizes, String> {
    crate::size::parse_sizes(s).map(Sizes)
}
