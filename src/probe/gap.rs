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
    handle: JoinHandle<(u64, Vec<u64>)>,
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
                return (0, Vec::new());
            }
            let _ = tx.send(Ok(()));
            let mut gaps = Vec::with_capacity(1 << 16);
            let ts = TimeSpec::from_duration(interval);
            let start = sys::monotonic_ns();
            let mut prev = start;
            while !stop2.load(Ordering::Relaxed) {
                let _ = clock_nanosleep(ClockId::CLOCK_MONOTONIC, ClockNanosleepFlags::empty(), &ts);
                let now = sys::monotonic_ns();
                gaps.push(now - prev);
                prev = now;
            }
            (start, gaps)
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
        self.finish_with_longest().0
    }

    /// The same, with when the longest gap began and ended
    /// (CLOCK_MONOTONIC ns; None when the probe saw no gap).
    pub fn finish_with_longest(self) -> (GapStats, Option<(u64, u64)>) {
        self.stop.store(true, Ordering::Relaxed);
        let (start, gaps) = self.handle.join().unwrap_or_default();
        (GapStats::from_gaps_ns(self.cpu, self.interval, &gaps), longest_window(start, &gaps))
    }
}

/// Start and end of the longest of consecutive `gaps` that began at `start`.
pub fn longest_window(start: u64, gaps: &[u64]) -> Option<(u64, u64)> {
    let mut at = start;
    let mut best: Option<(u64, u64)> = None;
    for &g in gaps {
        if best.is_none_or(|(a, b)| g > b - a) {
            best = Some((at, at + g));
        }
        at += g;
    }
    best
}

#[cfg(test)]
mod tests {
    #[test]
    fn longest_window_is_found_in_time() {
        assert_eq!(super::longest_window(1_000, &[10, 50, 20, 50]), Some((1_010, 1_060)));
        assert_eq!(super::longest_window(5, &[]), None);
    }
}
