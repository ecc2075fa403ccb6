//! Every bad input gets one clear line and exit 2; failures exit 1; never a
//! panic or a backtrace.

mod common;

use common::bin;

/// Runs with `args`, expects exit `code` and a single stderr line containing
/// every one of `needles`.
fn expect_error(args: &[&str], code: i32, needles: &[&str]) {
    let out = bin().args(args).env("RUST_BACKTRACE", "1").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: stderr was {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: want one line, got {err:?}");
    assert!(lines[0].starts_with("dentrylab: error: "), "{args:?}: {err}");
    for n in needles {
        assert!(lines[0].contains(n), "{args:?}: {:?} lacks {n:?}", lines[0]);
    }
    assert!(!err.contains("panicked") && !err.contains("backtrace"), "{err}");
    assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
}

#[test]
fn size_zero() {
    expect_error(&["reclaim", "--sizes", "0"], 2, &["--sizes", "\"0\"", "at least 1"]);
}

#[test]
fn size_negative() {
    expect_error(&["reclaim", "--sizes", "-5"], 2, &["--sizes", "\"-5\""]);
    expect_error(&["create", "--count", "-5"], 2, &["--count", "\"-5\""]);
}

#[test]
fn auto_sizes_and_probe_policy_bad_values() {
    expect_error(&["reclaim", "--sizes", "auto:0"], 2, &["--sizes", "auto:SIZE caps", "at least 1"]);
    expect_error(&["reclaim", "--sizes", "auto:lots"], 2, &["--sizes", "\"lots\"", "not a number"]);
    expect_error(&["reclaim", "--probe-policy", "rr"], 2, &["--probe-policy", "\"rr\"", "fifo or other"]);
}

#[test]
fn size_bad_suffix() {
    expect_error(&["reclaim", "--sizes", "1.5X"], 2, &["--sizes", "unknown suffix 'X'"]);
    expect_error(&["reclaim", "--sizes", "100k,abc"], 2, &["\"abc\"", "not a number"]);
    expect_error(&["reclaim", "--extrapolate", "1.5Q"], 2, &["--extrapolate", "'Q'"]);
}

#[test]
fn unknown_values() {
    expect_error(&["reclaim", "--kind", "symlink"], 2, &["--kind", "symlink", "hardlink"]);
    expect_error(&["reclaim", "--layout", "tree"], 2, &["--layout", "dirs=K"]);
    expect_error(&["reclaim", "--layout", "dirs=0"], 2, &["--layout", "dirs=K"]);
    expect_error(&["reclaim", "--method", "reboot"], 2, &["--method", "reboot", "umount"]);
    expect_error(&["reclaim", "--fs", "ntfs"], 2, &["--fs", "ntfs"]);
    expect_error(&["reclaim", "--reps", "0"], 2, &["--reps"]);
    expect_error(&["reclaim", "--threads", "0"], 2, &["--threads"]);
    expect_error(&["reclaim", "--frobnicate"], 2, &["--frobnicate"]);
    expect_error(&["create"], 2, &["--count"]);
}

#[test]
fn too_large_for_memory() {
    expect_error(&["reclaim", "--sizes", "100k,900G"], 2, &["900G", "MemAvailable", "--force"]);
    expect_error(&["create", "--count", "900G", "--kind", "file"], 2, &["900G", "MemAvailable"]);
}

#[test]
fn cpu_out_of_range() {
    expect_error(&["reclaim", "--cpu", "4095", "--sizes", "10k"], 2, &["--cpu 4095"]);
}

#[test]
fn help_and_version_exit_zero() {
    let out = bin().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for cmd in ["reclaim", "create"] {
        assert!(text.contains(cmd), "{text}");
    }
    let out = bin().args(["reclaim", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--sizes") && text.contains("seed"), "{text}");
    assert!(bin().arg("--version").output().unwrap().status.success());
}

/// A usage error (exit 2) comes before any output is created: a refused
/// `--watchdog-check` leaves no `--json`, `--markdown` or `--report` behind.
#[test]
fn usage_error_creates_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let md = dir.path().join("r.md");
    let report = dir.path().join("report");
    let (j, m, r) = (json.to_str().unwrap(), md.to_str().unwrap(), report.to_str().unwrap());
    expect_error(
        &["reclaim", "--watchdog-check", "--no-save", "--json", j, "--markdown", m, "--report", r],
        2,
        &["--watchdog-check", "--allow-global"],
    );
    for p in [&json, &md, &report] {
        assert!(!p.exists(), "{} was created before the usage error", p.display());
    }
}
