//! `--census` on the commands that fill directories themselves (`reclaim`,
//! `containers`): a full census once the workload has made its entries,
//! naming the top directory of the workload's filesystem and checking it,
//! and every directory the workload filled, against what it created.

use serde::{Deserialize, Serialize};

use super::{CensusResult, Expected, Source, Survey, survey_of};
use crate::procfs::ProcRoot;

/// What the census said about a workload's own directories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Named {
    /// The (first) directory the workload filled.
    pub workload_directory: String,
    /// `negative`, `hardlink`, …
    pub kind: String,
    /// Entries the workload made there.
    pub created: u64,
    /// Children of that kind the census found there.
    pub found: u64,
    /// The directory with the most children on the workload's filesystem,
    /// by path; `None` when the census found none there.
    pub top_directory: Option<String>,
    /// Its children of the workload's kind.
    pub top_count: u64,
    /// Directories the workload filled, and how many of them the census
    /// found with their exact count.
    pub directories: u64,
    pub exact: u64,
    /// The top directory is one the workload filled, and every one of them
    /// holds exactly what it made.
    pub ok: bool,
    pub dentries_walked: u64,
    pub seconds: f64,
    pub rejected_reads: u64,
}

impl Named {
    /// One line for people.
    pub(crate) fn line(&self) -> String {
        format!(
            "census check: top directory of the workload's filesystem {} ({} {} children); the workload made {} in {} \
             and the census found {}; {} of {} directories exact: {} (full walk of {} dentries in {:.2} s, {} \
             rejected reads)",
            self.top_directory.as_deref().unwrap_or("(none found)"),
            self.top_count,
            self.kind,
            self.created,
            self.workload_directory,
            self.found,
            self.exact,
            self.directories,
            if self.ok { "ok" } else { "MISMATCH" },
            self.dentries_walked,
            self.seconds,
            self.rejected_reads
        )
    }
}

/// From a census that checked `expected`: the check.
pub(crate) fn named(r: &CensusResult, expected: &Expected) -> Named {
    let first = expected.directories.first().map(|(p, n)| (p.to_string_lossy().into_owned(), *n));
    let (dir, created) = first.unwrap_or_default();
    // The workload's filesystem: the one mounted closest above its directory.
    let fs = r
        .filesystems
        .iter()
        .filter(|f| f.mount_point.as_ref().is_some_and(|m| std::path::Path::new(&dir).starts_with(m)))
        .max_by_key(|f| f.mount_point.as_ref().map_or(0, String::len));
    let top = fs.and_then(|f| f.top.first());
    let of_kind = |e: &super::DirRow| if expected.negative { e.negative.found } else { e.positive.found };
    let mine = |p: &str| expected.directories.iter().any(|(d, _)| d.to_string_lossy() == p);
    let exact = r.planted.iter().filter(|c| c.ok && mine(&c.path)).count() as u64;
    let directories = expected.directories.len() as u64;
    Named {
        found: r.planted.iter().find(|c| c.path == dir).map_or(0, |c| c.found.found),
        workload_directory: dir,
        kind: expected.kind.clone(),
        created,
        top_directory: top.map(|t| t.path.clone()),
        top_count: top.map_or(0, of_kind),
        directories,
        exact,
        ok: exact == directories && (directories == 0 || top.is_some_and(|t| mine(&t.path))),
        dentries_walked: r.walk.dentries_walked,
        seconds: r.walk.seconds,
        rejected_reads: r.walk.rejected.total(),
    }
}

/// A full census now, checking the workload's directories.
pub(crate) fn check(src: &Source, proc: &ProcRoot, expected: &Expected) -> anyhow::Result<Named> {
    let survey = Survey { fraction: 1.0, top: 1, fs: None, expected: vec![expected.clone()], churn: None };
    let r = survey_of(src, proc, &survey, &|_| {})?;
    Ok(named(&r, expected))
}
