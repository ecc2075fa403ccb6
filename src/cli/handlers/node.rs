//! `status` and `exporter`: this node now, as a table, JSON, a textfile, a
//! watch, or Prometheus metrics.

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli;
use crate::error::UsageError;
use crate::exporter;
use crate::output::{self, Outputs, Paths};
use crate::procfs::ProcRoot;
use crate::report;
use crate::state;
use crate::status;

/// The status options `status` and `exporter` share.
fn node_options(a: cli::NodeArgs, x: cli::NodeExtraArgs) -> status::Options {
    let mut o =
        status::Options::basic(ProcRoot::new(a.proc_root), a.state_dir.map_or_else(state::read_dirs, |d| vec![d]));
    if x.by_cgroup {
        o.by_cgroup = Some(status::cgroups::Options { root: x.cgroup_root, top: x.top as usize, debugfs: x.debugfs });
    }
    o.kernel_log = x.kernel_log.map(|p| {
        if p == std::path::Path::new(status::kernel_log::KMSG) {
            status::kernel_log::Source::Kmsg
        } else {
            status::kernel_log::Source::File(p)
        }
    });
    o
}

/// `dentrylab status`: once, or every INTERVAL with `--watch`.
pub(crate) fn status(a: cli::StatusArgs) -> Result<ExitCode> {
    if let Some(p) = &a.textfile
        && p.extension().is_none_or(|e| e != "prom")
    {
        return Err(UsageError(format!(
            "--textfile {}: node_exporter's textfile collector reads only files ending in .prom",
            p.display()
        ))
        .into());
    }
    let mut out = Outputs::open(&Paths::json(&a.output))?;
    let mut opts = node_options(a.node, a.extra);
    if a.census {
        opts.census = Some(status::census::Options {
            source: crate::census::Source::of(&opts.proc),
            fraction: a.census_sample,
            top: a.census_top as usize,
        });
    }
    if let Some(every) = a.watch {
        opts.growth_window_seconds = Some(a.window.as_secs_f64());
        return watch(&opts, every, a.samples, &mut out);
    }
    let s = status::run(&opts)?;
    let mut text = report::table::status(&s);
    if a.advise {
        text += &super::advise::for_status(&s, &opts.proc)?;
    }
    out.emit(&text, &s)?;
    if let Some(p) = &a.textfile {
        output::write_atomic(p, &exporter::metrics::encode(&s, s.collection_seconds))?;
    }
    Ok(ExitCode::from(status::exit_code(s.level, a.fail_on)))
}

/// `status --watch`: one line per sample (and one JSON object per line
/// with --json) until Ctrl-C or `samples`.
fn watch(
    opts: &status::Options,
    every: std::time::Duration,
    samples: Option<u32>,
    out: &mut Outputs,
) -> Result<ExitCode> {
    let collector = status::Collector::new(opts);
    let start = std::time::Instant::now();
    let mut n = 0u32;
    loop {
        let s = collector.collect()?;
        let line = report::node::watch_line(&s, start.elapsed().as_secs_f64());
        out.print(&format!("{line}\n"));
        if let Some(j) = out.json.as_mut() {
            j.write_str(&(serde_json::to_string(&s)? + "\n"))?;
        }
        n += 1;
        if samples.is_some_and(|m| n >= m) {
            return Ok(ExitCode::SUCCESS);
        }
        // Sample on a fixed schedule so the interval does not drift by the collection time.
        let next = start + every * n;
        std::thread::sleep(next.saturating_duration_since(std::time::Instant::now()));
    }
}

/// `dentrylab exporter`: serve /metrics until SIGTERM or Ctrl-C.
pub(crate) fn exporter(a: cli::ExporterArgs) -> Result<ExitCode> {
    exporter::log::init(if a.log_format == "json" {
        exporter::log::Format::Json
    } else {
        exporter::log::Format::Text
    })?;
    let mut status = node_options(a.node, a.extra);
    status.growth_window_seconds = Some(status::growth::EXPORTER_WINDOW_SECONDS);
    let limits = exporter::server::Limits { header_timeout: a.header_timeout, max_requests: a.max_requests as usize };
    let census = a.census_interval.map(|interval| exporter::census::Options {
        interval,
        walk: status::census::Options {
            source: crate::census::Source::of(&status.proc),
            fraction: a.census_sample,
            top: a.census_top as usize,
        },
    });
    let web = match &a.web_config_file {
        Some(f) => exporter::web_config::load(f)?,
        None => exporter::web_config::WebConfig::default(),
    };
    let opts = exporter::Options { listen: a.listen, workers: a.workers as usize, limits, status, census, web };
    // As PID 1 in a container the default action of SIGTERM is ignored:
    // handle it. Nothing to clean up, the exporter only reads.
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT])
        .context("cannot handle SIGTERM")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if signals.forever().next().is_some() {
                std::process::exit(0);
            }
        })
        .context("cannot start the signal thread (raise the process's thread limit: ulimit -u, the pids cgroup)")?;
    exporter::run(&opts, &|url, with| {
        tracing::info!("dentrylab exporter: listening on {url} ({with})");
    })?;
    Ok(ExitCode::SUCCESS)
}
