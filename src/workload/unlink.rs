//! Parallel removal of a tree made by [`super::create`] (the unlink-regression report's
//! `rm -rf` per directory, 8-way): each worker unlinks the names of its
//! share of the plan, then the directories go. On a disk filesystem every
//! unlinked file's dentry stays in the cache as a negative dentry.

use std::fs::File;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::Ordering;

use anyhow::{Context, Result, bail};
use nix::unistd::{UnlinkatFlags, unlinkat};

use super::{NameBuf, Progress, WorkItem, dir_name};
use crate::sys;

/// Unlinks between two updates of the shared counter: small, so that a
/// sampler reading it every 100 ms sees the rate to within a percent.
const BATCH: u64 = 64;

/// What one worker did.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WorkerOutcome {
    pub unlinked: u64,
    /// CLOCK_MONOTONIC when it finished its share.
    pub finished_ns: u64,
}

/// Removes the entries of `plan` under `root` with one thread per share,
/// counting into `progress.done`.
pub(crate) fn remove(root: &Path, plan: &[Vec<WorkItem>], progress: &Progress) -> Result<Vec<WorkerOutcome>> {
    let results: Vec<Result<WorkerOutcome>> = std::thread::scope(|s| {
        let handles: Vec<_> = plan
            .iter()
            .enumerate()
            .map(|(w, work)| {
                std::thread::Builder::new().name(format!("unlink-w{w}")).spawn_scoped(s, move || {
                    let mut name = NameBuf::default();
                    let mut unlinked = 0u64;
                    for &(d, first, n) in work {
                        let dir = File::open(root.join(dir_name(d)))
                            .with_context(|| format!("cannot open directory {}", dir_name(d)))?;
                        let mut pending = 0;
                        for i in first..first + n {
                            let nm = name.set(i);
                            unlinkat(dir.as_fd(), nm, UnlinkatFlags::NoRemoveDir)
                                .with_context(|| format!("unlink {}/{i}", dir_name(d)))?;
                            pending += 1;
                            if pending == BATCH {
                                progress.done.fetch_add(pending, Ordering::Relaxed);
                                unlinked += pending;
                                pending = 0;
                            }
                        }
                        progress.done.fetch_add(pending, Ordering::Relaxed);
                        unlinked += pending;
                    }
                    Ok(WorkerOutcome { unlinked, finished_ns: sys::monotonic_ns() })
                })
            })
            .collect::<std::io::Result<_>>()
            .context("cannot start an unlink thread")?;
        Ok::<_, anyhow::Error>(
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| bail!("an unlink thread panicked"))).collect(),
        )
    })?;
    results.into_iter().collect()
}

/// Removes the (now empty) directories of a layout.
pub(crate) fn remove_dirs(root: &Path, ndirs: u32) -> Result<()> {
    for d in 0..ndirs {
        let p = root.join(dir_name(d));
        std::fs::remove_dir(&p).with_context(|| format!("cannot remove {}", p.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{CreateSpec, Kind, Layout, create, plan};
    use std::sync::Arc;

    #[test]
    fn removes_exactly_what_was_created() {
        let t = tempfile::tempdir().unwrap();
        let spec = CreateSpec { kind: Kind::File, layout: Layout::Dirs(3), count: 1000, threads: 2 };
        let made = create(t.path(), &spec, &Arc::new(Progress::default())).unwrap();
        assert_eq!(made.entries, 1000);
        let progress = Progress::default();
        let out = remove(t.path(), &plan(1000, 3, 2), &progress).unwrap();
        assert_eq!(out.iter().map(|o| o.unlinked).sum::<u64>(), 1000);
        assert_eq!(progress.done.load(Ordering::Relaxed), 1000);
        remove_dirs(t.path(), 3).unwrap();
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_missing_file_is_an_error_naming_it() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("d0")).unwrap();
        let e = remove(t.path(), &plan(2, 1, 1), &Progress::default()).unwrap_err();
        assert!(format!("{e:#}").contains("unlink d0/0"), "{e:#}");
    }
}
