//! `memcg`: the generator runs in a memory cgroup made for the run, and
//! the cgroup is reclaimed (memory.reclaim on v2, memory.force_empty on
//! v1): the memcg-aware shrinkers walk that cgroup's dentry LRU. Timed: the
//! write. It frees only dentries on the LRU (unused ones); the filesystem
//! is unmounted afterwards, untimed, to count what it left.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};

use super::{About, MemcgOutcome, ReclaimPath, Reclaimed, StageSpec, Staging};
use crate::bench::reclaim::child::Generator;
use crate::procfs::ProcRoot;
use crate::sandbox::cgroup::{self, MemCgroup};
use crate::sandbox::overlay::Layers;
use crate::sandbox::{Mount, Sandbox};
use crate::workload::CreateOutcome;

pub(super) struct Memcg;

impl ReclaimPath for Memcg {
    fn about(&self) -> About {
        About {
            name: "memcg",
            words: "memory cgroup reclaim",
            help: "reclaim the generator's own memory cgroup: memory.reclaim on cgroup v2, memory.force_empty on v1",
            in_all: true,
            frees: true,
            lru_only: true,
            leaves_mounted: true,
            takes_overlay: false,
            uses_memcg: true,
        }
    }

    fn stage(
        &self,
        s: &StageSpec<'_>,
        _layers: Option<&Layers>,
        sandbox: &mut Sandbox,
    ) -> Result<(Box<dyn Staging>, CreateOutcome)> {
        let cg = sandbox.memcg()?;
        let mount = sandbox.mount(s.fs, &s.create.capacity())?;
        let mut child = Generator::spawn(&s.child(false, mount.path().to_path_buf(), None))?;
        cg.add(child.pid())?;
        let created = child.go().with_context(|| s.what(false))?;
        // The dentries stay charged to the cgroup after the child goes;
        // its own memory (not reclaimable without swap) goes with it.
        child.exit()?;
        Ok((Box::new(Charged { mount, cg }), created))
    }
}

/// The filesystem, mounted in the sandbox, its dentries charged to the
/// cgroup.
struct Charged {
    mount: Mount,
    cg: MemCgroup,
}

impl Staging for Charged {
    fn lookup_root(&self) -> PathBuf {
        self.mount.path().to_path_buf()
    }

    fn reclaiming_tid(&self) -> Option<u32> {
        None
    }

    fn reclaim(&mut self, _proc: &ProcRoot) -> Result<Reclaimed> {
        let cg = &self.cg;
        let mut outcome = None;
        let mut done = Reclaimed::on_this_thread(|| {
            let usage_before_bytes = cg.usage_bytes();
            let t = Instant::now();
            let complete = cg.reclaim()?;
            let took = t.elapsed();
            outcome = Some(MemcgOutcome {
                interface: cgroup::interface(cg.version).into(),
                usage_before_bytes,
                usage_after_bytes: cg.usage_bytes(),
                complete,
            });
            Ok(took)
        })?;
        done.memcg = outcome;
        Ok(done)
    }

    /// Unmounts what the reclaim left and removes the cgroup.
    fn finish(self: Box<Self>) -> Result<bool> {
        let Charged { mut mount, cg } = *self;
        mount.umount()?;
        cg.remove()?;
        Ok(true)
    }
}
