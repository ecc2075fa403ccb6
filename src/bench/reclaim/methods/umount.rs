//! `umount`: umount(2) → shrink_dcache_for_umount walks the superblock's
//! whole tree (the node-lockup report). Timed: the umount call. With
//! `--fs overlay`, the overlay is mounted in the sandbox and its umount is
//! timed.

use std::path::PathBuf;

use anyhow::Result;

use super::{About, ReclaimPath, Reclaimed, StageSpec, Staging};
use crate::procfs::ProcRoot;
use crate::sandbox::overlay::Layers;
use crate::sandbox::{Mount, Sandbox};
use crate::workload::CreateOutcome;

pub(super) struct Umount;

impl ReclaimPath for Umount {
    fn about(&self) -> About {
        About {
            name: "umount",
            words: "umount",
            help: "umount(2), as the node-lockup report",
            in_all: true,
            frees: true,
            lru_only: false,
            leaves_mounted: false,
            takes_overlay: true,
            uses_memcg: false,
        }
    }

    fn stage(
        &self,
        s: &StageSpec<'_>,
        layers: Option<&Layers>,
        sandbox: &mut Sandbox,
    ) -> Result<(Box<dyn Staging>, CreateOutcome)> {
        let mount = match layers {
            Some(layers) => sandbox.mount_overlay_here(layers)?,
            None => sandbox.mount(s.fs, &s.create.capacity())?,
        };
        let created = s.create_here(&mount, layers.is_some())?;
        Ok((Box::new(Mounted(mount)), created))
    }
}

/// The filesystem, mounted in the sandbox.
struct Mounted(Mount);

impl Staging for Mounted {
    fn lookup_root(&self) -> PathBuf {
        self.0.path().to_path_buf()
    }

    fn reclaiming_tid(&self) -> Option<u32> {
        None
    }

    fn reclaim(&mut self, _proc: &ProcRoot) -> Result<Reclaimed> {
        Reclaimed::on_this_thread(|| self.0.umount())
    }

    /// The reclaim unmounted it: nothing is left.
    fn finish(self: Box<Self>) -> Result<bool> {
        Ok(false)
    }
}
