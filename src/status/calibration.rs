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

/// Built-in cost per dentry (ns), for both the reclaim time and the longest
/// stretch: the worst median umount cost per dentry that
/// `bench/worst-per-dentry.sh` measured over every kind on tmpfs, ext4 and
/// xfs on this project's 6.18 machines, recorded with the commands and the
/// kernel in `docs/results/worst-per-dentry-6.18.md` (a test checks that
/// this constant is the number written there). The stretch is taken as the
/// whole reclaim, as if the walk never yielded: the default errs early on
/// every path and kind measured.
pub(crate) const BUILTIN_NS_PER_DENTRY: f64 = 2914.0;
/// Where the built-in default's numbers and commands are kept.
pub(crate) const BUILTIN_PROVENANCE: &str = "docs/results/worst-per-dentry-6.18.md";
/// The size `BUILTIN_NS_PER_DENTRY` was measured at.
pub(crate) const BUILTIN_LARGEST_SIZE: u64 = 500_000;
/// One dentry slab object on x86_64 (`/sys/kernel/slab/dentry/object_size`
/// on the project's 6.18 machine; the node-lockup report's 192 bytes on 5.10).
pub(crate) const DENTRY_OBJECT_BYTES: u64 = 192;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Source {
    /// Saved by `dentrylab reclaim` on this node.
    File,
    /// No calibration file: the built-in conservative default.
    Builtin,
}

impl Source {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Source::File => "file",
            Source::Builtin => "builtin",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CalibrationUsed {
    pub source: Source,
    /// The calibration file, or where it was looked for.
    pub path: String,
    /// For people: which calibration this is.
    pub name: String,
    pub calibration: Calibration,
}

impl CalibrationUsed {
    pub(crate) fn model(&self) -> Model {
        let c = &self.calibration;
        let governs =
            c.governs.unwrap_or(if c.gap_power.is_some() { Governs::LongestStretch } else { Governs::TotalTime });
        Model { time_power: c.time_power, gap_power: c.gap_power, governs }
    }
}

/// The built-in conservative default (see the constants above).
pub(crate) fn builtin() -> Calibration {
    let fit =
        |coefficient, exponent| PowerFit { coefficient, exponent, r2: f64::NAN, exponent_stderr: f64::NAN, band: None };
    Calibration {
        schema: CALIBRATION_SCHEMA,
        saved_at: String::new(),
        kernel: "any".into(),
        preemption: "any".into(),
        // The worst over every kind and filesystem measured.
        fs: "any".into(),
        kind: "any".into(),
        layout: "flat".into(),
        method: "umount".into(),
        largest_size: BUILTIN_LARGEST_SIZE,
        bytes_per_dentry: DENTRY_OBJECT_BYTES as f64,
        time_linear: None,
        time_power: Some(fit(BUILTIN_NS_PER_DENTRY * 1e-9, 1.0)),
        // No yielding: the whole reclaim is one stretch.
        gap_power: Some(fit(BUILTIN_NS_PER_DENTRY * 1e-9, 1.0)),
        governs: Some(Governs::TotalTime),
        watchdog_thresh_seconds: None,
        validated_by_watchdog: false,
        command: format!(
            "built-in: reclaim time and longest stretch {BUILTIN_NS_PER_DENTRY:.0} ns·N (the worst umount cost per \
             dentry measured over kinds and filesystems on 6.18, {BUILTIN_PROVENANCE}), as if the walk never yielded"
        ),
        victims: None,
        victims_skipped: None,
    }
}

/// (length, mtime ns, inode) of the calibration file, or None when absent.
type Fingerprint = Option<(u64, i128, u64)>;

/// The calibration of the first of some state directories that holds one,
/// re-read only when one of their files changes.
pub(crate) struct Store {
    dirs: Vec<PathBuf>,
    cached: Mutex<Option<(Vec<Fingerprint>, Arc<CalibrationUsed>)>>,
}

fn fingerprint(path: &Path) -> Fingerprint {
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.len(), i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()), m.ino()))
}

impl Store {
    /// The first of `dirs` with a calibration (`state::read_dirs()`, or
    /// `--state-dir` alone).
    pub(crate) fn search(dirs: Vec<PathBuf>) -> Store {
        Store { dirs, cached: Mutex::new(None) }
    }

    pub(crate) fn current(&self) -> Result<Arc<CalibrationUsed>> {
        let paths: Vec<PathBuf> = self.dirs.iter().map(|d| d.join(CALIBRATION_FILE)).collect();
        let fps: Vec<Fingerprint> = paths.iter().map(|p| fingerprint(p)).collect();
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((f, c)) = cached.as_ref()
            && *f == fps
        {
            return Ok(Arc::clone(c));
        }
        // A calibration that cannot be read for lack of permission (a
        // state directory under another user's home) is no reason to fail:
        // look further, or fall back, and say why. One that reads but does
        // not parse is.
        let mut passed = Vec::new();
        for (dir, path) in self.dirs.iter().zip(&paths) {
            match state::load(dir) {
                Ok(Some(c)) => {
                    let used = Arc::new(CalibrationUsed {
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
                    });
                    *cached = Some((fps, Arc::clone(&used)));
                    return Ok(used);
                }
                Ok(None) => passed.push(format!("no calibration at {}", path.display())),
                Err(e) if is_permission_denied(&e) => passed.push(format!("{e:#}")),
                Err(e) => return Err(e),
            }
        }
        let used = Arc::new(CalibrationUsed {
            source: Source::Builtin,
            path: paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
            name: format!("built-in conservative default ({})", passed.join("; ")),
            calibration: builtin(),
        });
        *cached = Some((fps, Arc::clone(&used)));
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

    /// The constant is the number in the results file it cites, so the two
    /// cannot drift apart.
    #[test]
    fn builtin_is_the_number_in_its_results_file() {
        let doc = include_str!("../../docs/results/worst-per-dentry-6.18.md");
        let line = doc.lines().find(|l| l.starts_with("worst ns/dentry:")).expect("a 'worst ns/dentry:' line");
        let n: f64 = line["worst ns/dentry:".len()..].split_whitespace().next().unwrap().parse().unwrap();
        assert_eq!(n, BUILTIN_NS_PER_DENTRY, "{line}");
        let size = doc.lines().find(|l| l.starts_with("size:")).expect("a 'size:' line");
        assert_eq!(crate::size::parse_count(size["size:".len()..].trim()), Ok(BUILTIN_LARGEST_SIZE), "{size}");
        assert!(doc.contains("bench/worst-per-dentry.sh") && doc.contains("kernel: 6.18"), "commands and kernel kept");
        assert!(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(BUILTIN_PROVENANCE).is_file());
    }

    #[test]
    fn builtin_never_yields_and_errs_early() {
        let c = builtin();
        let used =
            CalibrationUsed { source: Source::Builtin, path: String::new(), name: String::new(), calibration: c };
        // The stretch is the whole reclaim: no yielding.
        let p = predict(&used.model(), 10_000_000, 10);
        assert_eq!(p.predicted_longest_stretch_seconds, p.predicted_reclaim_seconds);
        assert!((p.predicted_reclaim_seconds.unwrap() - BUILTIN_NS_PER_DENTRY * 1e-2).abs() < 1e-9);
        // The edge against 20 s is 20 s / the worst cost per dentry.
        let l = p.lockup_dentries.unwrap();
        assert!((l - 20.0 / (BUILTIN_NS_PER_DENTRY * 1e-9)).abs() < 1.0, "{l}");
        // The longest gaps measured on 6.18 on tmpfs (1M 162 ms, 3M 0.36 s,
        // 10M up to 2.8 s, 25M 3.6 s, 40M up to 4.7 s) all lie under it.
        for (n, g) in [(1e6, 0.162), (3e6, 0.36), (10e6, 2.8), (25e6, 3.6), (40e6, 4.7)] {
            let s = used.calibration.gap_power.unwrap().at(n);
            assert!(s >= g, "stretch at {n}: {s} < {g}");
        }
    }

    #[test]
    fn store_falls_back_then_reloads_when_the_file_appears() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::search(vec![dir.path().into()]);
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

    /// A user's own calibration comes first; without one the node's is
    /// found, and the name says which file was read.
    #[test]
    fn the_search_takes_the_first_calibration_and_names_it() {
        let (user, node) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let store = Store::search(vec![user.path().into(), node.path().into()]);
        let none = store.current().unwrap();
        assert_eq!(none.source, Source::Builtin);
        assert!(none.name.contains(&user.path().display().to_string()), "{}", none.name);
        assert!(none.name.contains(&node.path().display().to_string()), "{}", none.name);
        let mut c = builtin();
        c.kernel = "node".into();
        state::StateDir::open(node.path()).unwrap().save(&c).unwrap();
        let found = store.current().unwrap();
        assert_eq!((found.source, found.calibration.kernel.as_str()), (Source::File, "node"));
        assert_eq!(found.path, node.path().join(CALIBRATION_FILE).display().to_string());
        c.kernel = "user".into();
        state::StateDir::open(user.path()).unwrap().save(&c).unwrap();
        let mine = store.current().unwrap();
        assert_eq!(mine.calibration.kernel, "user");
        assert!(mine.name.starts_with(&user.path().join(CALIBRATION_FILE).display().to_string()), "{}", mine.name);
    }
}
