//! Fits, extrapolation, thresholds and statistics: pure functions of
//! measured numbers.
//!
//! In: measured numbers (counts, times, gaps, folded stacks, rates). Out:
//! fits, 90% intervals, verdicts, edges, slowdowns, oscillation periods. No
//! I/O. Imports only the utilities below it (`stats`, `size`, `duration`,
//! `probe`'s plain types); imported by `state`, `bench`, `status`,
//! `report`, `exporter` and `cli`. Inside, one way: `run_scatter` (numbers
//! only) below `interval` (the band) below `fit` (a fit holds its band)
//! below `weighted` (the weighted fit and the band's predictions) below
//! `linearity` (the linear model, tested against the power law on every
//! run), and those below `verdict` and `edge`.

pub(crate) mod census;
pub(crate) mod edge;
pub(crate) mod fit;
pub(crate) mod folded;
pub(crate) mod guidance;
pub(crate) mod interval;
pub(crate) mod linearity;
pub(crate) mod oscillation;
pub(crate) mod run_scatter;
pub(crate) mod scaling;
pub(crate) mod slowdown;
pub(crate) mod verdict;
pub(crate) mod victims;
pub(crate) mod weighted;

/// Reads a number that may have been written as `null`: serde_json writes
/// NaN and infinities as `null` (a power-law fit over two sizes has no
/// exponent error, a sweep with no usable run no bytes per dentry), and a
/// saved result must read back as it was written. Use on f64 fields that
/// can be NaN: `#[serde(deserialize_with = "crate::analysis::null_as_nan")]`.
pub(crate) fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    use serde::Deserialize;
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::fit::PowerFit;

    #[test]
    fn nan_survives_a_json_round_trip() {
        let p = PowerFit { coefficient: 2.0, exponent: 1.0, r2: 1.0, exponent_stderr: f64::NAN, band: None };
        let text = serde_json::to_string(&p).unwrap();
        assert!(text.contains("\"exponent_stderr\":null"), "{text}");
        let back: PowerFit = serde_json::from_str(&text).unwrap();
        assert!(back.exponent_stderr.is_nan() && back.exponent == 1.0);
    }
}
