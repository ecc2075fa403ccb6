//! `ns-exit`: the filesystem is mounted only in a mount namespace whose
//! last process then exits, as a container dies. The kernel unmounts it
//! inside that process's exit (exit_task_namespaces → put_mnt_ns →
//! umount_tree; the final mntput runs cleanup_mnt from exit_task_work),
//! all before the parent is notified. Timed: from telling the child to
//! exit until it has been reaped. With `--fs overlay`, the overlay is the
//! filesystem mounted only in the child's namespace, as a container's.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{About, ReclaimPath, Reclaimed, StageSpec, Staging};
use crate::bench::reclaim::child::Generator;
use crate::procfs::ProcRoot;
use crate::sandbox::Sandbox;
use crate::sandbox::overlay::Layers;
use crate::workload::CreateOutcome;

pub(super) struct NsExit;

impl ReclaimPath for NsExit {
    fn about(&self) -> About {
        About {
            name: "ns-exit",
            words: "namespace exit",
            help: "the mount namespace's last process exits, as a container dies",
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
        let path = sandbox.mount_point()?;
        let mut child = Generator::spawn(&s.child(true, path.clone(), layers.cloned()))?;
        let created = child.go().with_context(|| s.what(layers.is_some()))?;
        Ok((Box::new(InNamespace { child: Some(child), path }), created))
    }
}

/// The filesystem, mounted only in the child's own mount namespace; the
/// child is gone after the reclaim.
struct InNamespace {
    child: Option<Generator>,
    path: PathBuf,
}

impl Staging for InNamespace {
    /// Through the child's root (`/proc/<pid>/root`), the only way into its
    /// namespace.
    fn lookup_root(&self) -> PathBuf {
        match &self.child {
            Some(child) => Path::new(&format!("/proc/{}/root", child.pid()))
                .join(self.path.strip_prefix("/").unwrap_or(&self.path)),
            None => PathBuf::new(),
        }
    }

    /// The child, whose exit tears its namespace down.
    fn reclaiming_tid(&self) -> Option<u32> {
        self.child.as_ref().map(Generator::pid)
    }

    /// The child's exit, timed and its system time counted by the child.
    fn reclaim(&mut self, _proc: &ProcRoot) -> Result<Reclaimed> {
        let Some(child) = self.child.take() else { bail!("internal error: reclaimed twice") };
        let (took, sys) = child.exit()?;
        let _ = std::fs::remove_dir(&self.path);
        Ok(Reclaimed { took, sys, memcg: None, watch: None, returned_after: None })
    }

    /// The namespace went with the child: nothing is left.
    fn finish(self: Box<Self>) -> Result<bool> {
        Ok(false)
    }
}
