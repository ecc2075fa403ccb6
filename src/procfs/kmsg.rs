//! `/dev/kmsg` records and the kernel messages that matter while a CPU is
//! held: soft lockups, RCU stalls and hung tasks.
//!
//! A record is `PRIO,SEQ,USEC,FLAGS[,...];MESSAGE` followed by optional
//! continuation lines that start with a space (key=value dictionary).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub level: u8,
    pub seq: u64,
    pub usec: u64,
    pub message: String,
}

/// Parses one record as read from `/dev/kmsg` (one `read` returns one).
pub(crate) fn parse_record(raw: &str) -> Option<Record> {
    let first = raw.lines().next()?;
    let (head, message) = first.split_once(';')?;
    let mut it = head.split(',');
    let prio: u32 = it.next()?.parse().ok()?;
    let seq = it.next()?.parse().ok()?;
    let usec = it.next()?.parse().ok()?;
    Some(Record { level: (prio & 7) as u8, seq, usec, message: message.to_string() })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    SoftLockup,
    RcuStall,
    HungTask,
}

/// A kernel message classified as one of the [`Kind`]s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Alert {
    pub kind: Kind,
    /// Kernel time stamp, microseconds since boot.
    pub usec: u64,
    pub message: String,
    /// For a soft lockup: the CPU, the "stuck for" seconds and the task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stuck_seconds: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// Classifies a message, or `None` when it is not one that dentrylab reports.
pub(crate) fn classify(rec: &Record) -> Option<Alert> {
    let m = rec.message.as_str();
    let kind = if m.contains("soft lockup") {
        Kind::SoftLockup
    } else if m.starts_with("rcu: INFO:") && m.contains("stall") {
        Kind::RcuStall
    } else if m.contains("blocked for more than") && m.starts_with("INFO: task ") {
        Kind::HungTask
    } else {
        return None;
    };
    let mut a =
        Alert { kind, usec: rec.usec, message: m.to_string(), cpu: None, stuck_seconds: None, task: None, pid: None };
    if kind == Kind::SoftLockup {
        // watchdog: BUG: soft lockup - CPU#0 stuck for 3s! [umount:1234]
        if let Some(rest) = m.split("CPU#").nth(1) {
            a.cpu = rest.split(|c: char| !c.is_ascii_digit()).next().and_then(|s| s.parse().ok());
        }
        if let Some(rest) = m.split("stuck for ").nth(1) {
            a.stuck_seconds = rest.split('s').next().and_then(|s| s.parse().ok());
        }
        if let (Some(open), Some(close)) = (m.rfind('['), m.rfind(']'))
            && open < close
            && let Some((task, pid)) = m[open + 1..close].rsplit_once(':')
        {
            a.task = Some(task.to_string());
            a.pid = pid.parse().ok();
        }
    }
    Some(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::fixture_dir;

    #[test]
    fn parses_captured_records() {
        let text = std::fs::read_to_string(fixture_dir("6.18").join("kmsg")).unwrap();
        let recs: Vec<_> = text.lines().filter_map(parse_record).collect();
        assert_eq!(recs.len(), text.lines().count());
        assert!(recs[0].message.starts_with("Linux version"));
        assert!(recs.windows(2).all(|w| w[0].seq < w[1].seq));
        assert!(recs.iter().all(|r| classify(r).is_none()));
    }

    #[test]
    fn soft_lockup_line() {
        let text = std::fs::read_to_string(fixture_dir("6.18").join("kmsg-soft-lockup")).unwrap();
        let alerts: Vec<_> = text.lines().filter_map(parse_record).filter_map(|r| classify(&r)).collect();
        let lock = alerts.iter().find(|a| a.kind == Kind::SoftLockup).expect("a soft lockup");
        assert_eq!(lock.task.as_deref(), Some("umount"));
        assert!(lock.stuck_seconds.unwrap() >= 2);
        assert!(lock.cpu.is_some() && lock.pid.is_some());
    }

    #[test]
    fn classifies_literals() {
        let r =
            parse_record("0,812,2973617,-;watchdog: BUG: soft lockup - CPU#25 stuck for 22s! [atop:968884]").unwrap();
        let a = classify(&r).unwrap();
        assert_eq!(a.kind, Kind::SoftLockup);
        assert_eq!((a.cpu, a.stuck_seconds, a.pid), (Some(25), Some(22), Some(968884)));
        assert_eq!(a.task.as_deref(), Some("atop"));
        let r = parse_record("3,900,5000,-;rcu: INFO: rcu_preempt self-detected stall on CPU").unwrap();
        assert_eq!(classify(&r).unwrap().kind, Kind::RcuStall);
        let r = parse_record("3,901,5001,-;INFO: task umount:77 blocked for more than 120 seconds.").unwrap();
        assert_eq!(classify(&r).unwrap().kind, Kind::HungTask);
        assert!(parse_record("garbage").is_none());
        let r = parse_record("6,5,1,-;rcu: Hierarchical RCU implementation.").unwrap();
        assert!(classify(&r).is_none());
    }
}
