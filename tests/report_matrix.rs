//! `report` on a `vm` matrix (schema "dentrylab.vm-matrix/1"): the table has
//! one line per row and the chart one series per row with a result; other
//! schemas are refused in one line.
//!
//! The matrix is SYNTHETIC, built here from reclaim results measured on the
//! 6.18 host and committed in docs/results/: the host row holds
//! `watchdog-check-6.18.json` as it is; a second row presents
//! `profile-tmpfs-6.18.json` as if a 6.12 guest under TCG had written it (it
//! was not: only the rendering is under test); a third row does the same
//! with `inotify-ext4-negative-6.18.json` as a 6.12 PREEMPT_RT guest; a
//! fourth row is a guest that failed to boot. The recorded A/B runs of
//! `vm --kernel-source --patch` in docs/results are read back as measured.

use std::path::{Path, PathBuf};

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::{Value, json};

fn measured(name: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results").join(name);
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

const BOOT_ERROR: &str = "linux-image-6.1.0-99-cloud-amd64: the guest printed no result before powering off";

fn synthetic_matrix() -> Value {
    json!({
        "schema": "dentrylab.vm-matrix/1",
        "_note": "synthetic test fixture: rows built from 6.18 host results in docs/results/, relabelled",
        "started_at": "2026-11-25T08:00:00Z",
        "host": {"kernel": "6.18.44-fc-v657", "cpus": 2, "memory_bytes": 25_769_803_776u64},
        "command": ["reclaim", "--sizes", "quick"],
        "rows": [
            {
                "kernel_spec": "host", "kernel_release": "6.18.44-fc-v657", "preempt": "none",
                "preempt_requested": null, "accel": "host", "clock": "host", "emulated": false,
                "memory_bytes": 25_769_803_776u64, "cpus": 2, "wall_seconds": 300.0,
                "result": measured("watchdog-check-6.18.json"), "kernel_log": [], "error": null
            },
            {
                "kernel_spec": "linux-image-6.12.117-cloud-amd64", "kernel_release": "6.12.117-cloud-amd64",
                "preempt": "full", "preempt_requested": "full", "accel": "tcg", "clock": "icount:4",
                "emulated": true, "memory_bytes": 4_294_967_296u64, "cpus": 2, "wall_seconds": 240.0,
                "result": measured("profile-tmpfs-6.18.json"), "kernel_log": ["Dynamic Preempt: full"], "error": null
            },
            {
                "kernel_spec": "linux-image-6.12.117-rt-amd64", "kernel_release": "6.12.117-rt-amd64",
                "preempt": "rt", "preempt_requested": null, "accel": "tcg", "clock": "host",
                "emulated": true, "memory_bytes": 4_294_967_296u64, "cpus": 2, "wall_seconds": 120.0,
                "result": measured("inotify-ext4-negative-6.18.json"), "kernel_log": [], "error": null
            },
            {
                "kernel_spec": "linux-image-6.1.0-99-cloud-amd64", "kernel_release": "6.1.0-99-cloud-amd64",
                "preempt": "none", "preempt_requested": null, "accel": "tcg", "clock": "host", "emulated": true,
                "memory_bytes": 4_294_967_296u64, "cpus": 2, "wall_seconds": 3.5,
                "result": null, "kernel_log": [], "error": BOOT_ERROR
            }
        ]
    })
}

fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

/// The Markdown table's lines (header, rule, rows) under the matrix heading.
fn table_lines(md: &str) -> Vec<Vec<String>> {
    md.lines()
        .skip_while(|l| !l.starts_with("## Kernel matrix"))
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").map(|c| c.trim().to_string()).collect())
        .collect()
}

#[test]
fn a_matrix_renders_its_table_and_one_series_per_row() {
    let d = tempfile::tempdir().unwrap();
    let m = synthetic_matrix();
    let p = write(d.path(), "matrix.json", &m);
    let out = d.path().join("out");
    let a = cargo_bin_cmd!("dentrylab").arg("report").arg(&p).arg("-o").arg(&out).assert();
    let o = a.get_output();
    assert!(o.status.success(), "report failed: {}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let t = table_lines(&md);
    assert_eq!(t.len(), 2 + 4, "header, rule and four rows:\n{md}");
    let col = |name: &str| t[0].iter().position(|h| h.starts_with(name)).unwrap_or_else(|| panic!("no {name} column"));
    let rows = &t[2..];
    assert_eq!(rows[0][col("Kernel")], "6.18.44-fc-v657");
    assert_eq!(rows[1][col("Kernel")], "6.12.117-cloud-amd64");
    assert_eq!(rows[2][col("Kernel")], "6.12.117-rt-amd64");
    assert_eq!(rows[3][col("Kernel")], "6.1.0-99-cloud-amd64");
    assert_eq!(rows[0][col("Accel")], "host");
    assert_eq!(rows[1][col("Accel")], "tcg icount:4 (emulated)");
    assert_eq!(rows[1][col("Preemption")], "full");

    // The host row's cells, read off its own result.
    let host = &m["rows"][0]["result"];
    let largest = host["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["contenders"] == 0)
        .max_by_key(|s| s["target"].as_u64())
        .unwrap();
    let ns = largest["ns_per_dentry"]["median"].as_f64().unwrap();
    assert_eq!(rows[0][col("ns/dentry")], format!("{ns:.0} ns"));
    let exponent = host["per_method"][0]["fits"]["gap_power"]["exponent"].as_f64().unwrap();
    assert!(rows[0][col("Gap exponent")].starts_with(&format!("{exponent:.2} (")), "{}", rows[0][col("Gap exponent")]);
    // Its reclaiming CPU's stretch with its share, then the control CPU's
    // longer one (at 40M its control probe went 7.9 s without running).
    let stretch = &rows[0][col("Longest stretch")];
    assert!(stretch.contains("%); either CPU "), "{stretch}");
    // This result predates intervals on the edge: the cell says so rather
    // than inventing one.
    let verdict = &host["per_method"][0]["verdict"];
    assert!(verdict["lockup_count"].as_f64().unwrap() > 0.0);
    let edge_cell = &rows[0][col("Predicted edge")];
    if verdict["lockup_count_low"].is_null() {
        assert!(edge_cell.ends_with("(no interval)"), "{edge_cell}");
    } else {
        assert!(edge_cell.contains('–'), "an interval: {edge_cell}");
    }
    // A result with intervals shows them (the inotify run's: 400M, 309M–531M).
    let rt = &m["rows"][2]["result"];
    assert!(!rt["per_method"][0]["verdict"]["lockup_count_low"].is_null());
    assert_eq!(rows[2][col("Predicted edge")], "400M (309M–531M)");
    let band = rt["per_method"][0]["fits"]["gap_power"]["exponent"].as_f64().unwrap();
    assert!(rows[2][col("Gap exponent")].starts_with(&format!("{band:.2} (0.")), "{}", rows[2][col("Gap exponent")]);
    assert_eq!(rows[2][col("Method")], "inotify, 2M");
    let w = &host["watchdog"];
    let want = format!("thresh {} s: {} fired", w["thresh_seconds"], w["true_positive"]);
    assert!(rows[0][col("Watchdog")].starts_with(&want), "{} lacks {want}", rows[0][col("Watchdog")]);
    assert_eq!(rows[1][col("Watchdog")], "not checked");
    // The profiled row names its heaviest path; the others have none.
    assert!(rows[1][col("Heaviest")].contains("d_walk"), "{}", rows[1][col("Heaviest")]);
    assert_eq!(rows[0][col("Heaviest")], "–");
    // The failed row says why and nothing else.
    assert_eq!(rows[3][col("Error")], BOOT_ERROR);
    assert_eq!(rows[3][col("ns/dentry")], "–");
    assert_eq!(rows[0][col("Error")], "");
    assert!(md.contains("compare them with each other within this matrix, never with the host"), "{md}");

    // One chart, one series per row with a result, each labelled.
    let svg = std::fs::read_to_string(out.join("vm-matrix-longest-gap.svg")).unwrap();
    assert!(md.contains("](vm-matrix-longest-gap.svg)"), "{md}");
    // Legend entries are text lines of their own (the fit lines' labels
    // start with the row's label and go on).
    let series = |label: &str| svg.lines().filter(|l| l.trim() == label).count();
    assert_eq!(series("6.18.44-fc-v657 none"), 1, "the host row's series");
    assert_eq!(series("6.12.117-cloud-amd64 full, tcg icount:4 (emulated)"), 1, "the guest row's series");
    assert_eq!(series("6.12.117-rt-amd64 rt, tcg (emulated)"), 1, "the RT row's series");
    assert!(!svg.contains("6.1.0-99"), "the failed row has no series");
}

#[test]
fn other_schemas_are_refused_in_one_line() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let mut newer = synthetic_matrix();
    newer["schema"] = json!("dentrylab.vm-matrix/2");
    let mut other = synthetic_matrix();
    other["schema"] = json!("dentrylab.something/1");
    let mut broken = synthetic_matrix();
    broken["rows"][0]["cpus"] = json!("two");
    let cases = [
        ("newer.json", newer, "newer.json: matrix schema \"dentrylab.vm-matrix/2\" is newer than this dentrylab reads"),
        (
            "other.json",
            other,
            "other.json: unknown schema \"dentrylab.something/1\" (not a version number): this dentrylab reads results of schema",
        ),
        ("broken.json", broken, "broken.json: not a valid dentrylab.vm-matrix/1 matrix"),
    ];
    for (name, v, want) in cases {
        let p = write(d.path(), name, &v);
        let a = cargo_bin_cmd!("dentrylab").arg("report").arg(&p).arg("-o").arg(&out).assert().code(2);
        let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.contains(want), "{name}: {err}");
    }
    assert!(!out.exists(), "nothing written for a refused file");
}

/// The recorded A/B runs of `vm --kernel-source --patch` (docs/results,
/// measured on the fc-v1147 VM, TCG) read back: both rows, and the
/// patched ÷ unpatched line at 400k that docs/kernels.md quotes, its
/// stretch the longest on either vCPU.
#[test]
fn recorded_patch_runs_read_back_with_their_ratios() {
    let d = tempfile::tempdir().unwrap();
    for (file, rows, ratio) in [
        (
            "vm-patch-7.3-offset-map-tcg.json",
            ["7.3.4-dentrylab-ef998895", "7.3.4-dentrylab-c35d5b6e"],
            "| 7.3-libfs-offset-map-in-batches.patch | lazy | 400k | 0.43× (0.24–0.46) | 1.00× (0.99–1.08) |",
        ),
        (
            "vm-patch-7.3-namespace-unlock-tcg.json",
            ["7.3.4-dentrylab-ef998895", "7.3.4-dentrylab-b48fa08e"],
            "| 7.3-namespace-unlock-defer-rcu-wait.patch | lazy | 400k | 0.36× (0.28–0.59) | 0.92× (0.80–1.45) | umount 0.12× (0.07–0.36) |",
        ),
        // 6.12's walk moves to an unbound kworker on the other vCPU: the
        // reclaiming CPU's probe alone said 1.47×, 0.04× and 0.13× here.
        (
            "vm-patch-6.12-namespace-unlock-tcg.json",
            ["6.12.118-dentrylab-6e46cedd", "6.12.118-dentrylab-076549ba"],
            "| 6.12-namespace-unlock-defer-rcu-wait.patch | none | 400k | 1.55× (1.35–1.58) | 1.24× (1.05–1.25) | umount 0.02× (0.02–0.76) |",
        ),
    ] {
        let out = d.path().join(file);
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results").join(file);
        cargo_bin_cmd!("dentrylab").arg("report").arg(&path).arg("-o").arg(&out).assert().success();
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        let table = table_lines(&md);
        for r in rows {
            assert!(table.iter().any(|l| l[0] == r), "{file}: no row {r} in {table:?}");
        }
        assert!(md.contains("### Patched ÷ unpatched"), "{file}: {md}");
        assert!(md.contains(ratio), "{file}: no `{ratio}` in {md}");
        if file.starts_with("vm-patch-6.12") {
            let patched = table.iter().find(|l| l[0] == "6.12.118-dentrylab-076549ba").unwrap();
            assert_eq!(patched[5], "80 ms (8%); either CPU 84 ms", "{file}: {patched:?}");
        }
    }
}

/// The namespace-unlock A/B with `--selftests`: the selftests' grid
/// reads back per test, the baseline's and the patched kernel's verdicts
/// side by side, as docs/kernels.md quotes them.
#[test]
fn a_recorded_selftests_run_reads_back_with_both_kernels_verdicts() {
    let d = tempfile::tempdir().unwrap();
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results/vm-patch-7.3-namespace-unlock-selftests-tcg.json");
    cargo_bin_cmd!("dentrylab").arg("report").arg(&path).arg("-o").arg(d.path()).assert().success();
    let md = std::fs::read_to_string(d.path().join("report.md")).unwrap();
    assert!(md.contains("### The kernel's own selftests in each guest"), "{md}");
    for line in [
        "| mount_setattr:mount_setattr_test | FAIL (ok 24, not ok 10, skip 0) | FAIL (ok 24, not ok 10, skip 0) |",
        "| filesystems/statmount:statmount_test | pass (ok 17, not ok 0, skip 0) | pass (ok 17, not ok 0, skip 0) |",
        "| move_mount_set_group:move_mount_set_group_test | pass (ok 2, not ok 0, skip 0) | pass (ok 2, not ok 0, skip 0) |",
    ] {
        assert!(md.lines().any(|l| l == line), "no `{line}` in {md}");
    }
}

/// The same A/B with `mount` in the guest and
/// bench/kernel-patches/selftests.config: mount_setattr's idmapped cases
/// pass on both kernels, as docs/kernels.md says.
#[test]
fn with_mount_and_write_mounted_the_idmapped_cases_pass_on_both_kernels() {
    let d = tempfile::tempdir().unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/results/vm-patch-7.3-namespace-unlock-selftests-write-mounted-tcg.json");
    cargo_bin_cmd!("dentrylab").arg("report").arg(&path).arg("-o").arg(d.path()).assert().success();
    let md = std::fs::read_to_string(d.path().join("report.md")).unwrap();
    for line in [
        "| mount_setattr:mount_setattr_test | pass (ok 34, not ok 0, skip 0) | pass (ok 34, not ok 0, skip 0) |",
        "| filesystems/empty_mntns:clone3_empty_mntns_test | FAIL (ok 17, not ok 1, skip 0) | FAIL (ok 17, not ok 1, skip 0) |",
    ] {
        assert!(md.lines().any(|l| l == line), "no `{line}` in {md}");
    }
}

/// The release walk's cloud rows at 400k–1.6M (docs/results, fc-v1147,
/// TCG): each reads back with the edge docs/kernels.md quotes, 6.18's old
/// walk beside the 6.19 and later ones.
#[test]
fn the_recorded_edges_from_6_19_on_read_back() {
    let d = tempfile::tempdir().unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results/vm-release-walk-edges-tcg.json");
    cargo_bin_cmd!("dentrylab").arg("report").arg(&path).arg("-o").arg(d.path()).assert().success();
    let md = std::fs::read_to_string(d.path().join("report.md")).unwrap();
    let table = table_lines(&md);
    for (kernel, edge) in [
        ("6.18.15+deb13-cloud-amd64", "60.8M (46.5M–80.2M)"),
        ("6.19.14+deb13-cloud-amd64", "600M (5.78M–unbounded)"),
        ("7.2.12+deb13-cloud-amd64", "136M (49.5M–704M)"),
        ("7.3.4+deb13-cloud-amd64", "257M (194M–346M)"),
    ] {
        let row = table.iter().find(|l| l[0] == kernel).unwrap_or_else(|| panic!("no row {kernel} in {table:?}"));
        assert!(row.iter().any(|c| c == edge), "{kernel}: no edge {edge} in {row:?}");
    }
}
