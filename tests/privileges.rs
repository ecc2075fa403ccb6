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

/// "Calibrate once as root, then watch as any user": root's `reclaim` saves
/// the node's calibration in /var/lib/dentrylab; `status` as nobody with an
/// empty environment (no HOME: its own directory is
/// /nonexistent/.local/state/dentrylab) must find that file, say it read
/// it, and predict from it. Run in a private mount namespace with a
/// temporary directory over /var/lib, so the host's state is not touched.
#[test]
fn root_calibrates_and_nobody_reads_the_node_calibration() {
    require_root_and!("unshare", "setpriv", "env");
    let _g = kernel_lock();
    let _ = bin();
    let lib = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(lib.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = env!("CARGO_BIN_EXE_dentrylab");
    let clean = "env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin";
    let script = format!(
        "set -e; mount --bind {lib} /var/lib; \
         {clean} {exe} reclaim --sizes 20k,40k,80k --reps 2 --unpinned-reps 0 >/dev/null; \
         ls -l /var/lib/dentrylab/calibration.json >&2; \
         setpriv --reuid=65534 --regid=65534 --clear-groups {clean} {exe} status --json -",
        lib = lib.path().display()
    );
    let out = std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(lib.path().join("dentrylab/calibration.json").is_file(), "root saved under /var/lib/dentrylab: {err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["calibration"];
    assert_eq!(c["source"], "file", "{c}");
    assert_eq!(c["path"], "/var/lib/dentrylab/calibration.json", "{c}");
    assert!(c["name"].as_str().unwrap().starts_with("/var/lib/dentrylab/calibration.json ("), "{c}");
    assert!(c["calibration"]["command"].as_str().unwrap().contains("reclaim"), "{c}");
    assert!(v["prediction"]["lockup_dentries"].as_f64().is_some_and(|n| n > 0.0), "{}", v["prediction"]);
}
