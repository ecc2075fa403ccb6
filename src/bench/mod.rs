//! One folder (or file) per benchmark: a vertical slice. Each takes a
//! plain options struct, wires a workload to the probes, returns one serde
//! result struct, and says how that result reads: its `render` child
//! implements [`crate::render::Render`] (the human table, its Markdown
//! part, its figure specs), which `report`'s engines consume. So a
//! benchmark's tables and figures change in its own folder.
//!
//! In: an options struct (from the benchmark's clap `Args`, which `cli`
//! flattens into its command and whose `options` `cli::handlers` call),
//! the sandbox and the proc root. Out: a serde result struct, printed
//! through `report` and saved as JSON. Imports `render`, `sandbox`,
//! `workload`, `probe`, `analysis`, `state`, `env`, `procfs` and the
//! utilities; imported by `report` (to render the results) and `cli`. A
//! benchmark may use another's pieces (`containers`' harness in
//! `mitigate`, `layers`' grid and shared options in `reclaim` and
//! `create`), never the other way round.

pub mod churn;
pub mod containers;
pub mod create;
pub mod gvisor;
pub mod layers;
pub mod mitigate;
pub mod pollute;
pub mod reclaim;
pub mod scale;
pub mod vm;

use anyhow::Result;

use crate::error::UsageError;
use crate::procfs::ProcRoot;

/// The memory a run may plan with: MemAvailable, or what this process's
/// memory cgroup leaves below its limit when that is less (dentries are
/// charged to the cgroup: in a pod the limit, not the node, stops a run).
pub struct Available {
    pub bytes: u64,
    /// What the figure is, for messages: "MemAvailable (23.1 GiB)".
    pub what: String,
}

pub fn memory_available(proc: &ProcRoot) -> Result<Available> {
    let avail = proc.meminfo()?.mem_available_bytes;
    let room = crate::procfs::cgroup::own_memory_controller(proc)
        .ok()
        .flatten()
        .and_then(|mc| crate::procfs::cgroup::headroom(&mc));
    let b = crate::size::bytes;
    Ok(match room {
        Some(h) if h.bytes < avail => Available {
            bytes: h.bytes,
            what: format!(
                "what the memory cgroup's limit leaves ({} below {} at {}; MemAvailable {})",
                b(h.bytes),
                b(h.limit),
                h.dir.display(),
                b(avail)
            ),
        },
        _ => Available { bytes: avail, what: format!("MemAvailable ({})", b(avail)) },
    })
}

/// Refuses work whose memory estimate `need` is over
/// [`reclaim::MAX_MEMORY_SHARE`] of the memory available
/// ([`memory_available`]), unless `force`: bad input (exit 2), one line
/// saying what (`what`, `detail`) and how to fix it.
pub fn check_memory(what: &str, need: u64, detail: &str, fix: &str, force: bool, proc: &ProcRoot) -> Result<()> {
    if force {
        return Ok(());
    }
    let avail = memory_available(proc)?;
    if need as f64 > avail.bytes as f64 * reclaim::MAX_MEMORY_SHARE {
        return Err(UsageError(format!(
            "{what} needs about {}{detail}, more than half of {}: {fix}",
            crate::size::bytes(need),
            avail.what
        ))
        .into());
    }
    Ok(())
}
