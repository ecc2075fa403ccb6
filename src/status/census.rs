//! `status --census` (and the exporter's census collector): the top
//! directories per filesystem (superblock), from a census of the dentry
//! hash table (`census`), sampled by default. Where the census cannot run
//! (no /proc/kcore, no BTF, not root), one line says why and the rest of
//! the status goes on without it.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::census::{self, FsRow, Source, Survey, Walk};
use crate::procfs::ProcRoot;

/// Directories per filesystem unless asked otherwise.
pub(crate) const DEFAULT_TOP: usize = 5;
/// Filesystems listed (those with the most dentries first).
pub(crate) const MAX_FILESYSTEMS: usize = 16;

#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub source: Source,
    /// Fraction of the hash buckets (1: a full walk).
    pub fraction: f64,
    /// Directories per filesystem.
    pub top: usize,
}

/// The census as status reports it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct NodeCensus {
    /// Why there is no census (one line: no /proc/kcore, no BTF, not root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walk: Option<Walk>,
    /// `nr_dentry` after the walk, and the hashed dentries found (estimated on a sample).
    #[serde(default)]
    pub nr_dentry: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hashed: Option<crate::analysis::census::Estimate>,
    /// The filesystems with the most dentries (at most [`MAX_FILESYSTEMS`]),
    /// each with its top directories.
    #[serde(default)]
    pub filesystems: Vec<FsRow>,
    /// Filesystems left out of that list.
    #[serde(default)]
    pub filesystems_left_out: u64,
}

/// Walks the table now; a census that cannot run is a [`NodeCensus`]
/// saying why, never an error.
pub(crate) fn collect(o: &Options, proc: &ProcRoot) -> NodeCensus {
    let survey = Survey { fraction: o.fraction, top: o.top, ..Survey::default() };
    match census::survey_of(&o.source, proc, &survey, &|_| {}) {
        Ok(mut r) => {
            let left = r.filesystems.len().saturating_sub(MAX_FILESYSTEMS) as u64;
            r.filesystems.truncate(MAX_FILESYSTEMS);
            NodeCensus {
                unavailable: None,
                walk: Some(r.walk),
                nr_dentry: r.nr_dentry,
                hashed: Some(r.hashed),
                filesystems: r.filesystems,
                filesystems_left_out: left,
            }
        }
        Err(e) => NodeCensus {
            unavailable: Some(format!("{e:#}").replace('\n', " ")),
            walk: None,
            nr_dentry: 0,
            hashed: None,
            filesystems: vec![],
            filesystems_left_out: 0,
        },
    }
}

/// The census part of `status`'s text.
pub(crate) fn text(c: &NodeCensus) -> String {
    let mut s = String::new();
    let Some(w) = &c.walk else {
        let _ = writeln!(s, "\ncensus: none ({})", c.unavailable.as_deref().unwrap_or("not run"));
        return s;
    };
    let exact = w.mode == "full";
    let _ = writeln!(
        s,
        "\ncensus ({}, {}): {} dentries walked in {:.2} s, {} rejected reads; counts {}",
        if exact { "full walk".to_string() } else { format!("{:.3}% sample of the hash buckets", w.fraction * 100.0) },
        w.backend,
        w.dentries_walked,
        w.seconds,
        w.rejected.total(),
        if exact { "exact" } else { "estimated, with their 90% interval" }
    );
    for f in &c.filesystems {
        let _ = writeln!(
            s,
            "  {} {} {}: {} dentries, {} negative",
            f.fs_type,
            f.dev,
            f.mount_point.as_deref().unwrap_or("(not mounted here)"),
            census::table::est(&f.total, exact),
            census::table::est(&f.negative, exact)
        );
        for d in &f.top {
            let _ = writeln!(
                s,
                "    {:>22} total {:>22} negative  {}",
                census::table::est(&d.total, exact),
                census::table::est(&d.negative, exact),
                d.path
            );
        }
    }
    if c.filesystems_left_out > 0 {
        let _ = writeln!(s, "  ({} filesystems with fewer dentries not listed)", c.filesystems_left_out);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_kcore_is_one_line_and_no_error() {
        let dir = tempfile::tempdir().unwrap();
        let proc = ProcRoot::new(dir.path());
        let o = Options { source: Source::of(&proc), fraction: 0.01, top: DEFAULT_TOP };
        let c = collect(&o, &proc);
        let why = c.unavailable.clone().expect("unavailable");
        assert!(why.contains("kcore does not exist") && why.contains("CONFIG_PROC_KCORE"), "{why}");
        let t = text(&c);
        assert_eq!(t.trim().lines().count(), 1, "{t}");
        assert!(t.contains("census: none"), "{t}");
    }

    #[test]
    fn the_top_directories_per_filesystem_by_path() {
        let dir = tempfile::tempdir().unwrap();
        let (source, proc) = crate::census::synthetic::small(dir.path());
        let c = collect(&Options { source, fraction: 1.0, top: 1 }, &proc);
        assert_eq!(c.unavailable, None);
        assert_eq!(c.filesystems.len(), 2);
        let tops: Vec<(&str, u64)> =
            c.filesystems.iter().map(|f| (f.top[0].path.as_str(), f.top[0].total.found)).collect();
        assert_eq!(tops, [("/mnt/t/a", 320), ("/var/x/c", 120)]);
        let t = text(&c);
        assert!(t.contains("full walk") && t.contains("1 rejected reads") && t.contains("/mnt/t/a"), "{t}");
        // Half the buckets: estimates with their interval.
        let source = crate::census::Source {
            kcore: dir.path().join("kcore"),
            btf: dir.path().join("btf"),
            backend: crate::census::Choice::Kcore,
            bpf: Default::default(),
        };
        let c = collect(&Options { source, fraction: 0.5, top: 1 }, &proc);
        let w = c.walk.as_ref().unwrap();
        assert_eq!((w.mode.as_str(), w.fraction), ("sample", 0.5));
        let a = &c.filesystems.iter().find(|f| f.fs_type == "tmpfs").unwrap().total;
        assert!(a.low <= a.estimate && a.estimate <= a.high && a.low < a.high, "{a:?}");
        assert!(text(&c).contains("estimated, with their 90% interval"));
    }
}
