//! `create --memcg`: the run in a memory cgroup of its own, and that
//! cgroup's memory once the dentries are made, as cAdvisor reads it
//! (usage less inactive file pages) beside the slab the kernel charged to
//! it. The cgroup holds nothing but this run, so its kernel memory is the
//! run's dentries (and, on a disk filesystem, their directory's blocks):
//! measured, not estimated.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::procfs::ProcRoot;
use crate::procfs::cgroup::own_memory_controller;
use crate::procfs::memcg::CgroupMemory;
use crate::sandbox::cgroup::{Guardian, MemCgroup};
use crate::size::{bytes, grouped};

/// This process inside the run's cgroup. Dropped, it moves back to the
/// cgroup it came from, so the cgroup can go and the guardian, which
/// kills whatever is left in it, finds nothing; if it cannot move back,
/// the guardian is kept until this process exits.
pub(crate) struct InCgroup {
    pub cgroup: MemCgroup,
    home: PathBuf,
    guardian: Option<Guardian>,
}

/// Starts the cgroup guardian, makes the run's cgroup and moves this
/// process (every thread) into it. Needs root.
pub(crate) fn enter(proc: &ProcRoot) -> Result<InCgroup> {
    if !crate::sys::is_root() {
        bail!("create --memcg needs root: making a memory cgroup and moving a process into it is not allowed here");
    }
    let home = own_memory_controller(proc)?
        .context("create --memcg: no cgroup hierarchy with the memory controller is mounted")?
        .own_dir;
    let guardian = Guardian::start(proc)?;
    let cgroup = guardian.cgroup(0)?;
    cgroup.add(std::process::id())?;
    Ok(InCgroup { cgroup, home, guardian: Some(guardian) })
}

impl Drop for InCgroup {
    fn drop(&mut self) {
        if std::fs::write(self.home.join("cgroup.procs"), std::process::id().to_string()).is_err()
            && let Some(g) = self.guardian.take()
        {
            std::mem::forget(g);
        }
    }
}

/// The run's cgroup while it holds the dentries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Held {
    pub cgroup: String,
    pub cgroup_version: u8,
    /// Entries the generator made in the cgroup.
    pub entries: u64,
    pub memory: CgroupMemory,
    /// Kernel memory charged to the cgroup ÷ the entries made.
    pub kernel_bytes_per_entry: Option<f64>,
}

impl Held {
    pub(crate) fn read(c: &MemCgroup, entries: u64) -> Result<Held> {
        let Some(memory) = CgroupMemory::read(&c.dir, c.version) else {
            bail!(
                "--memcg: cannot read the memory of {} (its usage file or memory.stat, inactive file line included)",
                c.dir.display()
            );
        };
        Ok(Held {
            cgroup: c.dir.display().to_string(),
            cgroup_version: c.version,
            entries,
            kernel_bytes_per_entry: memory.kernel_bytes.filter(|_| entries > 0).map(|k| k as f64 / entries as f64),
            memory,
        })
    }

    /// One line for the announcement and the table.
    pub(crate) fn line(&self) -> String {
        let m = &self.memory;
        let slab = match (m.slab_reclaimable_bytes, m.working_set_without_reclaimable_slab_bytes) {
            (Some(s), Some(w)) => {
                format!("reclaimable slab {} (slab_reclaimable), working set without it {}", bytes(s), bytes(w))
            }
            _ => "no reclaimable slab figure on cgroup v1".into(),
        };
        let kernel = match (m.kernel_bytes, self.kernel_bytes_per_entry) {
            (Some(k), Some(per)) => format!("kernel memory {} ({per:.0} B per entry)", bytes(k)),
            (Some(k), None) => format!("kernel memory {}", bytes(k)),
            _ => "kernel memory unknown".into(),
        };
        format!(
            "memory cgroup {} (v{}), {} entries made in it: working set {} as cAdvisor computes it \
             (usage {} − inactive file {}); {slab}; {kernel}, working set without it {}",
            self.cgroup,
            self.cgroup_version,
            grouped(self.entries),
            bytes(m.working_set_bytes),
            bytes(m.usage_bytes),
            bytes(m.inactive_file_bytes),
            m.working_set_without_kernel_bytes.map_or("–".into(), bytes),
        )
    }
}
