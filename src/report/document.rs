//! The `report` document: saved result files in, `report.md` and SVG plots
//! out. Each file's header says which benchmark wrote it and in which schema;
//! results of the same benchmark are drawn on shared axes. Rendering is a
//! pure function of the JSON, so tests compare it against golden files.

use anyhow::{Context, Result};
use serde::Deserialize;

use super::{markdown, svg};
use crate::bench::churn::ChurnResult;
use crate::bench::containers::ContainersResult;
use crate::bench::mitigate::MitigateResult;
use crate::bench::pollute::PolluteResult;
use crate::bench::reclaim::ReclaimResult;
use crate::bench::scale::ScaleResult;
use crate::error::UsageError;
use crate::render::Render;
use crate::result::SCHEMA;

/// Benchmarks whose results `report` can render.
pub const RENDERS: &[&str] = &["reclaim", "pollute", "churn", "scale", "mitigate", "containers"];
/// Benchmarks dentrylab knows whose results it cannot render yet.
const NOT_YET: &[&str] = &["create", "gvisor"];

/// One result file, parsed into its benchmark's result struct.
#[derive(Debug, Clone)]
pub enum Loaded {
    Reclaim(Box<ReclaimResult>),
    Pollute(Box<PolluteResult>),
    Churn(Box<ChurnResult>),
    Scale(Box<ScaleResult>),
    Mitigate(Box<MitigateResult>),
    Containers(Box<ContainersResult>),
    /// A `vm` matrix (its own schema, [`super::matrix::VM_MATRIX_SCHEMA`]).
    VmMatrix(Box<super::matrix::MatrixFile>),
}

impl Loaded {
    fn benchmark(&self) -> &'static str {
        match self {
            Loaded::Reclaim(_) => ReclaimResult::BENCHMARK,
            Loaded::Pollute(_) => PolluteResult::BENCHMARK,
            Loaded::Churn(_) => ChurnResult::BENCHMARK,
            Loaded::Scale(_) => ScaleResult::BENCHMARK,
            Loaded::Mitigate(_) => MitigateResult::BENCHMARK,
            Loaded::Containers(_) => ContainersResult::BENCHMARK,
            Loaded::VmMatrix(_) => "vm",
        }
    }
}

/// Parses one result file (`source` names it in errors). Anything wrong
/// with the file is bad input: one line naming the file.
pub fn parse(text: &str, source: &str) -> Result<Loaded> {
    let bad = |why: String| -> anyhow::Error { UsageError(format!("{source}: {why}")).into() };
    #[derive(Deserialize)]
    struct Probe {
        schema: Option<serde_json::Value>,
        benchmark: Option<String>,
    }
    let probe: Probe = serde_json::from_str(text)
        .map_err(|e| bad(format!("not a dentrylab result (invalid JSON: {e}); give files written by --json")))?;
    let schema = match probe.schema {
        None => {
            return Err(bad("not a dentrylab result: it has no \"schema\" field; give files written by --json".into()));
        }
        Some(serde_json::Value::String(s)) => return parse_matrix(text, &s).map_err(bad),
        Some(v) => v.as_u64().ok_or_else(|| bad(format!("\"schema\" is {v}, not a version number")))?,
    };
    if schema > u64::from(SCHEMA) {
        return Err(bad(format!(
            "result schema {schema} is newer than this dentrylab reads (schema {SCHEMA}): render it with the \
             dentrylab that wrote it, or a newer one"
        )));
    }
    if schema != u64::from(SCHEMA) {
        return Err(bad(format!("unknown result schema {schema}: this dentrylab reads schema {SCHEMA}")));
    }
    let benchmark = probe.benchmark.ok_or_else(|| bad("the result has no \"benchmark\" field".into()))?;
    match benchmark.as_str() {
        "reclaim" => serde_json::from_str::<ReclaimResult>(text)
            .map(|r| Loaded::Reclaim(Box::new(r)))
            .map_err(|e| bad(format!("not a valid schema {SCHEMA} reclaim result: {e}"))),
        "pollute" => serde_json::from_str::<PolluteResult>(text)
            .map(|r| Loaded::Pollute(Box::new(r)))
            .map_err(|e| bad(format!("not a valid schema {SCHEMA} pollute result: {e}"))),
        "churn" => serde_json::from_str::<ChurnResult>(text)
            .map(|r| Loaded::Churn(Box::new(r)))
            .map_err(|e| bad(format!("not a valid schema {SCHEMA} churn result: {e}"))),
        "scale" => serde_json::from_str::<ScaleResult>(text)
            .map(|r| Loaded::Scale(Box::new(r)))
            .map_err(|e| bad(format!("not a valid schema {SCHEMA} scale result: {e}"))),
        "mitigate" => serde_json::from_str::<MitigateResult>(text)
            .map(|r| Loaded::Mitigate(Box::new(r)))
            .map_err(|e| bad(format!("not a valid schema {SCHEMA} mitigate result: {e}"))),
        "containers" => serde_json::from_str::<ContainersResult>(text)
            .map(|r| Loaded::Containers(Box::new(r)))
            .map_err(|e| bad(format!("not a valid schema {SCHEMA} containers result: {e}"))),
        b if NOT_YET.contains(&b) => {
            Err(bad(format!("this dentrylab cannot render {b:?} results yet (it renders: {})", RENDERS.join(", "))))
        }
        b => Err(bad(format!("unknown benchmark {b:?} (this dentrylab renders: {})", RENDERS.join(", ")))),
    }
}

/// A file whose `schema` is a string: a `vm` matrix, or an error naming
/// what this dentrylab reads.
fn parse_matrix(text: &str, schema: &str) -> std::result::Result<Loaded, String> {
    use super::matrix::{MatrixFile, VM_MATRIX_SCHEMA, VM_MATRIX_SCHEMA_PREFIX, VmMatrix};
    if schema == VM_MATRIX_SCHEMA {
        return serde_json::from_str::<VmMatrix>(text)
            .map(|m| Loaded::VmMatrix(Box::new(MatrixFile::new(m))))
            .map_err(|e| format!("not a valid {VM_MATRIX_SCHEMA} matrix: {e}"));
    }
    match schema.strip_prefix(VM_MATRIX_SCHEMA_PREFIX).and_then(|v| v.parse::<u32>().ok()) {
        Some(v) if v > 1 => Err(format!(
            "matrix schema {schema:?} is newer than this dentrylab reads ({VM_MATRIX_SCHEMA}): render it with the \
             dentrylab that wrote it, or a newer one"
        )),
        _ => Err(format!(
            "unknown schema {schema:?} (not a version number): this dentrylab reads results of schema {SCHEMA} and \
             {VM_MATRIX_SCHEMA} matrices"
        )),
    }
}

/// Reads and parses result files.
pub fn load(paths: &[std::path::PathBuf]) -> Result<Vec<Loaded>> {
    paths
        .iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("cannot read result file {}", p.display()))?;
            parse(&text, &p.display().to_string())
        })
        .collect()
}

/// One file of the report directory.
#[derive(Debug, Clone)]
pub struct OutputFile {
    pub name: String,
    pub contents: String,
}

/// Renders `report.md` and the plots for the results, in the order given
/// (results of one benchmark are grouped, in order of first appearance).
pub fn render(results: &[Loaded]) -> Result<Vec<OutputFile>> {
    let mut order: Vec<&str> = Vec::new();
    for l in results {
        if !order.contains(&l.benchmark()) {
            order.push(l.benchmark());
        }
    }
    let mut files = Vec::new();
    let mut parts = Vec::new();
    let mut sources = Vec::new();
    for benchmark in order {
        let (part, figures, headers) = match benchmark {
            "reclaim" => part_of(
                results.iter().filter_map(|l| if let Loaded::Reclaim(r) = l { Some(r.as_ref()) } else { None }),
            )?,
            "pollute" => part_of(
                results.iter().filter_map(|l| if let Loaded::Pollute(r) = l { Some(r.as_ref()) } else { None }),
            )?,
            "scale" => {
                part_of(results.iter().filter_map(|l| if let Loaded::Scale(r) = l { Some(r.as_ref()) } else { None }))?
            }
            "mitigate" => part_of(
                results.iter().filter_map(|l| if let Loaded::Mitigate(r) = l { Some(r.as_ref()) } else { None }),
            )?,
            "vm" => {
                let ms: Vec<&super::matrix::MatrixFile> = results
                    .iter()
                    .filter_map(|l| if let Loaded::VmMatrix(m) = l { Some(m.as_ref()) } else { None })
                    .collect();
                let (mut part, mut figures) = (String::new(), Vec::new());
                for (i, m) in ms.iter().enumerate() {
                    let file = if i == 0 {
                        "vm-matrix-longest-gap.svg".to_string()
                    } else {
                        format!("vm-matrix-{}-longest-gap.svg", i + 1)
                    };
                    let chart = svg::matrix_longest_gap(&m.matrix, &file)?;
                    part += &super::matrix::markdown(&m.matrix, Some(&chart));
                    figures.push(chart);
                }
                (part, figures, ms.iter().map(|m| (format!("matrix of {}", m.header.started_at), &m.header)).collect())
            }
            "containers" => part_of(
                results.iter().filter_map(|l| if let Loaded::Containers(r) = l { Some(r.as_ref()) } else { None }),
            )?,
            _ => {
                part_of(results.iter().filter_map(|l| if let Loaded::Churn(r) = l { Some(r.as_ref()) } else { None }))?
            }
        };
        let many = headers.len() > 1;
        sources.extend(headers.into_iter().map(|(l, h)| (if many { Some(l) } else { None }, h)));
        parts.push(part);
        files.extend(figures.into_iter().map(|f| OutputFile { name: f.file, contents: f.svg }));
    }
    files.insert(0, OutputFile { name: "report.md".into(), contents: markdown::report(&sources, &parts) });
    Ok(files)
}

/// A benchmark's part of the report, its figures drawn, and each
/// result's (label, header).
type Part<'a> = (String, Vec<svg::Figure>, Vec<(String, &'a crate::result::Header)>);

/// The part of results of one benchmark, through its [`Render`].
fn part_of<'a, R: Render + 'a>(results: impl Iterator<Item = &'a R>) -> Result<Part<'a>> {
    let rs: Vec<&R> = results.collect();
    let (labels, subtitle) = R::labels(&rs);
    let specs = R::figures(&rs, &labels, &subtitle);
    let part = markdown::render(&R::part(&rs, &labels, &subtitle, &specs));
    let figures = svg::draw_all(&specs)?;
    Ok((part, figures, rs.iter().zip(labels).map(|(&r, l)| (l, r.header())).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(schema: &str, benchmark: &str) -> String {
        format!(r#"{{"schema": {schema}, "benchmark": "{benchmark}", "command": "x", "started_at": "y"}}"#)
    }

    fn err(text: &str) -> String {
        let e = parse(text, "r.json").unwrap_err();
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
            serde_json::from_str(include_str!("../../tests/fixtures/results/reclaim-hardlink-tmpfs.json")).unwrap();
        v["runs"] = serde_json::json!([]);
        v["sizes"] = serde_json::json!([]);
        v["verdict"] = serde_json::Value::Null;
        v["fits"] = serde_json::json!({"time_linear": null, "time_power": null, "gap_linear": null, "gap_power": null});
        v["bytes_per_dentry"] = serde_json::Value::Null;
        v["refused"] = serde_json::json!([{"target": 100000, "reason": "it needs too much memory"}]);
        let loaded = parse(&v.to_string(), "empty.json").unwrap();
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
        assert!(err(&header(&cur, "frobnicate")).contains("unknown benchmark \"frobnicate\""));
        // A reclaim header with a body that is not a reclaim result.
        assert!(err(&header(&cur, "reclaim")).contains(&format!("not a valid schema {cur} reclaim result")));
    }

    /// A real scale result renders its throughput plot and one table per operation.
    #[test]
    fn scale_results_render() {
        let text = include_str!("../../tests/fixtures/results/scale-tmpfs.json");
        let files = render(&[parse(text, "scale.json").unwrap()]).unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["report.md", "scale-throughput.svg"]);
        let md = &files[0].contents;
        for op in [
            "### stat\n",
            "### stat-missing",
            "### open-close",
            "### create-unlink-shared",
            "### create-unlink-private",
        ] {
            assert!(md.contains(op), "{op} missing");
        }
        assert!(md.contains("| Threads | ops/s |"));
        let svg = &files[1].contents;
        assert!(svg.starts_with("<svg") && svg.contains("perfect scaling"));
    }
}
