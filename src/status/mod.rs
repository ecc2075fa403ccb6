//! `dentrylab status` (and every exporter scrape): this node now. Reads
//! only cheap, world-readable files through the proc root — dentry-state,
//! meminfo, watchdog_thresh, vfs_cache_pressure — never `/proc/slabinfo`
//! (root-only and costly on a node with a huge slab), and predicts from the
//! calibration how far the node is from a soft lockup. Works as any user.
//!
//! In: the proc root, the calibration file, the cgroup tree and the kernel
//! log; with `--census` (root), the kernel's dentry hash table. Out:
//! [`StatusResult`] (with the first incident, [`incident`]) and the level.
//! Imports `procfs`, `env`, `analysis`, `state`, `census` and the
//! utilities; imported by `report`, `exporter`
//! and `cli`.

pub(crate) mod advise;
pub(crate) mod calibration;
pub(crate) mod census;
pub(crate) mod cgroups;
pub(crate) mod growth;
pub(crate) mod incident;
pub(crate) mod kernel_log;
pub(crate) mod kube;
pub(crate) mod level;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::analysis::edge::{self, Level, Prediction};
use crate::env::{DEFAULT_WATCHDOG_THRESH_SECONDS, Environment};
use crate::procfs::ProcRoot;
use crate::procfs::meminfo::MemInfo;
use crate::size::human;
use calibration::{CalibrationUsed, DENTRY_OBJECT_BYTES, Source, Store};

/// A prediction further than this many times beyond the largest calibrated
/// count gets a note.
const EXTRAPOLATION_NOTE_FACTOR: f64 = 10.0;

#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub proc: ProcRoot,
    /// Where to look for the calibration, the first found wins
    /// (`--state-dir`, else `state::read_dirs()`).
    pub state_dirs: Vec<PathBuf>,
    /// `--by-cgroup`: which memory cgroups hold the dentries.
    pub by_cgroup: Option<cgroups::Options>,
    /// `--kernel-log`: past lockups in the kernel log.
    pub kernel_log: Option<kernel_log::Source>,
    /// Track growth over a sliding window of this many seconds of samples.
    pub growth_window_seconds: Option<f64>,
    /// `--census`: the top directories per filesystem (root, /proc/kcore).
    pub census: Option<census::Options>,
}

impl Options {
    /// The node's figures only.
    pub(crate) fn basic(proc: ProcRoot, state_dirs: Vec<PathBuf>) -> Options {
        Options { proc, state_dirs, by_cgroup: None, kernel_log: None, growth_window_seconds: None, census: None }
    }
}

/// Growth over the window, and the time to the lockup edge at that rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Growth {
    #[serde(flatten)]
    pub rate: growth::Rate,
    /// The calibration's lockup count (its point estimate).
    pub edge_dentries: Option<f64>,
    /// The low end of its 90% interval, when the calibration has one: the
    /// edge the time is measured to, as the level is (it errs early).
    #[serde(default)]
    pub edge_low_dentries: Option<f64>,
    /// Time until the count reaches the low end (the point when there is no
    /// interval). `None` when the count is not growing or no edge is known;
    /// 0 past it.
    pub seconds_to_lockup: Option<f64>,
    /// The first incident's count (the low end of its interval, else its
    /// point), and the time until the count reaches it at this rate (0
    /// past it); `None` when the incidents are unknown or none is
    /// predicted, or (the time) when the count is not growing.
    #[serde(default)]
    pub first_incident_dentries: Option<f64>,
    #[serde(default)]
    pub seconds_to_first_incident: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Dentries {
    pub nr_dentry: u64,
    pub nr_unused: u64,
    pub nr_negative: u64,
    pub bytes_per_dentry: u64,
    pub dentry_bytes: u64,
    pub unused_bytes: u64,
    pub negative_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct StatusResult {
    #[serde(flatten)]
    pub header: crate::result::Header,
    pub environment: Environment,
    pub proc_root: String,
    pub dentries: Dentries,
    pub memory: MemInfo,
    pub calibration: Arc<CalibrationUsed>,
    pub prediction: Prediction,
    /// Time spent reading the files and predicting.
    pub collection_seconds: f64,
    pub notes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_cgroup: Option<cgroups::ByCgroup>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_log: Option<kernel_log::KernelLog>,
    /// Growth since the first sample (`--watch`, the exporter); `None`
    /// until two samples are apart in time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth: Option<Growth>,
    /// `--census`: where the dentries are, or why that is not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub census: Option<census::NodeCensus>,
    /// The first incident: each deadline of the node, the count at which
    /// it is first missed, and the distance to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incidents: Option<incident::Incidents>,
    /// The node's level, what `--fail-on` and `--watch` follow: the worst
    /// of the soft-lockup level (`prediction.level`) and every deadline's
    /// (`incidents.rows[].level`), the soft-lockup one alone when the
    /// incidents are unknown ([`level`]).
    pub level: Level,
    /// The deadline that set it: the nearest to being missed. `None` when
    /// no deadline has a prediction (the watchdog off, incidents unknown).
    pub level_source: Option<level::LevelSource>,
}

/// Reads the node; the kernel and preemption model are captured once (they
/// do not change without a reboot, and finding the model may decompress
/// the kernel config), everything else on every call.
pub(crate) struct Collector {
    proc: ProcRoot,
    store: Store,
    environment: Environment,
    by_cgroup: Option<cgroups::Options>,
    kernel_log: Option<kernel_log::Source>,
    census: Option<census::Options>,
    window: Option<Mutex<growth::Window>>,
    t0: Instant,
}

impl Collector {
    pub(crate) fn new(opts: &Options) -> Collector {
        Collector {
            proc: opts.proc.clone(),
            store: Store::search(opts.state_dirs.clone()),
            environment: Environment::capture(&opts.proc),
            by_cgroup: opts.by_cgroup.clone(),
            kernel_log: opts.kernel_log.clone(),
            census: opts.census.clone(),
            window: opts.growth_window_seconds.map(|w| Mutex::new(growth::Window::new(w))),
            t0: Instant::now(),
        }
    }

    /// Forgets the growth samples taken so far (the exporter's check at
    /// start is not a scrape: growth then comes from scrapes alone).
    pub(crate) fn forget_growth(&self) {
        if let Some(w) = &self.window {
            let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
            *w = growth::Window::new(w.span());
        }
    }

    pub(crate) fn collect(&self) -> Result<StatusResult> {
        self.read().assemble()
    }

    /// Reads every source on its own: one that fails leaves the others
    /// read (the exporter serves what it has, node_exporter style; `status`
    /// fails on the first error, [`Reading::assemble`]).
    pub(crate) fn read(&self) -> Reading {
        let t0 = Instant::now();
        let node = self.read_node();
        let calibration = self.store.current();
        let by_cgroup = self.by_cgroup.as_ref().map(|o| match &node {
            Ok(n) => cgroups::collect(o, &self.proc, n.dentries.nr_dentry, n.memory.s_reclaimable_bytes),
            Err(_) => Err(anyhow::anyhow!("needs the dentry count and meminfo, which could not be read")),
        });
        let kernel_log = self.kernel_log.as_ref().map(kernel_log::read);
        let census = self.census.as_ref().map(|o| census::collect(o, &self.proc));
        Reading { proc: self.proc.clone(), node, calibration, by_cgroup, kernel_log, census, t0 }
    }

    /// Dentry-state, meminfo and the two sysctls, and the growth window's new sample.
    fn read_node(&self) -> Result<Node> {
        let proc = &self.proc;
        let ds = proc.dentry_state()?;
        let memory = proc.meminfo()?;
        let mut environment = self.environment.clone();
        environment.mem_total_bytes = memory.mem_total_bytes;
        environment.mem_available_bytes = memory.mem_available_bytes;
        environment.watchdog_thresh_seconds = proc.sysctl_u64("sys/kernel/watchdog_thresh").ok();
        environment.vfs_cache_pressure = proc.sysctl_u64("sys/vm/vfs_cache_pressure").ok();
        let rate = self.window.as_ref().and_then(|w| {
            let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
            w.push(growth::Sample {
                t: self.t0.elapsed().as_secs_f64(),
                nr_dentry: ds.nr_dentry,
                nr_negative: ds.nr_negative,
            });
            w.rate()
        });
        let b = DENTRY_OBJECT_BYTES;
        let dentries = Dentries {
            nr_dentry: ds.nr_dentry,
            nr_unused: ds.nr_unused,
            nr_negative: ds.nr_negative,
            bytes_per_dentry: b,
            dentry_bytes: ds.nr_dentry.saturating_mul(b),
            unused_bytes: ds.nr_unused.saturating_mul(b),
            negative_bytes: ds.nr_negative.saturating_mul(b),
        };
        Ok(Node { dentries, memory, environment, rate })
    }
}

/// The node's own figures: what needs neither a calibration nor a log.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub dentries: Dentries,
    pub memory: MemInfo,
    pub environment: Environment,
    /// Growth over the window; `None` until two samples are apart in time.
    pub rate: Option<growth::Rate>,
}

/// One reading of every source, each with its own outcome.
pub(crate) struct Reading {
    proc: ProcRoot,
    pub node: Result<Node>,
    pub calibration: Result<Arc<CalibrationUsed>>,
    pub by_cgroup: Option<Result<cgroups::ByCgroup>>,
    pub kernel_log: Option<Result<kernel_log::KernelLog>>,
    pub census: Option<census::NodeCensus>,
    t0: Instant,
}

impl Reading {
    /// The whole result, or the first source's error (what `status` does).
    pub(crate) fn assemble(self) -> Result<StatusResult> {
        let Reading { proc, node, calibration, by_cgroup, kernel_log, census, t0 } = self;
        let mut s = predict(node?, calibration?, &proc);
        s.by_cgroup = by_cgroup.transpose()?;
        s.kernel_log = kernel_log.transpose()?;
        s.census = census;
        s.collection_seconds = t0.elapsed().as_secs_f64();
        Ok(s)
    }

    /// What the node's figures and its calibration predict, without the
    /// optional sources; `None` when either could not be read.
    pub(crate) fn predicted(&self) -> Option<StatusResult> {
        let (Ok(n), Ok(c)) = (&self.node, &self.calibration) else { return None };
        let mut s = predict(n.clone(), Arc::clone(c), &self.proc);
        s.collection_seconds = self.t0.elapsed().as_secs_f64();
        Some(s)
    }
}

/// The predictions, the first incident and the level, from the node's
/// figures and the calibration.
fn predict(node: Node, cal: Arc<CalibrationUsed>, proc: &ProcRoot) -> StatusResult {
    let Node { dentries, memory, environment, rate } = node;
    let nr = dentries.nr_dentry;
    let thresh = environment.watchdog_thresh_seconds.unwrap_or(DEFAULT_WATCHDOG_THRESH_SECONDS);
    let prediction = edge::predict(&cal.model(), nr, thresh);
    let notes = notes(&environment, &cal, &prediction);
    let incidents = incident::assess(&cal, &cal.model(), nr, thresh, proc);
    let (level, level_source) = level::assess(&prediction, Some(&incidents));
    let first_incident = incidents.first_row().and_then(|r| r.dentries_low.or(r.dentries));
    let growth = rate.map(|rate| Growth {
        edge_dentries: prediction.lockup_dentries,
        edge_low_dentries: prediction.lockup_dentries_low,
        seconds_to_lockup: growth::seconds_to_edge(
            prediction.lockup_dentries_low.or(prediction.lockup_dentries),
            nr,
            rate.dentries_per_second,
        ),
        first_incident_dentries: first_incident,
        seconds_to_first_incident: growth::seconds_to_edge(first_incident, nr, rate.dentries_per_second),
        rate,
    });
    StatusResult {
        header: crate::result::Header::new("status"),
        proc_root: proc.root().display().to_string(),
        dentries,
        environment,
        memory,
        calibration: cal,
        prediction,
        collection_seconds: 0.0,
        notes,
        by_cgroup: None,
        kernel_log: None,
        growth,
        census: None,
        incidents: Some(incidents),
        level,
        level_source,
    }
}

fn notes(env: &Environment, cal: &CalibrationUsed, p: &Prediction) -> Vec<String> {
    let c = &cal.calibration;
    let mut out = Vec::new();
    match cal.source {
        Source::Builtin => out.push(
            "no calibration for this node: the prediction uses the built-in conservative default \
             (it errs early); run `sudo dentrylab reclaim --sizes auto` on this node to calibrate"
                .into(),
        ),
        Source::File => {
            if c.kernel != env.kernel {
                out.push(format!(
                    "the calibration was measured on kernel {}, this node runs {}: re-run `dentrylab reclaim` here",
                    c.kernel, env.kernel
                ));
            }
            if c.preemption != env.preemption {
                out.push(format!(
                    "the calibration was measured with {} preemption, this node has {}",
                    c.preemption, env.preemption
                ));
            }
            if c.gap_power.is_none() {
                out.push("the calibration has no longest-gap fit: the total reclaim time stands in for it".into());
            }
        }
    }
    if env.watchdog_thresh_seconds.is_none() {
        out.push(format!(
            "watchdog_thresh is not readable: assuming the kernel default of {DEFAULT_WATCHDOG_THRESH_SECONDS} s"
        ));
    } else if let Some(t) = env.watchdog_thresh_seconds.filter(|&t| t != DEFAULT_WATCHDOG_THRESH_SECONDS && t != 0) {
        out.push(format!(
            "watchdog_thresh is {t} s, not the boot-time default of {DEFAULT_WATCHDOG_THRESH_SECONDS} s (changed by \
             hand, or by a watchdog check that could not put it back): restore it with \
             sysctl -w kernel.watchdog_thresh={DEFAULT_WATCHDOG_THRESH_SECONDS}"
        ));
    }
    if env.watchdog_thresh_seconds.is_some() && p.soft_lockup_threshold_seconds.is_none() {
        out.push(
            "the soft-lockup watchdog is off (watchdog_thresh 0): a long stretch still stalls the CPU, \
             but nothing measures it against a threshold"
                .into(),
        );
    }
    if let Some(l) = p.lockup_dentries
        && c.largest_size > 0
        && l > c.largest_size as f64 * EXTRAPOLATION_NOTE_FACTOR
    {
        out.push(format!(
            "the lockup count extrapolates {:.0}× beyond the largest size calibrated ({})",
            l / c.largest_size as f64,
            human(c.largest_size)
        ));
    }
    out
}

/// Exit status of `status --fail-on`: the level reached, if it fails.
pub(crate) const EXIT_WARN: u8 = 3;
pub(crate) const EXIT_DANGER: u8 = 4;

pub(crate) fn exit_code(level: Level, fail_on: Option<Level>) -> u8 {
    match fail_on {
        Some(f) if level >= f && level != Level::Ok => match level {
            Level::Danger => EXIT_DANGER,
            Level::Warn => EXIT_WARN,
            Level::Ok => 0,
        },
        _ => 0,
    }
}

pub(crate) fn run(opts: &Options) -> Result<StatusResult> {
    Collector::new(opts).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_on_exit_codes() {
        assert_eq!(exit_code(Level::Ok, Some(Level::Warn)), 0);
        assert_eq!(exit_code(Level::Warn, Some(Level::Warn)), EXIT_WARN);
        assert_eq!(exit_code(Level::Danger, Some(Level::Warn)), EXIT_DANGER);
        assert_eq!(exit_code(Level::Warn, Some(Level::Danger)), 0);
        assert_eq!(exit_code(Level::Danger, Some(Level::Danger)), EXIT_DANGER);
        assert_eq!(exit_code(Level::Danger, None), 0);
    }

    #[test]
    fn reads_fixtures_of_both_kernel_shapes() {
        let dir = tempfile::tempdir().unwrap();
        for k in ["6.18", "5.10"] {
            let opts = Options::basic(ProcRoot::new(crate::procfs::fixture_dir(k)), vec![dir.path().into()]);
            let s = run(&opts).unwrap();
            assert!(s.dentries.nr_dentry > 0, "{k}");
            assert_eq!(s.dentries.dentry_bytes, s.dentries.nr_dentry * 192);
            assert_eq!(s.environment.watchdog_thresh_seconds, Some(10));
            assert_eq!(s.environment.vfs_cache_pressure, Some(100));
            assert_eq!(s.calibration.source, Source::Builtin);
            assert!(s.notes[0].contains("built-in conservative default"), "{:?}", s.notes);
            // The built-in default: the worst cost per dentry, the whole reclaim one stretch.
            let ratio = s.dentries.nr_dentry as f64 * calibration::BUILTIN_NS_PER_DENTRY * 1e-9 / 20.0;
            assert!((s.prediction.lockup_ratio.unwrap() - ratio).abs() < 1e-9 * ratio.max(1.0), "{k}");
            assert_eq!(s.prediction.level, Level::of(Some(ratio)), "{k}");
        }
        let s =
            run(&Options::basic(ProcRoot::new(crate::procfs::fixture_dir("6.18")), vec![dir.path().into()])).unwrap();
        assert_eq!(s.environment.kernel, "6.18.44-fc-v657");
        assert_eq!(s.environment.preemption, "none", "from the fixture's config.gz");
        assert!(!s.notes.iter().any(|n| n.contains("restore it")), "{:?}", s.notes);
    }

    /// Copies a fixture proc tree (following its symlinks) so a test can change a file.
    fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            let p = e.path();
            if std::fs::metadata(&p).unwrap().is_dir() {
                copy_tree(&p, &to.join(e.file_name()));
            } else {
                std::fs::copy(&p, to.join(e.file_name())).unwrap();
            }
        }
    }

    #[test]
    fn warns_when_watchdog_thresh_is_not_the_default() {
        let state = tempfile::tempdir().unwrap();
        let proc = tempfile::tempdir().unwrap();
        copy_tree(&crate::procfs::fixture_dir("6.18"), proc.path());
        std::fs::write(proc.path().join("sys/kernel/watchdog_thresh"), "1\n").unwrap();
        let s = run(&Options::basic(ProcRoot::new(proc.path()), vec![state.path().into()])).unwrap();
        assert_eq!(s.prediction.soft_lockup_threshold_seconds, Some(2.0));
        let note = s.notes.iter().find(|n| n.contains("not the boot-time default")).expect("a warning");
        assert!(note.contains("sysctl -w kernel.watchdog_thresh=10"), "{note}");
    }
}
