//! The scatter between runs that one run cannot see, and the exponent's
//! uncertainty beyond the sizes a run measured.
//!
//! Within a sweep, a size's repetitions share more than the kernel: the
//! slab pages the previous repetition freed, the guest memory behind them,
//! whatever the host did in those minutes. Recorded sweeps show it as a
//! shift common to every size of a run: one run sits high at every size
//! while its repetitions agree (`docs/results/edges-quick-8M-6.18/`: edges
//! of 187M–236M on one VM, each run's own band ±4–6%). So the scatter is
//! measured as what it is: the between-run standard deviation of a run's
//! point (ln of the fitted prefactor, the same as ln of the edge), per VM
//! build, with runs − 1 degrees of freedom per build (not sizes: the
//! sizes of one run move together), by `bench/run-scatter.sh` over the
//! recorded runs (numbers and command in `docs/results/run-scatter-6.18.md`;
//! a unit test checks the constants are its lines). The largest build's
//! figure is taken, with that build's degrees of freedom: the node a
//! prediction is for may be the noisier kind.
//!
//! The interval is a prediction interval for this node's next reclaim: the
//! run's own fit error, plus the shift of this run and the shift of the
//! next ([`PREDICTED_RUNS`] × σ²), plus, for the linear model (exponent
//! fixed at 1), the exponent's own uncertainty carried to the extrapolated
//! count: σₖ²·(x − x̄)² at x = ln n, x̄ the mean ln size of the run, so the
//! band grows with extrapolation. The exponent past the sizes is measured
//! on sizes no quick sweep reaches (a deep sweep to 48M and the recorded
//! runs of 8M and more, a common exponent over them with each run's own
//! prefactor): where it stands above 1 the linear model carries that drift
//! (its exponent 1 + drift, pivoted at the run's mean size: the safe side),
//! and σₖ is its standard error; an exponent under 1 is not carried (c·N
//! is then the earlier, safe side). The t quantile takes the
//! Welch–Satterthwaite degrees of freedom of the sum.
//!
//! Results saved before this carry `run_sd` (the old per-size scatter,
//! taken independent between sizes) and read back as they were.

/// σ of a run's ln point between runs, and its degrees of freedom; and
/// the walk's exponent past the sizes: how far above 1 it was measured
/// (the drift the linear model carries), and its uncertainty σₖ with its
/// own degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RunScatter {
    pub sd: f64,
    pub dof: u32,
    pub exponent_drift: f64,
    pub exponent_sd: f64,
    pub exponent_dof: u32,
    /// Whether the exponent measured past the sizes speaks for this run
    /// (its kernel is [`EXPONENT_MEASURED_ON`]): a run that cannot test
    /// linearity on its own then takes it (`linearity::test`). False in
    /// the constants; [`RunScatter::for_kernel`] sets it.
    pub exponent_applies: bool,
}

/// The kernel (major.minor, as `uname -r` begins) the exponent past the
/// sizes was measured on: the deep sweep to 48M and the recorded runs of
/// 8M and more were all 6.18 on the project's VMs. Another kernel's walk
/// may grow otherwise (a recorded 6.12 guest ran at exponent 1.23), so
/// there an untestable run keeps the power law.
pub(crate) const EXPONENT_MEASURED_ON: &str = "6.18";

impl RunScatter {
    /// This scatter for a run of `kernel` (its release, e.g.
    /// `6.18.44-fc-v857`): the measured exponent applies when the release
    /// is of [`EXPONENT_MEASURED_ON`].
    pub(crate) fn for_kernel(self, kernel: &str) -> RunScatter {
        let mm: Vec<&str> = kernel.split(|c: char| !c.is_ascii_digit()).take(2).collect();
        RunScatter { exponent_applies: mm.join(".") == EXPONENT_MEASURED_ON, ..self }
    }
}

/// How many runs' shifts a prediction for the node's next reclaim carries:
/// the calibration's own and the next reclaim's.
pub(crate) const PREDICTED_RUNS: f64 = 2.0;

/// The longest gap's (kernel 6.18, the project's VMs;
/// `docs/results/run-scatter-6.18.md`, a unit test checks the numbers).
pub(crate) const GAP: RunScatter = RunScatter {
    sd: 0.0684,
    dof: 3,
    exponent_drift: 0.0428,
    exponent_sd: 0.0226,
    exponent_dof: 35,
    exponent_applies: false,
};
/// The unobserved reclaim time's (same runs, same file).
pub(crate) const TIME: RunScatter = RunScatter {
    sd: 0.0615,
    dof: 3,
    exponent_drift: 0.0987,
    exponent_sd: 0.0379,
    exponent_dof: 19,
    exponent_applies: false,
};
/// A victim's longest wait (the recorded `reclaim --victims` runs of one
/// build, same file): measured on the victims themselves, not borrowed
/// from the reclaiming CPU's; the exponent's is the longest gap's, the
/// walk the waiting victims wait for.
pub(crate) const VICTIM: RunScatter = RunScatter {
    sd: 0.0978,
    dof: 1,
    exponent_drift: GAP.exponent_drift,
    exponent_sd: GAP.exponent_sd,
    exponent_dof: GAP.exponent_dof,
    exponent_applies: false,
};

/// The Welch–Satterthwaite sum of variances, each with its degrees of
/// freedom (0 with a positive variance: infinite uncertainty in the
/// scale, so 1 degree of freedom is kept as the floor).
pub(super) fn welch(parts: &[(f64, f64)]) -> (f64, f64) {
    let parts: Vec<(f64, f64)> = parts.iter().copied().filter(|(v, _)| v.is_finite() && *v > 0.0).collect();
    let total: f64 = parts.iter().map(|p| p.0).sum();
    if parts.is_empty() {
        return (0.0, 1e6);
    }
    if parts.len() == 1 {
        return (total, parts[0].1.clamp(1.0, 1e6));
    }
    let denom: f64 = parts.iter().map(|(v, d)| if *d <= 0.0 { f64::INFINITY } else { v * v / d }).sum();
    let dof = if denom > 0.0 { total * total / denom } else { f64::INFINITY };
    (total, dof.clamp(1.0, 1e6))
}

/// Adds the old per-size run scatter's variance `run` (with `run_dof`) to
/// the fit's `fit` (with `fit_dof`; with misfit, `birge` > 1, the fit's
/// scale holds this run's own scatter of the means, so the larger of the
/// fit's and the points' plus the run's is taken). Returns the variance and
/// the Welch–Satterthwaite degrees of freedom. Results saved before the
/// common shift read back through it as they were.
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

    /// The measured exponent speaks for 6.18 releases only, read from the
    /// release's first two numbers.
    #[test]
    fn the_measured_exponent_applies_to_its_kernel_only() {
        for (release, applies) in [
            ("6.18.44-fc-v857", true),
            ("6.18.0", true),
            ("6.18", true),
            ("6.12.48+deb13-cloud-amd64", false),
            ("6.1.0-40-amd64", false),
            ("6.180.1", false),
            ("7.3.1-cloud-amd64", false),
            ("", false),
        ] {
            assert_eq!(GAP.for_kernel(release).exponent_applies, applies, "{release}");
        }
        const { assert!(!GAP.exponent_applies && !TIME.exponent_applies && !VICTIM.exponent_applies) };
        assert_eq!(GAP.for_kernel("6.18.1"), RunScatter { exponent_applies: true, ..GAP });
    }
}
