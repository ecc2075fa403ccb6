//! `reclaim --profile` and `containers --profile`: perf samples of the reclaiming CPU, the
//! longest gap's stacks, the verdict's line, the flame graph; and the one
//! line said when perf cannot be used.

mod common;

use std::path::Path;

use common::{bin, kernel_lock, run_json};
use serde_json::Value;

fn stacks(w: &Value) -> Vec<(String, u64)> {
    w["folded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().to_string(), p[1].as_u64().unwrap()))
        .collect()
}

/// A profile sampled at 4000 Hz, its longest gap's window the probe's:
/// same length, on the same clock.
fn assert_window_is_the_probes(p: &serde_json::Value, probe: &serde_json::Value) {
    assert_eq!(p["frequency_hz"], 4000);
    let g = &p["longest_gap"];
    let len = (g["end_ns"].as_u64().unwrap() - g["start_ns"].as_u64().unwrap()) as f64 / 1e9;
    assert!(
        (len - probe["max_gap_seconds"].as_f64().unwrap()).abs() < 1e-6,
        "the probe's gap, on its clock: {len} vs {probe}"
    );
}

#[test]
fn profile_folds_the_umount_and_names_its_longest_stretch() {
    require_root!();
    let _g = kernel_lock();
    let out = common::bin()
        .args(["reclaim", "--profile", "--sizes", "30k", "--reps", "2", "--no-save", "--json", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The verdict's sentences are rendered, not saved: with the JSON on
    // standard output, the table (and the verdict) go to standard error.
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    let notes = v["notes"].as_array().unwrap();
    assert!(notes.iter().any(|n| n.as_str().unwrap().starts_with("--profile: perf sampled CPU")), "{notes:?}");
    for r in v["runs"].as_array().unwrap() {
        assert!(r.get("profile_problem").is_none(), "{r}");
        let p = &r["profile"];
        assert_window_is_the_probes(p, &r["probe"]);
        let rec = &p["reclaim"];
        assert!(rec["start_ns"].as_u64().unwrap() < rec["end_ns"].as_u64().unwrap());
        // The reclaiming thread was sampled in its umount: the kernel's
        // cleanup_mnt (task work on the way back from umount(2)).
        let me = &rec["reclaimer"];
        assert!(me["samples"].as_u64().unwrap() > 0, "{me}");
        let all = stacks(rec);
        assert_eq!(all.iter().map(|(_, c)| c).sum::<u64>(), rec["samples"].as_u64().unwrap());
        assert!(all.iter().any(|(s, _)| s.contains(";cleanup_mnt;")), "{all:?}");
        assert!(rec["stacks"].as_array().unwrap().len() <= 5);
        for s in rec["stacks"].as_array().unwrap() {
            let share = s["share"].as_f64().unwrap();
            assert!(share > 0.0 && share <= 1.0);
        }
    }
    // At 30k the longest gap is a few ms and may hold no sample at all (when
    // the CPU ran with the sampling timer unable to fire, as in softirq
    // work): then the verdict says so instead of naming a path; it never
    // stays silent about the stretch.
    assert!(
        text.lines().map(str::trim).any(|l| {
            l.starts_with("the longest stretch (") || l.starts_with("perf took no sample in the longest stretch (")
        }),
        "the verdict names the path, or says why it cannot: {text}"
    );
}

/// A directory whose only entry is a `perf` that fails as a perf without
/// the right to sample does. Not under /tmp, which the sandbox covers with
/// its scratch tmpfs: under target/ unless the checkout itself is under
/// /tmp (as a CI clone may be), then under /var/tmp.
fn fake_perf_dir(script: &str) -> tempfile::TempDir {
    let d = outside_tmp();
    let p = d.path().join("perf");
    std::fs::write(&p, script).unwrap();
    let mut perm = std::fs::metadata(&p).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&p, perm).unwrap();
    d
}

fn without_perf(path: &Path) -> (String, Value) {
    let out = bin()
        .args(["reclaim", "--profile", "--sizes", "10k", "--reps", "1", "--no-save", "--json", "-"])
        .env("PATH", path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "the run goes on without perf: {err}");
    (err, serde_json::from_slice(&out.stdout).unwrap())
}

fn check_degraded(err: &str, v: &Value, why: &str) {
    // One line (the table's notes, also on stderr here, repeat it).
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("dentrylab: ") && l.contains("--profile")).collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert_eq!(err.lines().filter(|l| l.contains("--profile")).count(), 2, "the line and its note: {err}");
    assert!(
        lines[0].starts_with("dentrylab: --profile: ") && lines[0].ends_with("; running without it"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(why), "{}", lines[0]);
    let note = lines[0].trim_start_matches("dentrylab: ");
    assert!(v["notes"].as_array().unwrap().iter().any(|n| n == note), "the note is in the result");
    for r in v["runs"].as_array().unwrap() {
        assert!(r.get("profile").is_none() && r.get("profile_problem").is_none(), "no stack is guessed: {r}");
        assert!(r["probe"]["samples"].as_u64().unwrap() > 0, "the reclaim was still measured");
    }
}

#[test]
fn profile_without_perf_says_so_in_one_line() {
    require_root!();
    let _g = kernel_lock();
    let empty = tempfile::tempdir().unwrap();
    let (err, v) = without_perf(empty.path());
    check_degraded(&err, &v, "cannot run perf");
}

#[test]
fn profile_with_a_perf_that_cannot_sample_says_so_in_one_line() {
    require_root!();
    let _g = kernel_lock();
    let d = fake_perf_dir(
        "#!/bin/sh\necho 'Error: Access to performance monitoring and observability operations is limited.' >&2\nexit 255\n",
    );
    let (err, v) = without_perf(d.path());
    check_degraded(&err, &v, "perf cannot sample CPU");
    check_degraded(&err, &v, "Access to performance monitoring");
}

fn results(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results").join(name)
}

/// Renders the recorded result `name` twice: the same input must draw the
/// same `svg` file. Returns the first report's directory and that SVG.
fn render_twice(name: &str, svg: &str) -> (tempfile::TempDir, String) {
    let render = || {
        let out = tempfile::tempdir().unwrap();
        let st = bin().arg("report").arg(results(name)).arg("-o").arg(out.path()).output().unwrap();
        assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
        out
    };
    let (a, b) = (render(), render());
    let text = std::fs::read_to_string(a.path().join(svg)).unwrap();
    assert_eq!(text, std::fs::read_to_string(b.path().join(svg)).unwrap(), "same input, same SVG");
    (a, text)
}

/// The report of a result recorded without --profile has no `svg` file
/// and its report.md does not say `marker`.
fn assert_no_flame_graph(name: &str, svg: &str, marker: &str) {
    let out = tempfile::tempdir().unwrap();
    assert!(bin().arg("report").arg(results(name)).arg("-o").arg(out.path()).status().unwrap().success());
    assert!(!out.path().join(svg).exists());
    assert!(!std::fs::read_to_string(out.path().join("report.md")).unwrap().contains(marker));
}

/// A real `reclaim --profile --sizes 100k,200k --reps 1` result from this
/// kernel (6.18, a loaded machine): its report carries the tables and the
/// flame graph.
#[test]
fn report_draws_the_longest_stretch() {
    let (a, svg) = render_twice("reclaim-profile-tmpfs.json", "reclaim-longest-stretch.svg");
    assert!(svg.starts_with("<?xml") && svg.contains("<svg"));
    for frame in ["kill_litter_super", "d_walk", "cleanup_mnt"] {
        assert!(svg.contains(frame), "the flame graph shows {frame}");
    }
    assert!(svg.contains("What held CPU 0 in the longest stretch"));
    let md = std::fs::read_to_string(a.path().join("report.md")).unwrap();
    assert!(md.contains("](reclaim-longest-stretch.svg)"), "the report links the flame graph");
    assert!(md.contains("### What held CPU 0 (perf)"));
    assert!(md.contains("`d_walk ← kill_litter_super` (100%)"), "{md}");
    assert!(
        md.contains("- the longest stretch (46 ms, 200k rep 1) is not the reclaiming task's (38% of its 183 samples)"),
        "{md}"
    );
    // A result without --profile draws no flame graph.
    assert_no_flame_graph("reclaim-small.json", "reclaim-longest-stretch.svg", "What held CPU");
    // rsvg-convert (CI installs it) draws it.
    require!(
        common::has("rsvg-convert"),
        "rsvg-convert not installed (apt-get install librsvg2-bin): the flame graph was not rendered"
    );
    let png = a.path().join("flame.png");
    let st = std::process::Command::new("rsvg-convert")
        .arg(a.path().join("reclaim-longest-stretch.svg"))
        .arg("-o")
        .arg(&png)
        .status()
        .unwrap();
    assert!(st.success() && std::fs::metadata(&png).unwrap().len() > 5_000);
}

/// `containers --profile`:
/// each teardown recorded on the probe's clock, the longest stretch's
/// stacks and every teardown's added up, the path named in one line.
#[test]
fn containers_profile_folds_each_teardown() {
    require_root!();
    let _g = kernel_lock();
    let v = run_json(&["containers", "--count", "3", "--ops", "500", "--workload", "mixed", "--profile"]);
    let notes = v["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n.as_str().unwrap().starts_with("--profile: perf sampled CPU")
            && n.as_str().unwrap().contains("each teardown")),
        "{notes:?}"
    );
    let mut teardown_samples = 0;
    for c in v["containers"].as_array().unwrap() {
        assert!(c.get("profile_problem").is_none(), "{c}");
        let p = &c["profile"];
        assert_window_is_the_probes(p, &c["probe"]);
        assert!(["exit", "removal"].contains(&c["profile_phase"].as_str().unwrap()), "{c}");
        let t = &p["reclaim"];
        assert!(t["start_ns"].as_u64().unwrap() < t["end_ns"].as_u64().unwrap());
        assert_eq!(stacks(t).iter().map(|(_, n)| n).sum::<u64>(), t["samples"].as_u64().unwrap());
        teardown_samples += t["samples"].as_u64().unwrap();
    }
    assert!(teardown_samples > 0, "perf sampled the teardowns");
    let p = &v["profile"];
    assert_eq!(p["profiled"], 3);
    // Over all teardowns: the containers' windows added up.
    assert_eq!(p["teardowns"]["samples"].as_u64().unwrap(), teardown_samples);
    assert_eq!(stacks(&p["teardowns"]).iter().map(|(_, n)| n).sum::<u64>(), teardown_samples);
    assert!(p["teardowns"]["stacks"].as_array().unwrap().len() <= 5);
    let longest = v["containers"].as_array().unwrap().iter().max_by(|a, b| {
        a["probe"]["max_gap_seconds"].as_f64().unwrap().total_cmp(&b["probe"]["max_gap_seconds"].as_f64().unwrap())
    });
    assert_eq!(p["longest_id"], longest.unwrap()["id"]);
    assert_eq!(p["longest_gap"], longest.unwrap()["profile"]["longest_gap"]);
    let line = p["verdict"].as_str().unwrap();
    assert!(
        line.starts_with("teardown: the longest stretch (") || line.starts_with("teardown: perf took no sample"),
        "{line}"
    );
    assert!(notes.iter().any(|n| n == line), "the line is in the notes");
}

/// A directory the sandbox does not hide (see [`fake_perf_dir`]).
fn outside_tmp() -> tempfile::TempDir {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let base = if target.starts_with("/tmp") { Path::new("/var/tmp") } else { target };
    tempfile::tempdir_in(base).unwrap()
}

/// A PATH with mkfs.ext4 (the sandbox's disk) and no perf.
fn path_without_perf() -> tempfile::TempDir {
    let d = outside_tmp();
    for tool in ["mkfs.ext4", "mke2fs"] {
        for dir in ["/usr/sbin", "/sbin", "/usr/bin"] {
            let p = Path::new(dir).join(tool);
            if p.exists() {
                std::os::unix::fs::symlink(&p, d.path().join(tool)).unwrap();
                break;
            }
        }
    }
    d
}

#[test]
fn containers_profile_without_perf_says_so_in_one_line() {
    require_root!();
    let _g = kernel_lock();
    let path = path_without_perf();
    let out = bin()
        .args(["containers", "--count", "2", "--ops", "100", "--profile", "--json", "-"])
        .env("PATH", path.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the run goes on without perf: {err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("dentrylab: ") && l.contains("--profile")).collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(lines[0].contains("cannot run perf") && lines[0].ends_with("; running without it"), "{}", lines[0]);
    let note = lines[0].trim_start_matches("dentrylab: ");
    assert!(v["notes"].as_array().unwrap().iter().any(|n| n == note));
    assert!(v.get("profile").is_none(), "no stack is guessed");
    for c in v["containers"].as_array().unwrap() {
        assert!(c.get("profile").is_none() && c.get("profile_problem").is_none(), "{c}");
        assert!(c["probe"]["samples"].as_u64().unwrap() > 0, "the teardown was still probed");
    }
}

/// A real `containers --count 3 --ops 1k --workload mixed --profile`
/// result from this kernel (6.18, a loaded machine): its report carries
/// the teardown stacks and the flame graph of the longest stretch.
#[test]
fn report_draws_the_longest_teardown_stretch() {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(results("containers-profile.json")).unwrap()).unwrap();
    let file = "containers-longest-stretch.svg";
    let (a, svg) = render_twice("containers-profile.json", file);
    assert!(svg.starts_with("<?xml") && svg.contains("What held CPU 0 in the longest teardown stretch"));
    // The heaviest stack's leaf is drawn.
    let top = v["profile"]["longest_gap"]["stacks"][0]["stack"].as_str().unwrap();
    let leaf = top.rsplit(';').next().unwrap().replace('<', "&lt;").replace('>', "&gt;");
    assert!(svg.contains(&leaf), "the flame graph shows {leaf}");
    let md = std::fs::read_to_string(a.path().join("report.md")).unwrap();
    assert!(md.contains(&format!("]({file})")), "the report links the flame graph");
    assert!(md.contains("What held CPU 0 in the teardowns (perf)"), "{md}");
    assert!(md.contains("Longest teardown stretch (container "), "{md}");
    assert!(md.contains("All 3 recorded teardowns ("), "{md}");
    assert!(md.contains(v["profile"]["verdict"].as_str().unwrap()), "the one line is in the report");
    // A containers result without --profile draws no flame graph.
    assert_no_flame_graph("containers-mixed.json", file, "in the teardowns (perf)");
}
