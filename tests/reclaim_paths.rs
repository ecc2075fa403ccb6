//! Every kind of dentry and every reclaim path. Real mounts at
//! small sizes (needs root, as in CI): ext4/xfs on loop devices, the
//! negative and unlinked kinds, the ns-exit, drop-caches and memcg methods,
//! --contend, the errors for impossible combinations, and a kill -9 that
//! must leave no loop device, mount or cgroup behind.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;

use common::{kernel_lock as lock, loop_devices, loops_mounted_by, usage_error, wait_until};

fn dentrylab() -> Command {
    let mut c = Command::cargo_bin("dentrylab").unwrap();
    c.env("DENTRYLAB_STATE_DIR", std::env::temp_dir().join("dentrylab-test-state"));
    c
}

/// Runs a sweep and returns its JSON result.
fn reclaim(args: &[&str]) -> Value {
    let out = dentrylab().arg("reclaim").args(args).args(["--reps", "1", "--no-save", "--json", "-"]).output().unwrap();
    assert!(out.status.success(), "dentrylab reclaim {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn runs(v: &Value) -> &Vec<Value> {
    v["runs"].as_array().unwrap()
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} missing in {v}"))
}

// ---- errors (no root needed) ----

#[test]
fn negative_kinds_are_refused_on_tmpfs() {
    usage_error("reclaim", &["--kind", "negative"], &["tmpfs deletes a negative dentry as soon as it is unused"]);
    usage_error("reclaim", &["--kind", "unlinked", "--fs", "tmpfs"], &["add --fs ext4 or --fs xfs"]);
    usage_error("create", &["--count", "10k", "--kind", "negative"], &["--kind negative needs a disk filesystem"]);
}

#[test]
fn drop_caches_needs_allow_global() {
    usage_error("reclaim", &["--fs", "ext4", "--method", "drop-caches"], &["pass --allow-global"]);
    usage_error("reclaim", &["--method", "all"], &["pass --allow-global"]);
}

#[test]
fn bad_methods_and_filesystems_are_named() {
    usage_error("reclaim", &["--method", "shrink"], &["ns-exit, drop-caches, memcg"]);
    usage_error("reclaim", &["--method", "umount,umount"], &["\"umount\" is given twice"]);
    usage_error("reclaim", &["--fs", "btrfs"], &["use one of tmpfs, ext4, xfs"]);
    usage_error("reclaim", &["--kind", "dir"], &["negative, unlinked"]);
    usage_error("reclaim", &["--contend", "0"], &["--contend"]);
}

// ---- real kernel ----

#[test]
fn negative_on_ext4_every_method_frees_them_all() {
    require_root_and!("mkfs.ext4");
    let _g = lock();
    let v = reclaim(&["--fs", "ext4", "--kind", "negative", "--sizes", "20k", "--method", "all", "--allow-global"]);
    let rs = runs(&v);
    assert_eq!(rs.len(), 4);
    for r in rs {
        assert_eq!(r["witness"], "nr_negative");
        assert_eq!(r["create"]["entries"], 20_000);
        // The failed lookups really left negative dentries.
        assert!(f(r, "created_negative") >= 19_000.0, "{}", r["created_negative"]);
        let min = if r["method"] == "drop-caches" || r["method"] == "memcg" { 0.9 } else { 0.99 };
        assert!(f(r, "freed_fraction") >= min, "{}: freed {}", r["method"], r["freed_fraction"]);
    }
    let m = rs.iter().find(|r| r["method"] == "memcg").unwrap();
    assert!(m["memcg"]["interface"].as_str().unwrap().contains("memory."));
    assert!(m["left_for_umount"].as_i64().unwrap() < 2_000);
    // One comparison from one command.
    let c = &v["comparison"];
    assert_eq!(c["ranking"].as_array().unwrap().len(), 4);
    assert!(c["summary"][0].as_str().unwrap().contains("most dangerous"));
}

#[test]
fn every_kind_on_xfs_and_ext4() {
    require_root_and!("mkfs.ext4", "mkfs.xfs");
    let _g = lock();
    for fs in ["xfs", "ext4"] {
        for kind in ["hardlink", "file", "negative", "unlinked"] {
            let v = reclaim(&["--fs", fs, "--kind", kind, "--sizes", "20k", "--layout", "dirs=2"]);
            let r = &runs(&v)[0];
            assert_eq!(r["create"]["entries"], 20_000, "{fs} {kind}");
            assert!(f(r, "freed_fraction") >= 0.99, "{fs} {kind}: freed {}", r["freed_fraction"]);
            if kind == "unlinked" {
                // Unlinked files leave negative dentries on a disk filesystem.
                assert!(f(r, "created_negative") >= 19_000.0, "{fs}: {}", r["created_negative"]);
            }
        }
    }
}

#[test]
fn hard_links_past_the_ext4_link_limit() {
    require_root_and!("mkfs.ext4");
    let _g = lock();
    // ext4 allows 65000 links per inode: the generator starts a new source.
    let v = reclaim(&["--fs", "ext4", "--kind", "hardlink", "--sizes", "70k", "--method", "ns-exit"]);
    let r = &runs(&v)[0];
    assert_eq!(r["create"]["entries"], 70_000);
    assert!(f(r, "freed_fraction") >= 0.99);
}

#[test]
fn tmpfs_dentries_are_pinned_so_lru_paths_free_none() {
    require_root!();
    let _g = lock();
    let v = reclaim(&["--sizes", "20k", "--method", "memcg,ns-exit"]);
    let memcg = runs(&v).iter().find(|r| r["method"] == "memcg").unwrap();
    assert!(f(memcg, "freed_fraction") < 0.5, "memcg freed {} of tmpfs", memcg["freed_fraction"]);
    let nsx = runs(&v).iter().find(|r| r["method"] == "ns-exit").unwrap();
    assert!(f(nsx, "freed_fraction") >= 0.99);
    let notes: Vec<&str> = v["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    assert!(notes.iter().any(|n| n.contains("tmpfs pins its dentries")), "{notes:?}");
}

#[test]
fn contend_runs_every_repetition_both_ways() {
    require_root_and!("mkfs.ext4");
    require!(std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2, "needs 2 CPUs");
    let _g = lock();
    let v = reclaim(&[
        "--fs",
        "ext4",
        "--kind",
        "negative",
        "--sizes",
        "20k",
        "--method",
        "umount,memcg",
        "--contend",
        "1",
    ]);
    let rs = runs(&v);
    assert_eq!(rs.len(), 4);
    for r in rs {
        let c = r["contenders"].as_u64().unwrap();
        assert_eq!(r["contention"].is_null(), c == 0);
        if c > 0 {
            assert!(r["contention"]["lookups_total"].as_u64().unwrap() > 0);
        }
    }
    let sizes = v["sizes"].as_array().unwrap();
    assert_eq!(sizes.iter().filter(|s| s["contenders"] == 1).count(), 2);
}

#[test]
fn create_holds_negative_dentries_on_ext4() {
    require_root_and!("mkfs.ext4");
    let _g = lock();
    let out = dentrylab()
        .args(["create", "--count", "20k", "--fs", "ext4", "--kind", "negative", "--hold", "0", "--json", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let neg = v["after_create"]["dentry_state"]["nr_negative"].as_i64().unwrap()
        - v["before"]["dentry_state"]["nr_negative"].as_i64().unwrap();
    assert!(neg >= 19_000, "{neg}");
}

/// The runs bench/negative-rate.sh compares: both negative kinds, all in one
/// directory and one directory per thread, make exactly what was asked,
/// dentry-state sees the negatives, and the generator's CPU time is its
/// threads' own (above 0, at most threads x wall time).
#[test]
fn create_negative_kinds_in_one_directory_and_one_per_thread() {
    require_root_and!("mkfs.ext4");
    let _g = lock();
    for kind in ["negative", "unlinked"] {
        for (layout, dirs) in [("flat", 1), ("dirs=2", 2)] {
            let out = dentrylab()
                .args(["create", "--count", "20k", "--fs", "ext4", "--kind", kind, "--layout", layout])
                .args(["--threads", "2", "--hold", "0", "--json", "-"])
                .output()
                .unwrap();
            assert!(out.status.success(), "{kind} {layout}: {}", String::from_utf8_lossy(&out.stderr));
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            let c = &v["create"];
            assert_eq!(c["entries"].as_u64(), Some(20_000), "{kind} {layout}: {c}");
            assert_eq!((c["threads"].as_u64(), c["dirs"].as_u64()), (Some(2), Some(dirs)), "{kind} {layout}: {c}");
            let neg = v["after_create"]["dentry_state"]["nr_negative"].as_i64().unwrap()
                - v["before"]["dentry_state"]["nr_negative"].as_i64().unwrap();
            assert!(neg >= 19_000, "{kind} {layout}: {neg} new negative dentries");
            let (cpu, wall) = (c["cpu_seconds"].as_f64().unwrap(), c["seconds"].as_f64().unwrap());
            assert!(cpu > 0.0 && cpu <= 2.0 * wall + 0.01, "{kind} {layout}: {cpu} s of CPU in {wall} s");
        }
    }
}

// ---- kill -9 leaves nothing ----

/// Every process of the tree rooted at `pid`.
fn tree(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        if let Ok(rd) = std::fs::read_dir(format!("/proc/{p}/task")) {
            for t in rd.flatten() {
                let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
                out.extend(kids.split_whitespace().filter_map(|k| k.parse::<u32>().ok()));
            }
        }
        i += 1;
    }
    out
}

fn cgroups_of(pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![std::path::PathBuf::from("/sys/fs/cgroup")];
    let name = format!("dentrylab-{pid}-");
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if e.file_name().to_string_lossy().starts_with(&name) {
                    found.push(e.path().display().to_string());
                }
                stack.push(e.path());
            }
        }
    }
    found
}

fn kill9_mid_create(method: &str) {
    let bin = assert_cmd::cargo::cargo_bin("dentrylab");
    let mut child = std::process::Command::new(bin)
        .args([
            "reclaim",
            "--fs",
            "ext4",
            "--kind",
            "file",
            "--sizes",
            "3M",
            "--reps",
            "1",
            "--no-save",
            "--method",
            method,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait until its filesystem is mounted and creation is under way.
    let mut ours = BTreeSet::new();
    wait_until(&format!("{method}: no loop device was ever mounted"), Duration::from_secs(20), || {
        ours = loops_mounted_by(&tree(pid));
        !ours.is_empty()
    });
    std::thread::sleep(Duration::from_millis(500));
    let devices: BTreeSet<_> = loop_devices().into_iter().filter(|(n, _, _)| ours.contains(n)).collect();
    assert!(!devices.is_empty(), "{method}: {ours:?} not in losetup -l");
    let procs = tree(pid);
    if method == "memcg" {
        assert!(!cgroups_of(pid).is_empty(), "memcg: no cgroup while running");
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    let _ = child.wait();
    wait_until(&format!("{method}: a loop device stayed bound: {devices:?}"), Duration::from_secs(10), || {
        loop_devices().is_disjoint(&devices)
    });
    wait_until(&format!("{method}: a cgroup stayed"), Duration::from_secs(15), || cgroups_of(pid).is_empty());
    wait_until(&format!("{method}: a child process stayed"), Duration::from_secs(10), || {
        procs.iter().skip(1).all(|p| !Path::new(&format!("/proc/{p}")).exists() || is_zombie_or_other(*p))
    });
}

/// A pid that is gone, or already reused by an unrelated process.
fn is_zombie_or_other(p: u32) -> bool {
    let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
    !String::from_utf8_lossy(&cmd).contains("dentrylab")
}

#[test]
fn killed_mid_create_leaves_nothing() {
    require_root_and!("mkfs.ext4", "losetup");
    let _g = lock();
    for method in ["umount", "ns-exit", "memcg"] {
        kill9_mid_create(method);
    }
}
