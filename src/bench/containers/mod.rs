//! `dentrylab containers`: a node's life in fast-forward. `--count`
//! containers, `--parallel` at a time, each in a mount namespace of its
//! own with an overlay of one shared image (the lower layer, on the
//! sandbox's disk filesystem) and a snapshot of its own (upper and work
//! directories on the same filesystem, as containerd's overlayfs
//! snapshotter keeps them). Each runs `--workload` for `--ops`
//! operations, then dies as a container does (its last process exits; the
//! overlay goes with the namespace), and its snapshot is removed as a
//! runtime removes it.
//!
//! Around each teardown (exit, reap, snapshot removal) the existing probe
//! watches the teardown CPU; dentry-state is read around the workload and
//! around the teardown. Those counters are machine-wide, so at the end the
//! disk filesystem, which only this run uses, is unmounted (untimed): what
//! that frees is what the containers left on the host, and nobody else's.
//!
//! In: [`Options`], the calibration's edge, the sandbox. Out:
//! [`ContainersResult`]. Imported by `cli::handlers`, `report` and
//! `bench::mitigate` (which runs the same container life in a loop, from
//! `bench::common::container`, which holds the harness: `child`, the
//! hidden `__container-child` subcommand's side, and `life`).

mod args;
mod census;
pub(crate) mod command;
pub(crate) mod profile;
pub(crate) mod render;
pub(crate) mod summary;

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::bench::common::container::child::{self, Output, Report};
use crate::bench::common::container::life::{self, Running, Watch};
pub(crate) use crate::bench::common::container::{ContainerRun, MAX_OPS};
use crate::env::Environment;
use crate::error::UsageError;
use crate::procfs::ProcRoot;
use crate::procfs::dentry_state::DentryState;
use crate::sandbox::{Capacity, FsType, Privilege, Sandbox};
use crate::sys;
use crate::workload::container::{self as work, Mix};
pub(crate) use args::Args;
pub(crate) use command::Containers;
pub(crate) use summary::{Projection, Summary};

pub(crate) const DEFAULT_COUNT: &str = "100";
pub(crate) const MAX_COUNT: u64 = 100_000;
pub(crate) const MAX_PARALLEL: u32 = 64;
pub(crate) const DEFAULT_OPS: &str = "10k";
/// Containers started per hour for the projection (`--rate`).
pub(crate) const DEFAULT_RATE_PER_HOUR: f64 = 60.0;
/// Memory per dentry a container may leave (a negative dentry and its
/// share of the slab), and what its live files cost while it runs.
const BYTES_PER_LEFT_DENTRY: u64 = 260;
const BYTES_PER_LIVE_FILE: u64 = 1200;
/// The quiet windows read around the witness umount, and the change in
/// them (or in the filesystem's positive dentries) that counts as noise.
const WITNESS_QUIET: Duration = Duration::from_millis(50);
const WITNESS_SLACK: i64 = 32;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Options {
    pub count: u64,
    pub parallel: u32,
    pub mix: Mix,
    pub ops: u64,
    pub rate_per_hour: f64,
    /// The host's disk filesystem, holding the image and the snapshots.
    pub fs: FsType,
    pub cpu: usize,
    pub probe_interval_us: u64,
    pub force: bool,
    /// `--profile`: perf call graphs of the teardown CPU during each teardown.
    #[serde(default)]
    pub profile: bool,
    /// `--census`: check the image's directories by a census at the end.
    #[serde(default)]
    pub census: bool,
}

/// What the projection needs from the calibration `status` uses.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Edge {
    /// Which calibration (for people).
    pub calibration: String,
    /// The dentry count at which a reclaim trips the watchdog, and the
    /// range the calibration allows (equal when it gives no interval).
    pub lockup_dentries: Option<f64>,
    pub lockup_dentries_low: Option<f64>,
}

/// What the disk filesystem still held when the last container was gone,
/// counted by unmounting it (it holds only the image and the snapshots).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Witness {
    pub dentries: i64,
    pub negative: i64,
    /// Directory dentries of the image itself, in that count.
    pub image_dentries: u64,
    pub umount_seconds: f64,
    /// The largest change of the counters over the quiet windows either
    /// side of the umount (other activity on the machine).
    #[serde(default)]
    pub noise: i64,
    /// True when the windows were not quiet or the counts disagree: the
    /// per-container medians stand in for the witness.
    #[serde(default)]
    pub disturbed: bool,
}

impl Witness {
    /// The filesystem's dentries include its negative ones: when the
    /// nr_dentry drop is the smaller, other processes allocated dentries
    /// during the umount, and the negative drop is the better bound.
    pub(crate) fn dentries_counted(&self) -> i64 {
        self.dentries.max(self.negative)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ContainersResult {
    #[serde(flatten)]
    pub header: crate::result::Header,
    pub environment: Environment,
    pub options: Options,
    pub sandbox: Privilege,
    pub containers: Vec<ContainerRun>,
    pub witness: Witness,
    pub summary: Summary,
    pub projection: Projection,
    /// With `--profile`: the longest teardown stretch's stacks and the top
    /// stacks over all teardowns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<profile::ContainersProfile>,
    pub wall_seconds: f64,
    pub notes: Vec<String>,
    /// `--census`: what a census found in the image's directories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub census: Option<crate::census::workload::Named>,
}

/// Rejects bad input before anything is created (exit 2).
pub(crate) fn validate(opts: &Options) -> Result<()> {
    if opts.count == 0 || opts.count > MAX_COUNT {
        bail!(UsageError(format!("--count {}: give from 1 to {MAX_COUNT} containers", opts.count)));
    }
    if opts.parallel == 0 || opts.parallel > MAX_PARALLEL {
        bail!(UsageError(format!("--parallel {}: give from 1 to {MAX_PARALLEL} containers at a time", opts.parallel)));
    }
    if opts.ops > MAX_OPS {
        bail!(UsageError(format!(
            "--ops {}: at most {} operations per container",
            opts.ops,
            crate::size::human(MAX_OPS)
        )));
    }
    if !(opts.rate_per_hour.is_finite() && opts.rate_per_hour > 0.0) {
        bail!(UsageError(format!("--rate {}: give a positive number of containers per hour", opts.rate_per_hour)));
    }
    if !opts.fs.is_disk() {
        bail!(UsageError(format!(
            "--fs {}: the image and the snapshots live on the host's disk filesystem: use ext4 or xfs \
             (tmpfs keeps no negative dentries, so it would hide what containers leave)",
            opts.fs
        )));
    }
    Ok(())
}

/// The memory a run may take: what every container may leave, plus what
/// the running ones hold.
pub(crate) fn memory_estimate(opts: &Options) -> u64 {
    let left = opts.count.saturating_mul(opts.ops).saturating_mul(BYTES_PER_LEFT_DENTRY);
    let live = u64::from(opts.parallel)
        .saturating_mul(opts.ops)
        .saturating_mul(BYTES_PER_LIVE_FILE + 2 * BYTES_PER_LEFT_DENTRY);
    left.saturating_add(live)
}

pub(crate) fn preflight(opts: &Options, proc: &ProcRoot) -> Result<()> {
    crate::bench::common::check_memory(
        &format!("{} containers of {} operations", opts.count, crate::size::human(opts.ops)),
        memory_estimate(opts),
        &format!(" (≈{BYTES_PER_LEFT_DENTRY} bytes per dentry a container may leave)"),
        "run fewer containers or fewer --ops, or pass --force",
        opts.force,
        proc,
    )
}

/// The reader threads hand the container's output back with its report.
type Ready = (u32, Result<Report>, Output);

/// Runs the containers. The sandbox must already be entered.
pub(crate) fn run(
    opts: &Options,
    edge: &Edge,
    sandbox: &mut Sandbox,
    proc: &ProcRoot,
    announce: &dyn Fn(&str),
) -> Result<ContainersResult> {
    // The header says when the run started, not when it ended.
    let header = crate::result::Header::new("containers");
    let environment = Environment::capture(proc);
    let wall = Instant::now();
    let live = u64::from(opts.parallel).saturating_mul(opts.ops);
    let need = Capacity { entries: live + 64 * opts.count + 1024, inodes: live + 8 * opts.count + 1024 };
    let mut disk = sandbox.mount_remountable(opts.fs, &need)?;
    let image = disk.path().join("image");
    let snapshots = disk.path().join("snapshots");
    work::prepare_image(&image)?;
    std::fs::create_dir(&snapshots).with_context(|| format!("cannot create {}", snapshots.display()))?;
    disk.sync()?;
    // Start from a cold cache: from here on, every dentry of this
    // filesystem was looked up by the containers (or the harness).
    disk.remount()?;
    let image_dentries = count_dirs(&image)?;

    let (tx, rx) = mpsc::channel::<Ready>();
    let mut running: HashMap<u32, Running> = HashMap::new();
    let mut runs: Vec<ContainerRun> = Vec::new();
    let mut next: u64 = 0;
    let mut notes = Vec::new();
    let scratch = sandbox.scratch().to_path_buf();
    let profiling =
        crate::bench::common::profile::available_for(opts.profile, opts.cpu, &scratch, "teardown", &mut notes);
    let watch = Watch {
        cpu: opts.cpu,
        interval: Duration::from_micros(opts.probe_interval_us),
        all: sys::allowed_cpus()?,
        proc,
        profile: profiling.then_some(scratch.as_path()),
    };
    let outcome = (|| -> Result<()> {
        while (runs.len() as u64) < opts.count {
            while running.len() < opts.parallel as usize && next < opts.count {
                let id = next as u32;
                next += 1;
                let r = start(id, opts, &image, &snapshots, sandbox, &tx)?;
                running.insert(id, r);
            }
            let (id, report, output) = rx.recv().context("every container reader is gone")?;
            let r = running.remove(&id).context("internal error: a report from an unknown container")?;
            let run = life::tear_down(r, report, output, runs.len() as u64, &watch)?;
            runs.push(run);
            let done = runs.len() as u64;
            if done.is_multiple_of(100) || done == opts.count {
                announce(&format!("containers: {done} of {} torn down", opts.count));
            }
        }
        Ok(())
    })();
    if let Err(e) = outcome {
        for (_, r) in running.drain() {
            r.container.kill();
        }
        return Err(e);
    }
    let wall_seconds = wall.elapsed().as_secs_f64();
    let census = opts.census.then(|| census::check(&image, &opts.mix, opts.ops, &runs, proc)).transpose()?;
    if let Some(n) = &census {
        notes.push(n.line());
    }

    // The witness: unmount the run's own filesystem and see what goes.
    // The counters are machine-wide: they are read twice on each side, a
    // quiet-window apart, and the witness is trusted only when both
    // windows were quiet and the counts agree with each other.
    let quiet0 = proc.dentry_state()?;
    std::thread::sleep(WITNESS_QUIET);
    let before_umount = proc.dentry_state()?;
    let umount = disk.umount()?;
    let after_umount = proc.dentry_state()?;
    std::thread::sleep(WITNESS_QUIET);
    let quiet1 = proc.dentry_state()?;
    let dentries = before_umount.nr_dentry as i64 - after_umount.nr_dentry as i64;
    let negative = before_umount.nr_negative as i64 - after_umount.nr_negative as i64;
    let drift = |a: &DentryState, b: &DentryState| {
        (a.nr_dentry as i64 - b.nr_dentry as i64).abs().max((a.nr_negative as i64 - b.nr_negative as i64).abs())
    };
    let noise = drift(&quiet0, &before_umount).max(drift(&after_umount, &quiet1));
    let positives = dentries - negative;
    let disturbed = noise > WITNESS_SLACK + dentries.abs() / 100
        || positives < -WITNESS_SLACK
        || positives > image_dentries as i64 + WITNESS_SLACK;
    let witness =
        Witness { dentries, negative, image_dentries, umount_seconds: umount.as_secs_f64(), noise, disturbed };
    let summary = summary::summarise(&runs, &witness);
    let projection = summary::project(&summary, edge, opts.rate_per_hour, after_umount.nr_dentry);
    notes.extend(summary::notes(opts, &summary, &witness));
    let profile = profile::summarise(&runs);
    if let Some(line) = profile.as_ref().and_then(|p| p.verdict.clone()) {
        notes.push(line);
    }
    Ok(ContainersResult {
        header,
        environment,
        options: opts.clone(),
        sandbox: sandbox.privilege,
        containers: runs,
        witness,
        summary,
        projection,
        profile,
        wall_seconds,
        notes,
        census,
    })
}

/// Spawns container `id` and starts a thread that waits for its first report.
fn start(
    id: u32,
    opts: &Options,
    image: &std::path::Path,
    snapshots: &std::path::Path,
    sandbox: &mut Sandbox,
    tx: &mpsc::Sender<Ready>,
) -> Result<Running> {
    let merged = sandbox.mount_point()?;
    let (running, mut output) = life::spawn(id, opts.mix, opts.ops, opts.cpu, image, snapshots, merged)?;
    let tx = tx.clone();
    std::thread::Builder::new()
        .name(format!("container-{id}"))
        .spawn(move || {
            let report = child::receive_ready(&mut output);
            let _ = tx.send((id, report, output));
        })
        .context("cannot start a thread to wait for a container")?;
    Ok(running)
}

/// Directories under (and including) `dir`: the dentries the image has.
fn count_dirs(dir: &std::path::Path) -> Result<u64> {
    let mut n = 1;
    for e in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let e = e?;
        if e.file_type()?.is_dir() {
            n += count_dirs(&e.path())?;
        }
    }
    Ok(n)
}
