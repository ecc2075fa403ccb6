//! A guardian process that cleans up after dentrylab however it ends.
//!
//! [`Guardian::spawn`] re-executes this binary (through `/proc/self/exe`)
//! with a hidden subcommand, in a process group of its own so that the
//! terminal's Ctrl-C does not reach it, with a pipe on its standard input
//! whose only write end stays in dentrylab. The guardian calls
//! [`wait_for_parent_end`]: when dentrylab exits, however it exits (SIGKILL
//! included), the kernel closes that end, the read returns end-of-file, and
//! the guardian does its clean-up (put a sysctl back, remove cgroups).

use std::ffi::OsStr;
use std::io::Read;
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result};


/// The hidden subcommand of a guardian that writes a sysctl's original value
/// back when dentrylab ends (`dentrylab __sysctl-guard PATH VALUE`).
pub const SYSCTL_GUARD_COMMAND: &str = "__sysctl-guard";

pub struct Guardian {
    child: Option<Child>,
}

impl Guardian {
    /// Starts `dentrylab <args>` as a guardian. Start it outside the
    /// sandbox: a process inside would keep the sandbox's mounts alive.
    pub fn spawn<I, S>(args: I, what: &str) -> Result<Guardian>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        // Through /proc: the executable's own path may be hidden later
        // (a binary under /tmp is under the sandbox's scratch tmpfs).
        let mut cmd = Command::new(super::SELF_EXE);
        cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::inherit());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd.spawn().with_context(|| format!("cannot start the {what} guardian"))?;
        Ok(Guardian { child: Some(child) })
    }

    /// Lets the guardian go: closes its pipe and waits until it has done
    /// its clean-up.
    pub fn finish(mut self) {
        self.release();
    }

    fn release(&mut self) {
        if let Some(mut g) = self.child.take() {
            drop(g.stdin.take());
            let _ = g.wait();
        }
    }
}

impl Drop for Guardian {
    fn drop(&mut self) {
        self.release();
    }
}

/// In the guardian: ignore the signals that end a session, then block
/// until dentrylab has ended (end-of-file on standard input).
pub fn wait_for_parent_end() -> Result<()> {
    super::ignore_termination_signals()?;
    let mut sink = [0u8; 64];
    let mut stdin = std::io::stdin();
    while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    Ok(())
}
