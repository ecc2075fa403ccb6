//! `status --watch`: beside a generator of negative dentries at a known
//! rate, the growth it reports is the growth of dentry-state, for nr_dentry
//! and nr_negative, and its time to the edge is the distance to the edge
//! over that rate. No wall-clock assertion.
//!
//! dentry-state is machine-wide, and other jobs move it by hundreds of
//! thousands a second; that is what `status` reports, so the test measures
//! the same counters itself: as each sample's line arrives it reads
//! dentry-state, and the growth reported must be the least-squares slope of
//! its own reads within 10% of the generator's rate, plus 2% of that slope,
//! plus what the largest difference between a reported sample and the
//! test's read of the same moment (the machine's movement in between) can
//! move a slope. Under load that difference is the machine's own rate over
//! the pipe's latency, a few hundred dentries; idle, the generator's.
//! Nothing is retried.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Failed lookups per second (a 2-vCPU machine makes about 550k/s in one thread).
const RATE: f64 = 20_000.0;
const BATCH: u64 = 200;

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

/// The least-squares slope of `y` against `x`.
fn slope(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum::<f64>() / sxx
}

/// How far an error of at most `e` in each value can move the slope over
/// `x`: e × Σ|x − x̄| / Σ(x − x̄)².
fn slope_error(x: &[f64], e: f64) -> f64 {
    let mx = x.iter().sum::<f64>() / x.len() as f64;
    e * x.iter().map(|a| (a - mx).abs()).sum::<f64>() / x.iter().map(|a| (a - mx).powi(2)).sum::<f64>()
}

/// A witness on purpose: read here, not through the library, to check the growth `status` computes.
fn dentry_state() -> (f64, f64) {
    let s = std::fs::read_to_string("/proc/sys/fs/dentry-state").unwrap();
    let v: Vec<f64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
    (v[0], v[4])
}

#[test]
fn growth_is_the_slope_of_dentry_state_beside_a_known_rate() {
    let _k = common::kernel_lock();
    // A directory on a disk filesystem (tmpfs keeps no negative dentries).
    let dir = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (d, s) = (dir.path().to_path_buf(), Arc::clone(&stop));
    let g = std::thread::spawn(move || generate(d, s));
    let state = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dentrylab"))
        .args(["status", "--state-dir", state.path().to_str().unwrap()])
        .args(["--watch", "1s", "--window", "30s", "--samples", "8", "--json", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    // (line, seconds, the test's nr_dentry and nr_negative as it arrived)
    let mut seen = Vec::new();
    for l in BufReader::new(child.stdout.take().unwrap()).lines() {
        let l = l.unwrap();
        let (all, neg) = dentry_state();
        let t = t0.elapsed().as_secs_f64();
        seen.push((serde_json::from_str::<serde_json::Value>(&l).unwrap(), t, all, neg));
    }
    let status = child.wait().unwrap();
    stop.store(true, Ordering::Relaxed);
    let (n, secs) = g.join().unwrap();
    let known = n as f64 / secs;
    assert!(status.success(), "status --watch failed");
    assert_eq!(seen.len(), 8, "one JSON object per sample");
    assert!(seen[0].0["growth"].is_null(), "no growth from one sample");
    let last = &seen.last().unwrap().0;
    let t: Vec<f64> = seen.iter().map(|s| s.1).collect();
    for (key, field, mine) in [("nr_dentry", "dentries_per_second", 2), ("nr_negative", "negative_per_second", 3)] {
        let reported: Vec<f64> = seen.iter().map(|s| s.0["dentries"][key].as_f64().unwrap()).collect();
        let read: Vec<f64> = seen.iter().map(|s| if mine == 2 { s.2 } else { s.3 }).collect();
        let e = reported.iter().zip(&read).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        let (ours, growth) = (slope(&t, &read), last["growth"][field].as_f64().unwrap());
        let tol = 0.10 * known + 0.02 * ours.abs() + slope_error(&t, e);
        let msg = format!(
            "{key}: reported {growth:.0}/s, the test's own reads {ours:.0}/s (± {tol:.0}: generator {known:.0}/s, \
             samples differ from the reads by up to {e:.0})"
        );
        eprintln!("{msg}");
        assert!((growth - ours).abs() <= tol, "{msg}");
    }
    let g = &last["growth"];
    let growth = g["dentries_per_second"].as_f64().unwrap();
    // The time is measured to the low end of the edge's interval (the
    // point when the calibration has none), as the level is.
    let edge = g["edge_low_dentries"].as_f64().or(g["edge_dentries"].as_f64()).unwrap();
    let now = last["dentries"]["nr_dentry"].as_f64().unwrap();
    match g["seconds_to_lockup"].as_f64() {
        Some(t) if now >= edge => assert_eq!(t, 0.0, "past the edge"),
        Some(t) => assert!((t - (edge - now) / growth).abs() <= 1e-6 * t, "time to the edge {t} = (edge - now) / rate"),
        // Shrinking (other jobs freed more than the generator made): no time to the edge.
        None => assert!(growth <= 0.0 || now >= edge, "no time to the edge at {growth}/s: {g}"),
    }
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
