//! One run of one combination: a fresh filesystem and memory cgroup, the
//! workload started inside the cgroup and pinned to the probed CPU,
//! samples every second, then everything stopped and removed.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::{Options, Sample, Workload};
use crate::bench::common::container::ContainerRun;
use crate::bench::common::mariadb::{self, Server};
use crate::probe::gap::{DEFAULT_INTERVAL, GapProbe};
use crate::probe::oom::LogMark;
use crate::procfs::ProcRoot;
use crate::sandbox::cgroup::MemCgroup;
use crate::sandbox::{Capacity, Sandbox};
use crate::sys;

/// Hidden subcommand of the child that runs a steady workload.
pub(crate) const WORKER_COMMAND: &str = "__mitigate-worker";

/// The workload process's internal command.
pub(crate) const WORKER_ENTRY: crate::sys::internal::Entry<super::WorkerArgs> = crate::sys::internal::Entry {
    name: WORKER_COMMAND,
    about: "The workload process of 'mitigate'",
    aliases: &[],
    run: |a| a.run(),
};
/// How often the worker reports its operation count.
pub(crate) const WORKER_REPORT_EVERY: Duration = Duration::from_millis(100);
/// The default `--memory-limit` is the cgroup's usage once the workload is
/// set up, plus a headroom for the workload's own memory, plus what the
/// workload's kernel memory grows by over the whole run at
/// [`GROWTH_SAFETY`] times the rate measured here
/// ([`growth_bytes_per_second`]): so a default run does not reach its limit
/// and runs to its duration. A limit that is reached may OOM-kill the
/// workload whatever its size (docs/memory-limit.md): a tighter limit is
/// for the user to ask, and gets the kernel's finding.
/// The headroom of the steady workloads: 128 MiB, twice the 64 MiB of
/// kernel memory a loaded run of `lookups` on tmpfs (which keeps no
/// dentries) was seen to hold, freed objects still charged until their RCU
/// grace period (docs/memory-limit.md); a 2 s temp-tables run reached a
/// 32 MiB headroom on a loaded machine.
pub(crate) const DEFAULT_HEADROOM_BYTES: u64 = 128 << 20;
/// How much faster than the measured rate a machine may grow dentries
/// before the default limit is reached (a faster or idler machine).
pub(crate) const GROWTH_SAFETY: f64 = 2.0;
/// The default limit is at most this share of MemAvailable when the run starts.
pub(crate) const MAX_DEFAULT_SHARE_OF_AVAILABLE: f64 = 0.5;
/// For mariadb, the server's own memory grows after set-up (the buffer
/// pool fills, each connection's in-memory temporary table grows up to
/// min(tmp_table_size, max_heap_table_size)): its headroom is this plus
/// one such table per client.
pub(crate) const MARIADB_HEADROOM_BYTES: u64 = 160 << 20;
/// MariaDB's default tmp_table_size and max_heap_table_size.
const MARIADB_HEAP_TABLE_BYTES: u64 = 16 << 20;

/// The cgroup's kernel-memory growth per second of each workload with no
/// limit in the way (for mariadb: its usage, page cache and buffer pool
/// included, not only kernel memory): the largest rate seen in 10 default
/// runs of 10 s each on the project's idle VM (6.18, 2 vCPUs), rounded up.
/// temp-tables grows about 21 MiB/s, but the first run on a freshly booted
/// machine reached 47 MiB/s (470 MiB in 10 s, its cgroup's kernel memory;
/// the nine after it 199–216 MiB); the rate used is that one. docs/mitigate.md
/// has the figures and the commands.
pub(crate) fn growth_bytes_per_second(w: Workload) -> u64 {
    use crate::bench::mitigate::steady::Steady;
    match w {
        Workload::Steady(Steady::Lookups) => 160 << 20,
        Workload::Steady(Steady::Files) => 170 << 20,
        Workload::Steady(Steady::TempTables) => 48 << 20,
        Workload::Containers => 9 << 20,
        Workload::Mariadb => MARIADB_GROWTH_BYTES_PER_SECOND,
    }
}

/// See [`growth_bytes_per_second`].
const MARIADB_GROWTH_BYTES_PER_SECOND: u64 = 32 << 20;

/// The headroom of the default limit (see the constants above).
pub(crate) fn default_headroom(opts: &Options, server_options: &[(String, String)]) -> u64 {
    let own = match opts.workload {
        Workload::Steady(_) => DEFAULT_HEADROOM_BYTES,
        Workload::Containers => super::containers::HEADROOM_BYTES,
        Workload::Mariadb => {
            let size = |name: &str| {
                server_options
                    .iter()
                    .find(|(k, _)| k.replace('-', "_") == name)
                    .and_then(|(_, v)| super::knobs::parse_memory(v).ok())
                    .unwrap_or(MARIADB_HEAP_TABLE_BYTES)
            };
            let table = size("tmp_table_size").min(size("max_heap_table_size"));
            MARIADB_HEADROOM_BYTES + opts.clients as u64 * table
        }
    };
    own + (growth_bytes_per_second(opts.workload) as f64 * opts.duration_seconds * GROWTH_SAFETY) as u64
}

pub(crate) use super::oom::OomKilled;

/// A limit at or below what the workload uses once set up: the run was
/// not started (the other combinations go on).
#[derive(Debug)]
pub(crate) struct BelowSetup(pub String);

impl std::fmt::Display for BelowSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BelowSetup {}

/// How many processes the cgroup's OOM killer killed.
fn oom_kills(cg: &MemCgroup) -> u64 {
    let f = if cg.version == 2 { "memory.events" } else { "memory.oom_control" };
    let text = std::fs::read_to_string(cg.dir.join(f)).unwrap_or_default();
    text.lines().find_map(|l| l.strip_prefix("oom_kill ")).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}
/// Inodes and entries the filesystem is made for (`files` keeps every file).
const FS_CAPACITY: u64 = 4_000_000;
/// drop_caches: 2 frees reclaimable slab (dentries and inodes).
const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// What one run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunResult {
    pub rep: u32,
    pub memory_limit_bytes: u64,
    /// Cgroup usage when the limit was set (the workload set up).
    pub setup_usage_bytes: u64,
    /// The cgroup hit its limit at least once (memory.failcnt > 0).
    pub limit_reached: bool,
    /// mariadb: seconds to install the datadir and to start the server.
    pub server_install_seconds: Option<f64>,
    pub server_start_seconds: Option<f64>,
    /// mariadb: failed queries (the first one's message in `notes`).
    pub query_errors: u64,
    /// Dentries (and of them negative) the run's filesystem still had in
    /// the cache at the end: what its umount freed.
    pub fs_dentries_at_end: i64,
    pub fs_negative_at_end: i64,
    /// The most nr_dentry or nr_negative moved, machine-wide, over an
    /// interval as long as the umount right after it: how much other
    /// processes may have disturbed the two counts above.
    #[serde(default)]
    pub fs_count_noise: i64,
    pub samples: Vec<Sample>,
    /// Each drop_caches write: seconds from the start, and how long it took.
    pub drops: Vec<(f64, f64)>,
    /// containers: each container torn down in the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<ContainerRun>,
    pub notes: Vec<String>,
}

/// The cgroup's counters now.
fn usage(cg: &MemCgroup) -> u64 {
    cg.usage_bytes().unwrap_or(0)
}

fn failcnt(cg: &MemCgroup) -> u64 {
    let (f, key) = if cg.version == 2 { ("memory.events", Some("max ")) } else { ("memory.failcnt", None) };
    let text = std::fs::read_to_string(cg.dir.join(f)).unwrap_or_default();
    match key {
        Some(k) => text.lines().find_map(|l| l.strip_prefix(k)).and_then(|v| v.trim().parse().ok()).unwrap_or(0),
        None => text.trim().parse().unwrap_or(0),
    }
}

/// A running workload, however it is driven.
enum Running {
    Worker {
        child: Child,
        reader: std::thread::JoinHandle<()>,
    },
    Containers {
        child: Child,
        reader: std::thread::JoinHandle<()>,
        runs: Arc<Mutex<Vec<ContainerRun>>>,
    },
    Server {
        server: Arc<Server>,
        clients: Vec<std::thread::JoinHandle<Result<mariadb::ClientCounts>>>,
        stop: Arc<AtomicBool>,
    },
}

/// Whether the workload stopped by itself.
fn stopped_early(r: &mut Running) -> bool {
    match r {
        Running::Worker { child, .. } | Running::Containers { child, .. } => matches!(child.try_wait(), Ok(Some(_))),
        Running::Server { clients, .. } => clients.iter().any(|c| c.is_finished()),
    }
}

/// One sample: counters now, `ops` since the start, the probe's longest
/// gap over the second that ends here, drops so far.
fn read_sample(
    proc: &ProcRoot,
    cg: &MemCgroup,
    seconds: f64,
    ops: u64,
    max_gap_seconds: f64,
    drops: usize,
) -> Result<Sample> {
    let d = proc.dentry_state()?;
    Ok(Sample {
        seconds,
        ops,
        nr_dentry: d.nr_dentry,
        nr_unused: d.nr_unused,
        nr_negative: d.nr_negative,
        cgroup_kernel_bytes: cg.kernel_bytes().unwrap_or(0),
        cgroup_usage_bytes: cg.usage_bytes().unwrap_or(0),
        max_gap_seconds,
        drops: drops as u32,
    })
}

/// Runs the combination once. `sysctls` must already be applied.
pub(crate) fn run(
    opts: &Options,
    server_options: &[(String, String)],
    drop_every: Option<f64>,
    rep: u32,
    sandbox: &mut Sandbox,
    proc: &ProcRoot,
) -> Result<RunResult> {
    let mut mount = sandbox.mount(opts.fs, &Capacity { entries: FS_CAPACITY, inodes: FS_CAPACITY })?;
    let cg = sandbox.memcg()?;
    // The kernel log from here on: an OOM report of this cgroup is read from it.
    let mut mark = LogMark::now();
    let cx = Ctx { opts, server_options, proc, mount: &mount, cg: &cg };
    let mut r = measure(&cx, drop_every, rep, sandbox);
    let killed = oom_kills(&cg);
    // Killed: the kernel's report and the counters, before the cgroup goes.
    let mut oom = (killed > 0).then(|| super::oom::diagnose(rep, killed, &cg, &mut mark, proc));
    cg.kill_all();
    // Its processes gone, nothing holds the run's filesystem (a container's
    // mounts) and its umount frees every dentry it has.
    if !cg.wait_empty(Duration::from_secs(10)) {
        bail!("the workload's processes in {} did not exit within 10 s of SIGKILL", cg.dir.display());
    }
    // What the run's filesystem holds in the cache at the end: what its
    // umount frees (machine-wide counters, over the few ms of the umount).
    // The umount comes before the cgroup's removal: the dentries charged to
    // the cgroup are freed with it, and no removed (offline) cgroup is left
    // holding them for the next run.
    if r.is_ok() || oom.is_some() {
        let before = proc.dentry_state()?;
        let t = Instant::now();
        mount.umount()?;
        let after = proc.dentry_state()?;
        // How far the machine-wide counters move on their own (other
        // processes) over as long again: the uncertainty of the counts.
        std::thread::sleep(t.elapsed().max(Duration::from_millis(5)));
        let later = proc.dentry_state()?;
        let noise = (later.nr_dentry as i64 - after.nr_dentry as i64)
            .abs()
            .max((later.nr_negative as i64 - after.nr_negative as i64).abs());
        let (d, n) =
            (before.nr_dentry as i64 - after.nr_dentry as i64, before.nr_negative as i64 - after.nr_negative as i64);
        if let Some(k) = oom.as_mut() {
            (k.fs_dentries, k.fs_negative) = (d, n);
        } else if let Ok(run) = r.as_mut() {
            (run.fs_dentries_at_end, run.fs_negative_at_end, run.fs_count_noise) = (d, n, noise);
        }
    }
    drop(mount);
    let removed = cg.remove();
    // A run the OOM killer entered did not run as asked, even if its
    // workload survived (mariadb's clients): it is a finding, not a row.
    removed?;
    match oom {
        Some(k) => Err(OomKilled(Box::new(k)).into()),
        None => r,
    }
}

/// What one run works in: its options, the machine, and the filesystem
/// and memory cgroup made for it.
struct Ctx<'a> {
    opts: &'a Options,
    server_options: &'a [(String, String)],
    proc: &'a ProcRoot,
    mount: &'a crate::sandbox::Mount,
    cg: &'a MemCgroup,
}

fn measure(cx: &Ctx<'_>, drop_every: Option<f64>, rep: u32, sandbox: &mut Sandbox) -> Result<RunResult> {
    let ops = Arc::new(AtomicU64::new(0));
    let mut notes = Vec::new();

    // Set up (the server, its tables) before the limit: the limit is for
    // the steady state, not for the install.
    let server = start_server(cx, sandbox)?;
    let server_install = server.as_ref().map(|s| s.install_seconds);
    let server_start = server.as_ref().map(|s| s.start_seconds);
    let setup_usage = usage(cx.cg);
    let limit = choose_limit(cx, setup_usage, &mut notes)?;
    cx.cg.set_limit(limit)?;

    let mut running = start_workload(cx, server, &ops)?;
    let t0 = Instant::now();
    let dropper = drop_every.map(|every| Dropper::start(every, cx.opts.cpu, t0));
    let (samples, worker_died) = sample_seconds(cx, t0, &ops, dropper.as_ref(), &mut running, &mut notes)?;
    let drops = match dropper {
        Some(d) => d.stop()?,
        None => Vec::new(),
    };
    let (query_errors, containers) = stop_workload(running, worker_died, cx.opts, &mut notes)?;
    Ok(RunResult {
        rep,
        memory_limit_bytes: limit,
        setup_usage_bytes: setup_usage,
        limit_reached: failcnt(cx.cg) > 0,
        server_install_seconds: server_install,
        server_start_seconds: server_start,
        query_errors,
        fs_dentries_at_end: 0,
        fs_negative_at_end: 0,
        fs_count_noise: 0,
        samples,
        drops,
        containers,
        notes,
    })
}

/// `mariadb`: the server, started in the cgroup and loaded with its tables.
fn start_server(cx: &Ctx<'_>, sandbox: &mut Sandbox) -> Result<Option<Server>> {
    match cx.opts.workload {
        Workload::Mariadb => {
            let bin = mariadb::locate()?;
            // The server runs as `mysql`: let it through the scratch tmpfs.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(sandbox.scratch(), std::fs::Permissions::from_mode(0o711))
                .context("cannot open the sandbox's scratch directory to the mysql user")?;
            let procs = cx.cg.procs_path();
            let dir = cx.mount.path().join("mariadb");
            let s = Server::start(&bin, &dir, &procs, Some(cx.opts.cpu), cx.server_options)?;
            mariadb::load(&s)?;
            Ok(Some(s))
        }
        Workload::Steady(_) | Workload::Containers => Ok(None),
    }
}

/// The memory limit: `--memory-limit`, or the default over the usage once
/// set up (cut to half of MemAvailable, said in `notes`). Below the set-up
/// usage: [`BelowSetup`].
fn choose_limit(cx: &Ctx<'_>, setup_usage: u64, notes: &mut Vec<String>) -> Result<u64> {
    let limit = match cx.opts.memory_limit {
        Some(l) => l,
        None => {
            let want = setup_usage + default_headroom(cx.opts, cx.server_options);
            let cap = cx.proc.meminfo().map(|m| (m.mem_available_bytes as f64 * MAX_DEFAULT_SHARE_OF_AVAILABLE) as u64);
            match cap {
                Ok(c) if c < want => {
                    notes.push(format!(
                        "the default limit ({}) was cut to half of MemAvailable ({}): the workload may reach it \
                         before --duration ends, and a reached limit may OOM-kill it; give a shorter --duration",
                        crate::size::bytes(want),
                        crate::size::bytes(c)
                    ));
                    c.max(setup_usage + DEFAULT_HEADROOM_BYTES)
                }
                _ => want,
            }
        }
    };
    if limit <= setup_usage {
        return Err(BelowSetup(format!(
            "limit {}: the workload already uses {} once set up; give more",
            crate::size::bytes(limit),
            crate::size::bytes(setup_usage)
        ))
        .into());
    }
    Ok(limit)
}

/// Starts the workload in the cgroup, pinned to the probed CPU, counting
/// its operations into `ops`.
fn start_workload(cx: &Ctx<'_>, server: Option<Server>, ops: &Arc<AtomicU64>) -> Result<Running> {
    let (opts, procs) = (cx.opts, cx.cg.procs_path());
    Ok(match (opts.workload, server) {
        (Workload::Steady(w), _) => {
            let root = cx.mount.path().join("work");
            std::fs::create_dir(&root).with_context(|| format!("cannot create {}", root.display()))?;
            let mut c = Command::new(sys::SELF_EXE);
            c.arg(crate::sys::INTERNAL_COMMAND)
                .arg(WORKER_COMMAND)
                .arg(w.name())
                .arg(&root)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            sys::command_in_cgroup(&mut c, &procs, Some(opts.cpu))?;
            let mut child = sys::spawn_tied(&mut c).context("cannot start the workload process")?;
            let out = child.stdout.take().context("workload stdout")?;
            let ops2 = Arc::clone(ops);
            let reader = std::thread::spawn(move || {
                for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                    if let Ok(n) = line.trim().parse::<u64>() {
                        ops2.store(n, Ordering::Relaxed);
                    }
                }
            });
            Running::Worker { child, reader }
        }
        (Workload::Containers, _) => {
            let root = cx.mount.path().join("containers");
            let spec =
                super::containers::Spec { root, mix: opts.container_mix, ops: opts.container_ops, cpu: opts.cpu };
            let mut c = super::containers::command(&spec)?;
            c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
            sys::command_in_cgroup(&mut c, &procs, Some(opts.cpu))?;
            let mut child = sys::spawn_tied(&mut c).context("cannot start the containers worker")?;
            let out = child.stdout.take().context("containers worker stdout")?;
            let runs = Arc::new(Mutex::new(Vec::new()));
            let (ops2, runs2) = (Arc::clone(ops), Arc::clone(&runs));
            let reader = std::thread::spawn(move || super::containers::read(out, ops2, runs2));
            Running::Containers { child, reader, runs }
        }
        (Workload::Mariadb, Some(server)) => {
            let stop = Arc::new(AtomicBool::new(false));
            let server = Arc::new(server);
            let clients = (0..opts.clients)
                .map(|_| {
                    let (s, stop, ops) = (Arc::clone(&server), Arc::clone(&stop), Arc::clone(ops));
                    std::thread::spawn(move || mariadb::drive(&s, &stop, &ops))
                })
                .collect();
            Running::Server { server, clients, stop }
        }
        (Workload::Mariadb, None) => unreachable!("the server was started above"),
    })
}

/// Writes 2 to drop_caches every `every` seconds from `t0`, pinned to the
/// probed CPU, so its own stretch shows; records when and how long.
struct Dropper {
    drops: Arc<Mutex<Vec<(f64, f64)>>>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<()>>,
}

impl Dropper {
    fn start(every: f64, cpu: usize, t0: Instant) -> Dropper {
        let drops = Arc::new(Mutex::new(Vec::<(f64, f64)>::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (drops2, stop2) = (Arc::clone(&drops), Arc::clone(&stop));
        let thread = std::thread::spawn(move || -> Result<()> {
            sys::pin_current_thread(cpu)?;
            let mut next = every;
            while !stop2.load(Ordering::Relaxed) {
                if t0.elapsed().as_secs_f64() < next {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
                let at = t0.elapsed().as_secs_f64();
                let t = Instant::now();
                std::fs::write(DROP_CACHES, "2").context("cannot write 2 to /proc/sys/vm/drop_caches")?;
                drops2.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((at, t.elapsed().as_secs_f64()));
                next += every;
            }
            Ok(())
        });
        Dropper { drops, stop, thread }
    }

    /// Drops so far.
    fn count(&self) -> usize {
        self.drops.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }

    /// Stops the thread; its error, or the drops it made.
    fn stop(self) -> Result<Vec<(f64, f64)>> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().map_err(|_| anyhow::anyhow!("the drop_caches thread panicked"))??;
        Ok(std::mem::take(&mut *self.drops.lock().unwrap_or_else(std::sync::PoisonError::into_inner)))
    }
}

/// One sample at the start and one a second for the duration, each with
/// the probe's longest gap over its second; stops early (and says true) if
/// the workload stopped by itself (ENOSPC, a failing server).
fn sample_seconds(
    cx: &Ctx<'_>,
    t0: Instant,
    ops: &AtomicU64,
    dropper: Option<&Dropper>,
    running: &mut Running,
    notes: &mut Vec<String>,
) -> Result<(Vec<Sample>, bool)> {
    let opts = cx.opts;
    let mut samples = Vec::new();
    let start_ops = ops.load(Ordering::Relaxed);
    samples.push(read_sample(cx.proc, cx.cg, 0.0, 0, 0.0, 0)?);
    let seconds = opts.duration_seconds.ceil() as u64;
    for s in 1..=seconds {
        let t_window = Instant::now();
        let probe = GapProbe::start(opts.cpu, DEFAULT_INTERVAL)?;
        let due = t0 + Duration::from_secs_f64((s as f64).min(opts.duration_seconds));
        while Instant::now() < due {
            std::thread::sleep(Duration::from_millis(20).min(due.saturating_duration_since(Instant::now())));
        }
        let window = t_window.elapsed().as_secs_f64();
        let gap = match probe.finish() {
            Ok(p) => p.max_gap_seconds,
            // The probe never ran on its CPU in the whole window: its longest
            // gap is at least the window (the workload or the kernel held the CPU).
            Err(e) if format!("{e:#}").contains("never woke up") => {
                if !notes.iter().any(|n: &String| n.starts_with("the latency probe never ran")) {
                    notes.push(format!(
                        "the latency probe never ran on CPU {} in a whole second (first at {s} s): that second's longest \
                         stretch is taken as the whole window",
                        opts.cpu
                    ));
                }
                window
            }
            Err(e) => return Err(e),
        };
        let n_drops = dropper.map_or(0, Dropper::count);
        let n = ops.load(Ordering::Relaxed) - start_ops;
        samples.push(read_sample(cx.proc, cx.cg, t0.elapsed().as_secs_f64(), n, gap, n_drops)?);
        if stopped_early(running) {
            return Ok((samples, true));
        }
    }
    Ok((samples, false))
}

/// Stops the workload, then the server (the cgroup goes last, in the
/// caller): the query errors and the containers' runs.
fn stop_workload(
    running: Running,
    worker_died: bool,
    opts: &Options,
    notes: &mut Vec<String>,
) -> Result<(u64, Vec<ContainerRun>)> {
    let mut query_errors = 0;
    let mut containers = Vec::new();
    match running {
        Running::Containers { mut child, reader, runs } => {
            let _ = child.kill();
            let st = child.wait()?;
            let _ = reader.join();
            containers = std::mem::take(&mut *runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
            if worker_died {
                bail!("the containers workload stopped early ({st}): {}", sys::child_stderr(&mut child));
            }
        }
        Running::Worker { mut child, reader } => {
            let _ = child.kill();
            let st = child.wait()?;
            let _ = reader.join();
            if worker_died {
                bail!("the {} workload stopped early ({st}): {}", opts.workload.name(), sys::child_stderr(&mut child));
            }
        }
        Running::Server { server, clients, stop } => {
            stop.store(true, Ordering::Relaxed);
            for c in clients {
                let counts = c.join().map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
                query_errors += counts.errors;
                if let Some(e) = counts.first_error
                    && !notes.iter().any(|n: &String| n.contains(&e))
                {
                    notes.push(format!("a query failed: {e}"));
                }
            }
            let server = Arc::try_unwrap(server)
                .map_err(|_| anyhow::anyhow!("internal error: a client still holds the server"))?;
            server.stop()?;
        }
    }
    Ok((query_errors, containers))
}
