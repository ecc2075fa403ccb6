//! `dentrylab status`: figures from captured proc trees, the
//! calibration named, `--json`, `--textfile` (the golden metrics, written
//! atomically), `--fail-on` exit codes, and a run as a non-root user.

mod common;
mod metrics;

use std::process::{Command, Output};

use dentrylab::size::human;
use metrics::{assert_golden, builtin_ns_per_dentry, calibration_dir, fixture, proc_root_with};

fn status(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dentrylab")).arg("status").args(args).output().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// The table row that starts with `label`, with its cells separated by one space.
fn row(out: &str, label: &str) -> String {
    let l = out.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no row {label:?} in\n{out}"));
    l.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn p(path: &std::path::Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn prints_figures_and_names_the_builtin_calibration() {
    let state = tempfile::tempdir().unwrap();
    let o = status(&["--proc-root", p(&fixture("6.18")), "--state-dir", p(state.path())]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    for want in [
        "kernel 6.18.44-fc-v657 (none preemption)",
        "watchdog_thresh 10 s, vfs_cache_pressure 100",
        "calibration: built-in conservative default (no calibration at",
        "validated by the kernel watchdog: no",
        "predicted full reclaim time",
        "predicted longest stretch",
        "distance: ratio",
    ] {
        assert!(out.contains(want), "{want:?} missing from\n{out}");
    }
    assert_eq!(row(&out, "all (nr_dentry)"), "all (nr_dentry) 37,475 6.9 MiB");
    assert_eq!(row(&out, "negative (nr_negative)"), "negative (nr_negative) 6,072 1.1 MiB");
    // The built-in edge: 20 s at the worst cost per dentry, less the 37,475 dentries there.
    let edge = 20.0 / (builtin_ns_per_dentry() * 1e-9);
    assert_eq!(
        row(&out, "distance: count"),
        format!(
            "distance: count {} dentries to the edge (edge at {} (no interval))",
            human((edge - 37_475.0) as u64),
            human(edge as u64)
        )
    );
    assert_eq!(row(&out, "soft-lockup level"), "soft-lockup level ok");
    // No victims in the built-in default: the level is the soft-lockup one.
    let level = row(&out, "level:");
    assert!(level.starts_with("level: ok, the nearest deadline is the soft-lockup watchdog (20 s)"), "{level}");
    assert!(level.ends_with("the first incident is unknown, so this is the soft-lockup level"), "{level}");
}

#[test]
fn names_the_saved_calibration_and_says_when_it_is_from_another_kernel() {
    let o = status(&["--proc-root", p(&fixture("5.10")), "--state-dir", p(&calibration_dir())]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("6.18-quick/calibration.json (saved 2026-11-22T13:13:52Z"), "{out}");
    assert!(out.contains("measured on kernel 6.18.44-fc-v657, this node runs 5.10.207"), "{out}");
    assert!(out.contains("extrapolates"), "{out}");
}

#[test]
fn json_output() {
    let state = tempfile::tempdir().unwrap();
    let o = status(&["--proc-root", p(&fixture("5.10")), "--state-dir", p(state.path()), "--json", "-"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("nr_dentry"), "the table goes to stderr when JSON is on stdout");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["schema"].as_u64().is_some_and(|s| s >= 1));
    assert_eq!(v["benchmark"], "status");
    assert_eq!(v["dentries"]["nr_dentry"], 9_999_922);
    assert_eq!(v["dentries"]["dentry_bytes"], 9_999_922u64 * 192);
    assert_eq!(v["calibration"]["source"], "builtin");
    assert_eq!(v["calibration"]["calibration"]["validated_by_watchdog"], false);
    assert_eq!(v["prediction"]["soft_lockup_threshold_seconds"], 20.0);
    let r = v["prediction"]["lockup_ratio"].as_f64().unwrap();
    let want = builtin_ns_per_dentry() * 1e-9 * 9_999_922.0 / 20.0;
    assert!((r - want).abs() < 1e-6 * want, "{r} {want}");
    assert_eq!(v["level"], v["prediction"]["level"], "no victims: the soft-lockup level");
    assert_eq!(
        v["prediction"]["level"],
        if want >= 1.0 {
            "danger"
        } else if want >= 0.5 {
            "warn"
        } else {
            "ok"
        }
    );
    assert_eq!(v["prediction"]["governs"], "total_time", "the built-in default never yields");
    assert_eq!(v["environment"]["kernel"], "5.10.207");
}

#[test]
fn fail_on_sets_the_exit_status() {
    let state = tempfile::tempdir().unwrap();
    let sd = p(state.path()).to_string();
    // Built-in default: the worst cost per dentry against 20 s; ratios 0.65 and 2.2.
    let edge = 20.0 / (builtin_ns_per_dentry() * 1e-9);
    let state_of = |n: f64| format!("{} {} 45 0 1000 0\n", n as u64, n as u64 / 2);
    let warn = proc_root_with(&state_of(0.65 * edge), "10\n");
    let danger = proc_root_with(&state_of(2.2 * edge), "10\n");
    let code = |root: &tempfile::TempDir, extra: &[&str]| {
        let mut a = vec!["--proc-root", p(root.path()), "--state-dir", &sd];
        a.extend_from_slice(extra);
        let o = status(&a);
        assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
        (o.status.code().unwrap(), String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let (c, out) = code(&warn, &[]);
    assert_eq!(c, 0);
    assert_eq!(row(&out, "soft-lockup level"), "soft-lockup level warn");
    assert!(row(&out, "level:").starts_with("level: warn, set by the soft-lockup watchdog (20 s)"), "{out}");
    assert_eq!(code(&warn, &["--fail-on", "warn"]).0, 3);
    assert_eq!(code(&warn, &["--fail-on", "danger"]).0, 0);
    let (c, out) = code(&danger, &["--fail-on", "warn"]);
    assert_eq!(c, 4);
    assert!(out.contains("dentries past the edge"), "{out}");
    assert_eq!(code(&danger, &["--fail-on", "danger"]).0, 4);
    // A smaller watchdog_thresh moves the edge: the warn count against 2 s is danger.
    let tight = proc_root_with(&state_of(0.65 * edge), "1\n");
    assert_eq!(code(&tight, &["--fail-on", "danger"]).0, 4);
}

#[test]
fn watchdog_off_has_no_threshold() {
    let state = tempfile::tempdir().unwrap();
    let root = proc_root_with("100000000 99000000 45 0 1000 0\n", "0\n");
    let o = status(&["--proc-root", p(root.path()), "--state-dir", p(state.path()), "--fail-on", "warn"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("soft-lockup watchdog is off"), "{out}");
    assert_eq!(row(&out, "distance: ratio"), "distance: ratio –");
    assert_eq!(row(&out, "soft-lockup level"), "soft-lockup level ok");
    assert_eq!(
        row(&out, "level:"),
        "level: ok: no deadline has a prediction (the watchdog is off and the first incident is unknown)"
    );
}

#[test]
fn textfile_is_the_golden_metrics_written_atomically() {
    let state = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dentrylab.prom");
    for _ in 0..2 {
        let o = status(&["--proc-root", p(&fixture("6.18")), "--state-dir", p(state.path()), "--textfile", p(&file)]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    }
    assert_golden("6.18-builtin", &std::fs::read_to_string(&file).unwrap());
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["dentrylab.prom"], "no temporary file is left");

    let o = status(&["--proc-root", p(&fixture("6.18")), "--textfile", p(&dir.path().join("x.txt"))]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("dentrylab: error: --textfile") && err.contains(".prom") && err.lines().count() == 1,
        "{err}"
    );

    let o = status(&["--proc-root", p(&fixture("6.18")), "--textfile", p(&dir.path().join("no/such/dir.prom"))]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot create"), "{err}");
}

#[test]
fn bad_input_and_failures() {
    let o = status(&["--fail-on", "critical"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--fail-on") && err.contains("\"critical\"") && err.lines().count() == 1, "{err}");

    let o = status(&["--proc-root", "/nonexistent"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot open /nonexistent/sys/fs/dentry-state"), "{err}");

    let state = tempfile::tempdir().unwrap();
    std::fs::write(state.path().join("calibration.json"), "{\"schema\": 1").unwrap();
    let o = status(&["--proc-root", p(&fixture("6.18")), "--state-dir", p(state.path())]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("calibration.json is not a calibration"), "{err}");
    assert!(!err.contains("panicked"));
}

/// As `nobody` on the live /proc: the figures print. With no `--state-dir`
/// the user's own directory is under root's home, which nobody cannot
/// read: the node's calibration is used where root saved one, else the
/// built-in default, and the file or the reason is named.
#[test]
fn runs_as_a_non_root_user() {
    require_root_and!("setpriv");
    let as_nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_dentrylab"), "status"])
            .args(args)
            .env("HOME", "/root")
            .env_remove("DENTRYLAB_STATE_DIR")
            .env_remove("XDG_STATE_HOME")
            .output()
            .expect("setpriv (util-linux) runs")
    };
    let o = as_nobody(&[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("all (nr_dentry)") && out.contains("predicted longest stretch"), "{out}");
    // The node's calibration, where root saved one (`sudo dentrylab
    // reclaim`, or the calibration Job's hostPath), is found before the
    // built-in default; without one the default is used.
    let node = std::path::Path::new("/var/lib/dentrylab/calibration.json");
    if node.exists() {
        assert!(out.contains("calibration: /var/lib/dentrylab/calibration.json"), "{out}");
    } else {
        assert!(out.contains("calibration: built-in conservative default"), "{out}");
    }
    let o = as_nobody(&["--state-dir", p(&calibration_dir()), "--json", "-"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["calibration"]["source"], "file");
    assert!(v["dentries"]["nr_dentry"].as_u64().unwrap() > 0);
    assert!(v["environment"]["watchdog_thresh_seconds"].as_u64().is_some());
}
