//! Dentry counters read around each phase: dentry-state always, the slab
//! line when slabinfo is readable, and memory.

use serde::{Deserialize, Serialize};

use crate::procfs::ProcRoot;
use crate::procfs::dentry_state::DentryState;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Counts {
    pub dentry_state: DentryState,
    /// Active objects in the `dentry` slab cache, when slabinfo is readable.
    pub slab_dentry_active: Option<u64>,
    pub mem_available_bytes: u64,
    pub slab_bytes: u64,
}

impl Counts {
    pub(crate) fn read(proc: &ProcRoot) -> anyhow::Result<Counts> {
        let ds = proc.dentry_state()?;
        let mem = proc.meminfo()?;
        Ok(Counts {
            dentry_state: ds,
            slab_dentry_active: proc.slab_dentry().map(|c| c.active_objs),
            mem_available_bytes: mem.mem_available_bytes,
            slab_bytes: mem.slab_bytes,
        })
    }
}
