//! One emit for every benchmark: the result's table for people (standard
//! output, or standard error when the JSON goes to standard output), the
//! JSON, the Markdown section, the report directory, into the
//! [`Outputs`] the command line opened before the run.

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use super::{document, markdown, table};
use crate::output::{OutDir, Outputs};
use crate::render::Render;

/// Writes `r` to every output that is open.
pub(crate) fn emit<R: Render + Serialize + Clone + std::fmt::Debug + 'static>(out: &mut Outputs, r: &R) -> Result<()> {
    out.emit(&table::of(r), r)?;
    if let Some(m) = out.markdown.as_mut() {
        m.write_str(&markdown::section(r))?;
    }
    if let Some(dir) = &out.report {
        let written = write_report(dir, &[document::Loaded::of(r.clone())])?;
        eprintln!("report written to {}", written.display());
    }
    Ok(())
}

/// Renders the results into `dir`; returns the path of report.md.
pub(crate) fn write_report(dir: &OutDir, loaded: &[document::Loaded]) -> Result<PathBuf> {
    let mut md = None;
    for f in document::render(loaded)? {
        let p = dir.write(&f.name, &f.contents)?;
        md.get_or_insert(p);
    }
    md.ok_or_else(|| anyhow::anyhow!("nothing to render"))
}
