//! `dentrylab churn` at small sizes on real ext4 and xfs (root, as
//! in CI): every file is built and unlinked, the timeline adds up, the
//! unlinked files' dentries show as negative dentries, a kill -9 leaves no
//! loop device, and bad input gets one line and exit 2. No test asserts a
//! rate or a time.
//!
//! nr_negative is machine-wide: the cold-removal run is counted in a
//! memory cgroup of its own too (`RunCgroup`: its files' dentries held at
//! its peak and given back), and its nr_negative deltas are checked with
//! the most the machine moved nr_negative on its own over the removal
//! (sampled a second before and after the run) as slack; a run that a
//! burst the samples missed still pushed out is repeated, at most three
//! times, with the reason printed (`retry_disturbed`).

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::busy::{RunCgroup, around, retry_disturbed};
use common::{bin, kernel_lock, loop_devices, loops_mounted_by, usage_error, wait_until};
use serde_json::Value;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn check_timeline(r: &Value, files: u64) {
    assert_eq!(r["benchmark"], "churn");
    assert_eq!(u(&r["build"]["entries"]), files);
    assert_eq!(u(&r["unlinks_total"]), files);
    let workers = r["workers"].as_array().unwrap();
    assert_eq!(workers.iter().map(|w| u(&w["unlinked"])).sum::<u64>(), files);
    let samples = r["samples"].as_array().unwrap();
    assert!(samples.len() >= 2, "at least a first and a last sample");
    assert!(u(&samples[0]["unlinks_total"]) <= u(&samples[1]["unlinks_total"]));
    assert_eq!(u(&samples.last().unwrap()["unlinks_total"]), files, "the last sample sees every unlink");
    let mut prev = 0;
    for s in samples {
        let n = u(&s["unlinks_total"]);
        assert!(n >= prev, "the unlink counter never goes back");
        prev = n;
    }
    // The rates integrate back to the counts.
    let total: f64 = samples
        .windows(2)
        .map(|w| {
            w[1]["unlinks_per_second"].as_f64().unwrap()
                * (w[1]["seconds"].as_f64().unwrap() - w[0]["seconds"].as_f64().unwrap())
        })
        .sum();
    assert!((total - files as f64).abs() < 0.01 * files as f64 + 1.0, "rates sum to {total}");
    let hw = &r["high_water"];
    let peak = samples.iter().map(|s| u(&s["nr_dentry"])).max().unwrap();
    assert_eq!(u(&hw["nr_dentry"]), peak);
    let summary: Vec<&str> = r["summary"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(summary.iter().any(|l| l.starts_with("dentry high-water mark")), "{summary:?}");
    assert!(summary.iter().any(|l| l.starts_with("throughput")), "{summary:?}");
}

#[test]
fn ext4_cold_removal_leaves_negative_dentries_until_rmdir() {
    require_root_and!("mkfs.ext4");
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    let files = 30_000;
    let mut last = Value::Null;
    retry_disturbed("churn cold", 3, || {
        let cg = RunCgroup::new("churn");
        let args = ["churn", "--files", "30k", "--workers", "2", "--dirs", "3", "--interval", "20ms"];
        let (r, bg) = around(|| cg.run_json(&args));
        check_timeline(&r, files);
        assert!(r["remount_seconds"].is_array(), "cold by default: remounted");
        cg.assert_made_and_freed("churn cold", files);
        // The removal's window: its timeline, and a margin for the rmdir.
        let window = r["samples"].as_array().unwrap().last().unwrap()["seconds"].as_f64().unwrap() + 2.0;
        let swing = bg.swing(window, true) as f64;
        let neg = |c: &str| r[c]["dentry_state"]["nr_negative"].as_i64().unwrap();
        // Every unlinked file's dentry stayed as a negative dentry.
        let added = neg("after_remove") - neg("before_remove");
        // rmdir pruned them (nr_negative: nr_dentry moves with every
        // positive dentry of the machine).
        let pruned = neg("after_remove") - neg("after_rmdir");
        last = r;
        if (added as f64) < 0.9 * files as f64 - swing || (pruned as f64) < 0.9 * files as f64 - swing {
            return Err(format!(
                "nr_negative grew by {added} for {files} unlinks, rmdir took it down by {pruned} (machine's swing {swing}); {}",
                bg.describe()
            ));
        }
        Ok(())
    });
    let r = last;
    assert_eq!(r["options"]["dirs"], 3);
    assert_eq!(r["workers"].as_array().unwrap().len(), 2);
}

#[test]
fn xfs_warm_removal_runs_and_prints_the_summary() {
    require_root_and!("mkfs.xfs");
    let _g = kernel_lock();
    let out = bin()
        .args(["churn", "--fs", "xfs", "--files", "10k", "--workers", "3", "--dirs", "2", "--warm"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8_lossy(&out.stdout);
    for needle in ["Timeline of the removal", "dentry high-water mark", "warm cache", "on xfs", "throughput"] {
        assert!(table.contains(needle), "{needle:?} missing from {table}");
    }
    // Two directories split between three workers: every worker had work.
    assert!(table.contains("removed by 3 workers"), "{table}");
}

#[test]
fn killed_mid_removal_leaves_no_loop_device() {
    require_root_and!("mkfs.ext4", "losetup");
    let _g = kernel_lock();
    let mut child = bin()
        .args(["churn", "--files", "400k", "--workers", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait for the remount (the device is then held by dentrylab and the mount).
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    wait_until("churn never remounted", Duration::from_secs(120), || {
        lines.next().is_none_or(|l| l.is_ok_and(|l| l.starts_with("remounted")))
    });
    let ours = loops_mounted_by(&[pid]);
    assert!(!ours.is_empty(), "no loop device mounted by {pid}");
    let devices: std::collections::BTreeSet<_> =
        loop_devices().into_iter().filter(|(n, _, _)| ours.contains(n)).collect();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    let _ = child.wait();
    wait_until(&format!("a loop device stayed bound: {devices:?}"), Duration::from_secs(60), || {
        loop_devices().is_disjoint(&devices)
    });
}

#[test]
fn bad_input_gets_one_line_and_exit_2() {
    usage_error("churn", &["--fs", "tmpfs"], &["--fs tmpfs", "disk filesystem", "--fs ext4"]);
    // More files than half of MemAvailable.
    usage_error("churn", &["--files", "100G"], &["--files 100G", "more than half of MemAvailable", "--force"]);
    usage_error("churn", &["--files", "10", "--dirs", "100"], &["--dirs 100", "--files"]);
    usage_error("churn", &["--interval", "5ms"], &["--interval", "10ms to 10s"]);
    usage_error("churn", &["--interval", "soon"], &["--interval", "\"soon\""]);
    usage_error("churn", &["--workers", "0"], &["--workers"]);
    usage_error("churn", &["--files", "0"], &["--files", "at least 1"]);
}
