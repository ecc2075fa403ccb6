//! The kernel's own report of a memory cgroup's OOM kill, as it prints it
//! to the log (`/dev/kmsg` records, `dmesg` or `journalctl -k` lines), and
//! the one line that says what filled the cgroup.
//!
//! A report (mm/oom_kill.c `dump_header`, mm/memcontrol.c
//! `mem_cgroup_print_oom_meminfo`) is many records: `TASK invoked
//! oom-killer: gfp_mask=0x…(FLAGS), order=N, …`, the call trace, `memory:
//! usage …kB, limit …kB, failcnt …`, on cgroup v1 `kmem: usage …kB`, then
//! `Memory cgroup stats for /PATH:` and one `name value` record per counter
//! (v1: `cache`, `rss`, …; v2: `anon`, `file`, `kernel`, …), the task
//! table, `oom-kill:constraint=…,oom_memcg=/PATH,…` and `Memory cgroup out
//! of memory: Killed process PID (COMM) total-vm:…kB, anon-rss:…kB, …`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::kernel_log::{frame, split_line};

/// Frames of the OOM killer, the charge and the page and slab allocators:
/// skipped to find the function that asked for the memory.
const MACHINERY: &[&str] = &[
    "dump_stack",
    "dump_header",
    "oom_kill_process",
    "out_of_memory",
    "mem_cgroup_out_of_memory",
    "mem_cgroup_oom",
    "try_charge",
    "charge_memcg",
    "__mem_cgroup_charge",
    "mem_cgroup_charge",
    "obj_cgroup_charge",
    "__memcg_slab_post_alloc_hook",
    "memcg_slab_post_alloc_hook",
    "__memcg_kmem_charge",
    "memcg_kmem_charge",
    "kmem_cache_alloc",
    "__kmem_cache_alloc",
    "__kmalloc",
    "kmalloc",
    "__alloc_pages",
    "alloc_pages",
    "__folio_alloc",
    "folio_alloc",
    "alloc_slab_page",
    "allocate_slab",
    "new_slab",
    "___slab_alloc",
    "__slab_alloc",
    "slab_alloc",
    "__alloc_frozen_pages",
    "alloc_frozen_pages",
];

/// Prefixes of a filesystem's own functions (the call site).
const FILESYSTEMS: &[&str] =
    &["ext4_", "xfs_", "btrfs_", "shmem_", "f2fs_", "jbd2_", "fuse_", "ovl_", "nfs_", "__ext4_", "__xfs_"];

/// One OOM report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct OomReport {
    /// The log's time stamp of the first line (seconds since boot for kmsg and dmesg).
    pub time: String,
    /// The task that invoked the OOM killer (whose allocation failed).
    pub task: String,
    pub gfp_mask: String,
    /// The flags the kernel printed for the mask: `GFP_NOFS`, `__GFP_NOFAIL`, …
    pub gfp_flags: Vec<String>,
    pub order: u32,
    /// The reliable frames, innermost first (at most 40).
    pub stack: Vec<String>,
    /// The function that asked for the memory (first frame past the OOM
    /// killer, the charge and the allocators) up to the filesystem's frames.
    pub call_site: Vec<String>,
    pub usage_kb: Option<u64>,
    pub limit_kb: Option<u64>,
    pub failcnt: Option<u64>,
    /// cgroup v1: `kmem: usage …kB` (kernel memory charged to the cgroup).
    pub kmem_kb: Option<u64>,
    /// The OOM cgroup's path, as the kernel printed it.
    pub memcg: Option<String>,
    /// The `Memory cgroup stats` counters (bytes, or counts for pgfault and the like).
    pub stats: BTreeMap<String, u64>,
    pub killed_pid: Option<u32>,
    pub killed_task: Option<String>,
    pub killed_anon_rss_kb: Option<u64>,
    pub killed_file_rss_kb: Option<u64>,
}

/// Which kind of memory filled the cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Filled {
    /// Kernel memory (slab: dentries, inodes, buffer heads; page tables, stacks).
    Kernel,
    /// The workload's own anonymous memory.
    Anon,
    /// Page cache.
    File,
    /// No kind held more than half.
    Mixed,
}

/// How the cgroup's usage at the kill splits, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Split {
    pub usage: u64,
    pub limit: Option<u64>,
    pub kernel: u64,
    pub anon: u64,
    pub file: u64,
    pub filled: Filled,
    /// kernel / usage.
    pub kernel_share: f64,
}

impl OomReport {
    fn stat(&self, names: &[&str]) -> Option<u64> {
        names.iter().find_map(|n| self.stats.get(*n).copied())
    }

    /// Whether the failing allocation could enter the filesystem (and so
    /// run the filesystem shrinkers: fs/super.c `super_cache_scan` stops
    /// at once without `__GFP_FS`).
    pub(crate) fn may_enter_fs(&self) -> bool {
        // Every GFP_* composite that includes __GFP_FS (GFP_KERNEL, GFP_USER,
        // GFP_HIGHUSER(_MOVABLE)), or the bare flag; GFP_NOFS, GFP_NOIO,
        // GFP_ATOMIC and GFP_NOWAIT do not.
        self.gfp_flags.iter().any(|f| {
            matches!(
                f.as_str(),
                "__GFP_FS" | "GFP_KERNEL" | "GFP_KERNEL_ACCOUNT" | "GFP_USER" | "GFP_HIGHUSER" | "GFP_HIGHUSER_MOVABLE"
            )
        }) || u64::from_str_radix(self.gfp_mask.trim_start_matches("0x"), 16).is_ok_and(|m| m & GFP_FS_BIT != 0)
    }

    /// The usage at the kill, split into kernel memory, anon and file.
    /// cgroup v1: kernel = `kmem: usage`, anon = `rss`, file = `cache`;
    /// v2: `kernel`, `anon`, `file` of the stats.
    pub(crate) fn split(&self) -> Option<Split> {
        let usage = self.usage_kb? * 1024;
        let kernel = match self.kmem_kb {
            Some(k) => k * 1024,
            None => self.stat(&["kernel"]).or_else(|| {
                let parts = ["slab", "kernel_stack", "pagetables", "percpu", "sock", "vmalloc"];
                let v: Vec<u64> = parts.iter().filter_map(|p| self.stats.get(*p).copied()).collect();
                (!v.is_empty()).then(|| v.iter().sum())
            })?,
        };
        let anon = self.stat(&["anon", "rss", "total_rss"]).unwrap_or(0);
        let file = self.stat(&["file", "cache", "total_cache"]).unwrap_or(0);
        let half = usage / 2;
        let filled = if kernel > half {
            Filled::Kernel
        } else if anon > half {
            Filled::Anon
        } else if file > half {
            Filled::File
        } else {
            Filled::Mixed
        };
        let kernel_share = if usage > 0 { kernel as f64 / usage as f64 } else { 0.0 };
        Some(Split { usage, limit: self.limit_kb.map(|l| l * 1024), kernel, anon, file, filled, kernel_share })
    }

    /// One line: what filled the cgroup, and the allocation that failed.
    /// It blames the workload's own memory only when its anon memory held
    /// more than half of the usage.
    pub(crate) fn finding(&self) -> String {
        let mib = |b: u64| format!("{:.1} MiB", b as f64 / 1048576.0);
        let mut line = match self.split() {
            Some(s) => {
                let limit = s.limit.map_or_else(|| "its limit".to_string(), |l| format!("limit {}", mib(l)));
                let parts = format!("{} kernel memory, {} anon, {} file", mib(s.kernel), mib(s.anon), mib(s.file));
                match s.filled {
                    Filled::Kernel => format!(
                        "OOM-killed at {limit}: {:.0}% kernel memory ({parts}): the cgroup was full of slab \
                         (dentries, inodes), not of the workload's own memory",
                        s.kernel_share * 100.0
                    ),
                    Filled::Anon => format!(
                        "OOM-killed at {limit}: the workload's own (anon) memory filled it ({parts}); give a larger \
                         --memory-limit"
                    ),
                    Filled::File => format!("OOM-killed at {limit}: page cache filled it ({parts})"),
                    Filled::Mixed => format!("OOM-killed at {limit}: no kind of memory held half of it ({parts})"),
                }
            }
            None => "OOM-killed (the kernel's report gave no usage)".to_string(),
        };
        let flags = if self.gfp_flags.is_empty() { self.gfp_mask.clone() } else { self.gfp_flags.join("|") };
        let site =
            if self.call_site.is_empty() { String::new() } else { format!(" in {}", self.call_site.join(" ← ")) };
        line.push_str(&format!("; the failing allocation was {flags} (order {}){site}", self.order));
        if self.may_enter_fs() {
            line.push_str(", which may enter the filesystem: its reclaim could run the dentry and inode shrinkers, and did not bring the cgroup under its limit");
        } else {
            line.push_str(", which may not enter the filesystem: its reclaim cannot run the dentry and inode shrinkers (super_cache_scan needs __GFP_FS)");
        }
        line
    }
}

/// `__GFP_FS` in the mask (include/linux/gfp_types.h: `___GFP_IO_BIT` is 6,
/// `___GFP_FS_BIT` 7 since 6.4; the mask printed is the raw value).
const GFP_FS_BIT: u64 = 0x80;

/// `exe invoked oom-killer: gfp_mask=0x408d40(GFP_NOFS|…), order=0, oom_score_adj=0`.
fn headline(msg: &str) -> Option<(String, String, Vec<String>, u32)> {
    let (task, rest) = msg.split_once(" invoked oom-killer: ")?;
    let rest = rest.strip_prefix("gfp_mask=")?;
    let (mask, rest) = match rest.find(['(', ',']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let mut flags = Vec::new();
    let rest = if let Some(r) = rest.strip_prefix('(') {
        let (f, r) = r.split_once(')')?;
        flags = f.split('|').filter(|s| !s.is_empty()).map(String::from).collect();
        r
    } else {
        rest
    };
    let order = rest.split("order=").nth(1).and_then(|o| o.split(',').next()).and_then(|o| o.trim().parse().ok())?;
    Some((task.trim().to_string(), mask.to_string(), flags, order))
}

/// `usage 12288kB, limit 12288kB, failcnt 1914` → the three.
fn usage_line(rest: &str) -> (Option<u64>, Option<u64>, Option<u64>) {
    let kb = |key: &str| {
        rest.split(key).nth(1).and_then(|v| v.split(|c: char| !c.is_ascii_digit()).next()).and_then(|v| v.parse().ok())
    };
    (kb("usage "), kb("limit "), kb("failcnt "))
}

/// `Killed process 17943 (exe) total-vm:78264kB, anon-rss:640kB, file-rss:4524kB, …`.
fn killed_line(r: &mut OomReport, msg: &str) {
    let Some(rest) = msg.split("Killed process ").nth(1) else { return };
    let mut it = rest.splitn(2, ' ');
    r.killed_pid = it.next().and_then(|p| p.parse().ok());
    let rest = it.next().unwrap_or("");
    if let Some(c) = rest.strip_prefix('(').and_then(|s| s.split_once(')')) {
        r.killed_task = Some(c.0.to_string());
    }
    let kb = |key: &str| rest.split(key).nth(1).and_then(|v| v.split("kB").next()).and_then(|v| v.parse().ok());
    r.killed_anon_rss_kb = kb("anon-rss:");
    r.killed_file_rss_kb = kb("file-rss:");
}

/// The function of the first frame past the OOM machinery, and the frames
/// up to the end of the first run of filesystem frames.
fn call_site(stack: &[String]) -> Vec<String> {
    let is = |f: &str, set: &[&str]| set.iter().any(|p| f.starts_with(p));
    let Some(start) = stack.iter().position(|f| !is(f, MACHINERY)) else { return Vec::new() };
    let rest = &stack[start..];
    match rest.iter().position(|f| is(f, FILESYSTEMS)) {
        Some(fs) => {
            let end = rest[fs..].iter().position(|f| !is(f, FILESYSTEMS)).map_or(rest.len(), |e| fs + e);
            rest[..end].to_vec()
        }
        None => rest[..1].to_vec(),
    }
}

/// Every OOM report in a log (any of the formats of [`split_line`]).
pub(crate) fn parse_reports(text: &str) -> Vec<OomReport> {
    let mut out: Vec<OomReport> = Vec::new();
    // Whether the current report is still open, and whether its stats block is.
    let (mut open, mut in_stats) = (false, false);
    for line in text.lines() {
        let Some((time, msg)) = split_line(line) else { continue };
        let msg = msg.trim_end();
        if let Some((task, mask, flags, order)) = headline(msg) {
            out.push(OomReport {
                time,
                task,
                gfp_mask: mask,
                gfp_flags: flags,
                order,
                stack: Vec::new(),
                call_site: Vec::new(),
                usage_kb: None,
                limit_kb: None,
                failcnt: None,
                kmem_kb: None,
                memcg: None,
                stats: BTreeMap::new(),
                killed_pid: None,
                killed_task: None,
                killed_anon_rss_kb: None,
                killed_file_rss_kb: None,
            });
            (open, in_stats) = (true, false);
            continue;
        }
        let Some(r) = out.last_mut().filter(|_| open) else { continue };
        if let Some(rest) = msg.strip_prefix("memory: ") {
            (r.usage_kb, r.limit_kb, r.failcnt) = usage_line(rest);
            in_stats = false;
        } else if let Some(rest) = msg.strip_prefix("kmem: ") {
            r.kmem_kb = usage_line(rest).0;
        } else if let Some(path) = msg.strip_prefix("Memory cgroup stats for ") {
            r.memcg = Some(path.trim_end_matches(':').to_string());
            in_stats = true;
        } else if msg.starts_with("Tasks state") || msg.starts_with("oom-kill:") {
            in_stats = false;
            if r.memcg.is_none()
                && let Some(p) = msg.split("oom_memcg=").nth(1)
            {
                r.memcg = p.split(',').next().map(String::from);
            }
        } else if msg.contains("Killed process ") {
            killed_line(r, msg);
            open = false;
        } else if in_stats {
            if let Some((k, v)) = msg.trim().split_once(' ')
                && let Ok(v) = v.trim().parse::<u64>()
            {
                r.stats.insert(k.to_string(), v);
            }
        } else if r.usage_kb.is_none()
            && r.stack.len() < 40
            && let Some(f) = frame(msg)
        {
            r.stack.push(f.trim_end_matches(".cold").to_string());
        }
    }
    for r in &mut out {
        r.call_site = call_site(&r.stack);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/kernel-log/oom-memcg-v1-temp-tables-12M.kmsg");
        std::fs::read_to_string(p).unwrap()
    }

    /// Two real reports of a 12 MiB v1 memory cgroup running temp-tables on
    /// ext4: one in the page cache's charge, one in a slab allocation that
    /// may not enter the filesystem.
    #[test]
    fn parses_the_recorded_reports() {
        let reports = parse_reports(&fixture());
        assert_eq!(reports.len(), 2);
        let (a, b) = (&reports[0], &reports[1]);
        assert_eq!(a.gfp_flags, vec!["GFP_HIGHUSER_MOVABLE", "__GFP_WRITE"]);
        assert!(a.may_enter_fs());
        assert_eq!(a.call_site, vec!["filemap_add_folio", "__filemap_get_folio", "ext4_da_write_begin"]);
        assert_eq!(b.gfp_mask, "0x408d40");
        assert_eq!(b.gfp_flags, vec!["GFP_NOFS", "__GFP_ZERO", "__GFP_NOFAIL", "__GFP_ACCOUNT"]);
        assert!(!b.may_enter_fs());
        assert_eq!(b.order, 0);
        assert_eq!(
            b.call_site,
            vec![
                "alloc_buffer_head",
                "folio_alloc_buffers",
                "create_empty_buffers",
                "ext4_block_write_begin",
                "ext4_da_write_begin"
            ]
        );
        assert_eq!((b.usage_kb, b.limit_kb, b.failcnt, b.kmem_kb), (Some(12288), Some(12288), Some(1914), Some(11588)));
        assert_eq!(b.memcg.as_deref(), Some("/jobs/job-0001/dentrylab-17936-2"));
        assert_eq!(b.stats.get("rss"), Some(&712704));
        assert_eq!(b.stats.get("cache"), Some(&4096));
        assert_eq!(
            (b.killed_pid, b.killed_task.as_deref(), b.killed_anon_rss_kb),
            (Some(17943), Some("exe"), Some(640))
        );
        let s = b.split().unwrap();
        assert_eq!(s.filled, Filled::Kernel);
        assert!((s.kernel_share - 11588.0 / 12288.0).abs() < 1e-9);
        let line = b.finding();
        for needle in [
            "OOM-killed at limit 12.0 MiB",
            "94% kernel memory",
            "0.7 MiB anon",
            "GFP_NOFS|__GFP_ZERO|__GFP_NOFAIL|__GFP_ACCOUNT",
            "ext4_da_write_begin",
            "may not enter the filesystem",
            "super_cache_scan",
        ] {
            assert!(line.contains(needle), "{needle:?} not in {line}");
        }
        assert!(!line.contains("give a larger"), "kernel memory filled it, not the workload's: {line}");
        assert!(a.finding().contains("may enter the filesystem"));
    }

    /// cgroup v2 prints `anon`, `file`, `kernel` and no `kmem:` line; a
    /// report whose anon memory filled the cgroup blames the workload.
    #[test]
    fn v2_report_and_anon_blame() {
        let log = "[  10.000001] big invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0\n\
                   [  10.000002] Call Trace:\n\
                   [  10.000003]  <TASK>\n\
                   [  10.000004]  dump_stack_lvl+0x57/0x80\n\
                   [  10.000005]  try_charge_memcg+0x422/0x6f0\n\
                   [  10.000006]  do_anonymous_page+0x1/0x2\n\
                   [  10.000007] memory: usage 65536kB, limit 65536kB, failcnt 0\n\
                   [  10.000008] swap: usage 0kB, limit 9007199254740988kB, failcnt 0\n\
                   [  10.000009] Memory cgroup stats for /job:\n\
                   [  10.000010] anon 60000000\n\
                   [  10.000011] file 1000000\n\
                   [  10.000012] kernel 2000000\n\
                   [  10.000013] Tasks state (memory values in pages):\n\
                   [  10.000014] Memory cgroup out of memory: Killed process 77 (big) total-vm:1kB, anon-rss:58000kB, file-rss:0kB, shmem-rss:0kB\n";
        let r = parse_reports(log);
        assert_eq!(r.len(), 1);
        let r = &r[0];
        assert!(r.may_enter_fs());
        assert_eq!(r.kmem_kb, None);
        assert_eq!(r.call_site, vec!["do_anonymous_page"]);
        let s = r.split().unwrap();
        assert_eq!((s.kernel, s.anon, s.file, s.filled), (2000000, 60000000, 1000000, Filled::Anon));
        assert!(r.finding().contains("the workload's own (anon) memory filled it"), "{}", r.finding());
        assert!(parse_reports("[  1.0] nothing here\n").is_empty());
    }
}
