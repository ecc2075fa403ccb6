//! The calibration a reclaim sweep saves for `status` and the exporter.

use super::ReclaimResult;

impl ReclaimResult {
    /// The calibration this sweep saves for `status` and the exporter: the
    /// first method's fits (with their 90% bands, so the lockup count's
    /// interval comes along), or `None` without a verdict and a time fit.
    pub fn calibration(&self) -> Option<crate::state::Calibration> {
        let v = self.verdict.as_ref()?;
        self.fits.time_power?;
        let o = &self.options;
        Some(crate::state::Calibration {
            schema: crate::state::CALIBRATION_SCHEMA,
            saved_at: crate::result::now_utc(),
            kernel: self.environment.kernel.clone(),
            preemption: self.environment.preemption.clone(),
            fs: o.fs_label(),
            kind: o.kind.name().into(),
            layout: o.layout.to_string(),
            method: o.methods.first()?.name().into(),
            largest_size: self.sizes.last().map(|s| s.target).unwrap_or(0),
            bytes_per_dentry: self.bytes_per_dentry,
            time_linear: self.fits.time_linear,
            time_power: self.fits.time_governing(),
            gap_power: self.fits.gap_governing(),
            governs: Some(v.governs),
            watchdog_thresh_seconds: self.environment.watchdog_thresh_seconds,
            validated_by_watchdog: self.watchdog.as_ref().is_some_and(|w| w.validated),
            command: self.header.command.clone(),
        })
    }
}
