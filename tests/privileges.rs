//! Without root: a user namespace when the kernel allows one, otherwise one
//! clear line saying what needs root.

mod common;

use common::{bin, kernel_lock};

fn as_nobody(args: &[&str]) -> std::process::Output {
    let mut c = std::process::Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_dentrylab")]);
    c.args(args).output().expect("setpriv (util-linux) runs")
}

/// Runs `dentrylab args` as a non-root user that can make no user
/// namespace: it starts inside user namespaces nested to the kernel's depth
/// limit (32), unmapped, so its uid is the overflow uid and any further
/// `unshare(CLONE_NEWUSER)` fails. Nothing machine-wide is changed.
fn as_nobody_without_user_namespaces(args: &[&str]) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_dentrylab"));
    cmd.args(args);
    // SAFETY: only unshare, which is async-signal-safe, runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for _ in 0..64 {
                if nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWUSER).is_err() {
                    break;
                }
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

#[test]
fn without_root_or_user_namespaces_says_what_needs_root() {
    require_root!();
    let out = as_nobody_without_user_namespaces(&["reclaim", "--sizes", "10k", "--reps", "1", "--no-save"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let first = err.lines().next().unwrap_or_default();
    assert!(first.starts_with("dentrylab: error: creating the sandbox needs root"), "{err}");
    assert!(first.contains("user.max_user_namespaces"), "{err}");
    assert!(!err.contains("panicked"));
}

#[test]
fn unprivileged_user_runs_in_a_user_namespace() {
    require_root!();
    let _g = kernel_lock();
    let _ = bin();
    let out = as_nobody(&["reclaim", "--sizes", "10k,20k", "--reps", "1", "--no-save", "--json", "-"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sandbox"], "user_namespace");
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    // What could not be read is said, not guessed.
    let notes = v["notes"].to_string();
    assert!(notes.contains("/dev/kmsg") && notes.contains("slabinfo"), "{notes}");
}
