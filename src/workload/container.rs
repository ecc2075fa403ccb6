//! What a container does to the dcache in its life (`dentrylab containers
//! --workload`): the operations run in the container's merged overlay
//! directory, on the image laid out by [`prepare_image`].
//!
//! - `temp-tables`: create a file, write 4 KiB, unlink it, with a name no
//!   other container uses, in `tmp/` (an on-disk temporary table);
//! - `lookups`: stat a name that does not exist, spread over
//!   [`LOOKUP_DIRS`] directories (NSS- or curl-style probes for missing
//!   files); the names are this container's own;
//! - `files`: create a file and keep it, in `data/` (file-per-table);
//! - `mixed=temp-tables=60,lookups=30,files=10`: a share of each, in
//!   percent, interleaved evenly.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// Directories the `lookups` probes are spread over.
pub(crate) const LOOKUP_DIRS: u32 = 8;
/// Bytes a temporary table writes before it is unlinked.
pub(crate) const TEMP_TABLE_BYTES: usize = 4096;
/// The shares `mixed` takes when none are given.
pub(crate) const DEFAULT_MIX: Mix = Mix { temp_tables: 60, lookups: 30, files: 10 };

/// A workload as shares of the three operations, in percent (sum 100).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Mix {
    pub temp_tables: u32,
    pub lookups: u32,
    pub files: u32,
}

impl Mix {
    /// The name as given on the command line.
    pub(crate) fn name(&self) -> String {
        match (self.temp_tables, self.lookups, self.files) {
            (100, 0, 0) => "temp-tables".into(),
            (0, 100, 0) => "lookups".into(),
            (0, 0, 100) => "files".into(),
            (t, l, f) => format!("mixed=temp-tables={t},lookups={l},files={f}"),
        }
    }

    /// The next operation, given how many of each ran so far (`done`,
    /// updated): the one furthest behind its share, so that after any
    /// number of operations each count is within one of its share.
    pub(crate) fn next(&self, done: &mut [u64; 3]) -> Op {
        let n: u64 = done.iter().sum::<u64>() + 1;
        let shares = [self.temp_tables, self.lookups, self.files];
        let behind = |k: usize| (n * u64::from(shares[k])) as i128 - 100 * done[k] as i128;
        let k = (0..3).filter(|&k| shares[k] > 0).max_by_key(|&k| (behind(k), std::cmp::Reverse(k))).unwrap_or(0);
        done[k] += 1;
        [Op::TempTable, Op::Lookup, Op::File][k]
    }
}

impl std::str::FromStr for Mix {
    type Err = String;
    fn from_str(s: &str) -> Result<Mix, String> {
        match s {
            "temp-tables" => return Ok(Mix { temp_tables: 100, lookups: 0, files: 0 }),
            "lookups" => return Ok(Mix { temp_tables: 0, lookups: 100, files: 0 }),
            "files" => return Ok(Mix { temp_tables: 0, lookups: 0, files: 100 }),
            "mixed" => return Ok(DEFAULT_MIX),
            _ => {}
        }
        let Some(shares) = s.strip_prefix("mixed=") else {
            return Err(format!(
                "unknown workload {s:?}: use temp-tables, lookups, files or mixed=temp-tables=60,lookups=30,files=10"
            ));
        };
        let mut mix = Mix { temp_tables: 0, lookups: 0, files: 0 };
        let mut seen = Vec::new();
        for part in shares.split(',') {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| format!("mixed share {part:?} is not NAME=PERCENT (for example temp-tables=60)"))?;
            let v: u32 = value
                .trim()
                .parse()
                .ok()
                .filter(|&v| v <= 100)
                .ok_or_else(|| format!("mixed share {part:?}: {value:?} is not a percentage from 0 to 100"))?;
            let slot = match name.trim() {
                "temp-tables" => &mut mix.temp_tables,
                "lookups" => &mut mix.lookups,
                "files" => &mut mix.files,
                n => {
                    return Err(format!("mixed share {part:?}: unknown operation {n:?} (temp-tables, lookups, files)"));
                }
            };
            if seen.contains(&name.trim()) {
                return Err(format!("mixed share {:?} is given twice", name.trim()));
            }
            seen.push(name.trim());
            *slot = v;
        }
        let sum = mix.temp_tables + mix.lookups + mix.files;
        if sum != 100 {
            return Err(format!("mixed shares sum to {sum}, not 100 ({s})"));
        }
        Ok(mix)
    }
}

/// One operation of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    TempTable,
    Lookup,
    File,
}

/// What one container's workload did.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Outcome {
    pub temp_tables: u64,
    pub lookups: u64,
    pub files: u64,
    pub seconds: f64,
}

impl Outcome {
    /// Names that were new to the image (each looked up in the lower layer).
    pub(crate) fn new_names(&self) -> u64 {
        self.temp_tables + self.lookups + self.files
    }
}

/// Lays out the image (the lower layer) under `image`.
pub(crate) fn prepare_image(image: &Path) -> Result<()> {
    let mut dirs = vec![image.join("tmp"), image.join("data")];
    dirs.extend((0..LOOKUP_DIRS).map(|d| image.join("probe").join(format!("p{d}"))));
    for d in dirs {
        std::fs::create_dir_all(&d).with_context(|| format!("cannot create image directory {}", d.display()))?;
    }
    Ok(())
}

/// Runs `ops` operations of `mix` in `root` (a container's merged
/// directory), with names unique to container `id`.
pub(crate) fn run(root: &Path, id: u32, mix: &Mix, ops: u64) -> Result<Outcome> {
    let t = Instant::now();
    let mut out = Outcome::default();
    let block = [0x5au8; TEMP_TABLE_BYTES];
    let mut done = [0u64; 3];
    for i in 0..ops {
        match mix.next(&mut done) {
            Op::TempTable => {
                let p = root.join(format!("tmp/#sql-c{id}_{i}.MAD"));
                let mut f = std::fs::File::options()
                    .write(true)
                    .create_new(true)
                    .open(&p)
                    .with_context(|| format!("cannot create {}", p.display()))?;
                f.write_all(&block).with_context(|| format!("cannot write {}", p.display()))?;
                drop(f);
                std::fs::remove_file(&p).with_context(|| format!("cannot unlink {}", p.display()))?;
                out.temp_tables += 1;
            }
            Op::Lookup => {
                let p = root.join(format!("probe/p{}/missing-c{id}-{i}", i % u64::from(LOOKUP_DIRS)));
                match std::fs::symlink_metadata(&p) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e).with_context(|| format!("stat {}", p.display())),
                    Ok(_) => bail!("{} exists, but no container ever creates it", p.display()),
                }
                out.lookups += 1;
            }
            Op::File => {
                let p = root.join(format!("data/t{id}_{i}.ibd"));
                std::fs::File::options()
                    .write(true)
                    .create_new(true)
                    .open(&p)
                    .with_context(|| format!("cannot create {}", p.display()))?;
                out.files += 1;
            }
        }
    }
    out.seconds = t.elapsed().as_secs_f64();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_parse_and_bad_shares_are_refused() {
        assert_eq!("temp-tables".parse::<Mix>().unwrap().name(), "temp-tables");
        assert_eq!("mixed".parse::<Mix>().unwrap(), DEFAULT_MIX);
        let m: Mix = "mixed=temp-tables=60,lookups=30,files=10".parse().unwrap();
        assert_eq!(m, DEFAULT_MIX);
        assert_eq!(m.name(), "mixed=temp-tables=60,lookups=30,files=10");
        assert!("mixed=temp-tables=60,lookups=30".parse::<Mix>().unwrap_err().contains("sum to 90"));
        assert!("mixed=temp-tables=60,lookups=30,files=10,files=0".parse::<Mix>().unwrap_err().contains("twice"));
        assert!("mixed=tables=100".parse::<Mix>().unwrap_err().contains("unknown operation"));
        assert!("mixed=lookups=x".parse::<Mix>().unwrap_err().contains("percentage"));
        assert!("sql".parse::<Mix>().unwrap_err().contains("unknown workload"));
    }

    #[test]
    fn shares_interleave_exactly() {
        for m in [
            DEFAULT_MIX,
            Mix { temp_tables: 33, lookups: 33, files: 34 },
            Mix { temp_tables: 0, lookups: 1, files: 99 },
        ] {
            let mut done = [0u64; 3];
            for n in 1..=1000u64 {
                m.next(&mut done);
                for (k, share) in [m.temp_tables, m.lookups, m.files].into_iter().enumerate() {
                    let want = n as f64 * f64::from(share) / 100.0;
                    assert!((done[k] as f64 - want).abs() <= 1.0, "{m:?} after {n}: {done:?}");
                }
            }
            assert_eq!(done, [u64::from(m.temp_tables), u64::from(m.lookups), u64::from(m.files)].map(|v| v * 10));
        }
    }

    #[test]
    fn runs_each_operation_in_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        prepare_image(dir.path()).unwrap();
        let o = run(dir.path(), 7, &DEFAULT_MIX, 100).unwrap();
        assert_eq!((o.temp_tables, o.lookups, o.files), (60, 30, 10));
        assert_eq!(std::fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0, "temp tables are unlinked");
        assert_eq!(std::fs::read_dir(dir.path().join("data")).unwrap().count(), 10, "files are kept");
    }
}
