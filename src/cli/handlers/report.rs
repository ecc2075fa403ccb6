//! `report`: saved results to report.md and SVG plots.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli;
use crate::output;
use crate::report;

/// `dentrylab report`.
pub fn run(a: cli::ReportArgs) -> Result<ExitCode> {
    let loaded = report::document::load(&a.results)?;
    let dir = output::OutDir::create(&a.output)?;
    let written = write_report(&dir, &loaded)?;
    println!("{}", written.display());
    Ok(ExitCode::SUCCESS)
}

/// Renders the results into `dir`; returns the path of report.md.
pub fn write_report(dir: &output::OutDir, loaded: &[report::document::Loaded]) -> Result<std::path::PathBuf> {
    let mut md = None;
    for f in report::document::render(loaded)? {
        let p = dir.write(&f.name, &f.contents)?;
        md.get_or_insert(p);
    }
    md.ok_or_else(|| anyhow::anyhow!("nothing to render"))
}
