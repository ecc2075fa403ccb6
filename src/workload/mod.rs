//! Dentry generators: one file per kind. A generator fills one directory
//! with `count` entries; [`create`] spreads the work over directories and
//! threads according to the layout. Besides them only the loops that make
//! or look up dentries for several benchmarks (`lookup`, `contend`,
//! `unlink`, a container's operation mix in `container`); what serves one
//! benchmark lives in its folder (pollute's prober, mitigate's MariaDB
//! server and steady loops).
//!
//! In: a directory (or a filesystem of the sandbox), a kind, a count. Out:
//! dentries in the kernel's cache, and the rate and CPU time it took.
//! Imports `sandbox`, `procfs`, `sys` and the utilities; imported by
//! `bench`, `report` (plain types) and `cli`.

pub(crate) mod container;
pub(crate) mod contend;
pub(crate) mod file;
pub(crate) mod hardlink;
pub(crate) mod lookup;
pub(crate) mod negative;
pub(crate) mod unlink;
pub(crate) mod unlinked;

use std::fs::File;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::sandbox::Capacity;

/// What kind of dentry to create.
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
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub(crate) enum Kind {
    /// Hard links to one file: one dentry each and no new inode (about 192 bytes), as the node-lockup report.
    Hardlink,
    /// Empty regular files: a dentry and an inode each (about 900 bytes).
    File,
    /// Failed lookups of names that do not exist: one negative dentry each (disk filesystems only).
    Negative,
    /// Create then unlink, as temporary tables do: one negative dentry each (disk filesystems only).
    Unlinked,
}

impl std::str::FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        <Kind as strum::VariantArray>::VARIANTS
            .iter()
            .copied()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown kind {s:?}: use one of {}", Kind::NAMES.join(", ")))
    }
}

/// Most inodes ext4 lets one file have hard links to (EXT4_LINK_MAX is 65000).
const LINKS_PER_SOURCE: u64 = 65_000;

impl Kind {
    /// Every kind's name, in declaration order (from the enum: strum).
    pub(crate) const NAMES: &'static [&'static str] = <Kind as strum::VariantNames>::VARIANTS;

    /// Memory per dentry assumed before anything was measured, bytes.
    /// On the high side: a hard link measured 227 bytes on tmpfs (6.18: the
    /// 192-byte dentry plus the directory's index), so 260 leaves a margin;
    /// once the first size ran, the measured figure is used instead.
    pub(crate) fn default_bytes_per_dentry(self) -> u64 {
        match self {
            Kind::Hardlink | Kind::Negative | Kind::Unlinked => 260,
            Kind::File => 1200,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        self.into()
    }

    /// Whether the dentries are negative, so dentry-state's nr_negative is
    /// the witness of how many exist.
    pub(crate) fn is_negative(self) -> bool {
        matches!(self, Kind::Negative | Kind::Unlinked)
    }

    /// What a filesystem must hold for `count` entries of this kind.
    pub(crate) fn capacity(self, count: u64, layout: Layout, threads: usize) -> Capacity {
        let dirs = u64::from(layout.dirs());
        let threads = threads as u64;
        let (entries, inodes) = match self {
            Kind::File => (count, count),
            Kind::Hardlink => (count, count / LINKS_PER_SOURCE + threads + 1),
            Kind::Negative => (0, 0),
            Kind::Unlinked => (threads, threads),
        };
        Capacity { entries: entries + dirs, inodes: inodes + dirs }
    }
}

/// How the entries are spread over directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "layout", content = "dirs")]
pub(crate) enum Layout {
    /// All entries in one directory (the node-lockup report).
    Flat,
    /// Spread evenly over K directories.
    Dirs(u32),
}

/// Upper bound on `--layout dirs=K`.
pub(crate) const MAX_DIRS: u32 = 1_000_000;

impl Layout {
    pub(crate) fn dirs(self) -> u32 {
        match self {
            Layout::Flat => 1,
            Layout::Dirs(k) => k,
        }
    }
}

impl std::str::FromStr for Layout {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "flat" {
            return Ok(Layout::Flat);
        }
        let Some(k) = s.strip_prefix("dirs=") else {
            return Err(format!("unknown layout {s:?}: use 'flat' or 'dirs=K' (for example dirs=16)"));
        };
        match k.parse::<u32>() {
            Ok(k) if (1..=MAX_DIRS).contains(&k) => Ok(Layout::Dirs(k)),
            _ => Err(format!("dirs=K needs a whole number K from 1 to {MAX_DIRS}, found {k:?}")),
        }
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Layout::Flat => f.write_str("flat"),
            Layout::Dirs(k) => write!(f, "dirs={k}"),
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct CreateSpec {
    pub kind: Kind,
    pub layout: Layout,
    pub count: u64,
    pub threads: usize,
}

impl CreateSpec {
    /// What the filesystem must hold for this workload.
    pub(crate) fn capacity(&self) -> Capacity {
        self.kind.capacity(self.count, self.layout, self.threads)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CreateOutcome {
    /// Entries the generator made (system calls that succeeded).
    pub entries: u64,
    pub seconds: f64,
    pub rate_per_second: f64,
    /// CPU time the generator threads used, user and system, summed over
    /// the threads (each thread's own clock). On a loaded machine the rate
    /// says how much CPU the run got; CPU per entry says what each entry
    /// cost, contention included (0 in results saved before it was measured).
    #[serde(default)]
    pub cpu_seconds: f64,
    pub threads: usize,
    pub dirs: u32,
}

/// Live progress shared between the workers and whoever draws a bar.
#[derive(Default)]
pub(crate) struct Progress {
    pub done: AtomicU64,
    pub abort: AtomicBool,
}

/// One worker's share of a directory: (directory index, first name, count).
pub(crate) type WorkItem = (u32, u64, u64);

/// Spreads `count` entries named 0, 1, 2, … evenly over `ndirs` directories
/// and at most `threads` workers: whole directories round-robin when there
/// are at least as many directories as workers, else each directory split
/// into index ranges. Workers without work are left out.
pub(crate) fn plan(count: u64, ndirs: u32, threads: usize) -> Vec<Vec<WorkItem>> {
    let threads = threads.max(1);
    let ndirs = ndirs.max(1);
    let quota = |d: u32| count / ndirs as u64 + u64::from((d as u64) < count % ndirs as u64);
    let mut items: Vec<Vec<WorkItem>> = vec![Vec::new(); threads];
    if ndirs as usize >= threads {
        for d in 0..ndirs {
            items[d as usize % threads].push((d, 0, quota(d)));
        }
    } else {
        let mut t = 0;
        for d in 0..ndirs {
            let q = quota(d);
            let share = threads / ndirs as usize + usize::from((d as usize) < threads % ndirs as usize);
            let mut start = 0;
            for s in 0..share {
                let n = q / share as u64 + u64::from((s as u64) < q % share as u64);
                items[t].push((d, start, n));
                start += n;
                t += 1;
            }
        }
    }
    items.into_iter().filter(|v| !v.is_empty()).collect()
}

/// How many entries a worker makes between progress updates.
const BATCH: u64 = 4096;

/// Creates `spec.count` entries under `root`, spread over the layout's
/// directories and `spec.threads` threads (never more threads than
/// directories, unless the layout is flat and threads were asked for).
pub(crate) fn create(root: &Path, spec: &CreateSpec, progress: &Arc<Progress>) -> Result<CreateOutcome> {
    if spec.count == 0 {
        bail!("nothing to create: count is 0");
    }
    let ndirs = spec.layout.dirs();
    for d in 0..ndirs {
        let p = root.join(dir_name(d));
        match std::fs::create_dir(&p) {
            // An overlay's image may already hold the directory (`--fs
            // overlay`): the entries then go into a merged directory.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && p.is_dir() => {}
            r => r.with_context(|| format!("cannot create {}", p.display()))?,
        }
    }
    let threads = spec.threads.max(1);
    if spec.kind == Kind::Hardlink {
        hardlink::prepare(root, threads)?;
    }
    let items = plan(spec.count, ndirs, threads);
    let used_threads = items.len();
    let t0 = Instant::now();
    let results: Vec<Result<(u64, f64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = items
            .into_iter()
            .enumerate()
            .map(|(worker, work)| {
                let progress = Arc::clone(progress);
                s.spawn(move || -> Result<(u64, f64)> {
                    let cpu0 = thread_cpu_seconds()?;
                    let mut made = 0;
                    for (d, first, n) in work {
                        let dir = File::open(root.join(dir_name(d)))
                            .with_context(|| format!("cannot open directory {}", dir_name(d)))?;
                        made += fill(spec.kind, root, worker, dir.as_fd(), first, n, &progress)?;
                    }
                    Ok((made, thread_cpu_seconds()? - cpu0))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| bail!("a generator thread panicked"))).collect()
    });
    let seconds = t0.elapsed().as_secs_f64();
    let (mut entries, mut cpu_seconds) = (0, 0.0);
    for r in results {
        let (made, cpu) = r?;
        entries += made;
        cpu_seconds += cpu;
    }
    Ok(CreateOutcome {
        entries,
        seconds,
        rate_per_second: entries as f64 / seconds.max(1e-9),
        cpu_seconds,
        threads: used_threads,
        dirs: ndirs,
    })
}

/// CPU time (user and system) the calling thread has used, seconds.
fn thread_cpu_seconds() -> Result<f64> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .context("cannot read the thread's CPU clock")?;
    Ok(t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
}

fn fill(
    kind: Kind,
    root: &Path,
    worker: usize,
    dir: std::os::fd::BorrowedFd<'_>,
    first: u64,
    n: u64,
    progress: &Progress,
) -> Result<u64> {
    let mut name = NameBuf::default();
    let mut done = 0;
    /// How this kind makes one entry: every kind its own arm, no default.
    enum Make {
        Link(hardlink::Source),
        File,
        Negative,
        Unlinked,
    }
    let mut make = match kind {
        Kind::Hardlink => Make::Link(hardlink::Source::open(root, worker, first)?),
        Kind::File => Make::File,
        Kind::Negative => Make::Negative,
        Kind::Unlinked => Make::Unlinked,
    };
    while done < n {
        if progress.abort.load(Ordering::Relaxed) {
            break;
        }
        let end = (done + BATCH).min(n);
        for i in done..end {
            let nm = name.set(first + i);
            match &mut make {
                Make::Link(src) => src.link(dir, nm)?,
                Make::File => file::make(dir, nm)?,
                Make::Negative => negative::make(dir, nm)?,
                Make::Unlinked => unlinked::make(dir, nm)?,
            }
        }
        progress.done.fetch_add(end - done, Ordering::Relaxed);
        done = end;
    }
    Ok(done)
}

pub(crate) fn dir_name(d: u32) -> String {
    format!("d{d}")
}

/// A reusable NUL-terminated decimal name, short enough to stay inline in
/// the dentry (no external name allocation).
#[derive(Default)]
pub(crate) struct NameBuf {
    buf: [u8; 24],
}

impl NameBuf {
    pub(crate) fn set(&mut self, mut v: u64) -> &std::ffi::CStr {
        let mut tmp = [0u8; 20];
        let mut i = tmp.len();
        loop {
            i -= 1;
            tmp[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        let len = tmp.len() - i;
        self.buf[..len].copy_from_slice(&tmp[i..]);
        self.buf[len] = 0;
        std::ffi::CStr::from_bytes_with_nul(&self.buf[..=len]).expect("one NUL at the end")
    }
}

/// Draws a progress bar on a terminal while `work` runs.
pub(crate) fn with_progress<T>(total: u64, label: &str, progress: &Arc<Progress>, work: impl FnOnce() -> T) -> T {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return work();
    }
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {human_pos}/{human_len} {rate} ETA {eta}")
            .expect("valid template")
            .with_key("rate", |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}/s", s.per_sec());
            })
            .progress_chars("=> "),
    );
    bar.set_prefix(label.to_string());
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                bar.set_position(progress.done.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let out = work();
        stop.store(true, Ordering::Relaxed);
        bar.finish_and_clear();
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names come from the enum (strum) and are the ones `--kind`
    /// always took; each parses back to its kind.
    #[test]
    fn kind_names_come_from_the_enum() {
        assert_eq!(Kind::NAMES, ["hardlink", "file", "negative", "unlinked"]);
        for &k in <Kind as strum::VariantArray>::VARIANTS {
            assert_eq!(k.name().parse::<Kind>(), Ok(k));
        }
        assert_eq!(
            "dir".parse::<Kind>().unwrap_err(),
            "unknown kind \"dir\": use one of hardlink, file, negative, unlinked"
        );
    }

    #[test]
    fn layout_parses() {
        assert_eq!("flat".parse::<Layout>().unwrap(), Layout::Flat);
        assert_eq!("dirs=16".parse::<Layout>().unwrap(), Layout::Dirs(16));
        assert!("dirs=0".parse::<Layout>().is_err());
        assert!("dirs=x".parse::<Layout>().is_err());
        assert!("tree".parse::<Layout>().unwrap_err().contains("flat"));
        assert_eq!(Layout::Dirs(3).to_string(), "dirs=3");
    }

    #[test]
    fn plans_cover_every_name_once() {
        for (count, dirs, threads) in [(10, 3, 2), (10, 1, 4), (7, 2, 5), (1000, 16, 3), (5, 8, 1)] {
            let p = plan(count, dirs, threads);
            assert!(p.len() <= threads && !p.is_empty());
            let mut seen: Vec<(u32, u64)> =
                p.iter().flatten().flat_map(|&(d, first, n)| (first..first + n).map(move |i| (d, i))).collect();
            seen.sort_unstable();
            let total = seen.len();
            seen.dedup();
            assert_eq!((total, seen.len()), (count as usize, count as usize), "{count} {dirs} {threads}");
        }
    }

    #[test]
    fn names_are_decimal() {
        let mut n = NameBuf::default();
        assert_eq!(n.set(0).to_bytes(), b"0");
        assert_eq!(n.set(1234567).to_bytes(), b"1234567");
        assert_eq!(n.set(u64::MAX).to_bytes(), u64::MAX.to_string().as_bytes());
    }
}
