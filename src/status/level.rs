//! The node's level, what `--fail-on`, `--watch` and `dentrylab_level`
//! follow: the worst of the soft-lockup level and the level of every
//! deadline of the first incident, each by the soft-lockup rule (warn when
//! the predicted wait is at least half the deadline, danger when it
//! reaches it; the upper end of its 90% interval first), and the deadline
//! that set it: the one nearest to being missed, by that ratio. Without
//! the victims' part of the calibration the incidents are unknown and the
//! level is the soft-lockup one, as before.

use serde::{Deserialize, Serialize};

use super::incident::{Incidents, RECLAIMING_CPU};
use crate::analysis::edge::{Level, Prediction};
use crate::state::DeadlineKey;

/// The soft-lockup deadline's name when the incidents do not give it.
const SOFT_LOCKUP: &str = "the soft-lockup watchdog";

/// The deadline that set the level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LevelSource {
    pub key: DeadlineKey,
    pub name: String,
    pub seconds: f64,
    /// Who misses it first: a victim, or [`RECLAIMING_CPU`].
    pub who: Option<String>,
    /// That task's predicted longest wait over the deadline: the upper end
    /// of its 90% interval when `interval`, else the point.
    pub ratio: f64,
    pub interval: bool,
}

impl LevelSource {
    /// `an exec or HTTP probe's timeout (1 s)`.
    pub(crate) fn deadline(&self) -> String {
        let s = if self.seconds.fract() == 0.0 { format!("{:.0}", self.seconds) } else { format!("{}", self.seconds) };
        format!("{} ({s} s)", self.name)
    }
}

/// The level and what set it. `incidents` is `None` or not `known` when
/// the calibration does not say what the node's other tasks wait for.
pub(crate) fn assess(p: &Prediction, incidents: Option<&Incidents>) -> (Level, Option<LevelSource>) {
    let known = incidents.filter(|i| i.known);
    // The soft-lockup deadline is the prediction itself (its row in the
    // incidents is the same figure, and is absent from a calibration saved
    // with the watchdog off).
    let lockup = p.soft_lockup_threshold_seconds.zip(p.lockup_ratio_high.or(p.lockup_ratio)).map(|(seconds, ratio)| {
        let name = known.and_then(|i| i.row(DeadlineKey::SoftLockup)).map_or(SOFT_LOCKUP, |r| r.deadline.name.as_str());
        LevelSource {
            key: DeadlineKey::SoftLockup,
            name: name.to_string(),
            seconds,
            who: Some(RECLAIMING_CPU.into()),
            ratio,
            interval: p.lockup_ratio_high.is_some(),
        }
    });
    let rows = known.into_iter().flat_map(|i| &i.rows).filter(|r| r.key != DeadlineKey::SoftLockup).filter_map(|r| {
        Some(LevelSource {
            key: r.key,
            name: r.deadline.name.clone(),
            seconds: r.deadline.seconds,
            who: r.who.clone(),
            ratio: r.ratio_high.or(r.ratio)?,
            interval: r.ratio_high.is_some(),
        })
    });
    let mut all: Vec<LevelSource> = lockup.into_iter().chain(rows).filter(|s| s.ratio.is_finite()).collect();
    // On a tie the shorter deadline is named.
    all.sort_by(|a, b| a.seconds.total_cmp(&b.seconds).then(a.key.cmp(&b.key)));
    let source = all.into_iter().reduce(|best, s| if s.ratio > best.ratio { s } else { best });
    let level = Level::of(source.as_ref().map(|s| s.ratio)).max(p.level);
    (level, source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::edge::{Model, predict_against};
    use crate::analysis::fit::PowerFit;
    use crate::analysis::verdict::Governs;
    use crate::analysis::victims::{Deadline, Watches};
    use crate::status::incident::Row;

    fn lin(seconds_per_million: f64) -> Model {
        let fit = PowerFit {
            coefficient: seconds_per_million / 1e6,
            exponent: 1.0,
            r2: 1.0,
            exponent_stderr: 0.0,
            band: None,
        };
        Model { time_power: None, gap_power: Some(fit), governs: Governs::LongestStretch }
    }

    fn row(key: DeadlineKey, seconds: f64, who: &str, p: &Prediction) -> Row {
        let deadline = Deadline {
            name: format!("{key:?}"),
            seconds,
            source: String::new(),
            watches: Watches::Victims,
            before: None,
        };
        Row {
            key,
            deadline,
            read_now: false,
            who: Some(who.into()),
            not_measured: None,
            dentries: p.lockup_dentries,
            dentries_low: None,
            dentries_high: None,
            interval: false,
            predicted_wait_seconds: p.predicted_longest_stretch_seconds,
            predicted_wait_high_seconds: None,
            ratio: p.lockup_ratio,
            ratio_high: None,
            dentries_to_incident: p.dentries_to_lockup,
            level: p.level,
        }
    }

    fn incidents(rows: Vec<Row>) -> Incidents {
        Incidents { known: true, unknown: None, victims_ran: vec![], waiting: vec![], rows, first: None }
    }

    #[test]
    fn the_nearest_deadline_sets_the_level() {
        // 8M dentries: the stretch 0.05 s per million against 20 s (0.02,
        // ok); the umount wait 0.1 s per million against 1 s (0.8, warn)
        // and 5 s (0.16).
        let n = 8_000_000;
        let lockup = predict_against(&lin(0.05), n, Some(20.0));
        let umount = lin(0.1);
        let probe = row(DeadlineKey::ProbeTimeout, 1.0, "umount", &predict_against(&umount, n, Some(1.0)));
        let pod = row(DeadlineKey::PodStartupSlo, 5.0, "umount", &predict_against(&umount, n, Some(5.0)));
        let inc = incidents(vec![probe, pod]);
        assert_eq!(lockup.level, Level::Ok);
        let (level, source) = assess(&lockup, Some(&inc));
        assert_eq!(level, Level::Warn);
        let s = source.unwrap();
        assert_eq!((s.key, s.who.as_deref(), s.interval), (DeadlineKey::ProbeTimeout, Some("umount"), false));
        assert!((s.ratio - 0.8).abs() < 1e-9, "{s:?}");
        assert_eq!(s.deadline(), "ProbeTimeout (1 s)");
        // Past the probe's deadline: danger, still named by it.
        let m = 12_000_000;
        let probe = row(DeadlineKey::ProbeTimeout, 1.0, "umount", &predict_against(&umount, m, Some(1.0)));
        let (level, s) = assess(&predict_against(&lin(0.05), m, Some(20.0)), Some(&incidents(vec![probe])));
        assert_eq!((level, s.unwrap().key), (Level::Danger, DeadlineKey::ProbeTimeout));
    }

    #[test]
    fn without_incidents_the_level_is_the_soft_lockups() {
        let p = predict_against(&lin(0.05), 240_000_000, Some(20.0));
        assert_eq!(p.level, Level::Warn);
        for inc in [None, Some(&Incidents { known: false, ..incidents(vec![]) })] {
            let (level, s) = assess(&p, inc);
            assert_eq!(level, Level::Warn);
            let s = s.unwrap();
            assert_eq!(
                (s.key, s.name.as_str(), s.who.as_deref()),
                (DeadlineKey::SoftLockup, SOFT_LOCKUP, Some(RECLAIMING_CPU))
            );
            assert!((s.ratio - 0.6).abs() < 1e-9);
        }
        // The watchdog off and nothing known: ok, and nothing set it.
        let off = predict_against(&lin(0.05), 240_000_000, None);
        assert_eq!(assess(&off, None), (Level::Ok, None));
    }

    #[test]
    fn a_longer_deadline_missed_by_another_task_can_set_it() {
        // The watchdog off: RCU's stall warning (watched by the reclaiming
        // CPU) is still a deadline; a victim that does not grow misses nothing.
        let n = 800_000_000;
        let off = predict_against(&lin(0.05), n, None);
        let mut rcu = row(DeadlineKey::RcuStall, 59.0, RECLAIMING_CPU, &predict_against(&lin(0.05), n, Some(59.0)));
        rcu.deadline.watches = Watches::ReclaimingCpu;
        let mut flat = row(DeadlineKey::ProbeTimeout, 1.0, "stat", &predict_against(&lin(0.0), n, Some(1.0)));
        flat.ratio = None;
        let (level, s) = assess(&off, Some(&incidents(vec![flat, rcu])));
        assert_eq!((level, s.unwrap().key), (Level::Warn, DeadlineKey::RcuStall));
    }
}
