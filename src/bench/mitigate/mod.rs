//! `dentrylab mitigate`: the mitigations an SRE is offered for a growing
//! dentry cache, tested A/B on a workload that grows it.
//!
//! Every combination of the `--setting` values (the first values are the
//! baseline) runs `--reps` times, interleaved, each time on a fresh disk
//! filesystem in the sandbox with the workload's processes in a fresh
//! memory cgroup limited to `--memory-limit`, so the pressure that reclaims
//! dentries is the run's own, not the host's. Every second: dentry-state,
//! the cgroup's kernel memory, the workload's operations, and the longest
//! stretch the latency probe saw on the workload's CPU. Sysctls are global
//! and guarded ([`knobs::Sysctls`]): their originals come back however the
//! run ends. [`summary`] turns the samples into a row per combination and a
//! verdict per knob.
//!
//! In: [`Options`], the guarded sysctls, the sandbox. Out: [`MitigateResult`].
//! Imported by `cli::handlers` and `report`; the hidden `mitigate-worker` and
//! `mitigate-containers` subcommands run [`worker_main`] and
//! [`containers::worker_main`].

mod args;
pub(crate) mod command;
pub(crate) mod containers;
pub(crate) mod knobs;
pub(crate) mod limits;
pub(crate) mod one;
pub(crate) mod oom;
pub(crate) mod render;
pub(crate) mod steady;
pub(crate) mod summary;

pub(crate) use args::Args;
pub(crate) use command::Mitigate;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use crate::bench::mitigate::steady::Steady;
use crate::env::Environment;
use crate::error::UsageError;
use crate::procfs::ProcRoot;
use crate::sandbox::{FsType, Privilege, Sandbox};
use crate::workload::container::Mix;
use knobs::{Combination, Knob, Setting, SysctlChange, Sysctls};

/// Default and bounds of `--duration`.
pub(crate) const DEFAULT_DURATION: &str = "60s";
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(3600);
/// Default and most `--reps`.
pub(crate) const DEFAULT_REPS: u32 = 1;
pub(crate) const MAX_REPS: u32 = 20;
/// Default and most `--clients` (mariadb).
pub(crate) const DEFAULT_CLIENTS: usize = 4;
pub(crate) const MAX_CLIENTS: usize = 32;

/// What grows the dentry cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Workload {
    Steady(Steady),
    Mariadb,
    /// `dentrylab containers`' life, over and over ([`containers`]).
    Containers,
}

impl Workload {
    /// Every workload: the steady loops (from their enum: strum), then the
    /// two that are not loops.
    pub(crate) fn all() -> Vec<Workload> {
        let steady = <Steady as strum::VariantArray>::VARIANTS.iter().copied().map(Workload::Steady);
        steady.chain([Workload::Mariadb, Workload::Containers]).collect()
    }

    /// Every workload's name, in [`Workload::all`]'s order.
    pub(crate) fn names() -> Vec<&'static str> {
        Workload::all().into_iter().map(Workload::name).collect()
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::Steady(s) => s.name(),
            Workload::Mariadb => "mariadb",
            Workload::Containers => "containers",
        }
    }
}

impl std::str::FromStr for Workload {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Workload::all()
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or_else(|| format!("unknown workload {s:?}: use one of {}", Workload::names().join(", ")))
    }
}

/// This node's soft-lockup edge, from its calibration (computed by the caller).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Edge {
    /// The dentry count at which one reclaim's longest stretch reaches the
    /// soft-lockup threshold.
    pub dentries: f64,
    /// Which calibration said so.
    pub calibration: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Options {
    pub workload: Workload,
    pub settings: Vec<Setting>,
    /// `None`: the cgroup's usage once set up + [`one::DEFAULT_HEADROOM_BYTES`].
    pub memory_limit: Option<u64>,
    pub duration_seconds: f64,
    pub reps: u32,
    pub clients: usize,
    pub mariadb_options: Vec<(String, String)>,
    /// containers: each container's workload and operations.
    #[serde(default = "default_mix")]
    pub container_mix: Mix,
    #[serde(default)]
    pub container_ops: u64,
    pub fs: FsType,
    /// The CPU the workload is pinned to, probed, and drops caches on.
    pub cpu: usize,
    pub allow_global: bool,
    pub edge: Option<Edge>,
}

fn default_mix() -> Mix {
    crate::workload::container::DEFAULT_MIX
}

/// One reading, every second of a run.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Sample {
    pub seconds: f64,
    /// Operations (queries for mariadb) since the run's start.
    pub ops: u64,
    pub nr_dentry: u64,
    pub nr_unused: u64,
    pub nr_negative: u64,
    pub cgroup_kernel_bytes: u64,
    pub cgroup_usage_bytes: u64,
    /// Longest gap of the probe on the workload's CPU over the second that ends here.
    pub max_gap_seconds: f64,
    /// drop_caches writes so far.
    pub drops: u32,
}

/// One row of the comparison: a combination of settings (and for the
/// `--mariadb-option` row, server options), with its runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Row {
    pub label: String,
    pub settings: Combination,
    pub server_options: Vec<(String, String)>,
    pub runs: Vec<one::RunResult>,
    pub summary: Option<summary::RowSummary>,
    /// Reps the cgroup's OOM killer ended (the error, one line each); the
    /// other rows' and reps' results are kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oom_killed: Vec<String>,
    /// The same reps: the kernel's OOM report, the cgroup's counters and
    /// the dentry counts at the kill.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oom: Vec<oom::OomKill>,
    /// Reps not run: the limit was below the workload's usage once set up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MitigateResult {
    #[serde(flatten)]
    pub header: crate::result::Header,
    pub environment: Environment,
    pub options: Options,
    pub sandbox: Privilege,
    /// Sysctls written during the run, their originals and what they read after the restore.
    pub sysctls: Vec<SysctlChange>,
    pub rows: Vec<Row>,
    pub verdicts: Vec<String>,
    /// `--setting memory-limit=…`: what each limit did, and from which it bounds the dentries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_sweep: Option<limits::LimitSweep>,
    pub notes: Vec<String>,
}

/// Checks the options (bad input: exit 2).
pub(crate) fn validate(opts: &Options) -> Result<()> {
    let usage = |m: String| -> Result<()> { Err(UsageError(m).into()) };
    let d = Duration::from_secs_f64(opts.duration_seconds);
    if opts.duration_seconds < 1.0 || d > MAX_DURATION {
        return usage(format!("--duration {}s: use 1s to 1h", opts.duration_seconds));
    }
    let only_limits = !opts.settings.is_empty() && opts.settings.iter().all(|s| s.knob == Knob::MemoryLimit);
    if !opts.fs.is_disk() && !only_limits {
        return usage(format!(
            "--fs {}: mitigate needs a disk filesystem (ext4 or xfs) for the sysctl and drop knobs: tmpfs keeps no \
             negative dentries and cannot reclaim its files' dentries, so no such knob could change anything (tmpfs is \
             accepted with --setting memory-limit=… alone)",
            opts.fs
        ));
    }
    if opts.memory_limit.is_some() && opts.settings.iter().any(|s| s.knob == Knob::MemoryLimit) {
        return usage("--memory-limit and --setting memory-limit=…: give the limits in one of them".into());
    }
    for (i, s) in opts.settings.iter().enumerate() {
        if opts.settings[..i].iter().any(|o| o.knob == s.knob) {
            return usage(format!("--setting {}: given twice; put every value in one --setting", s.knob.name()));
        }
    }
    if let Some(s) = opts.settings.iter().find(|s| s.knob.is_global())
        && !opts.allow_global
    {
        return usage(format!(
            "--setting {}: {} for the whole machine during the run: add --allow-global (the originals are restored \
             when the run ends, however it ends)",
            s.knob.name(),
            if s.knob == Knob::DropCachesEvery { "drops caches" } else { "changes a sysctl" }
        ));
    }
    let n = knobs::combinations(&opts.settings).len();
    if n > knobs::MAX_COMBINATIONS {
        return usage(format!(
            "--setting: {n} combinations, more than {}; compare fewer values",
            knobs::MAX_COMBINATIONS
        ));
    }
    if opts.workload != Workload::Mariadb && !opts.mariadb_options.is_empty() {
        return usage(format!("--mariadb-option: only for --workload mariadb (not {})", opts.workload.name()));
    }
    if opts.workload == Workload::Mariadb {
        crate::bench::common::mariadb::locate()?;
    }
    if opts.workload == Workload::Containers && opts.container_ops > crate::bench::common::container::MAX_OPS {
        return usage(format!(
            "--container-ops {}: at most {} operations per container",
            opts.container_ops,
            crate::size::human(crate::bench::common::container::MAX_OPS)
        ));
    }
    Ok(())
}

/// The rows to run: every combination, then (with `--mariadb-option`) the
/// baseline with the server options.
pub(crate) fn rows(opts: &Options) -> Vec<Row> {
    let row = |settings: Combination, server_options: Vec<(String, String)>| {
        let mut label = knobs::label(&settings);
        if !server_options.is_empty() {
            let o: Vec<String> = server_options.iter().map(|(k, v)| format!("{k}={v}")).collect();
            label = format!("{label} + server {}", o.join(" "));
        }
        Row {
            label,
            settings,
            server_options,
            runs: Vec::new(),
            summary: None,
            oom_killed: Vec::new(),
            oom: Vec::new(),
            not_run: Vec::new(),
        }
    };
    let combos = knobs::combinations(&opts.settings);
    let mut out: Vec<Row> = combos.iter().map(|c| row(c.clone(), Vec::new())).collect();
    if !opts.mariadb_options.is_empty() {
        out.push(row(combos[0].clone(), opts.mariadb_options.clone()));
    }
    out
}

/// Runs every row `--reps` times. The sysctls were guarded before the
/// sandbox was entered; they are restored here, whatever happens.
pub(crate) fn run(
    opts: &Options,
    sysctls: Sysctls,
    sandbox: &mut Sandbox,
    proc: &ProcRoot,
    announce: &dyn Fn(&str),
) -> Result<MitigateResult> {
    let header = crate::result::Header::new("mitigate");
    let environment = Environment::capture(proc);
    let mut sysctls = sysctls;
    let mut rows = rows(opts);
    let outcome = run_rows(opts, &mut sysctls, &mut rows, sandbox, proc, announce);
    let restored = sysctls.restore();
    outcome?;
    let changes = restored?;
    for c in &changes {
        announce(&format!(
            "{}: changed to {} during the run, restored to {} (reads {})",
            c.name,
            c.written.join(", "),
            c.original,
            c.restored.as_deref().unwrap_or("?")
        ));
    }
    let mut verdicts = summary::summarise(&mut rows, opts);
    let memory_limit_sweep = limits::sweep(&rows, opts);
    if let Some(s) = &memory_limit_sweep {
        verdicts.push(s.verdict.clone());
    }
    let mut notes = vec![
        "dentries held = what the run's filesystem still had in the cache at the end (the drop of dentry-state \
         across its umount, a few ms); per 1,000 ops and growth/min are from that. The machine-wide columns \
         (dentry-state over the run) include other processes' dentries; the cgroup's kernel memory is the run's own. For mariadb the held counts include what the install and the \
         load left on the filesystem; the machine-wide negative count over the measured window does not (exact on \
         an idle machine)"
            .to_string(),
    ];
    for r in &rows {
        for k in r.oom_killed.iter().chain(&r.not_run) {
            notes.push(format!("{}: {k}", r.label));
        }
    }
    if rows.iter().flat_map(|r| &r.runs).any(|r| !r.limit_reached) {
        notes.push(
            "some runs never reached their memory limit: there the kernel had no reason to reclaim, and a knob that \
             acts under pressure (vfs_cache_pressure) could not show; give a smaller --memory-limit or a longer \
             --duration"
                .into(),
        );
    }
    Ok(MitigateResult {
        header,
        environment,
        options: opts.clone(),
        sandbox: sandbox.privilege,
        sysctls: changes,
        rows,
        verdicts,
        memory_limit_sweep,
        notes,
    })
}

fn run_rows(
    opts: &Options,
    sysctls: &mut Sysctls,
    rows: &mut [Row],
    sandbox: &mut Sandbox,
    proc: &ProcRoot,
    announce: &dyn Fn(&str),
) -> Result<()> {
    let total = rows.len();
    for rep in 1..=opts.reps {
        for (i, row) in rows.iter_mut().enumerate() {
            announce(&format!("rep {rep}/{}, {}/{total}: {}", opts.reps, i + 1, row.label));
            sysctls.apply(&row.settings)?;
            let drop_every =
                row.settings.iter().find_map(|(k, v)| if *k == Knob::DropCachesEvery { v.every() } else { None });
            // memory-limit=…: this row's limit instead of --memory-limit.
            let limited;
            let o = match limits::limit_of(row) {
                Some(b) => {
                    limited = Options { memory_limit: Some(b), ..opts.clone() };
                    &limited
                }
                None => opts,
            };
            match one::run(o, &row.server_options, drop_every, rep, sandbox, proc) {
                Ok(r) => row.runs.push(r),
                Err(e) if e.downcast_ref::<oom::OomKilled>().is_some() => {
                    let Ok(k) = e.downcast::<oom::OomKilled>() else { unreachable!("checked above") };
                    let line = format!("rep {rep}: {}", k.0.finding);
                    announce(&format!("{}: {line}; going on with the other combinations", row.label));
                    row.oom_killed.push(line);
                    row.oom.push(*k.0);
                }
                Err(e) if e.downcast_ref::<one::BelowSetup>().is_some() => {
                    let line = format!("rep {rep}: not run: {e}");
                    announce(&format!("{}: {line}; going on with the other combinations", row.label));
                    row.not_run.push(line);
                }
                Err(e) => return Err(e.context(format!("{} (rep {rep})", row.label))),
            }
        }
    }
    Ok(())
}

/// `__mitigate-worker`: this binary re-executed as the workload process
/// of `mitigate`.
#[derive(Debug, clap::Args)]
pub(crate) struct WorkerArgs {
    pub workload: String,
    pub root: std::path::PathBuf,
}

impl WorkerArgs {
    pub(crate) fn run(&self) -> Result<()> {
        worker_main(&self.workload, &self.root)
    }
}

/// The child of a steady workload: runs it in `root`, printing its
/// operation count every 100 ms, until it is killed.
pub(crate) fn worker_main(workload: &str, root: &std::path::Path) -> Result<()> {
    crate::sys::die_with_parent()?;
    let w = match workload.parse::<Workload>() {
        Ok(Workload::Steady(s)) => s,
        Ok(Workload::Mariadb | Workload::Containers) | Err(_) => {
            bail!("internal error: {workload:?} is not a steady workload")
        }
    };
    let ops = Arc::new(AtomicU64::new(0));
    let ops2 = Arc::clone(&ops);
    std::thread::spawn(move || {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        loop {
            std::thread::sleep(one::WORKER_REPORT_EVERY);
            if writeln!(out, "{}", ops2.load(Ordering::Relaxed)).and_then(|_| out.flush()).is_err() {
                std::process::exit(0);
            }
        }
    });
    w.run(root, &ops)
}

#[cfg(test)]
mod workload_tests {
    use super::Workload;

    /// Every workload once, with the names `--workload` always took.
    #[test]
    fn workload_names_are_derived_and_parse_back() {
        assert_eq!(Workload::names(), ["temp-tables", "lookups", "files", "mariadb", "containers"]);
        for w in Workload::all() {
            assert_eq!(w.name().parse::<Workload>(), Ok(w));
        }
    }
}
