//! Watches `/dev/kmsg` for soft-lockup, RCU-stall and hung-task messages
//! while a benchmark runs.
//!
//! A message is attributed to a reclaim by its own kernel time stamp, not by
//! when the reader got to it: a reader held up (console output, a busy
//! CPU) must neither lose a lockup nor give it to the next run. The kernel
//! stamps records with its local clock; the watcher measures that clock's
//! offset from CLOCK_MONOTONIC once, by writing one debug-level marker
//! record (when /dev/kmsg is writable; else the offset is taken as 0 and
//! the windows' slack covers the difference). [`KmsgWatch::take_between`]
//! waits until the reader has drained everything logged up to the window's
//! end.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::procfs::kmsg::{Alert, classify, parse_record};
use crate::sys;

/// Slack on each side of a window, for the kernel clock's offset from
/// CLOCK_MONOTONIC when it could not be measured, and for the stack dump
/// that follows a lockup line.
pub(crate) const WINDOW_SLACK: Duration = Duration::from_millis(500);
/// Longest wait for the reader to drain the log up to a window's end.
pub(crate) const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(5);
/// The marker record written to measure the clock offset (priority 7: debug,
/// not printed on the console).
const MARKER: &str = "dentrylab: kmsg clock mark";

struct Shared {
    stop: AtomicBool,
    alerts: Mutex<Vec<Alert>>,
    /// CLOCK_MONOTONIC (ns) at which the reader last found nothing left to read.
    caught_up_ns: AtomicU64,
    /// Kernel time stamp (ns) of the marker, once read; −1 before.
    marker_ns: AtomicI64,
}

pub(crate) struct KmsgWatch {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
    /// kernel clock − CLOCK_MONOTONIC, ns, when measured.
    offset_ns: Option<i64>,
    /// Why the log cannot be watched, when it cannot.
    pub unavailable: Option<String>,
}

impl KmsgWatch {
    /// Starts watching from the end of the log, with the reader thread kept
    /// off CPU `avoid` (the reclaiming one: no work of the watcher lands
    /// there). Never fails: when `/dev/kmsg` cannot be read (not root,
    /// dmesg_restrict), the watch is inert and
    /// [`unavailable`](Self::unavailable) says why.
    pub(crate) fn start(avoid: Option<usize>) -> KmsgWatch {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .and_then(|mut f| f.seek(SeekFrom::End(0)).map(|_| f));
        match file {
            Ok(f) => {
                let mut w = KmsgWatch::from_file(f, avoid, None);
                w.offset_ns = w.measure_offset();
                w
            }
            Err(e) => KmsgWatch {
                shared: Arc::new(Shared::new()),
                handle: None,
                offset_ns: None,
                unavailable: Some(format!("cannot read /dev/kmsg ({e}); kernel messages are not watched")),
            },
        }
    }

    /// Watches records from `file` (non-blocking), whose time stamps are
    /// `offset_ns` ahead of CLOCK_MONOTONIC (None: unknown, taken as 0).
    pub(crate) fn from_file(mut file: File, avoid: Option<usize>, offset_ns: Option<i64>) -> KmsgWatch {
        let shared = Arc::new(Shared::new());
        let s = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("kmsg".into())
            .spawn(move || {
                if let Some(cpu) = avoid
                    && let Ok(all) = sys::allowed_cpus()
                {
                    let others: Vec<usize> = all.into_iter().filter(|&c| c != cpu).collect();
                    if !others.is_empty() {
                        let _ = sys::unpin_current_thread(&others);
                    }
                }
                watch(&mut file, &s)
            })
            .ok();
        KmsgWatch { shared, handle, offset_ns, unavailable: None }
    }

    /// Writes the marker and reads its time stamp back: kernel clock −
    /// CLOCK_MONOTONIC. `None` when /dev/kmsg is not writable.
    fn measure_offset(&self) -> Option<i64> {
        let mut w = std::fs::OpenOptions::new().write(true).open("/dev/kmsg").ok()?;
        let before = sys::monotonic_ns();
        w.write_all(format!("<7>{MARKER}\n").as_bytes()).ok()?;
        let after = sys::monotonic_ns();
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(1) {
            let k = self.shared.marker_ns.load(Ordering::SeqCst);
            if k >= 0 {
                return Some(k - ((before + after) / 2) as i64);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        None
    }

    /// The kernel clock's offset from CLOCK_MONOTONIC, when measured.
    pub(crate) fn offset_ns(&self) -> Option<i64> {
        self.offset_ns
    }

    /// Takes the alerts whose own time stamps fall between `start_ns` and
    /// `end_ns` (CLOCK_MONOTONIC, with [`WINDOW_SLACK`] on each side), once
    /// the reader has drained the log up to `end_ns` (or after
    /// [`CATCH_UP_TIMEOUT`]). Returns them and whether the reader caught up.
    pub(crate) fn take_between(&self, start_ns: u64, end_ns: u64) -> (Vec<Alert>, bool) {
        let slack = WINDOW_SLACK.as_nanos() as i64;
        let caught_up = self.handle.is_none() || {
            let t = Instant::now();
            loop {
                if self.shared.caught_up_ns.load(Ordering::SeqCst) >= end_ns {
                    break true;
                }
                if t.elapsed() >= CATCH_UP_TIMEOUT {
                    break false;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        let off = self.offset_ns.unwrap_or(0);
        let (lo, hi) = (start_ns as i64 + off - slack, end_ns as i64 + off + slack);
        let mut all = self.shared.alerts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (mine, rest): (Vec<_>, Vec<_>) = all.drain(..).partition(|a| {
            let k = (a.usec * 1000) as i64;
            lo <= k && k <= hi
        });
        *all = rest;
        (mine, caught_up)
    }
}

impl Shared {
    fn new() -> Shared {
        Shared {
            stop: AtomicBool::new(false),
            alerts: Mutex::new(Vec::new()),
            caught_up_ns: AtomicU64::new(0),
            marker_ns: AtomicI64::new(-1),
        }
    }
}

impl Drop for KmsgWatch {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn watch(file: &mut File, s: &Shared) {
    let mut buf = vec![0u8; 8192];
    while !s.stop.load(Ordering::SeqCst) {
        // Whatever was logged before now is read by the end of this pass.
        let pass_start = sys::monotonic_ns();
        loop {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => take_records(&String::from_utf8_lossy(&buf[..n]), s),
                // EPIPE: records were overwritten before we read them; go on.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(_) => break,
            }
        }
        s.caught_up_ns.fetch_max(pass_start, Ordering::SeqCst);
        let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLIN)];
        let _ = poll(&mut fds, PollTimeout::from(20u16));
    }
}

/// One read of /dev/kmsg returns one record; other sources may give
/// several: every line that does not start with a space (a continuation)
/// is a record.
fn take_records(raw: &str, s: &Shared) {
    for line in raw.lines().filter(|l| !l.starts_with(' ')) {
        let Some(rec) = parse_record(line) else { continue };
        if rec.message == MARKER {
            s.marker_ns.store((rec.usec * 1000) as i64, Ordering::SeqCst);
        } else if let Some(alert) = classify(&rec) {
            s.alerts.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(alert);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipe() -> (File, File) {
        let (r, w) = nix::unistd::pipe().unwrap();
        let r = nonblocking(r);
        (r, File::from(w))
    }

    fn nonblocking(fd: std::os::fd::OwnedFd) -> File {
        nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK)).unwrap();
        File::from(fd)
    }

    fn lockup(seq: u64, usec: u64, pid: u32) -> String {
        format!("0,{seq},{usec},-;watchdog: BUG: soft lockup - CPU#0 stuck for 3s! [dentrylab:{pid}]\n")
    }

    #[test]
    fn a_delayed_reader_still_gives_each_lockup_to_its_own_window() {
        let (r, mut w) = pipe();
        // Two reclaims, 10 s apart in kernel time; the kernel logs a lockup
        // in each, and the reader gets to neither before both have ended.
        let now = sys::monotonic_ns();
        let (a0, a1) = (now - 30_000_000_000, now - 20_000_000_000);
        let (b0, b1) = (now - 10_000_000_000, now - 1_000_000_000);
        w.write_all(lockup(1, (a0 + 1_000_000_000) / 1000, 11).as_bytes()).unwrap();
        w.write_all(lockup(2, (b0 + 2_000_000_000) / 1000, 22).as_bytes()).unwrap();
        w.write_all(b"6,3,1,-;an unrelated line\n").unwrap();
        let watch = KmsgWatch::from_file(r, None, Some(0));
        let (second, caught) = watch.take_between(b0, b1);
        assert!(caught);
        assert_eq!(second.iter().map(|a| a.pid).collect::<Vec<_>>(), vec![Some(22)]);
        let (first, _) = watch.take_between(a0, a1);
        assert_eq!(first.iter().map(|a| a.pid).collect::<Vec<_>>(), vec![Some(11)]);
        // Taken once only.
        assert!(watch.take_between(a0, b1).0.is_empty());
        drop(w);
    }

    #[test]
    fn take_waits_for_the_reader_to_catch_up() {
        let (r, mut w) = pipe();
        let watch = KmsgWatch::from_file(r, None, Some(0));
        let start = sys::monotonic_ns();
        w.write_all(lockup(7, sys::monotonic_ns() / 1000, 33).as_bytes()).unwrap();
        let end = sys::monotonic_ns();
        // Taken at once: the reader polls every 20 ms, so without the wait
        // the record would not have been read yet.
        let (got, caught) = watch.take_between(start, end);
        assert!(caught);
        assert_eq!(got.len(), 1, "{got:?}");
        drop(w);
    }

    #[test]
    fn a_record_outside_the_window_is_not_taken() {
        let (r, mut w) = pipe();
        let now = sys::monotonic_ns();
        w.write_all(lockup(1, (now - 5_000_000_000) / 1000, 44).as_bytes()).unwrap();
        let watch = KmsgWatch::from_file(r, None, Some(0));
        assert!(watch.take_between(now - 2_000_000_000, now).0.is_empty());
        drop(w);
    }
}
