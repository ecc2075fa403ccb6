//! The `incidents` collector, the first incident's series: per deadline
//! of the node, the count at which some task first misses it, the
//! distance to it, the ratio and the time to it at the current growth, as
//! the `dentrylab_lockup_*` series give the soft-lockup edge. Needs the
//! node's count and the calibration. Labels come
//! from fixed sets only: `deadline` from the keys the calibration knows
//! (`state::DeadlineKey`), `victim` from the victims dentrylab runs or
//! `reclaiming-cpu`, so the cardinality is bounded whatever a file says.

use anyhow::{Result, anyhow};

use super::calibration::deadline_label;
use super::{Collector, Scrape, Setup, upstream};
use crate::exporter::text::{Out, sig6};
use crate::probe::victims::Victim;
use crate::status::StatusResult;
use crate::status::incident::{Incidents, RECLAIMING_CPU, Row};

pub(crate) const NAME: &str = "incidents";

struct IncidentsCollector;

pub(super) fn new(_: &Setup) -> Option<Box<dyn Collector>> {
    Some(Box::new(IncidentsCollector))
}

impl Collector for IncidentsCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn update(&self, scrape: &Scrape<'_>, o: &mut Out) -> Result<()> {
        upstream(&scrape.reading.node, super::dentries::NAME)?;
        upstream(&scrape.reading.calibration, super::calibration::NAME)?;
        encode_status(o, scrape.predicted.ok_or_else(|| anyhow!("no prediction"))?);
        Ok(())
    }
}

/// The series of `s`'s first incident, and the time to it at the growth.
pub(crate) fn encode_status(o: &mut Out, s: &StatusResult) {
    if let Some(i) = &s.incidents {
        encode(o, i, s.dentries.nr_dentry);
    }
    if let Some(g) = &s.growth {
        o.gauge(
            "dentrylab_seconds_to_first_incident",
            "Time until nr_dentry reaches the low end of the first incident's count (the deadline missed at the \
             smallest count; the point without an interval) at the current growth (0 past it; absent when not \
             growing or when the incidents are unknown).",
            g.seconds_to_first_incident.map(sig6),
        );
    }
}

/// The `victim` label of the deadlines that watch the reclaiming CPU.
pub(super) const RECLAIMING_CPU_LABEL: &str = "reclaiming-cpu";

fn victim_label(who: &str) -> Option<&'static str> {
    if who == RECLAIMING_CPU {
        return Some(RECLAIMING_CPU_LABEL);
    }
    Victim::ALL.iter().map(|v| v.name()).find(|n| *n == who)
}

fn encode(o: &mut Out, inc: &Incidents, nr_dentry: u64) {
    o.gauge(
        "dentrylab_calibration_victims",
        "1 when the calibration says what the node's other tasks wait for during a reclaim (its victims' fits, \
         reclaim --victims; the node calibration runs the standard ones), 0 when not: the incident series are then \
         absent.",
        Some(if inc.known { 1.0 } else { 0.0 }),
    );
    let deadlines: Vec<([(&str, &str); 1], f64)> =
        inc.rows.iter().filter_map(|r| Some(([("deadline", deadline_label(r.key)?)], r.deadline.seconds))).collect();
    o.family(
        "dentrylab_incident_deadline_seconds",
        "The node's deadlines: an exec or HTTP probe's timeout, the pod-startup SLO, the soft-lockup threshold, \
         RCU's stall warning, the hung-task warning, the node-lease grace period, the kubelet's runtime request \
         timeout.",
        &deadlines.iter().map(|(l, v)| (&l[..], *v)).collect::<Vec<_>>(),
    );
    let measured: Vec<([(&str, &str); 1], f64)> = inc
        .rows
        .iter()
        .filter_map(|r| {
            let m = if r.not_measured.is_some() { 0.0 } else { 1.0 };
            Some(([("deadline", deadline_label(r.key)?)], m))
        })
        .collect();
    o.family(
        "dentrylab_incident_measured",
        "1 when a victim that does what misses the deadline ran when the node was calibrated (the pod-startup SLO: \
         the pod-start victim), 0 when not: its incident series are then absent, and no other victim's figure \
         stands in.",
        &measured.iter().map(|(l, v)| (&l[..], *v)).collect::<Vec<_>>(),
    );
    // The deadlines some measured wait reaches, with who reaches them first.
    let missed: Vec<(&Row, [(&str, &str); 2])> = inc
        .rows
        .iter()
        .filter_map(|r| {
            let who = victim_label(r.who.as_deref()?)?;
            Some((r, [("deadline", deadline_label(r.key)?), ("victim", who)]))
        })
        .collect();
    let per = |f: &dyn Fn(&Row) -> Option<f64>| -> Vec<(&[(&str, &str)], f64)> {
        missed.iter().filter_map(|(r, l)| f(r).map(|v| (&l[..], v))).collect()
    };
    let count = |v: Option<f64>| v.map(|n| sig6(n).round());
    let mut bounds: Vec<([(&str, &str); 3], f64)> = Vec::new();
    for (r, l) in &missed {
        let point = count(r.dentries);
        for (bound, v) in [
            ("low", count(r.dentries_low).or(point)),
            ("point", point),
            ("high", count(r.dentries_high).filter(|_| r.interval)),
        ] {
            if let Some(v) = v {
                bounds.push(([l[0], l[1], ("bound", bound)], v));
            }
        }
    }
    o.family(
        "dentrylab_incident_dentries",
        "Dentry count at which the first task to miss the deadline misses it, were every dentry reclaimed in one \
         walk: the point and the ends of its 90% interval (low is the point without an interval; high is absent \
         when unbounded). victim is the task: a victim of reclaim --victims, or reclaiming-cpu.",
        &bounds.iter().map(|(l, v)| (&l[..], *v)).collect::<Vec<_>>(),
    );
    o.family(
        "dentrylab_incident_ratio",
        "That task's predicted longest wait over the deadline at the node's count (1 means the deadline is \
         missed): the upper end of its 90% interval (the point without one).",
        &per(&|r| r.ratio_high.or(r.ratio).map(sig6)),
    );
    o.family(
        "dentrylab_dentries_to_incident",
        "Dentries left before the low end of the incident count (negative past it).",
        &per(&|r| count(r.dentries_low).or(count(r.dentries)).map(|l| l - nr_dentry as f64)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::DeadlineKey;

    #[test]
    fn labels_come_from_fixed_sets() {
        assert_eq!(victim_label("umount"), Some("umount"));
        assert_eq!(victim_label("fork-exec"), Some("fork-exec"));
        assert_eq!(victim_label("pod-start"), Some("pod-start"));
        assert_eq!(victim_label(RECLAIMING_CPU), Some(RECLAIMING_CPU_LABEL));
        assert_eq!(victim_label("anything\"else"), None);
        assert_eq!(deadline_label(DeadlineKey::PodStartupSlo), Some("pod_startup_slo"));
        assert_eq!(deadline_label(DeadlineKey::Other), None);
    }
}
