//! `dentrylab report`: saved results in, report.md and SVG plots
//! out. Rendering is a pure function of the JSON, so fixture results are
//! rendered and compared byte for byte against golden files under
//! `tests/fixtures/golden/<case>/`. After a deliberate change to the output,
//! regenerate them with `UPDATE_GOLDEN=1 cargo test --release --test report`
//! and look at the result (render the SVGs to PNG).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::cargo_bin_cmd;
use predicates::prelude::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Result fixtures: real `reclaim --json` output from the project's VM.
fn result(name: &str) -> PathBuf {
    fixtures().join("results").join(name)
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Renders `inputs` and compares every output file with the golden case.
fn golden(case: &str, inputs: &[&str]) -> PathBuf {
    let out = tempfile::tempdir().unwrap().keep();
    let mut cmd = cargo_bin_cmd!("dentrylab");
    cmd.arg("report");
    for i in inputs {
        cmd.arg(result(i));
    }
    cmd.arg("-o").arg(&out).assert().success().stdout(predicate::str::ends_with("report.md\n"));
    let want_dir = fixtures().join("golden").join(case);
    let got = files_in(&out);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let _ = std::fs::remove_dir_all(&want_dir);
        std::fs::create_dir_all(&want_dir).unwrap();
        for f in &got {
            std::fs::copy(out.join(f), want_dir.join(f)).unwrap();
        }
        eprintln!("updated golden files in {}", want_dir.display());
    }
    assert_eq!(got, files_in(&want_dir), "files written for {case}");
    for f in &got {
        let a = std::fs::read_to_string(out.join(f)).unwrap();
        let b = std::fs::read_to_string(want_dir.join(f)).unwrap();
        if a != b {
            let line =
                a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or(a.lines().count().min(b.lines().count()));
            panic!(
                "{case}/{f} differs from the golden file at line {} (got {:?}, want {:?}); \
                 if the change is intended, rerun with UPDATE_GOLDEN=1",
                line + 1,
                a.lines().nth(line),
                b.lines().nth(line)
            );
        }
    }
    out
}

#[test]
fn one_reclaim_result() {
    let out = golden("reclaim-hardlink", &["reclaim-hardlink-tmpfs.json"]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    // Seed 000's layout, plots first.
    let order = [
        "### Plots",
        "### Environment",
        "### Method",
        "### Results",
        "### Fit",
        "### Soft-lockup threshold",
        "### Verdict",
        "### Reproduce",
    ];
    let pos: Vec<usize> = order.iter().map(|h| md.find(h).unwrap_or_else(|| panic!("no {h}"))).collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "{pos:?}");
    for svg in ["reclaim-time.svg", "reclaim-ns-per-dentry.svg", "reclaim-longest-gap.svg"] {
        assert!(md.contains(&format!("]({svg})")), "report.md links {svg}");
        let s = std::fs::read_to_string(out.join(svg)).unwrap();
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("dentries reclaimed (log scale)"), "x axis title in {svg}");
        assert!(s.contains("soft-lockup threshold") || s.contains("soft-lockup"), "threshold in {svg}");
        assert!(s.contains("1.5G"), "extrapolation target in {svg}");
    }
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn two_results_share_the_axes() {
    let out = golden("reclaim-hardlink-vs-file", &["reclaim-hardlink-tmpfs.json", "reclaim-file-tmpfs.json"]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("### Comparison"));
    assert!(md.contains("### hardlink dentries") && md.contains("### file dentries"));
    let svg = std::fs::read_to_string(out.join("reclaim-time.svg")).unwrap();
    assert!(svg.contains("hardlink dentries: measured") && svg.contains("file dentries: measured"));
    std::fs::remove_dir_all(out).unwrap();
}

/// A pollute result (the lookup-pollution report's experiment) renders the
/// latency bars and the slowdown plot, a churn result (seed 002) the timeline; together in one
/// report, each benchmark its own part, in the order given.
#[test]
fn pollute_and_churn_results() {
    let out = golden("pollute-churn", &["pollute-ext4.json", "churn-ext4-2M.json"]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let p = md.find("## Lookup latency under negative-dentry pollution").expect("pollute part");
    let c = md.find("## Parallel unlink").expect("churn part");
    assert!(p < c, "parts in the order given");
    for f in ["pollute-latency.svg", "pollute-slowdown.svg", "churn-timeline.svg"] {
        assert!(md.contains(&format!("]({f})")), "report.md links {f}");
    }
    assert!(md.contains("the lookup-pollution report's effect"), "the verdict is in the report");
    assert!(md.contains("dentry high-water mark"), "the churn summary is in the report");
    let slow = std::fs::read_to_string(out.join("pollute-slowdown.svg")).unwrap();
    assert!(
        slow.contains("no change (1×)") && slow.contains("lookup-pollution report") && slow.contains("open-same-dir")
    );
    let bars = std::fs::read_to_string(out.join("pollute-latency.svg")).unwrap();
    assert!(bars.contains("unpolluted") && bars.contains("3M negative dentries"));
    let tl = std::fs::read_to_string(out.join("churn-timeline.svg")).unwrap();
    assert!(tl.contains("unlinks per second") && tl.contains("nr_negative"));
    std::fs::remove_dir_all(out).unwrap();
}

/// The SVGs are valid documents a renderer draws (rsvg-convert, which CI
/// installs; skipped with a note where it is missing).
#[test]
fn svgs_render() {
    require!(common::has("rsvg-convert"), "needs rsvg-convert (Debian package librsvg2-bin)");
    let png = tempfile::tempdir().unwrap();
    for (case, f) in ["reclaim-hardlink-vs-file", "pollute-churn"]
        .iter()
        .flat_map(|c| files_in(&fixtures().join("golden").join(c)).into_iter().map(move |f| (*c, f)))
        .filter(|(_, f)| f.ends_with(".svg"))
    {
        let dir = fixtures().join("golden").join(case);
        let f = &f;
        let to = png.path().join(format!("{f}.png"));
        let st = Command::new("rsvg-convert").arg(dir.join(f)).arg("-o").arg(&to).status().unwrap();
        assert!(st.success(), "rsvg-convert failed on {f}");
        assert!(std::fs::metadata(&to).unwrap().len() > 10_000, "{f} rendered to an almost empty PNG");
    }
}

fn write_tmp(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn header(schema: &str, benchmark: &str) -> String {
    format!(
        r#"{{"schema": {schema}, "benchmark": "{benchmark}", "command": "dentrylab {benchmark}", "started_at": "2026-01-01T00:00:00Z"}}"#
    )
}

#[test]
fn bad_results_get_one_line_and_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    // The schema this dentrylab writes, read off a fixture it wrote.
    let current: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(result("reclaim-hardlink-tmpfs.json")).unwrap()).unwrap();
    let current = current["schema"].as_u64().unwrap();
    let future = (current + 1).to_string();
    let cur = current.to_string();
    let cases = [
        (
            "future.json",
            header(&future, "reclaim"),
            format!("future.json: result schema {future} is newer than this dentrylab reads (schema {cur})"),
        ),
        ("old.json", header("0", "reclaim"), format!("old.json: unknown result schema 0: this dentrylab reads schema {cur}")),
        (
            "scale.json",
            header(&cur, "create"),
            "scale.json: this dentrylab cannot render \"create\" results yet (it renders: reclaim, pollute, churn, scale, mitigate, containers)"
                .to_string(),
        ),
        // A churn header whose body is not a churn result.
        ("churn.json", header(&cur, "churn"), format!("churn.json: not a valid schema {cur} churn result")),
        ("what.json", header(&cur, "what"), "what.json: unknown benchmark \"what\"".to_string()),
        ("plain.json", "{\"a\": 1}".to_string(), "plain.json: not a dentrylab result: it has no \"schema\" field".to_string()),
        ("broken.json", "{".to_string(), "broken.json: not a dentrylab result (invalid JSON".to_string()),
    ];
    for (name, text, want) in cases {
        let p = write_tmp(d.path(), name, &text);
        let a = cargo_bin_cmd!("dentrylab").arg("report").arg(&p).arg("-o").arg(&out).assert().code(2);
        let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.contains(want.as_str()), "{name}: {err}");
    }
    // A good file next to a bad one: nothing is written.
    let bad = write_tmp(d.path(), "future.json", &header("2", "reclaim"));
    cargo_bin_cmd!("dentrylab")
        .arg("report")
        .arg(result("reclaim-hardlink-tmpfs.json"))
        .arg(&bad)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2);
    assert!(!out.exists(), "no output directory for a refused report");
}

/// A result whose `methods` list is empty made `report` panic
/// (it indexed `methods[0]`). It renders, with a generic column title.
#[test]
fn a_result_with_no_methods_renders() {
    let d = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(result("reclaim-hardlink-tmpfs.json")).unwrap()).unwrap();
    v["options"]["methods"] = serde_json::json!([]);
    let p = write_tmp(d.path(), "no-methods.json", &v.to_string());
    let out = d.path().join("out");
    let a = cargo_bin_cmd!("dentrylab").arg("report").arg(&p).arg("-o").arg(&out).assert();
    let o = a.get_output();
    assert!(o.status.success(), "report failed: {}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap_or_default();
    assert!(md.contains("Reclaim time"), "{md}");
}

#[test]
fn missing_arguments_and_files() {
    cargo_bin_cmd!("dentrylab")
        .args(["report", "-o", "x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("<RESULT.json>"));
    cargo_bin_cmd!("dentrylab")
        .arg("report")
        .arg(result("reclaim-hardlink-tmpfs.json"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--output <DIR>"));
    let d = tempfile::tempdir().unwrap();
    cargo_bin_cmd!("dentrylab")
        .arg("report")
        .arg(d.path().join("nope.json"))
        .arg("-o")
        .arg(d.path().join("out"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot read result file").and(predicate::str::contains("nope.json")));
}

/// `reclaim --report DIR` writes the same report at the end of a real run,
/// onto the real filesystem: DIR is under /tmp, which inside the sandbox is
/// a private tmpfs, so this fails if the directory is opened too late.
#[test]
fn reclaim_writes_a_report_outside_the_sandbox() {
    require_root!();
    let d = tempfile::tempdir_in("/tmp").unwrap();
    let dir = d.path().join("report");
    let json = d.path().join("r.json");
    cargo_bin_cmd!("dentrylab")
        .args(["reclaim", "--sizes", "10k,20k", "--reps", "1", "--no-save", "--report"])
        .arg(&dir)
        .arg("--json")
        .arg(&json)
        .assert()
        .success()
        .stderr(predicate::str::contains("report written to"));
    assert_eq!(
        files_in(&dir),
        ["reclaim-longest-gap.svg", "reclaim-ns-per-dentry.svg", "reclaim-time.svg", "report.md"]
    );
    // The report of the run is the report of its saved JSON.
    let again = d.path().join("again");
    cargo_bin_cmd!("dentrylab").arg("report").arg(&json).arg("-o").arg(&again).assert().success();
    for f in files_in(&dir) {
        assert_eq!(std::fs::read(dir.join(&f)).unwrap(), std::fs::read(again.join(&f)).unwrap(), "{f}");
    }
}

/// A saved `mitigate` result (captured from a real run) renders
/// as a section with its table, its verdict and what was restored.
#[test]
fn renders_a_mitigate_result() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    cargo_bin_cmd!("dentrylab")
        .arg("report")
        .arg(result("mitigate-temp-tables-pressure.json"))
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    for needle in [
        "## Mitigations: temp-tables",
        "| vm.vfs_cache_pressure=500 |",
        "- vm.vfs_cache_pressure 100 → 500:",
        "vm.vfs_cache_pressure: set to 100, 500 during the run; restored to 100 (read back: 100)",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle:?}:\n{md}");
    }
}
