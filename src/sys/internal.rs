//! The internal commands (`dentrylab __internal NAME ...`): each is
//! declared beside the code it runs, as an [`Entry`] under the name the
//! parent spawns it with, and listed by its owner (a benchmark's
//! `Benchmark::INTERNAL`, `bench::vm::INTERNAL`, the guardians here and
//! in `sandbox::cgroup`); `cli::registry` gathers the lists and
//! `cli::internal` dispatches by name. Every name starts with `__`.

use anyhow::Result;

/// One internal command, whatever its arguments.
pub(crate) trait InternalCommand: Sync {
    /// Its name (`__reclaim-child`), as the parent spawns it.
    fn name(&self) -> &'static str;
    /// Other names it answers to (kept for scripts written against them).
    fn aliases(&self) -> &'static [&'static str];
    /// Its arguments as a clap command (named, with its one line of help).
    fn command(&self) -> clap::Command;
    /// Runs it on its parsed arguments.
    fn run(&self, m: &clap::ArgMatches) -> Result<()>;
}

/// An internal command whose arguments are `A`.
pub(crate) struct Entry<A> {
    pub name: &'static str,
    /// Its one line of help.
    pub about: &'static str,
    pub aliases: &'static [&'static str],
    pub run: fn(A) -> Result<()>,
}

impl<A: clap::Args + clap::FromArgMatches> InternalCommand for Entry<A> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn aliases(&self) -> &'static [&'static str] {
        self.aliases
    }

    fn command(&self) -> clap::Command {
        A::augment_args(clap::Command::new(self.name).about(self.about).aliases(self.aliases))
    }

    fn run(&self, m: &clap::ArgMatches) -> Result<()> {
        (self.run)(A::from_arg_matches(m)?)
    }
}

/// The one argument of the internal commands that take a spec: what the
/// parent serialised for the child, as JSON.
#[derive(Debug, clap::Args)]
pub(crate) struct SpecArg {
    /// The spec, as JSON.
    pub spec: String,
}

/// The arguments of an internal command that takes none.
#[derive(Debug, clap::Args)]
pub(crate) struct NoArgs {}
