//! What one recorded `mitigate` comparison measured for one knob: the
//! baseline row against a row with another value, as ratios with the
//! spread of the repetitions. Pure: recorded results in, numbers out.

use serde::{Deserialize, Serialize};

use super::recorded::{Recorded, RecordedRow, Run};
use crate::size::bytes;

/// One comparison of a knob's values on one recorded workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Evidence {
    /// Which recorded result: workload, filesystem, kernel, reps, file.
    pub source: String,
    pub workload: String,
    pub from: String,
    pub to: String,
    /// Dentries the run's filesystem held per 1,000 operations, with the
    /// knob ÷ without (medians), and the range the repetitions allow
    /// (smallest with ÷ largest without, largest ÷ smallest).
    pub dentries_ratio: f64,
    pub dentries_ratio_low: f64,
    pub dentries_ratio_high: f64,
    /// The range lies wholly on one side of 1: an effect beyond the spread.
    pub beyond_spread: bool,
    pub repetitions: usize,
    /// Operations per second, with ÷ without (medians).
    pub throughput_ratio: Option<f64>,
    /// Longest stretch without a reschedule on the workload's CPU, without and with (largest over the reps).
    pub longest_stretch_seconds: (Option<f64>, Option<f64>),
    /// With `drop-caches-every`: the longest stretch during the drops and
    /// the longest write to drop_caches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_drop_stretch_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_drop_write_seconds: Option<f64>,
}

/// A knob's value as `mitigate` wrote it (`{"number": 1}`, `"off"`,
/// `{"every": 10.0}`, `{"bytes": 16777216}`), for people.
pub(crate) fn value_name(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Object(m) => match m.iter().next() {
            Some((k, n)) if k == "number" => n.to_string(),
            Some((k, n)) if k == "every" => format!("every {} s", n),
            Some((k, n)) if k == "bytes" => n.as_u64().map_or_else(|| n.to_string(), bytes),
            Some((k, n)) => format!("{k} {n}"),
            None => "?".into(),
        },
        other => other.to_string(),
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

fn runs(row: &RecordedRow) -> &[Run] {
    row.summary.as_ref().map_or(&[], |s| s.runs.as_slice())
}

fn value_of<'a>(row: &'a RecordedRow, knob: &str) -> Option<&'a serde_json::Value> {
    row.settings.iter().find(|(k, _)| k == knob).map(|(_, v)| v)
}

fn max_of(runs: &[Run], f: impl Fn(&Run) -> Option<f64>) -> Option<f64> {
    runs.iter().filter_map(f).reduce(f64::max)
}

/// Every comparison of `knob` in `r`: its first row (the baseline) against
/// each row with another value of the knob and no server option; rows
/// every repetition of which was OOM-killed give none.
pub(crate) fn compare(r: &Recorded, knob: &str) -> Vec<Evidence> {
    let Some(base) = r.rows.first() else { return Vec::new() };
    let Some(base_value) = value_of(base, knob) else { return Vec::new() };
    let b = runs(base);
    let mut out = Vec::new();
    for row in &r.rows[1..] {
        let Some(v) = value_of(row, knob).filter(|v| *v != base_value) else { continue };
        let w = runs(row);
        if !row.server_options.is_empty() || w.is_empty() || b.is_empty() {
            continue;
        }
        let per = |rs: &[Run]| rs.iter().map(|x| x.dentries_per_1000_ops).collect::<Vec<_>>();
        let (bd, wd) = (per(b), per(w));
        let (Some(bm), Some(wm)) = (median(bd.clone()), median(wd.clone())) else { continue };
        if bm <= 0.0 {
            continue;
        }
        let lo = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let low = if hi(&bd) > 0.0 { lo(&wd) / hi(&bd) } else { f64::NAN };
        let high = if lo(&bd) > 0.0 { hi(&wd) / lo(&bd) } else { f64::INFINITY };
        let tput = |rs: &[Run]| median(rs.iter().map(|x| x.ops_per_second).collect());
        out.push(Evidence {
            source: r.named(),
            workload: r.workload(),
            from: value_name(base_value),
            to: value_name(v),
            dentries_ratio: wm / bm,
            dentries_ratio_low: low,
            dentries_ratio_high: high,
            beyond_spread: high < 1.0 || low > 1.0,
            repetitions: b.len().min(w.len()),
            throughput_ratio: tput(w).zip(tput(b)).filter(|(_, b)| *b > 0.0).map(|(w, b)| w / b),
            longest_stretch_seconds: (
                max_of(b, |x| x.longest_stretch_seconds),
                max_of(w, |x| x.longest_stretch_seconds),
            ),
            longest_drop_stretch_seconds: max_of(w, |x| x.longest_drop_stretch_seconds),
            longest_drop_write_seconds: max_of(w, |x| x.longest_drop_write_seconds),
        });
    }
    out
}

impl Evidence {
    /// `mariadb on ext4 (...): 0 → 1, dentries per 1,000 ops ×0.29 (×0.29–×0.29, 1 rep: no spread)`.
    pub(crate) fn effect(&self) -> String {
        let spread = if self.repetitions < 2 {
            "1 rep: no spread".to_string()
        } else if self.beyond_spread {
            format!("{} reps, beyond their spread", self.repetitions)
        } else {
            format!("{} reps, within their spread", self.repetitions)
        };
        format!(
            "{}: {} → {}, dentries held per 1,000 ops ×{:.2} (×{:.2}–×{:.2}, {spread})",
            self.source, self.from, self.to, self.dentries_ratio, self.dentries_ratio_low, self.dentries_ratio_high
        )
    }

    /// `throughput ×1.06, longest stretch 17.4 → 17.3 ms`.
    pub(crate) fn cost(&self) -> String {
        let ms = |s: Option<f64>| s.map_or("–".into(), |s| format!("{:.1}", s * 1e3));
        let mut s = format!(
            "throughput ×{}, longest stretch {} → {} ms",
            self.throughput_ratio.map_or("–".into(), |t| format!("{t:.2}")),
            ms(self.longest_stretch_seconds.0),
            ms(self.longest_stretch_seconds.1)
        );
        if let Some(d) = self.longest_drop_stretch_seconds {
            s += &format!(", the drops' own longest stretch {:.1} ms", d * 1e3);
        }
        if let Some(w) = self.longest_drop_write_seconds {
            s += &format!(", the longest write to drop_caches {w:.2} s");
        }
        s
    }

    /// A measured reduction: below 1 beyond the spread, or below 1 from a
    /// single repetition (which has no spread to be within).
    pub(crate) fn reduces(&self) -> bool {
        self.dentries_ratio < 1.0 && (self.beyond_spread || self.repetitions < 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_for_people() {
        assert_eq!(value_name(&serde_json::json!({"number": 1})), "1");
        assert_eq!(value_name(&serde_json::json!("off")), "off");
        assert_eq!(value_name(&serde_json::json!({"every": 10.0})), "every 10.0 s");
        assert_eq!(value_name(&serde_json::json!({"bytes": 16777216})), bytes(16 << 20));
    }

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
    }
}
