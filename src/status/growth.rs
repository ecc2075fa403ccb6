//! Growth of the dentry counts over a sliding window of samples (`status
//! --watch`, and the exporter over its own scrapes), and the time to the
//! lockup edge at that rate. The rate is the least-squares slope of the
//! counts against time over the window, so one sample disturbed by another
//! job's burst moves it less than a two-point difference would.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// The exporter's window: long enough to smooth scrapes 15–60 s apart.
pub(crate) const EXPORTER_WINDOW_SECONDS: f64 = 600.0;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sample {
    /// Seconds on a monotonic clock.
    pub t: f64,
    pub nr_dentry: u64,
    pub nr_negative: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Rate {
    pub dentries_per_second: f64,
    pub negative_per_second: f64,
    /// Time between the window's first and last sample.
    pub window_seconds: f64,
    pub samples: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct Window {
    span: f64,
    samples: VecDeque<Sample>,
}

fn slope(pts: &[(f64, f64)]) -> f64 {
    let n = pts.len() as f64;
    let (mx, my) = (pts.iter().map(|p| p.0).sum::<f64>() / n, pts.iter().map(|p| p.1).sum::<f64>() / n);
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx > 0.0 { sxy / sxx } else { 0.0 }
}

impl Window {
    pub(crate) fn new(span_seconds: f64) -> Window {
        Window { span: span_seconds, samples: VecDeque::new() }
    }

    pub(crate) fn span(&self) -> f64 {
        self.span
    }

    /// Adds a sample and forgets those older than the window.
    pub(crate) fn push(&mut self, s: Sample) {
        if self.samples.back().is_some_and(|b| s.t < b.t) {
            self.samples.clear();
        }
        self.samples.push_back(s);
        while self.samples.front().is_some_and(|f| s.t - f.t > self.span) {
            self.samples.pop_front();
        }
    }

    /// The rate over the window, once it holds two samples apart in time.
    pub(crate) fn rate(&self) -> Option<Rate> {
        let (f, l) = (self.samples.front()?, self.samples.back()?);
        if self.samples.len() < 2 || l.t <= f.t {
            return None;
        }
        let total: Vec<(f64, f64)> = self.samples.iter().map(|s| (s.t - f.t, s.nr_dentry as f64)).collect();
        let neg: Vec<(f64, f64)> = self.samples.iter().map(|s| (s.t - f.t, s.nr_negative as f64)).collect();
        Some(Rate {
            dentries_per_second: slope(&total),
            negative_per_second: slope(&neg),
            window_seconds: l.t - f.t,
            samples: self.samples.len(),
        })
    }
}

/// Seconds until `now` reaches `edge` at `per_second`: `None` when the count
/// is not growing (or no edge is known), 0 when it is already past.
pub(crate) fn seconds_to_edge(edge: Option<f64>, now: u64, per_second: f64) -> Option<f64> {
    let edge = edge?;
    if now as f64 >= edge {
        return Some(0.0);
    }
    (per_second > 0.0).then(|| (edge - now as f64) / per_second)
}

/// `9.4 days`, `3.2 h`, `12 min`, `40 s`.
pub(crate) fn human_duration(s: f64) -> String {
    if s >= 2.0 * 86400.0 {
        format!("{:.1} days", s / 86400.0)
    } else if s >= 2.0 * 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else if s >= 120.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{s:.0} s")
    }
}

/// `+3.1k`, `-250`, `+1.2M` per second.
pub(crate) fn signed_rate(v: f64) -> String {
    let sign = if v < 0.0 { "-" } else { "+" };
    let a = v.abs();
    if a >= 1e6 {
        format!("{sign}{:.1}M", a / 1e6)
    } else if a >= 1e3 {
        format!("{sign}{:.1}k", a / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{sign}{a:.0}")
    } else {
        // A slow growth keeps its digits: "+0" beside "94.6 days away"
        // reads as a contradiction.
        format!("{sign}{a:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: f64, n: u64, neg: u64) -> Sample {
        Sample { t, nr_dentry: n, nr_negative: neg }
    }

    #[test]
    fn slope_over_the_window_and_forgetting() {
        let mut w = Window::new(10.0);
        assert_eq!(w.rate(), None);
        w.push(s(0.0, 1000, 0));
        assert_eq!(w.rate(), None);
        for i in 1..=20 {
            w.push(s(i as f64, 1000 + 3100 * i, 100 * i));
        }
        let r = w.rate().unwrap();
        assert!((r.dentries_per_second - 3100.0).abs() < 1e-6, "{r:?}");
        assert!((r.negative_per_second - 100.0).abs() < 1e-6, "{r:?}");
        assert_eq!(r.samples, 11, "only the last 10 s");
        assert_eq!(r.window_seconds, 10.0);
        // A clock going backwards starts over.
        w.push(s(5.0, 0, 0));
        assert_eq!(w.rate(), None);
    }

    #[test]
    fn time_to_the_edge() {
        // An example: +3.1k/s, 2.5G to go → 9.3 days.
        let t = seconds_to_edge(Some(2.5e9 + 1e6), 1_000_000, 3100.0).unwrap();
        assert_eq!(human_duration(t), "9.3 days");
        assert_eq!(seconds_to_edge(Some(100.0), 200, 5.0), Some(0.0));
        assert_eq!(seconds_to_edge(Some(100.0), 50, 0.0), None);
        assert_eq!(seconds_to_edge(Some(100.0), 50, -3.0), None);
        assert_eq!(seconds_to_edge(None, 50, 3.0), None);
        assert_eq!(signed_rate(3100.0), "+3.1k");
        assert_eq!(signed_rate(-250.0), "-250");
        assert_eq!(signed_rate(0.334), "+0.33");
        assert_eq!(signed_rate(0.0), "+0");
        assert_eq!(human_duration(90.0), "90 s");
    }
}
