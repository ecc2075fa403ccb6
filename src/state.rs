//! The node's calibration: the fit that `reclaim` saves and `status`
//! reads, under the state directory:
//! `$DENTRYLAB_STATE_DIR`, else `/var/lib/dentrylab` as root, else
//! `$XDG_STATE_HOME/dentrylab` or `~/.local/state/dentrylab`.
//!
//! Readers ([`read_dirs`]) look further: a user's own calibration first,
//! then the node's in `/var/lib/dentrylab`, so that one `sudo dentrylab
//! reclaim` serves every user (calibrate once as root, watch as any user).

use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::analysis::fit::{LinearFit, PowerFit};
use crate::analysis::verdict::Governs;
use crate::analysis::victims::{Incident, WaitFit};
use crate::probe::victims::Victim;

pub(crate) const CALIBRATION_FILE: &str = "calibration.json";
/// 2: the victims' part ([`Calibration::victims`]); 1 files still load,
/// without it.
pub(crate) const CALIBRATION_SCHEMA: u32 = 2;
/// The first schema whose calibrations say what the victims waited for.
pub(crate) const VICTIMS_SCHEMA: u32 = 2;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Calibration {
    pub schema: u32,
    pub saved_at: String,
    pub kernel: String,
    pub preemption: String,
    pub fs: String,
    pub kind: String,
    pub layout: String,
    pub method: String,
    pub largest_size: u64,
    #[serde(deserialize_with = "crate::analysis::null_as_nan")]
    pub bytes_per_dentry: f64,
    pub time_linear: Option<LinearFit>,
    /// The reclaim time's and the longest stretch's fits the verdict used:
    /// the linear model (exponent 1, its band's `fixed_exponent` set)
    /// unless the run rejected linearity, then the power law
    /// (`analysis::linearity`).
    pub time_power: Option<PowerFit>,
    pub gap_power: Option<PowerFit>,
    pub governs: Option<Governs>,
    pub watchdog_thresh_seconds: Option<u64>,
    /// Whether a `--watchdog-check` run confirmed the prediction.
    pub validated_by_watchdog: bool,
    pub command: String,
    /// What the node's other tasks waited for during the sweep's reclaims
    /// (`--victims`; an auto sweep runs the standard ones). `None`: the
    /// sweep ran without victims, or the file predates them (schema 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub victims: Option<VictimsCalibration>,
    /// Why the sweep ran without victims (schema 2 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub victims_skipped: Option<String>,
}

/// The victims' part of a calibration: each waiting victim's longest wait
/// against the dentry count, and the node's deadlines with who missed each
/// first when it was calibrated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct VictimsCalibration {
    /// The victims that ran.
    pub ran: Vec<Victim>,
    /// The largest size they ran at.
    pub largest_size: u64,
    /// The waiting victims' fits (the governing model, with its 90% band).
    pub fits: Vec<WaitFit>,
    /// The victims that did not wait for the reclaim, and how that was judged.
    #[serde(default)]
    pub unaffected: Vec<NotWaiting>,
    /// Every deadline of the node then, and who missed it first.
    pub incidents: Vec<SavedIncident>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NotWaiting {
    pub victim: Victim,
    pub why: String,
}

/// An incident of the calibrating sweep, under a key that does not change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SavedIncident {
    pub key: DeadlineKey,
    #[serde(flatten)]
    pub incident: Incident,
}

/// The deadlines a node has, by names that do not change (the exporter's
/// `deadline` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DeadlineKey {
    ProbeTimeout,
    PodStartupSlo,
    SoftLockup,
    RcuStall,
    HungTask,
    NodeLeaseGrace,
    RuntimeRequestTimeout,
    /// One this version does not know (saved by a later one).
    #[serde(other)]
    Other,
}

impl DeadlineKey {
    pub(crate) const ALL: &'static [DeadlineKey] = &[
        DeadlineKey::ProbeTimeout,
        DeadlineKey::PodStartupSlo,
        DeadlineKey::SoftLockup,
        DeadlineKey::RcuStall,
        DeadlineKey::HungTask,
        DeadlineKey::NodeLeaseGrace,
        DeadlineKey::RuntimeRequestTimeout,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            DeadlineKey::ProbeTimeout => "probe_timeout",
            DeadlineKey::PodStartupSlo => "pod_startup_slo",
            DeadlineKey::SoftLockup => "soft_lockup",
            DeadlineKey::RcuStall => "rcu_stall",
            DeadlineKey::HungTask => "hung_task",
            DeadlineKey::NodeLeaseGrace => "node_lease_grace",
            DeadlineKey::RuntimeRequestTimeout => "runtime_request_timeout",
            DeadlineKey::Other => "other",
        }
    }

    /// Whose waits may say when this deadline is missed (for one that
    /// watches the victims): a pod start's deadline only a pod start's, and
    /// one no victim times says so rather than borrow another's figure.
    pub(crate) fn measured_by(self) -> MeasuredBy {
        match self {
            DeadlineKey::PodStartupSlo => MeasuredBy::Only(Victim::PodStart),
            DeadlineKey::NodeLeaseGrace => MeasuredBy::Nobody(NODE_LEASE_NOT_MEASURED),
            DeadlineKey::ProbeTimeout
            | DeadlineKey::SoftLockup
            | DeadlineKey::RcuStall
            | DeadlineKey::HungTask
            | DeadlineKey::RuntimeRequestTimeout
            | DeadlineKey::Other => MeasuredBy::AnyVictim,
        }
    }
}

/// Whose waits a deadline is judged by ([`DeadlineKey::measured_by`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MeasuredBy {
    /// Whichever victim reaches it first.
    AnyVictim,
    /// This victim's alone.
    Only(Victim),
    /// None: no victim does what misses it; why.
    Nobody(&'static str),
}

impl MeasuredBy {
    /// Whether the wait of `who` (a victim's name) may say when it is missed.
    pub(crate) fn admits(self, who: &str) -> bool {
        match self {
            MeasuredBy::AnyVictim => true,
            MeasuredBy::Only(v) => v.name() == who,
            MeasuredBy::Nobody(_) => false,
        }
    }
}

/// Why the node-lease grace period has no figure.
pub(crate) const NODE_LEASE_NOT_MEASURED: &str =
    "no victim renews a node lease (an HTTP call of the kubelet's), so no measured wait says when it is missed";

/// The node's state directory, where root saves.
pub(crate) const NODE_DIR: &str = "/var/lib/dentrylab";

pub(crate) fn default_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("DENTRYLAB_STATE_DIR") {
        return PathBuf::from(d);
    }
    if crate::sys::is_root() {
        return PathBuf::from(NODE_DIR);
    }
    user_dir().unwrap_or_else(|| PathBuf::from("./.local/state/dentrylab"))
}

/// `$XDG_STATE_HOME/dentrylab`, else `$HOME/.local/state/dentrylab`; none
/// without either.
fn user_dir() -> Option<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_STATE_HOME") {
        return Some(PathBuf::from(x).join("dentrylab"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state/dentrylab"))
}

/// Where readers look for a calibration, the first found wins:
/// `$DENTRYLAB_STATE_DIR` alone when set; else the user's own directory
/// (not for root) and then the node's, [`NODE_DIR`].
pub(crate) fn read_dirs() -> Vec<PathBuf> {
    if let Some(d) = std::env::var_os("DENTRYLAB_STATE_DIR") {
        return vec![PathBuf::from(d)];
    }
    let mut dirs = Vec::new();
    if !crate::sys::is_root() {
        dirs.extend(user_dir());
    }
    dirs.push(PathBuf::from(NODE_DIR));
    dirs
}

/// The state directory, opened (and created) before the sandbox is
/// entered, so writing the calibration later reaches the real filesystem.
pub(crate) struct StateDir {
    dir: File,
    pub path: PathBuf,
}

impl StateDir {
    pub(crate) fn open(path: &Path) -> Result<StateDir> {
        std::fs::create_dir_all(path).with_context(|| format!("cannot create state directory {}", path.display()))?;
        let dir = File::open(path).with_context(|| format!("cannot open state directory {}", path.display()))?;
        Ok(StateDir { dir, path: path.to_path_buf() })
    }

    /// Writes the calibration atomically (temporary file, then rename).
    pub(crate) fn save(&self, c: &Calibration) -> Result<PathBuf> {
        use nix::fcntl::{OFlag, openat, renameat};
        use nix::sys::stat::Mode;
        let tmp = format!("{CALIBRATION_FILE}.tmp");
        let fd = openat(
            self.dir.as_fd(),
            tmp.as_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o644),
        )
        .with_context(|| format!("cannot write {}/{tmp}", self.path.display()))?;
        let mut f = File::from(fd);
        let text = serde_json::to_string_pretty(c)?;
        f.write_all(text.as_bytes()).and_then(|_| f.sync_all()).context("cannot write the calibration")?;
        renameat(self.dir.as_fd(), tmp.as_str(), self.dir.as_fd(), CALIBRATION_FILE)
            .with_context(|| format!("cannot rename the calibration into {}", self.path.display()))?;
        Ok(self.path.join(CALIBRATION_FILE))
    }
}

pub(crate) fn load(dir: &Path) -> Result<Option<Calibration>> {
    let p = dir.join(CALIBRATION_FILE);
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", p.display())),
    };
    let c: Calibration = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a calibration: save a new one with `sudo dentrylab reclaim --sizes auto`, or move it away \
             to use the built-in default",
            p.display()
        )
    })?;
    Ok(Some(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A schema 1 calibration (saved before the victims' part) still loads,
    /// without it.
    #[test]
    fn an_older_calibration_loads_without_the_victims() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/calibration/6.18-quick");
        let c = load(&dir).unwrap().expect("the fixture");
        assert_eq!(c.schema, 1);
        assert!(c.victims.is_none() && c.victims_skipped.is_none());
        assert!(c.gap_power.is_some());
    }

    /// A deadline this version does not know (a later one's) still loads,
    /// as `other`.
    #[test]
    fn an_unknown_deadline_key_loads_as_other() {
        let json = r#"{"key": "a_later_deadline", "deadline": {"name": "x", "seconds": 3.0, "source": "y",
            "watches": "victims"}, "first": null}"#;
        let s: SavedIncident = serde_json::from_str(json).unwrap();
        assert_eq!(s.key, DeadlineKey::Other);
        let json = json.replace("a_later_deadline", "pod_startup_slo");
        assert_eq!(serde_json::from_str::<SavedIncident>(&json).unwrap().key, DeadlineKey::PodStartupSlo);
        for k in DeadlineKey::ALL {
            let text = serde_json::to_string(k).unwrap();
            assert_eq!(text, format!("\"{}\"", k.name()));
        }
    }
}
