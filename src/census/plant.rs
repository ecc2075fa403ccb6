//! `--plant`: directories with known counts, made in dentrylab's sandbox
//! before the census, and the check of what the census found in them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::analysis::census::Estimate;
use crate::sandbox::{FsType, Mount, Sandbox};
use crate::workload::{self, CreateSpec, Kind, Layout};

/// One `FS:KIND:COUNT[:dirs=K]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plant {
    pub fs: FsType,
    pub kind: Kind,
    pub count: u64,
    pub layout: Layout,
}

impl std::str::FromStr for Plant {
    type Err = String;
    fn from_str(s: &str) -> Result<Plant, String> {
        let parts: Vec<&str> = s.split(':').collect();
        if !(3..=4).contains(&parts.len()) {
            return Err(format!("{s:?}: write FS:KIND:COUNT[:dirs=K], for example ext4:negative:300k"));
        }
        let fs: FsType = parts[0].parse()?;
        let kind: Kind = parts[1].parse()?;
        if kind.is_negative() && !fs.is_disk() {
            return Err(format!("{s:?}: {} dentries need a disk filesystem (ext4 or xfs)", kind.name()));
        }
        let count = crate::size::parse_count(parts[2])?;
        if count == 0 || count > 50_000_000 {
            return Err(format!("{s:?}: COUNT must be from 1 to 50M"));
        }
        let layout = parts.get(3).map(|l| l.parse()).transpose()?.unwrap_or(Layout::Flat);
        if u64::from(layout.dirs()) > count {
            return Err(format!("{s:?}: more directories than entries"));
        }
        Ok(Plant { fs, kind, count, layout })
    }
}

/// A planted filesystem, mounted in the sandbox until it is dropped.
pub(crate) struct Planted {
    pub plant: Plant,
    pub mount: Mount,
}

impl Planted {
    /// What the census should find there.
    pub(crate) fn expected(&self) -> Expected {
        Expected::of_workload(self.mount.path(), self.plant.kind, self.plant.layout, self.plant.count)
    }
}

/// Directories a workload filled, with how many entries of its kind each
/// holds: what the census must find there.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    /// The kind's name (`negative`, `hardlink`, …).
    pub kind: String,
    /// Negative dentries (else positive).
    pub negative: bool,
    pub directories: Vec<(PathBuf, u64)>,
}

impl Expected {
    /// `workload::create(root, spec)`'s directories and how many entries
    /// each holds (`workload::plan`'s split).
    pub(crate) fn of_workload(root: &Path, kind: Kind, layout: Layout, count: u64) -> Expected {
        let n = layout.dirs();
        let directories = (0..n)
            .map(|d| {
                let q = count / u64::from(n) + u64::from(u64::from(d) < count % u64::from(n));
                (root.join(workload::dir_name(d)), q)
            })
            .collect();
        Expected { kind: kind.name().into(), negative: kind.is_negative(), directories }
    }
}

/// Mounts and fills each plant.
pub(crate) fn make(
    sandbox: &mut Sandbox,
    plants: &[Plant],
    threads: usize,
    say: &dyn Fn(&str),
) -> Result<Vec<Planted>> {
    let mut out = Vec::new();
    for p in plants {
        let spec = CreateSpec { kind: p.kind, layout: p.layout, count: p.count, threads };
        let mount = sandbox.mount(p.fs, &spec.capacity())?;
        say(&format!(
            "census: planting {} {} dentries in {} ({}) at {}",
            p.count,
            p.kind.name(),
            p.layout,
            p.fs,
            mount.path().display()
        ));
        let progress = Arc::new(workload::Progress::default());
        let o = workload::create(mount.path(), &spec, &progress)
            .with_context(|| format!("planting {} {} in {}", p.count, p.kind.name(), p.fs))?;
        anyhow::ensure!(o.entries == p.count, "planted {} of {} entries", o.entries, p.count);
        out.push(Planted { plant: p.clone(), mount });
    }
    Ok(out)
}

/// What the census found in one planted directory.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Check {
    pub path: String,
    pub kind: String,
    pub planted: u64,
    /// The planted kind's count (negative or positive) as the census saw it.
    pub found: Estimate,
    /// The other kind's count, expected 0.
    pub other: Estimate,
    /// Exact on a full walk, inside the interval on a sample.
    pub ok: bool,
}

/// What the churn asks for: where, how many creates and unlinks a second in
/// all, and how many threads share that rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChurnSpec {
    pub dir: PathBuf,
    pub per_second: u64,
    pub threads: usize,
}

/// Creates and deletes names in `dir` at about `per_second` each until
/// stopped, split over `threads` threads: each in rounds of a subdirectory
/// of its own, 64 files created and unlinked in it, and the subdirectory
/// removed, so that `rmdir` frees its dentries (`shrink_dcache_parent()` in
/// `vfs_rmdir()`) while the census reads.
pub(crate) struct Churn {
    stop: Arc<AtomicBool>,
    pub ops: Arc<AtomicU64>,
    /// The threads' CPU time, added by each as it ends (ns).
    cpu_ns: Arc<AtomicU64>,
    /// The rate asked for, all threads together.
    pub per_second: u64,
    pub threads: usize,
    handles: Vec<std::thread::JoinHandle<()>>,
}

/// What a stopped churn did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stopped {
    /// Creates and unlinks from its start to its stop.
    pub operations: u64,
    /// The CPU time of its threads (`CLOCK_THREAD_CPUTIME_ID`), in seconds.
    pub cpu_seconds: f64,
}

impl Churn {
    pub(crate) fn start(spec: &ChurnSpec) -> Churn {
        let stop = Arc::new(AtomicBool::new(false));
        let ops = Arc::new(AtomicU64::new(0));
        let cpu_ns = Arc::new(AtomicU64::new(0));
        let threads = spec.threads.max(1);
        let each = spec.per_second as f64 / threads as f64;
        let handles = (0..threads)
            .map(|k| {
                let (s, o, c, dir) = (stop.clone(), ops.clone(), cpu_ns.clone(), spec.dir.clone());
                std::thread::spawn(move || {
                    churn_thread(&dir, k, each, &s, &o);
                    c.fetch_add(thread_cpu_ns(), Ordering::Relaxed);
                })
            })
            .collect();
        Churn { stop, ops, cpu_ns, per_second: spec.per_second, threads, handles }
    }

    /// Creates and unlinks so far.
    pub(crate) fn operations(&self) -> u64 {
        self.ops.load(Ordering::Relaxed)
    }

    /// Stops the churn and waits for its threads.
    pub(crate) fn stop(mut self) -> Stopped {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.handles.drain(..) {
            let _ = t.join();
        }
        Stopped {
            operations: self.ops.load(Ordering::Relaxed),
            cpu_seconds: self.cpu_ns.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }
}

/// The calling thread's CPU time in ns (0 if the clock cannot be read).
fn thread_cpu_ns() -> u64 {
    use nix::time::{ClockId, clock_gettime};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// Thread `k` of a churn: rounds in `dir` until `stop`, paced to
/// `per_second` creates and unlinks of its own when it can go faster.
fn churn_thread(dir: &Path, k: usize, per_second: f64, stop: &AtomicBool, ops: &AtomicU64) {
    // Every call relative to a directory descriptor: no path walk from /
    // per name.
    let Ok(base) = std::fs::File::open(dir) else { return };
    let t0 = std::time::Instant::now();
    let mut mine: u64 = 0;
    let mut round: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let name = format!("churn{k}.{}", round % 64);
        round += 1;
        mine += churn_round(&base, &name, ops);
        // Paced: ops done ahead of the rate wait.
        let due = std::time::Duration::from_secs_f64(mine as f64 / per_second);
        if let Some(w) = due.checked_sub(t0.elapsed()) {
            std::thread::sleep(w.min(std::time::Duration::from_millis(50)));
        }
    }
}

/// One round: subdirectory `name` of `base` made, 64 files created and
/// unlinked in it, the subdirectory removed; the creates and unlinks made
/// (also added to `ops` as they happen).
fn churn_round(base: &std::fs::File, name: &str, ops: &AtomicU64) -> u64 {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::{Mode, mkdirat};
    use nix::unistd::{UnlinkatFlags, unlinkat};
    let mut made = 0;
    if mkdirat(base, name, Mode::from_bits_truncate(0o755)).is_err() {
        return 0;
    }
    if let Ok(sub) = openat(base, name, OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty()) {
        for i in 0..64u32 {
            let file = i.to_string();
            let flags = OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_WRONLY | OFlag::O_CLOEXEC;
            if openat(&sub, file.as_str(), flags, Mode::from_bits_truncate(0o644)).is_ok()
                && unlinkat(&sub, file.as_str(), UnlinkatFlags::NoRemoveDir).is_ok()
            {
                ops.fetch_add(2, Ordering::Relaxed);
                made += 2;
            }
        }
    }
    let _ = unlinkat(base, name, UnlinkatFlags::RemoveDir);
    made
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_churn_round_creates_and_unlinks_64_names_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::File::open(dir.path()).unwrap();
        let ops = AtomicU64::new(0);
        assert_eq!(churn_round(&base, "churn0", &ops), 2 * 64);
        churn_round(&base, "churn1", &ops);
        assert_eq!(ops.load(Ordering::Relaxed), 2 * 2 * 64);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_churn_of_three_threads_creates_and_unlinks_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ChurnSpec { dir: dir.path().to_path_buf(), per_second: 1_000_000, threads: 3 };
        let c = Churn::start(&spec);
        // Three rounds' worth of creates and unlinks, whichever threads made
        // them; then nothing may be left behind.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while c.operations() < 3 * 2 * 64 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let s = c.stop();
        assert!(s.operations >= 3 * 2 * 64, "{s:?}");
        assert_eq!(s.operations % 2, 0, "every create has its unlink: {s:?}");
        assert!(s.cpu_seconds > 0.0, "{s:?}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn specs() {
        let p: Plant = "ext4:negative:300k".parse().unwrap();
        assert_eq!((p.fs, p.kind, p.count, p.layout), (FsType::Ext4, Kind::Negative, 300_000, Layout::Flat));
        let p: Plant = "ext4:negative:1M:dirs=1000".parse().unwrap();
        assert_eq!(p.layout, Layout::Dirs(1000));
        for bad in
            ["tmpfs:negative:10", "ext4:negative", "ext4:x:10", "ext4:file:0", "ext4:file:5:dirs=10", "nfs:file:3"]
        {
            assert!(bad.parse::<Plant>().is_err(), "{bad}");
        }
    }
}
