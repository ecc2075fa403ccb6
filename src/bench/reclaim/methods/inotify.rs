//! `inotify`: not a reclaim but a walk. The first inotify_add_watch on a
//! directory makes fsnotify flag its children as having a watched parent
//! (fsnotify_recalc_mask → fsnotify_set_children_dentry_flags), a loop
//! over every child dentry, negative ones included, under the directory's
//! d_lock, with no reschedule. Timed: the inotify_add_watch calls, one per
//! directory of the layout, each on a directory nothing watched before (a
//! fresh filesystem every repetition). It frees nothing; the filesystem is
//! unmounted afterwards, untimed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::sys::inotify::Inotify as Instance;

use super::{About, ReclaimPath, Reclaimed, StageSpec, Staging, WatchOutcome};
use super::Asked;
use crate::error::UsageError;
use crate::procfs::ProcRoot;
use crate::sandbox::overlay::Layers;
use crate::sandbox::{Mount, Sandbox};
use crate::workload::{self, CreateOutcome};

pub(super) struct Inotify;

impl ReclaimPath for Inotify {
    fn about(&self) -> About {
        About {
            name: "inotify",
            words: "inotify_add_watch's children walk",
            help: "not a reclaim: the first inotify_add_watch on each directory makes fsnotify walk its children \
                   under the directory's d_lock, negatives included; it frees nothing; needs --kind negative or \
                   unlinked on ext4 or xfs, and each repetition watches a fresh filesystem",
            in_all: false,
            frees: false,
            lru_only: false,
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
        let dirs = (0..s.create.layout.dirs()).map(|d| mount.path().join(workload::dir_name(d))).collect();
        Ok((Box::new(Watched { mount, dirs, inotify: None }), created))
    }

    fn refuse_options(&self, opts: &Asked) -> Result<()> {
        if !opts.kind.is_negative() {
            bail!(UsageError(format!(
                "--method inotify times fsnotify's walk over a directory of negative dentries, and --kind {} makes \
                 none: add --kind negative (with --fs ext4 or --fs xfs)",
                opts.kind.name()
            )));
        }
        Ok(())
    }

    fn note(&self, _opts: &Asked) -> Option<String> {
        Some(
            "inotify is a walk, not a reclaim: the first inotify_add_watch on a directory flags its children \
             (fsnotify_set_children_dentry_flags, under the directory's d_lock) and frees nothing, so 'Freed' is \
             0 by design; its ns/dentry and fits count the negatives made in the watched directories"
                .into(),
        )
    }
}

/// The filesystem, mounted in the sandbox; the watches (once added) live
/// as long as the instance, until the clean-up.
struct Watched {
    mount: Mount,
    dirs: Vec<PathBuf>,
    inotify: Option<Instance>,
}

impl Staging for Watched {
    fn lookup_root(&self) -> PathBuf {
        self.mount.path().to_path_buf()
    }

    fn reclaiming_tid(&self) -> Option<u32> {
        None
    }

    fn reclaim(&mut self, _proc: &ProcRoot) -> Result<Reclaimed> {
        let mut watched = None;
        let mut done = Reclaimed::on_this_thread(|| {
            let (took, instance, outcome) = watch_all(&self.dirs)?;
            watched = Some((instance, outcome));
            Ok(took)
        })?;
        if let Some((instance, outcome)) = watched {
            self.inotify = Some(instance);
            done.watch = Some(outcome);
        }
        Ok(done)
    }

    /// Closes the instance (its watches go with it), then unmounts.
    fn finish(self: Box<Self>) -> Result<bool> {
        let Watched { mut mount, inotify, .. } = *self;
        drop(inotify);
        mount.umount()?;
        Ok(true)
    }
}

/// The timed part: one inotify_add_watch per directory on a new instance
/// (made before the clock starts), then, untimed, the kernel's fdinfo count
/// of the instance's marks.
fn watch_all(dirs: &[PathBuf]) -> Result<(Duration, Instance, WatchOutcome)> {
    use nix::sys::inotify::{AddWatchFlags, InitFlags};
    let inotify = Instance::init(InitFlags::IN_CLOEXEC).map_err(|e| {
        anyhow::anyhow!(
            "inotify_init1 failed: {e} (fs.inotify.max_user_instances may be reached; see /proc/sys/fs/inotify)"
        )
    })?;
    let mut wds = Vec::with_capacity(dirs.len());
    let t = Instant::now();
    for d in dirs {
        // IN_ALL_EVENTS holds events a child can report (FS_EVENTS_POSS_ON_CHILD),
        // and inotify adds FS_EVENT_ON_CHILD for a directory: the kernel walks.
        let wd = inotify.add_watch(d.as_path(), AddWatchFlags::IN_ALL_EVENTS).map_err(|e| {
            anyhow::anyhow!(
                "inotify_add_watch {} failed: {e} (fs.inotify.max_user_watches may be reached; see /proc/sys/fs/inotify)",
                d.display()
            )
        })?;
        wds.push(wd);
    }
    let took = t.elapsed();
    let fdinfo = format!("/proc/self/fdinfo/{}", std::os::fd::AsRawFd::as_raw_fd(&std::os::fd::AsFd::as_fd(&inotify)));
    let text = std::fs::read_to_string(&fdinfo).with_context(|| format!("cannot read {fdinfo}"))?;
    let marks_in_fdinfo = text.lines().filter(|l| l.starts_with("inotify wd:")).count();
    let outcome = WatchOutcome {
        directories: dirs.len(),
        watch_descriptors: wds.iter().map(|w| w.as_raw()).collect(),
        marks_in_fdinfo,
    };
    Ok((took, inotify, outcome))
}
