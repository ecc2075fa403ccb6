//! The opt-in census collector (`exporter --census-interval`): a thread
//! walks the kernel's dentry hash table every interval (at least 5
//! minutes) in the background, never on a scrape, and scrapes serve the
//! last walk with its age and duration.
//!
//! Label budget: at most [`MAX_TOP`] directories for each of at most
//! [`status::census::MAX_FILESYSTEMS`] filesystems, two series each
//! (negative and positive children): 640 directory series at most, plus
//! two per filesystem. A path longer than [`MAX_PATH_LABEL`] bytes is cut
//! to its first 40 and last 60 bytes around `…`, followed by `~` and the
//! first 8 hex digits of the whole path's FNV-1a hash, so two long paths
//! that share both ends stay apart.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::{Collector, Scrape, Setup};
use crate::exporter::text::Out;
use crate::status::{self, census::NodeCensus};

pub(crate) const NAME: &str = "census";

/// Serves the background thread's last walk: never fails (a walk that
/// could not run is `dentrylab_census_up 0`).
struct Census(Arc<Background>);

pub(super) fn new(setup: &Setup) -> Option<Box<dyn Collector>> {
    setup.census.clone().map(|b| Box::new(Census(b)) as Box<dyn Collector>)
}

impl Collector for Census {
    fn name(&self) -> &'static str {
        NAME
    }

    fn update(&self, _: &Scrape<'_>, o: &mut Out) -> Result<()> {
        o.0.push_str(&self.0.metrics());
        Ok(())
    }
}

/// `--census-interval`'s floor.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_secs(300);
pub(crate) const DEFAULT_TOP: usize = 5;
/// Most directories exported per filesystem.
pub(crate) const MAX_TOP: usize = 20;
/// Longest path label kept whole, in bytes.
pub(crate) const MAX_PATH_LABEL: usize = 120;

#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub interval: Duration,
    pub walk: status::census::Options,
}

struct Last {
    census: NodeCensus,
    ended: Instant,
    seconds: f64,
}

/// The collector's state, shared by its thread and the scrapes.
#[derive(Default)]
pub(crate) struct Background {
    last: Mutex<Option<Last>>,
    walks: Mutex<u64>,
    /// Opened by [`Background::go`] once the exporter has announced its
    /// address: the thread's first line on stderr never comes before the
    /// announcement, which callers read as the first line.
    gate: (Mutex<bool>, std::sync::Condvar),
}

impl Background {
    /// Starts the thread: the first walk once [`Background::go`] is called, then every interval. A
    /// census that cannot run says why on stderr (once per new reason) and
    /// in `dentrylab_census_up 0`.
    pub(crate) fn start(o: Options, proc: crate::procfs::ProcRoot) -> Result<Arc<Background>> {
        let b = Arc::new(Background::default());
        let shared = Arc::clone(&b);
        std::thread::Builder::new()
            .name("census".into())
            .spawn(move || {
                {
                    let (open, cv) = &shared.gate;
                    let mut g = open.lock().unwrap_or_else(|e| e.into_inner());
                    while !*g {
                        g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
                    }
                }
                let mut said: Option<String> = None;
                loop {
                    let t0 = Instant::now();
                    let census = status::census::collect(&o.walk, &proc);
                    if census.unavailable.is_some() && census.unavailable != said {
                        // The log, not eprintln!: a closed stderr must not end the thread.
                        let why = census.unavailable.as_deref().unwrap_or_default();
                        tracing::warn!(collector = NAME, error = %why, "no census");
                        said.clone_from(&census.unavailable);
                    }
                    shared.store(census, t0.elapsed().as_secs_f64());
                    std::thread::sleep(o.interval.saturating_sub(t0.elapsed()));
                }
            })
            .context("cannot start the census thread (raise the process's thread limit: ulimit -u, the pids cgroup)")?;
        Ok(b)
    }

    /// Lets the first walk start (after the exporter's announcement).
    pub(crate) fn go(&self) {
        let (open, cv) = &self.gate;
        *open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }

    pub(crate) fn store(&self, census: NodeCensus, seconds: f64) {
        *self.walks.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(Last { census, ended: Instant::now(), seconds });
    }

    /// The census families, in the exposition format: nothing before the
    /// first walk has ended but `dentrylab_census_walks_total 0`.
    pub(crate) fn metrics(&self) -> String {
        let walks = *self.walks.lock().unwrap_or_else(|e| e.into_inner());
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let mut o = Out(String::new());
        o.typed(
            "dentrylab_census_walks_total",
            "counter",
            "Census walks of the dentry hash table ended since the exporter started.",
            &[(&[], walks as f64)],
        );
        if let Some(l) = last.as_ref() {
            encode(&mut o, &l.census, l.ended.elapsed().as_secs_f64(), l.seconds);
        }
        o.0
    }
}

/// FNV-1a, 64 bits.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A path as a label value: whole up to [`MAX_PATH_LABEL`] bytes, else its
/// two ends and a hash of the whole.
pub(crate) fn path_label(p: &str) -> String {
    if p.len() <= MAX_PATH_LABEL {
        return p.to_string();
    }
    let mut head = 40;
    while !p.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = p.len() - 60;
    while !p.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}…{}~{:08x}", &p[..head], &p[tail..], fnv1a(p) >> 32)
}

/// The families of one census, `age` seconds after its walk ended.
fn encode(o: &mut Out, c: &NodeCensus, age: f64, seconds: f64) {
    o.gauge(
        "dentrylab_census_up",
        "1 when the last census walk ran, 0 when it could not (the exporter's stderr says why).",
        Some(if c.walk.is_some() { 1.0 } else { 0.0 }),
    );
    o.gauge("dentrylab_census_age_seconds", "Time since the last census walk ended.", Some(age));
    o.gauge("dentrylab_census_duration_seconds", "How long the last census walk took.", Some(seconds));
    let Some(w) = &c.walk else { return };
    o.gauge("dentrylab_census_sample_fraction", "Fraction of the hash buckets the last walk read.", Some(w.fraction));
    o.gauge("dentrylab_census_dentries_walked", "Dentries the last walk read.", Some(w.dentries_walked as f64));
    o.gauge(
        "dentrylab_census_rejected_reads",
        "Reads the last walk skipped (pointers that failed a check while the kernel changed the table).",
        Some(w.rejected.total() as f64),
    );
    let mut fs = Vec::new();
    let mut dirs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for f in &c.filesystems {
        let mp = path_label(f.mount_point.as_deref().unwrap_or_default());
        for (kind, e) in [("negative", &f.negative), ("positive", &f.positive)] {
            fs.push(([f.fs_type.clone(), f.dev.clone(), mp.clone(), kind.into()], e.estimate));
        }
        for d in f.top.iter().take(MAX_TOP) {
            // Two unreadable paths read alike: one series each label set.
            if !seen.insert((d.dev.clone(), path_label(&d.path))) {
                continue;
            }
            for (kind, e) in [("negative", &d.negative), ("positive", &d.positive)] {
                dirs.push(([d.fs_type.clone(), d.dev.clone(), path_label(&d.path), kind.into()], e.estimate));
            }
        }
    }
    family(
        o,
        "dentrylab_census_filesystem_dentries",
        "Hashed dentries of a filesystem (superblock) in the last census, by kind; estimated on a sample.",
        ["fs_type", "dev", "mount_point", "kind"],
        &fs,
    );
    family(
        o,
        "dentrylab_census_directory_dentries",
        "Hashed children of one of a filesystem's top directories in the last census, by kind; estimated on a sample.",
        ["fs_type", "dev", "path", "kind"],
        &dirs,
    );
}

fn family(o: &mut Out, name: &str, help: &str, keys: [&str; 4], rows: &[([String; 4], f64)]) {
    let labels: Vec<[(&str, &str); 4]> =
        rows.iter().map(|(v, _)| std::array::from_fn(|i| (keys[i], v[i].as_str()))).collect();
    let samples: Vec<(&[(&str, &str)], f64)> = labels.iter().zip(rows).map(|(l, (_, x))| (l.as_slice(), *x)).collect();
    o.family(name, help, &samples);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_paths_are_cut_with_a_hash_and_short_ones_kept() {
        assert_eq!(path_label("/var/lib/x"), "/var/lib/x");
        let a = format!("/{}/a", "x".repeat(200));
        let b = format!("/{}/b", "x".repeat(200));
        let (la, lb) = (path_label(&a), path_label(&b));
        assert!(la.len() <= MAX_PATH_LABEL + 16, "{la}");
        assert_ne!(la, lb);
        assert!(la.ends_with(&format!("~{:08x}", fnv1a(&a) >> 32)), "{la}");
        // Never cut inside a character.
        let u = "é".repeat(100);
        assert!(path_label(&u).contains('…'));
    }

    /// A census of the synthetic kernel, as a scrape shows it: promtool
    /// accepts it, and the label budget holds (K directories per filesystem).
    #[test]
    fn the_last_walk_as_metrics_passes_promtool() {
        let dir = tempfile::tempdir().unwrap();
        let (source, proc) = crate::census::synthetic::small(dir.path());
        let walk = status::census::Options { source, fraction: 1.0, top: 1 };
        let b = Background::default();
        b.store(status::census::collect(&walk, &proc), 0.25);
        let m = b.metrics();
        for line in [
            "dentrylab_census_walks_total 1",
            "dentrylab_census_up 1",
            "dentrylab_census_duration_seconds 0.25",
            "dentrylab_census_rejected_reads 1",
            "dentrylab_census_directory_dentries{fs_type=\"tmpfs\",dev=\"0:42\",path=\"/mnt/t/a\",kind=\"negative\"} 300",
            "dentrylab_census_filesystem_dentries{fs_type=\"ext4\",dev=\"7:3\",mount_point=\"/var/x\",kind=\"negative\"} 120",
        ] {
            assert!(m.contains(line), "{line} not in\n{m}");
        }
        // top 1: one directory per filesystem, two kinds each.
        assert_eq!(m.lines().filter(|l| l.starts_with("dentrylab_census_directory_dentries{")).count(), 4, "{m}");
        let out = std::process::Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(m.as_bytes())?;
                c.wait_with_output()
            })
            .expect("promtool (Prometheus' checker; .ci/run installs it) must be on the PATH");
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // A census that could not run: up 0, and no directories.
        let none = status::census::collect(
            &status::census::Options {
                source: crate::census::Source::of(&crate::procfs::ProcRoot::new(dir.path().join("none"))),
                fraction: 1.0,
                top: 1,
            },
            &proc,
        );
        b.store(none, 0.0);
        let m = b.metrics();
        assert!(m.contains("dentrylab_census_up 0") && !m.contains("census_directory"), "{m}");
    }

    #[test]
    fn before_the_first_walk_only_the_counter() {
        let b = Background::default();
        let m = b.metrics();
        assert!(m.contains("dentrylab_census_walks_total 0") && !m.contains("census_up"), "{m}");
    }
}
