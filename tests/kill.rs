//! Killing dentrylab with SIGKILL at any moment leaves nothing behind: no
//! mount (its mount namespace is gone), no dentries, no file in /tmp.

mod common;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{bin, kernel_lock, live_mount_namespaces, nr_dentry};

fn tmp_listing() -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir("/tmp").unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// Fails if /tmp gained an entry of the shapes dentrylab's sandbox makes
/// (`fs0`, `d0`, `src0`, `dentrylab*`). Other programs may come and go.
fn assert_nothing_of_ours_in_tmp(before: &[String]) {
    let ours = |n: &str| {
        let digits =
            |p: &str| n.strip_prefix(p).is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_digit()));
        digits("fs") || digits("d") || digits("src") || n.starts_with("dentrylab")
    };
    let new: Vec<String> = tmp_listing().into_iter().filter(|n| !before.contains(n) && ours(n)).collect();
    assert!(new.is_empty(), "left in /tmp: {new:?}");
}

/// Kills `child` after `delay`, then checks the aftermath.
fn kill_and_check(mut child: Child, delay: Duration, baseline: i64) {
    let pid = child.id();
    std::thread::sleep(delay);
    let ns = std::fs::read_link(format!("/proc/{pid}/ns/mnt")).map(|l| l.to_string_lossy().into_owned());
    let peak = nr_dentry();
    nix_kill(pid);
    let status = child.wait().unwrap();
    assert!(!status.success(), "the process was killed");
    // The namespace, and with it every mount of the run, is gone.
    if let Ok(ns) = ns {
        let mine = std::fs::read_link("/proc/self/ns/mnt").unwrap().to_string_lossy().into_owned();
        assert_ne!(ns, mine, "dentrylab ran in a namespace of its own");
        let t = Instant::now();
        while live_mount_namespaces().contains(&ns) {
            assert!(t.elapsed() < Duration::from_secs(10), "mount namespace {ns} outlived the kill");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // The dentries it made are freed (the kernel tears the tmpfs down).
    let grown = (peak - baseline).max(0);
    let allowed = baseline + grown / 50 + 3000;
    let t = Instant::now();
    while nr_dentry() > allowed {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "after kill at {delay:?}: nr_dentry {} still above {allowed} (baseline {baseline}, peak {peak})",
            nr_dentry()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Reads `create`'s output until it says it is holding its dentries.
fn wait_until_holding(child: &mut Child) {
    use std::io::BufRead;
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let t = Instant::now();
    while !line.contains("holding") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "create exited early");
        assert!(t.elapsed() < Duration::from_secs(60), "create never held");
    }
    // Keep draining so the child never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
}

fn nix_kill(pid: u32) {
    let ok = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap().success();
    assert!(ok, "kill -KILL {pid}");
}

#[test]
fn sigkill_during_reclaim_sweep_leaves_nothing() {
    require_root!();
    let _g = kernel_lock();
    let tmp_before = tmp_listing();
    // Kill at several moments: while starting, creating, reclaiming, between sizes.
    for ms in [5, 150, 600, 1500, 2600] {
        let baseline = nr_dentry();
        let child = bin()
            .args(["reclaim", "--sizes", "300k,600k", "--reps", "3", "--no-save"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        kill_and_check(child, Duration::from_millis(ms), baseline);
    }
    assert_nothing_of_ours_in_tmp(&tmp_before);
}

#[test]
fn sigkill_while_create_holds_leaves_nothing() {
    require_root!();
    let _g = kernel_lock();
    let tmp_before = tmp_listing();
    let baseline = nr_dentry();
    let mut child = bin()
        .args(["create", "--count", "200k", "--kind", "file", "--layout", "dirs=4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until_holding(&mut child);
    assert!(nr_dentry() >= baseline + 190_000, "the dentries exist while held");
    kill_and_check(child, Duration::from_millis(10), baseline);
    assert_nothing_of_ours_in_tmp(&tmp_before);
}

#[test]
fn ctrl_c_while_holding_reclaims_and_reports() {
    require_root!();
    let _g = kernel_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("create.json");
    let mut child = bin()
        .args(["create", "--count", "30k", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until_holding(&mut child);
    std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(child.wait().unwrap().success(), "Ctrl-C ends a hold cleanly");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["reclaim"]["reason"], "signal");
    assert!(v["reclaim"]["reclaimed"].as_i64().unwrap() > 29_000, "{}", v["reclaim"]);
}
