//! A guardian process that puts a sysctl back however dentrylab ends.
//!
//! [`Guardian::start`] forks a small child in a session of its own (so the
//! terminal's Ctrl-C does not reach it). The child blocks reading a pipe
//! whose only write end stays in dentrylab; when dentrylab exits, however
//! it exits (SIGKILL included), the kernel closes that end, the read
//! returns, and the child writes the original value back and exits.

use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use anyhow::{Context, Result};
use nix::unistd::{ForkResult, fork, pipe2};

pub struct Guardian {
    write_end: Option<OwnedFd>,
    child: nix::unistd::Pid,
    path: PathBuf,
    original: String,
}

impl Guardian {
    /// Starts guarding `path` so that it holds `original` when dentrylab is gone.
    /// Must be called while the process is single-threaded.
    pub fn start(path: PathBuf, original: String) -> Result<Guardian> {
        if super::thread_count() > 1 {
            anyhow::bail!("internal error: the guardian must be started before any thread");
        }
        let (read_end, write_end) = pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("pipe2")?;
        // SAFETY: the process is single-threaded (checked above), so the
        // child may run ordinary code after fork.
        match unsafe { fork() }.context("fork the guardian")? {
            ForkResult::Child => {
                drop(write_end);
                let _ = nix::unistd::setsid();
                for sig in [nix::sys::signal::Signal::SIGINT, nix::sys::signal::Signal::SIGTERM, nix::sys::signal::Signal::SIGHUP] {
                    // SAFETY: SIG_IGN installs no handler code.
                    let _ = unsafe { nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigIgn) };
                }
                close_other_fds(read_end.as_raw_fd());
                let mut f = std::fs::File::from(read_end);
                let mut buf = [0u8; 64];
                // Returns 0 (EOF) when the last write end closes.
                while matches!(f.read(&mut buf), Ok(n) if n > 0) {}
                let _ = std::fs::write(&path, &original);
                std::process::exit(0);
            }
            ForkResult::Parent { child } => {
                drop(read_end);
                Ok(Guardian { write_end: Some(write_end), child, path, original })
            }
        }
    }

    /// Restores the value now and lets the guardian go.
    pub fn finish(mut self) -> Result<()> {
        let r = std::fs::write(&self.path, &self.original)
            .with_context(|| format!("cannot restore {} to {}", self.path.display(), self.original.trim()));
        self.write_end.take();
        let _ = nix::sys::wait::waitpid(self.child, None);
        r
    }
}

impl Drop for Guardian {
    fn drop(&mut self) {
        if self.write_end.take().is_some() {
            let _ = std::fs::write(&self.path, &self.original);
            let _ = nix::sys::wait::waitpid(self.child, None);
        }
    }
}

/// Closes every descriptor but stdio and `keep`, so the guardian holds no
/// copy of anything dentrylab opened (outputs, the pipe's write end).
fn close_other_fds(keep: i32) {
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        let fds: Vec<i32> = dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
        for fd in fds {
            if fd > 2 && fd != keep {
                let _ = nix::unistd::close(fd);
            }
        }
    }
}
