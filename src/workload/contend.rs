//! `--contend T`: threads on the other CPUs doing path lookups in the
//! filesystem being reclaimed, while the reclaim runs — what the node-lockup report called
//! "production would be worse". Each thread stats, round and round, a hot
//! set of full paths to names the generator used (found or not, each is a
//! whole path walk from `/`).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::{Layout, dir_name};
use crate::sys;

/// Names each contending thread cycles through.
pub(crate) const HOT_SET: u64 = 1024;
/// Lookups between two looks at the stop flag.
const CHECK_EVERY: u64 = 256;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ContendStats {
    pub threads: usize,
    pub cpus: Vec<usize>,
    pub lookups_total: u64,
    pub lookups_per_second: f64,
}

pub(crate) struct Contenders {
    stop: Arc<AtomicBool>,
    handles: Vec<JoinHandle<u64>>,
    cpus: Vec<usize>,
    started: Instant,
}

/// The hot set: up to [`HOT_SET`] paths `root/d<k>/<j>`, spread over the
/// layout's directories, to names that `count` entries used.
pub(crate) fn hot_paths(root: &Path, layout: Layout, count: u64) -> Vec<CString> {
    let dirs = u64::from(layout.dirs());
    (0..HOT_SET.min(count))
        .map(|k| {
            let p = root.join(dir_name((k % dirs) as u32)).join((k / dirs).to_string());
            CString::new(p.as_os_str().as_bytes()).expect("no NUL in a path")
        })
        .collect()
}

impl Contenders {
    /// Starts `threads` lookup threads, pinned round-robin to `cpus`, and
    /// returns once all of them are running.
    pub(crate) fn start(paths: Vec<CString>, threads: usize, cpus: &[usize]) -> Result<Contenders> {
        if cpus.is_empty() {
            bail!("--contend needs a CPU other than the reclaiming one");
        }
        if paths.is_empty() {
            bail!("--contend: no paths to look up");
        }
        let stop = Arc::new(AtomicBool::new(false));
        let paths = Arc::new(paths);
        let ready = Arc::new(Barrier::new(threads + 1));
        let mut handles = Vec::with_capacity(threads);
        let mut used = Vec::with_capacity(threads);
        for t in 0..threads {
            let cpu = cpus[t % cpus.len()];
            used.push(cpu);
            let (stop, paths, ready) = (Arc::clone(&stop), Arc::clone(&paths), Arc::clone(&ready));
            let h = std::thread::Builder::new()
                .name(format!("contend-cpu{cpu}"))
                .spawn(move || {
                    let pinned = sys::pin_current_thread(cpu).is_ok();
                    ready.wait();
                    if !pinned {
                        return 0;
                    }
                    let mut n: u64 = 0;
                    let mut k = t * 7919;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..CHECK_EVERY {
                            let _ = nix::sys::stat::lstat(paths[k % paths.len()].as_c_str());
                            k += 1;
                        }
                        n += CHECK_EVERY;
                    }
                    n
                })
                .context("cannot start a contending lookup thread")?;
            handles.push(h);
        }
        ready.wait();
        Ok(Contenders { stop, handles, cpus: used, started: Instant::now() })
    }

    pub(crate) fn finish(self) -> ContendStats {
        self.stop.store(true, Ordering::Relaxed);
        let secs = self.started.elapsed().as_secs_f64();
        let threads = self.handles.len();
        let lookups_total: u64 = self.handles.into_iter().map(|h| h.join().unwrap_or(0)).sum();
        ContendStats {
            threads,
            cpus: self.cpus,
            lookups_total,
            lookups_per_second: lookups_total as f64 / secs.max(1e-9),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_set_follows_the_layout() {
        let p = hot_paths(Path::new("/tmp/fs0"), Layout::Dirs(4), 10);
        assert_eq!(p.len(), 10);
        assert_eq!(p[0].to_str().unwrap(), "/tmp/fs0/d0/0");
        assert_eq!(p[5].to_str().unwrap(), "/tmp/fs0/d1/1");
        assert_eq!(hot_paths(Path::new("/x"), Layout::Flat, 1_000_000).len() as u64, HOT_SET);
    }
}
