//! How far a node is from the edge: from a calibration's fits and today's
//! dentry count, the predicted reclaim time, the predicted longest stretch
//! without a reschedule, and the distance to the soft-lockup threshold as a
//! ratio and as a count. Pure functions; `status` and the exporter call them.

use serde::{Deserialize, Serialize};

use super::fit::PowerFit;
use super::verdict::Governs;

/// Ratio (predicted longest stretch / soft-lockup threshold) from which the
/// level is `warn`. The longest stretch is noisy from run to run (the README's
/// `--watchdog-check` table: 513–675 ms between two repetitions at 5M, and
/// quick sweeps whose edges lie 1.7× apart), so at half the threshold one
/// unlucky reclaim can already trip the watchdog.
pub(crate) const WARN_RATIO: f64 = 0.5;
/// Ratio from which the level is `danger`: the prediction reaches the threshold.
pub(crate) const DANGER_RATIO: f64 = 1.0;

#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
    strum::VariantNames,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub(crate) enum Level {
    #[default]
    Ok,
    Warn,
    Danger,
}

impl Level {
    /// The levels `--fail-on` takes: every level's name (from the enum:
    /// strum) but the first, `ok`, which cannot fail.
    pub(crate) const NAMES: &'static [&'static str] = <Level as strum::VariantNames>::VARIANTS.split_at(1).1;

    pub(crate) fn name(self) -> &'static str {
        self.into()
    }

    /// The level of a ratio; `None` (no threshold, no prediction) is `Ok`.
    pub(crate) fn of(ratio: Option<f64>) -> Level {
        match ratio {
            Some(r) if r >= DANGER_RATIO => Level::Danger,
            Some(r) if r >= WARN_RATIO => Level::Warn,
            _ => Level::Ok,
        }
    }
}

/// `--fail-on` takes the two levels that can fail.
impl std::str::FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        <Level as strum::VariantArray>::VARIANTS
            .iter()
            .copied()
            .find(|l| *l != Level::Ok && l.name() == s)
            .ok_or_else(|| format!("unknown level {s:?}: use one of {}", Level::NAMES.join(", ")))
    }
}

/// What a calibration must provide.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Model {
    pub time_power: Option<PowerFit>,
    pub gap_power: Option<PowerFit>,
    pub governs: Governs,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Prediction {
    /// The count predicted for: every dentry reclaimed in one walk (the
    /// worst case, as when one filesystem holds them all).
    pub dentries: u64,
    /// 2 × watchdog_thresh; `None` when the watchdog is off (thresh 0).
    pub soft_lockup_threshold_seconds: Option<f64>,
    pub predicted_reclaim_seconds: Option<f64>,
    /// What the watchdog sees: the longest stretch without a reschedule,
    /// or the whole reclaim when the kernel does not yield.
    pub predicted_longest_stretch_seconds: Option<f64>,
    pub governs: Governs,
    /// Predicted longest stretch / threshold (1 = the watchdog fires).
    pub lockup_ratio: Option<f64>,
    /// The dentry count at which the stretch reaches the threshold.
    pub lockup_dentries: Option<f64>,
    /// Its 90% interval from the calibration's fit (`analysis::interval`);
    /// `None` when the calibration has no interval (saved before intervals,
    /// or fitted on fewer than 3 points). The high end is also `None` when
    /// unbounded.
    #[serde(default)]
    pub lockup_dentries_low: Option<f64>,
    #[serde(default)]
    pub lockup_dentries_high: Option<f64>,
    /// Whether the calibration carries an interval at all.
    #[serde(default)]
    pub interval: bool,
    /// Upper end of the predicted stretch's 90% interval, and its ratio to
    /// the threshold: the level is taken from it (the low end of the lockup
    /// count), falling back to the point when there is no interval.
    #[serde(default)]
    pub predicted_longest_stretch_high_seconds: Option<f64>,
    #[serde(default)]
    pub lockup_ratio_high: Option<f64>,
    /// `lockup_dentries_low` (else `lockup_dentries`) − `dentries`;
    /// negative past the edge.
    pub dentries_to_lockup: Option<f64>,
    pub level: Level,
}

/// Predicts for `dentries` with `watchdog_thresh_seconds` (None: unknown,
/// taken as the kernel default of 10 s by the caller; 0: watchdog off).
pub(crate) fn predict(m: &Model, dentries: u64, watchdog_thresh_seconds: u64) -> Prediction {
    let threshold = (watchdog_thresh_seconds > 0).then_some(2.0 * watchdog_thresh_seconds as f64);
    predict_against(m, dentries, threshold)
}

/// The same against any deadline of `threshold` seconds (`None`: no
/// deadline): `status` measures each deadline of the node this way, a
/// victim's longest wait being a model whose stretch is that wait.
pub(crate) fn predict_against(m: &Model, dentries: u64, threshold: Option<f64>) -> Prediction {
    let n = dentries as f64;
    let time = m.time_power.map(|p| p.at(n)).filter(|t| t.is_finite());
    // The governing curve: the gap fit when the kernel yields, else (or
    // when there is no gap fit) the total time.
    let stretch_fit = match m.governs {
        Governs::LongestStretch => m.gap_power.or(m.time_power),
        Governs::TotalTime => m.time_power,
    };
    let stretch = stretch_fit.map(|p| p.at(n)).filter(|g| g.is_finite()).map(|g| match time {
        // A stretch never outlasts the whole reclaim.
        Some(t) => g.min(t),
        None => g,
    });
    let ratio = threshold.zip(stretch).map(|(thr, g)| g / thr);
    let lockup = threshold.and_then(|thr| stretch_fit.and_then(|p| p.solve(thr)));
    let band = stretch_fit.and_then(|p| p.band.map(|b| (p, b)));
    let upper = |f: Option<PowerFit>| f.and_then(|p| p.band.and_then(|b| b.value_at(&p, n).high));
    let stretch_high = band.and_then(|(p, b)| b.value_at(&p, n).high).filter(|g| g.is_finite()).map(|g| {
        // The stretch's upper end never outlasts the whole reclaim's upper end.
        match (upper(m.time_power).or(time), m.governs) {
            (Some(t), Governs::LongestStretch) => g.min(t),
            (Some(_), Governs::TotalTime) | (None, _) => g,
        }
    });
    let ratio_high = threshold.zip(stretch_high).map(|(thr, g)| g / thr);
    let count = threshold.and_then(|thr| band.and_then(|(p, b)| b.count_reaching(&p, thr)));
    let low = count.map(|c| c.low);
    Prediction {
        dentries,
        soft_lockup_threshold_seconds: threshold,
        predicted_reclaim_seconds: time,
        predicted_longest_stretch_seconds: stretch,
        governs: m.governs,
        lockup_ratio: ratio,
        lockup_dentries: lockup,
        lockup_dentries_low: low,
        lockup_dentries_high: count.and_then(|c| c.high).filter(|&h| h <= super::verdict::MAX_PREDICTED_COUNT),
        interval: band.is_some(),
        predicted_longest_stretch_high_seconds: stretch_high,
        lockup_ratio_high: ratio_high,
        dentries_to_lockup: low.or(lockup).map(|l| l - n),
        level: Level::of(ratio_high.or(ratio)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--fail-on`'s levels come from the enum (strum), without `ok`.
    #[test]
    fn level_names_come_from_the_enum() {
        assert_eq!(Level::NAMES, ["warn", "danger"]);
        assert_eq!(Level::Ok.name(), "ok");
        assert_eq!("warn".parse::<Level>(), Ok(Level::Warn));
        assert_eq!("danger".parse::<Level>(), Ok(Level::Danger));
        assert_eq!("ok".parse::<Level>().unwrap_err(), "unknown level \"ok\": use one of warn, danger");
    }

    fn lin(ns: f64) -> PowerFit {
        PowerFit { coefficient: ns * 1e-9, exponent: 1.0, r2: 1.0, exponent_stderr: f64::NAN, band: None }
    }

    #[test]
    fn seed_000_model_puts_the_edge_near_55m() {
        // The node-lockup report: 368 ns per dentry, a walk that never yields, 20 s threshold.
        let m = Model { time_power: Some(lin(368.0)), gap_power: None, governs: Governs::TotalTime };
        let p = predict(&m, 1_526_564_907, 10);
        assert_eq!(p.soft_lockup_threshold_seconds, Some(20.0));
        let l = p.lockup_dentries.unwrap();
        assert!((l - 54.35e6).abs() < 0.1e6, "{l}");
        assert!((p.predicted_longest_stretch_seconds.unwrap() - 561.8).abs() < 0.1);
        assert!((p.lockup_ratio.unwrap() - 28.09).abs() < 0.01);
        assert!(p.dentries_to_lockup.unwrap() < 0.0);
        assert_eq!(p.level, Level::Danger);
    }

    #[test]
    fn yielding_kernel_uses_the_gap_and_caps_it_by_the_total() {
        let m = Model { time_power: Some(lin(400.0)), gap_power: Some(lin(100.0)), governs: Governs::LongestStretch };
        let p = predict(&m, 100_000_000, 10);
        assert!((p.predicted_reclaim_seconds.unwrap() - 40.0).abs() < 1e-9);
        assert!((p.predicted_longest_stretch_seconds.unwrap() - 10.0).abs() < 1e-9);
        assert!((p.lockup_ratio.unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(p.level, Level::Warn);
        assert!((p.lockup_dentries.unwrap() - 200e6).abs() < 1.0);
        assert!((p.dentries_to_lockup.unwrap() - 100e6).abs() < 1.0);
        // A gap fit above the total (small counts) is capped by it.
        let m = Model { time_power: Some(lin(100.0)), gap_power: Some(lin(400.0)), governs: Governs::LongestStretch };
        let p = predict(&m, 1000, 10);
        assert_eq!(p.predicted_longest_stretch_seconds, p.predicted_reclaim_seconds);
    }

    #[test]
    fn watchdog_off_or_no_fit_is_ok_without_ratio() {
        let m = Model { time_power: Some(lin(368.0)), gap_power: None, governs: Governs::LongestStretch };
        let p = predict(&m, 1_000_000_000, 0);
        assert_eq!(p.soft_lockup_threshold_seconds, None);
        assert_eq!(p.lockup_ratio, None);
        assert_eq!(p.level, Level::Ok);
        // No gap fit: the total time stands in for the stretch (conservative).
        let p = predict(&m, 1_000_000_000, 10);
        assert_eq!(p.predicted_longest_stretch_seconds, p.predicted_reclaim_seconds);
        let none = Model { time_power: None, gap_power: None, governs: Governs::TotalTime };
        let p = predict(&none, 10, 10);
        assert_eq!((p.lockup_ratio, p.level), (None, Level::Ok));
    }

    #[test]
    fn the_level_follows_the_low_end_of_the_interval() {
        use crate::analysis::interval::SizeValues;
        use crate::analysis::weighted::weighted_power;
        // A gap fit with scatter: 1M → 0.1 s … 8M → 0.8 s, ±20% per size.
        let sizes: Vec<SizeValues> = (0..4)
            .map(|j| {
                let n = 1e6 * 2f64.powi(j);
                SizeValues { count: n, values: vec![1e-7 * n * 1.2, 1e-7 * n / 1.2] }
            })
            .collect();
        let gap = weighted_power(&sizes).unwrap();
        let m = Model { time_power: None, gap_power: Some(gap), governs: Governs::LongestStretch };
        let point = gap.solve(20.0).unwrap();
        let p = predict(&m, (point * 0.8) as u64, 10);
        assert!(p.interval);
        let (lo, hi) = (p.lockup_dentries_low.unwrap(), p.lockup_dentries_high.unwrap());
        assert!(lo < point * 0.8 && point < hi, "{lo} {point} {hi}");
        // Below the point (ratio < 1) but past the low end: danger.
        assert!(p.lockup_ratio.unwrap() < 1.0 && p.lockup_ratio_high.unwrap() >= 1.0);
        assert_eq!(p.level, Level::Danger);
        assert!(p.dentries_to_lockup.unwrap() < 0.0);
        // A calibration without a band: no interval, the point decides.
        let plain = Model { gap_power: Some(PowerFit { band: None, ..gap }), ..m };
        let q = predict(&plain, (point * 0.8) as u64, 10);
        assert!(!q.interval && q.lockup_dentries_low.is_none());
        assert_eq!(q.level, Level::Warn);
    }

    #[test]
    fn levels() {
        assert_eq!(Level::of(Some(0.49)), Level::Ok);
        assert_eq!(Level::of(Some(0.5)), Level::Warn);
        assert_eq!(Level::of(Some(1.0)), Level::Danger);
        assert!(Level::Danger > Level::Warn && Level::Warn > Level::Ok);
        assert_eq!("danger".parse::<Level>(), Ok(Level::Danger));
        assert!("ok".parse::<Level>().unwrap_err().contains("warn, danger"));
    }
}
