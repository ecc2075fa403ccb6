//! The recorded `mitigate` results `advise` judges the knobs from: files
//! the user names (`--mitigate FILE`) or the ones shipped with dentrylab
//! (`docs/results/mitigate-*.json` and `docs/results/memory-limit-6.18/`,
//! built into the binary). Only the fields advise reads are parsed, so
//! this file does not depend on `mitigate`'s own types (status sits beside
//! the benchmarks, not above them); a file of another benchmark or schema
//! is refused with its name.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

/// The `mitigate` result schema this reader knows.
pub(crate) const MITIGATE_SCHEMA: u32 = 2;

/// One recorded `mitigate` run, with where it came from.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Recorded {
    #[serde(skip)]
    pub source: String,
    pub environment: Env,
    pub options: RecordedOptions,
    pub rows: Vec<RecordedRow>,
    #[serde(default)]
    pub memory_limit_sweep: Option<Sweep>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Env {
    pub kernel: String,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RecordedOptions {
    /// `"mariadb"`, `"containers"` or `{"steady": "lookups"}`.
    pub workload: serde_json::Value,
    pub fs: String,
    pub reps: u32,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RecordedRow {
    /// `[knob, value]` pairs; the first row is the baseline.
    pub settings: Vec<(String, serde_json::Value)>,
    #[serde(default)]
    pub server_options: Vec<(String, String)>,
    /// `None` when every repetition was OOM-killed.
    pub summary: Option<Summary>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Summary {
    pub runs: Vec<Run>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Run {
    pub ops_per_second: f64,
    pub dentries_per_1000_ops: f64,
    pub longest_stretch_seconds: Option<f64>,
    #[serde(default)]
    pub longest_drop_stretch_seconds: Option<f64>,
    #[serde(default)]
    pub longest_drop_write_seconds: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Sweep {
    pub outcomes: Vec<LimitOutcome>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct LimitOutcome {
    pub limit_bytes: u64,
    pub reps: u32,
    pub oom_killed: u32,
    pub limit_reached: u32,
    #[serde(default)]
    pub failing_allocation: Option<String>,
}

impl Recorded {
    /// The workload's name: `lookups`, `mariadb`, `containers`, ...
    pub(crate) fn workload(&self) -> String {
        match &self.options.workload {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Object(m) => {
                m.values().next().and_then(|v| v.as_str()).map_or_else(|| "unknown".into(), str::to_string)
            }
            _ => "unknown".into(),
        }
    }

    /// `workload on fs (kernel, N reps, source)`: where a figure comes from.
    pub(crate) fn named(&self) -> String {
        format!(
            "{} on {} (kernel {}, {} rep{}; {})",
            self.workload(),
            self.options.fs,
            self.environment.kernel,
            self.options.reps,
            if self.options.reps == 1 { "" } else { "s" },
            self.source
        )
    }

    fn parse(text: &str, source: &str) -> Result<Recorded> {
        let v: serde_json::Value = serde_json::from_str(text).with_context(|| format!("{source}: not JSON"))?;
        let bench = v.get("benchmark").and_then(|b| b.as_str()).unwrap_or("");
        if bench != "mitigate" {
            bail!(
                "{source}: not a mitigate result (benchmark {bench:?}): give a file written by `dentrylab mitigate --json`"
            );
        }
        let schema = v.get("schema").and_then(serde_json::Value::as_u64).unwrap_or(0);
        if schema != u64::from(MITIGATE_SCHEMA) {
            bail!("{source}: mitigate schema {schema}, this dentrylab reads schema {MITIGATE_SCHEMA}");
        }
        let mut r: Recorded =
            serde_json::from_value(v).with_context(|| format!("{source}: not the shape of a mitigate result"))?;
        r.source = source.to_string();
        Ok(r)
    }

    /// A file the user names.
    pub(crate) fn read(path: &Path) -> Result<Recorded> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("--mitigate {}: cannot read", path.display()))?;
        Recorded::parse(&text, &path.display().to_string())
    }
}

/// The shipped results: their path in the repository and their text.
const SHIPPED: &[(&str, &str)] = &[
    ("docs/results/mitigate-mariadb-6.18.json", include_str!("../../../docs/results/mitigate-mariadb-6.18.json")),
    ("docs/results/mitigate-containers-6.18.json", include_str!("../../../docs/results/mitigate-containers-6.18.json")),
    ("docs/results/mitigate-drop-6.18.json", include_str!("../../../docs/results/mitigate-drop-6.18.json")),
    ("docs/results/mitigate-pressure-6.18.json", include_str!("../../../docs/results/mitigate-pressure-6.18.json")),
    (
        "docs/results/memory-limit-6.18/lookups-ext4.json",
        include_str!("../../../docs/results/memory-limit-6.18/lookups-ext4.json"),
    ),
    (
        "docs/results/memory-limit-6.18/lookups-xfs.json",
        include_str!("../../../docs/results/memory-limit-6.18/lookups-xfs.json"),
    ),
    (
        "docs/results/memory-limit-6.18/temp-tables-ext4.json",
        include_str!("../../../docs/results/memory-limit-6.18/temp-tables-ext4.json"),
    ),
    (
        "docs/results/memory-limit-6.18/files-ext4.json",
        include_str!("../../../docs/results/memory-limit-6.18/files-ext4.json"),
    ),
    (
        "docs/results/memory-limit-6.18/mariadb-ext4.json",
        include_str!("../../../docs/results/memory-limit-6.18/mariadb-ext4.json"),
    ),
];

/// The results shipped with dentrylab (recorded on this project's 6.18 VM).
pub(crate) fn shipped() -> Result<Vec<Recorded>> {
    SHIPPED.iter().map(|(name, text)| Recorded::parse(text, &format!("shipped {name}"))).collect()
}

/// The user's files, or the shipped ones when none is named.
pub(crate) fn load(files: &[std::path::PathBuf]) -> Result<Vec<Recorded>> {
    if files.is_empty() {
        return shipped();
    }
    files.iter().map(|f| Recorded::read(f)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_result_parses_and_names_its_source() {
        let all = shipped().unwrap();
        assert_eq!(all.len(), SHIPPED.len());
        assert!(all.iter().all(|r| !r.rows.is_empty() && r.source.starts_with("shipped docs/results/")));
        let m = all.iter().find(|r| r.workload() == "mariadb" && r.memory_limit_sweep.is_none()).unwrap();
        assert!(m.named().starts_with("mariadb on ext4 (kernel 6.18"), "{}", m.named());
        assert!(m.named().contains("shipped docs/results/mitigate-mariadb-6.18.json"));
        assert!(all.iter().any(|r| r.memory_limit_sweep.is_some()));
    }

    #[test]
    fn other_results_are_refused_by_name() {
        let e = Recorded::parse(r#"{"schema":2,"benchmark":"reclaim"}"#, "x.json").unwrap_err();
        assert!(format!("{e:#}").contains("x.json: not a mitigate result"), "{e:#}");
        let e = Recorded::parse(r#"{"schema":9,"benchmark":"mitigate"}"#, "y.json").unwrap_err();
        assert!(format!("{e:#}").contains("y.json: mitigate schema 9"), "{e:#}");
        let e = Recorded::parse("nope", "z.json").unwrap_err();
        assert!(format!("{e:#}").contains("z.json: not JSON"), "{e:#}");
    }
}
