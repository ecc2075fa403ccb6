//! One folder per benchmark: a vertical slice. Each takes a plain options
//! struct, wires a workload to the probes, returns one serde result
//! struct, and says how that result reads: its `render` child implements
//! [`crate::render::Render`] (the human table, its Markdown part, its
//! figure specs), which `report`'s engines consume. Its `command` child
//! implements [`common::Benchmark`]: its command's arguments and help, and
//! the steps the generic handler (`cli::handlers::run`) runs. So a benchmark's
//! tables, figures and command change in its own folder; `common/` holds
//! what benchmarks share.
//!
//! In: an options struct (from the benchmark's clap `Args`, whose
//! `options` its `command` calls), the sandbox and the proc root. Out: a serde result struct, printed
//! through `report` and saved as JSON. Imports `render`, `sandbox`,
//! `workload`, `probe`, `analysis`, `state`, `env`, `procfs` and the
//! utilities; imported by `report` (to render the results) and `cli`. A
//! benchmark may use another's pieces (`containers`' harness in
//! `mitigate`, `layers`' grid and shared options in `reclaim` and
//! `create`), never the other way round.

pub mod common;
pub(crate) mod layers;
pub(crate) mod vm;

/// The registry: every benchmark, once, one line each: its folder (a
/// module of `bench`) and its [`common::Benchmark`] type (in that folder).
/// `each_benchmark!(m)` calls `m! { module => Type, ... }` with the list:
/// here to declare the modules, in `cli::registry` to make the commands,
/// their dispatch, and `report`'s readers of saved results. So `cli`
/// imports `bench`, never the other way round. The order of the lines is
/// the order `report` names the benchmarks it renders (`--help` orders
/// them by [`common::Benchmark::DISPLAY_ORDER`]).
macro_rules! each_benchmark {
    ($then:ident) => {
        $then! {
            reclaim => Reclaim,
            pollute => Pollute,
            churn => Churn,
            scale => Scale,
            mitigate => Mitigate,
            containers => Containers,
            create => Create,
            gvisor => Gvisor,
        }
    };
}
pub(crate) use each_benchmark;

/// Declares each benchmark's folder as a module of `bench`.
macro_rules! declare {
    ($($module:ident => $bench:ident,)*) => {
        $(pub mod $module;)*
    };
}
each_benchmark!(declare);
