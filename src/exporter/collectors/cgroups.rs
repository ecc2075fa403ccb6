//! The `cgroups` collector (`--by-cgroup`): the `--top` cgroups and one
//! `other` series, so the cardinality is bounded whatever the node runs.
//! Fails when the cgroup hierarchy cannot be found or read.

use anyhow::{Result, anyhow};

use super::{Collector, Scrape, Setup};
use crate::exporter::text::{Out, sig6};
use crate::status::cgroups::{ByCgroup, RowMemory};

pub(crate) const NAME: &str = "cgroups";

struct Cgroups;

pub(super) fn new(setup: &Setup) -> Option<Box<dyn Collector>> {
    setup.by_cgroup.then(|| Box::new(Cgroups) as Box<dyn Collector>)
}

impl Collector for Cgroups {
    fn name(&self) -> &'static str {
        NAME
    }

    fn update(&self, scrape: &Scrape<'_>, o: &mut Out) -> Result<()> {
        super::upstream(&scrape.reading.node, super::dentries::NAME)?;
        let b = scrape.reading.by_cgroup.as_ref().ok_or_else(|| anyhow!("--by-cgroup was not given"))?;
        encode(o, super::needs(b)?);
        Ok(())
    }
}

pub(crate) fn encode(o: &mut Out, b: &ByCgroup) {
    let rows: Vec<_> = b.top.iter().chain(b.other.iter()).collect();
    let labels: Vec<[(&str, &str); 4]> = rows
        .iter()
        .map(|r| {
            let k = r.kubernetes.as_ref();
            [
                ("cgroup", r.cgroup.as_str()),
                ("pod_uid", k.and_then(|k| k.pod_uid.as_deref()).unwrap_or("")),
                ("qos", k.and_then(|k| k.qos.as_deref()).unwrap_or("")),
                ("container_id", k.and_then(|k| k.container_id.as_deref()).unwrap_or("")),
            ]
        })
        .collect();
    let series = |f: &dyn Fn(usize) -> Option<f64>| -> Vec<(&[(&str, &str)], f64)> {
        (0..rows.len()).filter_map(|i| f(i).map(|v| (&labels[i][..], v))).collect()
    };
    let what = if b.cgroup_version == 1 { "memory.kmem.usage_in_bytes" } else { "slab_reclaimable of memory.stat" };
    o.family(
        "dentrylab_cgroup_slab_bytes",
        &format!(
            "Kernel memory charged to the cgroup itself ({what}, its children's taken out); the top cgroups and one series cgroup=\"other\" for the rest."
        ),
        &series(&|i| Some(rows[i].bytes as f64)),
    );
    o.family(
        "dentrylab_cgroup_dentries_estimated",
        "Estimated dentries charged to the cgroup: its bytes / 200 (what one dentry charges); exact if it made only dentries, an upper bound otherwise.",
        &series(&|i| Some(rows[i].estimated_dentries as f64)),
    );
    o.family(
        "dentrylab_cgroup_dentries_node_mix_estimated",
        "The estimate scaled by the node's share of dentries in the reclaimable slab.",
        &series(&|i| rows[i].estimated_dentries_node_mix.map(|v| v as f64)),
    );
    o.family(
        "dentrylab_cgroup_lru_objects",
        "Dentries and inodes on the superblocks' LRUs charged to the cgroup, exact (shrinker debugfs).",
        &series(&|i| rows[i].lru_objects_exact.map(|v| v as f64)),
    );
    encode_memory(o, b);
    o.gauge(
        "dentrylab_cgroups_read",
        "Memory cgroups read for the by-cgroup figures.",
        Some(sig6(b.cgroups_read as f64)),
    );
    o.gauge(
        "dentrylab_cgroups_unreadable",
        "Cgroup files that exist but could not be read (left out).",
        Some(b.unreadable.len() as f64),
    );
}

/// The listed cgroups' memory, hierarchical as cAdvisor reads it. Labelled
/// `uid` (the pod's UID) as kube-state-metrics' `kube_pod_info` is, so
/// `... * on(uid) group_left(namespace, pod) kube_pod_info` names the pod
/// without `label_replace`.
fn encode_memory(o: &mut Out, b: &ByCgroup) {
    let rows: Vec<_> = b.top.iter().filter_map(|r| r.memory.map(|m| (r, m))).collect();
    let labels: Vec<[(&str, &str); 5]> = rows
        .iter()
        .map(|(r, _)| {
            let k = r.kubernetes.as_ref();
            let uid = k.and_then(|k| k.pod_uid.as_deref()).unwrap_or("");
            [
                ("cgroup", r.cgroup.as_str()),
                ("pod_uid", uid),
                ("uid", uid),
                ("qos", k.and_then(|k| k.qos.as_deref()).unwrap_or("")),
                ("container_id", k.and_then(|k| k.container_id.as_deref()).unwrap_or("")),
            ]
        })
        .collect();
    let series = |f: &dyn Fn(&RowMemory) -> Option<u64>| -> Vec<(&[(&str, &str)], f64)> {
        rows.iter().zip(&labels).filter_map(|((_, m), l)| f(m).map(|v| (&l[..], v as f64))).collect()
    };
    let (usage, inactive) = if b.cgroup_version == 2 {
        ("memory.current", "inactive_file")
    } else {
        ("memory.usage_in_bytes", "total_inactive_file")
    };
    o.family(
        "dentrylab_cgroup_working_set_bytes",
        &format!(
            "The cgroup's working set as cAdvisor and the kubelet compute it ({usage} - {inactive}, children included): slab such as dentries counts in it."
        ),
        &series(&|m| Some(m.figures.working_set_bytes)),
    );
    o.family(
        "dentrylab_cgroup_slab_reclaimable_bytes",
        "Reclaimable slab charged to the cgroup and its children (slab_reclaimable of memory.stat, cgroup v2 only): dentries, inodes and the other reclaimable caches, inside the working set.",
        &series(&|m| m.figures.slab_reclaimable_bytes),
    );
    o.family(
        "dentrylab_cgroup_kernel_memory_bytes",
        "All kernel memory charged to the cgroup and its children (kernel of memory.stat on v2, memory.kmem.usage_in_bytes on v1), reclaimable or not.",
        &series(&|m| m.figures.kernel_bytes),
    );
    o.family(
        "dentrylab_cgroup_dentry_bytes_estimated",
        "Dentry bytes in the cgroup and its children, estimated from its slab (v2 reclaimable slab, v1 kernel memory) at 200 bytes a dentry: an upper bound.",
        &series(&|m| Some(m.dentry_bytes_estimated)),
    );
    o.family(
        "dentrylab_cgroup_working_set_without_reclaimable_slab_bytes",
        "The cAdvisor working set less the reclaimable slab (cgroup v2 only): what the workload holds that the kernel cannot simply reclaim.",
        &series(&|m| m.figures.working_set_without_reclaimable_slab_bytes),
    );
    o.family(
        "dentrylab_cgroup_working_set_without_kernel_memory_bytes",
        "The cAdvisor working set less all kernel memory: a lower bound of the workload's own memory (cgroup v1's only correction, where no reclaimable slab is reported).",
        &series(&|m| m.figures.working_set_without_kernel_bytes),
    );
}
