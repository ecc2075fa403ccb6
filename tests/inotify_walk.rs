//! `reclaim --method inotify`: the walk fsnotify makes over a directory's
//! children when a first inotify watch is added to it. A real small run on
//! ext4 (needs root, as in CI) checks that the watches were added (the
//! kernel lists them in the instance's fdinfo), that the walk freed nothing
//! (the negatives are all still there for the clean-up umount), and that it
//! was probed like every other method; then the one-line refusals.

mod common;

use assert_cmd::Command;
use serde_json::Value;

use common::{kernel_lock as lock, usage_error};

fn reclaim(args: &[&str]) -> Value {
    let out = Command::cargo_bin("dentrylab")
        .unwrap()
        .env("DENTRYLAB_STATE_DIR", std::env::temp_dir().join("dentrylab-test-state"))
        .arg("reclaim")
        .args(args)
        .args(["--reps", "1", "--no-save", "--json", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "dentrylab reclaim {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} missing in {v}"))
}

#[test]
fn inotify_walks_negatives_on_ext4_and_frees_none() {
    require_root_and!("mkfs.ext4");
    let _g = lock();
    let v = reclaim(&["--fs", "ext4", "--kind", "negative", "--sizes", "30k", "--method", "inotify"]);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    assert_eq!(r["method"], "inotify");
    assert_eq!(r["witness"], "nr_negative");
    assert_eq!(r["create"]["entries"], 30_000);
    assert!(f(r, "created_negative") >= 28_500.0, "{}", r["created_negative"]);
    // The watch was added, and the kernel lists it for the instance.
    let w = &r["watch"];
    assert_eq!(w["directories"], 1, "{w}");
    let wds = w["watch_descriptors"].as_array().unwrap();
    assert_eq!(wds.len(), 1, "{w}");
    assert!(wds[0].as_i64().unwrap() >= 1, "{w}");
    assert_eq!(w["marks_in_fdinfo"], 1, "{w}");
    // The walk frees nothing: the negatives were all still cached for the
    // clean-up umount, which then took them.
    assert!(f(r, "freed_fraction") < 0.05, "freed {}", r["freed_fraction"]);
    let left = f(r, "left_for_umount");
    assert!(left >= 28_500.0, "the clean-up umount found only {left} negatives");
    assert!(f(r, "reclaimed_negative").abs() < 1_500.0, "the walk moved nr_negative by {}", r["reclaimed_negative"]);
    // Probed like the other methods, and charged with the dentries walked.
    assert!(r["probe"]["samples"].as_u64().unwrap() > 0, "{}", r["probe"]);
    let expected_ns = f(r, "reclaim_seconds") * 1e9 / 30_000.0;
    assert!((f(r, "ns_per_dentry") - expected_ns).abs() <= expected_ns * 1e-6, "{} vs {expected_ns}", r["ns_per_dentry"]);
    let notes: Vec<&str> = v["notes"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(notes.iter().any(|n| n.starts_with("inotify is a walk, not a reclaim")), "{notes:?}");
    // The table says the walk frees none rather than reporting a shortfall.
    let summary = &v["sizes"][0];
    assert_eq!(summary["method"], "inotify");
    let verdict = v["verdict"]["summary"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>());
    assert!(!verdict.unwrap_or_default().iter().any(|l| l.contains("freed only")), "{}", v["verdict"]);
}

#[test]
fn inotify_watches_every_directory_of_the_layout() {
    require_root_and!("mkfs.ext4");
    let _g = lock();
    let v = reclaim(&["--fs", "ext4", "--kind", "unlinked", "--sizes", "20k", "--method", "inotify", "--layout", "dirs=4"]);
    let w = &v["runs"][0]["watch"];
    assert_eq!(w["directories"], 4, "{w}");
    assert_eq!(w["marks_in_fdinfo"], 4, "{w}");
    let mut wds: Vec<i64> = w["watch_descriptors"].as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect();
    wds.dedup();
    assert_eq!(wds.len(), 4, "one descriptor per directory: {w}");
}

#[test]
fn inotify_refuses_what_holds_no_negatives() {
    usage_error("reclaim", &["--method", "inotify"], &["--method inotify", "--kind hardlink makes none", "add --kind negative"]);
    usage_error("reclaim", &["--method", "inotify", "--fs", "ext4", "--kind", "file"], &["add --kind negative"]);
    usage_error(
        "reclaim",
        &["--method", "inotify", "--kind", "negative", "--fs", "tmpfs"],
        &["tmpfs deletes a negative dentry as soon as it is unused"],
    );
    usage_error("reclaim", &["--method", "inotify", "--fs", "overlay", "--lower-fs", "ext4", "--kind", "negative"], &["--fs overlay"]);
}
