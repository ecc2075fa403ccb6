//! `--fs overlay` (for `reclaim` and `create`): what each filesystem of an
//! overlay stack keeps, counted by unmounting the layers in turn. Also the
//! options the two share ([`WorkloadArgs`]: what to create and where).
//!
//! Once the overlay is gone (its umount, or the death of the namespace it
//! was mounted in), the upper filesystem and then the lower one are
//! unmounted, each with the gap probe on the unmounting CPU, and
//! dentry-state is read around each umount. Only this run uses those
//! filesystems, so what an umount frees is what that layer still held;
//! the counters are machine-wide, though, so quiet windows either side of
//! each umount measure how fast they move without us: that drift is taken
//! out, and a count whose correction is uncertain by more than
//! [`DRIFT_SHARE`] of it is flagged as disturbed.

mod args;
pub(crate) mod grid;

pub(crate) use args::WorkloadArgs;

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::probe::gap::GapProbe;
use crate::procfs::ProcRoot;
use crate::procfs::dentry_state::DentryState;
use crate::sandbox::overlay::{Stack, StackMounts};
use crate::sandbox::{FsType, Mount, Sandbox};
use crate::sys;
use crate::workload::CreateSpec;

/// The windows read before and after each layer's umount to measure how
/// the counters move without us.
const QUIET: Duration = Duration::from_millis(100);
/// How long the probe runs either side of a layer's umount.
const PROBE_MARGIN: Duration = Duration::from_millis(20);
/// Dentries are freed to the slab after an RCU grace period.
const SETTLE: Duration = Duration::from_millis(60);
/// A layer's count is flagged as disturbed when the uncertainty of its
/// drift correction is more than this share of it (and more than
/// [`DRIFT_FLOOR`] dentries).
pub(crate) const DRIFT_SHARE: f64 = 0.02;
pub(crate) const DRIFT_FLOOR: f64 = 64.0;

/// One layer of the stack torn down.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct LayerUmount {
    /// `overlay`, `upper` or `lower`.
    pub layer: String,
    /// Its filesystem type.
    pub fs: String,
    /// nr_dentry and nr_negative lost over its umount: for `overlay`, what
    /// the reclaim freed; for `upper` and `lower`, what stayed in that
    /// filesystem after the overlay was gone.
    pub dentries: i64,
    pub negative: i64,
    pub umount_seconds: f64,
    /// Longest gap of the probe on the unmounting CPU (None: not probed).
    pub max_gap_seconds: Option<f64>,
    /// How far other processes moved the counters over the umount's
    /// window, from the quiet windows around it; `dentries` and `negative`
    /// are corrected for it (None: not measured).
    pub drift: Option<f64>,
    /// What that correction cannot know: half the difference between the
    /// drift rates before and after, over the umount's window.
    #[serde(default)]
    pub uncertainty: Option<f64>,
    /// The uncertainty is more than [`DRIFT_SHARE`] of the count.
    pub disturbed: bool,
}

/// The layers of one stack, top down.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct StackTeardown {
    pub stack: Stack,
    /// The CPU the umounts ran on, and the probe with them.
    pub cpu: usize,
    pub layers: Vec<LayerUmount>,
}

impl StackTeardown {
    pub(crate) fn layer(&self, name: &str) -> Option<&LayerUmount> {
        self.layers.iter().find(|l| l.layer == name)
    }

    /// The layer whose umount held the CPU longest, among the probed ones.
    pub(crate) fn longest(&self) -> Option<&LayerUmount> {
        self.layers
            .iter()
            .filter(|l| l.max_gap_seconds.is_some())
            .max_by(|a, b| a.max_gap_seconds.partial_cmp(&b.max_gap_seconds).unwrap_or(std::cmp::Ordering::Equal))
    }
}

/// dentry-state read around one teardown: a quiet window before it, and
/// (after the RCU-deferred frees landed) one after it.
pub(crate) struct Window {
    a: DentryState,
    b: DentryState,
    at_b: Instant,
}

/// What one teardown freed, by both counters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counted {
    pub total: Witnessed,
    pub negative: Witnessed,
}

impl Counted {
    pub(crate) fn uncertainty(&self) -> f64 {
        self.total.uncertainty.max(self.negative.uncertainty)
    }
    pub(crate) fn drift(&self) -> f64 {
        self.total.others.abs().max(self.negative.others.abs())
    }
}

impl Window {
    pub(crate) fn open(proc: &ProcRoot) -> Result<Window> {
        let a = proc.dentry_state()?;
        std::thread::sleep(QUIET);
        let b = proc.dentry_state()?;
        Ok(Window { a, b, at_b: Instant::now() })
    }

    pub(crate) fn close(self, proc: &ProcRoot) -> Result<Counted> {
        std::thread::sleep(SETTLE);
        let c = proc.dentry_state()?;
        let scale = self.at_b.elapsed().as_secs_f64() / QUIET.as_secs_f64();
        std::thread::sleep(QUIET);
        let d = proc.dentry_state()?;
        let (a, b) = (self.a, self.b);
        Ok(Counted {
            total: Witnessed::of(a.nr_dentry, b.nr_dentry, c.nr_dentry, d.nr_dentry, scale),
            negative: Witnessed::of(a.nr_negative, b.nr_negative, c.nr_negative, d.nr_negative, scale),
        })
    }
}

/// A row of the table from what a teardown freed.
pub(crate) fn counted_row(
    layer: &str,
    fs: &str,
    counted: &Counted,
    seconds: f64,
    max_gap_seconds: Option<f64>,
) -> LayerUmount {
    LayerUmount {
        layer: layer.into(),
        fs: fs.into(),
        dentries: counted.total.freed,
        negative: counted.negative.freed,
        umount_seconds: seconds,
        max_gap_seconds,
        drift: Some(counted.drift()),
        uncertainty: Some(counted.uncertainty()),
        disturbed: is_disturbed(counted.uncertainty(), counted.total.freed),
    }
}

/// Unmounts one layer with the probe on `cpu`, counting around it.
pub(crate) fn umount_counted(
    layer: &str,
    fs: &str,
    mount: &mut Mount,
    proc: &ProcRoot,
    cpu: usize,
) -> Result<LayerUmount> {
    let window = Window::open(proc)?;
    let all = sys::allowed_cpus()?;
    sys::pin_current_thread(cpu)?;
    let probe = GapProbe::start(cpu, crate::probe::gap::DEFAULT_INTERVAL);
    let took = probe.and_then(|probe| {
        std::thread::sleep(PROBE_MARGIN);
        let took = mount.umount();
        std::thread::sleep(PROBE_MARGIN);
        let gaps = probe.finish();
        Ok((took?, gaps?))
    });
    sys::unpin_current_thread(&all)?;
    let (took, gaps) = took.with_context(|| format!("unmounting the overlay's {layer} filesystem"))?;
    let counted = window.close(proc)?;
    Ok(counted_row(layer, fs, &counted, took.as_secs_f64(), Some(gaps.max_gap_seconds)))
}

/// One counter read around an umount: `a`→`b` a quiet window before it,
/// `c`→`d` one after; the umount's window is `scale` quiet windows long.
/// Other processes' steady growth (or shrinking) is taken out at the mean
/// of the two windows' rates; how much those rates differ bounds what the
/// correction cannot know.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Witnessed {
    /// What the umount freed, corrected for the others' drift.
    pub freed: i64,
    /// How far the others moved the counter over the umount's window.
    pub others: f64,
    /// Half the difference of the two rates, over the umount's window.
    pub uncertainty: f64,
}

impl Witnessed {
    pub(crate) fn of(a: u64, b: u64, c: u64, d: u64, scale: f64) -> Witnessed {
        let before = b as f64 - a as f64;
        let after = d as f64 - c as f64;
        let others = (before + after) / 2.0 * scale;
        let raw = b as f64 - c as f64;
        Witnessed { freed: (raw + others).round() as i64, others, uncertainty: (before - after).abs() / 2.0 * scale }
    }
}

pub(crate) fn is_disturbed(uncertainty: f64, count: i64) -> bool {
    uncertainty > DRIFT_FLOOR && uncertainty > DRIFT_SHARE * count.unsigned_abs() as f64
}

/// Mounts the lower and upper filesystems of `stack` for `spec` and puts
/// the workload's directories into the image, as a container writes into
/// directories its image has (`/tmp`, a datadir): lookups under them then
/// reach the lower layer. A directory the container made itself would be
/// upper-only, and the lower would never be asked.
pub(crate) fn mount_stack(sandbox: &mut Sandbox, stack: Stack, spec: &CreateSpec) -> Result<StackMounts> {
    let mounts = sandbox.mount_stack(stack, &spec.capacity())?;
    for d in 0..spec.layout.dirs() {
        let p = mounts.layers.lower.join(crate::workload::dir_name(d));
        std::fs::create_dir(&p).with_context(|| format!("cannot create the image directory {}", p.display()))?;
    }
    Ok(mounts)
}

/// After the overlay is gone: unmounts the upper filesystem, then the
/// lower one, each counted and probed on `cpu`.
pub(crate) fn unmount_in_turn(mut s: StackMounts, proc: &ProcRoot, cpu: usize) -> Result<Vec<LayerUmount>> {
    let upper = umount_counted("upper", &s.stack.upper.to_string(), &mut s.upper, proc, cpu)?;
    let lower = umount_counted("lower", &s.stack.lower.to_string(), &mut s.lower, proc, cpu)?;
    Ok(vec![upper, lower])
}

/// The default upper filesystem: the lower's type, as the overlayfs
/// snapshotter keeps the snapshots beside the image.
pub(crate) fn stack(lower: Option<FsType>, upper: Option<FsType>) -> Stack {
    let lower = lower.unwrap_or(FsType::Ext4);
    Stack { lower, upper: upper.unwrap_or(lower) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_drift_is_taken_out() {
        // Others add 1000 per window; the umount's window is 3 windows
        // long and frees 50,000: the raw drop is 47,000.
        let w = Witnessed::of(100_000, 101_000, 54_000, 55_000, 3.0);
        assert_eq!(w.freed, 50_000);
        assert_eq!(w.others, 3000.0);
        assert_eq!(w.uncertainty, 0.0);
        // Quiet: nothing to correct.
        assert_eq!(Witnessed::of(10, 10, 5, 5, 7.0), Witnessed { freed: 5, others: 0.0, uncertainty: 0.0 });
        // A burst before and none after: corrected at the mean rate, with
        // half the difference as its uncertainty.
        let w = Witnessed::of(0, 400, 300, 300, 1.0);
        assert_eq!((w.freed, w.others, w.uncertainty), (300, 200.0, 200.0));
    }

    #[test]
    fn disturbed_only_past_share_and_floor() {
        assert!(!is_disturbed(50.0, 0), "under the floor");
        assert!(!is_disturbed(1000.0, 1_000_000));
        assert!(is_disturbed(30_000.0, 1_000_000));
        assert!(is_disturbed(100.0, 100));
    }

    #[test]
    fn upper_defaults_to_the_lower_type() {
        assert_eq!(stack(None, None), Stack { lower: FsType::Ext4, upper: FsType::Ext4 });
        assert_eq!(stack(Some(FsType::Xfs), None).upper, FsType::Xfs);
        assert_eq!(stack(None, Some(FsType::Tmpfs)).upper, FsType::Tmpfs);
    }

    fn row(layer: &str, gap: Option<f64>) -> LayerUmount {
        let quiet = Witnessed::of(0, 0, 0, 0, 1.0);
        let mut r = counted_row(layer, "tmpfs", &Counted { total: quiet, negative: quiet }, 0.1, gap);
        r.disturbed = false;
        r
    }

    #[test]
    fn longest_is_the_probed_layer_with_the_largest_gap() {
        let t = StackTeardown {
            stack: stack(None, Some(FsType::Tmpfs)),
            cpu: 0,
            layers: vec![row("overlay", None), row("upper", Some(0.16)), row("lower", Some(0.01))],
        };
        assert_eq!(t.longest().unwrap().layer, "upper");
        assert_eq!(t.layer("upper").unwrap().max_gap_seconds, Some(0.16));
    }
}
