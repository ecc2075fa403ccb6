//! Counting on a busy machine (docs/testing.md). Other jobs create and
//! free dentries by the hundred thousand while the tests run, and every
//! counter in /proc/sys/fs/dentry-state and /proc/slabinfo is
//! machine-wide. So a test counts what belongs to its run:
//!
//! - [`RunCgroup`]: the run in a memory cgroup of its own. Dentries come
//!   from the `dentry` slab cache, which `dcache_init` (fs/dcache.c) makes
//!   with `SLAB_ACCOUNT`: each is charged to the memory cgroup of the task
//!   that allocates it (`__d_alloc`) and uncharged when it is freed. The
//!   cgroup's kernel memory (`memory.kmem.usage_in_bytes` and
//!   `memory.kmem.max_usage_in_bytes` on v1, `kernel` of memory.stat and
//!   `memory.peak` on v2) holds the run's dentries and no one else's.
//! - [`Background`]: where the product itself reports a machine-wide
//!   count (that is what it measures), the test samples dentry-state
//!   before and after the run and widens the tolerance by the most the
//!   machine moved on its own over a window as long as the product's.
//! - [`retry_disturbed`]: a machine-wide check that still fails (a burst
//!   inside the run that the samples around it missed) is run again, with
//!   the reason printed; only checks documented as machine-wide use it.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use dentrylab::procfs::ProcRoot;
use dentrylab::procfs::cgroup::own_memory_controller;

use super::TempCgroup;

/// Size of one dentry object (`objsize` of the `dentry` line of
/// /proc/slabinfo; 192 bytes on x86-64 when slabinfo cannot be read).
pub fn dentry_object_bytes() -> u64 {
    ProcRoot::default().slab_dentry().map_or(192, |c| c.objsize_bytes)
}

/// The memory controller's directory new cgroups go in (its root), and
/// whether it is cgroup v2; only one that counts kernel memory per cgroup
/// (v1 with `memory.kmem.*`; v2 with `memory` enabled for the root's children).
fn memory_controller() -> Option<(PathBuf, bool)> {
    let m = own_memory_controller(&ProcRoot::default()).ok()??;
    let v2 = m.version == 2;
    let usable = if v2 {
        std::fs::read_to_string(m.mount_point.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "memory"))
    } else {
        m.mount_point.join("memory.kmem.usage_in_bytes").exists()
    };
    usable.then_some((m.mount_point, v2))
}

/// A memory cgroup holding one test's dentrylab run, so the test can
/// count the kernel memory the run itself was charged.
pub struct RunCgroup {
    pub cg: TempCgroup,
    v2: bool,
}

impl RunCgroup {
    /// Whether this machine has a memory controller the tests can use.
    pub fn available() -> bool {
        memory_controller().is_some()
    }

    /// A fresh cgroup `dentrylab-test-NAME-PID` (panics without a memory
    /// controller: check [`available`](Self::available) with `require!`).
    pub fn new(name: &str) -> RunCgroup {
        let (dir, v2) = memory_controller().expect("a memory cgroup controller");
        let cg = TempCgroup::new(&dir, name);
        RunCgroup { cg, v2 }
    }

    /// `dentrylab ARGS…` run inside the cgroup.
    pub fn command(&self) -> Command {
        self.cg.command()
    }

    /// Runs `dentrylab ARGS… --json -` inside the cgroup and parses it.
    pub fn run_json(&self, args: &[&str]) -> serde_json::Value {
        super::json_of(self.command(), args)
    }

    /// A witness on purpose: the cgroup's own counter, read here, not through the library.
    fn read(&self, file: &str) -> u64 {
        let text = std::fs::read_to_string(self.cg.0.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let v = if file == "memory.stat" {
            text.lines().find_map(|l| l.strip_prefix("kernel ")).unwrap_or_else(|| panic!("no kernel in memory.stat"))
        } else {
            text.trim()
        };
        v.trim().parse().unwrap_or_else(|e| panic!("{file}: {v:?}: {e}"))
    }

    /// Kernel memory charged to the cgroup now, bytes.
    pub fn kernel_bytes(&self) -> u64 {
        self.read(if self.v2 { "memory.stat" } else { "memory.kmem.usage_in_bytes" })
    }

    /// The most kernel memory the cgroup held (v1); on v2 the most memory
    /// of any kind (`memory.peak`), which is no less.
    pub fn peak_bytes(&self) -> u64 {
        self.read(if self.v2 { "memory.peak" } else { "memory.kmem.max_usage_in_bytes" })
    }

    /// The run held at least `dentries` dentries' worth of kernel memory
    /// at its peak, and gave at least 80% of that back by now (charges
    /// are batched per CPU, hence not all of it).
    pub fn assert_made_and_freed(&self, what: &str, dentries: u64) {
        let want = dentries * dentry_object_bytes();
        let (peak, now) = (self.peak_bytes(), self.kernel_bytes());
        eprintln!(
            "{what}: the run's cgroup held {peak} bytes of kernel memory at peak, {now} now ({want} for the dentries)"
        );
        assert!(
            peak >= want,
            "{what}: the run's cgroup peaked at {peak} bytes of kernel memory, below {dentries} dentries ({want} bytes)"
        );
        assert!(
            peak.saturating_sub(now) >= want * 8 / 10,
            "{what}: the run's cgroup still holds {now} of its peak {peak} bytes: {dentries} dentries ({want} bytes) were not freed"
        );
    }

    /// Waits (at most `limit`) until the cgroup holds no more than
    /// `bytes` of kernel memory.
    pub fn wait_kernel_below(&self, what: &str, bytes: u64, limit: Duration) {
        let t = Instant::now();
        loop {
            let now = self.kernel_bytes();
            if now <= bytes {
                return;
            }
            assert!(
                t.elapsed() < limit,
                "{what}: the run's cgroup still holds {now} bytes of kernel memory (> {bytes}) after {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// dentry-state (nr_dentry, nr_negative) sampled about every millisecond
/// while the test itself makes none.
#[derive(Default, Clone)]
pub struct Background {
    /// (seconds, nr_dentry, nr_negative) per stretch of sampling.
    stretches: Vec<Vec<(f64, i64, i64)>>,
}

/// (nr_dentry, nr_negative) now.
fn dentry_state() -> (i64, i64) {
    let s = ProcRoot::default().dentry_state().unwrap();
    (s.nr_dentry as i64, s.nr_negative as i64)
}

impl Background {
    /// Samples for `d`.
    pub fn sample(&mut self, d: Duration) {
        let t0 = Instant::now();
        let mut v = Vec::new();
        while t0.elapsed() < d {
            let (n, neg) = dentry_state();
            v.push((t0.elapsed().as_secs_f64(), n, neg));
            std::thread::sleep(Duration::from_millis(1));
        }
        self.stretches.push(v);
    }

    /// The largest change of nr_dentry (`negative` false) or nr_negative
    /// over any window of at most `window` seconds in the samples.
    pub fn swing(&self, window: f64, negative: bool) -> i64 {
        let mut most = 0;
        for s in &self.stretches {
            let val = |i: usize| if negative { s[i].2 } else { s[i].1 };
            for i in 0..s.len() {
                for j in i + 1..s.len() {
                    if s[j].0 - s[i].0 > window {
                        break;
                    }
                    most = most.max((val(j) - val(i)).abs());
                }
            }
        }
        most
    }

    /// A one-line account for messages.
    pub fn describe(&self) -> String {
        format!(
            "the machine alone moved nr_dentry by up to {} and nr_negative by up to {} within 1 s",
            self.swing(1.0, false),
            self.swing(1.0, true)
        )
    }
}

/// Runs `f` with the background sampled for a second before and after it.
pub fn around<T>(f: impl FnOnce() -> T) -> (T, Background) {
    let mut bg = Background::default();
    bg.sample(Duration::from_secs(1));
    let out = f();
    bg.sample(Duration::from_secs(1));
    eprintln!("background around the run: {}", bg.describe());
    (out, bg)
}

/// `got` is `want` within `share` of it (at least `floor`) plus the
/// background's `swing`; else the reason.
pub fn within(what: &str, got: i64, want: i64, share: f64, floor: i64, swing: i64) -> Result<(), String> {
    let slack = ((want as f64 * share) as i64).max(floor) + swing;
    if (got - want).abs() <= slack {
        Ok(())
    } else {
        Err(format!("{what}: {got}, expected {want} ± {slack} (of which {swing} the machine's own movement)"))
    }
}

/// Attempts a machine-wide check up to `attempts` times: `Err(reason)`
/// is printed and retried; the last one fails the test. Checks on the
/// run's own counts panic inside `attempt` and are never retried.
pub fn retry_disturbed(what: &str, attempts: usize, mut attempt: impl FnMut() -> Result<(), String>) {
    let mut reasons = Vec::new();
    for i in 1..=attempts {
        match attempt() {
            Ok(()) => return,
            Err(e) => {
                eprintln!("RETRY {what}: attempt {i} of {attempts} disturbed by other jobs' dentries: {e}");
                reasons.push(e);
            }
        }
    }
    panic!("{what}: every one of {attempts} attempts failed its machine-wide check: {reasons:?}");
}
