//! The registry's commands: every benchmark of the list in `bench/mod.rs`
//! (`bench::each_benchmark!`, one line per benchmark), expanded here into
//! its command (a variant of [`Benchmarks`], flattened into
//! [`super::Command`], with the help, display order and name its
//! [`Benchmark`] carries), its dispatch to the one generic handler
//! ([`super::handlers::run`]), its name in [`NAMES`], and the reader with
//! which `report` loads its saved results ([`readers`]). Adding a
//! benchmark: its folder under `bench/` (with its [`Benchmark`]
//! implementation) and one line in that list; nothing here.
//!
//! The order of the list is the order `report` names the benchmarks it
//! renders; `DISPLAY_ORDER` is the order of `--help`.

use std::process::ExitCode;

use anyhow::Result;

use super::handlers;
use crate::bench::common::{Benchmark, Context};
use crate::render::Render;
use crate::report::document::Reader;
use crate::sys::internal::InternalCommand;

macro_rules! registry {
    ($($module:ident => $bench:ident,)*) => {
        /// The benchmarks' commands (flattened into [`super::Command`]).
        #[derive(Debug, clap::Subcommand)]
        pub(crate) enum Benchmarks {
            $(
                #[command(
                    name = <<crate::bench::$module::$bench as Benchmark>::Result as Render>::BENCHMARK,
                    about = <crate::bench::$module::$bench as Benchmark>::ABOUT,
                    long_about = <crate::bench::$module::$bench as Benchmark>::LONG_ABOUT,
                    display_order = <crate::bench::$module::$bench as Benchmark>::DISPLAY_ORDER,
                )]
                $bench(<crate::bench::$module::$bench as Benchmark>::Args),
            )*
        }

        impl Benchmarks {
            /// Runs the benchmark through the one generic handler.
            pub(crate) fn run(self, cx: &Context) -> Result<ExitCode> {
                match self {
                    $(Benchmarks::$bench(a) => handlers::run::<crate::bench::$module::$bench>(a, cx),)*
                }
            }
        }

        /// Every benchmark's name (its command, and its results'
        /// `benchmark` field), in the registry's order.
        pub const NAMES: &[&str] =
            &[$(<<crate::bench::$module::$bench as Benchmark>::Result as Render>::BENCHMARK,)*];

        /// Every benchmark's fewest valid arguments
        /// ([`Benchmark::MINIMAL_ARGS`]), in the registry's order.
        pub const MINIMAL_ARGS: &[&[&str]] = &[$(<crate::bench::$module::$bench as Benchmark>::MINIMAL_ARGS,)*];

        /// Every internal command: the benchmarks' own
        /// ([`Benchmark::INTERNAL`]), in the registry's order, then `vm`'s
        /// and the guardians' (`sys`, `sandbox`).
        pub(crate) fn internal_commands() -> Vec<&'static dyn InternalCommand> {
            let mut all: Vec<&'static dyn InternalCommand> = Vec::new();
            $(all.extend_from_slice(<crate::bench::$module::$bench as Benchmark>::INTERNAL);)*
            all.extend_from_slice(crate::bench::vm::INTERNAL);
            all.push(&crate::sys::guardian::SYSCTL_GUARD_ENTRY);
            all.push(&crate::sandbox::cgroup::GUARD_ENTRY);
            all
        }

        /// How `report` reads each benchmark's saved results, in the
        /// registry's order, then files of their own schema (`vm`'s matrix).
        pub(crate) fn readers() -> Vec<Reader> {
            vec![$(reader::<crate::bench::$module::$bench>(),)* vm_reader()]
        }
    };
}

crate::bench::each_benchmark!(registry);

/// How `report` reads a saved `vm` matrix: its own schema (a string, not
/// a result's version number), rendered by the matrix itself.
fn vm_reader() -> Reader {
    use crate::bench::vm::matrix::{MatrixFile, VM_MATRIX_SCHEMA, VM_MATRIX_SCHEMA_PREFIX};
    Reader::of_schema::<MatrixFile>(VM_MATRIX_SCHEMA, VM_MATRIX_SCHEMA_PREFIX, "matrix", "matrices")
}

/// The reader of `B`'s results: its renderer, or a refusal naming it.
fn reader<B: Benchmark>() -> Reader {
    if B::REPORTS { Reader::of::<B::Result>() } else { Reader::not_yet(<B::Result as Render>::BENCHMARK) }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Each benchmark's command is named as its results' `benchmark`
    /// field, names are unique, and each has its one line of help, without
    /// a final period (as clap writes a doc comment's).
    #[test]
    fn names_are_the_commands() {
        let cli = super::super::Cli::command();
        for name in super::NAMES {
            let about = cli.find_subcommand(name).and_then(|c| c.get_about()).map(ToString::to_string);
            assert!(about.as_ref().is_some_and(|a| !a.is_empty() && !a.ends_with('.')), "{name}: {about:?}");
            assert_eq!(super::NAMES.iter().filter(|n| *n == name).count(), 1, "{name} twice");
        }
        let readers = super::readers();
        let names: Vec<&str> = readers.iter().map(|r| r.benchmark).collect();
        assert_eq!(names[..super::NAMES.len()], *super::NAMES);
        assert_eq!(names[super::NAMES.len()..], ["vm"]);
    }

    /// Every internal command once, named with the `__` prefix, its
    /// arguments a valid clap command.
    #[test]
    fn internal_commands_are_registered_once_with_the_prefix() {
        let all = super::internal_commands();
        let names: Vec<&str> = all.iter().map(|c| c.name()).collect();
        assert!(names.len() >= 11, "{names:?}");
        for c in &all {
            assert!(c.name().starts_with("__"), "{} lacks the __ prefix", c.name());
            assert_eq!(names.iter().filter(|n| **n == c.name()).count(), 1, "{} twice", c.name());
            c.command().debug_assert();
        }
        for n in ["__reclaim-child", "__sysctl-guard", "__cgroup-guard", "__vm-init", "__scale-worker", "__fit-waits"] {
            assert!(names.contains(&n), "{n} missing from {names:?}");
        }
    }

    /// No two commands share a place in `dentrylab --help`: the benchmarks'
    /// [`Benchmark::DISPLAY_ORDER`] and the other commands' `display_order`
    /// are written in several files.
    #[test]
    fn display_orders_do_not_clash() {
        let cli = super::super::Cli::command();
        let mut seen = std::collections::BTreeMap::new();
        for c in cli.get_subcommands().filter(|c| !c.is_hide_set()) {
            if let Some(other) = seen.insert(c.get_display_order(), c.get_name().to_string()) {
                panic!("{} and {other} both have display order {}", c.get_name(), c.get_display_order());
            }
        }
        assert!(seen.len() >= 13, "{seen:?}");
    }

    /// Each benchmark's fewest valid arguments parse as its command (the
    /// outputs test runs them).
    #[test]
    fn minimal_args_parse() {
        use clap::Parser;
        for (name, args) in super::NAMES.iter().zip(super::MINIMAL_ARGS) {
            let argv = ["dentrylab", *name].into_iter().chain(args.iter().copied());
            let parsed = super::super::Cli::try_parse_from(argv);
            assert!(parsed.is_ok(), "{name} {args:?}: {:?}", parsed.err());
        }
    }
}
