//! One folder per benchmark: a vertical slice. Each takes a plain options
//! struct, wires a workload to the probes, returns one serde result
//! struct, and says how that result reads: its `render` child implements
//! [`crate::render::Render`] (the human table, its Markdown part, its
//! figure specs), which `report`'s engines consume. Its `command` child
//! implements [`common::Benchmark`]: its command's arguments and the steps
//! the generic handler (`cli::handlers::run`) runs. So a benchmark's
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

pub mod churn;
pub mod common;
pub mod containers;
pub mod create;
pub mod gvisor;
pub mod layers;
pub mod mitigate;
pub mod pollute;
pub mod reclaim;
pub mod scale;
pub mod vm;
