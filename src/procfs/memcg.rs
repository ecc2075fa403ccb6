//! One memory cgroup's memory as cAdvisor and the kubelet read it, and the
//! reclaimable slab inside it.
//!
//! cAdvisor's working set (`container_memory_working_set_bytes`, what the
//! kubelet's eviction and `kubectl top` use) is the cgroup's usage less its
//! inactive file pages, never below 0 (`setMemoryStats` in cAdvisor's
//! `container/libcontainer/handler.go`):
//!
//! - cgroup v2: `memory.current` − `inactive_file` of `memory.stat`;
//! - cgroup v1: `memory.usage_in_bytes` − `total_inactive_file` of
//!   `memory.stat` (the hierarchical figure).
//!
//! Slab (dentries and inodes among it) is charged to the same usage, so it
//! counts in that working set although the kernel can reclaim it. cgroup v2
//! says how much: `slab_reclaimable` of `memory.stat` (hierarchical, like
//! `memory.current`). cgroup v1 has no slab line in `memory.stat`
//! (mm/memcontrol-v1.c lists none); its `memory.kmem.usage_in_bytes` is all
//! kernel memory charged to the cgroup, reclaimable or not, so on v1 the
//! reclaimable part is not known, only bounded by that figure.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// A `memory.stat` value by key (`key value` lines).
pub(crate) fn stat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
}

/// The memory of one cgroup, hierarchical (its children included), as the
/// kernel's files give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CgroupMemory {
    /// `memory.current` (v2), `memory.usage_in_bytes` (v1).
    pub usage_bytes: u64,
    /// `inactive_file` (v2), `total_inactive_file` (v1).
    pub inactive_file_bytes: u64,
    /// cAdvisor's working set: usage − inactive file, at least 0.
    pub working_set_bytes: u64,
    /// `slab_reclaimable` of `memory.stat` (v2 only: v1 has no slab line).
    pub slab_reclaimable_bytes: Option<u64>,
    /// All kernel memory: `kernel` of `memory.stat` (v2),
    /// `memory.kmem.usage_in_bytes` (v1).
    pub kernel_bytes: Option<u64>,
    /// The working set less the reclaimable slab (v2); `None` on v1, where
    /// the kernel does not say which slab is reclaimable.
    pub working_set_without_reclaimable_slab_bytes: Option<u64>,
    /// The working set less all kernel memory: a lower bound of what the
    /// workload itself holds (v1's only correction).
    pub working_set_without_kernel_bytes: Option<u64>,
}

impl CgroupMemory {
    /// From the texts of the usage file and `memory.stat` (and, on v1,
    /// `memory.kmem.usage_in_bytes`); `None` when the usage or the inactive
    /// file line is missing or does not parse.
    pub(crate) fn parse(version: u8, usage: &str, stat: &str, kmem: Option<&str>) -> Option<CgroupMemory> {
        let usage_bytes: u64 = usage.trim().parse().ok()?;
        let (inactive_key, slab, kernel) = if version == 2 {
            ("inactive_file", stat_value(stat, "slab_reclaimable"), stat_value(stat, "kernel"))
        } else {
            ("total_inactive_file", None, kmem.and_then(|k| k.trim().parse().ok()))
        };
        let inactive_file_bytes = stat_value(stat, inactive_key)?;
        let working_set_bytes = usage_bytes.saturating_sub(inactive_file_bytes);
        Some(CgroupMemory {
            usage_bytes,
            inactive_file_bytes,
            working_set_bytes,
            slab_reclaimable_bytes: slab,
            kernel_bytes: kernel,
            working_set_without_reclaimable_slab_bytes: slab.map(|s| working_set_bytes.saturating_sub(s)),
            working_set_without_kernel_bytes: kernel.map(|k| working_set_bytes.saturating_sub(k)),
        })
    }

    /// Reads the cgroup directory `dir` of a v1 or v2 hierarchy; `None` when
    /// its files are absent or unreadable (the caller says which).
    pub(crate) fn read(dir: &Path, version: u8) -> Option<CgroupMemory> {
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
        let usage = read(if version == 2 { "memory.current" } else { "memory.usage_in_bytes" })?;
        let stat = read("memory.stat")?;
        let kmem = if version == 2 { None } else { read("memory.kmem.usage_in_bytes") };
        CgroupMemory::parse(version, &usage, &stat, kmem.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_working_set_as_cadvisor_and_without_reclaimable_slab() {
        let stat = "anon 10000\nfile 5000\nkernel 300000\nslab_reclaimable 250000\nslab_unreclaimable 9\n\
                    inactive_file 4000\nactive_file 1000\n";
        let m = CgroupMemory::parse(2, "320000\n", stat, None).unwrap();
        assert_eq!(m.working_set_bytes, 316_000, "memory.current − inactive_file");
        assert_eq!(m.slab_reclaimable_bytes, Some(250_000));
        assert_eq!(m.working_set_without_reclaimable_slab_bytes, Some(66_000));
        assert_eq!(m.working_set_without_kernel_bytes, Some(16_000));
    }

    #[test]
    fn v1_uses_the_hierarchical_inactive_file_and_has_no_slab_split() {
        // The non-hierarchical `inactive_file` line comes first: the total one counts.
        let stat = "cache 1\ninactive_file 7\ntotal_cache 2\ntotal_inactive_file 1000\n";
        let m = CgroupMemory::parse(1, "210000000", stat, Some("200000000\n")).unwrap();
        assert_eq!(m.working_set_bytes, 209_999_000);
        assert_eq!(m.slab_reclaimable_bytes, None);
        assert_eq!(m.working_set_without_reclaimable_slab_bytes, None);
        assert_eq!(m.working_set_without_kernel_bytes, Some(9_999_000));
    }

    #[test]
    fn clamped_at_zero_and_missing_lines() {
        let m = CgroupMemory::parse(2, "10", "inactive_file 20\nslab_reclaimable 30\n", None).unwrap();
        assert_eq!((m.working_set_bytes, m.working_set_without_reclaimable_slab_bytes), (0, Some(0)));
        assert_eq!(CgroupMemory::parse(2, "10", "anon 1\n", None), None);
        assert_eq!(CgroupMemory::parse(1, "x", "total_inactive_file 1\n", None), None);
        assert_eq!(stat_value("inactive_file_x 5\ninactive_file 6\n", "inactive_file"), Some(6));
    }
}
