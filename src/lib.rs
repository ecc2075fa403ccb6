//! dentrylab: measure the Linux dentry cache on the real kernel.
//!
//! The library holds every layer as a module (lowest first: the utilities
//! and `sys`, `procfs`, `env`, `sandbox`, `workload`, `probe`, `analysis`,
//! `state`, `render`, `census`, `bench` and `status`, `report`, `exporter`,
//! `cli`); the binary (`main.rs`) parses the command line and calls
//! [`cli::run`]. An item is `pub` only when it is an interface: what the
//! binary or the integration tests (`tests/`) use; everything else is
//! `pub(crate)`, which `unreachable_pub` enforces.

// `unsafe` only in `sys/`: the compiler refuses it anywhere else, and
// every block there says why it is sound (clippy, -D warnings in CI).
#![deny(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(unreachable_pub)]

pub(crate) mod analysis;
pub mod bench;
pub(crate) mod census;
pub mod cli;
pub(crate) mod duration;
pub(crate) mod env;
pub mod error;
pub(crate) mod exporter;
pub(crate) mod histogram;
pub(crate) mod output;
pub mod probe;
pub mod procfs;
pub(crate) mod render;
pub(crate) mod report;
pub(crate) mod result;
pub(crate) mod sandbox;
pub mod size;
pub(crate) mod state;
pub(crate) mod stats;
pub(crate) mod status;
#[allow(unsafe_code)]
pub mod sys;
pub(crate) mod workload;
