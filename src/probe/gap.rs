//! The latency probe: a thread pinned to one CPU sleeps a short interval in
//! a loop and records the wall time between its wake-ups. On the CPU that
//! runs the reclaim, the longest gap is how long the reclaim kept that CPU
//! from running anything else: the quantity the soft-lockup watchdog sees.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Result;
use nix::sys::time::TimeSpec;
use nix::time::{ClockId, ClockNanosleepFlags, clock_nanosleep};

use crate::stats::GapStats;
use crate::sys;

/// Default sleep between wake-ups.
pub const DEFAULT_INTERVAL: Duration = Duration::from_micros(100);

pub struct GapProbe {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<u64>>,
    ready: std::sync::mpsc::Receiver<Result<(), String>>,
    pub cpu: usize,
    interval: Duration,
}

impl GapProbe {
    /// Starts a probe pinned to `cpu`. Returns once the thread is pinned.
    pub fn start(cpu: usize, interval: Duration) -> Result<GapProbe> {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, ready) = std::sync::mpsc::channel();
        let stop2 = Arc::clone(&stop);
        let handle = std::thread::Builder::new().name(format!("probe-cpu{cpu}")).spawn(move || {
            if let Err(e) = sys::pin_current_thread(cpu) {
                let _ = tx.send(Err(format!("{e:#}")));
                return Vec::new();
            }
            let _ = tx.send(Ok(()));
            let mut gaps = Vec::with_capacity(1 << 16);
            let ts = TimeSpec::from_duration(interval);
            let mut prev = sys::monotonic_ns();
            while !stop2.load(Ordering::Relaxed) {
                let _ = clock_nanosleep(ClockId::CLOCK_MONOTONIC, ClockNanosleepFlags::empty(), &ts);
                let now = sys::monotonic_ns();
                gaps.push(now - prev);
                prev = now;
            }
            gaps
        })?;
        let probe = GapProbe { stop, handle, ready, cpu, interval };
        match probe.ready.recv() {
            Ok(Ok(())) => Ok(probe),
            Ok(Err(e)) => anyhow::bail!("latency probe: {e}"),
            Err(_) => anyhow::bail!("latency probe thread died"),
        }
    }

    /// Stops the probe and summarises what it saw.
    pub fn finish(self) -> GapStats {
        self.stop.store(true, Ordering::Relaxed);
        let gaps = self.handle.join().unwrap_or_default();
        GapStats::from_gaps_ns(self.cpu, self.interval, &gaps)
    }
}
