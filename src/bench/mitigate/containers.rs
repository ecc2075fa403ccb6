//! `mitigate --workload containers`: the life of `dentrylab containers`
//! (a container on an overlay of a shared image, its workload inside,
//! its teardown, its snapshot removed) over and over for the duration,
//! one container at a time, all of it inside the run's memory cgroup.
//!
//! A worker process (hidden subcommand [`WORKER_COMMAND`]) is started in
//! the cgroup, pinned to the probed CPU; the containers it spawns inherit
//! both. After each teardown it prints one JSON line ([`Line`]): the
//! operations done so far and the container's figures (created, freed,
//! left, the teardown's time and longest stretch, from its own probe on
//! the same CPU during the teardown only).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::bench::common::container::ContainerRun;
use crate::bench::common::container::life::{self, Watch};
use crate::probe::gap::DEFAULT_INTERVAL;
use crate::procfs::ProcRoot;
use crate::sys;
use crate::workload::container::{self as work, Mix};

/// Hidden subcommand of the worker that runs the containers.
pub(crate) const WORKER_COMMAND: &str = "__mitigate-containers";

/// The containers worker's internal command.
pub(crate) const WORKER_ENTRY: crate::sys::internal::Entry<crate::sys::internal::SpecArg> =
    crate::sys::internal::Entry {
        name: WORKER_COMMAND,
        about: "The containers worker of 'mitigate --workload containers'",
        aliases: &[],
        run: |a| worker_main(&a.spec),
    };
/// The mix when `--container-workload` is not given (as `containers --workload mixed`).
pub(crate) const DEFAULT_MIX: &str = "mixed";
/// Operations per container when `--container-ops` is not given: a
/// container's life is then well under a second, so a run sees many.
pub(crate) const DEFAULT_OPS: &str = "1k";
/// Cgroup headroom over the set-up usage for the default limit: the
/// container processes (copies of dentrylab) and their overlays on top of
/// what the steady workloads need.
pub(crate) const HEADROOM_BYTES: u64 = 64 << 20;

/// `--container-workload` and `--container-ops`, with their defaults;
/// given with another workload, they are a mistake (exit 2).
pub(crate) fn options(workload: super::Workload, mix: Option<Mix>, ops: Option<u64>) -> Result<(Mix, u64)> {
    if workload != super::Workload::Containers {
        let given = if mix.is_some() { Some("--container-workload") } else { ops.map(|_| "--container-ops") };
        if let Some(flag) = given {
            anyhow::bail!(crate::error::UsageError(format!(
                "{flag}: only for --workload containers (not {})",
                workload.name()
            )));
        }
    }
    let mix = match mix {
        Some(m) => m,
        None => DEFAULT_MIX.parse().map_err(anyhow::Error::msg)?,
    };
    Ok((
        mix,
        match ops {
            Some(o) => o,
            None => crate::size::parse_count(DEFAULT_OPS).map_err(anyhow::Error::msg)?,
        },
    ))
}

/// What the worker is told.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Spec {
    pub root: PathBuf,
    pub mix: Mix,
    pub ops: u64,
    pub cpu: usize,
}

/// One line of the worker's output.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Line {
    /// Operations done by the containers torn down so far.
    pub ops: u64,
    pub container: ContainerRun,
}

/// The worker's command line.
pub(crate) fn command(spec: &Spec) -> Result<std::process::Command> {
    let mut c = std::process::Command::new(sys::SELF_EXE);
    c.arg(crate::sys::INTERNAL_COMMAND).arg(WORKER_COMMAND).arg(serde_json::to_string(spec)?);
    Ok(c)
}

/// Reads the worker's lines: the operations into `ops`, the containers into `runs`.
pub(crate) fn read(out: impl std::io::Read, ops: Arc<AtomicU64>, runs: Arc<Mutex<Vec<ContainerRun>>>) {
    for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
        if let Ok(l) = serde_json::from_str::<Line>(&line) {
            ops.store(l.ops, Ordering::Relaxed);
            runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(l.container);
        }
    }
}

/// The worker: lays out the image in `root`, then runs containers one
/// after another until it is killed.
pub(crate) fn worker_main(spec: &str) -> Result<()> {
    sys::die_with_parent()?;
    let spec: Spec = serde_json::from_str(spec).context("bad containers worker spec")?;
    let image = spec.root.join("image");
    let snapshots = spec.root.join("snapshots");
    let merged = spec.root.join("merged");
    work::prepare_image(&image)?;
    for d in [&snapshots, &merged] {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    let proc = ProcRoot::default();
    let watch =
        Watch { cpu: spec.cpu, interval: DEFAULT_INTERVAL, all: sys::allowed_cpus()?, proc: &proc, profile: None };
    let mut ops = 0u64;
    let mut out = std::io::stdout().lock();
    for index in 0u64.. {
        let id = u32::try_from(index).context("too many containers")?;
        let root = merged.join(id.to_string());
        std::fs::create_dir(&root).with_context(|| format!("cannot create {}", root.display()))?;
        let (r, output) = life::spawn(id, spec.mix, spec.ops, spec.cpu, &image, &snapshots, root)?;
        let run = life::live(r, output, index, &watch)?;
        ops += run.outcome.new_names();
        if writeln!(out, "{}", serde_json::to_string(&Line { ops, container: run })?).and_then(|_| out.flush()).is_err()
        {
            // The parent is gone.
            return Ok(());
        }
    }
    Ok(())
}
