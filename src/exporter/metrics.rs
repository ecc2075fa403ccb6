//! The Prometheus text exposition format (0.0.4) of a scrape:
//! `dentrylab_*` families with units in their names and HELP/TYPE lines,
//! written by the collectors ([`super::collectors`]), then the exporter's
//! own: `dentrylab_build_info` and the scrape's duration. The same text is
//! written by `status --textfile` for node_exporter's textfile collector.
//! A figure that is unknown (no threshold, no fit) is left out rather than
//! given a made-up value.

use super::collectors::{self, Collector, calibration, cgroups, dentries, incidents, kernel_log};
use super::text::Out;
use crate::status::{Node, Reading, StatusResult};

/// The media type of the text format.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The git revision and compiler of this build (build.rs).
pub(crate) const REVISION: &str = env!("DENTRYLAB_REVISION");
pub(crate) const RUSTC: &str = env!("DENTRYLAB_RUSTC");

/// One exporter scrape: every collector on `reading`, then the
/// exporter's own families, `scrape_seconds()` last.
pub(crate) fn scrape(cs: &[Box<dyn Collector>], reading: &Reading, scrape_seconds: &dyn Fn() -> f64) -> String {
    let mut o = Out(String::with_capacity(8 * 1024));
    collectors::run(cs, reading, &mut o);
    own(&mut o, scrape_seconds());
    o.0
}

/// `status --textfile`: `s`, read whole (every collector succeeded: `status`
/// fails otherwise), with `scrape_seconds` as the time it took; the same
/// text as a scrape of the same node.
pub(crate) fn encode(s: &StatusResult, scrape_seconds: f64) -> String {
    let mut o = Out(String::with_capacity(8 * 1024));
    let node = Node {
        dentries: s.dentries,
        memory: s.memory,
        environment: s.environment.clone(),
        rate: s.growth.as_ref().map(|g| g.rate),
    };
    dentries::encode(&mut o, &node);
    calibration::encode(&mut o, s);
    incidents::encode_status(&mut o, s);
    let mut read = vec![(dentries::NAME, true), (calibration::NAME, true), (incidents::NAME, true)];
    if let Some(b) = &s.by_cgroup {
        cgroups::encode(&mut o, b);
        read.push((cgroups::NAME, true));
    }
    if let Some(k) = &s.kernel_log {
        kernel_log::encode_once(&mut o, k);
        read.push((kernel_log::NAME, true));
    }
    collectors::write_success(&mut o, &read);
    own(&mut o, scrape_seconds);
    o.0
}

fn own(o: &mut Out, scrape_seconds: f64) {
    o.family(
        "dentrylab_build_info",
        "The dentrylab build serving these figures: its version, git revision and compiler (value always 1).",
        &[(&[("version", env!("CARGO_PKG_VERSION")), ("revision", REVISION), ("rustc", RUSTC)], 1.0)],
    );
    o.gauge(
        "dentrylab_scrape_duration_seconds",
        "Time taken to read the node and compute these figures.",
        Some(scrape_seconds),
    );
}
