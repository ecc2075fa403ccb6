//! The `calibration` collector: the calibration the predictions use
//! (re-read only when its file changed) and what it predicts at the
//! node's count: the soft-lockup edge, the level and the time to the edge.
//! Fails when the calibration file does not parse, or when the node's
//! count could not be read.

use anyhow::{Result, anyhow};

use super::{Collector, Scrape, Setup, needs, upstream};
use crate::exporter::text::{Out, sig6};
use crate::state::DeadlineKey;
use crate::status::StatusResult;

pub(crate) const NAME: &str = "calibration";

struct Calibration;

pub(super) fn new(_: &Setup) -> Option<Box<dyn Collector>> {
    Some(Box::new(Calibration))
}

impl Collector for Calibration {
    fn name(&self) -> &'static str {
        NAME
    }

    fn update(&self, scrape: &Scrape<'_>, o: &mut Out) -> Result<()> {
        needs(&scrape.reading.calibration)?;
        upstream(&scrape.reading.node, super::dentries::NAME)?;
        encode(o, scrape.predicted.ok_or_else(|| anyhow!("no prediction"))?);
        Ok(())
    }
}

/// The `deadline` label: the keys the calibration knows only, so the
/// cardinality is bounded whatever a file says.
pub(crate) fn deadline_label(k: DeadlineKey) -> Option<&'static str> {
    DeadlineKey::ALL.contains(&k).then(|| k.name())
}

/// The calibration's own families, then what it predicts.
pub(crate) fn encode(o: &mut Out, s: &StatusResult) {
    info(o, s);
    predictions(o, s);
}

/// Which calibration is used, and what it measured.
fn info(o: &mut Out, s: &StatusResult) {
    let p = &s.prediction;
    let cal = &s.calibration;
    let c = &cal.calibration;
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
        Some(c.largest_size as f64),
    );
}

/// The soft-lockup edge at the node's count, the level and the time to the edge.
fn predictions(o: &mut Out, s: &StatusResult) {
    let d = &s.dentries;
    let p = &s.prediction;
    let lockup = p.lockup_dentries.map(|l| sig6(l).round());
    // What the level uses: the low end, or the point with no interval.
    let lockup_low = p.lockup_dentries_low.map(|l| sig6(l).round()).or(lockup);
    o.gauge(
        "dentrylab_soft_lockup_threshold_seconds",
        "Soft-lockup threshold: 2 x kernel.watchdog_thresh (absent when the watchdog is off).",
        p.soft_lockup_threshold_seconds,
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
    if let Some(k) = s.level_source.as_ref().and_then(|l| deadline_label(l.key)) {
        o.family(
            "dentrylab_level_deadline",
            "1 for the deadline that set dentrylab_level, the nearest to being missed (the deadline label takes the \
             values of the first incident's series; absent when no deadline has a prediction).",
            &[(&[("deadline", k)], 1.0)],
        );
    }
    if let Some(g) = &s.growth {
        o.gauge(
            "dentrylab_seconds_to_lockup",
            "Time until nr_dentry reaches the low end of the lockup count's 90% interval (the point without one) at the current growth (0 past it; absent when not growing).",
            g.seconds_to_lockup.map(sig6),
        );
    }
}
