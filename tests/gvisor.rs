//! `dentrylab gvisor`: a tiny workload natively and inside gVisor's runsc.
//! runsc comes from bench/gvisor/install.sh (.ci/run runs it and puts it on
//! the PATH, so on CI these tests never skip).

mod common;

use std::path::PathBuf;

use serde_json::Value;

/// runsc as `dentrylab gvisor` would find it, or where the install script puts it.
fn runsc() -> Option<PathBuf> {
    if let Ok(p) = dentrylab::bench::common::runsc::find(None) {
        return Some(p);
    }
    let local = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/gvisor/bin/runsc");
    local.is_file().then_some(local)
}

fn gvisor_json(runsc: &PathBuf, dir: &std::path::Path, args: &[&str]) -> Value {
    let out = common::bin()
        .arg("gvisor")
        .arg("--runsc")
        .arg(runsc)
        .arg("--dir")
        .arg(dir)
        .args(args)
        .args(["--json", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "dentrylab gvisor {args:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn rows<'a>(v: &'a Value, config: &str) -> Vec<&'a Value> {
    v["rows"].as_array().unwrap().iter().filter(|r| r["config"]["kind"] == config).collect()
}

#[test]
fn missing_runsc_is_one_line_and_exit_2() {
    let empty = tempfile::tempdir().unwrap();
    let out = common::bin()
        .args(["gvisor", "--rounds", "1"])
        .env("PATH", empty.path())
        .env_remove("DENTRYLAB_RUNSC")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("runsc not found") && err.contains("bench/gvisor/install.sh"), "{err}");

    let out = common::bin().args(["gvisor", "--runsc", "/nonexistent/runsc"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("--runsc /nonexistent/runsc"), "{err}");
}

#[test]
fn bad_dcache_is_exit_2() {
    let out = common::bin().args(["gvisor", "--dcache=lots"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("per-mount"));
    // A cache the sentry's open-file limit cannot hold.
    let out = common::bin().args(["gvisor", "--dcache", "100,4000000000"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("--dcache 4000000000") && err.contains("EMFILE"), "{err}");
}

/// Lookups natively and inside runsc with a global dentry cache of 10 and
/// of 1,000 over 400 files: both run, the sentry's host FDs follow the
/// cache size (with directfs each cached gofer dentry holds one), and the
/// tree is gone afterwards.
#[test]
fn lookups_inside_runsc() {
    require!(common::is_root(), "runsc run needs root");
    let runsc = runsc();
    require!(runsc.is_some(), "runsc not installed: run bench/gvisor/install.sh");
    let runsc = runsc.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let v = gvisor_json(
        &runsc,
        dir.path(),
        &[
            "--workload",
            "lookup",
            "--files",
            "400",
            "--dirs",
            "4",
            "--seconds",
            "0.3",
            "--rounds",
            "1",
            "--dcache",
            "10,1000",
        ],
    );
    assert_eq!(v["benchmark"], "gvisor");
    let native = rows(&v, "native");
    let inside = rows(&v, "runsc");
    assert_eq!(native.len(), 1);
    assert_eq!(inside.len(), 2);
    for r in native.iter().chain(&inside) {
        assert_eq!(r["phase"], "lookup");
        assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["p99_ns"].as_f64().unwrap() >= r["p50_ns"].as_f64().unwrap(), "{r}");
    }
    let fds = |d: u64| {
        inside.iter().find(|r| r["config"]["dcache"]["global"] == d).unwrap()["sentry_fds_max"].as_u64().unwrap()
    };
    // 404 dentries fit in 1,000, not in 10.
    assert!(fds(1000) > 400, "dcache=1000: {} sentry FDs", fds(1000));
    assert!(fds(10) < 200, "dcache=10: {} sentry FDs", fds(10));
    for r in &inside {
        assert!(r["slowdown"].as_f64().unwrap().is_finite(), "{r}");
    }
    let metrics = &v["runs"].as_array().unwrap()[1]["observed"]["metrics"];
    assert!(metrics.get("runsc_fs_opens").is_some(), "runsc's metrics at exit: {metrics}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the run's directories are removed");
    // runsc --network=none bind-mounts a network namespace under its state
    // directory: that mount must not reach the host's mount namespace.
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let d = dir.path().to_string_lossy();
    assert!(!mounts.lines().any(|l| l.contains(d.as_ref())), "a mount under {d} is left on the host");
}

/// The build-like workload inside runsc: every step runs every file.
#[test]
fn build_inside_runsc() {
    require!(common::is_root(), "runsc run needs root");
    let runsc = runsc();
    require!(runsc.is_some(), "runsc not installed: run bench/gvisor/install.sh");
    let runsc = runsc.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let v = gvisor_json(&runsc, dir.path(), &["--workload", "build", "--files", "300", "--dirs", "6", "--rounds", "1"]);
    for config in ["native", "runsc"] {
        let rs = rows(&v, config);
        let phase = |p: &str| rs.iter().find(|r| r["phase"] == p).unwrap_or_else(|| panic!("{config}: no {p} row"));
        for p in ["create", "stat", "unlink"] {
            assert!(phase(p)["ops_per_sec"].as_f64().unwrap() > 0.0);
        }
        let runs: Vec<&Value> =
            v["runs"].as_array().unwrap().iter().filter(|r| r["config"]["kind"] == config).collect();
        let ops = |p: &str| {
            runs[0]["phases"].as_array().unwrap().iter().find(|q| q["name"] == p).unwrap()["ops"].as_u64().unwrap()
        };
        assert_eq!((ops("mkdir"), ops("create"), ops("stat"), ops("unlink"), ops("rmdir")), (6, 300, 300, 300, 6));
        assert_eq!(ops("build-total"), 912);
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the run's directories are removed");
}
