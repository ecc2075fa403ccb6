//! `dentrylab scale` end to end, at short durations: the sweep runs exactly
//! the counts asked for, counts and rates agree, worker processes die with
//! the parent, and bad input gets one line and exit 2.

use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

mod common;

/// The runs measure the machine: one at a time.
use common::kernel_lock as lock;

fn scale_json(args: &[&str]) -> Value {
    let out = Command::cargo_bin("dentrylab").unwrap().arg("scale").args(args).args(["--json", "-"]).output().unwrap();
    assert!(out.status.success(), "scale {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("stdout is the JSON result")
}

fn threads_of(op: &Value) -> Vec<u64> {
    op["steps"].as_array().unwrap().iter().map(|s| s["threads"].as_u64().unwrap()).collect()
}

/// ops = rate × time (within rounding), the base step has efficiency 1, and
/// every worker's sampled calls add up to ops / sample_every.
fn check_consistent(op: &Value, sample_every: u64) {
    let steps = op["steps"].as_array().unwrap();
    for s in steps {
        let ops = s["ops_total"].as_u64().unwrap();
        let rate = s["ops_per_second"].as_f64().unwrap();
        let secs = s["seconds"].as_f64().unwrap();
        assert!(ops > 0 && secs > 0.0, "{s}");
        assert!((rate * secs - ops as f64).abs() <= 1.0, "ops {ops} != rate {rate} × {secs} s");
        assert_eq!(ops % sample_every, 0, "workers count whole sampling rounds");
        assert_eq!(s["latency_samples"].as_u64().unwrap(), ops / sample_every);
        let p50 = s["latency_p50_ns"].as_f64().unwrap();
        let p99 = s["latency_p99_ns"].as_f64().unwrap();
        assert!(p50 > 0.0 && p50 <= p99, "{s}");
        let n = s["threads"].as_f64().unwrap();
        let base = &steps[0];
        let expect = (rate / n) / (base["ops_per_second"].as_f64().unwrap() / base["threads"].as_f64().unwrap());
        assert!((s["efficiency"].as_f64().unwrap() - expect).abs() < 1e-9);
    }
    assert_eq!(steps[0]["efficiency"].as_f64().unwrap(), 1.0);
    assert_eq!(op["baseline_threads"], steps[0]["threads"]);
}

#[test]
fn thread_sweep_runs_the_requested_counts_and_adds_up() {
    let _g = lock();
    let r = scale_json(&["--seconds", "0.2", "--threads", "1,2", "--ops", "stat,create-unlink-private"]);
    assert_eq!(r["benchmark"], "scale");
    assert!(r["schema"].as_u64().is_some());
    assert_eq!(r["options"]["mode"], "threads");
    let ops = r["operations"].as_array().unwrap();
    assert_eq!(ops.iter().map(|o| o["op"].as_str().unwrap()).collect::<Vec<_>>(), ["stat", "create-unlink-private"]);
    for op in ops {
        assert_eq!(threads_of(op), [1, 2]);
        check_consistent(op, 64);
    }
}

#[test]
fn every_operation_runs_in_processes() {
    let _g = lock();
    let r = scale_json(&["--seconds", "0.1", "--threads", "2..3", "--procs", "--sample-every", "16"]);
    assert_eq!(r["options"]["mode"], "processes");
    let ops = r["operations"].as_array().unwrap();
    assert_eq!(ops.len(), 5);
    for op in ops {
        assert_eq!(threads_of(op), [2, 3], "{}", op["op"]);
        assert_eq!(op["baseline_threads"], 2);
        check_consistent(op, 16);
    }
}

#[test]
fn sweep_is_sorted_and_each_count_runs_once() {
    let _g = lock();
    let r = scale_json(&["--seconds", "0.05", "--threads", "3,1,1..2", "--ops", "stat-missing"]);
    let op = &r["operations"][0];
    assert_eq!(threads_of(op), [1, 2, 3]);
    check_consistent(op, 64);
    // tmpfs keeps no negative dentries: the output says where the figure came from.
    assert_eq!(op["fs"], "tmpfs");
    assert!(r["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("no negative dentries")));
}

#[test]
fn profile_names_functions_or_says_why_not() {
    let _g = lock();
    let r = scale_json(&["--seconds", "0.2", "--threads", "1", "--ops", "create-unlink-shared", "--profile"]);
    let a = &r["attribution"];
    for src in ["functions", "locks", "lock_stat"] {
        assert!(!a[src]["detail"].as_str().unwrap().is_empty(), "{src} says what it is or why not");
    }
    let p = &r["operations"][0]["profile"];
    if a["functions"]["available"] == true {
        let syms = p["top_symbols"].as_array().unwrap();
        assert!(!syms.is_empty(), "perf works here but recorded nothing: {p}");
    } else {
        assert!(p.is_null() || p["top_symbols"].as_array().unwrap().is_empty());
    }
}

#[test]
fn bad_input_gets_one_line_and_exit_2() {
    for (args, needle) in [
        (&["--threads", "0"][..], "counts start at 1"),
        (&["--threads", "3..1"], "3..1 is empty"),
        (&["--threads", "junk"], "cannot read \"junk\""),
        (&["--threads", "1..x"], "cannot read \"x\""),
        (&["--threads", "5000"], "limit"),
        (&["--threads", "4096..cpus"], "empty on this"),
        (&["--seconds", "0"], "--seconds"),
        (&["--seconds", "soon"], "--seconds"),
        (&["--ops", "lookup"], "unknown operation"),
        (&["--ops", "stat,stat"], "listed twice"),
        (&["--fs", "nfs"], "--fs"),
    ] {
        let out = Command::cargo_bin("dentrylab").unwrap().arg("scale").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        if args[0] == "--threads" {
            assert!(err.contains("--threads"), "{args:?} names the flag: {err}");
        }
    }
}

fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
fn worker_processes_die_with_a_killed_parent() {
    let _g = lock();
    let bin = assert_cmd::cargo::cargo_bin("dentrylab");
    let mut parent = std::process::Command::new(bin)
        .args(["scale", "--procs", "--threads", "2", "--seconds", "30", "--ops", "stat"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let workers = loop {
        let c = children(parent.id());
        if c.len() == 2 {
            break c;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "workers never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    parent.kill().unwrap();
    parent.wait().unwrap();
    let t = Instant::now();
    while workers.iter().any(|w| std::path::Path::new(&format!("/proc/{w}")).exists()) {
        // A worker may linger as a zombie of init for a moment; it must not run.
        let alive = workers
            .iter()
            .any(|w| std::fs::read_to_string(format!("/proc/{w}/stat")).is_ok_and(|s| !s.contains(") Z ")));
        if !alive {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "worker processes outlived the killed parent");
        std::thread::sleep(Duration::from_millis(20));
    }
}
