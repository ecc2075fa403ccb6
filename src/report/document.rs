//! The `report` document: saved result files in, `report.md` and SVG plots
//! out. Each file's header says which benchmark wrote it and in which schema;
//! results of the same benchmark are drawn on shared axes. Rendering is a
//! pure function of the JSON, so tests compare it against golden files.

use anyhow::{Context, Result};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::{markdown, svg};
use crate::error::UsageError;
use crate::render::{AnyResult, Render};
use crate::result::SCHEMA;

/// A benchmark's part of the report from its results (all of that
/// benchmark): [`part_of`] for its result type.
type PartFn = for<'a> fn(&[&'a dyn AnyResult]) -> Result<Part<'a>>;

/// Parses a saved result of one benchmark.
type ParseFn = fn(&str) -> serde_json::Result<Box<dyn AnyResult>>;

/// How `report` reads one benchmark's saved results: one per benchmark
/// of the registry (`cli::registry`), which hands the list to [`load`].
#[derive(Clone, Copy)]
pub(crate) struct Reader {
    pub benchmark: &'static str,
    /// `None`: dentrylab knows the benchmark but cannot render its results yet.
    kind: Option<(ParseFn, PartFn)>,
}

impl Reader {
    /// Results of the benchmark whose result type is `R`.
    pub(crate) fn of<R: Render + DeserializeOwned + std::fmt::Debug + 'static>() -> Reader {
        fn parse<R: Render + DeserializeOwned + std::fmt::Debug + 'static>(
            text: &str,
        ) -> serde_json::Result<Box<dyn AnyResult>> {
            serde_json::from_str::<R>(text).map(|r| Box::new(r) as Box<dyn AnyResult>)
        }
        Reader { benchmark: R::BENCHMARK, kind: Some((parse::<R>, part_of::<R>)) }
    }

    /// A benchmark whose results `report` cannot render yet.
    pub(crate) fn not_yet(benchmark: &'static str) -> Reader {
        Reader { benchmark, kind: None }
    }
}

/// One result file, parsed into its benchmark's result struct.
pub(crate) enum Loaded {
    /// A benchmark's result, and how its part of the report is made.
    Result(Box<dyn AnyResult>, PartFn),
    /// A `vm` matrix (its own schema, [`super::matrix::VM_MATRIX_SCHEMA`]).
    VmMatrix(Box<super::matrix::MatrixFile>),
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Loaded::Result(r, _) => f.debug_tuple("Result").field(r).finish(),
            Loaded::VmMatrix(m) => f.debug_tuple("VmMatrix").field(m).finish(),
        }
    }
}

impl Loaded {
    /// A result just made (`reclaim --report`).
    pub(crate) fn of<R: Render + std::fmt::Debug + 'static>(r: R) -> Loaded {
        Loaded::Result(Box::new(r), part_of::<R>)
    }

    fn benchmark(&self) -> &'static str {
        match self {
            Loaded::Result(r, _) => r.benchmark(),
            Loaded::VmMatrix(_) => "vm",
        }
    }
}

/// Parses one result file (`source` names it in errors) with the reader of
/// the benchmark its header names. Anything wrong with the file is bad
/// input: one line naming the file.
pub(crate) fn parse(text: &str, source: &str, readers: &[Reader]) -> Result<Loaded> {
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
    let renders = readers.iter().filter(|r| r.kind.is_some()).map(|r| r.benchmark).collect::<Vec<_>>().join(", ");
    match readers.iter().find(|r| r.benchmark == benchmark) {
        Some(Reader { kind: Some((parse, part)), .. }) => parse(text)
            .map(|r| Loaded::Result(r, *part))
            .map_err(|e| bad(format!("not a valid schema {SCHEMA} {benchmark} result: {e}"))),
        Some(Reader { kind: None, .. }) => {
            Err(bad(format!("this dentrylab cannot render {benchmark:?} results yet (it renders: {renders})")))
        }
        None => Err(bad(format!("unknown benchmark {benchmark:?} (this dentrylab renders: {renders})"))),
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
pub(crate) fn load(paths: &[std::path::PathBuf], readers: &[Reader]) -> Result<Vec<Loaded>> {
    paths
        .iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("cannot read result file {}", p.display()))?;
            parse(&text, &p.display().to_string(), readers)
        })
        .collect()
}

/// One file of the report directory.
#[derive(Debug, Clone)]
pub(crate) struct OutputFile {
    pub name: String,
    pub contents: String,
}

/// Renders `report.md` and the plots for the results, in the order given
/// (results of one benchmark are grouped, in order of first appearance).
pub(crate) fn render(results: &[Loaded]) -> Result<Vec<OutputFile>> {
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
        let (part, figures, headers) = if benchmark == "vm" {
            matrices(results)?
        } else {
            let group: Vec<(&dyn AnyResult, PartFn)> = results
                .iter()
                .filter_map(|l| match l {
                    Loaded::Result(r, part) if r.benchmark() == benchmark => Some((r.as_ref(), *part)),
                    Loaded::Result(..) | Loaded::VmMatrix(_) => None,
                })
                .collect();
            let part = group[0].1;
            part(&group.iter().map(|(r, _)| *r).collect::<Vec<_>>())?
        };
        let many = headers.len() > 1;
        sources.extend(headers.into_iter().map(|(l, h)| (if many { Some(l) } else { None }, h)));
        parts.push(part);
        files.extend(figures.into_iter().map(|f| OutputFile { name: f.file, contents: f.svg }));
    }
    files.insert(0, OutputFile { name: "report.md".into(), contents: markdown::report(&sources, &parts) });
    Ok(files)
}

/// The `vm` matrices' part: a table and a chart per matrix.
fn matrices(results: &[Loaded]) -> Result<Part<'_>> {
    let ms: Vec<&super::matrix::MatrixFile> =
        results.iter().filter_map(|l| if let Loaded::VmMatrix(m) = l { Some(m.as_ref()) } else { None }).collect();
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
    Ok((part, figures, ms.iter().map(|m| (format!("matrix of {}", m.header.started_at), &m.header)).collect()))
}

/// A benchmark's part of the report, its figures drawn, and each
/// result's (label, header).
type Part<'a> = (String, Vec<svg::Figure>, Vec<(String, &'a crate::result::Header)>);

/// The part of results of one benchmark (all of result type `R`), through
/// its [`Render`].
fn part_of<'a, R: Render + 'static>(results: &[&'a dyn AnyResult]) -> Result<Part<'a>> {
    let rs: Vec<&'a R> = results.iter().filter_map(|r| r.as_any().downcast_ref::<R>()).collect();
    anyhow::ensure!(rs.len() == results.len(), "results of {} that are not of its result type", R::BENCHMARK);
    let (labels, subtitle) = R::labels(&rs);
    let specs = R::figures(&rs, &labels, &subtitle);
    let part = markdown::render(&R::part(&rs, &labels, &subtitle, &specs));
    let figures = svg::draw_all(&specs)?;
    Ok((part, figures, rs.iter().zip(labels).map(|(&r, l)| (l, r.header())).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench;

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
            serde_json::from_str(include_str!("../../tests/fixtures/results/reclaim-hardlink-tmpfs.json")).unwrap();
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
        let text = include_str!("../../tests/fixtures/results/scale-tmpfs.json");
        let files = render(&[parse(text, "scale.json", &readers()).unwrap()]).unwrap();
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
