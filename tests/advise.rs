//! `dentrylab advise` on fixtures: a proc tree (the 6.18 one, with
//! `fs.dentry-negative` and `drop_caches` added), a calibration
//! (`tests/fixtures/calibration/6.18-victims`) and two mitigate results
//! written for the tests (`tests/fixtures/mitigate/`): one knob that cuts
//! the count beyond its repetitions' spread, one that does not; its bad
//! input and failures; and `status --advise`.

mod common;
mod metrics;

use std::path::{Path, PathBuf};

use common::bin;
use metrics::{fixture, repo};

/// The 6.18 proc fixture, symlinks followed, with the knobs advise reads added.
fn proc_tree() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new("cp")
        .args(["-rL"])
        .arg(fixture("6.18"))
        .arg(d.path().join("proc"))
        .status()
        .unwrap();
    assert!(ok.success());
    std::fs::write(d.path().join("proc/sys/fs/dentry-negative"), "0\n").unwrap();
    std::fs::write(d.path().join("proc/sys/vm/drop_caches"), "0\n").unwrap();
    d
}

fn mitigate(name: &str) -> PathBuf {
    repo().join("tests/fixtures/mitigate").join(name)
}

fn advise(proc: &Path, extra: &[&str]) -> serde_json::Value {
    let o = bin()
        .args(["advise", "--proc-root", proc.to_str().unwrap()])
        .args(["--state-dir", repo().join("tests/fixtures/calibration/6.18-victims").to_str().unwrap()])
        .args(extra)
        .args(["--json", "-"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn knob<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["knobs"].as_array().unwrap().iter().find(|k| k["knob"] == name).unwrap_or_else(|| panic!("no {name}: {v}"))
}

#[test]
fn a_value_per_knob_from_the_calibration_and_the_recorded_results() {
    let d = proc_tree();
    let (neg, pres) = (mitigate("dentry-negative.json"), mitigate("cache-pressure.json"));
    let v = advise(
        &d.path().join("proc"),
        &["--mitigate", neg.to_str().unwrap(), "--mitigate", pres.to_str().unwrap(), "--growth", "1000/s"],
    );
    assert_eq!(v["benchmark"], "advise");
    assert!(v["calibration"].as_str().unwrap().contains("6.18-victims"), "{}", v["calibration"]);
    assert_eq!(v["growth_per_second"], 1000.0);
    let target = &v["target"];
    assert!(target["dentries"].as_f64().unwrap() > 0.0, "the calibration's first incident: {v}");
    let sources = v["sources"].as_array().unwrap();
    assert!(sources.iter().any(|s| s.as_str().unwrap().contains("dentry-negative.json")), "{sources:?}");

    // fs.dentry-negative: 1050 → 315 dentries per 1,000 ops (medians), beyond the 2 reps' spread.
    let k = knob(&v, "fs.dentry-negative");
    assert_eq!(
        (k["present"].as_bool(), k["judged"].as_bool(), k["current"].as_str()),
        (Some(true), Some(true), Some("0"))
    );
    assert!(k["value"].as_str().unwrap().starts_with("1 (measured ×0.30 on temp-tables)"), "{k}");
    let e = &k["evidence"][0];
    assert!((e["dentries_ratio"].as_f64().unwrap() - 0.3).abs() < 1e-9, "{e}");
    assert!((e["dentries_ratio_low"].as_f64().unwrap() - 300.0 / 1100.0).abs() < 1e-9, "{e}");
    assert!((e["dentries_ratio_high"].as_f64().unwrap() - 0.33).abs() < 1e-9, "{e}");
    assert_eq!(e["beyond_spread"], true);
    assert!((e["throughput_ratio"].as_f64().unwrap() - 1.05).abs() < 1e-9, "{e}");
    // At a growth ×0.3 the first incident is 1/0.3 as far.
    let f = k["effect_on_first_incident"].as_str().unwrap();
    assert!(f.contains("away now") && f.contains("with it (today's growth ×0.30"), "{f}");
    assert!(k["failure_mode"].as_str().unwrap().contains("d_delete()"), "{k}");

    // vm.vfs_cache_pressure: 600 → 625, within the spread: keep the value it has.
    let k = knob(&v, "vm.vfs_cache_pressure");
    assert_eq!(k["judged"], true);
    assert!(k["value"].as_str().unwrap().starts_with("100 (keep"), "{k}");
    assert_eq!(k["evidence"][0]["beyond_spread"], false);
    assert!(k["effect_on_first_incident"].as_str().unwrap().contains("no change measured"), "{k}");

    // drop_caches: the kernel has it, no recorded result varies it.
    let k = knob(&v, "drop-caches-every");
    assert_eq!((k["present"].as_bool(), k["judged"].as_bool()), (Some(true), Some(false)));
    assert!(k["why_not"].as_str().unwrap().contains("no recorded mitigate result varies drop-caches-every"), "{k}");
    // The fixture kernel has no negative-dentry limit nor the denominator.
    for name in ["fs.dentry-limit", "fs.negative-dentry-limit", "vm.vfs_cache_pressure_denom"] {
        let k = knob(&v, name);
        assert_eq!((k["present"].as_bool(), k["judged"].as_bool()), (Some(false), Some(false)), "{name}");
        assert!(k["why_not"].as_str().unwrap().contains("does not exist"), "{k}");
    }
    let k = knob(&v, "memory-limit");
    assert!(k["why_not"].as_str().unwrap().contains("no recorded mitigate result sweeps memory-limit"), "{k}");
}

#[test]
fn the_shipped_results_by_default_and_a_sampled_growth() {
    let d = proc_tree();
    let v = advise(&d.path().join("proc"), &["--sample", "1s"]);
    assert_eq!(v["growth_source"]["sampled"], 1.0, "{}", v["growth_source"]);
    // A fixture tree does not move: zero growth, no time to the incident.
    assert_eq!(v["growth_per_second"], 0.0);
    let sources: Vec<&str> = v["sources"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(sources.iter().any(|s| s.contains("shipped docs/results/mitigate-mariadb-6.18.json")), "{sources:?}");
    // The shipped mariadb run: fs.dentry-negative=1 cut its dentries (one rep, no spread).
    let k = knob(&v, "fs.dentry-negative");
    assert!(k["value"].as_str().unwrap().starts_with("1 (measured ×"), "{k}");
    // The shipped limit sweeps: OOM kills, named as the failure mode.
    let k = knob(&v, "memory-limit");
    assert_eq!(k["judged"], true);
    assert!(k["value"].as_str().unwrap().contains("were OOM-killed"), "{k}");
    assert!(k["failure_mode"].as_str().unwrap().contains("OOM killer"), "{k}");
}

#[test]
fn bad_input_and_failures() {
    common::usage_error("advise", &["--growth", "lots"], &["--growth", "\"lots\"", "rate of dentries per second"]);
    common::usage_error("advise", &["--sample", "0s"], &["--sample", "1s to 10m"]);
    common::usage_error("advise", &["--growth", "1k", "--sample", "2s"], &["--growth", "--sample"]);
    let failure = |args: &[&str], needle: &str| {
        let o = bin().arg("advise").args(args).args(["--growth", "0"]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(needle) && !err.contains("panicked"), "{args:?}: {err}");
    };
    failure(&["--mitigate", "/nonexistent/m.json"], "--mitigate /nonexistent/m.json: cannot read");
    let seed = repo().join("docs/results/seed-6.18.json");
    failure(&["--mitigate", seed.to_str().unwrap()], "not a mitigate result (benchmark \"reclaim\")");
}

#[test]
fn status_advise_prints_one_line_per_knob() {
    let d = proc_tree();
    let o = bin()
        .args(["status", "--advise", "--state-dir", "/nonexistent", "--proc-root"])
        .arg(d.path().join("proc"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let at = out.find("advice (dentrylab advise").unwrap_or_else(|| panic!("{out}"));
    let lines: Vec<&str> = out[at..].lines().skip(1).take_while(|l| l.starts_with("  ")).collect();
    for name in [
        "fs.dentry-negative (now 0): set 1",
        "vm.vfs_cache_pressure (now 100)",
        "memory-limit: set",
        "fs.dentry-limit: cannot judge",
    ] {
        assert!(lines.iter().any(|l| l.contains(name)), "{name} in {lines:?}");
    }
}

fn status_json(proc: &Path, state: &Path) -> serde_json::Value {
    let o = bin()
        .args(["status", "--proc-root", proc.to_str().unwrap(), "--state-dir", state.to_str().unwrap()])
        .args(["--json", "-"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// What advise keeps the node below is the calibration's first incident,
/// the low end of its interval, exactly as `status` reads it from the same
/// files; its name, and the notes on how far the calibration holds here
/// (another kernel build than the node's), are the calibration's too; the
/// text names each deadline once, with its own article.
#[test]
fn the_target_and_its_notes_come_from_the_calibration() {
    let d = proc_tree();
    let proc = d.path().join("proc");
    let state = repo().join("tests/fixtures/calibration/6.18-victims");
    let v = advise(&proc, &["--growth", "1000/s"]);
    let s = status_json(&proc, &state);
    let first = s["incidents"]["first"].as_str().unwrap_or_else(|| panic!("a first incident: {s}"));
    let row = s["incidents"]["rows"].as_array().unwrap().iter().find(|r| r["key"] == first).unwrap();
    let t = &v["target"];
    let name = format!("{} ({} s)", row["name"].as_str().unwrap(), row["seconds"].as_f64().unwrap());
    assert_eq!(t["name"], name, "{t} {row}");
    assert_eq!(t["dentries"], row["dentries_low"], "the low end of the first incident's interval: {t} {row}");
    // The fixture's first incident: the umount victim past a probe's 1 s, its interval 9.81M-12.8M.
    assert_eq!(first, "probe_timeout");
    assert!((t["dentries"].as_f64().unwrap() - 9_814_387.467).abs() < 1.0, "{t}");
    let nr = v["nr_dentry"].as_f64().unwrap();
    assert!((t["seconds_to"].as_f64().unwrap() - (t["dentries"].as_f64().unwrap() - nr) / 1000.0).abs() < 1e-6);
    assert_eq!(v["calibration"], s["calibration"]["name"]);
    let notes: Vec<&str> = v["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    for n in s["notes"].as_array().unwrap() {
        assert!(notes.contains(&n.as_str().unwrap()), "status's note {n} in advise's {notes:?}");
    }
    assert!(notes.iter().any(|n| n.contains("measured on kernel 6.18.44-fc-v669")), "{notes:?}");

    let o = bin()
        .args(["advise", "--proc-root", proc.to_str().unwrap(), "--state-dir", state.to_str().unwrap()])
        .args(["--growth", "1000/s"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("first incident: an exec or HTTP probe's timeout (1 s) at 9.81M dentries"), "{out}");
    assert!(!out.contains("the an ") && !out.contains("the the "), "{out}");
    assert!(out.contains("note: the calibration was measured on kernel 6.18.44-fc-v669"), "{out}");
}

/// A calibration without the victims' part (schema 1): the target is the
/// soft-lockup edge's low end, named so.
#[test]
fn without_victims_the_target_is_the_soft_lockup() {
    let d = proc_tree();
    let proc = d.path().join("proc");
    let state = repo().join("tests/fixtures/calibration/6.18-quick");
    let o = bin()
        .args(["advise", "--proc-root", proc.to_str().unwrap(), "--state-dir", state.to_str().unwrap()])
        .args(["--growth", "0", "--json", "-"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = status_json(&proc, &state);
    assert_eq!(v["target"]["name"], "the soft lockup");
    let p = &s["prediction"];
    let want = if p["lockup_dentries_low"].is_null() { &p["lockup_dentries"] } else { &p["lockup_dentries_low"] };
    assert_eq!(&v["target"]["dentries"], want, "{p}");
    assert!(v["target"]["seconds_to"].is_null(), "not growing: {}", v["target"]);
}

/// A calibration file that is not one (cut short, empty, another
/// benchmark's result): `advise` and `status --advise` exit 1, the first
/// line naming the file and what to do, the parser's reason below it.
#[test]
fn a_garbled_calibration_is_one_clear_line() {
    let d = proc_tree();
    let proc = d.path().join("proc");
    let seed = std::fs::read_to_string(repo().join("docs/results/seed-6.18.json")).unwrap();
    for (what, text) in [("cut short", "{\"schema\": 2, \"kernel\": "), ("empty", ""), ("a reclaim result", &*seed)] {
        let state = tempfile::tempdir().unwrap();
        let file = state.path().join("calibration.json");
        std::fs::write(&file, text).unwrap();
        for args in [&["advise", "--growth", "0"][..], &["status", "--advise"][..]] {
            let o = bin()
                .args(args)
                .args(["--proc-root", proc.to_str().unwrap(), "--state-dir", state.path().to_str().unwrap()])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{what} {args:?}: {err}");
            let first = err.lines().next().unwrap_or("");
            assert!(
                first.contains(&format!("{} is not a calibration", file.display()))
                    && first.contains("sudo dentrylab reclaim --sizes auto"),
                "{what} {args:?}: {err}"
            );
            assert!(err.lines().count() == 2 && !err.contains("panicked"), "{what} {args:?}: {err}");
            assert!(o.stdout.is_empty(), "{what} {args:?}: nothing printed before the error");
        }
    }
    // No calibration at all is no error: the built-in default, named.
    let empty = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["advise", "--growth", "0", "--proc-root", proc.to_str().unwrap()])
        .args(["--state-dir", empty.path().to_str().unwrap(), "--json", "-"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["calibration"].as_str().unwrap().starts_with("built-in conservative default"), "{}", v["calibration"]);
    assert!(v["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("sudo dentrylab reclaim")));
}
