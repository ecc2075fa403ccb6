//! The first incident: for each deadline of the node (a probe's timeout,
//! the pod-startup SLO, the soft-lockup watchdog, ...), the dentry count at
//! which some task first misses it when every dentry is reclaimed in one
//! walk, how far the node is from it, and the ratio of that task's
//! predicted longest wait to the deadline: the soft-lockup edge's figures,
//! for every deadline.
//!
//! The waits come from the calibration: each victim's fit of its longest
//! wait against the count (`reclaim --victims`; the node calibration runs
//! the standard victims), and for the deadlines that watch the reclaiming
//! CPU itself (the watchdog, RCU's stall warning) the stretch model the
//! soft-lockup edge uses, so the two agree. The deadlines are those the
//! calibration recorded, except the two `status` reads cheaply now:
//! `kernel.watchdog_thresh` and `kernel.hung_task_timeout_secs`. A
//! calibration without the victims' part (saved before it existed, run
//! without victims, or the built-in default) leaves them unknown, and says
//! how to measure them.

use serde::{Deserialize, Serialize};

use super::calibration::{CalibrationUsed, Source};
use crate::analysis::edge::{Level, Model, Prediction, predict_against};
use crate::analysis::verdict::Governs;
use crate::analysis::victims::{Deadline, Watches};
use crate::probe::victims::Victim;
use crate::procfs::ProcRoot;
use crate::state::{DeadlineKey, MeasuredBy, VICTIMS_SCHEMA};

/// Who misses the deadlines that watch the reclaiming CPU.
pub(crate) const RECLAIMING_CPU: &str = "reclaiming CPU";
/// What measures the incidents on a node.
pub(crate) const HOW_TO_MEASURE: &str = "run `sudo dentrylab reclaim --sizes auto` on this node to measure them";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Incidents {
    /// Whether the calibration says what the node's other tasks wait for.
    pub known: bool,
    /// Why not, and how to find out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
    /// The victims the calibration ran, and those whose waits grow with the count.
    #[serde(default)]
    pub victims_ran: Vec<Victim>,
    #[serde(default)]
    pub waiting: Vec<String>,
    /// One per deadline, shortest first.
    #[serde(default)]
    pub rows: Vec<Row>,
    /// The deadline missed at the smallest count (by the point estimate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<DeadlineKey>,
}

/// One deadline: who misses it first, at what count, and how far the node is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Row {
    pub key: DeadlineKey,
    #[serde(flatten)]
    pub deadline: Deadline,
    /// Its value was read now, not taken from the calibration.
    pub read_now: bool,
    /// A victim's name or [`RECLAIMING_CPU`]; `None` when no measured wait grows to it.
    pub who: Option<String>,
    /// Why no figure: no victim that may judge it ran (the pod-startup SLO
    /// is the `pod-start` victim's alone), or none does what misses it
    /// (the node lease). No other victim's figure stands in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_measured: Option<String>,
    /// The count at which it is missed, and its 90% interval (`high`
    /// `None` when unbounded; both `None` without an interval).
    pub dentries: Option<f64>,
    pub dentries_low: Option<f64>,
    pub dentries_high: Option<f64>,
    pub interval: bool,
    /// That task's predicted longest wait were every dentry on the node
    /// reclaimed in one walk, and the upper end of its 90% interval.
    pub predicted_wait_seconds: Option<f64>,
    pub predicted_wait_high_seconds: Option<f64>,
    /// Predicted wait ÷ the deadline (1: missed), and from the upper end.
    pub ratio: Option<f64>,
    pub ratio_high: Option<f64>,
    /// `dentries_low` (else `dentries`) − the node's count; negative past it.
    pub dentries_to_incident: Option<f64>,
    /// The deadline's level, by the soft-lockup rule: warn from a ratio
    /// of 0.5, danger from 1, the upper end of the interval first.
    #[serde(default)]
    pub level: Level,
}

impl Incidents {
    pub(crate) fn first_row(&self) -> Option<&Row> {
        self.first.and_then(|k| self.rows.iter().find(|r| r.key == k))
    }

    pub(crate) fn row(&self, key: DeadlineKey) -> Option<&Row> {
        self.rows.iter().find(|r| r.key == key)
    }
}

/// Why a calibration without the victims' part cannot say.
fn unknown_why(cal: &CalibrationUsed) -> String {
    let c = &cal.calibration;
    match cal.source {
        Source::Builtin => {
            format!("the built-in default does not say what the node's other tasks wait for: {HOW_TO_MEASURE}")
        }
        Source::File if c.schema < VICTIMS_SCHEMA => format!(
            "the calibration was saved before dentrylab measured what the node's other tasks wait for (schema {}): \
             {HOW_TO_MEASURE}",
            c.schema
        ),
        Source::File => format!(
            "the calibration's sweep ran without victims ({}): {HOW_TO_MEASURE}",
            c.victims_skipped.as_deref().unwrap_or("no reason recorded")
        ),
    }
}

/// The node's deadlines for `nr_dentry` dentries. `stretch` is the model the
/// soft-lockup edge uses; `watchdog_thresh` the value it used (0: off).
pub(crate) fn assess(
    cal: &CalibrationUsed,
    stretch: &Model,
    nr_dentry: u64,
    watchdog_thresh: u64,
    proc: &ProcRoot,
) -> Incidents {
    let Some(v) = &cal.calibration.victims else {
        return Incidents {
            known: false,
            unknown: Some(unknown_why(cal)),
            victims_ran: Vec::new(),
            waiting: Vec::new(),
            rows: Vec::new(),
            first: None,
        };
    };
    let hung_task = proc.sysctl_u64("sys/kernel/hung_task_timeout_secs").ok();
    let mut rows: Vec<Row> = v
        .incidents
        .iter()
        .filter(|s| s.key != DeadlineKey::Other)
        .filter_map(|s| {
            let mut d = s.incident.deadline.clone();
            if s.key == DeadlineKey::PodStartupSlo {
                // A pod start's own time and its factor are this project's
                // measurements, not the node's: a calibration saved before
                // either was taken is judged with them too.
                d.before = Some(crate::analysis::victims::pod_start_before());
            }
            let now = match s.key {
                DeadlineKey::SoftLockup => {
                    Some((2.0 * watchdog_thresh as f64, watchdog_thresh, "kernel.watchdog_thresh"))
                }
                DeadlineKey::HungTask => hung_task.map(|t| (t as f64, t, "kernel.hung_task_timeout_secs")),
                // Fixed deadlines: no sysctl of this node moves them.
                DeadlineKey::ProbeTimeout
                | DeadlineKey::PodStartupSlo
                | DeadlineKey::RcuStall
                | DeadlineKey::NodeLeaseGrace
                | DeadlineKey::RuntimeRequestTimeout
                | DeadlineKey::Other => None,
            };
            if let Some((seconds, value, sysctl)) = now {
                if value == 0 {
                    return None; // off now: nothing to miss
                }
                d.seconds = seconds;
                d.source = format!("{sysctl} ({value}), read now");
            }
            Some(row(s.key, d, now.is_some(), v, stretch, nr_dentry))
        })
        .collect();
    rows.sort_by(|a, b| a.deadline.seconds.total_cmp(&b.deadline.seconds).then(a.key.cmp(&b.key)));
    let first =
        rows.iter().filter_map(|r| r.dentries.map(|n| (n, r.key))).min_by(|a, b| a.0.total_cmp(&b.0)).map(|(_, k)| k);
    Incidents {
        known: true,
        unknown: None,
        victims_ran: v.ran.clone(),
        waiting: v.fits.iter().map(|f| f.who.clone()).collect(),
        rows,
        first,
    }
}

/// Why a deadline that watches the victims has no figure, when so: no
/// victim does what misses it, or the one that does did not run.
fn not_measured(key: DeadlineKey, ran: &[Victim]) -> Option<String> {
    match key.measured_by() {
        MeasuredBy::AnyVictim => None,
        MeasuredBy::Nobody(why) => Some(why.into()),
        MeasuredBy::Only(v) if ran.contains(&v) => None,
        MeasuredBy::Only(v) => Some(format!(
            "only the {} victim measures it, and the calibration did not run it (saved before it existed, \
             --victims left it out, or none of its calls overlapped a reclaim: the calibration's victims say \
             why): {HOW_TO_MEASURE}",
            v.name()
        )),
    }
}

/// The deadline's row: of the waits that may judge it
/// ([`DeadlineKey::measured_by`]), the one that reaches it
/// at the smallest count names it (a victim that may wait by its upper
/// fit); its interval and level are the safe side of every wait that
/// reaches it: the smallest low end, the smallest high end, the largest
/// upper ratio and the worst level.
fn row(
    key: DeadlineKey,
    deadline: Deadline,
    read_now: bool,
    v: &crate::state::VictimsCalibration,
    stretch: &Model,
    n: u64,
) -> Row {
    let candidates: Vec<(String, Model, bool)> = match deadline.watches {
        Watches::ReclaimingCpu => vec![(RECLAIMING_CPU.into(), *stretch, false)],
        Watches::Victims => v
            .fits
            .iter()
            .filter(|f| key.measured_by().admits(&f.who))
            .map(|f| {
                // A victim's longest wait is its own "stretch": no total
                // time to cap it, no other model to govern.
                let m = Model { time_power: None, gap_power: Some(f.fit), governs: Governs::LongestStretch };
                (f.who.clone(), m, f.may_wait.is_some())
            })
            .collect(),
    };
    let reaching: Vec<(String, Prediction, f64)> = candidates
        .into_iter()
        .filter_map(|(who, m, may_wait)| {
            let p = predict_against(&m, n, Some(deadline.budget()));
            let count = match (may_wait, p.lockup_dentries, p.lockup_dentries_low) {
                (true, Some(c), Some(l)) => Some(c.min(l)),
                (true, None, low) => low,
                (_, c, _) => c,
            }?;
            Some((who, p, count))
        })
        .collect();
    let best = reaching.iter().min_by(|a, b| a.2.total_cmp(&b.2));
    let p = best.map(|b| &b.1);
    let fold = |f: &dyn Fn(&Prediction, f64) -> Option<f64>, pick: fn(f64, f64) -> f64| {
        reaching.iter().filter_map(|(_, p, c)| f(p, *c)).reduce(pick)
    };
    let low = fold(&|p, c| Some(p.lockup_dentries_low.map_or(c, |l| l.min(c))), f64::min);
    let high = p
        .and_then(|p| p.lockup_dentries_high)
        .map(|_| reaching.iter().filter_map(|(_, p, _)| p.lockup_dentries_high).fold(f64::INFINITY, f64::min));
    let ratio_high = fold(&|p, _| p.lockup_ratio_high, f64::max);
    let level = reaching.iter().map(|(_, p, _)| p.level).max().unwrap_or(Level::Ok);
    let not_measured = if deadline.watches == Watches::Victims { not_measured(key, &v.ran) } else { None };
    Row {
        key,
        deadline,
        read_now,
        who: best.map(|b| b.0.clone()),
        not_measured,
        dentries: best.map(|b| b.2),
        dentries_low: p.filter(|p| p.interval).and(low),
        dentries_high: high,
        interval: p.is_some_and(|p| p.interval),
        predicted_wait_seconds: p.and_then(|p| p.predicted_longest_stretch_seconds),
        predicted_wait_high_seconds: fold(&|p, _| p.predicted_longest_stretch_high_seconds, f64::max),
        ratio: p.and_then(|p| p.lockup_ratio),
        ratio_high,
        dentries_to_incident: low.map(|l| l - n as f64),
        level,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fit::PowerFit;
    use crate::analysis::victims::{Crossing, Incident, WaitFit};
    use crate::state::{Calibration, SavedIncident, VictimsCalibration};

    fn lin(seconds_per_million: f64) -> PowerFit {
        PowerFit { coefficient: seconds_per_million / 1e6, exponent: 1.0, r2: 1.0, exponent_stderr: 0.0, band: None }
    }

    fn saved(key: DeadlineKey, name: &str, seconds: f64, watches: Watches) -> SavedIncident {
        let deadline = Deadline { name: name.into(), seconds, source: "calibrated".into(), watches, before: None };
        SavedIncident { key, incident: Incident { deadline, first: None::<Crossing> } }
    }

    fn used(victims: Option<VictimsCalibration>, schema: u32) -> CalibrationUsed {
        let calibration = Calibration { schema, victims, ..super::super::calibration::builtin() };
        CalibrationUsed { source: Source::File, path: String::new(), name: String::new(), calibration }
    }

    fn stretch(seconds_per_million: f64) -> Model {
        Model { time_power: None, gap_power: Some(lin(seconds_per_million)), governs: Governs::LongestStretch }
    }

    #[test]
    fn each_deadline_is_missed_first_by_the_fastest_wait_and_read_now_where_cheap() {
        let proc = ProcRoot::new(crate::procfs::fixture_dir("6.18"));
        let v = VictimsCalibration {
            ran: vec![Victim::Umount, Victim::Stat],
            largest_size: 8_000_000,
            fits: vec![
                WaitFit { who: "umount".into(), watches: Watches::Victims, fit: lin(0.1), shape: None, may_wait: None },
                WaitFit { who: "stat".into(), watches: Watches::Victims, fit: lin(0.001), shape: None, may_wait: None },
            ],
            unaffected: vec![],
            incidents: vec![
                saved(DeadlineKey::ProbeTimeout, "probe", 1.0, Watches::Victims),
                saved(DeadlineKey::SoftLockup, "soft lockup", 20.0, Watches::ReclaimingCpu),
                saved(DeadlineKey::PodStartupSlo, "pod start", 5.0, Watches::Victims),
            ],
        };
        let cal = used(Some(v), VICTIMS_SCHEMA);
        // watchdog_thresh is 5 now: the soft-lockup deadline is 10 s, not the calibrated 20 s.
        let inc = assess(&cal, &stretch(0.05), 2_000_000, 5, &proc);
        assert!(inc.known && inc.unknown.is_none());
        let keys: Vec<DeadlineKey> = inc.rows.iter().map(|r| r.key).collect();
        assert_eq!(keys, vec![DeadlineKey::ProbeTimeout, DeadlineKey::PodStartupSlo, DeadlineKey::SoftLockup]);
        let probe = inc.row(DeadlineKey::ProbeTimeout).unwrap();
        assert_eq!(probe.who.as_deref(), Some("umount"));
        assert!((probe.dentries.unwrap() - 10e6).abs() < 1.0, "{probe:?}");
        assert!((probe.ratio.unwrap() - 0.2).abs() < 1e-9, "2M of 10M: {probe:?}");
        assert!((probe.dentries_to_incident.unwrap() - 8e6).abs() < 1.0);
        assert!(!probe.read_now);
        let lockup = inc.row(DeadlineKey::SoftLockup).unwrap();
        assert!(lockup.read_now && lockup.deadline.seconds == 10.0, "{lockup:?}");
        assert_eq!(lockup.who.as_deref(), Some(RECLAIMING_CPU));
        assert!((lockup.dentries.unwrap() - 200e6).abs() < 1.0, "{lockup:?}");
        assert_eq!(inc.first, Some(DeadlineKey::ProbeTimeout));
        assert_eq!(inc.waiting, vec!["umount", "stat"]);
        // Without the pod-start victim the pod-startup SLO is not measured:
        // the umount victim's figure does not stand in.
        let pod = inc.row(DeadlineKey::PodStartupSlo).unwrap();
        assert_eq!((pod.who.as_ref(), pod.dentries, pod.ratio), (None, None, None));
        assert!(pod.not_measured.as_deref().is_some_and(|w| w.contains("pod-start")), "{pod:?}");
        assert!(probe.not_measured.is_none() && lockup.not_measured.is_none());
        // The watchdog off: its deadline goes.
        let off = assess(&cal, &stretch(0.05), 2_000_000, 0, &proc);
        assert!(off.row(DeadlineKey::SoftLockup).is_none());
    }

    /// The pod-startup SLO is the pod-start victim's alone, though the
    /// umount victim's wait would reach it sooner, and it is missed where
    /// that wait reaches the SLO less a pod start's own time (a calibration
    /// saved without it gets it); the node lease is no victim's.
    #[test]
    fn the_pod_startup_slo_is_the_pod_start_victims_and_the_lease_nobodys() {
        let proc = ProcRoot::new(crate::procfs::fixture_dir("6.18"));
        let fit = |who: &str, s| WaitFit {
            who: who.into(),
            watches: Watches::Victims,
            fit: lin(s),
            shape: None,
            may_wait: None,
        };
        let v = VictimsCalibration {
            ran: vec![Victim::Umount, Victim::PodStart],
            largest_size: 1_000_000,
            fits: vec![fit("umount", 0.1), fit("pod-start", 0.05)],
            unaffected: vec![],
            incidents: vec![
                saved(DeadlineKey::PodStartupSlo, "pod start", 5.0, Watches::Victims),
                saved(DeadlineKey::NodeLeaseGrace, "lease", 50.0, Watches::Victims),
                saved(DeadlineKey::RuntimeRequestTimeout, "cri", 120.0, Watches::Victims),
            ],
        };
        let inc = assess(&used(Some(v), VICTIMS_SCHEMA), &stretch(0.05), 1_000, 10, &proc);
        let pod = inc.row(DeadlineKey::PodStartupSlo).unwrap();
        assert_eq!(pod.who.as_deref(), Some("pod-start"));
        let budget = (5.0 - crate::analysis::victims::POD_START_BEFORE_SECONDS)
            / crate::analysis::victims::POD_START_NODE_FACTOR;
        assert!(budget < 5.0 && pod.deadline.budget() == budget, "{pod:?}");
        assert!((pod.dentries.unwrap() - budget / 0.05 * 1e6).abs() < 1.0, "{pod:?}");
        assert!(pod.not_measured.is_none());
        let lease = inc.row(DeadlineKey::NodeLeaseGrace).unwrap();
        assert_eq!((lease.who.as_ref(), lease.dentries), (None, None));
        assert!(lease.not_measured.as_deref().is_some_and(|w| w.contains("node lease")), "{lease:?}");
        // Any victim may miss the others: the umount victim first.
        assert_eq!(inc.row(DeadlineKey::RuntimeRequestTimeout).unwrap().who.as_deref(), Some("umount"));
        assert_eq!(inc.first, Some(DeadlineKey::PodStartupSlo));
    }

    use crate::analysis::victims::fixtures::fitted;

    /// Two waiting victims whose intervals overlap: the earlier point names
    /// the first incident, its low end is the smallest over both, and the
    /// ratio and level the worst upper end's.
    #[test]
    fn the_first_incident_is_on_the_safe_side_of_every_waiting_victim() {
        let proc = ProcRoot::new(crate::procfs::fixture_dir("6.18"));
        let (a, b) = (fitted("umount", 0.09, 1.05), fitted("mount", 0.08, 1.6));
        let v = VictimsCalibration {
            ran: vec![Victim::Umount],
            largest_size: 8_000_000,
            fits: vec![a.clone(), b.clone()],
            unaffected: vec![],
            incidents: vec![saved(DeadlineKey::ProbeTimeout, "probe", 1.0, Watches::Victims)],
        };
        let n = 6_000_000;
        let inc = assess(&used(Some(v), VICTIMS_SCHEMA), &stretch(0.05), n, 10, &proc);
        let r = inc.row(DeadlineKey::ProbeTimeout).unwrap();
        let alone = |f: &WaitFit| {
            let m = Model { time_power: None, gap_power: Some(f.fit), governs: Governs::LongestStretch };
            predict_against(&m, n, Some(1.0))
        };
        let (pa, pb) = (alone(&a), alone(&b));
        let (la, lb) = (pa.lockup_dentries_low.unwrap(), pb.lockup_dentries_low.unwrap());
        assert!(lb < la && la < pb.lockup_dentries_high.unwrap(), "overlapping: {pa:?} {pb:?}");
        assert_eq!(r.who.as_deref(), Some("umount"));
        assert_eq!(r.dentries, pa.lockup_dentries);
        assert_eq!(r.dentries_low, Some(lb), "the other victim's low end");
        assert_eq!(r.dentries_to_incident, Some(lb - n as f64));
        let worst = pa.lockup_ratio_high.unwrap().max(pb.lockup_ratio_high.unwrap());
        assert_eq!(r.ratio_high, Some(worst));
        assert_eq!(r.level, pa.level.max(pb.level));
        assert!(pb.lockup_ratio_high.unwrap() > pa.lockup_ratio_high.unwrap(), "the wider band's upper end");
    }

    #[test]
    fn a_wait_that_does_not_grow_misses_nothing() {
        let proc = ProcRoot::new(crate::procfs::fixture_dir("6.18"));
        let flat = PowerFit { coefficient: 0.003, exponent: -0.01, r2: 0.0, exponent_stderr: 0.1, band: None };
        let v = VictimsCalibration {
            ran: vec![Victim::Stat],
            largest_size: 1_000_000,
            fits: vec![WaitFit {
                who: "stat".into(),
                watches: Watches::Victims,
                fit: flat,
                shape: None,
                may_wait: None,
            }],
            unaffected: vec![],
            incidents: vec![saved(DeadlineKey::PodStartupSlo, "pod start", 5.0, Watches::Victims)],
        };
        let inc = assess(&used(Some(v), VICTIMS_SCHEMA), &stretch(0.05), 1_000, 10, &proc);
        let r = inc.row(DeadlineKey::PodStartupSlo).unwrap();
        assert_eq!((r.who.as_ref(), r.dentries, r.ratio), (None, None, None));
        assert_eq!(inc.first, None);
    }

    #[test]
    fn without_the_victims_part_the_incidents_are_unknown_and_it_says_how_to_measure() {
        let proc = ProcRoot::new(crate::procfs::fixture_dir("6.18"));
        let old = assess(&used(None, 1), &stretch(0.05), 1_000, 10, &proc);
        assert!(!old.known && old.rows.is_empty());
        let why = old.unknown.unwrap();
        assert!(why.contains("schema 1") && why.contains("reclaim --sizes auto"), "{why}");
        let mut none = used(None, VICTIMS_SCHEMA);
        none.calibration.victims_skipped = Some("--victims none".into());
        let why = assess(&none, &stretch(0.05), 1_000, 10, &proc).unknown.unwrap();
        assert!(why.contains("ran without victims (--victims none)"), "{why}");
        let mut builtin = used(None, VICTIMS_SCHEMA);
        builtin.source = Source::Builtin;
        let why = assess(&builtin, &stretch(0.05), 1_000, 10, &proc).unknown.unwrap();
        assert!(why.starts_with("the built-in default"), "{why}");
    }
}
