//! The registry: every benchmark, once. One line per benchmark (with its
//! help) gives its command (a variant of [`Benchmarks`], flattened into
//! [`super::Command`]), its dispatch to the one generic handler
//! ([`super::handlers::run`]), its name in [`NAMES`], and the reader with
//! which `report` loads its saved results ([`readers`]). Adding a benchmark:
//! its folder under `bench/` (with its [`Benchmark`] implementation) and
//! one line here.
//!
//! The order of the lines is the order `report` names the benchmarks it
//! renders; `display_order` is the order of `--help`.

use std::process::ExitCode;

use anyhow::Result;

use super::handlers;
use super::{CHURN_ABOUT, CONTAINERS_ABOUT, GVISOR_ABOUT, MITIGATE_ABOUT, POLLUTE_ABOUT, SCALE_ABOUT};
use crate::bench::common::{Benchmark, Context};
use crate::bench::{churn, containers, create, gvisor, mitigate, pollute, reclaim, scale};
use crate::render::Render;
use crate::report::document::Reader;

macro_rules! registry {
    ($($(#[$attr:meta])* $variant:ident => $bench:ty,)*) => {
        /// The benchmarks' commands (flattened into [`super::Command`]).
        #[derive(Debug, clap::Subcommand)]
        pub enum Benchmarks {
            $($(#[$attr])* $variant(<$bench as Benchmark>::Args),)*
        }

        impl Benchmarks {
            /// Runs the benchmark through the one generic handler.
            pub fn run(self, cx: &Context) -> Result<ExitCode> {
                match self {
                    $(Benchmarks::$variant(a) => handlers::run::<$bench>(a, cx),)*
                }
            }
        }

        /// Every benchmark's name (its command, and its results'
        /// `benchmark` field), in the registry's order.
        pub const NAMES: &[&str] = &[$(<<$bench as Benchmark>::Result as Render>::BENCHMARK,)*];

        /// How `report` reads each benchmark's saved results.
        pub fn readers() -> Vec<Reader> {
            vec![$(reader::<$bench>(),)*]
        }
    };
}

registry! {
    /// Sweep sizes: create dentries, reclaim them, time and probe the reclaim, fit, extrapolate, verdict.
    #[command(display_order = 0)]
    Reclaim => reclaim::Reclaim,
    /// Lookup latency of hot paths before and after N negative dentries, same and other directory (the 2020 lookup-pollution report's question; docs/background.md).
    #[command(long_about = POLLUTE_ABOUT, display_order = 2)]
    Pollute => pollute::Pollute,
    /// Parallel unlink of a large tree: throughput timeline, dentry high-water mark, oscillation (the 2011 unlink-regression report's experiment; docs/background.md).
    #[command(long_about = CHURN_ABOUT, display_order = 3)]
    Churn => churn::Churn,
    /// Path-lookup scalability: stat, negative stat, open+close, create+unlink from 1..N threads.
    #[command(long_about = SCALE_ABOUT, display_order = 5)]
    Scale => scale::Scale,
    /// Test dentry-cache mitigations A/B (sysctls, periodic drop_caches, MariaDB options) on a workload in a memory cgroup.
    #[command(long_about = MITIGATE_ABOUT, display_order = 4)]
    Mitigate => mitigate::Mitigate,
    /// Containers on overlayfs run a workload and die: what each leaves on the host, teardown stretch, time to the lockup edge.
    #[command(long_about = CONTAINERS_ABOUT, display_order = 10)]
    Containers => containers::Containers,
    /// Only create dentries in a sandbox and hold them for manual experiments.
    #[command(display_order = 1)]
    Create => create::Create,
    /// The same workload natively and inside gVisor's runsc: lookups against -dcache sizes, a build-like tree.
    #[command(long_about = GVISOR_ABOUT, display_order = 6)]
    Gvisor => gvisor::Gvisor,
}

/// The reader of `B`'s results: its renderer, or a refusal naming it.
fn reader<B: Benchmark>() -> Reader {
    if B::REPORTS { Reader::of::<B::Result>() } else { Reader::not_yet(<B::Result as Render>::BENCHMARK) }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Each benchmark's command is named as its results' `benchmark`
    /// field, and names are unique.
    #[test]
    fn names_are_the_commands() {
        let cli = super::super::Cli::command();
        for name in super::NAMES {
            assert!(cli.find_subcommand(name).is_some(), "no command {name}");
            assert_eq!(super::NAMES.iter().filter(|n| *n == name).count(), 1, "{name} twice");
        }
        let readers = super::readers();
        assert_eq!(readers.iter().map(|r| r.benchmark).collect::<Vec<_>>(), super::NAMES);
    }
}
