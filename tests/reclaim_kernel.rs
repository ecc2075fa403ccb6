//! Real small runs on the kernel: mount, create, reclaim, and check that
//! the kernel's own counters moved as they must. Needs root (CI is root).
//!
//! What each run made and freed is counted in its own memory cgroup
//! (`RunCgroup`: the dentries are charged to it), exactly, whatever else
//! the machine does. The run's own `created`/`reclaimed` figures are
//! dentry-state deltas, machine-wide by design: they are checked within 2%
//! (at least 500) plus the most the machine moved on its own over a window
//! as long as the run's, sampled a second before and after it
//! (`Background`). A burst of other jobs' dentries inside the run that
//! those samples missed can still push one out: such a run is repeated,
//! up to three times, with the reason printed (`retry_disturbed`).

mod common;

use common::busy::{Background, RunCgroup, around, retry_disturbed, within};
use common::kernel_lock;
use serde_json::Value;

/// Seconds the product's counts around creation and around the reclaim
/// span beyond the creation and reclaim themselves (mount, sync, probes
/// starting, the 60 ms settle): a generous bound.
const WINDOW_MARGIN: f64 = 2.0;

/// The machine-wide counts of every run, against what the run made.
fn machine_counts(v: &Value, bg: &Background) -> Result<(), String> {
    for r in v["runs"].as_array().unwrap() {
        let target = r["target"].as_i64().unwrap();
        let create_w = r["create"]["seconds"].as_f64().unwrap_or(0.0) + WINDOW_MARGIN;
        let reclaim_w = r["reclaim_seconds"].as_f64().unwrap() + WINDOW_MARGIN;
        within("created (dentry-state)", r["created"].as_i64().unwrap(), target, 0.02, 500, bg.swing(create_w, false))?;
        let rw = bg.swing(reclaim_w, false);
        within("reclaimed (dentry-state)", r["reclaimed"].as_i64().unwrap(), target, 0.02, 500, rw)?;
        if let Some(slab) = r["reclaimed_slab"].as_i64() {
            within("reclaimed (slabinfo)", slab, target, 0.02, 500, rw)?;
        }
    }
    Ok(())
}

/// What holds whatever the machine does: the generator's own count, the
/// probe, the arithmetic of the result.
fn check_runs(v: &Value, want_reps: usize) {
    assert!(v["schema"].as_u64().is_some_and(|s| s >= 1), "a schema version");
    assert_eq!(v["benchmark"], "reclaim");
    let sizes: Vec<i64> = v["options"]["sizes"].as_array().unwrap().iter().map(|s| s.as_i64().unwrap()).collect();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), sizes.len() * want_reps);
    for r in runs {
        let target = r["target"].as_i64().unwrap();
        assert_eq!(r["create"]["entries"].as_i64().unwrap(), target, "the generator made every entry");
        let nr = |c: &str| r[c]["dentry_state"]["nr_dentry"].as_i64().unwrap();
        assert_eq!(r["created"].as_i64().unwrap(), nr("after_create") - nr("before"), "created is the delta it read");
        assert!(r["reclaim_seconds"].as_f64().unwrap() > 0.0);
        let probe = &r["probe"];
        assert!(probe["samples"].as_u64().unwrap() > 0, "the probe ran");
        assert!(probe["max_gap_seconds"].as_f64().unwrap() >= probe["p99_gap_seconds"].as_f64().unwrap());
    }
    assert_eq!(v["sizes"].as_array().unwrap().len(), sizes.len());
    assert!(v["environment"]["kernel"].as_str().is_some_and(|k| !k.is_empty()));
    assert!(v["environment"]["preemption"].as_str().is_some());
}

/// Runs `dentrylab ARGS…` in a cgroup of its own until its machine-wide
/// counts hold by `machine` (at most three times); checks on every attempt
/// that the run made and freed `largest` dentries by its own cgroup (its
/// largest size: one size's dentries are freed before the next is made),
/// and the rest with `check`. Returns the last result and the cgroup's
/// peak kernel memory, bytes.
fn run_checked(
    name: &str,
    args: &[&str],
    largest: u64,
    check: impl Fn(&Value),
    machine: impl Fn(&Value, &Background) -> Result<(), String>,
) -> (Value, u64) {
    let mut last = (Value::Null, 0);
    retry_disturbed(name, 3, || {
        let cg = RunCgroup::new(name);
        let (v, bg) = around(|| cg.run_json(args));
        check(&v);
        cg.assert_made_and_freed(name, largest);
        let r = machine(&v, &bg).map_err(|e| format!("{e}; {}", bg.describe()));
        last = (v, cg.peak_bytes());
        r
    });
    last
}

fn reclaim_checked(name: &str, args: &[&str], largest: u64, check: impl Fn(&Value)) -> (Value, u64) {
    run_checked(name, args, largest, check, machine_counts)
}

#[test]
fn hardlinks_flat_umount_counts_move() {
    require_root!();
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    let (v, _) = reclaim_checked("flat", &["reclaim", "--sizes", "20k,40k", "--reps", "2", "--no-save"], 40_000, |v| {
        check_runs(v, 2)
    });
    assert!(v["fits"]["time_power"]["exponent"].as_f64().is_some(), "two sizes give a fit");
    let verdict = &v["verdict"];
    assert_eq!(
        verdict["soft_lockup_threshold_seconds"].as_f64().unwrap(),
        2.0 * v["environment"]["watchdog_thresh_seconds"].as_f64().unwrap()
    );
    assert!(["longest_stretch", "total_time"].contains(&verdict["governs"].as_str().unwrap()));
    // Nothing stays behind: the dentries went away with the mounts (the
    // run's own cgroup gave their memory back, checked in reclaim_checked).
}

/// `--sizes auto:SIZE` runs through the real sweep (a cap under
/// the first 500k makes it one small size), says what stopped it, and runs
/// the probes under the policy it names. `--victims none` keeps the run to
/// what this test counts (the victims' own run is tests/incident.rs'), and
/// the run says it ran without them.
#[test]
fn auto_sizes_stop_at_the_cap_and_say_so() {
    require_root!();
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    let args =
        ["reclaim", "--sizes", "auto:20k", "--reps", "1", "--unobserved-reps", "1", "--victims", "none", "--no-save"];
    let (v, _) = reclaim_checked("auto", &args, 20_000, |v| check_runs(v, 1));
    assert_eq!(v["auto"]["sizes"], serde_json::json!([20_000]));
    assert_eq!(v["auto"]["stopped_by"], "cap");
    assert_eq!(v["options"]["sizes"], serde_json::json!([20_000]));
    let notes: Vec<&str> = v["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    assert!(notes.iter().any(|n| n.starts_with("--sizes auto ran 20k; stopped by the cap")), "{notes:?}");
    assert!(v["victim_runs"].as_array().is_none_or(|r| r.is_empty()), "no victims: {}", v["victim_runs"]);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("--sizes auto ran without the standard victims") && n.contains("--victims none")),
        "{notes:?}"
    );
    // As root SCHED_FIFO is permitted: the default is fifo, and it says why.
    assert_eq!(v["options"]["probe_policy"], "fifo");
    assert!(notes.iter().any(|n| n.starts_with("probes: SCHED_FIFO priority 99 (the default")), "{notes:?}");
}

#[test]
fn files_in_dirs_with_threads() {
    require_root!();
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    let args = [
        "reclaim",
        "--sizes",
        "30k",
        "--reps",
        "1",
        "--kind",
        "file",
        "--layout",
        "dirs=8",
        "--threads",
        "2",
        "--no-save",
    ];
    let (v, peak) = reclaim_checked("files", &args, 30_000, |v| check_runs(v, 1));
    let run = &v["runs"][0];
    assert_eq!(run["create"]["dirs"], 8);
    assert_eq!(run["create"]["threads"], 2);
    assert!(v["verdict"].is_object(), "one size still gives a verdict");
    // Files cost an inode each: more memory per dentry than hard links.
    // By the run's own cgroup (its kernel memory at peak over the entries);
    // the run's own bytes_per_dentry divides machine-wide counts.
    let per_entry = peak as f64 / 30_000.0;
    assert!(per_entry > 300.0, "the run's cgroup peaked at {peak} bytes for 30k files: {per_entry} per entry");
    assert!(run["bytes_per_dentry"].as_f64().is_some_and(f64::is_finite), "{}", run["bytes_per_dentry"]);
}

#[test]
fn flat_layout_with_two_threads_splits_one_directory() {
    require_root!();
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    let args = ["reclaim", "--sizes", "20001", "--reps", "1", "--threads", "2", "--no-save"];
    let (v, _) = reclaim_checked("split", &args, 20_001, |v| check_runs(v, 1));
    assert_eq!(v["runs"][0]["create"]["dirs"], 1);
    assert_eq!(v["runs"][0]["create"]["threads"], 2);
}

#[test]
fn create_hold_zero_creates_then_reclaims() {
    require_root!();
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    let check = |v: &Value| {
        assert_eq!(v["benchmark"], "create");
        assert_eq!(v["create"]["entries"], 25_000, "{}", v["create"]);
        assert_eq!(v["reclaim"]["reason"], "hold elapsed");
    };
    // created and reclaimed are dentry-state deltas (machine-wide).
    let machine = |v: &Value, bg: &Background| {
        let w = v["create"]["seconds"].as_f64().unwrap_or(0.0) + WINDOW_MARGIN;
        within("created (dentry-state)", v["created"].as_i64().unwrap(), 25_000, 0.02, 500, bg.swing(w, false))?;
        let rc = &v["reclaim"];
        let w = rc["umount_seconds"].as_f64().unwrap_or(0.0) + WINDOW_MARGIN;
        within("reclaimed (dentry-state)", rc["reclaimed"].as_i64().unwrap(), 25_000, 0.02, 500, bg.swing(w, false))
    };
    run_checked("create", &["create", "--count", "25k", "--hold", "0"], 25_000, check, machine);
}

#[test]
fn saves_calibration_and_markdown() {
    require_root!();
    let _g = kernel_lock();
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("report.md");
    let json = dir.path().join("r.json");
    let out = common::bin()
        .args(["reclaim", "--sizes", "10k,20k", "--reps", "1", "--state-dir"])
        .arg(dir.path())
        .arg("--markdown")
        .arg(&md)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Files asked for land on the real filesystem, not in the sandbox.
    let cal: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("calibration.json")).unwrap()).unwrap();
    assert_eq!(cal["method"], "umount");
    assert_eq!(cal["validated_by_watchdog"], false);
    assert!(cal["time_power"]["exponent"].as_f64().is_some());
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("| Target | Reclaimed |"), "{text}");
    assert!(text.contains("### Verdict"));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["runs"].as_array().unwrap().len(), 2);
    // The human table went to stdout.
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("Max gap") && table.contains("Verdict"), "{table}");
}

/// Where the reclaim ran, in the JSON and the report: the probed and the
/// pinned unobserved repetitions on `--cpu` alone, the unpinned ones
/// (`--unpinned-reps`) free on every allowed CPU, for a reclaim by the
/// calling thread (umount) and by a child's exit (ns-exit, whose CPU at
/// the end is not known to the parent).
#[test]
fn unpinned_repetitions_run_and_say_where() {
    require_root!();
    require!(RunCgroup::available(), "needs a memory cgroup controller to count the run's own dentries");
    let _g = kernel_lock();
    let md = tempfile::NamedTempFile::new().unwrap();
    let args = [
        "reclaim",
        "--sizes",
        "20k",
        "--reps",
        "1",
        "--unobserved-reps",
        "1",
        "--unpinned-reps",
        "2",
        "--cpu",
        "0",
        "--method",
        "umount,ns-exit",
        "--no-save",
        "--markdown",
        md.path().to_str().unwrap(),
    ];
    // freed by an unpinned repetition is its witness's delta over the
    // reclaim (machine-wide): 90% of the 20k, less the machine's own swing.
    let machine = |v: &Value, bg: &Background| {
        machine_counts(v, bg)?;
        for u in v["unpinned"].as_array().unwrap() {
            let w = u["reclaim_seconds"].as_f64().unwrap() + WINDOW_MARGIN;
            let (freed, swing) = (u["freed"].as_i64().unwrap(), bg.swing(w, false));
            if freed < 18_000 - swing {
                return Err(format!("an unpinned {} freed {freed} of 20k (machine's swing {swing})", u["method"]));
            }
        }
        Ok(())
    };
    let (v, _) = run_checked("unpinned", &args, 20_000, |_| {}, machine);
    let allowed: Vec<u64> = {
        let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
        (0..nix::sched::CpuSet::count()).filter(|&c| set.is_set(c).unwrap()).map(|c| c as u64).collect()
    };
    let cpus = |p: &Value| p["allowed"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect::<Vec<_>>();
    for r in v["runs"].as_array().unwrap().iter().chain(v["unobserved"].as_array().unwrap()) {
        let p = &r["placement"];
        assert_eq!(p["pinned"], true, "{p}");
        assert_eq!(p["cpu"], 0, "{p}");
        assert_eq!(cpus(p), vec![0], "{p}");
    }
    let unpinned = v["unpinned"].as_array().unwrap();
    assert_eq!(unpinned.len(), 2 * 2, "2 unpinned repetitions of each method");
    for u in unpinned {
        let p = &u["placement"];
        assert_eq!(p["pinned"], false, "{p}");
        assert_eq!(cpus(p), allowed, "{p}");
        assert!(u["reclaim_seconds"].as_f64().unwrap() > 0.0, "{u}");
        assert!((0.0..=1.0).contains(&u["freed_fraction"].as_f64().unwrap()), "{u}");
        match u["method"].as_str().unwrap() {
            "umount" => {
                let (end, start) = (p["cpu"].as_u64().unwrap(), p["start_cpu"].as_u64().unwrap());
                assert!(allowed.contains(&end) && allowed.contains(&start), "{p}");
                assert!(p["migrations"].as_u64().is_some(), "{p}");
            }
            "ns-exit" => assert!(p["cpu"].is_null(), "the child's CPU is not known: {p}"),
            m => panic!("method {m}"),
        }
    }
    for s in v["sizes"].as_array().unwrap() {
        let u = &s["unpinned"];
        assert_eq!(u["reps"], 2, "{s}");
        assert!(u["ns_per_dentry"]["median"].as_f64().unwrap() > 0.0, "{s}");
        assert!(u["pinned_over_unpinned"]["median"].as_f64().unwrap() > 0.0, "{s}");
        assert!(u["probed_over_unpinned"]["median"].as_f64().unwrap() > 0.0, "{s}");
    }
    assert!(v["pinning_cost"]["median"].as_f64().unwrap() > 0.0);
    let md = std::fs::read_to_string(md.path()).unwrap();
    assert!(md.contains("ns/dentry (pinned, CPU 0)") && md.contains("ns/dentry (unpinned)"), "{md}");
    assert!(md.contains("ran pinned to CPU 0") && md.contains("2 unpinned unobserved repetition(s)"), "{md}");
}
