//! `reclaim --fs overlay` and `create --fs overlay` on
//! the real kernel: the overlay's teardown frees its own dentries and
//! leaves the lower layer's negative ones (one per name created through
//! it), counted by unmounting each layer in turn; the per-layer accounting
//! with an ext4, xfs and tmpfs upper and an xfs lower; every bad input;
//! and SIGKILL at several moments leaving no overlay, mount or loop device.
//!
//! Each run is counted in a memory cgroup of its own (`RunCgroup`): its
//! peak kernel memory holds the dentries it made through the stack, and
//! it gives them back. The per-layer counts are deltas of the machine-wide
//! dentry-state over each layer's umount (that is what the product
//! measures): each is compared to what the run made with a tolerance of
//! 25% of it, plus three times the uncertainty the run states for it (from
//! the quiet windows around each umount), plus twice the most the machine
//! moved on its own over a window as long as the umount's (sampled a
//! second before and after the run: the run's drift correction can be off
//! by a burst it extrapolated). A run that a burst the samples missed
//! still pushed out is repeated, at most four times, with the reason
//! printed (`retry_disturbed`). On a busy machine the tolerance can exceed
//! the count: the layer attribution is then only as sharp as the machine
//! allows, and the run's own cgroup still checks that the dentries were
//! made and freed.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::busy::{Background, RunCgroup, around, retry_disturbed};
use common::{assert_nothing_left_after_kill, bin, family_of, kernel_lock, usage_error};
use serde_json::Value;

const N: f64 = 20_000.0;
/// Attempts at a run whose machine-wide counts hold (see the top).
const ATTEMPTS: usize = 4;

/// The layer `name` of a stack teardown.
fn layer<'a>(layers: &'a Value, name: &str) -> &'a Value {
    layers["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layer"] == name)
        .unwrap_or_else(|| panic!("no {name} layer: {layers}"))
}

/// Checks that `field` of layer `name` is about `want`: within a quarter
/// of N (which tells "kept every one" from "kept none"), plus three times
/// the uncertainty the run states for it, plus twice the machine's own
/// swing of that counter over the umount's window.
type Expect<'a> = &'a [(&'a str, &'a str, f64)];

fn check(layers: &Value, expect: Expect<'_>, bg: &Background) -> Result<(), String> {
    for &(name, field, want) in expect {
        let l = layer(layers, name);
        let got = l[field].as_f64().unwrap();
        // The umount between two 100 ms quiet windows and a 60 ms settle.
        let window = l["umount_seconds"].as_f64().unwrap() + 1.0;
        let swing = bg.swing(window, field == "negative") as f64;
        let slack = 0.25 * N + 3.0 * l["uncertainty"].as_f64().unwrap_or(f64::INFINITY) + 2.0 * swing;
        if (got - want).abs() > slack {
            return Err(format!("{name} {field}: {got}, expected about {want} (± {slack}): {layers}"));
        }
    }
    Ok(())
}

/// Runs `args` (with `--json -`) in a cgroup of its own until its stack's
/// counts match `expect`, at most ATTEMPTS times, and returns its stack
/// teardown; every attempt must make and free N dentries by its own
/// cgroup.
fn stack_of(args: &[&str], pick: impl Fn(&Value) -> Value, expect: Expect<'_>) -> Value {
    let mut last = Value::Null;
    retry_disturbed(&format!("{args:?}"), ATTEMPTS, || {
        let cg = RunCgroup::new("overlay");
        let (v, bg) = around(|| cg.run_json(args));
        cg.assert_made_and_freed("overlay", N as u64);
        last = pick(&v);
        check(&last, expect, &bg).map_err(|e| format!("{e}; {}", bg.describe()))
    });
    last
}

fn reclaim_stack(extra: &[&str], expect: Expect<'_>) -> Value {
    let mut args =
        vec!["reclaim", "--fs", "overlay", "--sizes", "20k", "--reps", "1", "--unobserved-reps", "0", "--no-save"];
    args.extend_from_slice(extra);
    stack_of(&args, |v| v["runs"][0]["layers"].clone(), expect)
}

fn create_stack(extra: &[&str], expect: Expect<'_>) -> Value {
    let mut args = vec!["create", "--fs", "overlay", "--count", "20k", "--hold", "0"];
    args.extend_from_slice(extra);
    stack_of(&args, |v| v["layers"].clone(), expect)
}

/// Files created through an overlay (upper tmpfs): the overlay's umount
/// frees the overlay's dentries, the upper keeps the files (tmpfs pins
/// them) and the lower keeps one negative dentry per name, which only its
/// own umount frees.
#[test]
fn overlay_umount_frees_its_dentries_and_leaves_the_lowers_negatives() {
    require_root_and!("mkfs.ext4");
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    let s = reclaim_stack(
        &["--kind", "file", "--upper-fs", "tmpfs"],
        &[("overlay", "dentries", N), ("upper", "dentries", N), ("upper", "negative", 0.0), ("lower", "negative", N)],
    );
    assert_eq!(s["stack"]["lower"], "ext4");
    assert_eq!(s["stack"]["upper"], "tmpfs");
    let names: Vec<&str> = s["layers"].as_array().unwrap().iter().map(|l| l["layer"].as_str().unwrap()).collect();
    assert_eq!(names, ["overlay", "upper", "lower"]);
    for l in s["layers"].as_array().unwrap() {
        assert!(l["max_gap_seconds"].as_f64().is_some_and(|g| g > 0.0), "every layer's umount is probed: {l}");
    }
}

/// The same through the death of the overlay's only namespace (ns-exit),
/// with lookups of missing names in an image directory and an ext4 upper:
/// the overlay and the lower each get one negative dentry per name; the
/// upper gets none (the directory was never copied up, so the upper has no
/// directory to look in); the overlay's go with the namespace, the lower's
/// stay.
#[test]
fn ns_exit_leaves_negatives_in_upper_and_lower() {
    require_root_and!("mkfs.ext4");
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    let s = reclaim_stack(
        &["--kind", "negative", "--method", "ns-exit"],
        &[("overlay", "negative", N), ("upper", "negative", 0.0), ("lower", "negative", N)],
    );
    assert_eq!(s["stack"]["upper"], "ext4", "the upper defaults to the lower's type");
}

/// Per-layer accounting of `create --fs overlay` with an ext4, xfs and
/// tmpfs upper, and an xfs lower: the files stay in the upper, the
/// negatives in the lower.
#[test]
fn per_layer_accounting_for_each_upper_and_lower() {
    require_root_and!("mkfs.ext4", "mkfs.xfs");
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    for (lower, upper) in [("ext4", "ext4"), ("ext4", "xfs"), ("ext4", "tmpfs"), ("xfs", "xfs")] {
        let s = create_stack(
            &["--kind", "file", "--lower-fs", lower, "--upper-fs", upper],
            &[("overlay", "dentries", N), ("upper", "dentries", N), ("lower", "negative", N)],
        );
        assert_eq!((s["stack"]["lower"].as_str(), s["stack"]["upper"].as_str()), (Some(lower), Some(upper)));
        assert_eq!(layer(&s, "upper")["fs"], upper);
        assert_eq!(layer(&s, "lower")["fs"], lower);
    }
}

#[test]
fn bad_overlay_input_is_one_line_and_exit_2() {
    usage_error("reclaim", &["--lower-fs", "xfs"], &["--lower-fs", "--fs overlay"]);
    usage_error("create", &["--count", "1k", "--fs", "ext4", "--upper-fs", "tmpfs"], &["--upper-fs", "--fs overlay"]);
    usage_error(
        "reclaim",
        &["--fs", "overlay", "--method", "memcg"],
        &["--method memcg", "--fs overlay", "umount or ns-exit"],
    );
    usage_error(
        "reclaim",
        &["--fs", "overlay", "--method", "umount,drop-caches", "--allow-global"],
        &["--method drop-caches", "umount or ns-exit"],
    );
    usage_error("reclaim", &["--fs", "overlay", "--lower-fs", "tmpfs"], &["--lower-fs", "ext4 or xfs"]);
    usage_error("create", &["--count", "1k", "--fs", "overlayfs"], &["overlayfs", "overlay"]);
}

/// SIGKILL while the stack is being mounted, filled, reclaimed and torn
/// down layer by layer: no overlay, no mount and no loop device stays.
#[test]
fn sigkill_at_several_moments_leaves_no_overlay_or_loop_device() {
    require_root_and!("mkfs.ext4");
    let _g = kernel_lock();
    for (method, ms) in [("umount", 20), ("umount", 400), ("ns-exit", 700), ("umount", 1500), ("ns-exit", 2500)] {
        let mut child = bin()
            .args(["reclaim", "--fs", "overlay", "--upper-fs", "tmpfs", "--kind", "file", "--sizes", "100k,200k"])
            .args(["--reps", "2", "--method", method, "--no-save"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(ms));
        // Between two repetitions the run briefly has no filesystem mounted
        // (the last layer went, the next stack is not up yet): from 400 ms
        // on, kill it at the first moment it holds one (within 60 s: a
        // loaded machine makes its filesystems slowly).
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let f = loop {
            let f = family_of(child.id());
            if ms < 400 || !f.loops.is_empty() || std::time::Instant::now() > deadline {
                break f;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        child.kill().unwrap();
        child.wait().unwrap();
        if ms >= 400 {
            assert!(!f.loops.is_empty(), "after {ms} ms the run had its lower filesystem mounted");
        }
        assert_nothing_left_after_kill(ms, &f.namespaces, &f.loops);
    }
}

/// A real `reclaim --fs overlay` result (tests/fixtures/results/
/// reclaim-overlay.json, upper tmpfs) renders its layers: the section, one
/// row per layer, the legend and the longest-stretch line; a result
/// without an overlay renders no such section (the field is optional).
#[test]
fn report_renders_the_layers_of_an_overlay_result() {
    let render = |fixture: &str| {
        let dir = tempfile::tempdir().unwrap();
        let out = bin().args(["report", fixture, "--output"]).arg(dir.path()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::read_to_string(dir.path().join("report.md")).unwrap()
    };
    let md = render("tests/fixtures/results/reclaim-overlay.json");
    for want in [
        "### Layers of the overlay",
        "| overlay | overlay |",
        "| upper | tmpfs |",
        "| lower | ext4 |",
        "stayed in lower, freed by its umount",
        "Longest stretch on the CPU at ",
        "overlay (lower ext4, upper tmpfs)",
    ] {
        assert!(md.contains(want), "report.md lacks {want:?}");
    }
    let plain = render("tests/fixtures/results/reclaim-small.json");
    assert!(!plain.contains("Layers of the overlay"), "a plain result has no layers section");
}
