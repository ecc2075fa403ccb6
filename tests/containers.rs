//! `dentrylab containers`: per-container counts on a real
//! overlay over an ext4 image, every bad input, and SIGKILL at several
//! moments leaving no mount, loop device, namespace or file.
//!
//! Each run is counted in a memory cgroup of its own (`RunCgroup`): the
//! image's negative dentries and the containers' are charged to it, held
//! at its peak and given back by the end. The run's own witness (the
//! image's umount) and per-container counts are deltas of the machine-wide
//! dentry-state: they are checked with the most the machine moved on its
//! own over a window as long as theirs (sampled a second before and after
//! the run) as slack. A run whose counts a burst of other jobs' dentries
//! still pushed out (one the samples around the run missed) is run again,
//! at most three times, with the reason printed (`retry_disturbed`).

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::busy::{Background, RunCgroup, around, retry_disturbed};
use common::{assert_nothing_left_after_kill, bin, family_of, kernel_lock, run_json, usage_error};
use serde_json::Value;

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

/// Runs `containers ARGS…` in a cgroup of its own until `machine` (its
/// machine-wide counts) holds, at most three times; on every attempt the
/// run made and gave back `dentries` dentries by its own cgroup.
fn run_checked(
    name: &str,
    args: &[&str],
    dentries: u64,
    machine: impl Fn(&Value, &Background) -> Result<(), String>,
) -> Value {
    let mut last = Value::Null;
    retry_disturbed(name, 3, || {
        let cg = RunCgroup::new(name);
        let (v, bg) = around(|| cg.run_json(args));
        cg.assert_made_and_freed(name, dentries);
        let r = machine(&v, &bg).map_err(|e| format!("{e}; witness {}; {}", v["witness"], bg.describe()));
        last = v;
        r
    });
    last
}

/// The machine's swing over the witness's window: its umount between two
/// 50 ms quiet windows (`negative`: of nr_negative, else nr_dentry).
fn witness_swing(v: &Value, bg: &Background, negative: bool) -> i64 {
    bg.swing(v["witness"]["umount_seconds"].as_f64().unwrap() + 1.0, negative)
}

/// The machine's swing over the longest container's life (its own
/// counts are read around it).
fn container_swing(v: &Value, bg: &Background, negative: bool) -> i64 {
    let life = |r: &Value| {
        ["setup_seconds", "harness_seconds", "teardown_seconds"].iter().map(|k| r[*k].as_f64().unwrap_or(0.0)).sum()
    };
    let longest = v["containers"].as_array().unwrap().iter().map(life).fold(0.0, f64::max);
    bg.swing(longest + 1.0, negative)
}

/// Dentries left on the host per name created: 1, within 1% plus what the
/// machine's own swing over the counts it came from makes of it.
fn one_left_per_name(v: &Value, bg: &Background, names: f64) -> Result<(), String> {
    let ratio = v["summary"]["left_per_new_name"].as_f64().unwrap();
    let swing = if v["witness"]["disturbed"] == false {
        witness_swing(v, bg, false) as f64 / names
    } else {
        container_swing(v, bg, true) as f64 / (names / v["containers"].as_array().unwrap().len() as f64)
    };
    if (ratio - 1.0).abs() > 0.01 + swing {
        return Err(format!("left per new name {ratio} (± {:.3})", 0.01 + swing));
    }
    Ok(())
}

fn spread(v: &serde_json::Value, key: &str) -> f64 {
    v["summary"][key]["median"].as_f64().unwrap_or_else(|| panic!("summary.{key}: {}", v["summary"]))
}

#[test]
fn each_temp_table_leaves_one_negative_dentry_in_the_image() {
    require_root!();
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    let (count, ops) = (3u64, 4000u64);
    let args =
        ["containers", "--count", "3", "--ops", "4k", "--workload", "temp-tables", "--state-dir", "/nonexistent"];
    let v = run_checked("temp-tables", &args, count * ops, |v, bg| {
        // The witness is the run's own filesystem's umount: this run's
        // dentries, plus what the machine did meanwhile.
        let w = &v["witness"];
        let image = w["image_dentries"].as_i64().unwrap();
        let negative = w["negative"].as_i64().unwrap();
        let (neg_swing, all_swing) = (witness_swing(v, bg, true), witness_swing(v, bg, false));
        // One per temp table, plus one per removed snapshot directory.
        let want = (count * ops) as i64;
        if negative < want - neg_swing || negative > want + 2 * count as i64 + 5 + neg_swing {
            return Err(format!("the image's umount freed {negative} negative dentries for {want} temp tables"));
        }
        let dentries = w["dentries"].as_i64().unwrap();
        if dentries < negative + image - 1 - all_swing - neg_swing {
            return Err(format!("the image's umount freed {dentries} dentries, {negative} of them negative"));
        }
        let growth = v["projection"]["growth_per_container"].as_f64().unwrap();
        let swing = (all_swing as f64 / count as f64).max(container_swing(v, bg, true) as f64);
        if growth < ops as f64 - swing {
            return Err(format!("projected growth {growth} per container for {ops} temp tables (± {swing})"));
        }
        one_left_per_name(v, bg, (count * ops) as f64)
    });
    let runs = v["containers"].as_array().unwrap();
    assert_eq!(runs.len(), count as usize);
    for r in runs {
        assert_eq!(r["outcome"]["temp_tables"], ops, "{r}");
        assert!(r["teardown_seconds"].as_f64().unwrap() > 0.0);
        assert!(r["probe"]["samples"].as_u64().unwrap() > 0, "the teardown was probed");
    }
    let p = &v["projection"];
    assert!(p["hours_to_edge"].as_f64().is_none_or(|h| h > 0.0), "{p}");
    assert!(p["calibration"].as_str().unwrap().contains("built-in"), "{p}");
}

#[test]
fn files_are_freed_with_the_snapshot_and_lookups_leave_their_misses() {
    require_root!();
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    let ops = 3000.0;
    let args = ["containers", "--count", "2", "--ops", "3k", "--workload", "files", "--state-dir", "/nonexistent"];
    run_checked("files", &args, 6_000, |v, bg| {
        // A kept file is an overlay and an upper dentry, both freed at
        // teardown; its lookup in the image stays. (The teardown counter
        // is machine-wide: checked on the median of the two, against half
        // its due, less the machine's own swing.)
        let (freed, swing) = (spread(v, "freed"), container_swing(v, bg, false) as f64);
        if freed <= ops - swing {
            return Err(format!("a container's teardown freed {freed} for {ops} files"));
        }
        one_left_per_name(v, bg, 2.0 * ops)
    });
    let args = [
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
    ];
    run_checked("lookups", &args, 6_000, |v, bg| {
        let negative = v["witness"]["negative"].as_f64().unwrap();
        let swing = witness_swing(v, bg, true) as f64;
        if (negative - 2.0 * ops).abs() >= 10.0 + swing {
            return Err(format!("the image's umount freed {negative} negative dentries for {} misses", 2.0 * ops));
        }
        Ok(())
    });
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
        // From 900 ms on the kill is meant to find containers running on
        // the mounted image: wait for that (a loaded machine is slower to
        // get there), then kill.
        let mut f = family_of(child.id());
        if ms >= 900 {
            common::wait_until(&format!("after {ms} ms: no container ever ran"), Duration::from_secs(120), || {
                f = family_of(child.id());
                !f.loops.is_empty() && f.pids.len() > 1
            });
        }
        let snapshot =
            std::fs::read_to_string(format!("/proc/{}/mountinfo", f.pids.last().unwrap())).unwrap_or_default();
        child.kill().unwrap();
        child.wait().unwrap();
        if ms >= 900 {
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
