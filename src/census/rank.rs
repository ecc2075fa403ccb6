//! From the walk's tally to named, ranked rows: filesystems by their
//! dentries, directories by their negative and total children, and the
//! check of planted directories. Directories are named by path (the
//! filesystem's mount point here, then the path rebuilt from `d_parent`),
//! never by kernel address.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::plant::{Check, Expected};
use crate::analysis::census::{Estimate, estimate};
use crate::probe::census::{PathCache, Superblock, Tally, Walker};
use crate::procfs::mountinfo::Mount;

/// A directory: (superblock, dentry) and its [positive, negative] children.
type DirCount = ((u64, u64), [u64; 2]);

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct DirRow {
    pub path: String,
    pub fs_type: String,
    /// `MAJOR:MINOR` of the filesystem.
    pub dev: String,
    pub negative: Estimate,
    pub positive: Estimate,
    pub total: Estimate,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FsRow {
    pub fs_type: String,
    pub dev: String,
    /// The superblock's `s_id`.
    pub id: String,
    /// Where it is mounted in this process's mount namespace, if it is.
    pub mount_point: Option<String>,
    pub negative: Estimate,
    pub positive: Estimate,
    pub total: Estimate,
    /// Directories with at least one hashed child found.
    pub directories: u64,
    /// Its top directories by total children.
    pub top: Vec<DirRow>,
}

fn dev_string(dev: u32) -> String {
    format!("{}:{}", dev >> 20, dev & 0xfffff)
}

/// The mount that shows `sb` best: its whole root if mounted so.
fn mount_of<'m>(sb: &Superblock, mounts: &'m [Mount]) -> Option<&'m Mount> {
    let mut ms = mounts.iter().filter(|m| m.dev == sb.dev);
    let all: Vec<&Mount> = ms.by_ref().collect();
    all.iter().find(|m| m.root == "/").or(all.first()).copied()
}

/// A directory's path as this process sees it.
pub(crate) fn display_path(
    census: &dyn Walker,
    sb: &Superblock,
    dir: u64,
    mounts: &[Mount],
    cache: &mut PathCache,
) -> String {
    let Some(inner) = census.path(sb.addr, dir, cache) else {
        return format!("({} {}: path unreadable)", sb.fs_type, dev_string(sb.dev));
    };
    match mount_of(sb, mounts) {
        Some(m) if m.root == "/" => {
            if inner == "/" {
                m.mount_point.clone()
            } else {
                format!("{}{inner}", m.mount_point.trim_end_matches('/'))
            }
        }
        Some(m) if inner.starts_with(&m.root) => {
            format!("{}{}", m.mount_point.trim_end_matches('/'), &inner[m.root.len()..])
        }
        _ => format!("{} {}:{inner}", sb.fs_type, dev_string(sb.dev)),
    }
}

fn row(census: &dyn Walker, key: (u64, u64), c: [u64; 2], f: f64, mounts: &[Mount], cache: &mut PathCache) -> DirRow {
    let sb = &census.superblocks()[&key.0];
    DirRow {
        path: display_path(census, sb, key.1, mounts, cache),
        fs_type: sb.fs_type.clone(),
        dev: dev_string(sb.dev),
        negative: estimate(c[1], f),
        positive: estimate(c[0], f),
        total: estimate(c[0] + c[1], f),
    }
}

/// Filesystems (by total, with their top directories), the top
/// directories by negative children and by total children.
pub(crate) fn rank(
    census: &dyn Walker,
    tally: &Tally,
    mounts: &[Mount],
    f: f64,
    top: usize,
    fs: Option<&str>,
    cache: &mut PathCache,
) -> (Vec<FsRow>, Vec<DirRow>, Vec<DirRow>) {
    let keep = |sb: u64| fs.is_none_or(|t| census.superblocks().get(&sb).is_some_and(|s| s.fs_type == t));
    let mut dirs: Vec<DirCount> = tally.by_parent.iter().filter(|(k, _)| keep(k.0)).map(|(k, v)| (*k, *v)).collect();
    // Ties broken by address only to make the order stable.
    dirs.sort_by_key(|(k, c)| (std::cmp::Reverse(c[0] + c[1]), *k));
    let top_total: Vec<DirRow> = dirs.iter().take(top).map(|(k, c)| row(census, *k, *c, f, mounts, cache)).collect();
    let mut by_neg = dirs.clone();
    by_neg.sort_by_key(|(k, c)| (std::cmp::Reverse(c[1]), *k));
    let top_negative: Vec<DirRow> =
        by_neg.iter().filter(|(_, c)| c[1] > 0).take(top).map(|(k, c)| row(census, *k, *c, f, mounts, cache)).collect();
    let mut per_sb: HashMap<u64, ([u64; 2], Vec<DirCount>)> = HashMap::new();
    for (k, c) in &dirs {
        let e = per_sb.entry(k.0).or_default();
        e.0[0] += c[0];
        e.0[1] += c[1];
        e.1.push((*k, *c));
    }
    let mut fss: Vec<FsRow> = per_sb
        .into_iter()
        .map(|(sb, (c, ds))| {
            let s = &census.superblocks()[&sb];
            FsRow {
                fs_type: s.fs_type.clone(),
                dev: dev_string(s.dev),
                id: s.id.clone(),
                mount_point: mount_of(s, mounts).map(|m| m.mount_point.clone()),
                negative: estimate(c[1], f),
                positive: estimate(c[0], f),
                total: estimate(c[0] + c[1], f),
                directories: ds.len() as u64,
                top: ds.iter().take(top).map(|(k, c)| row(census, *k, *c, f, mounts, cache)).collect(),
            }
        })
        .collect();
    fss.sort_by(|a, b| b.total.found.cmp(&a.total.found).then(a.dev.cmp(&b.dev)));
    (fss, top_negative, top_total)
}

/// The mount whose mount point holds `path` most closely.
fn mount_holding<'m>(path: &Path, mounts: &'m [Mount]) -> Option<&'m Mount> {
    mounts.iter().filter(|m| path.starts_with(&m.mount_point)).max_by_key(|m| m.mount_point.len())
}

/// For each expected directory (planted, or a workload's), what the census
/// found there.
pub(crate) fn check(
    census: &dyn Walker,
    tally: &Tally,
    mounts: &[Mount],
    f: f64,
    expected: &[Expected],
    cache: &mut PathCache,
) -> Vec<Check> {
    let mut out = Vec::new();
    for e in expected {
        let Some((first, _)) = e.directories.first() else { continue };
        let dev = mount_holding(first, mounts).map(|m| m.dev);
        // Every directory of that filesystem, by its path.
        let mut by_path: HashMap<String, [u64; 2]> = HashMap::new();
        for (k, c) in &tally.by_parent {
            let Some(sb) = census.superblocks().get(&k.0) else { continue };
            if Some(sb.dev) == dev {
                by_path.insert(display_path(census, sb, k.1, mounts, cache), *c);
            }
        }
        for (dir, n) in &e.directories {
            let path = dir.to_string_lossy().into_owned();
            let c = by_path.get(&path).copied().unwrap_or_default();
            let (found, other) = if e.negative { (c[1], c[0]) } else { (c[0], c[1]) };
            let (found, other) = (estimate(found, f), estimate(other, f));
            let n = *n;
            let ok =
                if f >= 1.0 { found.found == n && other.found == 0 } else { found.contains(n) && other.contains(0) };
            out.push(Check { path, kind: e.kind.clone(), planted: n, found, other, ok });
        }
    }
    out
}
