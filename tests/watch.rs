//! `status --watch`: beside a generator of negative dentries at
//! a known rate, the growth it reports is within ±10% of that rate, for
//! nr_dentry and nr_negative, and its time to the edge is the distance to
//! the edge over that rate. No wall-clock assertion: the rate is the
//! generator's own count over its own time. The counters are machine-wide,
//! so a run another job disturbed (seen by the witness: the machine's own
//! growth differs from the generator's) is repeated, up to three times.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Failed lookups per second (a 2-vCPU machine makes about 550k/s in one thread).
const RATE: f64 = 20_000.0;
const BATCH: u64 = 200;

fn nr_negative() -> i64 {
    let s = std::fs::read_to_string("/proc/sys/fs/dentry-state").unwrap();
    s.split_whitespace().nth(4).unwrap().parse().unwrap()
}

/// Makes negative dentries on the ext4 at `dir` at RATE until stopped;
/// returns how many and over how long.
fn generate(dir: std::path::PathBuf, stop: Arc<AtomicBool>) -> (u64, f64) {
    let t0 = Instant::now();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..BATCH {
            let _ = std::fs::symlink_metadata(dir.join(format!("missing-{n}")));
            n += 1;
        }
        let due = t0 + Duration::from_secs_f64(n as f64 / RATE);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
    }
    (n, t0.elapsed().as_secs_f64())
}

struct Run {
    known: f64,
    witness: f64,
    growth: f64,
    negative: f64,
    last: serde_json::Value,
}

fn run_once() -> Run {
    // A directory on a disk filesystem (tmpfs keeps no negative dentries).
    let dir = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (d, s) = (dir.path().to_path_buf(), Arc::clone(&stop));
    let (neg0, all0) = (nr_negative(), common::nr_dentry());
    let t0 = Instant::now();
    let g = std::thread::spawn(move || generate(d, s));
    std::thread::sleep(Duration::from_millis(500));
    let state = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dentrylab"))
        .args(["status", "--state-dir", state.path().to_str().unwrap()])
        .args(["--watch", "1s", "--window", "30s", "--samples", "8", "--json", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines: Vec<serde_json::Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    let status = child.wait().unwrap();
    stop.store(true, Ordering::Relaxed);
    let (n, secs) = g.join().unwrap();
    let (neg1, all1) = (nr_negative(), common::nr_dentry());
    let elapsed = t0.elapsed().as_secs_f64();
    assert!(status.success(), "status --watch failed");
    assert_eq!(lines.len(), 8, "one JSON object per sample");
    assert!(lines[0]["growth"].is_null(), "no growth from one sample");
    let last = lines.last().unwrap().clone();
    let _ = (neg0, neg1);
    Run {
        known: n as f64 / secs,
        witness: (all1 - all0) as f64 / elapsed,
        growth: last["growth"]["dentries_per_second"].as_f64().unwrap(),
        negative: last["growth"]["negative_per_second"].as_f64().unwrap(),
        last,
    }
}

#[test]
fn growth_within_ten_percent_of_a_known_rate() {
    let _k = common::kernel_lock();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let r = run_once();
        let undisturbed = (r.witness - r.known).abs() <= 0.05 * r.known;
        seen.push(format!(
            "known {:.0}/s, witness {:.0}/s, reported {:.0}/s (negative {:.0}/s)",
            r.known, r.witness, r.growth, r.negative
        ));
        if !undisturbed {
            continue;
        }
        assert!((r.growth - r.known).abs() <= 0.10 * r.known, "{}", seen.last().unwrap());
        assert!((r.negative - r.known).abs() <= 0.10 * r.known, "{}", seen.last().unwrap());
        let g = &r.last["growth"];
        // The time is measured to the low end of the edge's interval (the
        // point when the calibration has none), as the level is.
        let edge = g["edge_low_dentries"].as_f64().or(g["edge_dentries"].as_f64()).unwrap();
        let now = r.last["dentries"]["nr_dentry"].as_f64().unwrap();
        let t = g["seconds_to_lockup"].as_f64().unwrap();
        assert!((t - (edge - now) / r.growth).abs() <= 1e-6 * t, "time to the edge {t} = (edge - now) / rate");
        return;
    }
    panic!("every run was disturbed by other activity on the machine: {seen:?}");
}

#[test]
fn a_bad_interval_is_exit_2() {
    for (args, needle) in [
        (&["--watch", "0s"][..], "\"0s\" is not a duration from 100ms to 24h"),
        (&["--watch", "fast"][..], "\"fast\" is not a duration"),
        (&["--samples", "3"][..], "--watch"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_dentrylab")).arg("status").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
