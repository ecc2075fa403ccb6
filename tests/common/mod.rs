//! Helpers shared by the integration tests: the binary, kernel counters,
//! a lock so tests that move kernel counters never overlap, and skips that
//! cannot hide: `require!` skips a test with a line on the terminal and in
//! `target/tmp/skipped-tests.txt` (which `.ci/run` prints), and on CI
//! (`CI` set) fails it instead, since CI runs as root with every tool.

#![allow(dead_code)]

pub mod busy;

use std::process::Command;
use std::sync::{Mutex, MutexGuard};

static KERNEL: Mutex<()> = Mutex::new(());

/// Serialises tests that create dentries (the counters are global).
pub fn kernel_lock() -> MutexGuard<'static, ()> {
    KERNEL.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dentrylab"))
}

/// The effective user is root.
pub fn is_root() -> bool {
    dentrylab::sys::is_root()
}

/// `tool` is on the PATH.
pub fn has(tool: &str) -> bool {
    dentrylab::sys::which(tool).is_some()
}

/// Running on CI: `CI` is set to anything but empty, `0` or `false`.
pub fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// File where skipped tests are listed, one per line (`.ci/run` prints it).
pub fn skip_log() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests.txt")
}

/// Records that the running test is skipped because of `reason`: a line on
/// the terminal (written past the harness's capture) and in [`skip_log`].
/// On CI it panics instead: nothing there has a reason to skip.
pub fn skip(reason: &str) {
    use std::io::Write;
    let test = std::thread::current().name().unwrap_or("?").to_string();
    let krate = std::env::args().next().and_then(|a| {
        let f = std::path::Path::new(&a).file_name()?.to_string_lossy().into_owned();
        Some(f.rsplit_once('-').map_or(f.clone(), |(k, _)| k.to_string()))
    });
    let line = format!("{}::{test}: {reason}", krate.unwrap_or_default());
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(skip_log()) {
        let _ = writeln!(f, "{line}");
    }
    if on_ci() {
        panic!("skipped on CI (CI is set; CI runs as root with every tool installed): {reason}");
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED {line}");
}

/// `require!(condition, "reason {}", args…)`: skips the test (see [`skip`])
/// unless `condition` holds.
#[macro_export]
macro_rules! require {
    ($cond:expr, $($reason:tt)+) => {
        if !$cond {
            $crate::common::skip(&format!($($reason)+));
            return;
        }
    };
}

/// Skips (visibly; fails on CI) when not root: these tests need to mount.
#[macro_export]
macro_rules! require_root {
    () => {
        $crate::require!($crate::common::is_root(), "needs root to mount");
    };
}

/// Skips (visibly; fails on CI) unless root and every tool is installed.
#[macro_export]
macro_rules! require_root_and {
    ($($tool:expr),+) => {
        $crate::require_root!();
        $( $crate::require!($crate::common::has($tool), "needs {} (see .ci/run for its package)", $tool); )+
    };
}

/// Runs the binary and parses its `--json -` output.
pub fn run_json(args: &[&str]) -> serde_json::Value {
    json_of(bin(), args)
}

/// Runs `cmd ARGS… --json -` and parses its output; a failed run fails the test.
pub fn json_of(mut cmd: Command, args: &[&str]) -> serde_json::Value {
    let out = cmd.args(args).args(["--json", "-"]).output().unwrap();
    assert!(
        out.status.success(),
        "dentrylab {args:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// Mount namespaces (inode of /proc/PID/ns/mnt) of every live process.
pub fn live_mount_namespaces() -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit())
            && let Ok(l) = std::fs::read_link(e.path().join("ns/mnt"))
        {
            v.push(l.to_string_lossy().into_owned());
        }
    }
    v
}

/// Loop devices as (name, backing device, backing inode).
pub fn loop_devices() -> std::collections::BTreeSet<(String, String, String)> {
    let out = std::process::Command::new("losetup")
        .args(["-l", "-n", "-O", "NAME,BACK-MAJ:MIN,BACK-INO"])
        .output()
        .expect("losetup");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.to_string(), it.next()?.to_string()))
        })
        .collect()
}

/// Loop devices mounted in the mount namespaces of `pids`.
pub fn loops_mounted_by(pids: &[u32]) -> std::collections::BTreeSet<String> {
    pids.iter()
        .filter_map(|p| std::fs::File::open(format!("/proc/{p}/mountinfo")).ok())
        .filter_map(|f| dentrylab::procfs::mountinfo::parse(std::io::BufReader::new(f)).ok())
        .flatten()
        .map(|m| m.source)
        .filter(|s| s.starts_with("/dev/loop"))
        .collect()
}

pub fn wait_until(what: &str, limit: std::time::Duration, mut ok: impl FnMut() -> bool) {
    let t = std::time::Instant::now();
    while !ok() {
        assert!(t.elapsed() < limit, "{what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Runs `dentrylab COMMAND ARGS…`, expecting exit 2 and one line on
/// standard error holding every one of `needles`, and nothing on stdout.
pub fn usage_error(command: &str, args: &[&str], needles: &[&str]) {
    let out = bin().arg(command).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{command} {args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{command} {args:?}: one line: {err}");
    for n in needles {
        assert!(err.contains(n), "{command} {args:?}: {err} lacks {n:?}");
    }
    assert!(out.stdout.is_empty());
}

/// A run's processes (dentrylab and its direct children: a generator or
/// the containers), their mount namespaces, and the loop devices they have
/// mounted: what must be gone after a SIGKILL.
pub struct Family {
    pub pids: Vec<u32>,
    pub namespaces: Vec<String>,
    pub loops: Vec<(String, String, String)>,
}

pub fn family_of(pid: u32) -> Family {
    let mut pids = vec![pid];
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    pids.extend(children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
    // A process killed before it entered a namespace of its own (the first
    // milliseconds; longer on a loaded machine) is still in the test's:
    // that one outlives the kill by design and is not the run's.
    let mine = std::fs::read_link("/proc/self/ns/mnt").map(|l| l.to_string_lossy().into_owned()).ok();
    let namespaces = pids
        .iter()
        .filter_map(|p| std::fs::read_link(format!("/proc/{p}/ns/mnt")).ok())
        .map(|l| l.to_string_lossy().into_owned())
        .filter(|n| Some(n) != mine.as_ref())
        .collect();
    let ours = loops_mounted_by(&pids);
    let loops = loop_devices().into_iter().filter(|(n, _, _)| ours.contains(n)).collect();
    Family { pids, namespaces, loops }
}

/// After a run was SIGKILLed at `ms`: its mount namespaces and loop devices
/// go (within 60 s: generous, for a loaded machine), and no overlay of the
/// sandbox stays mounted.
pub fn assert_nothing_left_after_kill(ms: u64, namespaces: &[String], loops: &[(String, String, String)]) {
    let limit = std::time::Duration::from_secs(60);
    wait_until(&format!("killed at {ms} ms: the run's namespaces outlived the kill"), limit, || {
        let live = live_mount_namespaces();
        namespaces.iter().all(|n| !live.contains(n))
    });
    wait_until(&format!("killed at {ms} ms: loop devices {loops:?} still attached"), limit, || {
        let now = loop_devices();
        loops.iter().all(|l| !now.contains(l))
    });
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains("dentrylab-overlay"), "an overlay is still mounted");
}

/// A cgroup directory made for one test, removed (retried while its last
/// task exits) when dropped.
pub struct TempCgroup(pub std::path::PathBuf);

impl TempCgroup {
    /// `controller_dir/dentrylab-test-NAME-PID`, created.
    pub fn new(controller_dir: &std::path::Path, name: &str) -> TempCgroup {
        let dir = controller_dir.join(format!("dentrylab-test-{name}-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        TempCgroup(dir)
    }

    /// `sh` that moves itself into this cgroup, then execs dentrylab.
    pub fn command(&self) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(r#"echo $$ > "$0/cgroup.procs" && exec "$@""#)
            .arg(&self.0)
            .arg(env!("CARGO_BIN_EXE_dentrylab"));
        c
    }
}

impl Drop for TempCgroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}
