//! The `dentries` collector: the node's own figures, read on every
//! scrape through the proc root (dentry-state, meminfo, two sysctls, the
//! kernel and its preemption model) and the growth over the exporter's
//! own samples. Needs neither a calibration nor a log.

use anyhow::Result;

use super::{Collector, Scrape, Setup, needs};
use crate::exporter::text::{Out, sig6};
use crate::status::Node;

pub(crate) const NAME: &str = "dentries";

struct Dentries;

pub(super) fn new(_: &Setup) -> Option<Box<dyn Collector>> {
    Some(Box::new(Dentries))
}

impl Collector for Dentries {
    fn name(&self) -> &'static str {
        NAME
    }

    fn update(&self, scrape: &Scrape<'_>, o: &mut Out) -> Result<()> {
        encode(o, needs(&scrape.reading.node)?);
        Ok(())
    }
}

pub(crate) fn encode(o: &mut Out, n: &Node) {
    let d = &n.dentries;
    let e = &n.environment;
    let f = |v: u64| Some(v as f64);
    o.gauge(
        "dentrylab_dentries",
        "Dentries allocated by the kernel (nr_dentry, /proc/sys/fs/dentry-state).",
        f(d.nr_dentry),
    );
    o.gauge("dentrylab_dentries_unused", "Dentries on the LRU, unused and reclaimable (nr_unused).", f(d.nr_unused));
    o.gauge(
        "dentrylab_dentries_negative",
        "Negative dentries: cached failed lookups (nr_negative; 0 before Linux 5.0).",
        f(d.nr_negative),
    );
    o.gauge(
        "dentrylab_dentries_bytes",
        "Memory held by all dentries: nr_dentry times the dentry slab object size.",
        f(d.dentry_bytes),
    );
    o.gauge("dentrylab_dentries_unused_bytes", "Memory held by unused dentries.", f(d.unused_bytes));
    o.gauge("dentrylab_dentries_negative_bytes", "Memory held by negative dentries.", f(d.negative_bytes));
    o.gauge(
        "dentrylab_dentry_object_bytes",
        "Size of one dentry slab object used for the byte figures.",
        f(d.bytes_per_dentry),
    );
    o.gauge("dentrylab_memory_total_bytes", "MemTotal from /proc/meminfo.", f(n.memory.mem_total_bytes));
    o.gauge("dentrylab_memory_available_bytes", "MemAvailable from /proc/meminfo.", f(n.memory.mem_available_bytes));
    o.gauge(
        "dentrylab_memory_slab_reclaimable_bytes",
        "SReclaimable from /proc/meminfo (dentries and inodes are most of it).",
        f(n.memory.s_reclaimable_bytes),
    );
    o.gauge(
        "dentrylab_watchdog_thresh_seconds",
        "kernel.watchdog_thresh.",
        e.watchdog_thresh_seconds.map(|v| v as f64),
    );
    o.gauge(
        "dentrylab_vfs_cache_pressure",
        "vm.vfs_cache_pressure (100 is the kernel default).",
        e.vfs_cache_pressure.map(|v| v as f64),
    );
    o.family(
        "dentrylab_node_info",
        "The node's kernel and preemption model (value always 1).",
        &[(&[("kernel", &e.kernel), ("preemption", &e.preemption)], 1.0)],
    );
    if let Some(g) = &n.rate {
        o.gauge(
            "dentrylab_dentries_growth_per_second",
            "Growth of nr_dentry over the exporter's own samples (least-squares slope over a 10-minute window of scrapes).",
            Some(sig6(g.dentries_per_second)),
        );
        o.gauge(
            "dentrylab_dentries_negative_growth_per_second",
            "Growth of nr_negative over the same window.",
            Some(sig6(g.negative_per_second)),
        );
        o.gauge(
            "dentrylab_growth_window_seconds",
            "Time between the first and last sample the growth is measured over.",
            Some(sig6(g.window_seconds)),
        );
    }
}
