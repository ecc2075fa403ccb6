//! `dentrylab pollute` at small sizes on a real ext4 (root, as in
//! CI): the sweep runs every size, each probe makes the calls asked for,
//! dentry-state witnesses the negative dentries, slowdowns come with their
//! interval, and bad input gets one line and exit 2. Nothing here asserts a
//! latency: benchmarks measure speed, tests check behaviour.
//!
//! nr_negative is machine-wide: the sweep is counted in a memory cgroup of
//! its own too (`RunCgroup`: its negative dentries held at its peak and
//! given back), and its nr_negative figures are checked with the most the
//! machine moved nr_negative on its own over as long as one repetition
//! (sampled a second before and after the run) as slack; a run that a
//! burst the samples missed still pushed out is repeated, at most three
//! times, with the reason printed (`retry_disturbed`).

mod common;

use common::busy::{RunCgroup, around, retry_disturbed};
use common::{bin, kernel_lock, usage_error};
use serde_json::Value;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn sweep_counts_and_ratios_add_up() {
    require_root_and!("mkfs.ext4");
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    let (reps, calls) = (2u64, 1000u64);
    let mut last = Value::Null;
    retry_disturbed("pollute", 3, || {
        let cg = RunCgroup::new("pollute");
        let t = std::time::Instant::now();
        let (r, bg) = around(|| cg.run_json(&["pollute", "--negatives", "10k,30k", "--reps", "2", "--calls", "1000"]));
        // A repetition's window is at most the whole run's (minus the 2 s
        // of sampling around it); no time is asserted.
        let swing = bg.swing(t.elapsed().as_secs_f64() - 2.0, true);
        cg.assert_made_and_freed("pollute", 30_000);
        last = r;
        let r = &last;
        for rep in r["reps"].as_array().unwrap() {
            let top = rep["levels"].as_array().unwrap().last().unwrap();
            let made = top["negatives_made"].as_u64().unwrap();
            assert_eq!(made, 30_000 + 2 * calls / 4, "pollution and the misses of the two earlier sizes");
            // The negative dentries exist: nr_negative grew by what was made.
            let added = top["nr_negative_added"].as_i64().unwrap();
            if (added as f64) < 0.9 * made as f64 - swing as f64 {
                return Err(format!("nr_negative grew by {added}, {made} made (machine's swing {swing})"));
            }
            // The umount freed them again.
            let before = rep["before"]["dentry_state"]["nr_negative"].as_i64().unwrap();
            let after = rep["after_umount"]["dentry_state"]["nr_negative"].as_i64().unwrap();
            if after >= before + 3000 + swing {
                return Err(format!("nr_negative {before} → {after} after umount (machine's swing {swing})"));
            }
        }
        Ok(())
    });
    let r = last;
    assert_eq!(r["benchmark"], "pollute");
    assert!(r["schema"].as_u64().is_some());
    let levels = r["levels"].as_array().unwrap();
    let sizes: Vec<u64> = levels.iter().map(|l| l["negatives"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [0, 10_000, 30_000]);
    for (i, l) in levels.iter().enumerate() {
        let probes = l["probes"].as_array().unwrap();
        assert_eq!(probes.len(), 7);
        for p in probes {
            let want = if p["probe"] == "negative-miss" { reps * calls / 4 } else { reps * calls };
            assert_eq!(p["calls"].as_u64().unwrap(), want, "{p}");
            assert!(f(&p["p50_ns"]) > 0.0 && f(&p["p50_ns"]) <= p["max_ns"].as_u64().unwrap() as f64, "{p}");
            if i == 0 {
                assert!(p["slowdown"].is_null(), "no slowdown against itself: {p}");
            } else {
                let s = &p["slowdown"];
                assert_eq!(s["reps"].as_u64().unwrap(), reps);
                assert!(f(&s["ci_low"]) <= f(&s["estimate"]) && f(&s["estimate"]) <= f(&s["ci_high"]), "{s}");
            }
        }
    }
    let summary: Vec<&str> = r["summary"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(summary[0].starts_with("the lookup-pollution report's effect"), "{summary:?}");
    assert!(summary.iter().any(|l| l.contains("dentry-state witnessed")), "{summary:?}");
    assert!(r["hot_lookup_slower"].is_boolean());
}

#[test]
fn table_names_every_probe_and_the_verdict() {
    require_root_and!("mkfs.ext4");
    let _g = kernel_lock();
    let out = bin().args(["pollute", "--negatives", "5k", "--reps", "1", "--calls", "500"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8_lossy(&out.stdout);
    for p in [
        "stat-same-dir",
        "open-same-dir",
        "stat-other-dir",
        "open-other-dir",
        "negative-hit",
        "negative-miss",
        "control-fstat",
    ] {
        assert!(table.contains(p), "{p} missing from {table}");
    }
    assert!(table.contains("Verdict") && table.contains("the lookup-pollution report's effect"), "{table}");
    assert!(table.contains("one repetition: no interval"), "{table}");
}

#[test]
fn bad_input_gets_one_line_and_exit_2() {
    usage_error("pollute", &["--fs", "tmpfs"], &["--fs tmpfs", "devtmpfs", "never keeps any", "--fs ext4"]);
    usage_error("pollute", &["--negatives", "0"], &["--negatives", "at least 1"]);
    usage_error("pollute", &["--negatives", "1M,1M"], &["--negatives", "repeat"]);
    usage_error("pollute", &["--calls", "5"], &["--calls"]);
    usage_error("pollute", &["--reps", "0"], &["--reps"]);
    usage_error("pollute", &["--fs", "nfs"], &["--fs", "nfs"]);
    usage_error("pollute", &["--cpu", "4096"], &["--cpu 4096"]);
    // More negative dentries than half of MemAvailable: refused before anything runs.
    usage_error(
        "pollute",
        &["--negatives", "500G"],
        &["--negatives 500G", "more than half of MemAvailable", "--force"],
    );
}
