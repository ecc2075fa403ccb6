//! `dentrylab census`: where the node's dentries are.

use std::process::ExitCode;

use anyhow::Result;

use super::print_table_and_json;
use crate::census;
use crate::procfs::ProcRoot;

pub fn run(a: census::Args) -> Result<ExitCode> {
    let mut json = crate::output::open_opt(a.json.as_deref())?;
    let result = census::run(&a, &ProcRoot::default(), &|m| eprintln!("{m}"))?;
    print_table_and_json(&census::table::text(&result), json.as_mut(), &result)?;
    let failed = result.planted.iter().filter(|c| !c.ok).count();
    if failed > 0 {
        eprintln!(
            "dentrylab: error: {failed} of {} planted directories were not found with their count",
            result.planted.len()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
