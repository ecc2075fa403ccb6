//! `reclaim --method inotify`: the walk fsnotify makes over a directory's
//! children when a first inotify watch is added to it. Real small runs on
//! ext4 and xfs (need root, as in CI) checks that the watches were added (the
//! kernel lists them in the instance's fdinfo), that the walk freed nothing
//! (the negatives are all still there for the clean-up umount), and that it
//! was probed like every other method; then the one-line refusals.
//!
//! "Freed nothing" is read from nr_negative, machine-wide: each count is
//! checked within 10% plus the most the machine moved nr_negative on its
//! own over the window (sampled a second before and after the run), and
//! since other jobs may still disturb both windows of one run, a run is
//! repeated up to five times, each disturbed one's reason printed.

mod common;

use assert_cmd::Command;
use serde_json::Value;

use common::busy::{Background, around};
use common::{kernel_lock as lock, usage_error};

fn reclaim(args: &[&str]) -> (Value, Background) {
    around(|| reclaim_once(args))
}

fn reclaim_once(args: &[&str]) -> Value {
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

/// What the machine-wide nr_negative counter says of one run, in its two
/// windows: over the walk it moved by almost nothing, or the clean-up
/// umount still found the negatives (each within dentrylab's 10%
/// tolerance). A walk that freed them fails both: the first counter drops
/// by the count and the second finds none. Other jobs on a shared machine
/// move the same counter, by hundreds of thousands at times, so one window
/// may be disturbed, and sometimes both.
fn frees_none_by_the_counter(r: &Value, made: f64, bg: &Background) -> Result<(), String> {
    let (left, moved) = (f(r, "left_for_umount"), f(r, "reclaimed_negative"));
    let swing = bg.swing(f(r, "reclaim_seconds") + 2.0, true) as f64;
    if (left - made).abs() <= made * 0.1 + swing || moved.abs() <= made * 0.1 + swing {
        Ok(())
    } else {
        let e = format!("the walk moved nr_negative by {moved}, the clean-up umount found {left} (swing {swing})");
        eprintln!("RETRY inotify walk: disturbed by other jobs' dentries: {e}; {}", bg.describe());
        Err(e)
    }
}

#[test]
fn inotify_walks_negatives_on_ext4_and_frees_none() {
    require_root_and!("mkfs.ext4");
    let _g = lock();
    // Up to five runs: the counter checks must hold in one of them (a walk
    // that freed dentries fails every one; other jobs rarely disturb five
    // runs in a row). Everything else is checked on every run.
    let mut disturbed = Vec::new();
    for _ in 0..5 {
        let (v, bg) = reclaim(&["--fs", "ext4", "--kind", "negative", "--sizes", "30k", "--method", "inotify"]);
        let runs = v["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 1);
        let r = &runs[0];
        assert_eq!(r["method"], "inotify");
        assert_eq!(r["witness"], "nr_negative");
        assert_eq!(r["create"]["entries"], 30_000);
        // The watch was added, and the kernel lists it for the instance.
        let w = &r["watch"];
        assert_eq!(w["directories"], 1, "{w}");
        let wds = w["watch_descriptors"].as_array().unwrap();
        assert_eq!(wds.len(), 1, "{w}");
        assert!(wds[0].as_i64().unwrap() >= 1, "{w}");
        assert_eq!(w["marks_in_fdinfo"], 1, "{w}");
        // Probed like the other methods, and charged with the dentries walked.
        assert!(r["probe"]["samples"].as_u64().unwrap() > 0, "{}", r["probe"]);
        let expected_ns = f(r, "reclaim_seconds") * 1e9 / 30_000.0;
        assert!(
            (f(r, "ns_per_dentry") - expected_ns).abs() <= expected_ns * 1e-6,
            "{} vs {expected_ns}",
            r["ns_per_dentry"]
        );
        let notes: Vec<&str> = v["notes"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(notes.iter().any(|n| n.starts_with("inotify is a walk, not a reclaim")), "{notes:?}");
        // The verdict does not report the walk's 0% as a shortfall.
        assert_eq!(v["sizes"][0]["method"], "inotify");
        let verdict =
            v["verdict"]["summary"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>());
        assert!(!verdict.unwrap_or_default().iter().any(|l| l.contains("freed only")), "{}", v["verdict"]);
        // The walk frees nothing: the negatives were all still cached for
        // the clean-up umount, which then took them.
        match frees_none_by_the_counter(r, 30_000.0, &bg) {
            Ok(()) => return,
            Err(e) => disturbed.push(e),
        }
    }
    panic!("in five runs the counter never showed the negatives kept: {disturbed:?}");
}

#[test]
fn inotify_watches_every_directory_of_the_layout_on_xfs() {
    require_root_and!("mkfs.xfs");
    let _g = lock();
    let mut disturbed = Vec::new();
    for _ in 0..5 {
        let (v, bg) = reclaim(&[
            "--fs", "xfs", "--kind", "unlinked", "--sizes", "20k", "--method", "inotify", "--layout", "dirs=4",
        ]);
        let w = &v["runs"][0]["watch"];
        assert_eq!(w["directories"], 4, "{w}");
        assert_eq!(w["marks_in_fdinfo"], 4, "{w}");
        let mut wds: Vec<i64> =
            w["watch_descriptors"].as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect();
        wds.dedup();
        assert_eq!(wds.len(), 4, "one descriptor per directory: {w}");
        // Unlinked entries leave negatives too, and the walk leaves them all
        // (by the machine-wide counter: see inotify_walks_negatives_on_ext4_and_frees_none).
        match frees_none_by_the_counter(&v["runs"][0], 20_000.0, &bg) {
            Ok(()) => return,
            Err(e) => disturbed.push(e),
        }
    }
    panic!("in five runs the counter never showed the negatives kept: {disturbed:?}");
}

#[test]
fn inotify_refuses_what_holds_no_negatives() {
    usage_error(
        "reclaim",
        &["--method", "inotify"],
        &["--method inotify", "--kind hardlink makes none", "add --kind negative"],
    );
    usage_error("reclaim", &["--method", "inotify", "--fs", "ext4", "--kind", "file"], &["add --kind negative"]);
    usage_error(
        "reclaim",
        &["--method", "inotify", "--kind", "negative", "--fs", "tmpfs"],
        &["tmpfs deletes a negative dentry as soon as it is unused"],
    );
    usage_error(
        "reclaim",
        &["--method", "inotify", "--fs", "overlay", "--lower-fs", "ext4", "--kind", "negative"],
        &["--fs overlay"],
    );
}
