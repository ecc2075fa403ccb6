//! Killing dentrylab with SIGKILL at any moment leaves nothing behind: no
//! mount (its mount namespace is gone), no dentries, no file in /tmp.
//!
//! The dentries are counted in the run's own memory cgroup (`RunCgroup`:
//! they are charged to it and uncharged when freed), never in the
//! machine-wide dentry-state, which other jobs move by hundreds of
//! thousands. The one machine-wide figure checked, `create`'s own
//! `reclaimed` after Ctrl-C, is a dentry-state delta: it is checked with
//! the machine's own swing sampled around the run as slack, and a run a
//! burst of other jobs disturbed anyway is repeated (at most three times,
//! the reason printed).

mod common;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::busy::{RunCgroup, around, dentry_object_bytes, retry_disturbed, within};
use common::{kernel_lock, live_mount_namespaces};

/// Kernel memory a killed run's cgroup may still hold once its dentries
/// are gone: its charge batches (64 pages per CPU) and the few dentries of
/// the paths it looked up outside its sandbox; a run's 20k dentries are
/// more.
const LEFT_BYTES: u64 = 3 << 20;

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

/// Kills `child` (running in `cg`) after `delay`, then checks the
/// aftermath. Returns whether the run was in a mount namespace of its own
/// when killed (a kill in its first milliseconds may come before).
fn kill_and_check(mut child: Child, delay: Duration, cg: &RunCgroup) -> bool {
    let pid = child.id();
    std::thread::sleep(delay);
    let ns = std::fs::read_link(format!("/proc/{pid}/ns/mnt")).map(|l| l.to_string_lossy().into_owned());
    nix_kill(pid);
    let status = child.wait().unwrap();
    assert!(!status.success(), "the process was killed");
    // The namespace, and with it every mount of the run, is gone.
    let mine = std::fs::read_link("/proc/self/ns/mnt").unwrap().to_string_lossy().into_owned();
    let own = ns.as_ref().is_ok_and(|ns| *ns != mine);
    if let (true, Ok(ns)) = (own, ns) {
        common::wait_until(&format!("mount namespace {ns} outlived the kill"), Duration::from_secs(30), || {
            !live_mount_namespaces().contains(&ns)
        });
    }
    // The dentries it made are freed (the kernel tears the tmpfs down):
    // the run's cgroup gives their memory back.
    let peak = cg.peak_bytes();
    cg.wait_kernel_below(&format!("after kill at {delay:?} (peak {peak} bytes)"), LEFT_BYTES, Duration::from_secs(60));
    own
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
        assert!(t.elapsed() < Duration::from_secs(120), "create never held");
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
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    let tmp_before = tmp_listing();
    // Kill at several moments: while starting, creating, reclaiming, between sizes.
    let (mut grew, mut own) = (0, 0);
    for ms in [5, 150, 600, 1500, 2600] {
        let cg = RunCgroup::new(&format!("kill-{ms}"));
        let child = cg
            .command()
            .args(["reclaim", "--sizes", "300k,600k", "--reps", "3", "--no-save"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        own += usize::from(kill_and_check(child, Duration::from_millis(ms), &cg));
        grew += usize::from(cg.peak_bytes() > LEFT_BYTES);
    }
    // A kill that always came before any dentry would test nothing.
    assert!(grew > 0, "no run had made its dentries by its kill");
    assert!(own > 0, "dentrylab never ran in a mount namespace of its own");
    assert_nothing_of_ours_in_tmp(&tmp_before);
}

#[test]
fn sigkill_while_create_holds_leaves_nothing() {
    require_root!();
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    let tmp_before = tmp_listing();
    let cg = RunCgroup::new("kill-hold");
    let mut child = cg
        .command()
        .args(["create", "--count", "200k", "--kind", "file", "--layout", "dirs=4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until_holding(&mut child);
    let held = cg.kernel_bytes();
    assert!(
        held >= 200_000 * dentry_object_bytes(),
        "the dentries exist while held: the run's cgroup holds {held} bytes"
    );
    assert!(kill_and_check(child, Duration::from_millis(10), &cg), "dentrylab held in a namespace of its own");
    assert_nothing_of_ours_in_tmp(&tmp_before);
}

#[test]
fn ctrl_c_while_holding_reclaims_and_reports() {
    require_root!();
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    retry_disturbed("ctrl-c", 3, || {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("create.json");
        let cg = RunCgroup::new("ctrl-c");
        let (v, bg) = around(|| {
            let mut child = cg
                .command()
                .args(["create", "--count", "30k", "--json"])
                .arg(&json)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            wait_until_holding(&mut child);
            std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
            assert!(child.wait().unwrap().success(), "Ctrl-C ends a hold cleanly");
            serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&json).unwrap()).unwrap()
        });
        assert_eq!(v["reclaim"]["reason"], "signal");
        cg.assert_made_and_freed("ctrl-c", 30_000);
        // reclaimed is create's dentry-state delta over its umount.
        let w = v["reclaim"]["umount_seconds"].as_f64().unwrap() + 2.0;
        let got = v["reclaim"]["reclaimed"].as_i64().unwrap();
        within("reclaimed (dentry-state)", got, 30_000, 0.03, 500, bg.swing(w, false))
            .map_err(|e| format!("{e}; {}", bg.describe()))
    });
}
