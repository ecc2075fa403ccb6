//! `dentrylab vm`: the same command in a QEMU guest per kernel and preemption model.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::VmArgs;
use crate::output::{Outputs, Paths};

/// The handler: the matrix on standard output (standard error when the
/// JSON goes there), then the JSON; exit 1 when a row has an error.
pub(crate) fn run(a: VmArgs) -> Result<ExitCode> {
    let paths = Paths { json: a.json.clone(), ..Paths::default() };
    let announce = |m: &str| eprintln!("dentrylab vm: {m}");
    if a.build_only
        && let Some(r) = a.build_request()
    {
        let mut out = Outputs::open(&paths)?;
        let state = a.state_dir.clone().unwrap_or_else(crate::state::default_dir);
        let prepared = crate::bench::vm::build_only(&state, &r, &announce)?;
        let built = &prepared.kernels;
        let mut text: String = built
            .iter()
            .map(|b| {
                let how = if b.cached { "cached".to_string() } else { format!("built in {:.0} s", b.build_seconds) };
                format!("{}  {}  {} ({how})\n", b.label, b.release, b.image.display())
            })
            .collect();
        if let Some(d) = &prepared.selftests {
            text += &format!("selftests {}  {}\n", r.selftests.join(","), d.display());
        }
        let json = serde_json::json!({
            "schema": crate::bench::vm::source::BUILT_SCHEMA,
            "kernels": built,
            "selftests": prepared.selftests,
        });
        out.emit(&text, &json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let o = a.options()?;
    let mut out = Outputs::open(&paths)?;
    let proc = crate::procfs::ProcRoot::default();
    let matrix = crate::bench::vm::run(&o, &proc, &announce)?;
    // One renderer for the matrix: the one `report` uses on a saved matrix,
    // each row's result read from the text the guest wrote, as `report`
    // reads it; another command's results (census): one line per row, the
    // results in --json.
    let table = match matrix.read_results::<crate::bench::reclaim::ReclaimResult>() {
        Ok(m) => crate::report::table::render(&crate::bench::vm::matrix::text(&m)),
        Err(_) => matrix
            .rows
            .iter()
            .map(|r| {
                format!(
                    "{}  {:.0} s  {}\n",
                    r.label(),
                    r.wall_seconds,
                    r.error.as_deref().unwrap_or("result in --json")
                )
            })
            .collect(),
    };
    out.emit(&table, &matrix)?;
    let failed = matrix.rows.iter().filter(|r| r.error.is_some()).count();
    if failed > 0 {
        eprintln!("dentrylab: error: {failed} of {} rows have no result (see the error column)", matrix.rows.len());
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
