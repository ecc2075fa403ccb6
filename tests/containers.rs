//! `dentrylab containers`: per-container counts on a real
//! overlay over an ext4 image, every bad input, and SIGKILL at several
//! moments leaving no mount, loop device, namespace or file.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{assert_nothing_left_after_kill, bin, family_of, kernel_lock, run_json, usage_error};

#[test]
fn bad_input_is_one_line_exit_2() {
    usage_error("containers", &["--count", "0"], &["--count", "\"0\""]);
    usage_error("containers", &["--parallel", "0"], &["--parallel 0", "from 1"]);
    usage_error("containers", &["--workload", "sql"], &["--workload", "unknown workload \"sql\""]);
    usage_error(
        "containers",
        &["--workload", "mixed=temp-tables=60,lookups=30"],
        &["--workload", "sum to 90, not 100"],
    );
    usage_error("containers", &["--workload", "mixed=temp-tables=50,tables=50"], &["unknown operation \"tables\""]);
    usage_error("containers", &["--ops", "-3"], &["--ops", "\"-3\""]);
    usage_error("containers", &["--rate", "0"], &["--rate 0", "positive"]);
    usage_error("containers", &["--fs", "tmpfs"], &["--fs tmpfs", "ext4 or xfs"]);
    usage_error("containers", &["--count", "100k", "--ops", "10M"], &["MemAvailable", "--force"]);
}

/// Runs `containers` until its witness was not disturbed by other activity
/// on the machine (the result says so); fails after three disturbed runs.
fn run_undisturbed(args: &[&str]) -> serde_json::Value {
    let mut noise = Vec::new();
    for _ in 0..3 {
        let v = run_json(args);
        if v["witness"]["disturbed"] == false {
            return v;
        }
        eprintln!("containers {args:?}: witness disturbed ({}), running again", v["witness"]);
        noise.push(v["witness"].clone());
    }
    panic!("containers {args:?}: the witness was disturbed three times: {noise:?}");
}

fn spread(v: &serde_json::Value, key: &str) -> f64 {
    v["summary"][key]["median"].as_f64().unwrap_or_else(|| panic!("summary.{key}: {}", v["summary"]))
}

#[test]
fn each_temp_table_leaves_one_negative_dentry_in_the_image() {
    require_root!();
    let _g = kernel_lock();
    let (count, ops) = (3u64, 4000u64);
    let v = run_undisturbed(&[
        "containers",
        "--count",
        "3",
        "--ops",
        "4k",
        "--workload",
        "temp-tables",
        "--state-dir",
        "/nonexistent",
    ]);
    let runs = v["containers"].as_array().unwrap();
    assert_eq!(runs.len(), count as usize);
    for r in runs {
        assert_eq!(r["outcome"]["temp_tables"], ops, "{r}");
        assert!(r["teardown_seconds"].as_f64().unwrap() > 0.0);
        assert!(r["probe"]["samples"].as_u64().unwrap() > 0, "the teardown was probed");
    }
    // The witness is the run's own filesystem: exactly this run's dentries.
    let w = &v["witness"];
    let image = w["image_dentries"].as_i64().unwrap();
    let negative = w["negative"].as_i64().unwrap();
    // One per temp table, plus one per removed snapshot directory.
    assert!(negative >= (count * ops) as i64, "{w}");
    assert!(negative <= (count * ops + 2 * count) as i64 + 5, "{w}");
    assert!(w["dentries"].as_i64().unwrap() >= negative + image - 1, "{w}");
    let ratio = v["summary"]["left_per_new_name"].as_f64().unwrap();
    assert!((0.99..1.01).contains(&ratio), "left per temp table: {ratio}");
    let p = &v["projection"];
    assert!(p["growth_per_container"].as_f64().unwrap() >= ops as f64);
    assert!(p["hours_to_edge"].as_f64().unwrap() > 0.0, "{p}");
    assert!(p["calibration"].as_str().unwrap().contains("built-in"), "{p}");
}

#[test]
fn files_are_freed_with_the_snapshot_and_lookups_leave_their_misses() {
    require_root!();
    let _g = kernel_lock();
    let ops = 3000.0;
    let files = run_undisturbed(&[
        "containers",
        "--count",
        "2",
        "--ops",
        "3k",
        "--workload",
        "files",
        "--state-dir",
        "/nonexistent",
    ]);
    // A kept file is an overlay and an upper dentry, both freed at
    // teardown; its lookup in the image stays. (The machine-wide teardown
    // counter is checked on the median of the two, against half its due.)
    assert!(spread(&files, "freed") > 1.0 * ops, "{}", files["summary"]);
    assert!((files["summary"]["left_per_new_name"].as_f64().unwrap() - 1.0).abs() < 0.01);
    let lookups = run_undisturbed(&[
        "containers",
        "--count",
        "2",
        "--ops",
        "3k",
        "--workload",
        "lookups",
        "--parallel",
        "2",
        "--state-dir",
        "/nonexistent",
    ]);
    assert!((lookups["witness"]["negative"].as_f64().unwrap() - 2.0 * ops).abs() < 10.0, "{}", lookups["witness"]);
    let mixed = run_json(&[
        "containers",
        "--count",
        "2",
        "--ops",
        "1000",
        "--workload",
        "mixed=temp-tables=50,lookups=25,files=25",
        "--state-dir",
        "/nonexistent",
    ]);
    let o = &mixed["containers"][0]["outcome"];
    assert_eq!(
        (o["temp_tables"].as_u64(), o["lookups"].as_u64(), o["files"].as_u64()),
        (Some(500), Some(250), Some(250))
    );
}

#[test]
fn sigkill_at_any_moment_leaves_nothing() {
    require_root!();
    let _g = kernel_lock();
    for ms in [30, 400, 900, 1800] {
        let mut child = bin()
            .args(["containers", "--count", "200", "--ops", "20k", "--parallel", "2", "--state-dir", "/nonexistent"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(ms));
        let f = family_of(child.id());
        let snapshot =
            std::fs::read_to_string(format!("/proc/{}/mountinfo", f.pids.last().unwrap())).unwrap_or_default();
        child.kill().unwrap();
        child.wait().unwrap();
        if ms >= 900 {
            assert!(!f.loops.is_empty(), "after {ms} ms the run had its image mounted");
            assert!(f.pids.len() > 1, "after {ms} ms containers were running");
            assert!(snapshot.is_empty() || snapshot.contains("overlay") || f.pids.len() == 1, "{snapshot}");
        }
        assert_nothing_left_after_kill(ms, &f.namespaces, &f.loops);
    }
}

/// A real result (8 containers of the default mix) renders: its section,
/// the witness and projection lines, and both plots.
#[test]
fn report_renders_a_containers_result() {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["report", "tests/fixtures/results/containers-mixed.json", "--output"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    for want in [
        "## Containers on overlayfs",
        "| dentries left on the host |",
        "- witness: unmounting",
        "- projection: at 60 containers an hour",
    ] {
        assert!(md.contains(want), "report.md lacks {want:?}");
    }
    for svg in ["containers-host.svg", "containers-teardown.svg"] {
        let s = std::fs::read_to_string(dir.path().join(svg)).unwrap();
        assert!(s.starts_with("<svg") && s.contains("containers run"), "{svg}");
        assert!(s.contains("<polyline") || s.contains("<path") || s.contains("<circle"), "{svg} draws nothing");
    }
}
