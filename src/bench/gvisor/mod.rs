//! The same workload natively and inside gVisor's runsc, side by side in one
//! run: lookups over a tree larger than the sentry's dentry cache (every
//! `--dcache` size asked for), or a build-like create/stat/unlink of a tree.
//! Configurations are interleaved round by round (native, each runsc
//! configuration, native, ...), so a load that drifts over the run lands on
//! all of them alike; each figure is the median over the rounds.
//!
//! Inside runsc the host's dentry-state does not see the sentry's cache;
//! what is counted instead: the lookup latency and throughput the workload
//! itself sees, the host FDs the sentry holds (one per cached gofer
//! dentry with directfs), and runsc's own metrics at exit.

mod args;
pub(crate) mod command;
pub(crate) mod render;
pub(crate) mod worker;

pub(crate) use args::Args;
pub(crate) use command::Gvisor;

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::bench::common::runsc::{self, Dcache, Observed};
use crate::error::UsageError;
use crate::result::Header;
use worker::{Phase, WorkerSpec, Workload};

/// Name of the hidden subcommand that runs [`worker::worker_main`].
pub(crate) const WORKER: &str = "__gvisor-worker";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "dcache")]
pub(crate) enum Config {
    Native,
    Runsc(Dcache),
}

impl Config {
    pub(crate) fn label(self) -> String {
        match self {
            Config::Native => "native".into(),
            Config::Runsc(d) => format!("runsc dcache={}", d.label()),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Options {
    pub workload: Workload,
    /// runsc configurations; native always runs first in each round.
    pub dcache: Vec<Dcache>,
    pub threads: Vec<usize>,
    pub files: u64,
    pub dirs: u64,
    pub seconds: f64,
    pub rounds: u32,
    /// The runsc binary (see [`crate::bench::common::runsc::find`]).
    pub runsc: PathBuf,
    /// Directory the tree and runsc's scratch go under (on the host filesystem under test).
    pub dir: PathBuf,
    /// Extra runsc flags, e.g. --profile-cpu=FILE.
    pub runsc_flags: Vec<String>,
}

pub(crate) fn validate(o: &Options) -> Result<()> {
    let bad = |m: String| -> Result<()> { Err(UsageError(m).into()) };
    if o.files == 0 || o.files > 5_000_000 {
        return bad(format!("--files {}: give 1 to 5M files", o.files));
    }
    if o.dirs == 0 || o.dirs > o.files {
        return bad(format!("--dirs {}: give 1 to --files ({}) directories", o.dirs, o.files));
    }
    if o.threads.is_empty() || o.threads.iter().any(|&t| t == 0 || t > 64) {
        return bad("--threads: give thread counts from 1 to 64".into());
    }
    if !(o.seconds > 0.0 && o.seconds <= 600.0) {
        return bad(format!("--seconds {}: give more than 0 and at most 600", o.seconds));
    }
    if o.rounds == 0 || o.rounds > 50 {
        return bad(format!("--rounds {}: give 1 to 50", o.rounds));
    }
    if o.dcache.is_empty() {
        return bad("--dcache: give at least one size (or per-mount)".into());
    }
    // The sentry inherits this process's open-file limit and, with directfs,
    // holds one host FD per cached dentry: a bigger cache ends in EMFILE.
    if let Ok((soft, _)) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        && let Some(n) = o.dcache.iter().find_map(|d| match d {
            Dcache::Global(n) if n.saturating_add(1000) > soft => Some(*n),
            Dcache::Global(_) | Dcache::PerMount => None,
        })
    {
        return bad(format!(
            "--dcache {n}: the sentry holds one host file descriptor per cached dentry and inherits the open-file \
             limit ({soft}, ulimit -n), so lookups would fail with EMFILE once the cache fills: give at most {} or \
             raise ulimit -n",
            soft.saturating_sub(1000)
        ));
    }
    if !o.dir.is_dir() {
        return bad(format!("--dir {}: not a directory", o.dir.display()));
    }
    Ok(())
}

/// One configuration's run in one round.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    pub round: u32,
    pub config: Config,
    pub phases: Vec<Phase>,
    /// runsc only.
    pub observed: Option<Observed>,
}

/// Medians over the rounds of one (configuration, phase, threads).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Row {
    pub config: Config,
    pub phase: String,
    pub threads: usize,
    pub ops_per_sec: f64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub seconds: f64,
    /// Native's ops/s over this one's (how many times slower than native); 1 for native.
    pub slowdown: f64,
    /// Smallest and largest ops/s over the rounds.
    pub ops_per_sec_min: f64,
    pub ops_per_sec_max: f64,
    /// runsc only: median over rounds of the sentry's most host FDs.
    pub sentry_fds_max: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct GvisorResult {
    #[serde(flatten)]
    pub header: Header,
    pub options: Options,
    pub runsc_version: String,
    pub kernel: String,
    /// /proc/loadavg's 1-minute figure at the start and at the end: the run's load.
    pub loadavg_start: f64,
    pub loadavg_end: f64,
    pub cpus: usize,
    pub runs: Vec<RunRecord>,
    pub rows: Vec<Row>,
}

fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Removes the run's directories when it ends well (kept for a look when it fails).
struct Cleanup(Vec<PathBuf>, bool);
impl Drop for Cleanup {
    fn drop(&mut self) {
        if self.1 {
            for d in &self.0 {
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }
}

pub(crate) fn run(o: &Options, announce: &dyn Fn(&str)) -> Result<GvisorResult> {
    validate(o)?;
    // runsc --network=none bind-mounts a network namespace under its state
    // directory (NullNetNSFilename, runsc/specutils/namespace.go) and leaves
    // it there: in a private namespace it never reaches the host.
    crate::sandbox::Sandbox::private_mount_namespace()?;
    let header = Header::new("gvisor");
    let runsc_version = runsc::version(&o.runsc)?;
    let exe = std::env::current_exe().context("finding dentrylab's own executable")?;
    let base = o.dir.join(format!("dentrylab-gvisor-{}", std::process::id()));
    let scratch = o.dir.join(format!("dentrylab-gvisor-{}-runsc", std::process::id()));
    let mut cleanup = Cleanup(vec![base.clone(), scratch.clone()], false);
    let tree = base.join("tree");
    std::fs::create_dir_all(&tree).with_context(|| format!("creating {}", tree.display()))?;
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    if o.workload.needs_tree() {
        announce(&format!("Making the tree: {} files in {} directories under {}", o.files, o.dirs, tree.display()));
        worker::make_tree(&tree, o.files, o.dirs)?;
    }
    let loadavg_start = loadavg();
    let configs: Vec<Config> =
        std::iter::once(Config::Native).chain(o.dcache.iter().map(|&d| Config::Runsc(d))).collect();
    let mut runs = Vec::new();
    for round in 0..o.rounds {
        for (ci, &config) in configs.iter().enumerate() {
            announce(&format!("round {}/{}: {}", round + 1, o.rounds, config.label()));
            let out = base.join(format!("out-{round}-{ci}.json"));
            let spec = WorkerSpec {
                workload: o.workload,
                root: tree.clone(),
                files: o.files,
                dirs: o.dirs,
                threads: o.threads.clone(),
                seconds: o.seconds,
                out: out.clone(),
            };
            let args = vec![
                exe.to_string_lossy().into_owned(),
                crate::sys::INTERNAL_COMMAND.to_string(),
                WORKER.to_string(),
                serde_json::to_string(&spec)?,
            ];
            let observed = match config {
                Config::Native => {
                    run_native(&args)?;
                    None
                }
                Config::Runsc(dcache) => {
                    let r = runsc::Run {
                        runsc: &o.runsc,
                        dcache,
                        scratch: &scratch,
                        volume: &base,
                        id: format!("dentrylab-{}-{round}-{ci}", std::process::id()),
                        extra_flags: &o.runsc_flags,
                    };
                    Some(runsc::run(&r, &args)?)
                }
            };
            let phases = worker::read_result(&out)?.phases;
            let _ = std::fs::remove_file(&out);
            runs.push(RunRecord { round, config, phases, observed });
        }
    }
    let rows = summarise(&configs, &runs);
    cleanup.1 = true;
    drop(cleanup);
    Ok(GvisorResult {
        header,
        options: o.clone(),
        runsc_version,
        kernel: nix::sys::utsname::uname().map(|u| u.release().to_string_lossy().into_owned()).unwrap_or_default(),
        loadavg_start,
        loadavg_end: loadavg(),
        cpus: crate::env::cpus(),
        runs,
        rows,
    })
}

fn run_native(args: &[String]) -> Result<()> {
    let mut cmd = std::process::Command::new(crate::sys::SELF_EXE);
    cmd.args(&args[1..]).stdin(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
    let mut child = crate::sys::spawn_tied(&mut cmd).context("starting the native worker")?;
    let status = child.wait().context("waiting for the native worker")?;
    if !status.success() {
        anyhow::bail!("the native worker failed ({status}): {}", crate::sys::child_stderr(&mut child));
    }
    Ok(())
}

fn median(v: Vec<f64>) -> f64 {
    crate::stats::median(&v)
}

/// Medians over the rounds, and each row's slowdown against native's row of
/// the same phase and thread count.
pub(crate) fn summarise(configs: &[Config], runs: &[RunRecord]) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for &config in configs {
        let mine: Vec<&RunRecord> = runs.iter().filter(|r| r.config == config).collect();
        let Some(first) = mine.first() else { continue };
        for p in &first.phases {
            let same: Vec<&Phase> = mine
                .iter()
                .filter_map(|r| r.phases.iter().find(|q| q.name == p.name && q.threads == p.threads))
                .collect();
            let ops: Vec<f64> = same.iter().map(|q| q.ops_per_sec).collect();
            let fds: Vec<f64> =
                mine.iter().filter_map(|r| r.observed.as_ref()).map(|o| o.sentry_fds_max as f64).collect();
            rows.push(Row {
                config,
                phase: p.name.clone(),
                threads: p.threads,
                ops_per_sec: median(ops.clone()),
                p50_ns: median(same.iter().map(|q| q.p50_ns).collect()),
                p99_ns: median(same.iter().map(|q| q.p99_ns).collect()),
                seconds: median(same.iter().map(|q| q.seconds).collect()),
                slowdown: f64::NAN,
                ops_per_sec_min: ops.iter().copied().fold(f64::INFINITY, f64::min),
                ops_per_sec_max: ops.iter().copied().fold(0.0, f64::max),
                sentry_fds_max: (!fds.is_empty()).then(|| median(fds) as u64),
            });
        }
    }
    let natives: Vec<(String, usize, f64)> = rows
        .iter()
        .filter(|r| r.config == Config::Native)
        .map(|r| (r.phase.clone(), r.threads, r.ops_per_sec))
        .collect();
    for r in &mut rows {
        if let Some((_, _, n)) = natives.iter().find(|(p, t, _)| *p == r.phase && *t == r.threads) {
            r.slowdown = n / r.ops_per_sec;
        }
    }
    rows
}

/// The directory the tree goes under by default: the system's temporary directory.
pub(crate) fn default_dir() -> PathBuf {
    std::env::temp_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(name: &str, threads: usize, ops_per_sec: f64) -> Phase {
        Phase {
            name: name.into(),
            threads,
            ops: 1,
            seconds: 1.0,
            ops_per_sec,
            p50_ns: 100.0,
            p99_ns: 1000.0,
            max_ns: 2000,
        }
    }

    #[test]
    fn slowdown_is_native_over_config_with_medians_over_rounds() {
        let rs = Config::Runsc(Dcache::Global(100));
        let runs = vec![
            RunRecord { round: 0, config: Config::Native, phases: vec![phase("lookup", 1, 1000.0)], observed: None },
            RunRecord {
                round: 0,
                config: rs,
                phases: vec![phase("lookup", 1, 100.0)],
                observed: Some(Observed::default()),
            },
            RunRecord { round: 1, config: Config::Native, phases: vec![phase("lookup", 1, 3000.0)], observed: None },
            RunRecord {
                round: 1,
                config: rs,
                phases: vec![phase("lookup", 1, 300.0)],
                observed: Some(Observed::default()),
            },
            RunRecord { round: 2, config: Config::Native, phases: vec![phase("lookup", 1, 2000.0)], observed: None },
            RunRecord {
                round: 2,
                config: rs,
                phases: vec![phase("lookup", 1, 200.0)],
                observed: Some(Observed::default()),
            },
        ];
        let rows = summarise(&[Config::Native, rs], &runs);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].ops_per_sec, 2000.0);
        assert_eq!(rows[0].slowdown, 1.0);
        assert_eq!(rows[1].ops_per_sec, 200.0);
        assert_eq!(rows[1].slowdown, 10.0);
        assert_eq!((rows[1].ops_per_sec_min, rows[1].ops_per_sec_max), (100.0, 300.0));
        assert_eq!(rows[1].sentry_fds_max, Some(0));
        assert_eq!(rows[0].sentry_fds_max, None);
    }
}
