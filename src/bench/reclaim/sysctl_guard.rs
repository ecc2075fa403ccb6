//! `__sysctl-guard`: this binary re-executed as the guardian that puts a
//! sysctl (watchdog_thresh) back when dentrylab ends, however it ends; it
//! runs [`super::watchdog::guard_main`]. The command's name is
//! [`crate::sys::guardian::SYSCTL_GUARD_COMMAND`].

use anyhow::Result;

#[derive(Debug, clap::Args)]
pub(crate) struct GuardArgs {
    /// The sysctl file to restore.
    pub path: std::path::PathBuf,
    /// The value to write back.
    pub value: String,
}

impl GuardArgs {
    pub(crate) fn run(&self) -> Result<()> {
        super::watchdog::guard_main(&self.path, &self.value)
    }
}
