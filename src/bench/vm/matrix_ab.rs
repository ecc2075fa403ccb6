//! Patched ÷ unpatched: for each row of a kernel `vm --kernel-source`
//! built with patches, the row of its baseline (the same source and
//! configuration without them, same preemption model, accelerator and
//! clock, same run), and per size the ratio of the longest stretch on
//! either probed CPU (a patch may move the work to a kworker on the other
//! one), of the reclaim's time and of each victim's longest
//! wait, each with its spread: the lowest and highest ratio over every
//! pair of repetitions (patched, unpatched). Emulated times compare only
//! within one run, so a ratio is only ever taken inside one matrix.

use crate::bench::reclaim::ReclaimResult;
use crate::render::Grid;
use crate::size::human;
use crate::stats::median;

type Matrix = super::Matrix<Box<ReclaimResult>>;
type Row = super::Row<Box<ReclaimResult>>;

/// A ratio of medians and its spread over every pair of values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Ratio {
    pub median: f64,
    pub low: f64,
    pub high: f64,
}

impl Ratio {
    /// `median(patched) ÷ median(unpatched)`, and the lowest and highest
    /// `p ÷ u` over every pair; none when either side is empty or zero.
    pub(crate) fn of(patched: &[f64], unpatched: &[f64]) -> Option<Ratio> {
        let ok = |v: &[f64]| v.iter().copied().filter(|x| x.is_finite() && *x > 0.0).collect::<Vec<_>>();
        let (p, u) = (ok(patched), ok(unpatched));
        if p.is_empty() || u.is_empty() {
            return None;
        }
        let pairs: Vec<f64> = p.iter().flat_map(|a| u.iter().map(move |b| a / b)).collect();
        Some(Ratio {
            median: median(&p) / median(&u),
            low: pairs.iter().copied().fold(f64::INFINITY, f64::min),
            high: pairs.iter().copied().fold(0.0, f64::max),
        })
    }

    fn cell(&self) -> String {
        format!("{:.2}× ({:.2}–{:.2})", self.median, self.low, self.high)
    }
}

/// The baseline row of a patched row, in the same matrix.
fn baseline<'a>(m: &'a Matrix, row: &Row) -> Option<&'a Row> {
    let tag = row.build.as_ref()?;
    m.rows.iter().find(|b| {
        b.build.as_ref().is_some_and(|t| t.source == tag.source && t.patches.is_empty())
            && b.preempt == row.preempt
            && b.accel == row.accel
            && b.clock == row.clock
    })
}

/// Per size of the first method: (size, longest stretches on either CPU,
/// reclaim times) of the probed repetitions.
fn per_size(r: &ReclaimResult) -> Vec<(u64, Vec<f64>, Vec<f64>)> {
    let Some(method) = r.options.methods.first().copied() else { return Vec::new() };
    let mut sizes: Vec<u64> =
        r.sizes.iter().filter(|s| s.method == method && s.contenders == 0).map(|s| s.target).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
        .into_iter()
        .map(|t| {
            let runs: Vec<_> =
                r.runs.iter().filter(|x| x.method == method && x.contenders == 0 && x.target == t).collect();
            (
                t,
                runs.iter().map(|x| x.longest_on_either_cpu()).collect(),
                runs.iter().map(|x| x.reclaim_seconds).collect(),
            )
        })
        .collect()
}

/// Each victim's longest waits per repetition at size `t`.
fn victim_waits(r: &ReclaimResult, t: u64) -> Vec<(String, Vec<f64>)> {
    let mut out: Vec<(String, Vec<f64>)> = Vec::new();
    for v in r.victim_runs.iter().filter(|v| v.target == t) {
        for o in v.victims.iter().filter(|o| o.during.calls > 0) {
            let name = o.victim.name().to_string();
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some((_, w)) => w.push(o.during.longest_seconds),
                None => out.push((name, vec![o.during.longest_seconds])),
            }
        }
    }
    out
}

/// One line per patched row and size; `None` when the matrix has no
/// patched row with its baseline.
pub(crate) fn grid(m: &Matrix) -> Option<Grid> {
    let header = [
        "Patched kernel",
        "Preemption",
        "Size",
        "Longest stretch (either CPU)",
        "Reclaim time",
        "Victims' longest wait",
    ]
    .map(String::from)
    .to_vec();
    let dash = || "–".to_string();
    let mut rows = Vec::new();
    for row in m.rows.iter().filter(|r| r.build.as_ref().is_some_and(|t| !t.patches.is_empty())) {
        let (Some(base), Some(p)) = (baseline(m, row), row.result.as_ref()) else { continue };
        let Some(u) = base.result.as_ref() else { continue };
        let unpatched = per_size(u);
        for (t, gaps, times) in per_size(p) {
            let Some((_, ugaps, utimes)) = unpatched.iter().find(|(s, _, _)| *s == t) else { continue };
            let uw = victim_waits(u, t);
            let waits: Vec<String> = victim_waits(p, t)
                .iter()
                .filter_map(|(name, w)| {
                    let (_, b) = uw.iter().find(|(n, _)| n == name)?;
                    Ratio::of(w, b).map(|x| format!("{name} {}", x.cell()))
                })
                .collect();
            rows.push(vec![
                row.build.as_ref().map(|t| t.patches.join(" + ")).unwrap_or_default(),
                row.preempt.clone(),
                human(t),
                Ratio::of(&gaps, ugaps).map(|x| x.cell()).unwrap_or_else(dash),
                Ratio::of(&times, utimes).map(|x| x.cell()).unwrap_or_else(dash),
                if waits.is_empty() { dash() } else { waits.join(", ") },
            ]);
        }
    }
    (!rows.is_empty()).then_some(Grid { header, rows })
}

/// The note under the table.
pub(crate) const NOTE: &str = "Patched ÷ unpatched, the same source and configuration built without the patches, \
     in the same run: median ÷ median, and in parentheses the lowest and highest ratio over every pair of \
     repetitions. The stretch is each repetition's longest on either probed CPU, the reclaiming one or the \
     control, since a patch may move the work to a kworker on the other. Emulated times: only these ratios carry \
     over, not the seconds.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_is_of_medians_with_the_spread_of_every_pair() {
        let r = Ratio::of(&[1.0, 2.0, 3.0], &[4.0, 8.0]).unwrap();
        assert_eq!(r.median, 2.0 / 6.0);
        assert_eq!((r.low, r.high), (1.0 / 8.0, 3.0 / 4.0));
        assert_eq!(r.cell(), "0.33× (0.12–0.75)");
        assert_eq!(Ratio::of(&[], &[1.0]), None);
        assert_eq!(Ratio::of(&[1.0], &[0.0]), None);
    }
}
