//! `drop-caches`: `echo 2 > /proc/sys/vm/drop_caches` shrinks every
//! superblock's unused dentries, machine-wide. Timed: the write. It frees
//! only dentries on the LRU (unused ones); the filesystem is unmounted
//! afterwards, untimed, to count what it left.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::{About, ReclaimPath, Reclaimed, StageSpec, Staging};
use super::Asked;
use crate::error::UsageError;
use crate::procfs::ProcRoot;
use crate::sandbox::overlay::Layers;
use crate::sandbox::{Mount, Sandbox};
use crate::sys;
use crate::workload::CreateOutcome;

pub(super) struct DropCaches;

impl ReclaimPath for DropCaches {
    fn about(&self) -> About {
        About {
            name: "drop-caches",
            words: "drop_caches",
            help: "echo 2 > /proc/sys/vm/drop_caches: machine-wide, needs --allow-global",
            in_all: true,
            frees: true,
            lru_only: true,
            leaves_mounted: true,
            takes_overlay: false,
            uses_memcg: false,
        }
    }

    fn stage(
        &self,
        s: &StageSpec<'_>,
        _layers: Option<&Layers>,
        sandbox: &mut Sandbox,
    ) -> Result<(Box<dyn Staging>, CreateOutcome)> {
        let mount = sandbox.mount(s.fs, &s.create.capacity())?;
        let created = s.create_here(&mount, false)?;
        Ok((Box::new(Dropped(mount)), created))
    }

    fn refuse_unpermitted(&self, opts: &Asked) -> Result<()> {
        if !opts.allow_global {
            bail!(UsageError(
                "--method drop-caches writes /proc/sys/vm/drop_caches, which drops every unused dentry and inode on \
                 the whole machine: pass --allow-global to allow it"
                    .into()
            ));
        }
        if !sys::is_root() {
            bail!("--method drop-caches writes /proc/sys/vm/drop_caches, which needs root (run dentrylab with sudo)");
        }
        Ok(())
    }

    fn note(&self, _opts: &Asked) -> Option<String> {
        Some(
            "drop-caches is machine-wide: its time and 'Reclaimed' include every other unused dentry on the \
             node; 'Freed' counts only this run's"
                .into(),
        )
    }
}

/// The filesystem, mounted in the sandbox until the clean-up.
struct Dropped(Mount);

impl Staging for Dropped {
    fn lookup_root(&self) -> PathBuf {
        self.0.path().to_path_buf()
    }

    fn reclaiming_tid(&self) -> Option<u32> {
        None
    }

    fn reclaim(&mut self, proc: &ProcRoot) -> Result<Reclaimed> {
        Reclaimed::on_this_thread(|| {
            let p = proc.path("sys/vm/drop_caches");
            let t = Instant::now();
            std::fs::write(&p, "2").with_context(|| format!("cannot write 2 to {} (it needs root)", p.display()))?;
            Ok(t.elapsed())
        })
    }

    /// Unmounts what drop_caches left.
    fn finish(mut self: Box<Self>) -> Result<bool> {
        self.0.umount()?;
        Ok(true)
    }
}
