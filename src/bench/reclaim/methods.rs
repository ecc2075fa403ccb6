//! The reclaim paths (`--method`), one per way the kernel frees dentries
//! in production:
//!
//! - `umount`: umount(2) → shrink_dcache_for_umount walks the superblock's
//!   whole tree (the node-lockup report). Timed: the umount call.
//! - `ns-exit`: the filesystem is mounted only in a mount namespace whose
//!   last process then exits, as a container dies. The kernel unmounts it
//!   inside that process's exit (exit_task_namespaces → put_mnt_ns →
//!   umount_tree; the final mntput runs cleanup_mnt from exit_task_work),
//!   all before the parent is notified. Timed: from telling the child to
//!   exit until it has been reaped.
//! - `drop-caches`: `echo 2 > /proc/sys/vm/drop_caches` shrinks every
//!   superblock's unused dentries, machine-wide. Timed: the write.
//! - `memcg`: the generator runs in a memory cgroup made for the run, and
//!   the cgroup is reclaimed (memory.reclaim on v2, memory.force_empty on
//!   v1): the memcg-aware shrinkers walk that cgroup's dentry LRU. Timed:
//!   the write.
//!
//! - `inotify`: not a reclaim but a walk. The first inotify_add_watch on a
//!   directory makes fsnotify flag its children as having a watched parent
//!   (fsnotify_recalc_mask → fsnotify_set_children_dentry_flags), a loop
//!   over every child dentry, negative ones included, under the
//!   directory's d_lock, with no reschedule. Timed: the inotify_add_watch
//!   calls, one per directory of the layout, each on a directory nothing
//!   watched before (a fresh filesystem every repetition). It frees
//!   nothing.
//!
//! drop-caches and memcg free only dentries on the LRU (unused ones):
//! tmpfs pins its dentries, so they free none of those. After them, and
//! after inotify, the filesystem is unmounted, untimed, to count what they
//! left.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::child::{ChildSpec, Generator};
use crate::procfs::ProcRoot;
use crate::sandbox::cgroup::{self, MemCgroup};
use crate::sandbox::overlay::{Stack, StackMounts};
use crate::sandbox::{Mount, Sandbox};
use crate::size::human;
use crate::sys;
use crate::workload::{self, CreateOutcome, CreateSpec, Progress};

/// The reclaim path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// umount(2): shrink_dcache_for_umount walks the superblock's tree (the node-lockup report).
    Umount,
    /// The mount namespace's last process exits, as a container dies.
    NsExit,
    /// echo 2 > /proc/sys/vm/drop_caches (machine-wide).
    DropCaches,
    /// memory.reclaim (v2) or memory.force_empty (v1) on the generator's own memory cgroup.
    Memcg,
    /// inotify_add_watch on the directory: fsnotify's walk over its children (frees nothing).
    Inotify,
}

impl Method {
    pub const NAMES: &'static [&'static str] = &["umount", "ns-exit", "drop-caches", "memcg", "inotify"];
    /// What `--method all` runs: the four reclaims (`inotify`, a walk that
    /// frees nothing and needs negative dentries, is named on its own).
    pub const ALL: [Method; 4] = [Method::Umount, Method::NsExit, Method::DropCaches, Method::Memcg];

    pub fn name(self) -> &'static str {
        match self {
            Method::Umount => "umount",
            Method::NsExit => "ns-exit",
            Method::DropCaches => "drop-caches",
            Method::Memcg => "memcg",
            Method::Inotify => "inotify",
        }
    }

    /// Whether the filesystem is still mounted after the reclaim, so an
    /// untimed umount afterwards counts what the reclaim left.
    pub fn leaves_mounted(self) -> bool {
        matches!(self, Method::DropCaches | Method::Memcg | Method::Inotify)
    }

    /// Whether the method can only free unused dentries on the LRU.
    pub fn lru_only(self) -> bool {
        matches!(self, Method::DropCaches | Method::Memcg)
    }

    /// Whether the method frees dentries at all (`inotify` only walks them).
    pub fn frees(self) -> bool {
        self != Method::Inotify
    }
}

impl std::str::FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "umount" => Ok(Method::Umount),
            "ns-exit" => Ok(Method::NsExit),
            "drop-caches" => Ok(Method::DropCaches),
            "memcg" => Ok(Method::Memcg),
            "inotify" => Ok(Method::Inotify),
            _ => Err(format!(
                "unknown reclaim method {s:?}: use one of {}, a comma-separated list, or all (the first four)",
                Method::NAMES.join(", ")
            )),
        }
    }
}

/// Parses `--method`: one method, a comma-separated list, or `all`.
pub fn parse_list(s: &str) -> Result<Vec<Method>, String> {
    if s == "all" {
        return Ok(Method::ALL.to_vec());
    }
    let mut out: Vec<Method> = Vec::new();
    for part in s.split(',') {
        let m: Method = part.trim().parse()?;
        if out.contains(&m) {
            return Err(format!("reclaim method {:?} is given twice", m.name()));
        }
        out.push(m);
    }
    Ok(out)
}

/// What the memory cgroup saw, for `memcg`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemcgOutcome {
    pub interface: String,
    pub usage_before_bytes: Option<u64>,
    pub usage_after_bytes: Option<u64>,
    /// False when the kernel said it could not reclaim all it was asked to.
    pub complete: bool,
}

/// What `inotify` did: the watches it added, and the kernel's own account
/// of them (the `inotify wd:` lines of the instance's /proc fdinfo, read
/// after the timed calls).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WatchOutcome {
    /// Directories watched (one per directory of the layout).
    pub directories: usize,
    /// The watch descriptors inotify_add_watch returned.
    pub watch_descriptors: Vec<i32>,
    /// Marks the kernel lists for the instance in /proc/self/fdinfo.
    pub marks_in_fdinfo: usize,
}

/// What the timed reclaim measured.
pub struct Reclaimed {
    pub took: Duration,
    pub sys: Duration,
    pub memcg: Option<MemcgOutcome>,
    pub watch: Option<WatchOutcome>,
}

/// Dentries created and ready to be reclaimed by one method.
pub struct Staged {
    how: How,
    /// `--fs overlay`: the upper and lower filesystems, still mounted after
    /// the reclaim (which takes only the overlay) until
    /// [`Staged::unmount_layers`] counts them.
    stack: Option<StackMounts>,
    /// `--fs overlay`: what the reclaim freed, counted around it.
    top: Option<crate::bench::layers::Counted>,
}

enum How {
    /// umount or drop-caches: the filesystem is mounted in the sandbox.
    Mounted { method: Method, mount: Mount },
    /// memcg: mounted in the sandbox, the dentries charged to the cgroup.
    Cgroup { mount: Mount, cg: MemCgroup },
    /// ns-exit: mounted only in the child's own mount namespace.
    Namespace { child: Generator, path: PathBuf },
    /// inotify: mounted in the sandbox; the watches (once added) live as
    /// long as the instance, until the clean-up.
    Watched { mount: Mount, dirs: Vec<PathBuf>, inotify: Option<nix::sys::inotify::Inotify> },
    /// ns-exit after its reclaim: the child and its namespace are gone.
    Done,
}

/// Everything a method needs to stage one run.
pub struct StageSpec<'a> {
    pub method: Method,
    pub create: CreateSpec,
    pub fs: crate::sandbox::FsType,
    /// The CPU the reclaim is pinned to; None: not pinned.
    pub cpu: Option<usize>,
    pub label: &'a str,
    /// `--fs overlay`: create through an overlay over these filesystems.
    pub overlay: Option<Stack>,
}

impl StageSpec<'_> {
    /// The generator child that makes this stage's dentries under `path`,
    /// in a mount namespace of its own or not, through an overlay or not.
    fn child(
        &self,
        own_namespace: bool,
        path: std::path::PathBuf,
        overlay: Option<crate::sandbox::overlay::Layers>,
    ) -> ChildSpec {
        ChildSpec {
            own_namespace,
            path,
            fs: self.fs,
            capacity: self.create.capacity(),
            create: self.create,
            cpu: self.cpu,
            overlay,
        }
    }
}

/// Mounts a fresh filesystem and creates the dentries, the way `method`
/// needs them.
pub fn stage(s: &StageSpec<'_>, sandbox: &mut Sandbox) -> Result<(Staged, CreateOutcome)> {
    let capacity = s.create.capacity();
    let what = || format!("creating {} {} dentries", human(s.create.count), s.create.kind.name());
    if let Some(stack) = s.overlay {
        return stage_overlay(s, stack, sandbox);
    }
    let staged = |how| Staged { how, stack: None, top: None };
    match s.method {
        Method::Umount | Method::DropCaches | Method::Inotify => {
            let mount = sandbox.mount(s.fs, &capacity)?;
            let progress = Arc::new(Progress::default());
            let created = workload::with_progress(s.create.count, s.label, &progress, || {
                workload::create(mount.path(), &s.create, &progress)
            })
            .with_context(what)?;
            mount.sync()?;
            if s.method == Method::Inotify {
                let dirs = (0..s.create.layout.dirs()).map(|d| mount.path().join(workload::dir_name(d))).collect();
                return Ok((staged(How::Watched { mount, dirs, inotify: None }), created));
            }
            Ok((staged(How::Mounted { method: s.method, mount }), created))
        }
        Method::Memcg => {
            let cg = sandbox.memcg()?;
            let mount = sandbox.mount(s.fs, &capacity)?;
            let mut child = Generator::spawn(&s.child(false, mount.path().to_path_buf(), None))?;
            cg.add(child.pid())?;
            let created = child.go().with_context(what)?;
            // The dentries stay charged to the cgroup after the child goes;
            // its own memory (not reclaimable without swap) goes with it.
            child.exit()?;
            Ok((staged(How::Cgroup { mount, cg }), created))
        }
        Method::NsExit => {
            let path = sandbox.mount_point()?;
            let mut child = Generator::spawn(&s.child(true, path.clone(), None))?;
            let created = child.go().with_context(what)?;
            Ok((staged(How::Namespace { child, path }), created))
        }
    }
}

/// `--fs overlay`: mounts the lower and upper filesystems in the sandbox,
/// and the overlay either here too (`umount`) or only in the generator
/// child's own namespace (`ns-exit`, as a container's), then creates
/// through the overlay.
fn stage_overlay(s: &StageSpec<'_>, stack: Stack, sandbox: &mut Sandbox) -> Result<(Staged, CreateOutcome)> {
    let what = || format!("creating {} {} dentries through an overlay", human(s.create.count), s.create.kind.name());
    let mounts = crate::bench::layers::mount_stack(sandbox, stack, &s.create)?;
    match s.method {
        Method::Umount => {
            let mount = sandbox.mount_overlay_here(&mounts.layers)?;
            let progress = Arc::new(Progress::default());
            let created = workload::with_progress(s.create.count, s.label, &progress, || {
                workload::create(mount.path(), &s.create, &progress)
            })
            .with_context(what)?;
            mount.sync()?;
            Ok((Staged { how: How::Mounted { method: s.method, mount }, stack: Some(mounts), top: None }, created))
        }
        Method::NsExit => {
            let path = sandbox.mount_point()?;
            let mut child = Generator::spawn(&s.child(true, path.clone(), Some(mounts.layers.clone())))?;
            let created = child.go().with_context(what)?;
            Ok((Staged { how: How::Namespace { child, path }, stack: Some(mounts), top: None }, created))
        }
        m => bail!("internal error: --method {} with --fs overlay passed validation", m.name()),
    }
}

impl Staged {
    /// Where contending lookups find the filesystem: for `ns-exit`, through
    /// the child's root (`/proc/<pid>/root`), the only way into its
    /// namespace.
    pub fn lookup_root(&self) -> PathBuf {
        match &self.how {
            How::Mounted { mount, .. } | How::Cgroup { mount, .. } | How::Watched { mount, .. } => {
                mount.path().to_path_buf()
            }
            How::Done => PathBuf::new(),
            How::Namespace { child, path } => {
                Path::new(&format!("/proc/{}/root", child.pid())).join(path.strip_prefix("/").unwrap_or(path))
            }
        }
    }

    /// The task that runs the reclaim when it is not the calling thread:
    /// for `ns-exit`, the child, whose exit tears its namespace down (its
    /// only thread, so its pid is its tid: the one a soft-lockup message
    /// names).
    pub fn reclaiming_tid(&self) -> Option<u32> {
        match &self.how {
            How::Namespace { child, .. } => Some(child.pid()),
            _ => None,
        }
    }

    /// Runs the reclaim on the calling thread (pinned to the reclaiming CPU
    /// by the caller) and times it. With `--fs overlay`, dentry-state is
    /// also read in quiet windows around it (outside the timed call), so
    /// the overlay's row is counted like the other layers'.
    pub fn reclaim(&mut self, proc: &ProcRoot) -> Result<Reclaimed> {
        if self.stack.is_none() {
            return self.reclaim_once(proc);
        }
        let window = crate::bench::layers::Window::open(proc)?;
        let done = self.reclaim_once(proc)?;
        self.top = Some(window.close(proc)?);
        Ok(done)
    }

    /// What the overlay's reclaim freed (`--fs overlay`).
    pub fn overlay_counted(&self) -> Option<&crate::bench::layers::Counted> {
        self.top.as_ref()
    }

    fn reclaim_once(&mut self, proc: &ProcRoot) -> Result<Reclaimed> {
        let (_, sys0) = sys::thread_cpu_times();
        let mut memcg = None;
        let mut watch = None;
        let took = match &mut self.how {
            How::Watched { dirs, inotify, .. } => {
                let (took, instance, outcome) = watch_all(dirs)?;
                *inotify = Some(instance);
                watch = Some(outcome);
                took
            }
            How::Mounted { method: Method::DropCaches, .. } => {
                let p = proc.path("sys/vm/drop_caches");
                let t = Instant::now();
                std::fs::write(&p, "2")
                    .with_context(|| format!("cannot write 2 to {} (it needs root)", p.display()))?;
                t.elapsed()
            }
            How::Mounted { mount, .. } => mount.umount()?,
            How::Cgroup { cg, .. } => {
                let usage_before_bytes = cg.usage_bytes();
                let t = Instant::now();
                let complete = cg.reclaim()?;
                let took = t.elapsed();
                memcg = Some(MemcgOutcome {
                    interface: cgroup::interface(cg.version).into(),
                    usage_before_bytes,
                    usage_after_bytes: cg.usage_bytes(),
                    complete,
                });
                took
            }
            How::Namespace { .. } => {
                let How::Namespace { child, path } = std::mem::replace(&mut self.how, How::Done) else {
                    unreachable!()
                };
                let (took, sys) = child.exit()?;
                let _ = std::fs::remove_dir(&path);
                return Ok(Reclaimed { took, sys, memcg: None, watch: None });
            }
            How::Done => bail!("internal error: reclaimed twice"),
        };
        let (_, sys1) = sys::thread_cpu_times();
        Ok(Reclaimed { took, sys: sys1.saturating_sub(sys0), memcg, watch })
    }

    /// Untimed clean-up: unmounts what the reclaim left mounted and removes
    /// the cgroup. Returns whether it unmounted something (so the caller
    /// counts what was left).
    pub fn finish(self) -> Result<bool> {
        match self.how {
            How::Mounted { method: Method::DropCaches, mut mount } => {
                mount.umount()?;
                Ok(true)
            }
            How::Cgroup { mut mount, cg } => {
                mount.umount()?;
                cg.remove()?;
                Ok(true)
            }
            How::Watched { mut mount, inotify, .. } => {
                // The watches go with the instance, before the umount.
                drop(inotify);
                mount.umount()?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// `--fs overlay`, after the reclaim took the overlay: unmounts the
    /// upper and then the lower filesystem, each counted and probed on
    /// `cpu` (untimed as a reclaim). None without an overlay.
    pub fn unmount_layers(
        &mut self,
        proc: &ProcRoot,
        cpu: usize,
    ) -> Result<Option<Vec<crate::bench::layers::LayerUmount>>> {
        match self.stack.take() {
            Some(stack) => crate::bench::layers::unmount_in_turn(stack, proc, cpu).map(Some),
            None => Ok(None),
        }
    }
}

/// `inotify`'s timed part: one inotify_add_watch per directory on a new
/// instance (made before the clock starts), then, untimed, the kernel's
/// fdinfo count of the instance's marks.
fn watch_all(dirs: &[PathBuf]) -> Result<(Duration, nix::sys::inotify::Inotify, WatchOutcome)> {
    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
    let inotify = Inotify::init(InitFlags::IN_CLOEXEC).map_err(|e| {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_lists_parse() {
        assert_eq!(parse_list("umount").unwrap(), vec![Method::Umount]);
        assert_eq!(parse_list("all").unwrap(), Method::ALL.to_vec());
        assert_eq!(parse_list("memcg,ns-exit").unwrap(), vec![Method::Memcg, Method::NsExit]);
        assert!(parse_list("umount,umount").unwrap_err().contains("twice"));
        assert!(parse_list("shrink").unwrap_err().contains("ns-exit"));
        assert_eq!(parse_list("inotify").unwrap(), vec![Method::Inotify]);
        assert!(!parse_list("all").unwrap().contains(&Method::Inotify));
        assert!(!Method::Inotify.frees() && Method::Inotify.leaves_mounted() && !Method::Inotify.lru_only());
        for m in Method::ALL.into_iter().chain([Method::Inotify]) {
            assert_eq!(m.name().parse::<Method>().unwrap(), m);
        }
        assert_eq!(Method::NAMES.len(), Method::ALL.len() + 1);
    }
}
