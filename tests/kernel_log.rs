//! `status --kernel-log` and the node-problem-detector rule:
//! the real soft lockup of a tmpfs umount (in `d_walk`), an RCU stall that
//! is not the dcache's and one that is, a soft lockup and a hung task that
//! are not, each a multi-line report split over many log lines in the
//! three formats (`/dev/kmsg` records, `journalctl -k`, `dmesg`); the
//! exporter's counter; and the rule in `deploy/` applied to the same logs
//! the way node-problem-detector applies it.

mod common;
mod metrics;

use std::path::PathBuf;
use std::process::{Command, Output};

use metrics::{Exporter, fixture, repo};

fn kernel_logs() -> PathBuf {
    repo().join("tests/fixtures/kernel-log")
}

fn soft_lockup_kmsg() -> PathBuf {
    fixture("6.18").join("kmsg-soft-lockup")
}

fn status(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dentrylab")).arg("status").args(args).output().unwrap()
}

fn json_of(file: &std::path::Path) -> serde_json::Value {
    let state = tempfile::tempdir().unwrap();
    let o = status(&[
        "--proc-root",
        fixture("6.18").to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
        "--kernel-log",
        file.to_str().unwrap(),
        "--json",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["kernel_log"].clone()
}

#[test]
fn the_real_tmpfs_umount_lockup_is_in_the_dcache() {
    let k = json_of(&soft_lockup_kmsg());
    assert_eq!(k["soft_lockups"], 1);
    assert_eq!(k["in_dcache"], 1);
    let r = &k["reports"][0];
    assert_eq!(r["kind"], "soft_lockup");
    assert_eq!(r["task"], "umount");
    assert_eq!(r["pid"], 2444);
    assert_eq!(r["time"], "288.981488");
    assert_eq!(r["dcache"], true);
    assert_eq!(r["dcache_functions"], serde_json::json!(["d_walk"]));
    // The unreliable "? radix_tree_delete_item" frame is not part of the stack.
    assert_eq!(r["stack"][0], "d_walk");
    assert_eq!(r["stack"][1], "kill_litter_super");
    assert!(r["lines"].as_u64().unwrap() > 10, "one report gathered from many records: {r}");
}

/// The soft lockup the kernel logged for a 40M-link tmpfs umount
/// (captured from /dev/kmsg on this project's VM): in the dcache, in
/// `d_walk` under `kill_litter_super`, the task that ran the umount named.
#[test]
fn the_40m_tmpfs_umount_lockup_is_in_the_dcache() {
    let k = json_of(&kernel_logs().join("soft-lockup-40M.kmsg"));
    assert_eq!(k["soft_lockups"], 1);
    assert_eq!(k["in_dcache"], 1);
    let r = &k["reports"][0];
    assert_eq!(r["kind"], "soft_lockup");
    assert_eq!(r["task"], "dentrylab");
    assert_eq!(r["pid"], 9692);
    assert_eq!(r["dcache"], true);
    assert_eq!(r["stack"][0], "d_walk");
    assert_eq!(r["stack"][1], "kill_litter_super");
    assert!(r["dcache_functions"].as_array().unwrap().contains(&serde_json::json!("d_walk")), "{r}");
    assert!(r["lines"].as_u64().unwrap() > 30, "one report gathered from its many records: {r}");
}

#[test]
fn rcu_stalls_from_journalctl_one_in_the_dcache() {
    let k = json_of(&kernel_logs().join("rcu-stall.journal"));
    assert_eq!((k["rcu_stalls"].as_u64(), k["in_dcache"].as_u64()), (Some(2), Some(1)), "{k}");
    let (a, b) = (&k["reports"][0], &k["reports"][1]);
    assert_eq!(a["dcache"], false);
    assert_eq!(a["task"], "kworker/3:2");
    assert_eq!(a["time"], "Nov 21 03:12:40");
    assert_eq!(b["dcache"], true);
    assert_eq!(b["task"], "containerd-shim");
    assert_eq!(
        b["dcache_functions"],
        serde_json::json!(["d_walk", "shrink_dcache_parent", "shrink_dcache_for_umount"])
    );
}

#[test]
fn lockup_and_hung_task_outside_the_dcache_from_dmesg() {
    let k = json_of(&kernel_logs().join("lockups.dmesg"));
    assert_eq!(
        (k["soft_lockups"].as_u64(), k["hung_tasks"].as_u64(), k["in_dcache"].as_u64()),
        (Some(1), Some(1), Some(0))
    );
    assert_eq!(k["reports"][0]["task"], "iperf3");
    assert_eq!(k["reports"][0]["time"], "9120.553214");
    assert_eq!(k["reports"][1]["kind"], "hung_task");
    assert_eq!(k["reports"][1]["task"], "kubelet");
    assert_eq!(k["reports"][1]["pid"], 1822);
    assert_eq!(k["reports"][1]["stack"][0], "__schedule");
}

#[test]
fn table_names_each_report() {
    let state = tempfile::tempdir().unwrap();
    let o = status(&[
        "--proc-root",
        fixture("6.18").to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
        "--kernel-log",
        soft_lockup_kmsg().to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("1 soft lockup(s), 0 RCU stall(s), 0 hung task(s); 1 in the dcache"), "{out}");
    assert!(out.contains("umount:2444") && out.contains("yes (d_walk)"), "{out}");
}

#[test]
fn a_missing_log_file_is_one_line_and_exit_1() {
    let o = status(&["--proc-root", fixture("6.18").to_str().unwrap(), "--kernel-log", "/nonexistent/kern.log"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--kernel-log /nonexistent/kern.log: cannot read"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// /dev/kmsg as root works; as nobody it is refused with what to do.
#[test]
fn live_kmsg_as_root_and_as_nobody() {
    require!(common::is_root(), "needs root to read /dev/kmsg and to switch to nobody");
    let state = tempfile::tempdir().unwrap();
    let o = status(&["--state-dir", state.path().to_str().unwrap(), "--kernel-log", "--json", "-"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kernel_log"]["source"], "/dev/kmsg");
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_dentrylab"), "status"])
        .args(["--state-dir", "/nonexistent", "--kernel-log"])
        .output()
        .expect("setpriv (util-linux) runs");
    let err = String::from_utf8_lossy(&o.stderr);
    if std::fs::read_to_string("/proc/sys/kernel/dmesg_restrict").unwrap().trim() == "1" {
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("needs root") && err.contains("--kernel-log FILE"), "{err}");
    } else {
        assert_eq!(o.status.code(), Some(0), "dmesg_restrict=0 lets any user read the log: {err}");
    }
}

#[test]
fn exporter_counts_lockups_by_dcache() {
    let state = tempfile::tempdir().unwrap();
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut text = std::fs::read_to_string(soft_lockup_kmsg()).unwrap();
    text += &std::fs::read_to_string(kernel_logs().join("lockups.dmesg")).unwrap();
    text += &std::fs::read_to_string(kernel_logs().join("rcu-stall.journal")).unwrap();
    std::fs::write(log.path(), text).unwrap();
    let e = Exporter::start(&[
        "--proc-root",
        fixture("6.18").to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
        "--kernel-log",
        log.path().to_str().unwrap(),
    ]);
    let m = e.metrics();
    assert!(m.contains("# TYPE dentrylab_kernel_lockups_total counter"), "{m}");
    assert!(m.contains("dentrylab_kernel_lockups_total{dcache=\"true\"} 2\n"), "{m}");
    assert!(m.contains("dentrylab_kernel_lockups_total{dcache=\"false\"} 3\n"), "{m}");
    metrics::assert_promtool_ok(&["check", "metrics"], Some(&m), &repo());
}

/// The message of one log line as node-problem-detector sees it (its kmsg
/// and journald watchers hand over the message text, trimmed).
fn npd_message(line: &str) -> String {
    let m = if let Some((_, m)) = line.split_once(" kernel: ") {
        m
    } else if line.starts_with('[') {
        line.split_once("] ").map_or(line, |(_, m)| m)
    } else {
        line.split_once(';').map_or(line, |(_, m)| m)
    };
    m.trim().to_string()
}

/// Which rules fire on which lines: node-problem-detector keeps the last
/// `bufferSize` messages, joins them with newlines and matches each rule's
/// pattern anchored at the end (`pattern + \z`) after every new message.
fn npd_fire(file: &std::path::Path) -> Vec<(usize, String)> {
    let cfg: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("deploy/node-problem-detector/dcache-monitor.json")).unwrap(),
    )
    .unwrap();
    let size = cfg["bufferSize"].as_u64().unwrap() as usize;
    let rules: Vec<(String, regex::Regex)> = cfg["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let re = regex::Regex::new(&format!("{}\\z", r["pattern"].as_str().unwrap())).unwrap();
            (r["reason"].as_str().unwrap().to_string(), re)
        })
        .collect();
    let lines: Vec<String> = std::fs::read_to_string(file).unwrap().lines().map(npd_message).collect();
    let mut fired = Vec::new();
    for i in 0..lines.len() {
        let mut buf: Vec<&str> = vec![""; size.saturating_sub(i + 1)];
        buf.extend(lines[(i + 1).saturating_sub(size)..=i].iter().map(String::as_str));
        let joined = buf.join("\n");
        for (reason, re) in &rules {
            if re.is_match(&joined) {
                fired.push((i, reason.clone()));
            }
        }
    }
    fired
}

#[test]
fn node_problem_detector_rule_matches_the_dcache_reports_only() {
    let f = npd_fire(&soft_lockup_kmsg());
    assert!(!f.is_empty() && f.iter().all(|(_, r)| r == "DcacheSoftLockup"), "{f:?}");
    assert_eq!(f[0].0, 2, "fires at the RIP line in d_walk");

    let f = npd_fire(&kernel_logs().join("lockups.dmesg"));
    assert!(f.is_empty(), "neither the spin-lock lockup nor the hung task is in the dcache: {f:?}");

    let f = npd_fire(&kernel_logs().join("rcu-stall.journal"));
    assert!(!f.is_empty() && f.iter().all(|(_, r)| r == "DcacheRCUStall"), "{f:?}");
    assert!(f[0].0 >= 22, "only in the second stall, whose stack is in d_walk: {f:?}");

    // A hung task blocked under shrink_dcache_parent fires the hung-task rule.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("hung.dmesg");
    std::fs::write(
        &p,
        "[ 10.0] INFO: task containerd:77 blocked for more than 122 seconds.\n[ 10.1] Call Trace:\n\
         [ 10.2]  <TASK>\n[ 10.3]  __schedule+0x3d2/0xbd0\n[ 10.4]  shrink_dcache_parent+0x4c/0x130\n",
    )
    .unwrap();
    assert_eq!(npd_fire(&p), vec![(4, "DcacheHungTask".to_string())]);
}
