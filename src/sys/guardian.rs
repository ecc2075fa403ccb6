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
use std::fs::File;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result};

/// The hidden subcommand of a guardian that writes a sysctl's original value
/// back when dentrylab ends (`dentrylab __sysctl-guard PATH VALUE`).
pub(crate) const SYSCTL_GUARD_COMMAND: &str = "__sysctl-guard";

/// Where the lock of a sysctl lives: one file per sysctl, so that runs
/// changing different settings do not wait for each other.
pub(crate) const SYSCTL_LOCK_DIR: &str = "/run/lock";

pub(crate) struct Guardian {
    child: Option<Child>,
    /// The sysctl's lock, shared with the guardian (its standard output is
    /// the same open file): released only when both have let it go, so
    /// after the guardian has put the value back.
    lock: Option<File>,
}

/// The lock file of the sysctl at `path` (`/proc/sys/fs/dentry-negative` →
/// `/run/lock/dentrylab-sysctl-fs.dentry-negative.lock`).
pub(crate) fn sysctl_lock_path(path: &str) -> PathBuf {
    let name = path.trim_start_matches("/proc/sys/").trim_start_matches('/').replace('/', ".");
    let dir = if std::path::Path::new(SYSCTL_LOCK_DIR).is_dir() {
        PathBuf::from(SYSCTL_LOCK_DIR)
    } else {
        std::env::temp_dir()
    };
    dir.join(format!("dentrylab-sysctl-{name}.lock"))
}

impl Guardian {
    /// Starts `dentrylab <args>` as a guardian. Start it outside the
    /// sandbox: a process inside would keep the sandbox's mounts alive.
    pub(crate) fn spawn<I, S>(args: I, what: &str) -> Result<Guardian>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        // Through /proc: the executable's own path may be hidden later
        // (a binary under /tmp is under the sandbox's scratch tmpfs).
        let mut cmd = Command::new(super::SELF_EXE);
        cmd.arg(super::INTERNAL_COMMAND)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd.spawn().with_context(|| format!("cannot start the {what} guardian"))?;
        Ok(Guardian { child: Some(child), lock: None })
    }

    /// Guards the sysctl at `path`: takes its lock (waiting, with one line
    /// on stderr, while another dentrylab run holds it), reads the original
    /// value, and starts a guardian that writes it back when dentrylab ends.
    /// Returns the guardian and the original. Two runs that change the same
    /// sysctl at once would otherwise each save what the other wrote, and
    /// the later restore would leave the other's value behind.
    pub(crate) fn sysctl(path: &str, what: &str) -> Result<(Guardian, String)> {
        let lock_path = sysctl_lock_path(path);
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .with_context(|| format!("cannot open the lock of {what}, {}", lock_path.display()))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                eprintln!(
                    "dentrylab: waiting for another dentrylab run that has changed {what} to put it back ({})",
                    lock_path.display()
                );
                lock.lock().with_context(|| format!("cannot lock {}", lock_path.display()))?;
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("cannot lock {}", lock_path.display()));
            }
        }
        let original = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {path}: this kernel has no {what}"))?
            .trim()
            .to_string();
        let held = lock.try_clone().with_context(|| format!("cannot share the lock of {what} with its guardian"))?;
        let mut cmd = Command::new(super::SELF_EXE);
        cmd.args([super::INTERNAL_COMMAND, SYSCTL_GUARD_COMMAND, path, &original])
            .stdin(Stdio::piped())
            .stdout(held)
            .stderr(Stdio::inherit());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd.spawn().with_context(|| format!("cannot start the {what} guardian"))?;
        Ok((Guardian { child: Some(child), lock: Some(lock) }, original))
    }

    /// The write end of the guardian's standard input, while it is open.
    pub(super) fn pipe(&self) -> Option<&std::process::ChildStdin> {
        self.child.as_ref()?.stdin.as_ref()
    }

    /// A guardian that is any command reading its standard input (tests).
    #[cfg(test)]
    pub(super) fn of_command(cmd: &mut Command) -> Guardian {
        Guardian { child: Some(cmd.stdin(Stdio::piped()).spawn().unwrap()), lock: None }
    }

    /// Lets the guardian go: closes its pipe and waits until it has done
    /// its clean-up.
    pub(crate) fn finish(mut self) {
        self.release();
    }

    fn release(&mut self) {
        if let Some(mut g) = self.child.take() {
            drop(g.stdin.take());
            let _ = g.wait();
        }
        self.lock = None;
    }
}

impl Drop for Guardian {
    fn drop(&mut self) {
        self.release();
    }
}

/// `__sysctl-guard PATH VALUE`: the guardian [`Guardian::sysctl`] starts,
/// which puts a sysctl back when dentrylab ends, however it ends (used by
/// `reclaim --watchdog-check` and `mitigate`).
#[derive(Debug, clap::Args)]
pub(crate) struct SysctlGuardArgs {
    /// The sysctl file to restore.
    pub path: PathBuf,
    /// The value to write back.
    pub value: String,
}

/// The sysctl guardian's internal command.
pub(crate) const SYSCTL_GUARD_ENTRY: super::internal::Entry<SysctlGuardArgs> = super::internal::Entry {
    name: SYSCTL_GUARD_COMMAND,
    about: "Puts a sysctl (watchdog_thresh) back when dentrylab ends, however it ends",
    aliases: &[],
    run: |a| a.run(),
};

impl SysctlGuardArgs {
    /// In the guardian: once dentrylab has ended, write the value back.
    pub(crate) fn run(&self) -> Result<()> {
        wait_for_parent_end()?;
        std::fs::write(&self.path, format!("{}\n", self.value))
            .with_context(|| format!("guardian: cannot restore {}", self.path.display()))
    }
}

/// In the guardian: ignore the signals that end a session, then block
/// until dentrylab has ended (end-of-file on standard input).
pub(crate) fn wait_for_parent_end() -> Result<()> {
    super::ignore_termination_signals()?;
    let mut sink = [0u8; 64];
    let mut stdin = std::io::stdin();
    while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    Ok(())
}
