//! Every kind of dentry and every reclaim path. Real mounts at
//! small sizes (needs root, as in CI): ext4/xfs on loop devices, the
//! negative and unlinked kinds, the ns-exit, drop-caches and memcg methods,
//! --contend, the errors for impossible combinations, and a kill -9 that
//! must leave no loop device, mount or cgroup behind.
//!
//! Each run is counted in a memory cgroup of its own (`RunCgroup`): its
//! peak kernel memory holds the dentries it made, and it gives them back.
//! The run's own `freed`, `created_negative` and `left_for_umount` are
//! deltas of the machine-wide dentry-state (its witness): they are checked
//! with the most the machine moved on its own over a window as long as the
//! run's, sampled a second before and after it, as slack; a burst inside
//! the run that the samples missed makes it run again, at most three
//! times, with the reason printed (`retry_disturbed`).

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use common::busy::{Background, RunCgroup, around, dentry_object_bytes, retry_disturbed};
use common::{kernel_lock as lock, loop_devices, loops_mounted_by, usage_error, wait_until};

/// Seconds a product's count window spans beyond its creation or reclaim
/// (mkfs and mount, sync, the probes, the settle): a generous bound.
const WINDOW_MARGIN: f64 = 3.0;

/// Runs `dentrylab ARGS… --json -` in `cg` with the background sampled
/// around it.
fn run_in(cg: &RunCgroup, args: &[&str]) -> (Value, Background) {
    around(|| {
        let out = cg
            .command()
            .env("DENTRYLAB_STATE_DIR", std::env::temp_dir().join("dentrylab-test-state"))
            .args(args)
            .args(["--json", "-"])
            .output()
            .unwrap();
        assert!(out.status.success(), "dentrylab {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    })
}

/// Runs `reclaim ARGS… --reps 1` in a cgroup of its own until `machine`
/// (its machine-wide counts) holds, at most three times; on every attempt
/// the run made and freed `largest` dentries by its own cgroup.
fn reclaim_checked(
    name: &str,
    args: &[&str],
    largest: u64,
    machine: impl Fn(&Value, &Background) -> Result<(), String>,
) -> Value {
    let mut last = Value::Null;
    let mut all = vec!["reclaim"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--reps", "1", "--no-save"]);
    retry_disturbed(name, 3, || {
        let cg = RunCgroup::new(name);
        let (v, bg) = run_in(&cg, &all);
        cg.assert_made_and_freed(name, largest);
        let r = machine(&v, &bg).map_err(|e| format!("{e}; {}", bg.describe()));
        last = v;
        r
    });
    last
}

/// The machine's swing of run `r`'s witness over its reclaim's window.
fn reclaim_swing(r: &Value, bg: &Background) -> i64 {
    bg.swing(f(r, "reclaim_seconds") + WINDOW_MARGIN, r["witness"] == "nr_negative")
}

/// The machine's swing of nr_negative over run `r`'s creation's window.
fn create_swing(r: &Value, bg: &Background) -> i64 {
    bg.swing(r["create"]["seconds"].as_f64().unwrap() + WINDOW_MARGIN, true)
}

/// Run `r` freed at least `share` of its `entries` (by its witness, less
/// the machine's own swing over the window).
fn freed_at_least(r: &Value, share: f64, bg: &Background) -> Result<(), String> {
    let made = r["create"]["entries"].as_i64().unwrap();
    let (freed, swing) = (r["freed"].as_i64().unwrap(), reclaim_swing(r, bg));
    if (freed as f64) < share * made as f64 - swing as f64 {
        return Err(format!("{} freed {freed} of {made} (machine's swing {swing})", r["method"]));
    }
    Ok(())
}

/// Run `r` left at least `at_least` new negative dentries (nr_negative
/// over its creation, less the machine's own swing).
fn negatives_at_least(r: &Value, at_least: i64, bg: &Background) -> Result<(), String> {
    let (got, swing) = (r["created_negative"].as_i64().unwrap(), create_swing(r, bg));
    if got < at_least - swing {
        return Err(format!("created_negative {got} < {at_least} (machine's swing {swing})"));
    }
    Ok(())
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
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = lock();
    let args = ["--fs", "ext4", "--kind", "negative", "--sizes", "20k", "--method", "all", "--allow-global"];
    let v = reclaim_checked("negative-all", &args, 20_000, |v, bg| {
        for r in runs(v) {
            // The failed lookups really left negative dentries.
            negatives_at_least(r, 19_000, bg)?;
            let min = if r["method"] == "drop-caches" || r["method"] == "memcg" { 0.9 } else { 0.99 };
            freed_at_least(r, min, bg)?;
        }
        let m = runs(v).iter().find(|r| r["method"] == "memcg").unwrap();
        let (left, swing) = (m["left_for_umount"].as_i64().unwrap(), reclaim_swing(m, bg));
        if left >= 2_000 + swing {
            return Err(format!("memcg left {left} for the umount (machine's swing {swing})"));
        }
        Ok(())
    });
    let rs = runs(&v);
    assert_eq!(rs.len(), 4);
    for r in rs {
        assert_eq!(r["witness"], "nr_negative");
        assert_eq!(r["create"]["entries"], 20_000);
        assert!((0.0..=1.0).contains(&f(r, "freed_fraction")), "{}", r["freed_fraction"]);
    }
    let m = rs.iter().find(|r| r["method"] == "memcg").unwrap();
    assert!(m["memcg"]["interface"].as_str().unwrap().contains("memory."));
    // One comparison from one command.
    let c = &v["comparison"];
    assert_eq!(c["ranking"].as_array().unwrap().len(), 4);
    assert!(c["summary"][0].as_str().unwrap().contains("most dangerous"));
}

#[test]
fn every_kind_on_xfs_and_ext4() {
    require_root_and!("mkfs.ext4", "mkfs.xfs");
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = lock();
    for fs in ["xfs", "ext4"] {
        for kind in ["hardlink", "file", "negative", "unlinked"] {
            let args = ["--fs", fs, "--kind", kind, "--sizes", "20k", "--layout", "dirs=2"];
            let v = reclaim_checked(&format!("{fs}-{kind}"), &args, 20_000, |v, bg| {
                let r = &runs(v)[0];
                freed_at_least(r, 0.99, bg).map_err(|e| format!("{fs} {kind}: {e}"))?;
                if kind == "unlinked" {
                    // Unlinked files leave negative dentries on a disk filesystem.
                    negatives_at_least(r, 19_000, bg).map_err(|e| format!("{fs}: {e}"))?;
                }
                Ok(())
            });
            assert_eq!(runs(&v)[0]["create"]["entries"], 20_000, "{fs} {kind}");
        }
    }
}

#[test]
fn hard_links_past_the_ext4_link_limit() {
    require_root_and!("mkfs.ext4");
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = lock();
    // ext4 allows 65000 links per inode: the generator starts a new source.
    let args = ["--fs", "ext4", "--kind", "hardlink", "--sizes", "70k", "--method", "ns-exit"];
    let v = reclaim_checked("ext4-links", &args, 70_000, |v, bg| freed_at_least(&runs(v)[0], 0.99, bg));
    assert_eq!(runs(&v)[0]["create"]["entries"], 70_000);
}

#[test]
fn tmpfs_dentries_are_pinned_so_lru_paths_free_none() {
    require_root!();
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = lock();
    let v = reclaim_checked("tmpfs-lru", &["--sizes", "20k", "--method", "memcg,ns-exit"], 20_000, |v, bg| {
        let memcg = runs(v).iter().find(|r| r["method"] == "memcg").unwrap();
        let (freed, swing) = (memcg["freed"].as_i64().unwrap(), reclaim_swing(memcg, bg));
        if freed >= 10_000 + swing {
            return Err(format!("memcg freed {freed} of 20k of tmpfs (machine's swing {swing})"));
        }
        freed_at_least(runs(v).iter().find(|r| r["method"] == "ns-exit").unwrap(), 0.99, bg)
    });
    let notes: Vec<&str> = v["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    assert!(notes.iter().any(|n| n.contains("tmpfs pins its dentries")), "{notes:?}");
}

#[test]
fn contend_runs_every_repetition_both_ways() {
    require_root_and!("mkfs.ext4");
    require!(std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2, "needs 2 CPUs");
    let _g = lock();
    let v = common::run_json(&[
        "reclaim",
        "--reps",
        "1",
        "--no-save",
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
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = lock();
    retry_disturbed("create-negative", 3, || {
        let cg = RunCgroup::new("create-negative");
        let (v, bg) = run_in(&cg, &["create", "--count", "20k", "--fs", "ext4", "--kind", "negative", "--hold", "0"]);
        assert_eq!(v["create"]["entries"], 20_000);
        cg.assert_made_and_freed("create-negative", 20_000);
        new_negatives(&v, 19_000, &bg)
    });
}

/// `create`'s nr_negative grew by at least `at_least` over its creation
/// (machine-wide: less the machine's own swing).
fn new_negatives(v: &Value, at_least: i64, bg: &Background) -> Result<(), String> {
    let neg = v["after_create"]["dentry_state"]["nr_negative"].as_i64().unwrap()
        - v["before"]["dentry_state"]["nr_negative"].as_i64().unwrap();
    let swing = bg.swing(v["create"]["seconds"].as_f64().unwrap() + WINDOW_MARGIN, true);
    if neg < at_least - swing {
        return Err(format!("{neg} new negative dentries < {at_least} (machine's swing {swing}); {}", bg.describe()));
    }
    Ok(())
}

/// The runs bench/negative-rate.sh compares: both negative kinds, all in one
/// directory and one directory per thread, make exactly what was asked,
/// dentry-state sees the negatives, and the generator's CPU time is its
/// threads' own (above 0, at most threads x wall time).
#[test]
fn create_negative_kinds_in_one_directory_and_one_per_thread() {
    require_root_and!("mkfs.ext4");
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = lock();
    for kind in ["negative", "unlinked"] {
        for (layout, dirs) in [("flat", 1), ("dirs=2", 2)] {
            retry_disturbed(&format!("{kind} {layout}"), 3, || {
                let cg = RunCgroup::new("create-kinds");
                let (v, bg) = run_in(
                    &cg,
                    &["create", "--count", "20k", "--fs", "ext4", "--kind", kind, "--layout", layout]
                        .into_iter()
                        .chain(["--threads", "2", "--hold", "0"])
                        .collect::<Vec<_>>(),
                );
                let c = &v["create"];
                assert_eq!(c["entries"].as_u64(), Some(20_000), "{kind} {layout}: {c}");
                assert_eq!((c["threads"].as_u64(), c["dirs"].as_u64()), (Some(2), Some(dirs)), "{kind} {layout}: {c}");
                let (cpu, wall) = (c["cpu_seconds"].as_f64().unwrap(), c["seconds"].as_f64().unwrap());
                assert!(cpu > 0.0 && cpu <= 2.0 * wall + 0.01, "{kind} {layout}: {cpu} s of CPU in {wall} s");
                cg.assert_made_and_freed(&format!("{kind} {layout}"), 20_000);
                new_negatives(&v, 19_000, &bg).map_err(|e| format!("{kind} {layout}: {e}"))
            });
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
    let cg = RunCgroup::new(&format!("kill9-{method}"));
    let mut child = cg
        .command()
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
    // Wait until its filesystem is mounted and creation is under way: the
    // run's own cgroup holds 10k dentries' worth of kernel memory.
    let mut ours = BTreeSet::new();
    wait_until(&format!("{method}: no loop device was ever mounted"), Duration::from_secs(120), || {
        ours = loops_mounted_by(&tree(pid));
        !ours.is_empty()
    });
    wait_until(&format!("{method}: creation never started"), Duration::from_secs(120), || {
        cg.kernel_bytes() >= 10_000 * dentry_object_bytes()
    });
    let devices: BTreeSet<_> = loop_devices().into_iter().filter(|(n, _, _)| ours.contains(n)).collect();
    assert!(!devices.is_empty(), "{method}: {ours:?} not in losetup -l");
    let procs = tree(pid);
    if method == "memcg" {
        assert!(!cgroups_of(pid).is_empty(), "memcg: no cgroup while running");
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    let _ = child.wait();
    wait_until(&format!("{method}: a loop device stayed bound: {devices:?}"), Duration::from_secs(60), || {
        loop_devices().is_disjoint(&devices)
    });
    wait_until(&format!("{method}: a cgroup stayed"), Duration::from_secs(60), || cgroups_of(pid).is_empty());
    wait_until(&format!("{method}: a child process stayed"), Duration::from_secs(60), || {
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
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = lock();
    for method in ["umount", "ns-exit", "memcg"] {
        kill9_mid_create(method);
    }
}
