//! The output engines: `table` (aligned text), `markdown` (pipe tables),
//! `svg` (plots drawn with plotters and inferno), `document` (a report
//! directory from saved results), as hyperfine's exporters, and `emit`,
//! which writes a benchmark's result into every output the command line
//! opened (the JSON is the result as it is). They consume what a benchmark yields through
//! [`crate::render::Render`], generically: a [`Doc`] of prose and
//! [`Grid`]s, and figure specs; no benchmark's table or figure is written
//! here. The same input always gives the same output. Outside the trait:
//! `node` (`status` for people) and `matrix` (the `vm` matrix file, its
//! own schema).
//!
//! In: result structs (`bench`, `status`), or their saved JSON. Out: text,
//! Markdown, JSON and SVG. Imports `render`, `bench`, `status`, `analysis`
//! and below; imported only by `cli`. Inside, one way: `plain` (the text
//! grid), `svg`, `node` and `incident` (`status`'s first incident) below
//! `markdown`, below `matrix_victims`, below `table` and `matrix`, below
//! `document`, below `emit`.

pub(crate) mod document;
pub(crate) mod emit;
pub(crate) mod incident;
pub(crate) mod markdown;
pub(crate) mod matrix;
pub(crate) mod matrix_victims;
pub(crate) mod node;
pub(crate) mod plain;
pub(crate) mod svg;
pub(crate) mod table;

pub(crate) use crate::render::cell::environment_line;
pub(crate) use crate::render::{Doc, Grid};
