//! The latency probe: a thread pinned to one CPU sleeps a short interval in
//! a loop and records the wall time between its wake-ups. On the CPU that
//! runs the reclaim, the longest gap is how long the reclaim kept that CPU
//! from running anything else: the quantity the soft-lockup watchdog sees.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Result, bail};
use nix::sys::time::TimeSpec;
use nix::time::{ClockId, ClockNanosleepFlags, clock_nanosleep};
use serde::{Deserialize, Serialize};

use crate::stats::GapStats;
use crate::sys;

/// Default sleep between wake-ups.
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_micros(100);

/// How the probe threads are scheduled (`reclaim --probe-policy`).
///
/// The watchdog's own check runs from the per-CPU stopper thread, which
/// preempts everything the moment the CPU reaches a scheduling point; a
/// SCHED_FIFO probe at the top priority is the closest a user thread comes
/// to that (it runs at the first reschedule, never waiting for a fair
/// share). SCHED_OTHER probes wait like any task and may see a longer gap
/// than the watchdog would.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Policy {
    Fifo,
    /// Runs before this option existed were SCHED_OTHER.
    #[default]
    Other,
}

impl Policy {
    /// "SCHED_FIFO priority 99" or "SCHED_OTHER".
    pub(crate) fn describe(self) -> String {
        match self {
            Policy::Fifo => format!("SCHED_FIFO priority {}", sys::fifo_max_priority()),
            Policy::Other => "SCHED_OTHER".into(),
        }
    }

    /// The default: fifo when this process may use it, else other; with
    /// the reason, as the output says it.
    pub(crate) fn choose(asked: Option<Policy>) -> Result<(Policy, String)> {
        match asked {
            Some(Policy::Other) => Ok((Policy::Other, "asked for (--probe-policy other)".into())),
            Some(Policy::Fifo) => match sys::fifo_permitted() {
                Ok(()) => Ok((Policy::Fifo, "asked for (--probe-policy fifo)".into())),
                Err(e) => bail!("--probe-policy fifo: {e:#}; run as root, or use --probe-policy other"),
            },
            None => Ok(match sys::fifo_permitted() {
                Ok(()) => (
                    Policy::Fifo,
                    "the default where permitted: the watchdog's per-CPU stopper thread runs at the top \
                     priority, and so does the probe"
                        .into(),
                ),
                Err(e) => (
                    Policy::Other,
                    format!(
                        "the default here, as SCHED_FIFO is not permitted ({e:#}): the gap may include waiting for a fair share"
                    ),
                ),
            }),
        }
    }
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fifo" => Ok(Policy::Fifo),
            "other" => Ok(Policy::Other),
            _ => Err(format!("unknown probe policy {s:?}: use fifo or other")),
        }
    }
}

pub(crate) struct GapProbe {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<(u64, Vec<u64>)>,
    ready: std::sync::mpsc::Receiver<Result<(), String>>,
    pub cpu: usize,
    interval: Duration,
}

impl GapProbe {
    /// Starts a SCHED_OTHER probe pinned to `cpu`. Returns once the thread is pinned.
    pub(crate) fn start(cpu: usize, interval: Duration) -> Result<GapProbe> {
        GapProbe::start_with(cpu, interval, Policy::Other)
    }

    /// Starts a probe pinned to `cpu` under `policy`. Returns once the
    /// thread is pinned and scheduled so.
    pub(crate) fn start_with(cpu: usize, interval: Duration, policy: Policy) -> Result<GapProbe> {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, ready) = std::sync::mpsc::channel();
        let stop2 = Arc::clone(&stop);
        let handle = std::thread::Builder::new().name(format!("probe-cpu{cpu}")).spawn(move || {
            let scheduled = sys::pin_current_thread(cpu).and_then(|()| match policy {
                Policy::Fifo => sys::set_current_thread_fifo(),
                Policy::Other => Ok(()),
            });
            if let Err(e) = scheduled {
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

    /// Stops the probe and summarises what it saw. A probe thread that died
    /// (panicked) or saw no wake-up at all measured nothing: that is an
    /// error, never a longest gap of 0 s.
    pub(crate) fn finish(self) -> Result<GapStats> {
        self.finish_with_longest().map(|(stats, _)| stats)
    }

    /// The same, with when the longest gap began and ended
    /// (CLOCK_MONOTONIC ns).
    pub(crate) fn finish_with_longest(self) -> Result<(GapStats, Option<(u64, u64)>)> {
        self.stop.store(true, Ordering::Relaxed);
        let joined = self.handle.join();
        let window = joined.as_ref().ok().and_then(|(start, gaps)| longest_window(*start, gaps));
        Ok((summarise(self.cpu, self.interval, joined.map(|(_, gaps)| gaps))?, window))
    }
}

/// Start and end of the longest of consecutive `gaps` that began at `start`.
pub(crate) fn longest_window(start: u64, gaps: &[u64]) -> Option<(u64, u64)> {
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

/// What the probe thread on `cpu` returned, as statistics or as the error
/// saying why there are none.
fn summarise(cpu: usize, interval: Duration, joined: std::thread::Result<Vec<u64>>) -> Result<GapStats> {
    let gaps = match joined {
        Ok(g) => g,
        Err(panic) => {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            bail!("the latency probe on CPU {cpu} died during the measurement ({why}): no longest gap was measured")
        }
    };
    if gaps.is_empty() {
        bail!("the latency probe on CPU {cpu} never woke up during the measurement: no longest gap was measured");
    }
    Ok(GapStats::from_gaps_ns(cpu, interval, &gaps))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe thread that died reported a longest gap of 0 s
    /// with no note; it is an error naming the CPU.
    #[test]
    fn a_dead_probe_is_an_error_not_a_zero_gap() {
        let h = std::thread::spawn(|| -> Vec<u64> { panic!("injected") });
        let e = summarise(1, DEFAULT_INTERVAL, h.join()).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("CPU 1 died") && e.contains("injected"), "{e}");
        let e = format!("{:#}", summarise(0, DEFAULT_INTERVAL, Ok(Vec::new())).unwrap_err());
        assert!(e.contains("never woke up"), "{e}");
        let s = summarise(0, DEFAULT_INTERVAL, Ok(vec![100_000, 2_000_000])).unwrap();
        assert!((s.max_gap_seconds - 0.002).abs() < 1e-12);
    }

    /// A real probe stopped after a few wake-ups measures them.
    #[test]
    fn a_live_probe_measures() {
        let p = GapProbe::start(0, DEFAULT_INTERVAL).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let s = p.finish().unwrap();
        assert!(s.samples > 0 && s.max_gap_seconds > 0.0, "{s:?}");
    }

    #[test]
    fn policies_parse_and_an_explicit_other_is_kept() {
        assert_eq!("fifo".parse::<Policy>(), Ok(Policy::Fifo));
        assert_eq!("other".parse::<Policy>(), Ok(Policy::Other));
        assert!("rr".parse::<Policy>().unwrap_err().contains("fifo or other"));
        let (p, why) = Policy::choose(Some(Policy::Other)).unwrap();
        assert_eq!(p, Policy::Other);
        assert!(why.contains("--probe-policy other"));
        // The default is fifo exactly when this process may use it.
        let (p, why) = Policy::choose(None).unwrap();
        assert_eq!(p == Policy::Fifo, sys::fifo_permitted().is_ok(), "{why}");
    }

    /// A FIFO probe, where permitted, really runs SCHED_FIFO; where not,
    /// starting one is an error that says what it needs.
    #[test]
    fn a_fifo_probe_runs_fifo_or_says_why_not() {
        match GapProbe::start_with(0, DEFAULT_INTERVAL, Policy::Fifo) {
            Ok(p) => {
                assert!(sys::fifo_permitted().is_ok());
                std::thread::sleep(Duration::from_millis(5));
                assert!(p.finish().unwrap().samples > 0);
            }
            Err(e) => assert!(format!("{e:#}").contains("CAP_SYS_NICE"), "{e:#}"),
        }
    }

    #[test]
    fn longest_window_is_found_in_time() {
        assert_eq!(longest_window(1_000, &[10, 50, 20, 50]), Some((1_010, 1_060)));
        assert_eq!(longest_window(5, &[]), None);
    }
}
