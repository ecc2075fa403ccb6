//! The Prometheus text exposition format (0.0.4) of a [`StatusResult`]:
//! `dentrylab_*` gauges with units in their names and HELP/TYPE lines. The
//! same text is served on `/metrics` and written by `status --textfile` for
//! node_exporter's textfile collector. A figure that is unknown (no
//! threshold, no fit) is left out rather than given a made-up value.

use super::text::{Out, sig6};
use crate::status::StatusResult;

/// The media type of the text format.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Encodes `s`, with `scrape_seconds` as the time it took to produce.
#[allow(clippy::too_many_lines)] // listed in docs/architecture.md: one metric family per block, in exposition order
pub(crate) fn encode(s: &StatusResult, scrape_seconds: f64) -> String {
    let mut o = Out(String::with_capacity(6 * 1024));
    let d = &s.dentries;
    let e = &s.environment;
    let p = &s.prediction;
    let c = &s.calibration.calibration;
    let f = |v: u64| Some(v as f64);
    let lockup = p.lockup_dentries.map(|l| sig6(l).round());
    // What the level uses: the low end, or the point with no interval.
    let lockup_low = p.lockup_dentries_low.map(|l| sig6(l).round()).or(lockup);
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
    o.gauge("dentrylab_memory_total_bytes", "MemTotal from /proc/meminfo.", f(s.memory.mem_total_bytes));
    o.gauge("dentrylab_memory_available_bytes", "MemAvailable from /proc/meminfo.", f(s.memory.mem_available_bytes));
    o.gauge(
        "dentrylab_memory_slab_reclaimable_bytes",
        "SReclaimable from /proc/meminfo (dentries and inodes are most of it).",
        f(s.memory.s_reclaimable_bytes),
    );
    o.gauge(
        "dentrylab_watchdog_thresh_seconds",
        "kernel.watchdog_thresh.",
        e.watchdog_thresh_seconds.map(|v| v as f64),
    );
    o.gauge(
        "dentrylab_soft_lockup_threshold_seconds",
        "Soft-lockup threshold: 2 x kernel.watchdog_thresh (absent when the watchdog is off).",
        p.soft_lockup_threshold_seconds,
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
    let cal = &s.calibration;
    let governs = match p.governs {
        crate::analysis::verdict::Governs::LongestStretch => "longest_stretch",
        crate::analysis::verdict::Governs::TotalTime => "total_time",
    };
    o.family(
        "dentrylab_calibration_info",
        "The calibration the predictions use: source builtin is the conservative default (value always 1).",
        &[(
            &[
                ("source", cal.source.name()),
                ("kernel", &c.kernel),
                ("preemption", &c.preemption),
                ("fs", &c.fs),
                ("kind", &c.kind),
                ("layout", &c.layout),
                ("method", &c.method),
                ("governs", governs),
            ],
            1.0,
        )],
    );
    o.gauge(
        "dentrylab_calibration_builtin",
        "1 when no calibration was saved on this node and the built-in conservative default is used.",
        Some(if cal.source == crate::status::calibration::Source::Builtin { 1.0 } else { 0.0 }),
    );
    o.gauge(
        "dentrylab_calibration_validated_by_watchdog",
        "1 when the kernel's own watchdog confirmed the calibration's prediction.",
        Some(if c.validated_by_watchdog { 1.0 } else { 0.0 }),
    );
    o.gauge(
        "dentrylab_calibration_largest_dentries",
        "Largest dentry count the calibration measured.",
        f(c.largest_size),
    );
    o.gauge(
        "dentrylab_predicted_reclaim_seconds",
        "Predicted time to reclaim every dentry in one walk (umount of a filesystem holding them all).",
        p.predicted_reclaim_seconds.map(sig6),
    );
    o.gauge(
        "dentrylab_predicted_longest_stretch_seconds",
        "Predicted longest stretch without a reschedule during that reclaim: what the soft-lockup watchdog sees.",
        p.predicted_longest_stretch_seconds.map(sig6),
    );
    o.gauge(
        "dentrylab_lockup_ratio",
        "Predicted longest stretch over the soft-lockup threshold (1 means the watchdog fires): the upper end of \
         its 90% interval (the point when the calibration has no interval), as the level uses.",
        p.lockup_ratio_high.or(p.lockup_ratio).map(sig6),
    );
    let bounds: Vec<(&[(&str, &str)], f64)> = [
        (&[("bound", "low")][..], lockup_low),
        (&[("bound", "point")][..], lockup),
        (&[("bound", "high")][..], p.lockup_dentries_high.map(|h| sig6(h).round()).filter(|_| p.interval)),
    ]
    .into_iter()
    .filter_map(|(l, v)| v.map(|v| (l, v)))
    .collect();
    o.family(
        "dentrylab_lockup_dentries",
        "Dentry count at which the predicted longest stretch reaches the soft-lockup threshold: the point and the \
         ends of its 90% interval (low is the point when the calibration has no interval, see \
         dentrylab_lockup_interval; high is absent when unbounded).",
        &bounds,
    );
    o.gauge(
        "dentrylab_lockup_interval",
        "1 when the calibration carries a 90% interval for the lockup count, 0 when it has none (saved before \
         intervals, or fitted on fewer than 3 points).",
        lockup.map(|_| if p.interval { 1.0 } else { 0.0 }),
    );
    o.gauge(
        "dentrylab_dentries_to_lockup",
        "Dentries left before the low end of the lockup count (negative past it).",
        lockup_low.map(|l| l - d.nr_dentry as f64),
    );
    o.gauge(
        "dentrylab_level",
        "0 ok, 1 warn, 2 danger: status's level, the worst over the soft-lockup threshold and every deadline of the \
         first incident (a predicted wait of at least half the deadline warns, of all of it is danger; the upper end \
         of its 90% interval), the soft-lockup threshold alone when the incidents are unknown; \
         dentrylab_level_deadline names the deadline that set it.",
        Some(s.level as u8 as f64),
    );
    if let Some(k) = s.level_source.as_ref().and_then(|l| super::incident::deadline_label(l.key)) {
        o.family(
            "dentrylab_level_deadline",
            "1 for the deadline that set dentrylab_level, the nearest to being missed (the deadline label takes the \
             values of the first incident's series; absent when no deadline has a prediction).",
            &[(&[("deadline", k)], 1.0)],
        );
    }
    if let Some(i) = &s.incidents {
        super::incident::encode(&mut o, i, d.nr_dentry);
    }
    if let Some(g) = &s.growth {
        o.gauge(
            "dentrylab_dentries_growth_per_second",
            "Growth of nr_dentry over the exporter's own samples (least-squares slope over a 10-minute window of scrapes).",
            Some(sig6(g.rate.dentries_per_second)),
        );
        o.gauge(
            "dentrylab_dentries_negative_growth_per_second",
            "Growth of nr_negative over the same window.",
            Some(sig6(g.rate.negative_per_second)),
        );
        o.gauge(
            "dentrylab_growth_window_seconds",
            "Time between the first and last sample the growth is measured over.",
            Some(sig6(g.rate.window_seconds)),
        );
        o.gauge(
            "dentrylab_seconds_to_lockup",
            "Time until nr_dentry reaches the low end of the lockup count's 90% interval (the point without one) at the current growth (0 past it; absent when not growing).",
            g.seconds_to_lockup.map(sig6),
        );
        o.gauge(
            "dentrylab_seconds_to_first_incident",
            "Time until nr_dentry reaches the low end of the first incident's count (the deadline missed at the \
             smallest count; the point without an interval) at the current growth (0 past it; absent when not \
             growing or when the incidents are unknown).",
            g.seconds_to_first_incident.map(sig6),
        );
    }
    if let Some(b) = &s.by_cgroup {
        super::cgroups::encode(&mut o, b);
    }
    if let Some(k) = &s.kernel_log {
        let n = |dc: bool| k.reports.iter().filter(|r| r.dcache == dc).count() as f64;
        o.typed(
            "dentrylab_kernel_lockups_total",
            "counter",
            "Soft lockups, RCU stalls and hung tasks in the kernel log, by whether the stack was in the dcache (the ring buffer is re-read: it can forget old reports).",
            &[(&[("dcache", "true")], n(true)), (&[("dcache", "false")], n(false))],
        );
    }
    o.gauge(
        "dentrylab_scrape_duration_seconds",
        "Time taken to read the node and compute these figures.",
        Some(scrape_seconds),
    );
    o.0
}
