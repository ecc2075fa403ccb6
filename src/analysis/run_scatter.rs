//! The scatter between runs that one run cannot see.
//!
//! Within a sweep, a size's repetitions share more than the kernel: the
//! slab pages the previous repetition freed, the guest memory behind them,
//! whatever the host did in those minutes. So a size's mean can sit a few
//! percent off in one run and agree with its repetitions perfectly; the
//! repetitions (and the misfit between sizes, see [`super::interval`]) do
//! not show it, and a short sweep extrapolated 150× turns a few percent at
//! its small sizes into a slope, and the slope into a lockup count 30% off
//! (three idle quick sweeps; the third's 500k and 1M means sat 5%
//! high in all three repetitions, its exponent came out 0.93 against 0.98,
//! and its interval missed the `auto` run's point by 8%).
//!
//! The band therefore adds, for a prediction about another run or the node
//! itself, an error u per size in ln value, independent between sizes, with
//! σ measured across independent runs (`bench/run-scatter.sh`, numbers and
//! command in `docs/results/run-scatter-6.18.md`): the line through k sizes
//! then carries σ²·(1/k + (x − x̄)²/Σ(xᵢ − x̄)²) more variance at x = ln n.
//! Where the sizes' means already misfit more than their repetitions
//! explain (Birge ratio over 1), this run's share of that scatter is in the
//! band's scale, so the larger of the two is taken, not their sum. The t
//! quantile takes the Welch–Satterthwaite degrees of freedom of the sum.

use super::fit::PowerFit;
use super::interval::{Band, Interval, t90};

/// σ of ln value between runs of one size, and its degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunScatter {
    pub sd: f64,
    pub dof: u32,
}

/// The longest gap's scatter between runs (kernel 6.18, the project's idle
/// VM; `docs/results/run-scatter-6.18.md`, a unit test checks the numbers).
pub const GAP: RunScatter = RunScatter { sd: 0.0223, dof: 9 };
/// The unobserved reclaim time's (same runs, same file).
pub const TIME: RunScatter = RunScatter { sd: 0.0295, dof: 9 };

impl PowerFit {
    /// The same fit, its band widened for a prediction beyond this run.
    pub fn across_runs(self, rs: RunScatter) -> PowerFit {
        PowerFit { band: self.band.map(|b| b.with_run_scatter(rs)), ..self }
    }
}

impl Band {
    pub fn with_run_scatter(self, rs: RunScatter) -> Band {
        // Fewer than two distinct sizes: no slope to carry it through.
        if self.size_sxx <= 0.0 || self.sizes < 2 {
            return self;
        }
        Band { run_sd: rs.sd, run_dof: rs.dof, ..self }
    }

    /// [`Band::count_reaching`] with the run scatter: the band's edges are
    /// no longer one hyperbola, so their crossings with ln value are found
    /// numerically. Low end: the last place the upper edge rises through
    /// the value (the upper edge is convex in x); high end: where the lower
    /// edge does, when the slope stands clear of zero, else unbounded.
    pub(super) fn count_reaching_numeric(&self, fit: &PowerFit, value: f64) -> Option<Interval> {
        let (a, b, lv) = (fit.coefficient.ln(), fit.exponent, value.ln());
        let edge = |x: f64, sign: f64| {
            let (v, dof) = self.var_dof_at(x);
            a + b * x + sign * t90(dof as u32) * v.sqrt() - lv
        };
        let (sv, sdof) = self.slope_var_dof();
        let clear = b > 0.0 && b > t90(sdof as u32) * sv.sqrt();
        // ln n from x̄ − 40 to x̄ + 60: every count a machine can hold.
        let (from, step, steps) = (self.x_mean - 40.0, 0.02, 5000);
        let last_rise = |sign: f64| -> Option<f64> {
            let mut found = None;
            let mut prev = edge(from, sign);
            for i in 1..=steps {
                let x = from + i as f64 * step;
                let cur = edge(x, sign);
                if prev < 0.0 && cur >= 0.0 {
                    found = Some(x - step);
                }
                prev = cur;
            }
            let (mut lo, mut hi) = (found?, found? + step);
            for _ in 0..60 {
                let mid = 0.5 * (lo + hi);
                if edge(mid, sign) < 0.0 { lo = mid } else { hi = mid }
            }
            Some(0.5 * (lo + hi))
        };
        let low = last_rise(1.0)?;
        let high = if clear { last_rise(-1.0) } else { None };
        Some(Interval { low: low.exp(), high: high.map(f64::exp) })
    }
}

/// Adds the run scatter's variance `run` (with `run_dof`) to the fit's
/// `fit` (with `fit_dof`; with misfit, `birge` > 1, the fit's scale holds
/// this run's own scatter of the means, so the larger of the fit's and the
/// points' plus the run's is taken). Returns the variance and the
/// Welch–Satterthwaite degrees of freedom.
pub(super) fn combine(fit: f64, fit_dof: u32, birge: f64, run: f64, run_dof: u32) -> (f64, f64) {
    if run.is_nan() || run <= 0.0 {
        return (fit, fit_dof as f64);
    }
    let points = fit / (birge * birge).max(1.0);
    if fit >= points + run {
        return (fit, fit_dof as f64);
    }
    let total = points + run;
    let part = |v: f64, dof: u32| if dof == 0 { if v > 0.0 { f64::INFINITY } else { 0.0 } } else { v * v / dof as f64 };
    let denom = part(points, fit_dof) + part(run, run_dof);
    let dof = if denom > 0.0 { total * total / denom } else { f64::INFINITY };
    (total, dof.clamp(1.0, 1e6))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::interval::{SizeValues, weighted_power};

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    /// Sizes 500k, 1M, 2M (the quick sweep's fitted ones), three
    /// repetitions each at c·n^k·e^(δ·{1,0,−1}).
    fn quick(delta: f64) -> Vec<SizeValues> {
        [5e5f64, 1e6, 2e6]
            .iter()
            .map(|&n| {
                let y = 7.3e-8 * n.powf(0.98);
                SizeValues { count: n, values: vec![y * delta.exp(), y, y * (-delta).exp()] }
            })
            .collect()
    }

    #[test]
    fn the_constants_are_the_measured_ones() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results/run-scatter-6.18.md");
        let text = std::fs::read_to_string(&p).unwrap();
        let line = |key: &str| text.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("{key} in {p:?}")).to_string();
        assert_eq!(line("gap run scatter:"), format!("gap run scatter: sd {:.4} dof {}", GAP.sd, GAP.dof));
        assert_eq!(line("time run scatter:"), format!("time run scatter: sd {:.4} dof {}", TIME.sd, TIME.dof));
    }

    /// Exact data: the fit itself is certain, so the band is the run
    /// scatter's alone, t with its own degrees of freedom, known by hand.
    #[test]
    fn exact_data_carry_the_run_scatter_alone() {
        let f = weighted_power(&quick(0.0)).unwrap().across_runs(RunScatter { sd: 0.02, dof: 9 });
        let b = f.band.unwrap();
        let sxx = 2.0 * 2f64.ln().powi(2);
        let n = 3e8f64;
        let d = n.ln() - 1e6f64.ln();
        let half: f64 = 1.833 * 0.02 * (1.0 / 3.0 + d * d / sxx).sqrt();
        let v = b.value_at(&f, n);
        assert!(close(v.high.unwrap() / f.at(n), half.exp(), 1e-6), "{v:?} {half}");
        assert!(close(v.low / f.at(n), (-half).exp(), 1e-6));
        // The count interval is where those edges reach the value.
        let i = b.count_reaching(&f, 20.0).unwrap();
        assert!(close(b.value_at(&f, i.low).high.unwrap(), 20.0, 1e-6), "{i:?}");
        assert!(close(b.value_at(&f, i.high.unwrap()).low, 20.0, 1e-6), "{i:?}");
        let point = f.solve(20.0).unwrap();
        assert!(i.low < point && point < i.high.unwrap());
    }

    /// With the run scatter going to nothing the numeric solution is the
    /// closed form's.
    #[test]
    fn the_numeric_crossing_is_the_closed_form_without_scatter() {
        let f = weighted_power(&quick(0.05)).unwrap();
        let b = f.band.unwrap();
        let closed = b.count_reaching(&f, 20.0).unwrap();
        let tiny = b.with_run_scatter(RunScatter { sd: 1e-9, dof: 9 });
        let numeric = tiny.count_reaching(&f, 20.0).unwrap();
        assert!(close(numeric.low, closed.low, 1e-6) && close(numeric.high.unwrap(), closed.high.unwrap(), 1e-6), "{numeric:?} {closed:?}");
    }

    /// The case that showed it: a short sweep's interval widens by the scatter,
    /// far more at 300M than a sweep of six doubling sizes', and the point
    /// never moves.
    #[test]
    fn a_short_sweep_widens_more_than_a_long_one() {
        let width = |sizes: Vec<SizeValues>| {
            let f = weighted_power(&sizes).unwrap();
            let without = f.band.unwrap().count_reaching(&f, 20.0).unwrap();
            let g = f.across_runs(GAP);
            let with = g.band.unwrap().count_reaching(&g, 20.0).unwrap();
            assert_eq!(f.solve(20.0), g.solve(20.0));
            assert!(with.low < without.low && with.high.unwrap() > without.high.unwrap(), "{with:?} {without:?}");
            (with.high.unwrap() / with.low).ln()
        };
        let long: Vec<SizeValues> = (0..6)
            .map(|j| {
                let n = 5e5 * 2f64.powi(j);
                let y = 7.3e-8 * n.powf(0.98);
                SizeValues { count: n, values: vec![y * 1.01, y, y / 1.01] }
            })
            .collect();
        let (short, long) = (width(quick(0.01)), width(long));
        // In ln(count): 0.52 against 0.15 as written.
        assert!(short > 2.0 * long, "short {short} long {long}");
    }

    #[test]
    fn the_degrees_of_freedom_follow_the_larger_share() {
        // Only the fit: its own; only the run's: the run's; equal: between.
        assert_eq!(combine(1.0, 7, 1.0, 0.0, 9), (1.0, 7.0));
        let (v, d) = combine(1e-12, 7, 1.0, 1.0, 9);
        assert!(close(v, 1.0, 1e-9) && close(d, 9.0, 1e-6));
        let (v, d) = combine(1.0, 7, 1.0, 1.0, 9);
        assert!(close(v, 2.0, 1e-12) && close(d, 4.0 / (1.0 / 7.0 + 1.0 / 9.0), 1e-9));
        // Misfit already larger than points + run: the fit's band stands.
        assert_eq!(combine(9.0, 2, 3.0, 0.5, 9), (9.0, 2.0));
        // ... smaller: points + run.
        let (v, _) = combine(4.0, 2, 2.0, 5.0, 9);
        assert!(close(v, 6.0, 1e-12));
    }
}
