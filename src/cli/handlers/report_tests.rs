//! The unit tests of `report::document` that need benchmarks' result
//! types: `report` names no benchmark, so they live here, where the
//! registry does.

use crate::bench;
use crate::error::UsageError;
use crate::report::document::{Reader, parse, render};
use crate::result::SCHEMA;

/// The readers of the benchmarks these tests use (the registry's are
/// `cli::registry::readers`).
fn readers() -> Vec<Reader> {
    vec![
        Reader::of::<bench::reclaim::ReclaimResult>(),
        Reader::of::<bench::scale::ScaleResult>(),
        Reader::not_yet("create"),
    ]
}

fn header(schema: &str, benchmark: &str) -> String {
    format!(r#"{{"schema": {schema}, "benchmark": "{benchmark}", "command": "x", "started_at": "y"}}"#)
}

fn err(text: &str) -> String {
    let e = parse(text, "r.json", &readers()).unwrap_err();
    assert!(e.downcast_ref::<UsageError>().is_some(), "{e:#}");
    e.to_string()
}

#[test]
fn schema_versions_are_checked() {
    let next = (SCHEMA + 1).to_string();
    let e = err(&header(&next, "reclaim"));
    assert!(e.starts_with(&format!("r.json: result schema {next} is newer")), "{e}");
    assert!(err(&header("0", "reclaim")).contains("unknown result schema 0"));
    assert!(err(&header("\"1\"", "reclaim")).contains("not a version number"));
    assert!(err(r#"{"benchmark": "reclaim"}"#).contains("no \"schema\" field"));
    assert!(err("[1, 2").contains("invalid JSON"));
}

/// A sweep stopped before its first size still renders: empty plots
/// that say so, and the refusal in the notes.
#[test]
fn a_result_without_runs_renders() {
    let mut v: serde_json::Value =
        serde_json::from_str(include_str!("../../../tests/fixtures/results/reclaim-hardlink-tmpfs.json")).unwrap();
    v["runs"] = serde_json::json!([]);
    v["sizes"] = serde_json::json!([]);
    v["verdict"] = serde_json::Value::Null;
    v["fits"] = serde_json::json!({"time_linear": null, "time_power": null, "gap_linear": null, "gap_power": null});
    v["bytes_per_dentry"] = serde_json::Value::Null;
    v["refused"] = serde_json::json!([{"target": 100000, "reason": "it needs too much memory"}]);
    let loaded = parse(&v.to_string(), "empty.json", &readers()).unwrap();
    let files = render(&[loaded]).unwrap();
    assert_eq!(files.len(), 4);
    assert!(files[0].contents.contains("- Refused 100k: it needs too much memory"));
    assert!(files[1..].iter().all(|f| f.contents.contains("no data")));
}

#[test]
fn benchmarks_are_dispatched() {
    let cur = SCHEMA.to_string();
    assert!(err(&header(&cur, "create")).contains("cannot render \"create\" results yet"));
    // A scale header with a body that is not a scale result.
    assert!(err(&header(&cur, "scale")).contains(&format!("not a valid schema {cur} scale result")));
    // Never another benchmark's renderer: a name no reader has is an error naming it.
    let e = err(&header(&cur, "frobnicate"));
    assert!(e.contains("unknown benchmark \"frobnicate\" (this dentrylab renders: reclaim, scale)"), "{e}");
    // A reclaim header with a body that is not a reclaim result.
    assert!(err(&header(&cur, "reclaim")).contains(&format!("not a valid schema {cur} reclaim result")));
}

/// A real scale result renders its throughput plot and one table per operation.
#[test]
fn scale_results_render() {
    let text = include_str!("../../../tests/fixtures/results/scale-tmpfs.json");
    let files = render(&[parse(text, "scale.json", &readers()).unwrap()]).unwrap();
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["report.md", "scale-throughput.svg"]);
    let md = &files[0].contents;
    for op in
        ["### stat\n", "### stat-missing", "### open-close", "### create-unlink-shared", "### create-unlink-private"]
    {
        assert!(md.contains(op), "{op} missing");
    }
    assert!(md.contains("| Threads | ops/s |"));
    let svg = &files[1].contents;
    assert!(svg.starts_with("<svg") && svg.contains("perfect scaling"));
}
