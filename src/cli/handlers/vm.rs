//! `dentrylab vm`: the same command in a QEMU guest per kernel and preemption model.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::VmArgs;

/// The handler: the matrix on standard output (standard error when the
/// JSON goes there), then the JSON; exit 1 when a row has an error.
pub fn run(a: VmArgs) -> Result<ExitCode> {
    let json_path = a.json.clone();
    let o = a.options()?;
    let mut json = crate::output::open_opt(json_path.as_deref())?;
    let proc = crate::procfs::ProcRoot::default();
    let announce = |m: &str| eprintln!("dentrylab vm: {m}");
    let matrix = crate::bench::vm::run(&o, &proc, &announce)?;
    // One renderer for the matrix: the one `report` uses on a saved matrix.
    let table = match serde_json::from_value::<crate::report::matrix::VmMatrix>(serde_json::to_value(&matrix)?) {
        Ok(doc) => crate::report::matrix::table(&doc),
        // Another command's results (census): one line per row, the results in --json.
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
    if json.as_ref().is_some_and(|j| j.is_stdout()) {
        eprint!("{table}");
    } else {
        print!("{table}");
    }
    if let Some(j) = json.as_mut() {
        crate::report::json::write(j, &matrix)?;
    }
    let failed = matrix.rows.iter().filter(|r| r.error.is_some()).count();
    if failed > 0 {
        eprintln!("dentrylab: error: {failed} of {} rows have no result (see the error column)", matrix.rows.len());
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
