//! `dentrylab create`: only generate dentries into a sandbox and hold them,
//! so a person can experiment (`nsenter` into the sandbox, watch
//! dentry-state, try a reclaim path by hand). Ctrl-C, SIGTERM or the end of
//! `--hold` reclaims them with a timed umount. With `--fs overlay` the
//! dentries are made through an overlay, and the overlay, the upper and
//! the lower filesystem are then unmounted in turn, each counted and
//! probed ([`crate::bench::layers`]).

mod args;
pub(crate) mod command;
pub(crate) mod memcg;
mod render;

pub(crate) use args::Args;
pub(crate) use command::Create;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::bench::layers;
use crate::env::Environment;
use crate::probe::counters::Counts;
use crate::procfs::ProcRoot;
use crate::sandbox::{FsType, Privilege, Sandbox};
use crate::size::human;
use crate::workload::{self, CreateSpec, Kind, Layout, Progress};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Options {
    pub count: u64,
    pub kind: Kind,
    pub layout: Layout,
    pub threads: usize,
    pub fs: FsType,
    /// None: until a signal.
    pub hold_seconds: Option<u64>,
    /// `--fs overlay`: create through an overlay over these filesystems
    /// (`fs` is then the lower's type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlay: Option<crate::sandbox::overlay::Stack>,
    /// `--memcg`: create inside a memory cgroup of the run's own.
    #[serde(default)]
    pub memcg: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Reclaim {
    pub reason: String,
    pub umount_seconds: f64,
    pub reclaimed: i64,
    pub after: Counts,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CreateResult {
    #[serde(flatten)]
    pub header: crate::result::Header,
    pub environment: Environment,
    pub options: Options,
    pub sandbox: Privilege,
    pub pid: u32,
    pub path: String,
    pub before: Counts,
    pub after_create: Counts,
    pub create: workload::CreateOutcome,
    pub created: i64,
    pub held_seconds: f64,
    pub reclaim: Option<Reclaim>,
    /// With `--fs overlay`: the overlay, upper and lower filesystems
    /// unmounted in turn, what each freed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<crate::bench::layers::StackTeardown>,
    /// With `--memcg`: the run's cgroup once the dentries were made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memcg: Option<memcg::Held>,
}

/// Creates, prints where the dentries are (via `announce`), holds, reclaims.
pub(crate) fn run(
    opts: &Options,
    sandbox: &mut Sandbox,
    proc: &ProcRoot,
    interrupted: &Arc<AtomicBool>,
    announce: &dyn Fn(&str),
    cgroup: Option<&crate::sandbox::cgroup::MemCgroup>,
) -> Result<CreateResult> {
    // The header says when the run started, not when it ended.
    let header = crate::result::Header::new("create");
    let environment = Environment::capture(proc);
    let spec = CreateSpec { kind: opts.kind, layout: opts.layout, count: opts.count, threads: opts.threads };
    let stack = opts.overlay.map(|st| layers::mount_stack(sandbox, st, &spec)).transpose()?;
    let mut mount = match &stack {
        Some(st) => sandbox.mount_overlay_here(&st.layers)?,
        None => sandbox.mount(opts.fs, &spec.capacity())?,
    };
    let before = Counts::read(proc)?;
    let progress = Arc::new(Progress::default());
    let watcher_progress = Arc::clone(&progress);
    let int2 = Arc::clone(interrupted);
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    // Forward Ctrl-C to the generator threads.
    let fwd = std::thread::spawn(move || {
        while !stop2.load(Ordering::Relaxed) {
            if int2.load(Ordering::Relaxed) {
                watcher_progress.abort.store(true, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let create = workload::with_progress(opts.count, &format!("create {}", human(opts.count)), &progress, || {
        workload::create(mount.path(), &spec, &progress)
    });
    stop.store(true, Ordering::Relaxed);
    let _ = fwd.join();
    let create = create.context("creating dentries")?;
    let after_create = Counts::read(proc)?;
    let created = after_create.dentry_state.nr_dentry as i64 - before.dentry_state.nr_dentry as i64;
    let path = mount.path().display().to_string();
    announce(&format!(
        "created {} {} entries ({} new dentries by dentry-state) at {:.0}/s in {} (mount namespace of pid {}: \
         nsenter -t {} -m ls {})",
        crate::size::grouped(create.entries),
        opts.kind.name(),
        crate::size::grouped(created.max(0) as u64),
        create.rate_per_second,
        path,
        std::process::id(),
        std::process::id(),
        path
    ));
    let memcg = cgroup.map(|c| memcg::Held::read(c, create.entries)).transpose()?;
    if let Some(m) = &memcg {
        announce(&m.line());
    }
    let held = Instant::now();
    let reason = loop {
        if interrupted.load(Ordering::Relaxed) {
            break "signal";
        }
        if let Some(h) = opts.hold_seconds {
            if held.elapsed() >= Duration::from_secs(h) {
                break "hold elapsed";
            }
        } else {
            announce_once(announce, "holding; press Ctrl-C to reclaim with umount and exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let held_seconds = held.elapsed().as_secs_f64();
    let (took, layers) = match (stack, opts.overlay) {
        (Some(st), Some(which)) => {
            let cpu = *crate::sys::allowed_cpus()?.first().context("no CPU is available to this process")?;
            let top = layers::umount_counted("overlay", "overlay", &mut mount, proc, cpu)?;
            let took = Duration::from_secs_f64(top.umount_seconds);
            let rest = layers::unmount_in_turn(st, proc, cpu)?;
            (
                took,
                Some(layers::StackTeardown { stack: which, cpu, layers: std::iter::once(top).chain(rest).collect() }),
            )
        }
        _ => (mount.umount()?, None),
    };
    let after = Counts::read(proc)?;
    Ok(CreateResult {
        header,
        environment,
        options: opts.clone(),
        sandbox: sandbox.privilege,
        pid: std::process::id(),
        path,
        before,
        after_create: after_create.clone(),
        create,
        created,
        held_seconds,
        reclaim: Some(Reclaim {
            reason: reason.into(),
            umount_seconds: took.as_secs_f64(),
            reclaimed: match layers.as_ref().and_then(|l| l.layer("overlay")) {
                // The overlay's own umount; `after` also lacks the layers.
                Some(top) => top.dentries,
                None => after_create.dentry_state.nr_dentry as i64 - after.dentry_state.nr_dentry as i64,
            },
            after,
        }),
        layers,
        memcg,
    })
}

fn announce_once(announce: &dyn Fn(&str), msg: &str) {
    static DONE: AtomicBool = AtomicBool::new(false);
    if !DONE.swap(true, Ordering::Relaxed) {
        announce(msg);
    }
}
