//! The calibration a reclaim sweep saves for `status` and the exporter:
//! the first method's fits, and what the victims waited for (their fits
//! and the node's deadlines, each under a [`DeadlineKey`]).

use super::deadline_keys::key;
use super::result::ReclaimResult;
use super::victims::Analysis;
use crate::analysis::victims::Watches;
use crate::state::{NotWaiting, SavedIncident, VictimsCalibration};

/// Said in the calibration when a sweep ran without victims and did not
/// say why (a list of sizes without `--victims`).
pub(super) const NO_VICTIMS: &str = "the sweep ran without --victims";

impl ReclaimResult {
    /// The calibration this sweep saves for `status` and the exporter: the
    /// first method's fits (with their 90% bands, so the lockup count's
    /// interval comes along), or `None` without a verdict and a time fit.
    pub(crate) fn calibration(&self) -> Option<crate::state::Calibration> {
        let v = self.verdict.as_ref()?;
        self.fits.time_power?;
        let o = &self.options;
        Some(crate::state::Calibration {
            schema: crate::state::CALIBRATION_SCHEMA,
            saved_at: crate::result::now_utc(),
            kernel: self.environment.kernel.clone(),
            preemption: self.environment.preemption.clone(),
            fs: o.fs_label(),
            kind: o.kind.name().into(),
            layout: o.layout.to_string(),
            method: o.methods.first()?.name().into(),
            largest_size: self.sizes.last().map(|s| s.target).unwrap_or(0),
            bytes_per_dentry: self.bytes_per_dentry,
            time_linear: self.fits.time_linear,
            time_power: self.fits.time_governing(),
            gap_power: self.fits.gap_governing(),
            governs: Some(v.governs),
            watchdog_thresh_seconds: self.environment.watchdog_thresh_seconds,
            validated_by_watchdog: self.watchdog.as_ref().is_some_and(|w| w.validated),
            command: self.header.command.clone(),
            victims: self.victims.as_ref().map(|a| saved(a, &o.victims)),
            victims_skipped: match &self.victims {
                Some(_) => None,
                None if o.victims.is_empty() => Some(o.victims_skipped.clone().unwrap_or_else(|| NO_VICTIMS.into())),
                None => Some("no victim repetition ran (no size was measured)".into()),
            },
        })
    }
}

/// The victims' analysis as the calibration keeps it: the victims' own
/// fits (the reclaiming CPU's is the calibration's stretch fit already),
/// who does not wait, and every deadline with its first incident.
fn saved(a: &Analysis, ran: &[crate::probe::victims::Victim]) -> VictimsCalibration {
    // A victim that failed ran, but measured nothing.
    let ran = ran.iter().copied().filter(|v| !a.failed.iter().any(|f| f.victim == *v)).collect();
    VictimsCalibration {
        ran,
        largest_size: a.sizes.iter().map(|s| s.target).max().unwrap_or(0),
        fits: a.fits.iter().filter(|f| f.watches == Watches::Victims).cloned().collect(),
        unaffected: a.unaffected.iter().map(|u| NotWaiting { victim: u.victim, why: u.why.clone() }).collect(),
        incidents: a.incidents.iter().map(|i| SavedIncident { key: key(&i.deadline), incident: i.clone() }).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::deadline_keys::incidents;
    use crate::analysis::victims::{Deadline, WaitFit};
    use crate::state::DeadlineKey;
    use super::*;
    use crate::probe::victims::Victim;

    /// Every deadline the sweep knows has a key of its own: a renamed one
    /// would otherwise vanish from the exporter's `deadline` label.
    #[test]
    fn every_deadline_has_a_key() {
        let proc = crate::procfs::ProcRoot::new(crate::procfs::fixture_dir("6.18"));
        let mut env = crate::env::Environment::capture(&proc);
        env.watchdog_thresh_seconds = Some(10);
        let ds = super::super::deadline_keys::deadlines(&env, &proc);
        let mut keys: Vec<DeadlineKey> = ds.iter().map(key).collect();
        assert!(!keys.contains(&DeadlineKey::Other), "{ds:?}");
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), ds.len(), "one key per deadline: {ds:?}");
        // The three read from the kernel may be absent; the four defaults and the watchdog are not.
        for k in [
            DeadlineKey::ProbeTimeout,
            DeadlineKey::PodStartupSlo,
            DeadlineKey::SoftLockup,
            DeadlineKey::NodeLeaseGrace,
            DeadlineKey::RuntimeRequestTimeout,
        ] {
            assert!(keys.contains(&k), "{k:?} in {keys:?}");
        }
    }

    /// The recorded 1M–8M victims run (docs/victims.md): its calibration
    /// carries the umount victim's fit, the three that do not wait with
    /// their reasons, and the incidents the run itself reported, keyed.
    #[test]
    fn a_sweep_with_victims_saves_their_fits_and_incidents() {
        let text = include_str!("../../../docs/results/victims-6.18.json");
        let r: ReclaimResult = serde_json::from_str(text).unwrap();
        let c = r.calibration().expect("a calibration");
        assert_eq!(c.schema, crate::state::VICTIMS_SCHEMA);
        assert_eq!(c.victims_skipped, None);
        let v = c.victims.expect("the victims' part");
        assert_eq!(v.ran, vec![Victim::Umount, Victim::Netns, Victim::ForkExec, Victim::Stat]);
        assert_eq!(v.largest_size, 8_000_000);
        let who: Vec<&str> = v.fits.iter().map(|f| f.who.as_str()).collect();
        assert_eq!(who, vec!["umount"], "the reclaiming CPU's fit is the calibration's own");
        assert!(v.fits[0].fit.band.is_some(), "with its 90% band");
        let not: Vec<Victim> = v.unaffected.iter().map(|u| u.victim).collect();
        assert_eq!(not, vec![Victim::Netns, Victim::ForkExec, Victim::Stat]);
        let a = r.victims.as_ref().unwrap();
        assert_eq!(v.incidents.len(), a.incidents.len());
        for (s, i) in v.incidents.iter().zip(&a.incidents) {
            assert_eq!(&s.incident, i);
            assert_ne!(s.key, DeadlineKey::Other, "{:?}", i.deadline);
        }
        let pod = v.incidents.iter().find(|s| s.key == DeadlineKey::PodStartupSlo).unwrap();
        let first = pod.incident.first.as_ref().unwrap();
        assert_eq!(first.who, "umount");
        // docs/victims.md: 56M (49.1M–64M).
        assert!((first.count / 1e6 - 56.0).abs() < 0.5, "{}", first.count);
        // It round-trips through the file.
        let back: crate::state::Calibration =
            serde_json::from_str(&serde_json::to_string(&r.calibration().unwrap()).unwrap()).unwrap();
        assert_eq!(back.victims, r.calibration().unwrap().victims);
    }

    /// The recorded run's first incidents are what its own fits give for
    /// its deadlines, so a deadline corrected since the run (the node-lease
    /// grace period, 40 s → 50 s) carries the count its fit gives, and
    /// its deadline is today's default.
    #[test]
    fn the_recorded_incidents_are_the_fits_crossings() {
        let r: ReclaimResult = serde_json::from_str(include_str!("../../../docs/results/victims-6.18.json")).unwrap();
        let a = r.victims.as_ref().unwrap();
        let deadlines: Vec<Deadline> = a.incidents.iter().map(|i| i.deadline.clone()).collect();
        assert_eq!(a.incidents, crate::analysis::victims::incidents(&deadlines, &a.fits));
        let lease = deadlines.iter().find(|d| key(d) == DeadlineKey::NodeLeaseGrace).unwrap();
        assert_eq!(lease.seconds, super::super::deadline_keys::NODE_LEASE_GRACE_SECONDS);
        assert_eq!(lease.source, super::super::deadline_keys::NODE_LEASE_GRACE_SOURCE);
    }

    /// `tests/fixtures/calibration/6.18-victims` and `6.18-victims-standard`
    /// (what `status` and the exporter tests read) are what this code saves
    /// from the recorded runs, but for the time each was saved;
    /// `UPDATE_GOLDEN=1` rewrites them.
    #[test]
    fn the_victims_fixtures_are_what_the_recorded_runs_save() {
        for (text, fixture) in [
            (include_str!("../../../docs/results/victims-6.18.json"), "6.18-victims"),
            (include_str!("../../../docs/results/victims-standard-6.18-v857.json"), "6.18-victims-standard"),
        ] {
            let r: ReclaimResult = serde_json::from_str(text).unwrap();
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/calibration").join(fixture);
            let mut c = r.calibration().unwrap();
            c.saved_at = r.header.started_at.clone();
            let want = serde_json::to_string_pretty(&c).unwrap();
            let path = dir.join(crate::state::CALIBRATION_FILE);
            if std::env::var_os("UPDATE_GOLDEN").is_some() {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &want).unwrap();
            }
            let got =
                std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1)", path.display()));
            assert_eq!(got, want, "{} (UPDATE_GOLDEN=1 rewrites it)", path.display());
            assert!(crate::state::load(&dir).unwrap().is_some_and(|l| l.victims == c.victims));
        }
    }

    /// The standard victims' run (fc-v857, idle): the pod-start victim ran,
    /// its fit is kept, and the pod-startup SLO's first incident is its.
    #[test]
    fn the_standard_victims_run_carries_the_pod_start_row() {
        let text = include_str!("../../../docs/results/victims-standard-6.18-v857.json");
        let r: ReclaimResult = serde_json::from_str(text).unwrap();
        let v = r.calibration().unwrap().victims.expect("the victims' part");
        assert_eq!(v.ran, vec![Victim::Umount, Victim::Netns, Victim::ForkExec, Victim::Stat, Victim::PodStart]);
        assert!(v.fits.iter().any(|f| f.who == "pod-start"), "{:?}", v.fits);
        let pod = v.incidents.iter().find(|s| s.key == DeadlineKey::PodStartupSlo).unwrap();
        let first = pod.incident.first.as_ref().expect("the pod-startup SLO is reached");
        assert_eq!(first.who, "pod-start");
    }

    /// The sweep's own incidents judge the pod-startup SLO by the pod-start
    /// victim alone and the node lease by none, whoever waits longer.
    #[test]
    fn the_pod_startup_slo_is_the_pod_start_victims_and_the_lease_nobodys() {
        let lin = |s: f64| crate::analysis::fit::PowerFit {
            coefficient: s / 1e6,
            exponent: 1.0,
            r2: 1.0,
            exponent_stderr: 0.0,
            band: None,
        };
        let fit = |who: &str, s| WaitFit { who: who.into(), watches: Watches::Victims, fit: lin(s), shape: None, may_wait: None };
        let proc = crate::procfs::ProcRoot::new(crate::procfs::fixture_dir("6.18"));
        let env = crate::env::Environment::capture(&proc);
        let ds = super::super::deadline_keys::deadlines(&env, &proc);
        let by = |fits: &[WaitFit], k: DeadlineKey| {
            incidents(&ds, fits).into_iter().find(|i| key(&i.deadline) == k).unwrap().first.map(|c| c.who)
        };
        let both = [fit("umount", 0.1), fit("pod-start", 0.05)];
        assert_eq!(by(&both, DeadlineKey::PodStartupSlo).as_deref(), Some("pod-start"));
        assert_eq!(by(&both, DeadlineKey::ProbeTimeout).as_deref(), Some("umount"));
        assert_eq!(by(&both, DeadlineKey::NodeLeaseGrace), None);
        assert_eq!(by(&both[..1], DeadlineKey::PodStartupSlo), None, "no pod-start fit: no figure");
    }

    /// A sweep without victims says why in its calibration.
    #[test]
    fn a_sweep_without_victims_says_why() {
        let text = include_str!("../../../docs/results/victims-6.18.json");
        let mut r: ReclaimResult = serde_json::from_str(text).unwrap();
        r.victims = None;
        r.options.victims.clear();
        assert_eq!(r.calibration().unwrap().victims_skipped.as_deref(), Some(NO_VICTIMS));
        r.options.victims_skipped = Some("not root".into());
        assert_eq!(r.calibration().unwrap().victims_skipped.as_deref(), Some("not root"));
    }
}
