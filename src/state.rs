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

pub const CALIBRATION_FILE: &str = "calibration.json";
pub const CALIBRATION_SCHEMA: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
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
}

/// The node's state directory, where root saves.
pub const NODE_DIR: &str = "/var/lib/dentrylab";

pub fn default_dir() -> PathBuf {
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
pub fn read_dirs() -> Vec<PathBuf> {
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
pub struct StateDir {
    dir: File,
    pub path: PathBuf,
}

impl StateDir {
    pub fn open(path: &Path) -> Result<StateDir> {
        std::fs::create_dir_all(path).with_context(|| format!("cannot create state directory {}", path.display()))?;
        let dir = File::open(path).with_context(|| format!("cannot open state directory {}", path.display()))?;
        Ok(StateDir { dir, path: path.to_path_buf() })
    }

    /// Writes the calibration atomically (temporary file, then rename).
    pub fn save(&self, c: &Calibration) -> Result<PathBuf> {
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

pub fn load(dir: &Path) -> Result<Option<Calibration>> {
    let p = dir.join(CALIBRATION_FILE);
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", p.display())),
    };
    let c: Calibration =
        serde_json::from_str(&text).with_context(|| format!("{} is not a calibration", p.display()))?;
    Ok(Some(c))
}
