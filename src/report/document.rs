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
    /// A file of its own schema (a string, such as `vm`'s matrix), not a
    /// result's version number; `None` for results of [`SCHEMA`].
    own: Option<OwnSchema>,
}

/// A schema of its own: the current one, what every version starts with,
/// and what a file of it is called (one, many).
#[derive(Clone, Copy)]
struct OwnSchema {
    schema: &'static str,
    prefix: &'static str,
    one: &'static str,
    many: &'static str,
}

impl Reader {
    /// Results of the benchmark whose result type is `R`.
    pub(crate) fn of<R: Render + DeserializeOwned + std::fmt::Debug + 'static>() -> Reader {
        fn parse<R: Render + DeserializeOwned + std::fmt::Debug + 'static>(
            text: &str,
        ) -> serde_json::Result<Box<dyn AnyResult>> {
            serde_json::from_str::<R>(text).map(|r| Box::new(r) as Box<dyn AnyResult>)
        }
        Reader { benchmark: R::BENCHMARK, kind: Some((parse::<R>, part_of::<R>)), own: None }
    }

    /// Files of their own schema `schema` (every version starts with
    /// `prefix`), read as `R`; `one` and `many` name such files in errors
    /// ("matrix", "matrices").
    pub(crate) fn of_schema<R: Render + DeserializeOwned + std::fmt::Debug + 'static>(
        schema: &'static str,
        prefix: &'static str,
        one: &'static str,
        many: &'static str,
    ) -> Reader {
        Reader { own: Some(OwnSchema { schema, prefix, one, many }), ..Reader::of::<R>() }
    }

    /// A benchmark whose results `report` cannot render yet.
    pub(crate) fn not_yet(benchmark: &'static str) -> Reader {
        Reader { benchmark, kind: None, own: None }
    }
}

/// One result file, parsed into its benchmark's result struct, and how
/// its part of the report is made.
pub(crate) struct Loaded(Box<dyn AnyResult>, PartFn);

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Loaded").field(&self.0).finish()
    }
}

impl Loaded {
    /// A result just made (`reclaim --report`).
    pub(crate) fn of<R: Render + std::fmt::Debug + 'static>(r: R) -> Loaded {
        Loaded(Box::new(r), part_of::<R>)
    }

    fn benchmark(&self) -> &'static str {
        self.0.benchmark()
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
        Some(serde_json::Value::String(s)) => return parse_own(text, &s, readers).map_err(bad),
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
    let renders = readers
        .iter()
        .filter(|r| r.kind.is_some() && r.own.is_none())
        .map(|r| r.benchmark)
        .collect::<Vec<_>>()
        .join(", ");
    match readers.iter().find(|r| r.benchmark == benchmark && r.own.is_none()) {
        Some(Reader { kind: Some((parse, part)), .. }) => parse(text)
            .map(|r| Loaded(r, *part))
            .map_err(|e| bad(format!("not a valid schema {SCHEMA} {benchmark} result: {e}"))),
        Some(Reader { kind: None, .. }) => {
            Err(bad(format!("this dentrylab cannot render {benchmark:?} results yet (it renders: {renders})")))
        }
        None => Err(bad(format!("unknown benchmark {benchmark:?} (this dentrylab renders: {renders})"))),
    }
}

/// A file whose `schema` is a string: one of a reader's own schemas (a
/// `vm` matrix), or an error naming what this dentrylab reads.
fn parse_own(text: &str, schema: &str, readers: &[Reader]) -> std::result::Result<Loaded, String> {
    let owns = || readers.iter().filter_map(|r| r.own.map(|o| (r, o)));
    if let Some((r, o)) = owns().find(|(_, o)| o.schema == schema) {
        let Some((parse, part)) = r.kind else {
            return Err(format!("this dentrylab cannot render {schema} files yet"));
        };
        return parse(text).map(|l| Loaded(l, part)).map_err(|e| format!("not a valid {schema} {}: {e}", o.one));
    }
    let version = |s: &str, o: &OwnSchema| s.strip_prefix(o.prefix).and_then(|v| v.parse::<u32>().ok());
    if let Some((_, o)) = owns()
        .find(|(_, o)| version(schema, o).is_some_and(|v| version(o.schema, o).is_some_and(|current| v > current)))
    {
        return Err(format!(
            "{} schema {schema:?} is newer than this dentrylab reads ({}): render it with the dentrylab that wrote \
             it, or a newer one",
            o.one, o.schema
        ));
    }
    let also: String = owns().map(|(_, o)| format!(" and {} {}", o.schema, o.many)).collect();
    Err(format!(
        "unknown schema {schema:?} (not a version number): this dentrylab reads results of schema {SCHEMA}{also}"
    ))
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
        let group: Vec<(&dyn AnyResult, PartFn)> =
            results.iter().filter(|l| l.benchmark() == benchmark).map(|l| (l.0.as_ref(), l.1)).collect();
        let part = group[0].1;
        let (part, figures, headers) = part(&group.iter().map(|(r, _)| *r).collect::<Vec<_>>())?;
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
