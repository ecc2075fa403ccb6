//! node-problem-detector, for real (issue 39): the shipped dcache monitor
//! (`deploy/node-problem-detector/dcache-monitor.json`, its rules
//! permanent with the condition `DentryCacheLockup` and metrics reporting
//! on) run by a real node-problem-detector (built from the Go module proxy
//! by `deploy/tools/install.sh npd`), standalone: no Kubernetes exporter,
//! its Prometheus endpoint on loopback. Recorded soft-lockup lines are fed
//! through a log file it watches (its `filelog` plugin, never the host's
//! kernel log), and the condition is seen set: `problem_gauge{type=
//! "DentryCacheLockup"}` goes from 0 to 1, which is what NPD's condition
//! manager reports to the node's status in a cluster.

mod common;
mod metrics;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The shipped monitor, pointed at `log` through the filelog plugin.
fn monitor_for(log: &std::path::Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(metrics::repo().join("deploy/node-problem-detector/dcache-monitor.json")).unwrap();
    let mut cfg: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(cfg["metricsReporting"], true, "metrics reporting is on in the shipped monitor");
    assert_eq!(cfg["conditions"][0]["type"], "DentryCacheLockup");
    for r in cfg["rules"].as_array().unwrap() {
        assert_eq!(r["type"], "permanent", "{r}");
        assert_eq!(r["condition"], "DentryCacheLockup", "{r}");
    }
    cfg["plugin"] = "filelog".into();
    cfg["logPath"] = log.to_str().unwrap().into();
    cfg["pluginConfig"] = serde_json::json!({
        "timestamp": "^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z)",
        "message": "kernel: (.*?)\\s*$",
        "timestampFormat": "2006-01-02T15:04:05.999999999Z07:00",
    });
    cfg
}

struct Npd(Child);

impl Drop for Npd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// NPD's `/metrics`, or `None` while it does not answer yet.
fn scrape(port: u16) -> Option<String> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// The `problem_gauge` of the condition for `reason`, as NPD serves it.
fn gauge(port: u16, reason: &str) -> Option<f64> {
    let body = scrape(port)?;
    body.lines().filter(|l| l.starts_with("problem_gauge{")).find_map(|l| {
        let (labels, v) = l.rsplit_once(' ')?;
        (labels.contains("type=\"DentryCacheLockup\"") && labels.contains(&format!("reason=\"{reason}\"")))
            .then(|| v.parse().ok())?
    })
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "node-problem-detector: {what} within 60 s");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The message of a kmsg record (`PRIO,SEQ,USEC,-;TEXT`).
fn kmsg_message(line: &str) -> &str {
    line.split_once(';').map_or(line, |(_, m)| m)
}

#[test]
fn a_recorded_soft_lockup_sets_the_node_condition() {
    let bin: Option<PathBuf> = dentrylab::sys::which("node-problem-detector");
    require!(bin.is_some(), "needs node-problem-detector (deploy/tools/install.sh npd; .ci/run puts it on the PATH)");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("kern.log");
    std::fs::write(&log, "").unwrap();
    let cfg = dir.path().join("dcache-monitor.json");
    std::fs::write(&cfg, serde_json::to_string_pretty(&monitor_for(&log)).unwrap()).unwrap();
    let port = free_port();
    let npd = Npd(Command::new(bin.unwrap())
        .arg(format!("--config.system-log-monitor={}", cfg.display()))
        .args(["--enable-k8s-exporter=false", "--port=0", "--prometheus-address=127.0.0.1"])
        .arg(format!("--prometheus-port={port}"))
        .arg("--hostname-override=dentrylab-test-node")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap());
    // Up, the condition false: every permanent rule's gauge starts at 0.
    wait_for("serving the condition at 0", || gauge(port, "DcacheSoftLockup") == Some(0.0));

    // The recorded soft lockup (umount in d_walk), as a syslog file has it, stamped now.
    let recorded = std::fs::read_to_string(metrics::fixture("6.18").join("kmsg-soft-lockup")).unwrap();
    let now = jiff::Timestamp::now();
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    for l in recorded.lines() {
        writeln!(f, "{now} dentrylab-test-node kernel: {}", kmsg_message(l)).unwrap();
    }
    drop(f);
    wait_for("the condition DentryCacheLockup set by DcacheSoftLockup", || {
        gauge(port, "DcacheSoftLockup") == Some(1.0)
    });
    // The other rules' reasons did not fire.
    assert_eq!(gauge(port, "DcacheRCUStall"), Some(0.0));
    assert_eq!(gauge(port, "DcacheHungTask"), Some(0.0));
    drop(npd);
}
