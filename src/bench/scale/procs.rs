//! `scale --procs`: one worker process per count, each this binary
//! re-executed as the hidden `__scale-worker` subcommand ([`WorkerArgs`]),
//! started together by a byte on its standard input, reporting its
//! outcome as one JSON line.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};

use super::Options;
use crate::probe::StepHook;
use crate::sys;
use crate::workload::lookup::{Op, Outcome, Worker};

/// `__scale-worker`: the arguments the parent passes ([`run_processes`]).
#[derive(Debug, clap::Args)]
pub(crate) struct WorkerArgs {
    #[arg(long, value_parser = |s: &str| s.parse::<Op>())]
    pub op: Op,
    #[arg(long)]
    pub root: PathBuf,
    #[arg(long)]
    pub index: usize,
    #[arg(long)]
    pub seconds: f64,
    #[arg(long)]
    pub sample_every: u64,
}

impl WorkerArgs {
    /// Runs the worker, tied to the parent's life.
    pub(crate) fn run(&self) -> Result<()> {
        sys::die_with_parent()?;
        worker_main(&self.root, self.op, self.index, self.seconds, self.sample_every)
    }
}

struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn worker_failed(c: &mut Child, what: &str) -> anyhow::Error {
    let _ = c.kill();
    let err = sys::child_stderr(c);
    let status = c.wait().map(|s| s.to_string()).unwrap_or_default();
    anyhow::anyhow!("worker process {} {what} ({status}): {err}", c.id())
}

pub(super) fn run_processes(
    root: &Path,
    op: Op,
    n: usize,
    opts: &Options,
    hook: &mut dyn StepHook,
) -> Result<Vec<Outcome>> {
    let mut children = Children(Vec::with_capacity(n));
    for i in 0..n {
        let mut cmd = Command::new("/proc/self/exe");
        cmd.arg(crate::sys::INTERNAL_COMMAND)
            .arg(SCALE_WORKER)
            .arg("--op")
            .arg(op.name())
            .arg("--root")
            .arg(root)
            .arg("--index")
            .arg(i.to_string())
            .arg("--seconds")
            .arg(opts.seconds.to_string())
            .arg("--sample-every")
            .arg(opts.sample_every.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        children.0.push(sys::spawn_tied(&mut cmd).context("cannot start a worker process")?);
    }
    let mut readers = Vec::with_capacity(n);
    for c in &mut children.0 {
        let mut r = BufReader::new(c.stdout.take().context("worker stdout")?);
        let mut line = String::new();
        r.read_line(&mut line).context("reading a worker's ready line")?;
        if line.trim() != WORKER_READY {
            return Err(worker_failed(c, "did not get ready"));
        }
        readers.push(r);
    }
    let pids: Vec<u32> = children.0.iter().map(Child::id).collect();
    hook.before_go(&pids)?;
    for c in &mut children.0 {
        let mut stdin = c.stdin.take().context("worker stdin")?;
        stdin.write_all(b"g").context("cannot start a worker process")?;
    }
    let mut outcomes = Vec::with_capacity(n);
    for (c, r) in children.0.iter_mut().zip(&mut readers) {
        let mut line = String::new();
        r.read_line(&mut line).context("reading a worker's result")?;
        match serde_json::from_str::<Outcome>(&line) {
            Ok(o) => outcomes.push(o),
            Err(_) => return Err(worker_failed(c, "failed")),
        }
    }
    hook.after()?;
    for c in &mut children.0 {
        let st = c.wait().context("waiting for a worker process")?;
        if !st.success() {
            bail!("worker process {} exited with {st}", c.id());
        }
    }
    children.0.clear();
    Ok(outcomes)
}

/// The hidden subcommand that `scale --procs` re-executes this binary with.
pub(crate) const SCALE_WORKER: &str = "__scale-worker";

/// The worker's internal command.
pub(crate) const WORKER_ENTRY: crate::sys::internal::Entry<WorkerArgs> = crate::sys::internal::Entry {
    name: SCALE_WORKER,
    about: "One worker process of 'scale --procs'",
    aliases: &[],
    run: |a| a.run(),
};

/// What a worker process prints when it is ready for the start byte.
pub(super) const WORKER_READY: &str = "ready";

/// The hidden worker subcommand: prepare, say ready, wait for the start
/// byte on standard input, loop, print the outcome as one JSON line.
pub(super) fn worker_main(root: &Path, op: Op, index: usize, seconds: f64, sample_every: u64) -> Result<()> {
    let mut w = Worker::new(root, op, index)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{WORKER_READY}")?;
    out.flush()?;
    let mut b = [0u8; 1];
    if std::io::Read::read(&mut std::io::stdin(), &mut b)? == 0 {
        bail!("the parent closed the start pipe");
    }
    let o = w.run(seconds, sample_every)?;
    serde_json::to_writer(&mut out, &o)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}
