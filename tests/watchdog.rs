//! `reclaim --watchdog-check`: the lowered kernel.watchdog_thresh comes back
//! however the run ends, SIGKILL included (the test waits up to 30 s: a deadline, not a measured time).

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{bin, kernel_lock};

const SYSCTL: &str = "/proc/sys/kernel/watchdog_thresh";

/// A witness on purpose: read here, not through the library, to check the run put the value back.
fn thresh() -> String {
    std::fs::read_to_string(SYSCTL).unwrap().trim().to_string()
}

/// Puts the original value back even if an assertion fails.
struct Restore(String);
impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::write(SYSCTL, &self.0);
    }
}

#[test]
fn needs_allow_global() {
    let out = bin().args(["reclaim", "--watchdog-check", "--sizes", "10k"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--allow-global") && err.lines().count() == 1, "{err}");
}

#[test]
fn sigkill_at_any_moment_restores_watchdog_thresh() {
    require_root!();
    let _g = kernel_lock();
    let original = thresh();
    let _restore = Restore(original.clone());
    let lowered_to = if original == "3" { "4" } else { "3" };
    for ms in [0u64, 20, 150, 700, 1600] {
        let mut child = bin()
            .args(["reclaim", "--watchdog-check", "--allow-global", "--watchdog-thresh", lowered_to])
            .args(["--sizes", "200k,400k", "--reps", "2", "--no-save"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(ms));
        if ms >= 150 {
            // From 150 ms on the kill is meant to come while the threshold
            // is lowered: wait for that (slower on a loaded machine).
            let t = Instant::now();
            while thresh() != lowered_to {
                assert!(t.elapsed() < Duration::from_secs(60), "never lowered during the run (kill at {ms} ms)");
                assert!(child.try_wait().unwrap().is_none(), "the run ended before it lowered the threshold");
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        std::process::Command::new("kill").args(["-KILL", &child.id().to_string()]).status().unwrap();
        child.wait().unwrap();
        let t = Instant::now();
        while thresh() != original {
            // A generous deadline, not a measured time: the guardian puts
            // it back as soon as it sees the run gone.
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "kill at {ms} ms: watchdog_thresh is {} 30 s later",
                thresh()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// With a list of thresholds, the value changes between sweeps; a SIGKILL
/// during the second sweep still puts the original back.
#[test]
fn sigkill_during_the_second_threshold_of_a_list_restores_watchdog_thresh() {
    require_root!();
    let _g = kernel_lock();
    let original = thresh();
    let _restore = Restore(original.clone());
    let (first, second) = if original == "3" { ("4", "5") } else { ("3", if original == "4" { "5" } else { "4" }) };
    let mut child = bin()
        .args(["reclaim", "--watchdog-check", "--allow-global", "--watchdog-thresh", &format!("{first},{second}")])
        .args(["--sizes", "20k,40k", "--reps", "1", "--no-save"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let mut seen_first = false;
    while thresh() != second {
        seen_first |= thresh() == first;
        assert!(t.elapsed() < Duration::from_secs(120), "the second threshold was never set (now {})", thresh());
        assert!(child.try_wait().unwrap().is_none(), "the run ended before its second threshold");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(seen_first, "the first threshold of the list was never set");
    std::process::Command::new("kill").args(["-KILL", &child.id().to_string()]).status().unwrap();
    child.wait().unwrap();
    let t = Instant::now();
    while thresh() != original {
        assert!(t.elapsed() < Duration::from_secs(30), "watchdog_thresh is {} 30 s after the kill", thresh());
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn completed_check_restores_and_reports_per_size() {
    require_root!();
    let _g = kernel_lock();
    let original = thresh();
    let _restore = Restore(original.clone());
    let out = bin()
        .args([
            "reclaim",
            "--watchdog-check",
            "--allow-global",
            "--sizes",
            "20k,40k,80k",
            "--reps",
            "1",
            "--no-save",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(thresh(), original);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = &v["watchdog"];
    assert_eq!(w["thresh_seconds"], 1);
    assert_eq!(w["original_thresh_seconds"].to_string(), original);
    assert_eq!(v["environment"]["watchdog_thresh_seconds"], 1, "the run itself saw the lowered threshold");
    let rows = w["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["agreement"], "unpredicted", "nothing is smaller than the first size");
    // Small sizes: the watchdog stays silent and the prediction says so.
    for r in &rows[1..] {
        assert_eq!(r["watchdog_fired"], false);
        assert_eq!(r["agreement"], "true_negative", "{r}");
    }
    assert_eq!(w["validated"], false, "never firing cannot validate the positive side");
}
