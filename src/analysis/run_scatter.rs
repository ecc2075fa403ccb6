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

/// σ of ln value between runs of one size, and its degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RunScatter {
    pub sd: f64,
    pub dof: u32,
}

/// The longest gap's scatter between runs (kernel 6.18, the project's idle
/// VM; `docs/results/run-scatter-6.18.md`, a unit test checks the numbers).
pub(crate) const GAP: RunScatter = RunScatter { sd: 0.0223, dof: 9 };
/// The unobserved reclaim time's (same runs, same file).
pub(crate) const TIME: RunScatter = RunScatter { sd: 0.0295, dof: 9 };

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
