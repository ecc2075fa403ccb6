//! `/proc/slabinfo` (version 2.1): one cache's line. Needs root, and is
//! costly to read on a node with a huge slab, so dentrylab reads it only
//! around a benchmark, never on every exporter scrape.

use std::io::BufRead;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::num;

const FILE: &str = "slabinfo";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlabCache {
    pub name: String,
    pub active_objs: u64,
    pub num_objs: u64,
    pub objsize_bytes: u64,
    pub objperslab: u64,
    pub pagesperslab: u64,
}

/// Finds the line for cache `name`. `Ok(None)` when the cache is absent.
pub(crate) fn find(r: impl BufRead, name: &str) -> Result<Option<SlabCache>> {
    let mut lines = r.lines();
    let header = lines.next().transpose().with_context(|| format!("{FILE}: cannot read"))?.unwrap_or_default();
    if !header.starts_with("slabinfo - version: 2.") {
        bail!("{FILE}: unsupported header {header:?} (expected version 2.x)");
    }
    for line in lines {
        let line = line.with_context(|| format!("{FILE}: cannot read"))?;
        let mut it = line.split_whitespace();
        if it.next() != Some(name) {
            continue;
        }
        return Ok(Some(SlabCache {
            name: name.to_string(),
            active_objs: num(FILE, "active_objs", it.next())?,
            num_objs: num(FILE, "num_objs", it.next())?,
            objsize_bytes: num(FILE, "objsize", it.next())?,
            objperslab: num(FILE, "objperslab", it.next())?,
            pagesperslab: num(FILE, "pagesperslab", it.next())?,
        }));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::fixture_dir;

    #[test]
    fn finds_dentry_in_fixtures() {
        for k in ["6.18", "5.10"] {
            let f = std::fs::File::open(fixture_dir(k).join("slabinfo")).unwrap();
            let c = find(std::io::BufReader::new(f), "dentry").unwrap().unwrap();
            assert_eq!(c.objsize_bytes, 192, "{k}");
            assert!(c.num_objs >= c.active_objs);
        }
    }

    #[test]
    fn absent_cache_and_bad_header() {
        let text = "slabinfo - version: 2.1\n# name ...\nfilp 10 10 256 16 1 : tunables 0 0 0\n";
        assert_eq!(find(text.as_bytes(), "dentry").unwrap(), None);
        assert!(find("slabinfo - version: 1.1\n".as_bytes(), "dentry").is_err());
        let bad = "slabinfo - version: 2.1\ndentry 10 x 192 21 1\n";
        let msg = format!("{:#}", find(bad.as_bytes(), "dentry").unwrap_err());
        assert!(msg.contains("num_objs"), "{msg}");
    }
}
