//! One container's life from the harness's side: spawn it on a snapshot
//! of its own, wait for its workload, tear it down on the probed CPU
//! (exit, reap, snapshot removal) and count what that freed. Shared by
//! `containers` (many at a time) and `mitigate --workload containers`
//! (one after another, inside the run's memory cgroup).
//!
//! With `--profile`, perf samples the teardown CPU with call graphs while
//! the probe runs ([`crate::bench::common::profile`]: the same recorder,
//! clock and folding as `reclaim --profile`). The teardown has two tasks:
//! the container's own (its exit takes the overlay and the namespace down)
//! and the harness's (it removes the snapshot); the longest gap's stacks
//! are counted for the task of the phase the gap lies in.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::ContainerRun;
use super::child::{self, Container, Output, Report, Spec};
use crate::bench::common::profile::{self as reclaim_profile, RunProfile};
use crate::probe::gap::GapProbe;
use crate::probe::profile::Recorder;
use crate::procfs::ProcRoot;
use crate::procfs::dentry_state::DentryState;
use crate::sandbox::overlay::Layers;
use crate::sys;
use crate::workload::container::Mix;

/// How long the probe runs before and after a teardown.
const PROBE_MARGIN: Duration = Duration::from_millis(2);

/// A container on its way: spawned, workload running.
pub(crate) struct Running {
    pub id: u32,
    pub container: Container,
    pub spawned: Instant,
    pub layers: Layers,
    pub merged: PathBuf,
}

/// Makes container `id`'s snapshot under `snapshots`, and spawns it with
/// its root at `merged` (an empty directory).
pub(crate) fn spawn(
    id: u32,
    mix: Mix,
    ops: u64,
    cpu: usize,
    image: &Path,
    snapshots: &Path,
    merged: PathBuf,
) -> Result<(Running, Output)> {
    let snap = snapshots.join(id.to_string());
    let layers = Layers { lower: image.to_path_buf(), upper: snap.join("fs"), work: snap.join("work") };
    for d in [&layers.upper, &layers.work] {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    let spec = Spec { id, layers: layers.clone(), merged: merged.clone(), mix, ops, cpu };
    let spawned = Instant::now();
    let (container, output) = Container::spawn(&spec)?;
    Ok((Running { id, container, spawned, layers, merged }, output))
}

/// How teardowns are watched.
pub(crate) struct Watch<'a> {
    pub cpu: usize,
    pub interval: Duration,
    /// The CPUs the harness may use (to unpin after a teardown).
    pub all: Vec<usize>,
    pub proc: &'a ProcRoot,
    /// `--profile` (perf works here): where perf keeps its data.
    pub profile: Option<&'a Path>,
}

/// Tears container `r` down once its workload is done (`report`), on the
/// probed CPU, and returns its figures. `index`: containers torn down before.
pub(crate) fn tear_down(
    r: Running,
    report: Result<Report>,
    mut output: Output,
    index: u64,
    w: &Watch,
) -> Result<ContainerRun> {
    let id = r.id;
    let (setup_seconds, before, after, outcome) = match report {
        Ok(Report::Ready { setup_seconds, before, after, outcome }) => (setup_seconds, before, after, outcome),
        Ok(other) => {
            r.container.kill();
            bail!("container {id} answered {other:?} before its workload was done");
        }
        Err(e) => {
            r.container.kill();
            return Err(e.context(format!("container {id}")));
        }
    };
    // Teardown on the probed CPU: the container exits there, and the
    // snapshot is removed from there.
    sys::pin_current_thread(w.cpu)?;
    // perf starts (and is acknowledged) before the probe, so that the
    // probe's gaps are the teardown's, not perf's start-up.
    let mut recorder = None;
    let mut profile_problem = None;
    let mut profile_phase = None;
    if let Some(scratch) = w.profile {
        let others: Vec<usize> = w.all.iter().copied().filter(|&c| c != w.cpu).collect();
        match Recorder::start(w.cpu, &others, scratch, &format!("container-{id}")) {
            Ok(rec) => recorder = Some(rec),
            Err(e) => profile_problem = Some(format!("perf record: {e:#}")),
        }
    }
    let before_teardown = w.proc.dentry_state()?;
    let probe = GapProbe::start(w.cpu, w.interval)?;
    std::thread::sleep(PROBE_MARGIN);
    let container_tid = r.container.pid();
    let t0 = sys::monotonic_ns();
    let t = Instant::now();
    let exited = r.container.exit(&mut output);
    let exit_seconds = t.elapsed().as_secs_f64();
    let t1 = sys::monotonic_ns();
    let t2 = Instant::now();
    let snapshot = r.layers.upper.parent().map(PathBuf::from).unwrap_or_default();
    let removed = std::fs::remove_dir_all(&snapshot);
    let remove_seconds = t2.elapsed().as_secs_f64();
    let t3 = sys::monotonic_ns();
    std::thread::sleep(PROBE_MARGIN);
    let probe = probe.finish_with_longest();
    let host_after = w.proc.dentry_state()?;
    sys::unpin_current_thread(&w.all)?;
    let (probe, longest) = probe.with_context(|| format!("probing the teardown of container {id}"))?;
    let profile = recorder.map(|rec| {
        let harness_tid = nix::unistd::gettid().as_raw() as u32;
        profile_teardown(rec, longest, (t0, t1, t3), container_tid, harness_tid)
    });
    let profile = match profile {
        Some(Ok((p, phase))) => {
            profile_phase = Some(phase);
            Some(p)
        }
        Some(Err(e)) => {
            profile_problem = Some(format!("perf: {e:#}"));
            None
        }
        None => None,
    };
    exited.with_context(|| format!("tearing down container {id}"))?;
    removed.with_context(|| format!("cannot remove the snapshot {}", snapshot.display()))?;
    let _ = std::fs::remove_dir(&r.merged);
    let d = |a: &DentryState, b: &DentryState| a.nr_dentry as i64 - b.nr_dentry as i64;
    let n = |a: &DentryState, b: &DentryState| a.nr_negative as i64 - b.nr_negative as i64;
    let (created, created_negative) = (d(&after, &before), n(&after, &before));
    let (freed, freed_negative) = (d(&before_teardown, &host_after), n(&before_teardown, &host_after));
    let workload_seconds = outcome.seconds;
    Ok(ContainerRun {
        id,
        index,
        outcome,
        setup_seconds,
        harness_seconds: (r.spawned.elapsed().as_secs_f64() - workload_seconds).max(0.0),
        created,
        created_negative,
        freed,
        freed_negative,
        left: created - freed,
        left_negative: created_negative - freed_negative,
        exit_seconds,
        remove_seconds,
        teardown_seconds: exit_seconds + remove_seconds,
        probe,
        host_after,
        profile,
        profile_problem,
        profile_phase,
    })
}

/// Folds the teardown's samples: the longest gap's (counted for the task
/// of the phase it lies in: the container's exit `(t0, t1)` or the
/// harness's removal `(t1, t3)`), and the whole teardown's.
fn profile_teardown(
    rec: Recorder,
    longest: Option<(u64, u64)>,
    (t0, t1, t3): (u64, u64, u64),
    container_tid: u32,
    harness_tid: u32,
) -> Result<(RunProfile, Phase)> {
    let samples = reclaim_profile::samples(&rec.finish()?)?;
    let gap = longest.unwrap_or((t0, t3));
    let phase = phase_of(gap, t1);
    let tid = match phase {
        Phase::Exit => container_tid,
        Phase::Removal => harness_tid,
    };
    let mut p = reclaim_profile::summarise(&samples, gap, (t0, t3), Some(tid));
    // The whole teardown has two tasks: its stacks are all the CPU's.
    p.reclaim.reclaimer = None;
    Ok((p, phase))
}

/// The two phases of a teardown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Phase {
    /// The container's last process exits: the overlay and the namespace go.
    Exit,
    /// The harness removes the snapshot (upper and work directories).
    Removal,
}

impl Phase {
    /// The task that runs it, for people.
    pub(crate) fn task(self) -> &'static str {
        match self {
            Phase::Exit => "exiting container",
            Phase::Removal => "snapshot-removing harness",
        }
    }
}

/// The phase that holds most of the gap `(start, end)`: the exit up to
/// `split`, the removal after it.
pub(crate) fn phase_of((start, end): (u64, u64), split: u64) -> Phase {
    let before = split.clamp(start, end) - start;
    let after = end - split.clamp(start, end);
    if before >= after { Phase::Exit } else { Phase::Removal }
}

/// Waits for container `r`'s workload and tears it down: one container at
/// a time.
pub(crate) fn live(r: Running, mut output: Output, index: u64, w: &Watch) -> Result<ContainerRun> {
    let report = child::receive_ready(&mut output);
    tear_down(r, report, output, index, w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_belongs_to_the_phase_it_lies_in() {
        assert_eq!(phase_of((10, 20), 30), Phase::Exit, "all in the exit");
        assert_eq!(phase_of((10, 20), 5), Phase::Removal, "all in the removal");
        assert_eq!(phase_of((10, 20), 18), Phase::Exit, "mostly the exit");
        assert_eq!(phase_of((10, 20), 12), Phase::Removal, "mostly the removal");
    }
}
