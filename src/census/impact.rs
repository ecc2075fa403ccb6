//! `census --impact N`: what a census walk does to the node beside it.
//! After the census proper (whose figures it leaves alone), the same walk
//! (the same blocks, the same backend) runs again and again while
//!
//! 1. **lookups**: a thread pinned to the walk's CPU, and one pinned to
//!    another CPU when there is one, `fstatat` existing names of a tmpfs
//!    directory as fast as they go; each thread's rate and longest stall
//!    (the longest time between two of its calls returning) beside the
//!    walk, then alone for as long;
//! 2. **a reclaim**: a tmpfs of N hard links is unmounted alone, and
//!    another one beside the walk ([`REPS`] times each, alternating), each
//!    `umount` timed. An umount waits for an RCU grace period
//!    (`synchronize_rcu_expedited()` in `namespace_unlock()`), which a CPU
//!    inside a BPF run (under `rcu_read_lock()`, preemption off) holds up
//!    until the run ends.
//!
//! Nothing here asserts a time: the figures are reported as measured.

use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use super::BLOCK;
use crate::probe::census::{Tally, Walker};
use crate::sandbox::{FsType, Sandbox};
use crate::workload::{self, CreateSpec, Kind, Layout};

/// Umounts of each kind (alone, beside the walk), alternating.
pub(crate) const REPS: usize = 3;
/// Names the lookup threads `fstatat` in turn.
pub(crate) const LOOKUP_NAMES: u64 = 1000;
/// Shortest lookup window: walk passes repeat until it has passed, one
/// pass at least.
const MIN_WINDOW: Duration = Duration::from_millis(500);
/// Blocks walked between two looks at whether to stop.
const RANGE_BLOCKS: usize = 64;

/// One window of one lookup thread.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct LookupWindow {
    pub lookups: u64,
    pub seconds: f64,
    pub per_second: f64,
    /// The longest time between two of the thread's calls returning (the
    /// first from the window's start).
    pub longest_stall_seconds: f64,
}

/// One lookup thread, beside the walk and alone.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LookupThread {
    pub cpu: usize,
    /// Pinned to the CPU the walk was pinned to.
    pub walk_cpu: bool,
    pub beside_walk: LookupWindow,
    pub alone: LookupWindow,
    /// `beside_walk.per_second / alone.per_second`.
    pub rate_ratio: f64,
}

/// The lookups' part of `--impact`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Lookups {
    /// What one lookup is.
    pub call: String,
    /// Names looked up in turn.
    pub names: u64,
    /// The CPU the walk was pinned to during the lookups.
    pub walk_cpu: usize,
    /// Walk passes (over the census's blocks) during the window beside it.
    pub walk_passes: f64,
    pub threads: Vec<LookupThread>,
}

/// One umount of each kind.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct UmountRep {
    pub alone_seconds: f64,
    pub beside_walk_seconds: f64,
    /// Walk passes from just before that umount began to just after it ended.
    pub walk_passes: f64,
}

/// The reclaim's part of `--impact`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Umounts {
    /// Hard links in one directory of each tmpfs unmounted.
    pub dentries: u64,
    pub reps: Vec<UmountRep>,
    pub alone_median_seconds: f64,
    pub beside_walk_median_seconds: f64,
    /// `beside_walk_median_seconds / alone_median_seconds`.
    pub ratio_of_medians: f64,
}

/// What `--impact` measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Impact {
    pub lookups: Lookups,
    pub umount: Umounts,
    /// RCU stalls, soft lockups and hung tasks the kernel logged while
    /// these ran (none is clean).
    pub kernel_alerts: Vec<crate::procfs::kmsg::Alert>,
}

/// Walks the blocks of `chosen` again and again, [`RANGE_BLOCKS`] at a
/// time, until `stop()` after a range once `min_passes` passes are done;
/// the passes walked. What it finds is dropped.
fn walk_until(census: &mut dyn Walker, chosen: &[u64], min_passes: usize, stop: &dyn Fn() -> bool) -> Result<f64> {
    let mut scratch = Tally::default();
    let mut blocks = 0usize;
    'passes: loop {
        for range in chosen.chunk_by(|a, b| b == &(a + 1)).flat_map(|r| r.chunks(RANGE_BLOCKS)) {
            census.walk(range[0] * BLOCK, range.len() as u64 * BLOCK, &mut scratch)?;
            scratch = Tally::default();
            blocks += range.len();
            if blocks >= min_passes * chosen.len() && stop() {
                break 'passes;
            }
        }
    }
    census.finish(&mut scratch)?;
    Ok(blocks as f64 / chosen.len().max(1) as f64)
}

/// `fstatat` of `names` in `dir`, in turn, until `stop`.
fn lookup_thread(dir: &Path, cpu: usize, names: u64, stop: &AtomicBool) -> Result<LookupWindow> {
    crate::sys::pin_current_thread(cpu)?;
    let d = std::fs::File::open(dir).with_context(|| format!("cannot open {}", dir.display()))?;
    let names: Vec<std::ffi::CString> =
        (0..names).map(|i| std::ffi::CString::new(format!("n{i}")).expect("no NUL in our names")).collect();
    let t0 = Instant::now();
    let (mut last, mut longest, mut n) = (t0, Duration::ZERO, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let name = &names[(n % names.len() as u64) as usize];
        nix::sys::stat::fstatat(d.as_fd(), name.as_c_str(), nix::fcntl::AtFlags::empty())
            .with_context(|| format!("fstatat {}/{name:?}", dir.display()))?;
        let now = Instant::now();
        longest = longest.max(now - last);
        last = now;
        n += 1;
    }
    let seconds = t0.elapsed().as_secs_f64();
    Ok(LookupWindow {
        lookups: n,
        seconds,
        per_second: n as f64 / seconds.max(1e-9),
        longest_stall_seconds: longest.as_secs_f64(),
    })
}

/// Runs the lookup threads on `cpus` while `during` runs; their windows.
fn lookup_window(dir: &Path, cpus: &[usize], during: &mut dyn FnMut() -> Result<()>) -> Result<Vec<LookupWindow>> {
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = cpus
        .iter()
        .map(|&cpu| {
            let (s, dir) = (stop.clone(), dir.to_path_buf());
            std::thread::spawn(move || lookup_thread(&dir, cpu, LOOKUP_NAMES, &s))
        })
        .collect();
    let ran = during();
    stop.store(true, Ordering::Relaxed);
    let windows: Vec<Result<LookupWindow>> =
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| anyhow::bail!("a lookup thread died"))).collect();
    ran?;
    windows.into_iter().collect()
}

fn lookups(census: &mut dyn Walker, chosen: &[u64], sandbox: &mut Sandbox) -> Result<Lookups> {
    let need = Kind::File.capacity(LOOKUP_NAMES, Layout::Flat, 1);
    let mount = sandbox.mount(FsType::Tmpfs, &need)?;
    for i in 0..LOOKUP_NAMES {
        let p = mount.path().join(format!("n{i}"));
        std::fs::write(&p, b"").with_context(|| format!("cannot create {}", p.display()))?;
    }
    let allowed = crate::sys::allowed_cpus()?;
    let walk_cpu = allowed[0];
    let cpus: Vec<usize> = std::iter::once(walk_cpu).chain(allowed.get(1).copied()).collect();
    crate::sys::pin_current_thread(walk_cpu)?;
    let t0 = Instant::now();
    let mut passes = 0.0;
    let beside = lookup_window(mount.path(), &cpus, &mut || {
        passes = walk_until(census, chosen, 1, &|| t0.elapsed() >= MIN_WINDOW)?;
        Ok(())
    });
    crate::sys::unpin_current_thread(&allowed)?;
    let beside = beside?;
    let window = t0.elapsed();
    let alone = lookup_window(mount.path(), &cpus, &mut || {
        std::thread::sleep(window);
        Ok(())
    })?;
    let threads = cpus
        .iter()
        .zip(beside.iter().zip(&alone))
        .map(|(&cpu, (b, a))| LookupThread {
            cpu,
            walk_cpu: cpu == walk_cpu,
            beside_walk: *b,
            alone: *a,
            rate_ratio: b.per_second / a.per_second.max(1e-9),
        })
        .collect();
    Ok(Lookups {
        call: "fstatat of an existing name in a tmpfs directory, relative to its descriptor".into(),
        names: LOOKUP_NAMES,
        walk_cpu,
        walk_passes: passes,
        threads,
    })
}

/// A tmpfs of `n` hard links in one directory, mounted in the sandbox.
fn filled_tmpfs(sandbox: &mut Sandbox, n: u64) -> Result<crate::sandbox::Mount> {
    let spec = CreateSpec { kind: Kind::Hardlink, layout: Layout::Flat, count: n, threads: crate::env::cpus() };
    let mount = sandbox.mount(FsType::Tmpfs, &spec.capacity())?;
    let o = workload::create(mount.path(), &spec, &Arc::new(workload::Progress::default()))?;
    anyhow::ensure!(o.entries == n, "made {} of {n} hard links for --impact", o.entries);
    Ok(mount)
}

/// One umount beside the walk: the walk runs before it starts and until it
/// has ended; its seconds and the passes walked meanwhile.
fn umount_beside(census: &mut dyn Walker, chosen: &[u64], mut mount: crate::sandbox::Mount) -> Result<(f64, f64)> {
    let done = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicBool::new(false));
    let (d, s) = (done.clone(), started.clone());
    let h = std::thread::spawn(move || {
        while !s.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        let r = mount.umount();
        d.store(true, Ordering::Release);
        r
    });
    // The umount is let go after the walk's first range, and the walk
    // goes on until it has ended.
    let passes = walk_until(census, chosen, 0, &|| {
        started.store(true, Ordering::Release);
        done.load(Ordering::Acquire)
    });
    // A walk that failed must still let the umount go, and wait for it.
    started.store(true, Ordering::Release);
    let took = h.join().unwrap_or_else(|_| anyhow::bail!("the umount thread died"))?;
    Ok((took.as_secs_f64(), passes?))
}

fn umounts(census: &mut dyn Walker, chosen: &[u64], sandbox: &mut Sandbox, n: u64) -> Result<Umounts> {
    let mut reps = Vec::new();
    for _ in 0..REPS {
        let alone = filled_tmpfs(sandbox, n)?.umount()?.as_secs_f64();
        let (beside, passes) = umount_beside(census, chosen, filled_tmpfs(sandbox, n)?)?;
        reps.push(UmountRep { alone_seconds: alone, beside_walk_seconds: beside, walk_passes: passes });
    }
    let a = crate::stats::median(&reps.iter().map(|r| r.alone_seconds).collect::<Vec<_>>());
    let b = crate::stats::median(&reps.iter().map(|r| r.beside_walk_seconds).collect::<Vec<_>>());
    Ok(Umounts {
        dentries: n,
        reps,
        alone_median_seconds: a,
        beside_walk_median_seconds: b,
        ratio_of_medians: b / a.max(1e-12),
    })
}

/// `--impact N`: the lookups, then the umounts of N hard links, beside
/// walks of `chosen` by `census`.
pub(crate) fn measure(
    census: &mut dyn Walker,
    chosen: &[u64],
    sandbox: &mut Sandbox,
    n: u64,
    say: &dyn Fn(&str),
) -> Result<Impact> {
    let kmsg = crate::probe::kmsg::KmsgWatch::start(None);
    let t0 = crate::sys::monotonic_ns();
    say("census: --impact: lookups beside the walk, then alone");
    let lookups = lookups(census, chosen, sandbox)?;
    say(&format!("census: --impact: {REPS} umounts of {n} hard links alone and {REPS} beside the walk"));
    let umount = umounts(census, chosen, sandbox, n)?;
    let (kernel_alerts, _) = kmsg.take_between(t0, crate::sys::monotonic_ns());
    Ok(Impact { lookups, umount, kernel_alerts })
}

/// The impact as text: a line per lookup thread, one for the umounts.
pub(crate) fn text(i: &Impact) -> String {
    use std::fmt::Write;
    let l = &i.lookups;
    let mut out = format!(
        "\nbeside the walk (--impact; {:.1} walk passes, the walk pinned to CPU {})\n",
        l.walk_passes, l.walk_cpu
    );
    for t in &l.threads {
        let _ = writeln!(
            out,
            "  lookups on CPU {}{}: {:.0}/s beside the walk, {:.0}/s alone ({:.2}×); longest stall {:.2} ms beside, {:.2} ms alone",
            t.cpu,
            if t.walk_cpu { " (the walk's)" } else { "" },
            t.beside_walk.per_second,
            t.alone.per_second,
            t.rate_ratio,
            t.beside_walk.longest_stall_seconds * 1e3,
            t.alone.longest_stall_seconds * 1e3
        );
    }
    let u = &i.umount;
    let _ = writeln!(
        out,
        "  umount of a tmpfs of {} hard links: median {:.3} s beside the walk, {:.3} s alone ({:.2}×; {} each)",
        u.dentries,
        u.beside_walk_median_seconds,
        u.alone_median_seconds,
        u.ratio_of_medians,
        u.reps.len()
    );
    let _ = writeln!(
        out,
        "  kernel log meanwhile: {}",
        if i.kernel_alerts.is_empty() {
            "clean".to_string()
        } else {
            i.kernel_alerts.iter().map(|a| a.message.clone()).collect::<Vec<_>>().join("; ")
        }
    );
    out
}
