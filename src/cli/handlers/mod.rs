//! One handler per command: each turns its clap arguments (`super`) into
//! the option struct of the code that runs it (`bench`, `status`,
//! `exporter`, `report`), runs it, and prints or writes the result. Usage
//! errors (exit 2) are raised before any output file is created.
//!
//! In: the parsed arguments and the proc root. Out: the exit code. Only
//! `main` calls these; nothing imports them.

pub mod census;
pub mod churn;
pub mod containers;
pub mod create;
pub mod gvisor;
pub mod hidden;
pub mod mitigate;
pub mod node;
pub mod pollute;
pub mod reclaim;
pub mod report;
pub mod scale;
pub mod vm;

use anyhow::Result;

use crate::output;

/// The table on stdout (on stderr when the JSON goes to stdout), then the JSON.
pub fn print_table_and_json<T: serde::Serialize>(
    table: &str,
    json: Option<&mut output::Sink>,
    value: &T,
) -> Result<()> {
    if json.as_ref().is_some_and(|j| j.is_stdout()) {
        eprint!("{table}");
    } else {
        print!("{table}");
    }
    json.map(|j| crate::report::json::write(j, value)).transpose()?;
    Ok(())
}
