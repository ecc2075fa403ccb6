//! `report`: saved results to report.md and SVG plots.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli;
use crate::output;
use crate::report;

/// `dentrylab report`.
pub(crate) fn run(a: cli::ReportArgs) -> Result<ExitCode> {
    let loaded = report::document::load(&a.results, &cli::registry::readers())?;
    let dir = output::OutDir::create(&a.output)?;
    let written = report::emit::write_report(&dir, &loaded)?;
    println!("{}", written.display());
    Ok(ExitCode::SUCCESS)
}
