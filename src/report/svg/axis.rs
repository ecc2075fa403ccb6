//! Axes: data ranges, padding, tick positions and labels, value formatting
//! per unit, clipping lines to the plot area, and where labels fit.

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};

use super::*;
pub(super) use crate::render::plot::format_value;
#[cfg(test)]
use crate::render::plot::short;

/// Into the drawing space: log10 on a log axis (non-positive values drop).
pub(super) fn tr(scale: Scale, v: f64) -> Option<f64> {
    match scale {
        _ if !v.is_finite() => None,
        Scale::Linear => Some(v),
        Scale::Log if v > 0.0 => Some(v.log10()),
        Scale::Log => None,
    }
}

pub(super) fn inv(scale: Scale, t: f64) -> f64 {
    match scale {
        Scale::Linear => t,
        Scale::Log => 10f64.powf(t),
    }
}

pub(super) fn data_range(vals: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    vals.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((a, b)) => Some((a.min(v), b.max(v))),
    })
}

/// The drawn range (transformed units) around the data, with a margin; a
/// linear axis over non-negative data starts at zero.
pub(super) fn padded(scale: Scale, range: Option<(f64, f64)>, y: bool) -> (f64, f64) {
    let (mut lo, mut hi) = range.unwrap_or(match scale {
        Scale::Linear => (0.0, 1.0),
        Scale::Log => (0.0, 1.0),
    });
    if scale == Scale::Linear && lo >= 0.0 {
        lo = 0.0;
    }
    if hi - lo < 1e-12 {
        let w = match scale {
            Scale::Log => 0.5,
            Scale::Linear => hi.abs().max(1.0) * 0.1,
        };
        lo -= w;
        hi += w;
    }
    let pad = (hi - lo) * if y { 0.06 } else { 0.04 };
    let lo = if scale == Scale::Linear && lo == 0.0 { 0.0 } else { lo - pad };
    (lo, hi + pad)
}

/// Tick positions in drawing space: labelled ones with their text, and the
/// light grid lines between them.
#[derive(Clone)]
pub(super) struct Ticks {
    pub(super) bold: Vec<(f64, String)>,
    pub(super) light: Vec<f64>,
}

/// Ticks for the drawn range `lo..hi` (transformed units). A log axis
/// labels powers of ten (and 2× and 5× when there are few decades, every
/// step when less than one); a linear axis labels 1-2-5 steps.
pub(super) fn ticks(scale: Scale, unit: Unit, lo: f64, hi: f64) -> Ticks {
    let label = |v: f64| format_value(unit, v);
    if scale == Scale::Log {
        let (a, b) = (lo.floor() as i32, hi.ceil() as i32);
        let decades = hi - lo;
        let steps: &[f64] = if decades > 3.0 {
            &[1.0]
        } else if decades > 1.2 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
        };
        let mut bold = Vec::new();
        let mut light = Vec::new();
        for e in a..=b {
            for m in 1..10 {
                let v = m as f64 * 10f64.powi(e);
                if (lo..=hi).contains(&v.log10()) {
                    light.push(v.log10());
                }
            }
            for &m in steps {
                let v = m * 10f64.powi(e);
                if (lo..=hi).contains(&v.log10()) {
                    bold.push((v.log10(), label(v)));
                }
            }
        }
        // Thin out labels a long axis cannot hold.
        while bold.len() > 9 {
            bold = bold.into_iter().step_by(2).collect();
        }
        // Within a decade, round linear steps label better when they are more.
        let (dlo, dhi) = (10f64.powf(lo), 10f64.powf(hi));
        let lin: Vec<f64> = linear_ticks(dlo, dhi).into_iter().filter(|v| *v > 0.0).collect();
        // Over two decades or more, powers of ten read better than linear
        // steps bunched at the top (three decades give only three labels).
        if bold.len() >= 4 || (bold.len() >= 2 && (bold.len() >= lin.len() || decades >= 2.0)) {
            return Ticks { bold, light };
        }
        return Ticks { bold: lin.iter().map(|&v| (v.log10(), label(v))).collect(), light };
    }
    let lin = linear_ticks(lo, hi);
    Ticks { bold: lin.iter().map(|&v| (v, label(v))).collect(), light: Vec::new() }
}

/// About six round values (steps of 1, 2 or 5 × 10^k) within `lo..=hi`.
pub(super) fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let raw = (hi - lo) / 6.0;
    if raw.is_nan() || raw <= 0.0 {
        return vec![lo];
    }
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).filter(|v| *v > 0.0 || lo <= 0.0).collect()
}

/// A linear drawing axis over `lo..hi` with our own ticks and labels (the
/// values are already transformed: log10 on a log axis).
#[derive(Clone)]
pub(super) struct TickedAxis {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) ticks: Ticks,
}

impl Ranged for TickedAxis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let r = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (r * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.ticks.light.clone()
        } else {
            self.ticks.bold.iter().map(|t| t.0).collect()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for TickedAxis {
    fn format_ext(&self, v: &f64) -> String {
        nearest_label(&self.ticks.bold, *v)
    }
}

pub(super) fn nearest_label(ticks: &[(f64, String)], v: f64) -> String {
    ticks.iter().min_by(|a, b| (a.0 - v).abs().total_cmp(&(b.0 - v).abs())).map(|t| t.1.clone()).unwrap_or_default()
}

pub(super) fn inside(p: (f64, f64), ((x0, x1), (y0, y1)): ((f64, f64), (f64, f64))) -> bool {
    p.0 >= x0 && p.0 <= x1 && p.1 >= y0 && p.1 <= y1
}

/// Clips a polyline to the plot rectangle (Liang–Barsky per segment); a
/// line that leaves and re-enters comes back as several pieces.
pub(super) fn clip(pts: &[(f64, f64)], rect: ((f64, f64), (f64, f64))) -> Vec<Vec<(f64, f64)>> {
    let ((x0, x1), (y0, y1)) = rect;
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    for w in pts.windows(2) {
        let ((ax, ay), (bx, by)) = (w[0], w[1]);
        let (dx, dy) = (bx - ax, by - ay);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        let mut visible = true;
        for (p, q) in [(-dx, ax - x0), (dx, x1 - ax), (-dy, ay - y0), (dy, y1 - ay)] {
            if p == 0.0 {
                if q < 0.0 {
                    visible = false;
                }
            } else {
                let r = q / p;
                if p < 0.0 {
                    t0 = t0.max(r);
                } else {
                    t1 = t1.min(r);
                }
            }
        }
        if !visible || t0 > t1 {
            if cur.len() >= 2 {
                out.push(std::mem::take(&mut cur));
            }
            cur.clear();
            continue;
        }
        let a = (ax + t0 * dx, ay + t0 * dy);
        let b = (ax + t1 * dx, ay + t1 * dy);
        if cur.last() != Some(&a) {
            if cur.len() >= 2 {
                out.push(std::mem::take(&mut cur));
            }
            cur = vec![a];
        }
        cur.push(b);
        if t1 < 1.0 {
            out.push(std::mem::take(&mut cur));
        }
    }
    if cur.len() >= 2 {
        out.push(cur);
    }
    out
}

/// Estimated size of a text in pixels (no font is read: about 0.5 em per
/// character, as DejaVu/Liberation/Arial set digits and lower case).
pub(super) fn text_size(text: &str, size: u32) -> (i32, i32) {
    let em = f64::from(size) / 1.24;
    ((text.chars().count() as f64 * em * 0.58).ceil() as i32, (em * 1.3).ceil() as i32)
}

/// Top-left corners for labels beside anchor points, greedily: each label
/// takes the first spot that stays inside `bounds` and covers no label
/// already placed and no anchor. Labels right of 70% of the width prefer
/// the left side (rising curves leave the upper left of a point free,
/// and the lower right).
pub(super) fn place_labels(
    anchors: &[(i32, i32)],
    sizes: &[(i32, i32)],
    bounds: ((i32, i32), (i32, i32)),
) -> Vec<(i32, i32)> {
    type Rect = (i32, i32, i32, i32);
    let overlaps = |a: Rect, b: Rect| a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3;
    let ((x0, x1), (y0, y1)) = bounds;
    let mut placed: Vec<Rect> = Vec::new();
    let mut out = Vec::new();
    for (i, (&(ax, ay), &(w, h))) in anchors.iter().zip(sizes).enumerate() {
        let right = |dy: i32| (ax + 9, ay + dy);
        let left = |dy: i32| (ax - 9 - w, ay + dy);
        let below = 7;
        let above = -7 - h;
        let mut candidates = if x1 > x0 && f64::from(ax - x0) / f64::from(x1 - x0) > 0.7 {
            vec![left(above), left(below), right(above), right(below)]
        } else {
            vec![right(below), left(above), right(above), left(below)]
        };
        for k in 1..6 {
            candidates.push(right(below + k * h));
            candidates.push(left(above - k * h));
        }
        let fits = |&(x, y): &(i32, i32)| {
            let r = (x, y, x + w, y + h);
            x >= x0
                && x + w <= x1
                && y >= y0
                && y + h <= y1
                && !placed.iter().any(|p| overlaps(*p, r))
                && !anchors
                    .iter()
                    .enumerate()
                    .any(|(j, &(bx, by))| j != i && overlaps((bx - 6, by - 6, bx + 6, by + 6), r))
        };
        let spot = candidates.iter().copied().find(fits).unwrap_or(candidates[0]);
        placed.push((spot.0, spot.1, spot.0 + w, spot.1 + h));
        out.push(spot);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels() {
        assert_eq!(format_value(Unit::Seconds, 0.01), "10 ms");
        assert_eq!(format_value(Unit::Seconds, 20.0), "20 s");
        assert_eq!(format_value(Unit::Seconds, 1500.0), "1500 s");
        assert_eq!(format_value(Unit::Seconds, 0.0002), "200 µs");
        assert_eq!(format_value(Unit::Count, 1.5e9), "1.5G");
        assert_eq!(format_value(Unit::Count, 1e5), "100k");
        assert_eq!(format_value(Unit::Nanoseconds, 1250.0), "1250 ns");
        assert_eq!(format_value(Unit::Rate, 250_000.0), "250k/s");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(3.0), "3");
    }

    #[test]
    fn log_ticks_follow_the_span() {
        // Five decades: powers of ten only.
        let t = ticks(Scale::Log, Unit::Count, 5.0, 9.2);
        let labels: Vec<_> = t.bold.iter().map(|b| b.1.as_str()).collect();
        assert_eq!(labels, ["100k", "1M", "10M", "100M", "1G"]);
        // Less than a decade: intermediate steps.
        let t = ticks(Scale::Log, Unit::Nanoseconds, 3.0, 3.35);
        assert!(t.bold.len() >= 3, "{:?}", t.bold.iter().map(|b| &b.1).collect::<Vec<_>>());
        // Just over three decades (20 ms to 28 s): still powers of ten, not
        // linear steps of 5 s.
        let t = ticks(Scale::Log, Unit::Seconds, -1.7, 1.45);
        let labels: Vec<_> = t.bold.iter().map(|b| b.1.as_str()).collect();
        assert_eq!(labels, ["100 ms", "1 s", "10 s"]);
        // A sliver: linear steps inside it.
        let t = ticks(Scale::Log, Unit::Plain, 3.1, 3.12);
        assert!(t.bold.len() >= 2);
        assert!(t.bold.iter().all(|b| b.0 >= 3.1 && b.0 <= 3.12));
    }

    #[test]
    fn linear_ticks_are_round() {
        assert_eq!(linear_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(linear_ticks(0.0, 1.0).len(), 6);
    }

    #[test]
    fn clipping_keeps_the_inside() {
        let rect = ((0.0, 10.0), (0.0, 10.0));
        assert_eq!(clip(&[(-5.0, 5.0), (15.0, 5.0)], rect), vec![vec![(0.0, 5.0), (10.0, 5.0)]]);
        assert!(clip(&[(-5.0, 20.0), (15.0, 20.0)], rect).is_empty());
        let zigzag = clip(&[(1.0, 1.0), (5.0, 20.0), (9.0, 1.0)], rect);
        assert_eq!(zigzag.len(), 2);
        assert_eq!(clip(&[(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)], rect), vec![vec![(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)]]);
    }
}
