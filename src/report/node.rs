//! The human tables of `status --by-cgroup`, `--kernel-log` and `--watch`.

use std::fmt::Write;

use super::Grid;
use super::plain::render_grid;
use crate::analysis::edge::Level;
use crate::size::{bytes, grouped, human};
use crate::status::StatusResult;
use crate::status::cgroups::ByCgroup;
use crate::status::growth::{human_duration, signed_rate};
use crate::status::kernel_log::KernelLog;

fn short_id(id: &str) -> &str {
    &id[..id.len().min(12)]
}

pub(crate) fn by_cgroup(b: &ByCgroup, nr_dentry: u64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nwho holds the dentries: {} memory cgroups under {} (cgroup v{}), by {}",
        b.cgroups_read, b.root, b.cgroup_version, b.figure
    );
    let mut rows: Vec<Vec<String>> = Vec::new();
    for r in b.top.iter().chain(b.other.iter()) {
        let k = r.kubernetes.as_ref();
        let kube = match k {
            Some(k) => [
                k.qos.clone(),
                k.pod_uid.as_ref().map(|u| format!("pod {u}")),
                k.container_id.as_ref().map(|c| format!("container {}", short_id(c))),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", "),
            None if r.cgroups > 1 => format!("{} cgroups", r.cgroups),
            None => String::new(),
        };
        rows.push(vec![
            r.cgroup.clone(),
            bytes(r.bytes),
            format!("≤ {}", human(r.estimated_dentries)),
            r.estimated_dentries_node_mix.map_or("–".into(), human),
            if r.share_of_node_dentries >= 1.0 {
                "≤ 100%".into()
            } else {
                format!("≤ {:.1}%", 100.0 * r.share_of_node_dentries)
            },
            r.lru_objects_exact.map_or("–".into(), grouped),
            kube,
        ]);
    }
    if rows.is_empty() {
        let _ = writeln!(s, "no cgroup holds any (the figure is 0 or unreadable everywhere)");
    } else {
        s += &render_grid(&Grid {
            header: vec![
                "Cgroup".into(),
                "Own slab".into(),
                "Dentries (est.)".into(),
                "At node mix".into(),
                "Of nr_dentry".into(),
                "LRU objects (exact)".into(),
                "Kubernetes".into(),
            ],
            rows,
        });
    }
    let _ = writeln!(
        s,
        "estimate: bytes ÷ {} B (what one dentry charges its cgroup): exact for a cgroup that made only dentries, \
         an upper bound otherwise; the figure also includes {}",
        b.charged_bytes_per_dentry, b.includes
    );
    if let Some(m) = b.node_dentry_share_of_reclaimable_slab {
        let _ = writeln!(
            s,
            "at node mix: the estimate × {:.0}%, the share of dentries ({} × 192 B) in the node's reclaimable slab",
            100.0 * m,
            grouped(nr_dentry)
        );
    }
    s += &memory_table(b);
    let _ = writeln!(s, "shrinker debugfs: {}", b.shrinker_debugfs);
    for u in &b.unreadable {
        let _ = writeln!(s, "unreadable (left out): {u}");
    }
    s
}

/// The listed cgroups' memory as cAdvisor reads it, beside the slab in it.
fn memory_table(b: &ByCgroup) -> String {
    let rows: Vec<Vec<String>> = b
        .top
        .iter()
        .filter_map(|r| {
            let m = r.memory?;
            let f = m.figures;
            let slab = if b.cgroup_version == 2 { f.slab_reclaimable_bytes } else { f.kernel_bytes };
            let corrected = if b.cgroup_version == 2 {
                f.working_set_without_reclaimable_slab_bytes
            } else {
                f.working_set_without_kernel_bytes
            };
            Some(vec![
                r.cgroup.clone(),
                bytes(f.working_set_bytes),
                slab.map_or("–".into(), bytes),
                format!("≤ {}", human(m.dentries_estimated)),
                format!("≤ {}", bytes(m.dentry_bytes_estimated)),
                corrected.map_or("–".into(), bytes),
            ])
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let (slab, corrected, note) = if b.cgroup_version == 2 {
        (
            "Reclaimable slab",
            "Working set − reclaimable slab",
            "reclaimable slab: slab_reclaimable of memory.stat (dentries, inodes and the other reclaimable caches)",
        )
    } else {
        (
            "Kernel memory",
            "Working set − kernel memory",
            "cgroup v1 reports no reclaimable slab per cgroup: kernel memory is memory.kmem.usage_in_bytes \
             (reclaimable or not), so the corrected figure is a lower bound",
        )
    };
    let mut s = String::from("\nmemory of each cgroup with its children, as cAdvisor reads it\n");
    s += &render_grid(&Grid {
        header: vec![
            "Cgroup".into(),
            "Working set (cAdvisor)".into(),
            slab.into(),
            "Dentries (est.)".into(),
            "Dentry bytes".into(),
            corrected.into(),
        ],
        rows,
    });
    let _ = writeln!(
        s,
        "working set: usage − inactive file ({}), what the kubelet's eviction and kubectl top read; {note}",
        if b.cgroup_version == 2 {
            "memory.current − inactive_file"
        } else {
            "memory.usage_in_bytes − total_inactive_file"
        }
    );
    s
}

pub(crate) fn kernel_log(k: &KernelLog) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nkernel log ({}): {} soft lockup(s), {} RCU stall(s), {} hung task(s); {} in the dcache",
        k.source, k.soft_lockups, k.rcu_stalls, k.hung_tasks, k.in_dcache
    );
    if k.reports.is_empty() {
        return s;
    }
    let rows = k
        .reports
        .iter()
        .map(|r| {
            vec![
                r.time.clone(),
                format!("{:?}", r.kind)
                    .to_lowercase()
                    .replace("softlockup", "soft lockup")
                    .replace("rcustall", "RCU stall")
                    .replace("hungtask", "hung task"),
                match (&r.task, r.pid) {
                    (Some(t), Some(p)) => format!("{t}:{p}"),
                    (Some(t), None) => t.clone(),
                    _ => "–".into(),
                },
                if r.dcache { format!("yes ({})", r.dcache_functions.join(", ")) } else { "no".into() },
                r.stack.iter().take(4).cloned().collect::<Vec<_>>().join(" < "),
            ]
        })
        .collect();
    s += &render_grid(&Grid {
        header: vec!["Time".into(), "Report".into(), "Task".into(), "In the dcache".into(), "Stack (top)".into()],
        rows,
    });
    s
}

/// `9.78M dentries to go`, `1.2M dentries past it`, `–`.
fn to_go(distance: Option<f64>) -> String {
    match distance {
        Some(t) if t >= 0.0 => format!("{} dentries to go", human(t as u64)),
        Some(t) => format!("{} dentries past it", human((-t) as u64)),
        None => "–".into(),
    }
}

/// The level, the first incident and the soft-lockup edge of a watch line:
/// the distances to the low ends of their intervals, as the level takes them.
fn watch_distances(st: &StatusResult) -> String {
    let mut s = format!("  level {}", st.level.name());
    if let Some(src) = &st.level_source {
        let verb = if st.level == Level::Ok { "nearest:" } else { "set by" };
        let _ = write!(s, " ({verb} {})", src.name);
    }
    s += "  first incident ";
    match st.incidents.as_ref().filter(|i| i.known) {
        None => s += "unknown",
        Some(i) => match i.first_row() {
            None => s += "none predicted",
            Some(r) => {
                let _ = write!(s, "({}, {} s): {}", r.deadline.name, r.deadline.seconds, to_go(r.dentries_to_incident));
            }
        },
    }
    let _ = write!(s, "  soft-lockup edge: {}", to_go(st.prediction.dentries_to_lockup));
    s
}

/// One line of `status --watch`.
pub(crate) fn watch_line(st: &StatusResult, elapsed: f64) -> String {
    let d = &st.dentries;
    let mut s =
        format!("{:>7.1}s  nr_dentry {}  nr_negative {}", elapsed, grouped(d.nr_dentry), grouped(d.nr_negative));
    s += &watch_distances(st);
    match &st.growth {
        None => s += "  growth: – (needs two samples)",
        Some(g) => {
            let _ = write!(
                s,
                "  growth {}/s (negative {}/s) over {:.0} s",
                signed_rate(g.rate.dentries_per_second),
                signed_rate(g.rate.negative_per_second),
                g.rate.window_seconds
            );
            let edge = match (g.edge_dentries, g.edge_low_dentries) {
                (Some(e), Some(low)) => format!("{}, low end {}", human(e as u64), human(low as u64)),
                (Some(e), None) => format!("{}, no interval", human(e as u64)),
                _ => "–".into(),
            };
            let _ = match g.seconds_to_lockup {
                Some(0.0) => write!(s, "  past the edge ({edge})"),
                Some(t) => write!(
                    s,
                    "  at {} dentries/s, the edge ({edge}) is {} away",
                    signed_rate(g.rate.dentries_per_second),
                    human_duration(t)
                ),
                None => write!(s, "  not growing: no time to the edge ({edge})"),
            };
            let _ = match g.seconds_to_first_incident {
                Some(0.0) => write!(s, "; past the first incident"),
                Some(t) => write!(s, "; the first incident {} away", human_duration(t)),
                None => Ok(()),
            };
        }
    }
    s
}
