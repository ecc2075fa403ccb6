//! One file per benchmark. Each takes a plain options struct (never clap),
//! wires a workload to the probes, and returns one serde result struct that
//! the renderers consume.

pub mod churn;
pub mod mitigate;
pub mod containers;
pub mod create;
pub mod layers;
pub mod pollute;
pub mod reclaim;
pub mod scale;

use anyhow::Result;

use crate::error::UsageError;
use crate::procfs::ProcRoot;

/// Refuses work whose memory estimate `need` is over
/// [`reclaim::MAX_MEMORY_SHARE`] of MemAvailable, unless `force`: bad input
/// (exit 2), one line saying what (`what`, `detail`) and how to fix it.
pub fn check_memory(what: &str, need: u64, detail: &str, fix: &str, force: bool, proc: &ProcRoot) -> Result<()> {
    if force {
        return Ok(());
    }
    let avail = proc.meminfo()?.mem_available_bytes;
    if need as f64 > avail as f64 * reclaim::MAX_MEMORY_SHARE {
        return Err(UsageError(format!(
            "{what} needs about {}{detail}, more than half of MemAvailable ({}): {fix}",
            crate::size::bytes(need),
            crate::size::bytes(avail)
        ))
        .into());
    }
    Ok(())
}
