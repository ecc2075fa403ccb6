//! The victims of a reclaim: what the node's other tasks wait for while
//! one CPU walks dentries.
//!
//! One thread per victim kind, pinned to a CPU other than the reclaiming
//! one, repeats a user-visible operation (a mount and umount of a small
//! tmpfs, a new network namespace, a fork and exec, ...) every
//! [`PERIOD`] and records each call's start and latency on the monotonic
//! clock, which the reclaim is timed on too. A sampler thread reads the
//! kernel stack (`/proc/self/task/TID/stack`) of every victim whose call
//! has lasted [`SAMPLE_AFTER`], every [`SAMPLE_EVERY`], so that a long
//! call says where in the kernel it waited.
//!
//! The threads are made before the run's filesystem is mounted (the
//! `umount` victim's mount namespace then holds no copy of it, which would
//! keep the reclaim from freeing anything), wait, and are released by
//! [`Victims::go`] once the dentries exist. Each namespace a victim makes
//! belongs to its thread and goes when the thread does; the `cgroup`
//! victim's cgroup is named for the cgroup guardian, which removes it
//! however dentrylab ends.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use serde::{Deserialize, Serialize};

use crate::sandbox::victim;
use crate::sys;

mod stacks;

/// How often a victim starts its operation (at once after a call that
/// took longer).
pub(crate) const PERIOD: Duration = Duration::from_millis(5);
/// How often the sampler reads the stacks of the victims in a call.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_millis(20);
/// A call is sampled once it has lasted this long.
pub(crate) const SAMPLE_AFTER: Duration = Duration::from_millis(10);

/// One kind of victim: an operation a node's other tasks do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Victim {
    /// Mount and umount a 1 MiB tmpfs in the victim's own mount namespace:
    /// a container's secret or emptyDir volume, a container's teardown.
    Umount,
    /// A new network namespace (the previous one torn down): a pod sandbox.
    Netns,
    /// fork, exec /bin/true, wait: an exec probe, a container's process.
    ForkExec,
    /// stat of a cached file: a path lookup.
    Stat,
    /// mkdir and rmdir of a memory cgroup: a pod's cgroup.
    Cgroup,
    /// inotify_add_watch and inotify_rm_watch on a small directory: the
    /// kubelet's and container runtimes' file watches.
    Inotify,
    /// A whole container started and stopped by a real runtime (runsc
    /// running /bin/true: its namespaces, mounts and gofer made and torn
    /// down), from a mount namespace of its own.
    Container,
    /// A point SELECT on a small InnoDB table of a real MariaDB server
    /// started for the run, over its unix socket, on a connection made
    /// before the reclaim: a database's client, a readiness probe's query.
    Mariadb,
    /// A whole pod start as containerd and runc do it on the node, the
    /// previous pod torn down first: the sandbox's and one app container's
    /// namespaces, cgroups, overlay rootfs, runc's mounts, pivot_root and
    /// the old root's detach, each step timed ([`crate::sandbox::pod`]).
    PodStart,
}

impl Victim {
    /// Every victim, in the order tables list them.
    pub(crate) const ALL: &'static [Victim] = &[
        Victim::Umount,
        Victim::Netns,
        Victim::ForkExec,
        Victim::Stat,
        Victim::Cgroup,
        Victim::Inotify,
        Victim::Container,
        Victim::Mariadb,
        Victim::PodStart,
    ];
    /// `--victims` with no list: the ones the node calibration runs.
    pub(crate) const STANDARD: &'static [Victim] =
        &[Victim::Umount, Victim::Netns, Victim::ForkExec, Victim::Stat, Victim::PodStart];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Victim::Umount => "umount",
            Victim::Netns => "netns",
            Victim::ForkExec => "fork-exec",
            Victim::Stat => "stat",
            Victim::Cgroup => "cgroup",
            Victim::Inotify => "inotify",
            Victim::Container => "container",
            Victim::Mariadb => "mariadb",
            Victim::PodStart => "pod-start",
        }
    }

    /// What one call does, as a table says it.
    pub(crate) fn operation(self) -> &'static str {
        match self {
            Victim::Umount => "mount + umount of a 1 MiB tmpfs",
            Victim::Netns => "unshare(CLONE_NEWNET)",
            Victim::ForkExec => "fork + exec /bin/true + wait",
            Victim::Stat => "stat of a cached file",
            Victim::Cgroup => "mkdir + rmdir of a memory cgroup",
            Victim::Inotify => "inotify_add_watch + inotify_rm_watch",
            Victim::Container => "runsc run of /bin/true, start to exit",
            Victim::Mariadb => "SELECT of one row by its key from MariaDB, over its unix socket",
            Victim::PodStart => "teardown of the last pod + start of a sandbox and an app container, as runc does",
        }
    }

    /// Whether it needs root (namespaces, mounts, cgroups; the server of
    /// `mariadb` runs in a memory cgroup the cgroup guardian removes).
    pub(crate) fn needs_root(self) -> bool {
        matches!(
            self,
            Victim::Umount | Victim::Netns | Victim::Cgroup | Victim::Container | Victim::Mariadb | Victim::PodStart
        )
    }
}

/// `--victims LIST`: names separated by commas, `all`, or `standard`.
pub(crate) fn parse_list(s: &str) -> Result<Vec<Victim>, String> {
    let mut out: Vec<Victim> = Vec::new();
    for word in s.split(',').map(str::trim) {
        let add: &[Victim] = match word {
            "all" => Victim::ALL,
            "standard" => Victim::STANDARD,
            w => match Victim::ALL.iter().find(|v| v.name() == w) {
                Some(v) => std::slice::from_ref(v),
                None => {
                    let names: Vec<&str> = Victim::ALL.iter().map(|v| v.name()).collect();
                    return Err(format!(
                        "unknown victim '{w}': use a comma-separated list of {}, or 'all' or 'standard'",
                        names.join(", ")
                    ));
                }
            },
        };
        for v in add {
            if !out.contains(v) {
                out.push(*v);
            }
        }
    }
    Ok(out)
}

/// One call of a victim's operation on the monotonic clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Call {
    pub start_ns: u64,
    pub took_ns: u64,
}

impl Call {
    pub(crate) fn end_ns(&self) -> u64 {
        self.start_ns + self.took_ns
    }
}

/// One step of a call and how long it took (the `pod-start` victim's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StepTime {
    pub step: String,
    pub seconds: f64,
}

/// The steps of `r`'s call `call` (none for a victim without steps).
pub(crate) fn steps_of(r: &Record, call: Option<Call>) -> Vec<StepTime> {
    let Some(c) = call else { return Vec::new() };
    if r.steps.len() != r.calls.len() {
        return Vec::new();
    }
    let at = r.calls.iter().position(|x| *x == c);
    at.map(|i| r.steps[i].iter().map(|&(step, ns)| StepTime { step: step.into(), seconds: ns as f64 / 1e9 }).collect())
        .unwrap_or_default()
}

/// The step of `steps` that took longest.
pub(crate) fn slowest(steps: &[StepTime]) -> Option<&StepTime> {
    steps.iter().max_by(|a, b| a.seconds.total_cmp(&b.seconds))
}

/// A kernel stack of a victim taken while it was in a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Sample {
    pub at_ns: u64,
    /// Function names, innermost first.
    pub frames: Vec<String>,
}

/// The timed steps of one call (the `pod-start` victim's; none for the others).
pub(crate) type Steps = Vec<crate::sandbox::pod::Step>;

/// What one victim recorded.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub victim: Victim,
    pub calls: Vec<Call>,
    /// Each call's steps, parallel to `calls` (empty for a victim without steps).
    pub steps: Vec<Steps>,
    pub samples: Vec<Sample>,
    /// Why it stopped early: the errno its operation met.
    pub error: Option<String>,
}

/// One container start and stop, as the runtime that the caller found
/// does it (the `container` victim's call).
pub(crate) type ContainerRun = Arc<dyn Fn() -> Result<()> + Send + Sync>;

/// One query of the `mariadb` victim, on the connection it was made with.
pub(crate) type Query = Box<dyn FnMut() -> Result<()> + Send>;

/// The `mariadb` victim's server: how to connect (made before go, so a
/// call is the query alone), and the server's pid, whose threads' stacks
/// the sampler reads when the victim only waits for the server's answer.
#[derive(Clone)]
pub(crate) struct Database {
    pub connect: Arc<dyn Fn() -> Result<Query> + Send + Sync>,
    pub server_pid: u32,
}

/// Where the victims do their work.
#[derive(Clone)]
pub(crate) struct Places {
    /// A directory private to this run (the sandbox's scratch tmpfs).
    pub scratch: PathBuf,
    /// The `cgroup` victim's cgroup, named for the cgroup guardian (the
    /// `pod-start` victim's are this name with `-pod-start…` added).
    pub cgroup: Option<PathBuf>,
    /// The `container` victim's call.
    pub container: Option<ContainerRun>,
    /// The `mariadb` victim's server.
    pub mariadb: Option<Database>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Wait,
    Go,
    Abort,
}

struct Shared {
    phase: Mutex<Phase>,
    turn: Condvar,
    stop: AtomicBool,
}

impl Shared {
    /// Waits for `go`; false when aborted.
    fn wait_go(&self) -> bool {
        let mut p = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        while *p == Phase::Wait {
            p = self.turn.wait(p).unwrap_or_else(|e| e.into_inner());
        }
        *p == Phase::Go
    }

    fn set(&self, to: Phase) {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner()) = to;
        self.turn.notify_all();
    }
}

/// Per worker: its thread id, the start of the call it is in (0: none),
/// and the process that answers its calls (the `mariadb` victim's server).
struct Watch {
    tid: AtomicU32,
    in_call: AtomicU64,
    peer: Option<u32>,
}

struct Worker {
    victim: Victim,
    watch: Arc<Watch>,
    handle: JoinHandle<Recorded>,
}

/// The running victims of one repetition.
pub(crate) struct Victims {
    shared: Arc<Shared>,
    workers: Vec<Worker>,
    sampler: Option<JoinHandle<Vec<Vec<Sample>>>>,
}

impl Victims {
    /// Starts one thread per victim, round-robin on `cpus`, each ready
    /// (namespace made, files in place) and waiting for [`Victims::go`].
    pub(crate) fn start(kinds: &[Victim], cpus: &[usize], places: &Places) -> Result<Victims> {
        anyhow::ensure!(!cpus.is_empty(), "the victims need a CPU other than the reclaiming one");
        let shared =
            Arc::new(Shared { phase: Mutex::new(Phase::Wait), turn: Condvar::new(), stop: AtomicBool::new(false) });
        let mut workers = Vec::new();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<()>>();
        for (i, &v) in kinds.iter().enumerate() {
            let peer = places.mariadb.as_ref().filter(|_| v == Victim::Mariadb).map(|d| d.server_pid);
            let watch = Arc::new(Watch { tid: AtomicU32::new(0), in_call: AtomicU64::new(0), peer });
            let (sh, w, tx, cpu, places) =
                (shared.clone(), watch.clone(), ready_tx.clone(), cpus[i % cpus.len()], places.clone());
            let handle = std::thread::Builder::new()
                .name(format!("victim-{}", v.name()))
                .spawn(move || worker(v, cpu, &places, &sh, &w, &tx))
                .context("cannot start a victim thread")?;
            workers.push(Worker { victim: v, watch, handle });
        }
        drop(ready_tx);
        let mut victims = Victims { shared, workers, sampler: None };
        for _ in 0..victims.workers.len() {
            let ready = ready_rx.recv().map_err(|_| anyhow!("a victim thread ended before it was ready"));
            if let Err(e) = ready.and_then(|r| r) {
                victims.abort();
                return Err(e);
            }
        }
        let watches: Vec<Arc<Watch>> = victims.workers.iter().map(|w| w.watch.clone()).collect();
        let (sh, cpu) = (victims.shared.clone(), cpus[0]);
        victims.sampler = Some(
            std::thread::Builder::new()
                .name("victim-stacks".into())
                .spawn(move || stacks::sampler(&watches, cpu, &sh))
                .context("cannot start the victims' stack sampler")?,
        );
        Ok(victims)
    }

    /// Releases the victims: from now on they call their operations.
    pub(crate) fn go(&self) {
        self.shared.set(Phase::Go);
    }

    fn abort(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.set(Phase::Abort);
        for w in self.workers.drain(..) {
            let _ = w.handle.join();
        }
    }

    /// Stops the victims (each finishes the call it is in) and returns
    /// what each recorded.
    pub(crate) fn finish(mut self) -> Result<Vec<Record>> {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.set(Phase::Go);
        let mut samples = match self.sampler.take() {
            Some(s) => s.join().map_err(|_| anyhow!("the victims' stack sampler panicked"))?,
            None => Vec::new(),
        };
        samples.resize(self.workers.len(), Vec::new());
        let mut out = Vec::new();
        for (w, samples) in self.workers.drain(..).zip(samples) {
            let Recorded { calls, steps, error } =
                w.handle.join().map_err(|_| anyhow!("the {} victim panicked", w.victim.name()))?;
            out.push(Record { victim: w.victim, calls, steps, samples, error });
        }
        Ok(out)
    }
}

impl Drop for Victims {
    fn drop(&mut self) {
        self.abort();
        if let Some(s) = self.sampler.take() {
            let _ = s.join();
        }
    }
}

/// One victim's operation, made ready.
enum Op {
    Umount(PathBuf),
    Netns,
    ForkExec,
    Stat(PathBuf),
    Cgroup(PathBuf),
    Inotify(nix::sys::inotify::Inotify, PathBuf),
    Container(ContainerRun),
    Mariadb(Query),
    PodStart(Box<crate::sandbox::pod::PodStart>),
}

impl Op {
    fn prepare(v: Victim, places: &Places) -> Result<Op> {
        let tid = nix::unistd::gettid().as_raw();
        let own = |what: &str| -> Result<PathBuf> {
            let p = places.scratch.join(format!("victim-{what}-{tid}"));
            std::fs::create_dir_all(&p).with_context(|| format!("victim: cannot make {}", p.display()))?;
            Ok(p)
        };
        Ok(match v {
            Victim::Umount => {
                let dir = own("umount")?;
                victim::own_mount_namespace()?;
                Op::Umount(dir)
            }
            Victim::Netns => Op::Netns,
            Victim::ForkExec => Op::ForkExec,
            Victim::Stat => {
                let f = own("stat")?.join("file");
                std::fs::write(&f, b"").with_context(|| format!("victim: cannot make {}", f.display()))?;
                Op::Stat(f)
            }
            Victim::Cgroup => Op::Cgroup(
                places.cgroup.clone().context("internal error: the cgroup victim needs the cgroup guardian")?,
            ),
            Victim::Inotify => {
                let fd = nix::sys::inotify::Inotify::init(nix::sys::inotify::InitFlags::IN_CLOEXEC)
                    .context("victim: inotify_init1")?;
                Op::Inotify(fd, own("inotify")?)
            }
            Victim::Container => {
                let run = places.container.clone().context("internal error: the container victim needs a runtime")?;
                // Its runtime's namespaces copy this one: made before the
                // run's filesystem, they hold no copy of it.
                victim::own_mount_namespace()?;
                Op::Container(run)
            }
            Victim::Mariadb => {
                let db = places.mariadb.as_ref().context("internal error: the mariadb victim needs a server")?;
                Op::Mariadb((db.connect)()?)
            }
            Victim::PodStart => {
                let dir = own("pod-start")?;
                victim::own_mount_namespace()?;
                let cg = places.cgroup.as_ref().map(|c| PathBuf::from(format!("{}-pod-start", c.display())));
                Op::PodStart(Box::new(crate::sandbox::pod::PodStart::prepare(dir, cg)?))
            }
        })
    }

    fn call(&mut self, steps: &mut Steps) -> Result<()> {
        match self {
            Op::Umount(dir) => victim::mount_cycle(dir),
            Op::Netns => victim::new_net_namespace(),
            Op::ForkExec => fork_exec(),
            Op::Stat(f) => nix::sys::stat::stat(f.as_path()).map(|_| ()).context("victim: stat"),
            Op::Cgroup(dir) => {
                let dir: &Path = dir;
                std::fs::create_dir(dir).with_context(|| format!("victim: mkdir {}", dir.display()))?;
                std::fs::remove_dir(dir).with_context(|| format!("victim: rmdir {}", dir.display()))
            }
            Op::Inotify(fd, dir) => {
                let wd = fd
                    .add_watch(dir.as_path(), nix::sys::inotify::AddWatchFlags::IN_CREATE)
                    .context("victim: inotify_add_watch")?;
                fd.rm_watch(wd).context("victim: inotify_rm_watch")
            }
            Op::Container(run) => run(),
            Op::Mariadb(query) => query(),
            Op::PodStart(pod) => pod.call(steps),
        }
    }
}

fn fork_exec() -> Result<()> {
    use std::process::{Command, Stdio};
    let st = Command::new("/bin/true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("victim: fork + exec /bin/true")?;
    anyhow::ensure!(st.success(), "victim: /bin/true exited with {st}");
    Ok(())
}

/// What a worker thread hands back.
struct Recorded {
    calls: Vec<Call>,
    steps: Vec<Steps>,
    error: Option<String>,
}

fn worker(
    v: Victim,
    cpu: usize,
    places: &Places,
    shared: &Shared,
    watch: &Watch,
    ready: &std::sync::mpsc::Sender<Result<()>>,
) -> Recorded {
    watch.tid.store(nix::unistd::gettid().as_raw() as u32, Ordering::SeqCst);
    let op = sys::pin_current_thread(cpu).and_then(|_| Op::prepare(v, places));
    let mut op = match op {
        Ok(op) => {
            let _ = ready.send(Ok(()));
            op
        }
        Err(e) => {
            let _ = ready.send(Err(e.context(format!("the {} victim", v.name()))));
            return Recorded { calls: Vec::new(), steps: Vec::new(), error: None };
        }
    };
    let mut out = Recorded { calls: Vec::new(), steps: Vec::new(), error: None };
    if !shared.wait_go() {
        return out;
    }
    let period = PERIOD.as_nanos() as u64;
    while !shared.stop.load(Ordering::SeqCst) {
        let t0 = sys::monotonic_ns();
        watch.in_call.store(t0, Ordering::SeqCst);
        let mut steps = Steps::new();
        let r = op.call(&mut steps);
        let t1 = sys::monotonic_ns();
        watch.in_call.store(0, Ordering::SeqCst);
        if let Err(e) = r {
            out.error = Some(format!("{e:#}"));
            return out;
        }
        out.calls.push(Call { start_ns: t0, took_ns: t1.saturating_sub(t0) });
        if !steps.is_empty() {
            out.steps.push(steps);
        }
        let next = t0 + period;
        if next > t1 {
            std::thread::sleep(Duration::from_nanos(next - t1));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_bad_names_are_refused() {
        assert_eq!(parse_list("umount,stat").unwrap(), vec![Victim::Umount, Victim::Stat]);
        assert_eq!(parse_list("all").unwrap(), Victim::ALL.to_vec());
        assert_eq!(parse_list("standard,stat").unwrap(), Victim::STANDARD.to_vec());
        let e = parse_list("umount,bogus").unwrap_err();
        assert!(e.contains("unknown victim 'bogus'") && e.contains("fork-exec"), "{e}");
    }

    #[test]
    fn names_are_unique_and_serde_agrees() {
        for v in Victim::ALL {
            assert_eq!(serde_json::to_string(v).unwrap(), format!("\"{}\"", v.name()));
            assert_eq!(parse_list(v.name()).unwrap(), vec![*v]);
        }
    }

    /// Unprivileged victims run as any user: they record calls between go
    /// and finish, and nothing before go.
    #[test]
    fn victims_record_calls_between_go_and_finish() {
        let dir = tempfile::tempdir().unwrap();
        let places = Places { scratch: dir.path().to_path_buf(), cgroup: None, container: None, mariadb: None };
        let v = Victims::start(&[Victim::Stat, Victim::Inotify], &[0], &places).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let t0 = sys::monotonic_ns();
        v.go();
        std::thread::sleep(Duration::from_millis(60));
        let r = v.finish().unwrap();
        assert_eq!(r.len(), 2);
        for rec in &r {
            assert!(rec.error.is_none(), "{:?}", rec.error);
            assert!(rec.calls.len() >= 2, "{:?}: {} calls", rec.victim, rec.calls.len());
            assert!(rec.calls.iter().all(|c| c.start_ns >= t0));
        }
    }
}
