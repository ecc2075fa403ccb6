//! The generator child: a copy of dentrylab (hidden subcommand
//! [`CHILD_COMMAND`]) that creates the dentries in a process of its own.
//!
//! `ns-exit` needs the dentries' filesystem to be mounted only in a mount
//! namespace whose last process then exits, as a container's does; `memcg`
//! needs the generator to be charged to a memory cgroup. A child started
//! with exec (not a bare fork: dentrylab already has threads) does both.
//!
//! Protocol, one line each way at a time: the parent sends `go` (after
//! moving the child into its cgroup, if any); the child creates, syncs and
//! answers a [`Report::Created`]; the parent sends `exit`; the child pins
//! itself to the reclaiming CPU, answers [`Report::Exiting`] with the
//! system time it used so far, and exits. The child dies with its parent
//! (PR_SET_PDEATHSIG), and an end-of-file on its input ends it too.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::sandbox::{Capacity, FsType, Sandbox};
use crate::sys;
use crate::workload::{self, CreateOutcome, CreateSpec, Progress};

/// The hidden subcommand that runs the child.
pub(crate) const CHILD_COMMAND: &str = "__reclaim-child";

/// The generator child's internal command.
pub(crate) const CHILD_ENTRY: crate::sys::internal::Entry<crate::sys::internal::SpecArg> =
    crate::sys::internal::Entry {
        name: CHILD_COMMAND,
        about: "The generator child of `reclaim --method ns-exit|memcg`",
        aliases: &[],
        run: |a| child_main(&a.spec),
    };

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ChildSpec {
    /// Mount `fs` on `path` in a mount namespace of the child's own
    /// (`ns-exit`); otherwise `path` is already mounted (`memcg`).
    pub own_namespace: bool,
    pub path: PathBuf,
    pub fs: FsType,
    pub capacity: Capacity,
    pub create: CreateSpec,
    /// The CPU the child exits on (the reclaiming CPU); None: the child's
    /// exit is not pinned (an unpinned repetition).
    pub cpu: Option<usize>,
    /// `--fs overlay` with `ns-exit`: mount an overlay of these directories
    /// (on filesystems the parent mounted) on `path` instead of `fs`.
    #[serde(default)]
    pub overlay: Option<crate::sandbox::overlay::Layers>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Report {
    Created(CreateOutcome),
    Exiting { sys_seconds: f64 },
}

/// The parent's handle on a running child.
pub(crate) struct Generator {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Generator {
    /// Starts the child; it waits for [`go`](Self::go).
    pub(crate) fn spawn(spec: &ChildSpec) -> Result<Generator> {
        let sys::SelfChild { child, input, output } =
            sys::spawn_self(CHILD_COMMAND, serde_json::to_string(spec)?, "the generator child")?;
        Ok(Generator { child, input, output })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send(&mut self, line: &str) -> Result<()> {
        writeln!(self.input, "{line}").and_then(|_| self.input.flush()).context("the generator child is gone")
    }

    fn receive(&mut self) -> Result<Report> {
        let mut line = String::new();
        self.output.read_line(&mut line).context("cannot read from the generator child")?;
        if line.is_empty() {
            let status = self.child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
            bail!("the generator child ended before answering ({status}); its error is above");
        }
        serde_json::from_str(&line).with_context(|| format!("the generator child said {:?}", line.trim()))
    }

    /// Lets the child create; returns when it has.
    pub(crate) fn go(&mut self) -> Result<CreateOutcome> {
        self.send("go")?;
        match self.receive()? {
            Report::Created(c) => Ok(c),
            r => bail!("the generator child answered {r:?} to go"),
        }
    }

    /// Tells the child to exit and waits until it has been reaped. Returns
    /// how long that took and the system time the child used meanwhile.
    /// The kernel tears the child's mount namespace down inside its exit
    /// (exit_task_namespaces, then the deferred mntput in exit_task_work),
    /// before the parent can reap it, so this is the whole teardown.
    pub(crate) fn exit(mut self) -> Result<(Duration, Duration)> {
        let t = Instant::now();
        self.send("exit")?;
        let before = match self.receive()? {
            Report::Exiting { sys_seconds } => sys_seconds,
            r => bail!("the generator child answered {r:?} to exit"),
        };
        let (status, sys_total) = sys::wait_child(self.pid())?;
        let took = t.elapsed();
        if status != 0 {
            bail!("the generator child exited with wait status {status}");
        }
        Ok((took, sys_total.saturating_sub(Duration::from_secs_f64(before))))
    }
}

/// The child's side.
pub(crate) fn child_main(spec: &str) -> Result<()> {
    sys::die_with_parent()?;
    let spec: ChildSpec = serde_json::from_str(spec).context("bad child spec")?;
    let mut input = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    expect(&mut input, "go")?;
    let mount = if spec.own_namespace {
        let sandbox = Sandbox::enter_nested()?;
        match &spec.overlay {
            // The overlay exists only in this namespace: it goes when this
            // process exits, as a container's root does.
            Some(layers) => {
                sandbox.mount_overlay(layers, &spec.path)?;
                None
            }
            None => Some(sandbox.mount_at(spec.path.clone(), spec.fs, &spec.capacity)?),
        }
    } else {
        None
    };
    let progress = Arc::new(Progress::default());
    let created = workload::create(&spec.path, &spec.create, &progress).context("creating dentries")?;
    let dir = std::fs::File::open(&spec.path).with_context(|| format!("cannot open {}", spec.path.display()))?;
    sys::syncfs(std::os::fd::AsFd::as_fd(&dir))?;
    drop(dir);
    writeln!(out, "{}", serde_json::to_string(&Report::Created(created))?)?;
    out.flush()?;
    expect(&mut input, "exit")?;
    if let Some(cpu) = spec.cpu {
        sys::pin_current_thread(cpu)?;
    }
    let (_, sys_time) = sys::process_cpu_times();
    writeln!(out, "{}", serde_json::to_string(&Report::Exiting { sys_seconds: sys_time.as_secs_f64() })?)?;
    out.flush()?;
    // Exit without unmounting: the namespace dies with this process.
    std::mem::forget(mount);
    std::process::exit(0);
}

fn expect(input: &mut impl BufRead, word: &str) -> Result<()> {
    let mut line = String::new();
    input.read_line(&mut line).context("reading the parent's command")?;
    if line.is_empty() {
        // The parent is gone or gave up: so does the child, quietly.
        std::process::exit(0);
    }
    if line.trim() != word {
        bail!("expected {word:?} from the parent, got {:?}", line.trim());
    }
    Ok(())
}
