//! Which calibration `status` and the exporter predict with: the one
//! `reclaim` saved in the state directory, or — when there is none — a
//! built-in conservative default, always named as such.
//!
//! The exporter asks for the calibration on every scrape; the file is read
//! again only when it changed (size, mtime or inode), so a `reclaim` run on
//! the node is picked up without a restart.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::analysis::edge::Model;
use crate::analysis::fit::PowerFit;
use crate::analysis::verdict::Governs;
use crate::state::{self, CALIBRATION_FILE, CALIBRATION_SCHEMA, Calibration};

/// Built-in reclaim time: `c · N^1.1` seconds, with `c` the smallest value
/// that puts the curve on or above every umount time in SPEC.md's facts
/// (kernel 6.18, tmpfs, one directory: 3M → 2.6 s, 5M → 3.9 s, 10M →
/// 11.8 s, 25M → 28.7 s, 36M → 36.8 s; the fit's exponent there is ≈ 1.1).
/// 10M sets `c`: 11.8 / 10^7^1.1.
pub const BUILTIN_TIME_COEFFICIENT: f64 = 2.3544e-7;
pub const BUILTIN_TIME_EXPONENT: f64 = 1.1;
/// Built-in longest stretch: 433 ns per dentry, linear. That is seed 000's
/// worst umount cost per dentry on kernel 5.10, whose walk never yielded
/// (the whole reclaim is one stretch). It lies above every longest gap in
/// SPEC.md's facts on 6.18 (at most 280 ns per dentry: 10M → 2.8 s), so it
/// errs early: with the default 20 s threshold it puts the edge at ≈ 46M
/// dentries, before seed 000's own 55M.
pub const BUILTIN_STRETCH_NS_PER_DENTRY: f64 = 433.0;
/// The largest count behind those facts.
pub const BUILTIN_LARGEST_SIZE: u64 = 36_000_000;
/// One dentry slab object on x86_64 (`/sys/kernel/slab/dentry/object_size`
/// on the project's 6.18 machine; seed 000's 192 bytes on 5.10).
pub const DENTRY_OBJECT_BYTES: u64 = 192;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Saved by `dentrylab reclaim` on this node.
    File,
    /// No calibration file: the built-in conservative default.
    Builtin,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::File => "file",
            Source::Builtin => "builtin",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CalibrationUsed {
    pub source: Source,
    /// The calibration file, or where it was looked for.
    pub path: String,
    /// For people: which calibration this is.
    pub name: String,
    pub calibration: Calibration,
}

impl CalibrationUsed {
    pub fn model(&self) -> Model {
        let c = &self.calibration;
        let governs =
            c.governs.unwrap_or(if c.gap_power.is_some() { Governs::LongestStretch } else { Governs::TotalTime });
        Model { time_power: c.time_power, gap_power: c.gap_power, governs }
    }
}

/// The built-in conservative default (see the constants above).
pub fn builtin() -> Calibration {
    let fit = |coefficient, exponent| PowerFit { coefficient, exponent, r2: f64::NAN, exponent_stderr: f64::NAN, band: None };
    Calibration {
        schema: CALIBRATION_SCHEMA,
        saved_at: String::new(),
        kernel: "any".into(),
        preemption: "any".into(),
        fs: "tmpfs".into(),
        kind: "hardlink".into(),
        layout: "flat".into(),
        method: "umount".into(),
        largest_size: BUILTIN_LARGEST_SIZE,
        bytes_per_dentry: DENTRY_OBJECT_BYTES as f64,
        time_linear: None,
        time_power: Some(fit(BUILTIN_TIME_COEFFICIENT, BUILTIN_TIME_EXPONENT)),
        gap_power: Some(fit(BUILTIN_STRETCH_NS_PER_DENTRY * 1e-9, 1.0)),
        governs: Some(Governs::LongestStretch),
        watchdog_thresh_seconds: None,
        validated_by_watchdog: false,
        command: "built-in: reclaim time 2.354e-7·N^1.1 s (envelope of SPEC.md's 6.18 umount facts), \
                  longest stretch 433 ns·N (seed 000's worst, a 5.10 walk that never yields)"
            .into(),
    }
}

/// (length, mtime ns, inode) of the calibration file, or None when absent.
type Fingerprint = Option<(u64, i128, u64)>;

/// The calibration of a state directory, re-read only when the file changes.
pub struct Store {
    dir: PathBuf,
    cached: Mutex<Option<(Fingerprint, Arc<CalibrationUsed>)>>,
}

impl Store {
    pub fn new(dir: &Path) -> Store {
        Store { dir: dir.to_path_buf(), cached: Mutex::new(None) }
    }

    pub fn current(&self) -> Result<Arc<CalibrationUsed>> {
        let path = self.dir.join(CALIBRATION_FILE);
        let fp: Fingerprint = std::fs::metadata(&path)
            .ok()
            .map(|m| (m.len(), i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()), m.ino()));
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((f, c)) = cached.as_ref()
            && *f == fp
        {
            return Ok(Arc::clone(c));
        }
        // A calibration that cannot be read for lack of permission (a
        // state directory under another user's home) is no reason to fail:
        // fall back, and say why. One that reads but does not parse is.
        let loaded = match state::load(&self.dir) {
            Ok(c) => c,
            Err(e) if is_permission_denied(&e) => {
                let used = Arc::new(CalibrationUsed {
                    source: Source::Builtin,
                    path: path.display().to_string(),
                    name: format!("built-in conservative default ({e:#})"),
                    calibration: builtin(),
                });
                *cached = Some((fp, Arc::clone(&used)));
                return Ok(used);
            }
            Err(e) => return Err(e),
        };
        let used = Arc::new(match loaded {
            Some(c) => CalibrationUsed {
                source: Source::File,
                path: path.display().to_string(),
                name: format!(
                    "{} (saved {} by `{}` on kernel {}, {} preemption)",
                    path.display(),
                    c.saved_at,
                    c.command,
                    c.kernel,
                    c.preemption
                ),
                calibration: c,
            },
            None => CalibrationUsed {
                source: Source::Builtin,
                path: path.display().to_string(),
                name: format!("built-in conservative default (no calibration at {})", path.display()),
                calibration: builtin(),
            },
        });
        *cached = Some((fp, Arc::clone(&used)));
        Ok(used)
    }
}

fn is_permission_denied(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::PermissionDenied))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::edge::predict;

    #[test]
    fn builtin_is_at_or_above_every_measured_fact() {
        // SPEC.md (6.18): umount times and longest gaps.
        let umount = [(3e6, 2.6), (5e6, 3.9), (10e6, 11.8), (25e6, 28.7), (36e6, 36.8)];
        let gaps = [(3e6, 0.36), (10e6, 2.8), (10e6, 1.5), (25e6, 3.6), (36e6, 4.2)];
        // Seed 000 (5.10): umount times, where the walk is one stretch.
        let seed = [(99_600.0, 0.043), (999_917.0, 0.365), (4_999_470.0, 1.818), (9_999_922.0, 3.686)];
        let c = builtin();
        let (t, g) = (c.time_power.unwrap(), c.gap_power.unwrap());
        for (n, s) in umount {
            assert!(t.at(n) >= s * 0.999, "time at {n}: {} < {s}", t.at(n));
        }
        for (n, s) in gaps.iter().chain(&seed) {
            assert!(g.at(*n) >= *s * 0.999, "stretch at {n}: {} < {s}", g.at(*n));
        }
        // With the default threshold the edge comes before seed 000's 55M.
        let used =
            CalibrationUsed { source: Source::Builtin, path: String::new(), name: String::new(), calibration: c };
        let p = predict(&used.model(), 1_000_000, 10);
        let l = p.lockup_dentries.unwrap();
        assert!(l > 40e6 && l < 55e6, "{l}");
    }

    #[test]
    fn store_falls_back_then_reloads_when_the_file_appears() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let first = store.current().unwrap();
        assert_eq!(first.source, Source::Builtin);
        assert!(first.name.starts_with("built-in conservative default"));
        assert!(Arc::ptr_eq(&first, &store.current().unwrap()), "unchanged: not re-read");
        let mut c = builtin();
        c.kernel = "6.18.44".into();
        c.saved_at = "2026-11-22T13:00:00Z".into();
        // NaN is saved as null (a two-size sweep has no exponent error): it must load.
        c.bytes_per_dentry = f64::NAN;
        state::StateDir::open(dir.path()).unwrap().save(&c).unwrap();
        let second = store.current().unwrap();
        assert_eq!(second.source, Source::File);
        assert!(second.name.contains("kernel 6.18.44"), "{}", second.name);
        std::fs::write(dir.path().join(CALIBRATION_FILE), "{").unwrap();
        let e = store.current().unwrap_err();
        assert!(format!("{e:#}").contains("is not a calibration"), "{e:#}");
    }
}
