//! Finding runsc and running one worker inside it: an OCI bundle whose root
//! is the host's `/` and whose only extra mount is the work directory,
//! bind-mounted at the same path (a gofer filesystem of its own, with its
//! own dentry cache unless `--dcache` makes one global cache), started with
//! `runsc run` on the systrap platform, no network, no cgroups.
//!
//! While it runs, the sentry's and the gofer's open host file descriptors
//! are counted from /proc: with directfs (runsc's default) each gofer
//! dentry the sentry caches holds a host FD, so the sentry's FD count
//! follows its dentry cache ("-dcache ... acts as a coarse-grained control
//! on the number of host FDs simultaneously open by the sentry", runsc
//! flags), and each of those FDs pins a host dentry.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::UsageError;

/// Environment variable naming the runsc binary (else `runsc` on the PATH).
pub(crate) const RUNSC_ENV: &str = "DENTRYLAB_RUNSC";

/// The runsc binary: `explicit`, else $DENTRYLAB_RUNSC, else `runsc` on the
/// PATH. Missing: a usage error (exit 2) saying how to build it.
pub fn find(explicit: Option<&Path>) -> Result<PathBuf> {
    let hint =
        "build it with bench/gvisor/install.sh and pass --runsc PATH, set DENTRYLAB_RUNSC, or put it on the PATH";
    let usable = |p: &Path| crate::sys::is_executable(p);
    if let Some(p) = explicit {
        if usable(p) {
            return Ok(p.to_path_buf());
        }
        return Err(UsageError(format!("--runsc {}: no executable file there: {hint}", p.display())).into());
    }
    if let Some(p) = std::env::var_os(RUNSC_ENV).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        if usable(&p) {
            return Ok(p);
        }
        return Err(UsageError(format!("{RUNSC_ENV}={}: no executable file there: {hint}", p.display())).into());
    }
    if let Some(p) = crate::sys::which("runsc") {
        return Ok(p);
    }
    Err(UsageError(format!("runsc not found (no --runsc, no {RUNSC_ENV}, not on the PATH): {hint}")).into())
}

/// `runsc --version`, first line.
pub(crate) fn version(runsc: &Path) -> Result<String> {
    let out = std::process::Command::new(runsc)
        .arg("--version")
        .output()
        .with_context(|| format!("running {} --version", runsc.display()))?;
    if !out.status.success() {
        bail!("{} --version: {}", runsc.display(), String::from_utf8_lossy(&out.stderr).trim());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().map(str::trim).collect::<Vec<_>>().join("; "))
}

/// The sentry's dentry cache: runsc's `--dcache`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Dcache {
    /// Not given (runsc's default, -1): each gofer mount keeps its own LRU of
    /// 1,000 unreferenced dentries (defaultMaxCachedDentries).
    PerMount,
    /// One LRU of this many unreferenced dentries shared by all gofer mounts.
    Global(u64),
}

impl Dcache {
    pub(crate) fn label(self) -> String {
        match self {
            Dcache::PerMount => "per-mount".into(),
            Dcache::Global(n) => n.to_string(),
        }
    }
}

impl std::str::FromStr for Dcache {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "per-mount" {
            return Ok(Dcache::PerMount);
        }
        s.parse::<u64>().map(Dcache::Global).map_err(|_| format!("{s:?}: a dentry count (0 or more) or per-mount"))
    }
}

/// What one sandboxed run saw from outside.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Observed {
    /// Most host FDs the sentry (runsc-sandbox) held at one sample (every 20 ms).
    pub sentry_fds_max: u64,
    /// Most host FDs the gofer held at one sample.
    pub gofer_fds_max: u64,
    /// Samples taken.
    pub samples: u64,
    /// runsc's metrics at sandbox exit (--final-metrics-log), name -> value.
    pub metrics: BTreeMap<String, f64>,
    /// Wall time of `runsc run`, start to exit (sandbox start and stop included), seconds.
    pub run_seconds: f64,
}

pub(crate) struct Run<'a> {
    pub runsc: &'a Path,
    pub dcache: Dcache,
    /// Directory for the bundle, runsc's state, logs and metrics.
    pub scratch: &'a Path,
    /// Mounted into the sandbox at the same path.
    pub volume: &'a Path,
    pub id: String,
    /// Extra runsc flags (before the subcommand).
    pub extra_flags: &'a [String],
}

/// Runs `args` (the worker's command line) as the sandbox's init process.
pub(crate) fn run(r: &Run, args: &[String]) -> Result<Observed> {
    let bundle = r.scratch.join(format!("bundle-{}", r.id));
    let state = r.scratch.join("state");
    std::fs::create_dir_all(&bundle).with_context(|| format!("creating {}", bundle.display()))?;
    std::fs::create_dir_all(&state).with_context(|| format!("creating {}", state.display()))?;
    let volume = r.volume.to_string_lossy();
    // Root read-write, no overlay: with a read-only root (or runsc's rootfs
    // overlay, which makes the gofer remount its root read-only) the bind
    // mount below it came out read-only too (EROFS on create) with this
    // runsc; see docs/gvisor.md. The workload writes only to the volume.
    let config = json!({
        "ociVersion": "1.0.0",
        "process": {
            "terminal": false,
            "user": {"uid": 0, "gid": 0},
            "args": args,
            "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
            "cwd": volume,
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 65536, "soft": 65536}]
        },
        "root": {"path": "/", "readonly": false},
        "hostname": "dentrylab",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"},
            {"destination": volume, "type": "bind", "source": volume}
        ],
        "linux": {"namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}]}
    });
    std::fs::write(bundle.join("config.json"), serde_json::to_string_pretty(&config)?)?;
    let metrics = r.scratch.join(format!("metrics-{}.txt", r.id));
    let stdout = r.scratch.join(format!("stdout-{}.txt", r.id));
    let stderr = r.scratch.join(format!("stderr-{}.txt", r.id));
    let mut cmd = std::process::Command::new(r.runsc);
    cmd.arg(format!("--root={}", state.display()))
        .args(["--network=none", "--ignore-cgroups", "--platform=systrap", "--overlay2=none"])
        .arg(format!("--final-metrics-log={}", metrics.display()));
    if let Dcache::Global(n) = r.dcache {
        cmd.arg(format!("--dcache={n}"));
    }
    cmd.args(r.extra_flags)
        .arg("run")
        .arg(format!("--bundle={}", bundle.display()))
        .arg(&r.id)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout)?)
        .stderr(std::fs::File::create(&stderr)?);
    let start = std::time::Instant::now();
    let mut child = crate::sys::spawn_tied(&mut cmd).with_context(|| format!("starting {}", r.runsc.display()))?;
    let done = AtomicBool::new(false);
    let runsc_pid = child.id();
    let (status, mut obs) = std::thread::scope(|s| {
        let sampler = s.spawn(|| sample_fds(runsc_pid, &done));
        let status = child.wait();
        done.store(true, Ordering::Relaxed);
        (status, sampler.join().unwrap_or_default())
    });
    obs.run_seconds = start.elapsed().as_secs_f64();
    // As runsc's own UnmountNullNetNS: stacked bind mounts are possible.
    let netns = state.join("null-netns");
    while nix::mount::umount2(&netns, nix::mount::MntFlags::MNT_DETACH).is_ok() {}
    let status = status.context("waiting for runsc")?;
    if !status.success() {
        let err = std::fs::read_to_string(&stderr).unwrap_or_default();
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("(no output)");
        bail!(
            "runsc run ({}) failed ({status}); its last line of standard error: {last}; all of it in {}",
            r.dcache.label(),
            stderr.display()
        );
    }
    obs.metrics = parse_metrics(&std::fs::read_to_string(&metrics).unwrap_or_default());
    Ok(obs)
}

/// Prometheus text lines `name value [timestamp]` -> name -> value (labels kept in the name).
pub(crate) fn parse_metrics(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut it = line.split_whitespace();
        if let (Some(name), Some(v)) = (it.next(), it.next())
            && let Ok(v) = v.parse::<f64>()
        {
            out.insert(name.to_string(), v);
        }
    }
    out
}

/// Processes under `root` (its descendants) whose argv[0] is `name`.
fn descendants_named(root: u32, name: &str) -> Vec<u32> {
    let mut parent = BTreeMap::new();
    let mut argv0 = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, split after the last ')'.
        let Some(ppid) =
            stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
        else {
            continue;
        };
        parent.insert(pid, ppid);
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            argv0.insert(pid, String::from_utf8_lossy(cmd.split(|&b| b == 0).next().unwrap_or(&[])).into_owned());
        }
    }
    let under = |mut p: u32| {
        for _ in 0..16 {
            match parent.get(&p) {
                Some(&pp) if pp == root => return true,
                Some(&pp) if pp > 1 => p = pp,
                _ => return false,
            }
        }
        false
    };
    argv0.iter().filter(|(pid, a)| a.as_str() == name && under(**pid)).map(|(p, _)| *p).collect()
}

fn fd_count(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64)
}

fn sample_fds(runsc: u32, done: &AtomicBool) -> Observed {
    let mut o = Observed::default();
    let (mut sentry, mut gofer) = (vec![], vec![]);
    while !done.load(Ordering::Relaxed) {
        if sentry.is_empty() {
            sentry = descendants_named(runsc, "runsc-sandbox");
        }
        if gofer.is_empty() {
            gofer = descendants_named(runsc, "runsc-gofer");
        }
        o.sentry_fds_max = o.sentry_fds_max.max(sentry.iter().map(|&p| fd_count(p)).sum());
        o.gofer_fds_max = o.gofer_fds_max.max(gofer.iter().map(|&p| fd_count(p)).sum());
        o.samples += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dcache_parses() {
        assert_eq!("per-mount".parse::<Dcache>(), Ok(Dcache::PerMount));
        assert_eq!("100".parse::<Dcache>(), Ok(Dcache::Global(100)));
        assert!("-1".parse::<Dcache>().is_err());
        assert!("many".parse::<Dcache>().is_err());
    }

    #[test]
    fn metrics_parse() {
        let m = parse_metrics("# HELP x\nrunsc_fs_opens 10 1795595636258\nrunsc_x{a=\"b\"} 2 1\n\n");
        assert_eq!(m.get("runsc_fs_opens"), Some(&10.0));
        assert_eq!(m.get("runsc_x{a=\"b\"}"), Some(&2.0));
        assert_eq!(m.len(), 2);
    }
}
