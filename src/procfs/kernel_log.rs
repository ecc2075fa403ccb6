//! A kernel log, as `/dev/kmsg` records (`PRIO,SEQ,USEC,FLAGS;message`),
//! `dmesg` (`[  288.981488] message`) or `journalctl -k`
//! (`Nov 23 22:41:06 host kernel: message`, also `-o short-iso` and
//! `-o short-monotonic`), split into the reports that matter for the dcache:
//! soft lockups, RCU stalls and hung tasks. The kernel prints each report as
//! many records (the headline, the registers, `Call Trace:`, one frame per
//! line, `</TASK>`); they are gathered back into one report and its stack is
//! searched for the dcache's functions.

use std::io::BufRead;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::kmsg::{self, Kind};

/// Functions whose presence in a report's stack puts it in the dcache: the
/// tree walks and the LRU and shrinker paths that free dentries, and the
/// hash-chain lookups that grow with the cache.
pub(crate) const DCACHE_FUNCTIONS: &[&str] = &[
    "d_walk",
    "d_genocide",
    "shrink_dcache_parent",
    "shrink_dcache_sb",
    "shrink_dcache_for_umount",
    "shrink_dentry_list",
    "__dentry_kill",
    "dentry_kill",
    "dput",
    "select_collect",
    "select_collect2",
    "dentry_lru_isolate",
    "dentry_lru_isolate_shrink",
    "prune_dcache_sb",
    "super_cache_scan",
    "d_invalidate",
    "d_prune_aliases",
    "__d_lookup",
    "__d_lookup_rcu",
    "d_alloc_parallel",
    "fsnotify_set_children_dentry_flags",
    "__fsnotify_update_child_dentry_flags",
    "__fsnotify_parent",
];

/// A report longer than this many lines is cut (an RCU stall can dump every task).
pub(crate) const MAX_REPORT_LINES: usize = 400;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Report {
    pub kind: Kind,
    /// The time as the log gave it: seconds since boot, or the journal's wall clock.
    pub time: String,
    pub headline: String,
    pub task: Option<String>,
    pub pid: Option<u32>,
    /// Whether the stack (the RIP and the reliable frames) is in the dcache.
    pub dcache: bool,
    /// The dcache functions found, in stack order.
    pub dcache_functions: Vec<String>,
    /// The first frames of the stack (at most 12), for the reader.
    pub stack: Vec<String>,
    pub lines: usize,
}

/// One log line: (time, message), whichever of the formats it is in.
pub(crate) fn split_line(line: &str) -> Option<(String, &str)> {
    // /dev/kmsg: PRIO,SEQ,USEC,FLAGS;message (dictionary lines start with a space).
    if let Some((head, msg)) = line.split_once(';') {
        let f: Vec<&str> = head.split(',').collect();
        if f.len() >= 3 && f[..3].iter().all(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())) {
            let usec: u64 = f[2].parse().ok()?;
            return Some((format!("{}.{:06}", usec / 1_000_000, usec % 1_000_000), msg));
        }
    }
    if line.starts_with(' ') && line.contains('=') && !line.contains(';') {
        return None;
    }
    // dmesg, or journalctl -o short-monotonic: [  288.981488] (host kernel: )message
    if let Some(rest) = line.strip_prefix('[')
        && let Some((t, msg)) = rest.split_once(']')
        && t.trim().parse::<f64>().is_ok()
    {
        let msg = msg.strip_prefix(' ').unwrap_or(msg);
        let msg = msg.split_once(" kernel: ").map_or(msg, |(_, m)| m);
        return Some((t.trim().to_string(), msg));
    }
    // journalctl -k: "Nov 23 22:41:06 host kernel: message" or "2026-11-23T22:41:06+0000 host kernel: message".
    if let Some(i) = line.find(" kernel: ") {
        let head = &line[..i];
        let time = match head.rsplit_once(' ') {
            Some((t, _host)) => t.to_string(),
            None => head.to_string(),
        };
        let msg = &line[i + " kernel: ".len()..];
        // journalctl may keep dmesg's own stamp: "kernel: [  288.98] message".
        let msg = match msg.strip_prefix('[').and_then(|r| r.split_once("] ")) {
            Some((t, m)) if t.trim().parse::<f64>().is_ok() => m,
            _ => msg,
        };
        return Some((time, msg));
    }
    Some((String::new(), line))
}

fn starts_report(msg: &str) -> Option<kmsg::Alert> {
    kmsg::classify(&kmsg::Record { level: 0, seq: 0, usec: 0, message: msg.trim_end().to_string() })
}

/// The function of a stack line (`RIP: 0010:d_walk+0x97/0x290`,
/// ` d_walk+0x97/0x290`, ` ? foo+0x1/0x2` is unreliable and skipped).
pub(crate) fn frame(msg: &str) -> Option<&str> {
    let m = msg.trim();
    let m = match m.strip_prefix("RIP: ") {
        Some(r) => r.split_once(':').map_or(r, |(_, f)| f),
        None => m,
    };
    if m.starts_with("? ") {
        return None;
    }
    let (func, off) = m.split_once("+0x")?;
    (off.contains("/0x")
        && !func.is_empty()
        && func.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.'))
    .then_some(func)
}

/// `INFO: task umount:77 blocked for more than 120 seconds.` → (umount, 77).
fn hung_task(msg: &str) -> Option<(String, u32)> {
    let rest = msg.strip_prefix("INFO: task ")?;
    let (tp, _) = rest.split_once(" blocked for")?;
    let (t, p) = tp.rsplit_once(':')?;
    Some((t.to_string(), p.parse().ok()?))
}

/// `CPU: 0 UID: 0 PID: 2444 Comm: umount Not tainted ...` → (umount, 2444).
fn comm_line(msg: &str) -> Option<(String, u32)> {
    let pid = msg.split("PID: ").nth(1)?.split_whitespace().next()?.parse().ok()?;
    let comm = msg.split("Comm: ").nth(1)?.split_whitespace().next()?;
    Some((comm.to_string(), pid))
}

struct Open {
    r: Report,
}

impl Open {
    fn add(&mut self, msg: &str) {
        self.r.lines += 1;
        if (self.r.task.is_none() || self.r.pid.is_none())
            && let Some((t, p)) = comm_line(msg)
        {
            self.r.task.get_or_insert(t);
            self.r.pid.get_or_insert(p);
        }
        if let Some(f) = frame(msg) {
            if self.r.stack.len() < 12 {
                self.r.stack.push(f.to_string());
            }
            if DCACHE_FUNCTIONS.contains(&f) && !self.r.dcache_functions.iter().any(|d| d == f) {
                self.r.dcache_functions.push(f.to_string());
            }
        }
    }

    fn close(mut self) -> Report {
        self.r.dcache = !self.r.dcache_functions.is_empty();
        self.r
    }
}

/// Every report in the log, in order.
pub(crate) fn parse(r: impl BufRead) -> Result<Vec<Report>> {
    let mut out = Vec::new();
    let mut open: Option<Open> = None;
    for (i, line) in r.lines().enumerate() {
        let line = line.with_context(|| format!("kernel log: line {}: cannot read", i + 1))?;
        let Some((time, msg)) = split_line(&line) else { continue };
        if let Some(a) = starts_report(msg) {
            if let Some(o) = open.take() {
                out.push(o.close());
            }
            let (task, pid) = match (a.task.clone(), a.pid) {
                (Some(t), p) => (Some(t), p),
                _ => hung_task(msg).map_or((None, None), |(t, p)| (Some(t), Some(p))),
            };
            open = Some(Open {
                r: Report {
                    kind: a.kind,
                    time,
                    headline: msg.trim().to_string(),
                    task,
                    pid,
                    dcache: false,
                    dcache_functions: Vec::new(),
                    stack: Vec::new(),
                    lines: 1,
                },
            });
            continue;
        }
        if let Some(o) = open.as_mut() {
            o.add(msg);
            if msg.trim() == "</TASK>" || o.r.lines >= MAX_REPORT_LINES {
                // An RCU stall or hung task may print more than one stack;
                // keep gathering until the next headline unless cut.
                if o.r.kind == Kind::SoftLockup || o.r.lines >= MAX_REPORT_LINES {
                    out.push(open.take().expect("open").close());
                }
            }
        }
    }
    if let Some(o) = open {
        out.push(o.close());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_formats() {
        assert_eq!(split_line("0,345,288981488,-;watchdog: BUG: x"), Some(("288.981488".into(), "watchdog: BUG: x")));
        assert_eq!(split_line("4,360,288983489,-; ? radix"), Some(("288.983489".into(), " ? radix")));
        assert_eq!(split_line(" SUBSYSTEM=acpi"), None);
        assert_eq!(split_line("[  288.981488] watchdog: x"), Some(("288.981488".into(), "watchdog: x")));
        assert_eq!(
            split_line("Nov 23 22:41:06 node-1 kernel: watchdog: x"),
            Some(("Nov 23 22:41:06".into(), "watchdog: x"))
        );
        assert_eq!(
            split_line("2026-11-23T22:41:06+0000 node-1 kernel: [  12.5] watchdog: x"),
            Some(("2026-11-23T22:41:06+0000".into(), "watchdog: x"))
        );
    }

    #[test]
    fn frames() {
        assert_eq!(frame("RIP: 0010:d_walk+0x97/0x290"), Some("d_walk"));
        assert_eq!(frame(" kill_litter_super+0x18/0x50"), Some("kill_litter_super"));
        assert_eq!(frame(" ? radix_tree_delete_item+0x67/0xd0"), None);
        assert_eq!(frame(" <TASK>"), None);
        assert_eq!(hung_task("INFO: task umount:77 blocked for more than 120 seconds."), Some(("umount".into(), 77)));
    }
}
