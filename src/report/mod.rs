//! The output engines: `table` (aligned text), `markdown` (pipe tables),
//! `svg` (plots drawn with plotters and inferno), `document` (a report
//! directory from saved results), as hyperfine's exporters, and `emit`,
//! which writes a benchmark's result into every output the command line
//! opened (the JSON is the result as it is). They consume what a benchmark yields through
//! [`crate::render::Render`], generically: a [`Doc`] of prose and
//! [`Grid`]s, and figure specs; no benchmark's table or figure is written
//! here, and no benchmark is named: a saved result is read by the reader
//! the registry (`cli::registry`) gives for its benchmark or schema (the
//! `vm` matrix renders itself, `bench::vm::matrix`). The same input always
//! gives the same output. Outside the trait: `node` (`status` for people).
//!
//! In: `Render` results, `status`'s result, or their saved JSON. Out:
//! text, Markdown, JSON and SVG. Imports `render`, `status`, `analysis`
//! and below, never `bench` (`tests/module_layers.rs` checks it);
//! imported only by `cli`. Inside, one way: `plain` (the text grid),
//! `svg`, `node` and `incident` (`status`'s first incident) below
//! `markdown`, below `table`, below `document`, below `emit`.

pub(crate) mod advise;
pub(crate) mod document;
pub(crate) mod emit;
pub(crate) mod incident;
pub(crate) mod markdown;
pub(crate) mod node;
pub(crate) mod plain;
pub(crate) mod svg;
pub(crate) mod table;

pub(crate) use crate::render::cell::environment_line;
pub(crate) use crate::render::{Doc, Grid};
