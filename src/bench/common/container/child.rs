//! One container: a copy of dentrylab (hidden subcommand
//! [`CHILD_COMMAND`]) in a mount namespace of its own, with an overlay of
//! the shared image and its own snapshot (upper and work directories)
//! mounted on its root directory. It runs the workload there, reports,
//! and when told to, exits: its last process is gone, the namespace dies,
//! and the overlay goes with it, as when a container stops.
//!
//! Protocol, one JSON line each way: the child starts at once and answers
//! [`Report::Ready`] when its workload is done; the parent sends `exit`;
//! the child pins itself to the teardown CPU, answers [`Report::Exiting`],
//! and exits. The child dies with its parent (PR_SET_PDEATHSIG), and an
//! end of file on its input ends it too.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::procfs::ProcRoot;
use crate::procfs::dentry_state::DentryState;
use crate::sandbox::Sandbox;
use crate::sandbox::overlay::Layers;
use crate::sys;
use crate::workload::container::{self, Mix, Outcome};

/// The hidden subcommand that runs one container.
pub(crate) const CHILD_COMMAND: &str = "__container-child";

/// One container's internal command (registered by `containers`, whose
/// harness `mitigate --workload containers` shares).
pub(crate) const CHILD_ENTRY: crate::sys::internal::Entry<crate::sys::internal::SpecArg> =
    crate::sys::internal::Entry {
        name: CHILD_COMMAND,
        about: "One container of 'containers'",
        aliases: &[],
        run: |a| child_main(&a.spec),
    };

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Spec {
    pub id: u32,
    pub layers: Layers,
    /// The container's root: the overlay is mounted here.
    pub merged: PathBuf,
    pub mix: Mix,
    pub ops: u64,
    /// The CPU the container exits on (the probed teardown CPU).
    pub cpu: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Report {
    Ready {
        /// From start to the overlay mounted (namespace, mount).
        setup_seconds: f64,
        /// dentry-state just before and just after the workload.
        before: DentryState,
        after: DentryState,
        outcome: Outcome,
    },
    Exiting,
}

/// The parent's handle on one container.
pub(crate) struct Container {
    pub id: u32,
    child: Child,
    input: ChildStdin,
}

/// The container's output, read on a thread of its own until `Ready`.
pub(crate) type Output = BufReader<ChildStdout>;

impl Container {
    pub(crate) fn spawn(spec: &Spec) -> Result<(Container, Output)> {
        let sys::SelfChild { child, input, output } =
            sys::spawn_self(CHILD_COMMAND, serde_json::to_string(spec)?, "a container")?;
        Ok((Container { id: spec.id, child, input }, output))
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Tells the container to exit and waits until it has been reaped: the
    /// kernel tears its namespace (and the overlay) down inside its exit.
    pub(crate) fn exit(mut self, output: &mut Output) -> Result<()> {
        writeln!(self.input, "exit").and_then(|_| self.input.flush()).context("the container is gone")?;
        match receive(output, &mut self.child)? {
            Report::Exiting => {}
            r => bail!("container {} answered {r:?} to exit", self.id),
        }
        let (status, _) = sys::wait_child(self.pid())?;
        if status != 0 {
            bail!("container {} exited with wait status {status}", self.id);
        }
        Ok(())
    }

    /// Kills a container that failed, and reaps it.
    pub(crate) fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads the container's next report.
pub(crate) fn receive(output: &mut Output, child: &mut Child) -> Result<Report> {
    let mut line = String::new();
    output.read_line(&mut line).context("cannot read from a container")?;
    if line.is_empty() {
        let status = child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        bail!("a container ended before answering ({status}); its error is above");
    }
    serde_json::from_str(&line).with_context(|| format!("a container said {:?}", line.trim()))
}

/// Reads the first report without the child handle (on the reader thread).
pub(crate) fn receive_ready(output: &mut Output) -> Result<Report> {
    let mut line = String::new();
    output.read_line(&mut line).context("cannot read from a container")?;
    if line.is_empty() {
        bail!("the container ended before its workload was done; its error is above");
    }
    serde_json::from_str(&line).with_context(|| format!("a container said {:?}", line.trim()))
}

/// The container's side.
pub(crate) fn child_main(spec: &str) -> Result<()> {
    let t = Instant::now();
    sys::die_with_parent()?;
    let spec: Spec = serde_json::from_str(spec).context("bad container spec")?;
    let proc = ProcRoot::default();
    let sandbox = Sandbox::enter_nested()?;
    sandbox.mount_overlay(&spec.layers, &spec.merged)?;
    let setup_seconds = t.elapsed().as_secs_f64();
    let before = proc.dentry_state()?;
    let outcome = container::run(&spec.merged, spec.id, &spec.mix, spec.ops)
        .with_context(|| format!("container {}: running its workload", spec.id))?;
    let after = proc.dentry_state()?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string(&Report::Ready { setup_seconds, before, after, outcome })?)?;
    out.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).context("reading the parent's command")?;
    if line.trim() != "exit" {
        // The parent is gone or gave up: so does the container, quietly.
        std::process::exit(0);
    }
    sys::pin_current_thread(spec.cpu)?;
    writeln!(out, "{}", serde_json::to_string(&Report::Exiting)?)?;
    out.flush()?;
    // Exit without unmounting: the overlay goes with the namespace.
    std::process::exit(0);
}
