//! Watches `/dev/kmsg` for soft-lockup, RCU-stall and hung-task messages
//! while a benchmark runs. Each alert is tagged with the phase that was
//! current when it was read, so a message is attributed to the reclaim that
//! caused it.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::procfs::kmsg::{Alert, classify, parse_record};

pub struct KmsgWatch {
    stop: Arc<AtomicBool>,
    phase: Arc<AtomicU32>,
    alerts: Arc<Mutex<Vec<(u32, Alert)>>>,
    handle: Option<JoinHandle<()>>,
    /// Why the log cannot be watched, when it cannot.
    pub unavailable: Option<String>,
}

impl KmsgWatch {
    /// Starts watching from the end of the log. Never fails: when
    /// `/dev/kmsg` cannot be read (not root, dmesg_restrict), the watch is
    /// inert and [`unavailable`](Self::unavailable) says why.
    pub fn start() -> KmsgWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let phase = Arc::new(AtomicU32::new(0));
        let alerts = Arc::new(Mutex::new(Vec::new()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .and_then(|mut f| f.seek(SeekFrom::End(0)).map(|_| f));
        let mut file = match file {
            Ok(f) => f,
            Err(e) => {
                return KmsgWatch {
                    stop,
                    phase,
                    alerts,
                    handle: None,
                    unavailable: Some(format!("cannot read /dev/kmsg ({e}); kernel messages are not watched")),
                };
            }
        };
        let (s, p, a) = (Arc::clone(&stop), Arc::clone(&phase), Arc::clone(&alerts));
        let handle = std::thread::Builder::new()
            .name("kmsg".into())
            .spawn(move || watch(&mut file, &s, &p, &a))
            .ok();
        KmsgWatch { stop, phase, alerts, handle, unavailable: None }
    }

    /// Sets the phase that new alerts are tagged with.
    pub fn set_phase(&self, phase: u32) {
        self.phase.store(phase, Ordering::SeqCst);
    }

    /// Takes the alerts seen so far for `phase`.
    pub fn take(&self, phase: u32) -> Vec<Alert> {
        // Let the reader drain what the kernel already logged.
        std::thread::sleep(std::time::Duration::from_millis(60));
        let mut all = self.alerts.lock().expect("kmsg lock");
        let (mine, rest): (Vec<_>, Vec<_>) = all.drain(..).partition(|(p, _)| *p == phase);
        *all = rest;
        mine.into_iter().map(|(_, a)| a).collect()
    }
}

impl Drop for KmsgWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

use std::os::unix::fs::OpenOptionsExt;

fn watch(file: &mut File, stop: &AtomicBool, phase: &AtomicU32, alerts: &Mutex<Vec<(u32, Alert)>>) {
    let mut buf = vec![0u8; 8192];
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLIN)];
        if poll(&mut fds, PollTimeout::from(20u16)).unwrap_or(0) <= 0 {
            continue;
        }
        loop {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let raw = String::from_utf8_lossy(&buf[..n]);
                    if let Some(alert) = parse_record(&raw).as_ref().and_then(classify) {
                        alerts.lock().expect("kmsg lock").push((phase.load(Ordering::SeqCst), alert));
                    }
                }
                // EPIPE: records were overwritten before we read them; go on.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(_) => break,
            }
        }
    }
}
