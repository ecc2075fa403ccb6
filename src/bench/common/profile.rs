//! `--profile` of `reclaim` and `containers`: the hook that records each
//! probed reclaim (or teardown) with perf ([`crate::probe::profile`]) and
//! keeps, per run, the folded stacks of the probe's longest gap and of the
//! whole reclaim, and the line naming the path behind a longest stretch.

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::analysis::folded::{self, Sample, Window};
use crate::probe::profile::{self, Recorder};
use crate::sys;

/// What the samples said about one reclaim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunProfile {
    pub frequency_hz: u32,
    /// Every sample perf took on the CPU while the probe ran.
    pub samples: u64,
    /// The probe's longest gap.
    pub longest_gap: Window,
    /// From the start of the reclaim call to its end.
    pub reclaim: Window,
}

/// Folds the samples of the longest gap and of the reclaim; `tid`: the
/// task that ran the reclaim.
pub(crate) fn summarise(
    samples: &[Sample],
    longest_gap: (u64, u64),
    reclaim: (u64, u64),
    tid: Option<u32>,
) -> RunProfile {
    RunProfile {
        frequency_hz: profile::FREQUENCY_HZ,
        samples: samples.len() as u64,
        longest_gap: folded::window(samples, longest_gap.0, longest_gap.1, tid),
        reclaim: folded::window(samples, reclaim.0, reclaim.1, tid),
    }
}

/// Parses perf's samples; refuses them when no kernel frame has a name.
pub(crate) fn samples(text: &str) -> Result<Vec<Sample>> {
    let samples = folded::parse_script(text)?;
    if let Some(why) = folded::unresolved_kernel(&samples) {
        anyhow::bail!(why);
    }
    Ok(samples)
}

/// Checks once whether perf works here; when it does not, says so in one
/// line (stderr and the result's notes) and the sweep runs without it.
pub(crate) fn available(wanted: bool, cpu: usize, scratch: &Path, notes: &mut Vec<String>) -> bool {
    available_for(wanted, cpu, scratch, "reclaim", notes)
}

/// The same for another benchmark's `what` (a reclaim, a teardown).
pub(crate) fn available_for(wanted: bool, cpu: usize, scratch: &Path, what: &str, notes: &mut Vec<String>) -> bool {
    if !wanted {
        return false;
    }
    match profile::check(cpu, scratch) {
        Ok(()) => {
            notes.push(format!(
                "--profile: perf sampled CPU {cpu} at {} Hz with call graphs during each {what} (perf itself ran on \
                 the other CPUs); the sampling slows the {what} a little: compare with a run without --profile",
                profile::FREQUENCY_HZ
            ));
            true
        }
        Err(why) => {
            let line = format!("--profile: {why}; running without it");
            eprintln!("dentrylab: {line}");
            notes.push(line);
            false
        }
    }
}

/// A reclaim being recorded (or not).
pub(crate) struct Recording {
    recorder: Option<Recorder>,
    problem: Option<String>,
    reclaim: (u64, u64),
    tid: Option<u32>,
}

/// Starts perf before the probes, when profiling.
pub(crate) fn start(on: bool, cpu: usize, scratch: &Path, tag: &str) -> Result<Recording> {
    let mut r = Recording { recorder: None, problem: None, reclaim: (0, 0), tid: None };
    if on {
        let others: Vec<usize> = sys::allowed_cpus()?.into_iter().filter(|&c| c != cpu).collect();
        match Recorder::start(cpu, &others, scratch, tag) {
            Ok(rec) => r.recorder = Some(rec),
            Err(e) => r.problem = Some(format!("perf record: {e:#}")),
        }
    }
    Ok(r)
}

impl Recording {
    /// Runs the reclaim (by task `tid`), noting when it began and ended on
    /// the probe's clock.
    pub(crate) fn time<T>(&mut self, tid: u32, reclaim: impl FnOnce() -> T) -> T {
        self.tid = Some(tid);
        let start = sys::monotonic_ns();
        let out = reclaim();
        self.reclaim = (start, sys::monotonic_ns());
        out
    }

    /// Stops perf and folds the longest gap's and the reclaim's samples.
    pub(crate) fn finish(self, longest_gap: Option<(u64, u64)>) -> (Option<RunProfile>, Option<String>) {
        let Some(rec) = self.recorder else { return (None, self.problem) };
        match rec.finish().and_then(|text| samples(&text)) {
            Ok(samples) => {
                let gap = longest_gap.unwrap_or(self.reclaim);
                (Some(summarise(&samples, gap, self.reclaim, self.tid)), None)
            }
            Err(e) => (None, Some(format!("perf: {e:#}"))),
        }
    }
}

/// One line naming the code behind a longest stretch (`at`: which, for
/// people); `task`: what the window's own task is called.
pub(crate) fn name_stretch(p: &RunProfile, at: &str, task: &str) -> String {
    let w = &p.longest_gap;
    if w.samples == 0 {
        return format!(
            "perf took no sample in the longest stretch ({at}) at {} Hz: too short to name",
            p.frequency_hz
        );
    }
    let held = w
        .call
        .as_ref()
        .map(|c| format!("`{}` is in {:.0}% of them", c.name(), c.share * 100.0))
        .unwrap_or_else(|| "no one call is in most of them".into());
    // Another task's code is named only when the reclaimer had less than
    // half of the stretch and one call holds most of it.
    let me = w.reclaimer.as_ref().filter(|m| m.samples > 0 && (m.samples * 2 >= w.samples || w.call.is_none()));
    let Some(me) = me else {
        return format!(
            "the longest stretch ({at}) is not the {task}'s ({:.0}% of its {} samples): {held}",
            w.reclaimer.as_ref().map_or(0.0, |m| m.share * 100.0),
            w.samples
        );
    };
    let others = if me.samples < w.samples {
        format!(" (it had {:.0}% of the stretch's {} samples)", me.share * 100.0, w.samples)
    } else {
        String::new()
    };
    let top = me.top_stack.as_ref().map(|s| format!("; top stack {:.0}%", s.share * 100.0)).unwrap_or_default();
    match &me.path {
        Some(path) if path.frames.len() >= 2 => format!(
            "the longest stretch ({at}) is `{}`: {:.0}% of the {task}'s {} samples in it{top}{others}",
            path.name(),
            path.share * 100.0,
            me.samples
        ),
        _ => format!(
            "the longest stretch ({at}): no one path holds most of the {task}'s {} samples in it{top}{others}",
            me.samples
        ),
    }
}
