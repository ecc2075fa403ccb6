//! `umount`: umount(2) → shrink_dcache_for_umount walks the superblock's
//! whole tree (the node-lockup report). Timed: the umount call, and past
//! it when the kernel defers the teardown ([`deferred_teardown`]). With
//! `--fs overlay`, the overlay is mounted in the sandbox and its umount is
//! timed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

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
        Ok((Box::new(Mounted(mount, created.entries)), created))
    }
}

/// The filesystem, mounted in the sandbox, and the entries made in it.
struct Mounted(Mount, u64);

impl Staging for Mounted {
    fn lookup_root(&self) -> PathBuf {
        self.0.path().to_path_buf()
    }

    fn reclaiming_tid(&self) -> Option<u32> {
        None
    }

    fn reclaim(&mut self, proc: &ProcRoot) -> Result<Reclaimed> {
        let nr_dentry = || proc.dentry_state().map(|s| s.nr_dentry);
        let before = nr_dentry()?;
        let start = Instant::now();
        let mut done = Reclaimed::on_this_thread(|| self.0.umount())?;
        if let Some(freed) = deferred_teardown(before, self.1, start, nr_dentry)? {
            done.returned_after = Some(done.took);
            done.took = freed;
        }
        Ok(done)
    }

    /// The reclaim unmounted it: nothing is left.
    fn finish(self: Box<Self>) -> Result<bool> {
        Ok(false)
    }
}

/// How long a deferred teardown may take to free the dentries before the
/// run stops with an error.
const DEFERRED_LIMIT: Duration = Duration::from_secs(120);

/// umount(2) frees the superblock's dentries before it returns, unless the
/// kernel puts the mount later (the namespace-unlock patch of
/// bench/kernel-patches puts it from a workqueue after a grace period):
/// the reclaim then runs in a kworker after the call, and timing the call
/// alone would time nothing. When fewer than half of the `made` dentries
/// are off nr_dentry (`before` it, `now` read again) as the call returns,
/// waits, reading it every millisecond, until 90% are, and returns how long
/// after `start` that was; `None` when the call freed them itself.
fn deferred_teardown(
    before: u64,
    made: u64,
    start: Instant,
    now: impl Fn() -> Result<u64>,
) -> Result<Option<Duration>> {
    let freed = |n: u64| before.saturating_sub(n);
    if made == 0 || freed(now()?) >= made / 2 {
        return Ok(None);
    }
    loop {
        std::thread::sleep(Duration::from_millis(1));
        let n = freed(now()?);
        if n >= made / 10 * 9 {
            return Ok(Some(start.elapsed()));
        }
        if start.elapsed() > DEFERRED_LIMIT {
            bail!(
                "umount returned, but {} s later the kernel had freed {n} of the {made} dentries made \
                 (by nr_dentry in /proc/sys/fs/dentry-state)",
                DEFERRED_LIMIT.as_secs()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    #[test]
    fn a_umount_that_freed_its_dentries_is_not_waited_past() {
        let start = Instant::now();
        assert_eq!(deferred_teardown(150_000, 100_000, start, || Ok(50_100)).unwrap(), None);
        assert_eq!(deferred_teardown(10, 0, start, || Ok(10)).unwrap(), None);
    }

    #[test]
    fn a_deferred_teardown_is_timed_until_the_dentries_are_freed() {
        // nr_dentry stays at 150k for the first reads, then falls.
        let reads = AtomicU64::new(0);
        let now = || {
            let i = reads.fetch_add(1, Ordering::Relaxed);
            Ok(if i < 20 { 150_000 } else { 50_000 })
        };
        let start = Instant::now();
        assert!(deferred_teardown(150_000, 100_000, start, now).unwrap().is_some(), "waited");
        assert_eq!(reads.load(Ordering::Relaxed), 21, "read until the fall, then no more");
    }
}
