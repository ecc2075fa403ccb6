//! Does a throughput series oscillate, and with what period and depth?
//! (The unlink-regression report: an 8-way unlink fell into "a very regular peak/trough
//! pattern with a period of about 20s", 80k against 20k unlinks/s.)
//!
//! The series is sampled at a fixed interval. Its steady part (the first
//! and last [`EDGE_SHARE`] cut off: ramp-up and the tail where workers run
//! out of work) is detrended with a least-squares line, and its
//! autocorrelation computed. A regular oscillation shows as a peak of the
//! autocorrelation after its first dip below zero: the lag of that peak is
//! the period. The depth is the peak/trough ratio: the series is smoothed
//! over a fifth of the period, cut into whole periods, and the median over
//! periods of max/min is reported. The series oscillates when the peak is
//! at least [`MIN_AUTOCORRELATION`], at least [`MIN_CYCLES`] periods fit in
//! the steady part, and the peak/trough ratio is at least [`MIN_PEAK_TROUGH`].

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::fit;
use crate::stats::{median, percentile_sorted};

/// Share of the samples cut off at each end before analysing.
pub(crate) const EDGE_SHARE: f64 = 0.1;
/// Smallest autocorrelation peak taken as a period.
pub(crate) const MIN_AUTOCORRELATION: f64 = 0.3;
/// Fewest whole periods the steady part must hold.
pub(crate) const MIN_CYCLES: f64 = 2.0;
/// Smallest peak/trough ratio called an oscillation (20 %).
pub(crate) const MIN_PEAK_TROUGH: f64 = 1.2;
/// Fewest steady samples worth analysing.
pub(crate) const MIN_SAMPLES: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Oscillation {
    /// The three criteria above all hold.
    pub oscillates: bool,
    /// Samples analysed (the steady part).
    pub samples: usize,
    pub period_seconds: Option<f64>,
    /// Autocorrelation of the detrended series at the period.
    pub autocorrelation: Option<f64>,
    /// Median over whole periods of the smoothed max / min.
    pub peak_trough_ratio: Option<f64>,
    /// How many periods the steady part holds.
    pub cycles: Option<f64>,
    /// p90 / p10 of the steady part, whether or not it oscillates.
    pub p90_p10_ratio: Option<f64>,
}

/// The samples kept for analysis: all but the first and last [`EDGE_SHARE`].
pub(crate) fn steady_window(n: usize) -> Range<usize> {
    let cut = (n as f64 * EDGE_SHARE).floor() as usize;
    cut..n - cut
}

/// The series minus its least-squares line.
pub(crate) fn detrend(v: &[f64]) -> Vec<f64> {
    let pts: Vec<(f64, f64)> = v.iter().enumerate().map(|(i, &y)| (i as f64, y)).collect();
    match fit::linear(&pts) {
        Some(l) => pts.iter().map(|&(x, y)| y - l.at(x)).collect(),
        None => v.to_vec(),
    }
}

/// Autocorrelation at lags 0..=max_lag (biased estimator: divides by n, so
/// long lags are damped rather than noisy). All zeros for a constant series.
pub(crate) fn autocorrelation(v: &[f64], max_lag: usize) -> Vec<f64> {
    let n = v.len();
    if n == 0 {
        return Vec::new();
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    let var: f64 = v.iter().map(|x| (x - mean).powi(2)).sum();
    (0..=max_lag.min(n - 1))
        .map(|k| {
            if var <= 0.0 {
                return 0.0;
            }
            (0..n - k).map(|i| (v[i] - mean) * (v[i + k] - mean)).sum::<f64>() / var
        })
        .collect()
}

/// The lag of the first local maximum after the autocorrelation first goes
/// below zero, if it reaches [`MIN_AUTOCORRELATION`].
pub(crate) fn period_lag(acf: &[f64]) -> Option<usize> {
    let first_negative = acf.iter().position(|&r| r < 0.0)?;
    let mut best: Option<usize> = None;
    for k in first_negative.max(1)..acf.len() {
        let left = acf[k - 1];
        let right = acf.get(k + 1).copied().unwrap_or(f64::NEG_INFINITY);
        if acf[k] >= left && acf[k] >= right && acf[k] > 0.0 {
            best = Some(k);
            break;
        }
    }
    best.filter(|&k| acf[k] >= MIN_AUTOCORRELATION)
}

/// Centred moving average over `w` samples (shorter at the ends).
pub(crate) fn smooth(v: &[f64], w: usize) -> Vec<f64> {
    let half = w / 2;
    (0..v.len())
        .map(|i| {
            let a = i.saturating_sub(half);
            let b = (i + half + 1).min(v.len());
            v[a..b].iter().sum::<f64>() / (b - a) as f64
        })
        .collect()
}

/// Median over whole periods of max / min of the series smoothed over a
/// fifth of the period (a trough at zero counts as 1 per second).
pub(crate) fn peak_trough(v: &[f64], lag: usize) -> Option<f64> {
    if lag == 0 || v.len() < lag {
        return None;
    }
    let s = smooth(v, (lag / 5).max(1));
    let ratios: Vec<f64> = s
        .chunks_exact(lag)
        .map(|c| {
            let hi = c.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let lo = c.iter().copied().fold(f64::INFINITY, f64::min);
            hi / lo.max(1.0)
        })
        .collect();
    (!ratios.is_empty()).then(|| median(&ratios))
}

/// Analyses a rate series sampled every `interval_seconds`.
pub(crate) fn analyse(rate: &[f64], interval_seconds: f64) -> Oscillation {
    let w = steady_window(rate.len());
    let v: Vec<f64> = rate[w].iter().copied().filter(|x| x.is_finite()).collect();
    let mut out = Oscillation {
        oscillates: false,
        samples: v.len(),
        period_seconds: None,
        autocorrelation: None,
        peak_trough_ratio: None,
        cycles: None,
        p90_p10_ratio: None,
    };
    if v.len() < MIN_SAMPLES {
        return out;
    }
    let mut sorted = v.clone();
    sorted.sort_by(f64::total_cmp);
    out.p90_p10_ratio = Some(percentile_sorted(&sorted, 0.9) / percentile_sorted(&sorted, 0.1).max(1.0));
    let d = detrend(&v);
    let acf = autocorrelation(&d, v.len() / 2);
    let Some(lag) = period_lag(&acf) else { return out };
    let cycles = v.len() as f64 / lag as f64;
    let ratio = peak_trough(&v, lag);
    out.period_seconds = Some(lag as f64 * interval_seconds);
    out.autocorrelation = Some(acf[lag]);
    out.cycles = Some(cycles);
    out.peak_trough_ratio = ratio;
    out.oscillates = cycles >= MIN_CYCLES && ratio.is_some_and(|r| r >= MIN_PEAK_TROUGH);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift64*): noise for the tests.
    struct Noise(u64);
    impl Noise {
        fn next(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }
    }

    fn sine(n: usize, period: f64, mean: f64, amp: f64, noise: f64, trend: f64) -> Vec<f64> {
        let mut r = Noise(0x9E37_79B9_7F4A_7C15);
        (0..n)
            .map(|i| {
                let t = i as f64;
                mean + amp * (2.0 * std::f64::consts::PI * t / period).sin() + noise * r.next() + trend * t
            })
            .collect()
    }

    #[test]
    fn finds_the_period_of_a_noisy_sine() {
        // 100 ms samples, period 20 s as the unlink-regression report, 60 s of it.
        let v = sine(750, 200.0, 50_000.0, 30_000.0, 5_000.0, 0.0);
        let o = analyse(&v, 0.1);
        assert!(o.oscillates, "{o:?}");
        let p = o.period_seconds.unwrap();
        assert!((p - 20.0).abs() <= 1.0, "period {p}");
        // (50k + 30k) / (50k − 30k) = 4, a little less after smoothing.
        let r = o.peak_trough_ratio.unwrap();
        assert!((3.0..=4.5).contains(&r), "ratio {r}");
    }

    #[test]
    fn a_trend_does_not_hide_the_period() {
        let v = sine(400, 40.0, 80_000.0, 20_000.0, 2_000.0, -100.0);
        let o = analyse(&v, 0.1);
        assert!(o.oscillates, "{o:?}");
        assert!((o.period_seconds.unwrap() - 4.0).abs() <= 0.2, "{o:?}");
    }

    #[test]
    fn a_square_wave_like_seed_002() {
        // 80k for 10 s, 20k for 10 s, sampled every 0.5 s.
        let v: Vec<f64> = (0..240).map(|i| if (i / 20) % 2 == 0 { 80_000.0 } else { 20_000.0 }).collect();
        let o = analyse(&v, 0.5);
        assert!(o.oscillates, "{o:?}");
        assert!((o.period_seconds.unwrap() - 20.0).abs() <= 1.0, "{o:?}");
        assert!((o.peak_trough_ratio.unwrap() - 4.0).abs() < 0.01, "{o:?}");
    }

    #[test]
    fn white_noise_does_not_oscillate() {
        let mut r = Noise(42);
        let v: Vec<f64> = (0..600).map(|_| 100_000.0 + 10_000.0 * r.next()).collect();
        let o = analyse(&v, 0.1);
        assert!(!o.oscillates, "{o:?}");
        // A chance autocorrelation peak on noise is shallow.
        assert!(o.peak_trough_ratio.is_none_or(|r| r < MIN_PEAK_TROUGH), "{o:?}");
        let s = o.p90_p10_ratio.unwrap();
        assert!(s > 1.0 && s < 1.3, "{s}");
    }

    #[test]
    fn a_steady_decline_does_not_oscillate() {
        let v: Vec<f64> = (0..300).map(|i| 100_000.0 - 200.0 * i as f64).collect();
        assert!(!analyse(&v, 0.1).oscillates);
    }

    #[test]
    fn too_few_periods_or_samples() {
        // One and a half periods only.
        let v = sine(300, 250.0, 50_000.0, 30_000.0, 0.0, 0.0);
        let o = analyse(&v, 0.1);
        assert!(!o.oscillates, "{o:?}");
        let o = analyse(&[1.0, 2.0, 3.0], 0.1);
        assert_eq!(o.samples, 3);
        assert!(!o.oscillates && o.p90_p10_ratio.is_none());
        assert!(!analyse(&[], 0.1).oscillates);
    }

    #[test]
    fn helpers() {
        assert_eq!(steady_window(100), 10..90);
        assert_eq!(steady_window(5), 0..5);
        let d = detrend(&[1.0, 3.0, 5.0, 7.0]);
        assert!(d.iter().all(|x| x.abs() < 1e-9));
        let a = autocorrelation(&[1.0, -1.0, 1.0, -1.0], 2);
        assert!((a[0] - 1.0).abs() < 1e-12 && a[1] < 0.0 && a[2] > 0.0);
        assert!(autocorrelation(&[5.0; 4], 2).iter().all(|&x| x == 0.0));
        assert_eq!(smooth(&[0.0, 3.0, 0.0], 3), vec![1.5, 1.0, 1.5]);
        assert_eq!(peak_trough(&[10.0, 0.0, 10.0, 0.0], 2), Some(10.0));
    }
}
