//! Steady workloads for `mitigate`: loops that run until they are killed,
//! each doing one kind of operation that leaves dentries behind, the way a
//! service does over days. Each runs in a child process inside a memory
//! cgroup; it counts its operations in a shared counter.
//!
//! - `temp-tables`: create a uniquely named file, write one 4 KiB page,
//!   close, unlink — what MariaDB does for an on-disk temporary table
//!   (`#sql-<pid>_<n>.MAI`). With `fs.dentry-negative=0` each unlink leaves
//!   a negative dentry.
//! - `lookups`: `stat` a name that does not exist (a cache or library path
//!   probe): each miss leaves a negative dentry, whatever fs.dentry-negative.
//! - `files`: create an empty file that stays (a growing spool): a positive
//!   dentry and an inode each, reclaimable once unused.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// Entries per directory of `files` before it moves to the next one.
pub(crate) const FILES_PER_DIR: u64 = 10_000;
/// Bytes written to each `temp-tables` file.
pub(crate) const TEMP_TABLE_BYTES: usize = 4096;

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
    strum::VariantNames,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub(crate) enum Steady {
    TempTables,
    Lookups,
    Files,
}

impl Steady {
    pub(crate) fn name(self) -> &'static str {
        self.into()
    }

    /// Runs the loop in `root` (an empty directory) until the process is
    /// killed, adding one to `ops` per operation.
    pub(crate) fn run(self, root: &Path, ops: &AtomicU64) -> Result<()> {
        let pid = std::process::id();
        match self {
            Steady::TempTables => {
                let page = [0x5au8; TEMP_TABLE_BYTES];
                for n in 0u64.. {
                    let p = root.join(format!("#sql-{pid}_{n}.MAI"));
                    let mut f = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&p)
                        .with_context(|| format!("cannot create {}", p.display()))?;
                    f.write_all(&page).with_context(|| format!("cannot write {}", p.display()))?;
                    drop(f);
                    std::fs::remove_file(&p).with_context(|| format!("cannot unlink {}", p.display()))?;
                    ops.fetch_add(1, Ordering::Relaxed);
                }
            }
            Steady::Lookups => {
                for n in 0u64.. {
                    let p = root.join(format!("missing-{pid}-{n}"));
                    match std::fs::symlink_metadata(&p) {
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(e).with_context(|| format!("stat {}", p.display())),
                        Ok(_) => anyhow::bail!("{} exists: the lookups workload needs names that do not", p.display()),
                    }
                    ops.fetch_add(1, Ordering::Relaxed);
                }
            }
            Steady::Files => {
                for n in 0u64.. {
                    let dir = root.join(format!("d{}", n / FILES_PER_DIR));
                    if n % FILES_PER_DIR == 0 {
                        std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
                    }
                    let p = dir.join(format!("f{n}"));
                    std::fs::File::create(&p).with_context(|| format!("cannot create {}", p.display()))?;
                    ops.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }
}
