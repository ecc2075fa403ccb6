//! One judgment per knob: whether this kernel has it (read through the
//! proc root), its value now, and what the recorded results measured of
//! it. A knob no recorded result measured is listed with why; nothing
//! here is a generic tip.

use super::evidence::{self, Evidence};
use super::recorded::Recorded;
use super::{Knob, Node, Target};
use crate::procfs::ProcRoot;
use crate::size::{bytes, human};
use crate::status::growth::human_duration;

/// The knobs' judgments, in a fixed order: the sysctls, then the per-cgroup limit.
pub(crate) fn all(node: &Node<'_>, target: Option<&Target>, recorded: &[Recorded], proc: &ProcRoot) -> Vec<Knob> {
    let mut out = vec![
        dentry_negative(node, target, recorded, proc),
        cache_pressure(node, target, recorded, proc),
        sysctl_unmeasured(proc, "vm.vfs_cache_pressure_denom", "sys/vm/vfs_cache_pressure_denom", PRESSURE_FAILS),
        drop_caches(node, target, recorded, proc),
        memory_limit(recorded),
    ];
    out.extend(NEGATIVE_LIMITS.iter().map(|(name, rel)| sysctl_unmeasured(proc, name, rel, NEGATIVE_LIMIT_FAILS)));
    out
}

/// Negative-dentry limits proposed upstream or carried by distributions;
/// judged only where the kernel has them and a recorded run measured them.
const NEGATIVE_LIMITS: &[(&str, &str)] = &[
    ("fs.dentry-limit", "sys/fs/dentry-limit"),
    ("fs.negative-dentry-limit", "sys/fs/negative-dentry-limit"),
    ("fs.dentry-fs-klimit", "sys/fs/dentry-fs-klimit"),
];

const PRESSURE_FAILS: &str = "acts only when reclaim runs the shrinkers (memory pressure); a higher value also \
                              reclaims dentries and inodes in use, so lookups go back to the filesystem";
const NEGATIVE_LIMIT_FAILS: &str = "a limit is enforced by a reclaim: at the limit the kernel walks the dentries \
                                    it frees, whose cost per dentry docs/guidance.md gives per kernel";

fn read(proc: &ProcRoot, rel: &str) -> Option<String> {
    std::fs::read_to_string(proc.path(rel)).ok().map(|s| s.trim().to_string())
}

fn absent(name: &str, scope: &str, rel: &str, proc: &ProcRoot, failure_mode: &str) -> Knob {
    Knob {
        knob: name.into(),
        scope: scope.into(),
        present: false,
        current: None,
        judged: false,
        value: None,
        effect_on_count: Vec::new(),
        effect_on_first_incident: None,
        cost: Vec::new(),
        failure_mode: failure_mode.into(),
        why_not: Some(format!("this kernel does not have it ({} does not exist)", proc.path(rel).display())),
        evidence: Vec::new(),
    }
}

/// A sysctl no recorded result varies: present or not, it cannot be judged.
fn sysctl_unmeasured(proc: &ProcRoot, name: &str, rel: &str, failure_mode: &str) -> Knob {
    let Some(current) = read(proc, rel) else { return absent(name, "node", rel, proc, failure_mode) };
    Knob {
        current: Some(current),
        present: true,
        why_not: Some(
            "no recorded mitigate result varies it, and dentrylab mitigate cannot set it yet: its effect here is \
             not measured"
                .into(),
        ),
        ..absent(name, "node", rel, proc, failure_mode)
    }
}

fn evidence_of(recorded: &[Recorded], knob: &str) -> Vec<Evidence> {
    recorded.iter().flat_map(|r| evidence::compare(r, knob)).collect()
}

/// What the best measured reduction does to the time to the first incident.
fn on_first_incident(node: &Node<'_>, target: Option<&Target>, best: Option<&Evidence>) -> Option<String> {
    let t = target?;
    let Some(now) = t.seconds_to else {
        return Some(match node.growth_per_second {
            None => {
                format!("the growth is not known, so neither is the time to {} at {}", t.name, human(t.dentries as u64))
            }
            Some(_) => format!("the count is not growing: no time to {} at {}", t.name, human(t.dentries as u64)),
        });
    };
    let Some(e) = best else {
        return Some(format!(
            "no change measured: {} at {} stays {} away",
            t.name,
            human(t.dentries as u64),
            human_duration(now)
        ));
    };
    let with = node.seconds_to(t.dentries, e.dentries_ratio).unwrap_or(f64::INFINITY);
    Some(format!(
        "{} at {}: {} away now, {} with it (today's growth ×{:.2}, as {} measured)",
        t.name,
        human(t.dentries as u64),
        human_duration(now),
        if with.is_finite() { human_duration(with) } else { "never".into() },
        e.dentries_ratio,
        e.workload
    ))
}

/// Judges a sysctl from its comparisons: the value of the best measured
/// reduction, or the current value when none reduced the count.
fn judged_sysctl(node: &Node<'_>, target: Option<&Target>, mut k: Knob, ev: Vec<Evidence>) -> Knob {
    k.effect_on_count = ev.iter().map(Evidence::effect).collect();
    k.cost = ev.iter().map(|e| format!("{}: {}", e.workload, e.cost())).collect();
    let best = ev.iter().filter(|e| e.reduces()).min_by(|a, b| a.dentries_ratio.total_cmp(&b.dentries_ratio));
    k.value = Some(match best {
        Some(e) => format!("{} (measured ×{:.2} on {})", e.to, e.dentries_ratio, e.workload),
        None => format!(
            "{} (keep: no recorded value reduced the count beyond the runs' spread)",
            k.current.clone().unwrap_or_default()
        ),
    });
    k.effect_on_first_incident = on_first_incident(node, target, best);
    k.judged = true;
    k.why_not = None;
    k.evidence = ev;
    k
}

fn dentry_negative(node: &Node<'_>, target: Option<&Target>, recorded: &[Recorded], proc: &ProcRoot) -> Knob {
    const FAILS: &str = "none measured; it acts only in d_delete() (an unlinked file's dentry is dropped instead of \
                         becoming negative): failed lookups' negatives and overlay's in the lower layer stay";
    let (name, rel) = ("fs.dentry-negative", "sys/fs/dentry-negative");
    let Some(current) = read(proc, rel) else { return absent(name, "node", rel, proc, FAILS) };
    let k = Knob { present: true, current: Some(current), ..absent(name, "node", rel, proc, FAILS) };
    unmeasured_or_judged(node, target, k, evidence_of(recorded, name))
}

fn cache_pressure(node: &Node<'_>, target: Option<&Target>, recorded: &[Recorded], proc: &ProcRoot) -> Knob {
    let (name, rel) = ("vm.vfs_cache_pressure", "sys/vm/vfs_cache_pressure");
    let Some(current) = read(proc, rel) else { return absent(name, "node", rel, proc, PRESSURE_FAILS) };
    let k = Knob { present: true, current: Some(current), ..absent(name, "node", rel, proc, PRESSURE_FAILS) };
    unmeasured_or_judged(node, target, k, evidence_of(recorded, name))
}

fn unmeasured_or_judged(node: &Node<'_>, target: Option<&Target>, k: Knob, ev: Vec<Evidence>) -> Knob {
    if ev.is_empty() {
        return Knob { why_not: Some(format!("no recorded mitigate result varies {}", k.knob)), ..k };
    }
    judged_sysctl(node, target, k, ev)
}

/// Periodic `drop_caches`: the interval that keeps the count below the
/// target at today's growth, from the dentries a drop cannot free (those
/// in use).
fn drop_caches(node: &Node<'_>, target: Option<&Target>, recorded: &[Recorded], proc: &ProcRoot) -> Knob {
    const FAILS: &str = "each drop is itself a reclaim of every unused dentry of every filesystem and cgroup at \
                         once, and the write to drop_caches lasts as long as that walk";
    let rel = "sys/vm/drop_caches";
    if !proc.path(rel).exists() {
        return absent("drop-caches-every", "node", rel, proc, FAILS);
    }
    let k = Knob { present: true, current: None, ..absent("drop-caches-every", "node", rel, proc, FAILS) };
    let ev = evidence_of(recorded, "drop-caches-every");
    if ev.is_empty() {
        return Knob { why_not: Some("no recorded mitigate result varies drop-caches-every".into()), ..k };
    }
    let mut k = judged_sysctl(node, target, k, ev);
    let in_use = node.status.dentries.nr_dentry.saturating_sub(node.status.dentries.nr_unused) as f64;
    k.value = Some(match (target, node.growth_per_second) {
        (Some(t), Some(g)) if g > 0.0 && t.dentries > in_use => format!(
            "at most every {} ({} at {} less the {} dentries in use, at today's growth)",
            human_duration((t.dentries - in_use) / g),
            t.name,
            human(t.dentries as u64),
            human(in_use as u64)
        ),
        (Some(t), _) if t.dentries <= in_use => format!(
            "none helps: the dentries in use ({}) are already past {} at {}",
            human(in_use as u64),
            t.name,
            human(t.dentries as u64)
        ),
        _ => "off (the count is not growing, or its growth is not known)".into(),
    });
    k.failure_mode = format!(
        "{FAILS}: on this node a drop now walks its {} unused dentries ({} of them)",
        human(node.status.dentries.nr_unused),
        bytes(node.status.dentries.unused_bytes)
    );
    k
}

/// A memory limit per cgroup, from the recorded limit sweeps: at which
/// limits the cgroup reclaimed its dentries and at which its OOM killer
/// fired instead.
fn memory_limit(recorded: &[Recorded]) -> Knob {
    let sweeps: Vec<&Recorded> = recorded.iter().filter(|r| r.memory_limit_sweep.is_some()).collect();
    let mut k = Knob {
        knob: "memory-limit".into(),
        scope: "memory cgroup, per pod".into(),
        present: true,
        current: None,
        judged: !sweeps.is_empty(),
        value: None,
        effect_on_count: Vec::new(),
        effect_on_first_incident: None,
        cost: Vec::new(),
        failure_mode: "the cgroup's OOM killer fires instead of a reclaim when the charge that reaches the limit may \
                       not enter the filesystem (super_cache_scan needs __GFP_FS), and in most recorded runs anyway"
            .into(),
        why_not: sweeps.is_empty().then(|| "no recorded mitigate result sweeps memory-limit".to_string()),
        evidence: Vec::new(),
    };
    let (mut killed, mut reached, mut bounded_at) = (0u32, 0u32, Vec::new());
    for r in &sweeps {
        let Some(s) = &r.memory_limit_sweep else { continue };
        let line = s
            .outcomes
            .iter()
            .map(|o| {
                let what = if o.oom_killed > 0 {
                    format!("{}/{} OOM-killed", o.oom_killed, o.reps)
                } else if o.limit_reached == o.reps {
                    "bounded (reached, not killed)".into()
                } else {
                    "not reached".into()
                };
                format!("{}: {what}", bytes(o.limit_bytes))
            })
            .collect::<Vec<_>>()
            .join(", ");
        k.effect_on_count.push(format!("{}: {line}", r.named()));
        for o in &s.outcomes {
            killed += o.oom_killed;
            reached += o.limit_reached + o.oom_killed;
            if o.oom_killed == 0 && o.limit_reached == o.reps {
                bounded_at.push(format!("{} at {}", r.workload(), bytes(o.limit_bytes)));
            }
            if let Some(f) = o.failing_allocation.as_ref().filter(|_| o.oom_killed > 0) {
                let c = format!("{}: failing allocation {f}", r.workload());
                if !k.cost.contains(&c) {
                    k.cost.push(c);
                }
            }
        }
    }
    if k.judged {
        k.value = Some(format!(
            "no value bounds the dentries reliably: of {reached} recorded runs that reached their limit, {killed} \
             were OOM-killed{}",
            if bounded_at.is_empty() { String::new() } else { format!("; bounded only {}", bounded_at.join(", ")) }
        ));
        k.effect_on_first_incident = Some(
            "none on the node: a limit acts on one cgroup's charge, the first incident on the node's whole count"
                .into(),
        );
    }
    k
}
