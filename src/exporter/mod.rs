//! `dentrylab exporter`: the figures of `status` as Prometheus metrics on
//! `/metrics`. Read-only: every scrape reads dentry-state, meminfo and two
//! sysctls through the proc root (never `/proc/slabinfo`, which is costly
//! on a huge slab) and re-reads the calibration only when its file changed.
//!
//! Each source is a collector of its own ([`collectors`]): one that
//! cannot be read (a calibration that does not parse, a kernel log it may
//! not open) leaves its families out and sets
//! `dentrylab_scrape_collector_success{collector}` to 0, and the scrape
//! still answers 200; the log ([`log`]) says why, one line.
//!
//! In: `status`'s collector (the proc root, the calibration). Out: HTTP
//! answers with the Prometheus text format ([`metrics`], also written by
//! `status --textfile`). Imports `status`, `state`, `probe` (the fixed
//! label sets), `census`, `analysis`, `sys`; imported only by `cli`.
//! Inside, one way: `text` (the exposition format) below `collectors`
//! (one file per source; `census` runs the background census,
//! `--census-interval`) below `metrics` and `collect` below `server`;
//! `web_config` (the `--web-config-file` format), `tls` and `auth` below
//! `server`.

mod auth;
mod collect;
pub(crate) mod collectors;
pub(crate) mod log;
pub(crate) mod metrics;
pub(crate) mod server;
pub(crate) mod text;
mod tls;
pub(crate) mod web_config;

pub(crate) use collectors::census;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::status::{self, Collector};

/// Default address: loopback only; `--listen 0.0.0.0:10366` to serve a
/// fleet. 10366 lies outside Prometheus' exporter port range
/// (9100–9999), which is fully allocated.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:10366";
/// Threads reading the node for scrapes (collections at once); the
/// connections themselves are all served by one event-loop thread.
pub(crate) const DEFAULT_WORKERS: usize = 4;
pub(crate) const MAX_WORKERS: usize = 64;
/// Time from accept for a request head to arrive: well under any scrape
/// interval, far above what a scrape on a LAN needs (milliseconds).
pub(crate) const DEFAULT_HEADER_TIMEOUT: &str = "3s";
/// Scrapes in flight at once past which `/metrics` answers 503
/// (node_exporter's `--web.max-requests` default).
pub(crate) const DEFAULT_MAX_REQUESTS: usize = 40;
pub(crate) const MAX_MAX_REQUESTS: usize = 100_000;
/// Connections the kernel queues before the event loop accepts them.
pub(crate) const ACCEPT_BACKLOG: i32 = 1024;

#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub listen: SocketAddr,
    pub workers: usize,
    pub limits: server::Limits,
    pub status: status::Options,
    /// `--census-interval`: the census collector.
    pub census: Option<census::Options>,
    /// `--web-config-file`: TLS, basic auth, headers (default: none).
    pub web: web_config::WebConfig,
}

/// Reads the node once (so a wrong proc root fails at start, exit 1; a
/// source that fails later, or another one now, is a collector at 0 and a
/// log line), sets up TLS (a certificate that cannot be used fails here,
/// exit 1), listens, starts the scrape workers (a thread that cannot be
/// started fails here, exit 1), announces the URL and what it serves
/// with, serves until killed.
pub(crate) fn run(opts: &Options, announce: &dyn Fn(&str, &str)) -> Result<()> {
    let collector = Arc::new(Collector::new(&opts.status));
    let first = collector.read();
    if let Err(e) = &first.node {
        return Err(anyhow::anyhow!("{e:#}")).context("reading the node before serving");
    }
    let calibration = match &first.calibration {
        Ok(c) => c.name.clone(),
        Err(e) => format!("unreadable ({e:#}): the calibration collector is at 0 until it is fixed"),
    };
    collector.forget_growth();
    let web = server::Web::new(&opts.web).map_err(|e| match &opts.web.file {
        Some(f) => web_config::about_file(f, e),
        None => e,
    })?;
    let listener = crate::sys::tcp_listener(opts.listen, ACCEPT_BACKLOG)?;
    let addr = listener.local_addr().context("listening socket address")?;
    let census = opts.census.clone().map(|c| census::Background::start(c, opts.status.proc.clone())).transpose()?;
    let sources = collectors::build(&collectors::Setup {
        by_cgroup: opts.status.by_cgroup.is_some(),
        kernel_log: opts.status.kernel_log.is_some(),
        census: census.clone(),
    });
    let scrapes = collect::Scrapes::start(collector, opts.workers, Arc::new(sources))?;
    let with = match web.describe() {
        d if d.is_empty() => format!("calibration: {calibration}"),
        d => format!("calibration: {calibration}; {d}"),
    };
    announce(&format!("{}://{addr}/metrics", web.scheme()), &with);
    if let Some(c) = census {
        c.go();
    }
    server::serve(listener, scrapes, opts.limits, web)
}
