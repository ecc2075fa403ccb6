//! The options of the node commands, `status` and `exporter`.

use std::path::PathBuf;

use clap::Args;

use super::OutputArgs;

pub(super) const STATUS_ABOUT: &str = "This node now: nr_dentry, nr_unused and nr_negative from /proc/sys/fs/dentry-state \
    and their bytes, memory, watchdog_thresh, vfs_cache_pressure and the preemption model; then, from the \
    calibration that 'reclaim' saved in the state directory (or a built-in conservative default when there is \
    none, named as such), the predicted time to reclaim every dentry in one walk, the predicted longest stretch \
    without a reschedule, and the distance to the soft-lockup threshold (2 × watchdog_thresh) as a ratio and as \
    a count; where the calibration measured what the node's other tasks wait for (reclaim --victims: the node \
    calibration runs the standard victims), the first incident: for each deadline of the node (a probe's 1 s \
    timeout, the 5 s pod-startup SLO, the watchdog, RCU's stall warning, the hung-task warning, the node lease, \
    the runtime request timeout), who misses it first, at what count, and how far the node is from it; the \
    pod-startup SLO is judged by the pod-start victim alone, and a deadline no victim measures (the node lease, \
    or the pod-startup SLO in a calibration without the pod-start victim) says 'not measured'.\n\n\
    Reads only world-readable files (never /proc/slabinfo): works as any user.\n\n\
    Levels, for each deadline: ok; warn when the predicted wait is at least half the deadline (the predicted \
    longest stretch against the soft-lockup threshold; it varies about 2× from run to run); danger when it \
    reaches the deadline; the upper end of the 90% interval first. The level is the worst over the soft-lockup \
    threshold and every deadline of the first incident, and one line names the deadline that set it; without \
    the victims' fits (an older calibration, the built-in default) the incidents are unknown and the level is \
    the soft-lockup one.\n\n\
    --census (root and BTF: a BPF walk where the kernel allows it, else /proc/kcore) adds where the dentries are: the top directories per \
    filesystem from a census of the kernel's dentry hash table (a 1% sample by default, counts with their 90% \
    interval); where it cannot run, one line says why and the rest goes on.\n\n\
    Exit status: 0; 3 when --fail-on warn and the level is warn; 4 when --fail-on is given and the level is \
    danger; 1 on a failure; 2 on bad input.";

pub(super) const EXPORTER_ABOUT: &str = "Serves the figures of 'status' as Prometheus metrics (dentrylab_* gauges, units in \
    their names) on http://ADDR/metrics. Each scrape reads dentry-state, meminfo and two sysctls (never \
    /proc/slabinfo) and reports its own duration; the calibration file is re-read when it changes. One \
    event-loop thread serves every connection (one request each) and --workers threads read the node, so a \
    slow client holds no thread: a request head must arrive within --header-timeout (default 3s) of the \
    connect and be at most 8 KiB (else 431), and past --max-requests scrapes in flight (default 40) /metrics \
    answers 503 at once. Read-only, runs as any user; stops on SIGTERM or Ctrl-C.\n\n\
    Every scrape adds a sample to a 10-minute window: dentrylab_dentries_growth_per_second, \
    dentrylab_seconds_to_lockup and dentrylab_seconds_to_first_incident appear from the second scrape on. --by-cgroup exports the --top cgroups \
    (default 10) and one \"other\" series; --kernel-log [FILE] exports dentrylab_kernel_lockups_total \
    {dcache=\"true|false\"} (re-reading /dev/kmsg or FILE at every scrape).\n\n\
    --census-interval D (at least 5m; root and BTF: a BPF walk where the kernel allows it, else /proc/kcore) walks the kernel's dentry hash \
    table every D on a thread of its own and exports the top --census-top directories (at most 20) of at most 16 \
    filesystems (dentrylab_census_*); scrapes serve the last walk, with its age and duration, and never walk.";

/// Where the node's figures and its calibration are read from.
#[derive(Debug, Args)]
pub(crate) struct NodeArgs {
    /// Where the proc filesystem is: the host's /proc mounted in a container, or a fixture tree laid out like /proc.
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    pub proc_root: PathBuf,
    /// Directory holding the calibration saved by 'reclaim' [default: $DENTRYLAB_STATE_DIR; else your own (~/.local/state/dentrylab, not for root), then the node's (/var/lib/dentrylab): the first that holds one, named in the output].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

/// What `status` and the exporter add to the node's figures on request.
#[derive(Debug, Args)]
pub(crate) struct NodeExtraArgs {
    /// List the memory cgroups holding the most kernel slab, with estimated dentries and Kubernetes names.
    #[arg(long)]
    pub by_cgroup: bool,
    /// With --by-cgroup: how many cgroups to list (the rest are summed as "other").
    #[arg(long, value_name = "N", requires = "by_cgroup", default_value_t = crate::status::cgroups::DEFAULT_TOP as u32,
          value_parser = clap::value_parser!(u32).range(1..=crate::status::cgroups::MAX_TOP as i64))]
    pub top: u32,
    /// With --by-cgroup: the memory cgroup hierarchy's root [default: found in /proc/self/mountinfo].
    #[arg(long, value_name = "DIR", requires = "by_cgroup")]
    pub cgroup_root: Option<PathBuf>,
    /// With --by-cgroup: where debugfs is mounted (exact counts from shrinker/sb-*/count when the kernel has them).
    #[arg(long, value_name = "DIR", requires = "by_cgroup", default_value = "/sys/kernel/debug")]
    pub debugfs: PathBuf,
    /// Find soft lockups, RCU stalls and hung tasks in the kernel log (/dev/kmsg, needs root) or in FILE (journalctl -k, dmesg, /dev/kmsg records), and whether each was in the dcache.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = crate::status::kernel_log::KMSG)]
    pub kernel_log: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    pub node: NodeArgs,
    #[command(flatten)]
    pub extra: NodeExtraArgs,
    /// Sample every INTERVAL (1s, 500ms, 2m) until Ctrl-C, a line each: the level and what set it, the dentries to the first incident and to the soft-lockup edge, the growth rate and the time to each at that rate.
    #[arg(long, value_name = "INTERVAL", value_parser = parse_watch)]
    pub watch: Option<std::time::Duration>,
    /// With --watch: the sliding window the growth is measured over.
    #[arg(long, value_name = "DURATION", requires = "watch", default_value = "60s", value_parser = parse_watch)]
    pub window: std::time::Duration,
    /// With --watch: stop after N samples instead of at Ctrl-C.
    #[arg(long, value_name = "N", requires = "watch", value_parser = clap::value_parser!(u32).range(2..))]
    pub samples: Option<u32>,
    /// Also write the metrics to PATH (must end in .prom) for node_exporter's textfile collector, atomically.
    #[arg(long, value_name = "PATH")]
    pub textfile: Option<PathBuf>,
    /// Exit 3 (warn) or 4 (danger) when the level reaches LEVEL: 'warn' or 'danger'.
    #[arg(long, value_name = "LEVEL", value_parser = parse_level)]
    pub fail_on: Option<crate::analysis::edge::Level>,
    /// Also list where the dentries are: the top directories per filesystem, from a census of the kernel's dentry hash table (root and BTF: a BPF walk where the kernel allows it, else /proc/kcore; where it cannot run, one line says why and the rest goes on). See 'dentrylab census'.
    #[arg(long, conflicts_with = "watch")]
    pub census: bool,
    /// With --census: the fraction of the hash buckets walked (1 = every bucket, exact counts); counts from a sample are estimates with their 90% interval.
    #[arg(long, value_name = "FRACTION", requires = "census", default_value = "1%", value_parser = crate::census::args::parse_fraction)]
    pub census_sample: f64,
    /// With --census: directories listed per filesystem.
    #[arg(long, value_name = "K", requires = "census", default_value_t = crate::status::census::DEFAULT_TOP as u32,
          value_parser = clap::value_parser!(u32).range(1..=crate::census::args::MAX_TOP as i64))]
    pub census_top: u32,
    /// Also one line per knob: what 'dentrylab advise' says to set, from the shipped mitigate results (the growth unknown: see 'dentrylab advise' for the times, effects and sources).
    #[arg(long, conflicts_with = "watch")]
    pub advise: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub(super) const ADVISE_ABOUT: &str = "What to set on this node, from its own numbers: its calibration (the one \
    'status' reads, or the built-in conservative default, named), its dentry count and growth (sampled from \
    dentry-state over --sample, or given with --growth), and recorded 'mitigate' results (--mitigate FILE, or \
    the results shipped with dentrylab, each named). Per knob the kernel has (fs.dentry-negative, \
    vm.vfs_cache_pressure, periodic drop_caches, a memory limit per cgroup, the negative-dentry limits where \
    the kernel has them, ...): its value now, the value to set, its measured effect on the count and on the \
    time to the first incident (the count at which some task first misses a deadline, else the soft-lockup \
    edge), its cost and its failure mode (an OOM kill instead of a reclaim; a drop_caches that is itself a \
    reclaim of every unused dentry at once). A knob no recorded result measured is listed with why.\n\n\
    Reads only world-readable files: works as any user. Exit status: 0; 1 when a --mitigate file cannot be \
    read or is not a mitigate result, or the node cannot be read; 2 on bad input.";

/// `dentrylab advise`.
#[derive(Debug, Args)]
pub(crate) struct AdviseArgs {
    #[command(flatten)]
    pub node: NodeArgs,
    /// A result written by 'dentrylab mitigate --json' (repeat for more) [default: the results shipped with dentrylab, recorded on this project's 6.18 VM].
    #[arg(long, value_name = "FILE")]
    pub mitigate: Vec<PathBuf>,
    /// The node's growth in dentries per second (20k, 1.5M; a trailing /s allowed) instead of sampling it.
    #[arg(long, value_name = "RATE", value_parser = parse_growth, allow_hyphen_values = true)]
    pub growth: Option<f64>,
    /// How long to sample dentry-state for the growth (1s to 10m).
    #[arg(long, value_name = "DURATION", default_value = "5s", conflicts_with = "growth", value_parser = parse_sample)]
    pub sample: std::time::Duration,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `--growth`: a count per second, `20k` or `20k/s`; a negative rate (a shrinking count) too.
fn parse_growth(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches("/s");
    let (neg, t) = t.strip_prefix('-').map_or((false, t), |r| (true, r));
    if t == "0" {
        return Ok(0.0);
    }
    let n = crate::size::parse_count(t)
        .map_err(|_| format!("{s:?} is not a rate of dentries per second (write for example 20k, 1.5M or 20k/s)"))?;
    Ok(if neg { -(n as f64) } else { n as f64 })
}

/// `--sample`: 1 s to 10 min.
fn parse_sample(s: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("{s:?} is not a duration from 1s to 10m (write for example 5s or 1m)");
    let d = crate::bench::mitigate::knobs::parse_duration(s).ok_or_else(bad)?;
    if !(1.0..=600.0).contains(&d.as_secs_f64()) {
        return Err(bad());
    }
    Ok(d)
}

#[derive(Debug, Args)]
pub(crate) struct ExporterArgs {
    /// Address to serve on (IP:PORT; port 0 picks a free one). Use 0.0.0.0:10366 to be scraped from other hosts.
    #[arg(long, value_name = "ADDR", default_value = crate::exporter::DEFAULT_LISTEN, value_parser = parse_listen)]
    pub listen: std::net::SocketAddr,
    /// Threads reading the node for scrapes: at most this many collections run at once, the others wait their turn (connections are served by one event-loop thread whatever this is).
    #[arg(long, value_name = "N", default_value_t = crate::exporter::DEFAULT_WORKERS as u32,
          value_parser = clap::value_parser!(u32).range(1..=crate::exporter::MAX_WORKERS as i64))]
    pub workers: u32,
    /// Time from the connect for the whole request head to arrive (100ms to 60s); a slower client is disconnected.
    #[arg(long, value_name = "DURATION", default_value = crate::exporter::DEFAULT_HEADER_TIMEOUT,
          value_parser = parse_header_timeout)]
    pub header_timeout: std::time::Duration,
    /// Scrapes of /metrics in flight at once; one more is answered 503 at once (as node_exporter's --web.max-requests). 0: no bound.
    #[arg(long, value_name = "N", default_value_t = crate::exporter::DEFAULT_MAX_REQUESTS as u32,
          value_parser = clap::value_parser!(u32).range(0..=crate::exporter::MAX_MAX_REQUESTS as i64))]
    pub max_requests: u32,
    /// Log lines on stderr (the address served, a collector that fails, a census that cannot run): text, or json (one object a line).
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// TLS and basic auth from a file in the format of Prometheus' exporter-toolkit (node_exporter's --web.config.file, which is accepted too): tls_server_config.cert_file/key_file, basic_auth_users with bcrypt hashes. Read at start: an error in the file, or a certificate or key it names that is not one, stops the exporter with exit 2; a file that cannot be read, with exit 1.
    #[arg(long, visible_alias = "web.config.file", value_name = "PATH")]
    pub web_config_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub node: NodeArgs,
    #[command(flatten)]
    pub extra: NodeExtraArgs,
    /// Walk the kernel's dentry hash table every INTERVAL (at least 5m) in the background and export the top directories per filesystem (dentrylab_census_*; root and BTF: a BPF walk where the kernel allows it, else /proc/kcore). Scrapes serve the last walk, with its age and duration.
    #[arg(long, value_name = "INTERVAL", value_parser = parse_census_interval)]
    pub census_interval: Option<std::time::Duration>,
    /// With --census-interval: directories exported per filesystem (at most 20; at most 16 filesystems).
    #[arg(long, value_name = "K", requires = "census_interval", default_value_t = crate::exporter::census::DEFAULT_TOP as u32,
          value_parser = clap::value_parser!(u32).range(1..=crate::exporter::census::MAX_TOP as i64))]
    pub census_top: u32,
    /// With --census-interval: the fraction of the hash buckets each walk reads (1 = every bucket).
    #[arg(long, value_name = "FRACTION", requires = "census_interval", default_value = "1%", value_parser = crate::census::args::parse_fraction)]
    pub census_sample: f64,
}

/// `--census-interval`: at least 5 minutes (a walk reads the whole hash
/// table's sample; a node's census changes slowly), at most a day.
fn parse_census_interval(s: &str) -> Result<std::time::Duration, String> {
    let d = crate::bench::mitigate::knobs::parse_duration(s)
        .ok_or_else(|| format!("{s:?} is not a duration (write for example 5m, 15m or 1h)"))?;
    let min = crate::exporter::census::MIN_INTERVAL;
    if d < min || d.as_secs() > 86_400 {
        return Err(format!(
            "{s} is outside 5m to 24h: a census walks the kernel's hash table, at most every 5 minutes"
        ));
    }
    Ok(d)
}

/// `--watch` and `--window`: `500ms`, `2s`, `5m`, from 100 ms to 1 day.
fn parse_watch(s: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("{s:?} is not a duration from 100ms to 24h (write for example 2s, 500ms or 5m)");
    let d = crate::bench::mitigate::knobs::parse_duration(s).ok_or_else(bad)?;
    if !(0.1..=86400.0).contains(&d.as_secs_f64()) {
        return Err(bad());
    }
    Ok(d)
}

/// `--header-timeout`: `3s`, `500ms`, from 100 ms to 60 s.
fn parse_header_timeout(s: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("{s:?} is not a duration from 100ms to 60s (write for example 3s or 500ms)");
    let d = crate::bench::mitigate::knobs::parse_duration(s).ok_or_else(bad)?;
    if !(0.1..=60.0).contains(&d.as_secs_f64()) {
        return Err(bad());
    }
    Ok(d)
}

fn parse_level(s: &str) -> Result<crate::analysis::edge::Level, String> {
    s.parse()
}

fn parse_listen(s: &str) -> Result<std::net::SocketAddr, String> {
    s.parse().map_err(|_| format!("{s:?} is not an IP:PORT address (for example 127.0.0.1:10366 or [::1]:10366)"))
}
