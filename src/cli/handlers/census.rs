//! `dentrylab census`: where the node's dentries are.

use std::process::ExitCode;

use anyhow::Result;

use crate::census;
use crate::output::{Outputs, Paths};
use crate::procfs::ProcRoot;

pub(crate) fn run(a: census::Args) -> Result<ExitCode> {
    let mut out = Outputs::open(&Paths { json: a.json.clone(), ..Paths::default() })?;
    let result = census::run(&a, &ProcRoot::default(), &|m| eprintln!("{m}"))?;
    out.emit(&census::table::text(&result), &result)?;
    // A full walk must find every planted count exactly; a sample's 90%
    // intervals must hold the truth about as often as they claim.
    let n = result.planted.len() as u64;
    let covered = result.planted.iter().filter(|c| c.ok).count() as u64;
    let exact = result.walk.mode == "full";
    if (exact && covered < n) || (!exact && !crate::analysis::census::coverage_plausible(covered, n)) {
        eprintln!(
            "dentrylab: error: {} of {n} planted directories were not found with their count{}",
            n - covered,
            if exact { "" } else { " (inside the 90% interval): more misses than chance allows" }
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
