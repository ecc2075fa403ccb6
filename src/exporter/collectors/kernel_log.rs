//! The `kernel_log` collector (`--kernel-log`): the soft lockups, RCU
//! stalls and hung tasks in the kernel log, as a counter that only goes
//! up for the process's life. Each scrape re-reads the log (the ring
//! buffer, or a saved file); a report is counted the first time a scrape
//! sees it (by its kind, time and headline), and stays counted when the
//! ring buffer has since dropped it. Fails when the log cannot be read
//! (`/dev/kmsg` needs CAP_SYSLOG where `kernel.dmesg_restrict` is 1).

use std::collections::HashSet;
use std::sync::Mutex;

use anyhow::{Result, anyhow};

use super::{Collector, Scrape, Setup};
use crate::exporter::text::Out;
use crate::status::kernel_log::KernelLog;

pub(crate) const NAME: &str = "kernel_log";

/// The reports seen so far, and how many of them were in the dcache.
#[derive(Default)]
pub(crate) struct Seen {
    keys: HashSet<String>,
    dcache: u64,
    other: u64,
}

impl Seen {
    /// Counts the reports of `log` not seen before.
    fn add(&mut self, log: &KernelLog) {
        for r in &log.reports {
            if self.keys.insert(format!("{:?}\u{0}{}\u{0}{}", r.kind, r.time, r.headline)) {
                if r.dcache {
                    self.dcache += 1;
                } else {
                    self.other += 1;
                }
            }
        }
    }

    fn encode(&self, o: &mut Out, log: &KernelLog) {
        o.typed(
            "dentrylab_kernel_lockups_total",
            "counter",
            "Soft lockups, RCU stalls and hung tasks seen in the kernel log since the exporter started (those in the \
             log at start included), by whether the stack was in the dcache; a report the ring buffer has dropped \
             since stays counted.",
            &[(&[("dcache", "true")], self.dcache as f64), (&[("dcache", "false")], self.other as f64)],
        );
        o.gauge(
            "dentrylab_kernel_log_reports",
            "Soft lockups, RCU stalls and hung tasks in the kernel log as read on this scrape (the ring buffer \
             forgets old ones).",
            Some(log.reports.len() as f64),
        );
    }
}

struct KernelLogCollector {
    seen: Mutex<Seen>,
}

pub(super) fn new(setup: &Setup) -> Option<Box<dyn Collector>> {
    setup.kernel_log.then(|| Box::new(KernelLogCollector { seen: Mutex::default() }) as Box<dyn Collector>)
}

impl Collector for KernelLogCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn update(&self, scrape: &Scrape<'_>, o: &mut Out) -> Result<()> {
        let log = scrape.reading.kernel_log.as_ref().ok_or_else(|| anyhow!("--kernel-log was not given"))?;
        let log = super::needs(log)?;
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.add(log);
        seen.encode(o, log);
        Ok(())
    }
}

/// One reading's families, for `status --textfile` (a process that reads once).
pub(crate) fn encode_once(o: &mut Out, log: &KernelLog) {
    let mut seen = Seen::default();
    seen.add(log);
    seen.encode(o, log);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(lines: &str) -> KernelLog {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("kmsg");
        std::fs::write(&p, lines).unwrap();
        crate::status::kernel_log::read(&crate::status::kernel_log::Source::File(p)).unwrap()
    }

    /// The ring buffer forgets a report: the counter keeps it, and counts a new one once.
    #[test]
    fn the_counter_never_goes_down() {
        let one = std::fs::read_to_string(crate::procfs::fixture_dir("6.18").join("kmsg-soft-lockup")).unwrap();
        let both = log(&one);
        assert!(!both.reports.is_empty(), "{both:?}");
        let mut seen = Seen::default();
        seen.add(&both);
        let total = seen.dcache + seen.other;
        assert_eq!(total, both.reports.len() as u64);
        // Forgotten by the ring buffer: nothing goes down.
        seen.add(&log(""));
        assert_eq!(seen.dcache + seen.other, total);
        // The same reports again: not counted twice.
        seen.add(&both);
        assert_eq!(seen.dcache + seen.other, total);
        // A new one, at another time: counted.
        // kmsg records: PRIO,SEQ,MICROSECONDS,-;TEXT
        let shifted = one.replace(",28898", ",98898");
        assert_ne!(shifted, one);
        seen.add(&log(&shifted));
        assert!(seen.dcache + seen.other > total, "{shifted}");
    }
}
