//! `dentrylab mitigate` at small sizes on the real kernel (root,
//! as in CI): each workload leaves the dentries it must, fs.dentry-negative
//! changes what unlink leaves, a real MariaDB server answers queries and is
//! gone afterwards, every sysctl is back after the run and after a SIGKILL
//! at several moments, and bad input gets one line and exit 2. The runs
//! that change sysctls are kept to a few seconds: they are global. No test
//! asserts a rate or a time.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{bin, kernel_lock, run_json, usage_error, wait_until};
use serde_json::Value;

fn sysctl(path: &str) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

const NEG: &str = "/proc/sys/fs/dentry-negative";
const PRESSURE: &str = "/proc/sys/vm/vfs_cache_pressure";

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The one run of row `i`.
fn run_of(r: &Value, i: usize) -> &Value {
    &r["rows"][i]["runs"][0]
}

fn ops(run: &Value) -> f64 {
    f(&run["samples"].as_array().unwrap().last().unwrap()["ops"])
}

/// Processes named mariadbd.
fn mariadbd_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "mariadbd"))
        .collect()
}

/// Memory cgroups made by process `pid` (dentrylab-<pid>-<n>), anywhere.
fn cgroups_of(pid: u32) -> Vec<String> {
    let out = std::process::Command::new("find")
        .args(["/sys/fs/cgroup", "-maxdepth", "5", "-type", "d", "-name"])
        .arg(format!("dentrylab-{pid}-*"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect()
}

#[test]
fn bad_input_gets_one_line_and_exit_2() {
    usage_error("mitigate", &["--workload", "temp-tables", "--setting", "vm.swappiness=10"], &["unknown knob", "vm.swappiness"]);
    usage_error("mitigate", &["--workload", "temp-tables", "--setting", "fs.dentry-negative=0,2"], &["fs.dentry-negative=2", "out of range"]);
    usage_error("mitigate", &["--workload", "temp-tables", "--setting", "vm.vfs_cache_pressure_denom=0"], &["out of range"]);
    usage_error("mitigate", &["--workload", "temp-tables", "--setting", "drop-caches-every=0s"], &["drop-caches-every", "1s to 1h"]);
    usage_error("mitigate", &["--workload", "temp-tables", "--duration", "0"], &["--duration 0s", "1s to 1h"]);
    usage_error("mitigate", &["--workload", "temp-tables", "--duration", "soon"], &["--duration", "\"soon\""]);
    usage_error("mitigate", &["--workload", "temp-tables", "--setting", "fs.dentry-negative=0,1"], &["--allow-global", "fs.dentry-negative"]);
    usage_error("mitigate", &["--workload", "temp-tables", "--setting", "drop-caches-every=10s"], &["--allow-global", "drops caches"]);
    usage_error("mitigate", &["--workload", "lookups", "--container-ops", "10"], &["--container-ops", "only for --workload containers"]);
    usage_error("mitigate", &["--workload", "files", "--container-workload", "lookups"], &["--container-workload", "only for --workload containers"]);
    usage_error("mitigate", &["--workload", "containers", "--container-workload", "mixed=temp-tables=50"], &["--container-workload", "sum to 50"]);
    usage_error("mitigate", &["--workload", "containers", "--container-workload", "sql"], &["--container-workload", "unknown workload"]);
    usage_error("mitigate", &["--workload", "containers", "--container-ops", "20M"], &["--container-ops 20000000", "at most"]);
    usage_error("mitigate", &["--workload", "nope"], &["unknown workload"]);
    usage_error("mitigate", &["--workload", "lookups", "--mariadb-option", "tmp_table_size=256M"], &["--mariadb-option", "only for --workload mariadb"]);
    usage_error("mitigate", &["--workload", "mariadb", "--mariadb-option", "datadir=/x"], &["datadir", "sets this one itself"]);
    usage_error("mitigate", &["--workload", "mariadb", "--mariadb-option", "tmp_table_size"], &["NAME=VALUE"]);
    usage_error("mitigate", &["--workload", "temp-tables", "--fs", "tmpfs"], &["--fs tmpfs", "disk filesystem"]);
    usage_error("mitigate", &["--workload", "temp-tables", "--memory-limit", "lots"], &["--memory-limit", "memory size"]);
    usage_error(
        "mitigate",
        &["--workload", "temp-tables", "--allow-global", "--setting", "fs.dentry-negative=0,1", "--setting", "fs.dentry-negative=1"],
        &["given twice"],
    );
}

#[test]
fn help_names_the_knobs_and_the_containers_workload() {
    let out = bin().args(["mitigate", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in ["vm.vfs_cache_pressure_denom", "fs.dentry-negative", "drop-caches-every", "--allow-global", "--container-workload", "--container-ops", "life of 'dentrylab containers'"] {
        assert!(help.contains(needle), "--help lacks {needle:?}");
    }
}

/// temp-tables leaves one negative dentry per operation with
/// fs.dentry-negative=0 and (almost) none with 1; the sysctl is back.
#[test]
fn dentry_negative_changes_what_temp_tables_leave() {
    require_root!();
    let _g = kernel_lock();
    let original = sysctl(NEG);
    let r = run_json(&[
        "mitigate", "--workload", "temp-tables", "--setting", "fs.dentry-negative=0,1", "--allow-global", "--duration", "2s",
        "--memory-limit", "1G",
    ]);
    assert_eq!(sysctl(NEG), original, "fs.dentry-negative restored");
    assert_eq!(r["benchmark"], "mitigate");
    assert_eq!(r["rows"].as_array().unwrap().len(), 2);
    let (off, on) = (run_of(&r, 0), run_of(&r, 1));
    // Under a 1 GiB limit nothing is reclaimed in 2 s: every unlink's
    // dentry is still there.
    assert!(ops(off) > 100.0, "the workload ran: {}", ops(off));
    assert!(f(&off["fs_negative_at_end"]) >= 0.9 * ops(off), "dentry-negative=0: {} negative for {} ops", off["fs_negative_at_end"], ops(off));
    assert!(f(&on["fs_negative_at_end"]) < 0.05 * ops(on) + 100.0, "dentry-negative=1: {} negative for {} ops", on["fs_negative_at_end"], ops(on));
    let ch = &r["sysctls"][0];
    assert_eq!(ch["name"], "fs.dentry-negative");
    assert_eq!(ch["original"], original.as_str());
    assert_eq!(ch["restored"], original.as_str());
    assert_eq!(ch["written"], serde_json::json!(["0", "1"]));
    let verdicts = r["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), 1);
    assert!(verdicts[0].as_str().unwrap().starts_with("fs.dentry-negative 0 → 1:"), "{verdicts:?}");
    // One sample a second plus the first.
    assert!(off["samples"].as_array().unwrap().len() >= 3);
}

/// lookups leave negative dentries, files positive ones; no sysctl moves.
#[test]
fn lookups_and_files_leave_their_dentries() {
    require_root!();
    let _g = kernel_lock();
    let before = (sysctl(NEG), sysctl(PRESSURE));
    // A limit far above what 2 s make: nothing is reclaimed.
    let r = run_json(&["mitigate", "--workload", "lookups", "--duration", "2s", "--memory-limit", "1G"]);
    let run = run_of(&r, 0);
    assert!(ops(run) > 100.0);
    assert_eq!(run["limit_reached"], false);
    assert!(f(&run["fs_negative_at_end"]) >= 0.9 * ops(run), "{} negative for {} lookups", run["fs_negative_at_end"], ops(run));
    assert!(r["sysctls"].as_array().unwrap().is_empty());
    // A small limit: the cgroup's own reclaim takes its negative dentries.
    let r = run_json(&["mitigate", "--workload", "lookups", "--duration", "3s", "--memory-limit", "12M"]);
    let run = run_of(&r, 0);
    let held = f(&run["fs_negative_at_end"]);
    // 3 s of lookups make far more than 12 MiB of dentries (about 200 B
    // each, hundreds of thousands a second): the limit must be reached.
    assert_eq!(run["limit_reached"], true, "the 12 MiB limit was not reached in 3 s ({} lookups)", ops(run));
    assert!(held < 0.9 * ops(run), "limit reached, yet {held} of {} lookups' dentries held", ops(run));
    assert!(held < 12.0 * 1048576.0 / 150.0, "{held} negative dentries cannot fit in 12 MiB");
    let r = run_json(&["mitigate", "--workload", "files", "--duration", "2s", "--memory-limit", "1G"]);
    let run = run_of(&r, 0);
    assert!(ops(run) > 100.0);
    let (d, n) = (f(&run["fs_dentries_at_end"]), f(&run["fs_negative_at_end"]));
    assert!(d >= 0.9 * ops(run), "{d} dentries for {} files", ops(run));
    assert!(n < 0.05 * d + 100.0, "files leave positive dentries: {n} of {d} negative");
    assert_eq!((sysctl(NEG), sysctl(PRESSURE)), before);
}

/// A real MariaDB: it starts, loads, answers queries over its socket, and
/// is gone afterwards with its cgroup.
#[test]
fn mariadb_runs_a_real_server_and_stops_it() {
    require_root!();
    let _g = kernel_lock();
    assert!(
        std::path::Path::new("/usr/sbin/mariadbd").exists() || which("mariadbd"),
        "mariadbd is not installed: .ci/run installs mariadb-server"
    );
    let before = mariadbd_pids();
    let r = run_json(&["mitigate", "--workload", "mariadb", "--duration", "3s", "--clients", "1"]);
    let run = run_of(&r, 0);
    assert!(ops(run) >= 1.0, "no query answered");
    assert_eq!(run["query_errors"], 0, "{:?}", run["notes"]);
    assert!(f(&run["server_start_seconds"]) > 0.0);
    // The server's files were on the run's filesystem: its umount freed dentries.
    assert!(f(&run["fs_dentries_at_end"]) > 0.0);
    assert_eq!(mariadbd_pids(), before, "a mariadbd outlived the run");
}

fn which(tool: &str) -> bool {
    std::process::Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success())
}

/// SIGKILL at several moments: every sysctl comes back, no cgroup and no
/// server stays.
#[test]
fn sigkill_at_any_moment_restores_every_sysctl() {
    require_root!();
    let _g = kernel_lock();
    let original = (sysctl(NEG), sysctl(PRESSURE));
    // Values that differ from the originals in the first combination.
    let neg = if original.0 == "0" { "1,0" } else { "0,1" };
    let pressure = if original.1 == "137" { "138,100" } else { "137,100" };
    for delay_ms in [150u64, 1200, 2600] {
        let mut child = bin()
            .args(["mitigate", "--workload", "temp-tables", "--allow-global", "--duration", "2s"])
            .args(["--setting", &format!("fs.dentry-negative={neg}"), "--setting", &format!("vm.vfs_cache_pressure={pressure}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        std::thread::sleep(Duration::from_millis(delay_ms));
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
        let _ = child.wait();
        wait_until(&format!("killed at {delay_ms} ms: sysctls not restored"), Duration::from_secs(15), || {
            (sysctl(NEG), sysctl(PRESSURE)) == original
        });
        wait_until(&format!("killed at {delay_ms} ms: a cgroup stayed"), Duration::from_secs(15), || cgroups_of(pid).is_empty());
    }
}

/// SIGKILL while the server runs: the guardian kills it, its cgroup goes.
#[test]
fn sigkill_stops_the_server() {
    require_root!();
    let _g = kernel_lock();
    let before = mariadbd_pids();
    let mut child = bin()
        .args(["mitigate", "--workload", "mariadb", "--duration", "30s", "--clients", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_until("the server never started", Duration::from_secs(120), || {
        mariadbd_pids().iter().any(|p| !before.contains(p))
    });
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    let _ = child.wait();
    wait_until("mariadbd outlived dentrylab", Duration::from_secs(20), || mariadbd_pids() == before);
    wait_until("a cgroup stayed", Duration::from_secs(15), || cgroups_of(pid).is_empty());
}

/// Without mariadbd, one line says how to install it (exit 2).
/// DENTRYLAB_MARIADB_PATH names the only directories searched: an empty
/// one stands for a machine without MariaDB.
#[test]
fn mariadb_missing_is_one_line_exit_2() {
    let empty = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["mitigate", "--workload", "mariadb", "--duration", "2s"])
        .env("DENTRYLAB_MARIADB_PATH", empty.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("--workload mariadb: mariadbd is not installed here"), "{err}");
    assert!(err.contains("apt-get install mariadb-server"), "says how to install it: {err}");
    assert!(out.stdout.is_empty());
}

/// `--workload containers`: containers live and die one after another in
/// the cgroup; each did its lookups, each teardown was probed, the
/// lookups' negative dentries in the image stay on the host, and nothing
/// is left mounted.
#[test]
fn containers_workload_runs_containers_in_the_cgroup() {
    require_root!();
    let _g = kernel_lock();
    let before = (sysctl(NEG), sysctl(PRESSURE));
    let r = run_json(&[
        "mitigate", "--workload", "containers", "--container-workload", "lookups", "--container-ops", "500", "--duration", "3s",
        "--memory-limit", "1G",
    ]);
    assert_eq!(r["options"]["workload"], "containers");
    let run = run_of(&r, 0);
    let containers = run["containers"].as_array().unwrap();
    assert!(containers.len() >= 2, "{} containers in 3 s", containers.len());
    for c in containers {
        assert_eq!(c["outcome"]["lookups"], 500, "{c}");
        assert!(c["probe"]["samples"].as_u64().unwrap() > 0, "the teardown was probed: {c}");
        assert!(c["teardown_seconds"].as_f64().unwrap() > 0.0);
    }
    // Operations are the containers' (those torn down).
    assert_eq!(ops(run) as usize, 500 * containers.len());
    let s = &r["rows"][0]["summary"]["containers"];
    assert_eq!(s["containers"].as_f64().unwrap() as usize, containers.len());
    assert!(s["teardown_stretch_seconds"].as_f64().unwrap() > 0.0);
    // Under a 1 GiB limit nothing is reclaimed: the image keeps a negative
    // dentry per lookup (the overlay looked each name up in the lower layer).
    let per = s["left_negative_per_container"].as_f64().unwrap();
    assert!(per >= 0.9 * 500.0, "{per} negative dentries left per container of 500 lookups");
    assert_eq!((sysctl(NEG), sysctl(PRESSURE)), before);
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.lines().any(|l| l.starts_with("overlay ") && l.contains("dentrylab")), "{mounts}");
}
