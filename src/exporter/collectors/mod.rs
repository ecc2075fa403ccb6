//! The exporter's collectors, one file per source, node_exporter style:
//! the node's dentry counts, the calibration's predictions, the first
//! incident, the cgroups, the kernel log and the census. Each scrape runs
//! every collector turned on; one that fails has its families left out,
//! `dentrylab_scrape_collector_success{collector}` 0 and one log line,
//! and the scrape still answers 200 with the others.
//!
//! A collector is one file that declares its `NAME` and a `new` that
//! returns it when the exporter's options turn it on, and one line in
//! [`REGISTRY`].

pub(crate) mod calibration;
pub(crate) mod census;
pub(crate) mod cgroups;
pub(crate) mod dentries;
pub(crate) mod incidents;
pub(crate) mod kernel_log;

use std::sync::Arc;

use anyhow::Result;

use super::text::Out;
use crate::status::{Reading, StatusResult};

/// What a scrape's collectors read from: every source's outcome, and the
/// predictions when the node's figures and the calibration were both read.
pub(crate) struct Scrape<'a> {
    pub reading: &'a Reading,
    pub predicted: Option<&'a StatusResult>,
}

/// One source's families.
pub(crate) trait Collector: Send + Sync {
    fn name(&self) -> &'static str;
    /// Writes the families, or says why it could not (then none of them
    /// are served).
    fn update(&self, scrape: &Scrape<'_>, out: &mut Out) -> Result<()>;
}

/// What the collectors may be built from.
pub(crate) struct Setup {
    pub by_cgroup: bool,
    pub kernel_log: bool,
    pub census: Option<Arc<census::Background>>,
}

type Factory = fn(&Setup) -> Option<Box<dyn Collector>>;

/// Every collector, in the order of the exposition.
pub(crate) const REGISTRY: &[(&str, Factory)] = &[
    (dentries::NAME, dentries::new),
    (calibration::NAME, calibration::new),
    (incidents::NAME, incidents::new),
    (cgroups::NAME, cgroups::new),
    (kernel_log::NAME, kernel_log::new),
    (census::NAME, census::new),
];

/// The collectors the options turn on.
pub(crate) fn build(setup: &Setup) -> Vec<Box<dyn Collector>> {
    REGISTRY.iter().filter_map(|(_, new)| new(setup)).collect()
}

/// Runs every collector on one reading: their families, then the success
/// of each. A failure is logged once per scrape, one line naming the
/// collector and the error chain.
pub(crate) fn run(collectors: &[Box<dyn Collector>], reading: &Reading, out: &mut Out) {
    let predicted = reading.predicted();
    let scrape = Scrape { reading, predicted: predicted.as_ref() };
    let mut success = Vec::with_capacity(collectors.len());
    for c in collectors {
        let mut mine = Out(String::new());
        let ok = match c.update(&scrape, &mut mine) {
            Ok(()) => {
                out.0.push_str(&mine.0);
                true
            }
            // A collector whose input another collector failed to read is
            // at 0 too, and that collector's line says why.
            Err(e) if e.is::<Upstream>() => false,
            Err(e) => {
                tracing::warn!(collector = c.name(), error = %format!("{e:#}"), "collector failed");
                false
            }
        };
        success.push((c.name(), ok));
    }
    write_success(out, &success);
}

/// `dentrylab_scrape_collector_success`, one series a collector.
pub(crate) fn write_success(out: &mut Out, success: &[(&str, bool)]) {
    let labels: Vec<[(&str, &str); 1]> = success.iter().map(|(n, _)| [("collector", *n)]).collect();
    out.family(
        "dentrylab_scrape_collector_success",
        "1 when the collector read its source on this scrape, 0 when it failed (its families are then left out \
         and the exporter's log says why).",
        &labels.iter().zip(success).map(|(l, (_, ok))| (&l[..], if *ok { 1.0 } else { 0.0 })).collect::<Vec<_>>(),
    );
}

/// The collector's own source, or the error reading it (logged).
pub(super) fn needs<T>(what: &Result<T>) -> Result<&T> {
    what.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))
}

/// The input of another collector, which failed (and logged why).
#[derive(Debug)]
pub(super) struct Upstream(pub &'static str);

impl std::fmt::Display for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "needs what the {} collector reads, which failed", self.0)
    }
}

impl std::error::Error for Upstream {}

/// `Ok` when another collector's source was read.
pub(super) fn upstream<'a, T>(what: &'a Result<T>, collector: &'static str) -> Result<&'a T> {
    what.as_ref().map_err(|_| Upstream(collector).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each collector is registered once, under the name it reports, and
    /// the optional ones only when their option is on.
    #[test]
    fn the_registry_names_each_collector_once() {
        let mut names: Vec<&str> = REGISTRY.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len());
        let none = Setup { by_cgroup: false, kernel_log: false, census: None };
        let on: Vec<&str> = build(&none).iter().map(|c| c.name()).collect();
        assert_eq!(on, ["dentries", "calibration", "incidents"]);
        let all = Setup { by_cgroup: true, kernel_log: true, census: Some(Arc::default()) };
        let on: Vec<&str> = build(&all).iter().map(|c| c.name()).collect();
        assert_eq!(on, REGISTRY.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    }
}
