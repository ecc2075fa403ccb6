//! The `count` file of a shrinker in debugfs (`/sys/kernel/debug/shrinker/
//! <name>-<id>/count`, kernels built with `CONFIG_SHRINKER_DEBUG`): one line
//! per memory cgroup holding objects, `<cgroup inode> <count on node 0>
//! [<count on node 1> ...]`; a shrinker that is not memcg-aware prints one
//! line with cgroup inode 0. For a superblock's shrinker (`sb-<fstype>-<id>`)
//! the count is what `super_cache_count()` returns: the dentries and inodes
//! on that superblock's LRUs (plus filesystem-private objects, e.g. XFS
//! inodes being reclaimed).

use std::io::BufRead;

use anyhow::{Context, Result, bail};

/// (cgroup inode, objects summed over NUMA nodes).
pub(crate) fn parse_count(r: impl BufRead) -> Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    for (i, line) in r.lines().enumerate() {
        let line = line.context("shrinker count: cannot read")?;
        let mut it = line.split_whitespace();
        let Some(ino) = it.next() else { continue };
        let ino = super::num("shrinker count", &format!("line {} cgroup inode", i + 1), Some(ino))?;
        let mut sum = 0u64;
        let mut n = 0;
        for tok in it {
            sum += super::num("shrinker count", &format!("line {} node count", i + 1), Some(tok))?;
            n += 1;
        }
        if n == 0 {
            bail!("shrinker count: line {}: no per-node count after the cgroup inode: {line:?}", i + 1);
        }
        out.push((ino, sum));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_sum_over_nodes() {
        let v = parse_count("1 12 3\n2345 200000 0\n\n".as_bytes()).unwrap();
        assert_eq!(v, vec![(1, 15), (2345, 200000)]);
        let e = parse_count("77\n".as_bytes()).unwrap_err();
        assert!(format!("{e:#}").contains("line 1"), "{e:#}");
        assert!(parse_count("x 1\n".as_bytes()).is_err());
    }
}
