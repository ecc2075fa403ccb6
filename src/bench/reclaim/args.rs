//! `dentrylab reclaim`'s options as clap parses them, and the run's
//! [`Options`] they give (defaults resolved: the unobserved and unpinned
//! repetitions, the generator threads, `--fs overlay`'s stack, and the
//! probe's scheduling policy, which `--probe-policy` leaves to what this
//! process is permitted). The CPUs, which need the machine, are chosen by
//! the caller ([`crate::bench::common::choose_cpus`]); `--watchdog-check`'s threshold
//! list, `--no-save` and `--state-dir` are the caller's too. `cli` flattens
//! [`Args`] into its command and adds the output files.

use std::path::PathBuf;

use anyhow::Result;

use super::auto::{Auto, START};
use super::{methods::Method, options::Options};
use crate::bench::layers::WorkloadArgs;
use crate::error::UsageError;
use crate::probe::gap::Policy;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Sizes to sweep: a comma-separated list with suffixes (100k,2.5M,1.5G), 'quick' (250k,500k,1M,2M,4M,8M), 'wide' (100k,500k,1M,2M,5M,10M: the six sizes of the 5.10 node-lockup report, docs/background.md; 'seed' is the same), or 'auto': double from 500k until a size's median longest gap reaches 1 s, or the next size would need more than half of MemAvailable or of what the memory cgroup's limit leaves (even with --force), or the safety checks refuse it; 'auto:SIZE' also stops at SIZE. The output says what stopped it.
    /// An auto sweep is the node's calibration: unless --victims is given it also runs the standard victims (see --victims) where it can, as root with a CPU besides the reclaiming one (otherwise it says in one line why it ran without them), and saves their fits and the count at which each deadline of the node is first missed, which 'status' and the exporter read.
    #[arg(long, default_value = "quick", value_parser = parse_sweep_sizes, allow_hyphen_values = true)]
    pub sizes: SweepSizes,
    /// How the probe threads are scheduled: fifo (SCHED_FIFO at the top priority, as the watchdog's per-CPU stopper thread runs; needs root or CAP_SYS_NICE) or other (SCHED_OTHER). Default: fifo where permitted, else other; the output says which and why.
    #[arg(long, value_name = "POLICY", value_parser = |s: &str| s.parse::<Policy>())]
    pub probe_policy: Option<Policy>,
    /// Repetitions of each size (the longest gap is noisy: repeat and read the spread; the default sweep spends its time on more sizes rather than more repetitions, docs/method.md).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub reps: u32,
    /// Unobserved repetitions of each size (default: half of --reps, rounded up): the reclaim timed with no probe, no control probe and no contenders, alternating with the probed ones. The table's time and ns/dentry come from them; the probe's overhead (probed ÷ unobserved) is printed under the table. 0: none (times then include the probe). Fewer halves a --watchdog-check's run time.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub unobserved_reps: Option<u32>,
    /// Unpinned unobserved repetitions of each size (default: as many as --unobserved-reps): like those, but the reclaiming task is not pinned to --cpu, free to run on any allowed CPU as on a real node. They alternate with the pinned ones; the table and JSON give both times and their ratio (pinned ÷ unpinned). 0: none.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub unpinned_reps: Option<u32>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[arg(long, default_value = "umount", value_parser = parse_methods, help = super::methods::help())]
    pub method: Methods,
    /// Victims: during repetitions of their own (as many as --reps, beside the probed ones, so the probe's figures stay as they are), one thread per victim on each CPU other than the reclaiming one repeats a user-visible operation every 5 ms and records each call's latency, from 1 s before the reclaim (the control) to its end; the table gives each victim's longest call during the reclaim beside the longest stretch and the same victim outside it, where in the kernel it waited (its stack, read while it waited; needs root), and, for each deadline of a node (probe timeout, pod-startup SLO, soft lockup, RCU stall, hung task, node lease, runtime request), the smallest count at which some victim misses it (the pod-startup SLO: the pod-start victim; the node lease: not measured). Victims: umount (mount + umount of a 1 MiB tmpfs in a mount namespace of its own), netns (a new network namespace), fork-exec (fork, exec /bin/true, wait), stat (a cached file), cgroup (mkdir + rmdir of a memory cgroup), inotify (add and remove a watch), container (runsc run of /bin/true, start to exit; needs runsc), mariadb (a SELECT of one row by its key, over the unix socket of a MariaDB server the run starts in its sandbox, on a CPU other than the reclaiming one, and stops; needs mariadbd), pod-start (the last pod torn down and the next started as containerd and runc do it: a sandbox and an app container, their namespaces, cgroups, overlay rootfs, runc's mounts, pivot_root and the old root's detach, each step timed; the pod-startup SLO is its alone). A comma-separated list, 'standard' (umount,netns,fork-exec,stat,pod-start) or 'all'. umount, netns, cgroup, container, mariadb and pod-start need root. With every --method and --fs: the table then says which reclaim path stalls which victim.
    /// 'none': no victims (an auto sweep runs 'standard' without this flag).
    #[arg(long, value_name = "LIST", value_parser = parse_victims)]
    pub victims: Option<VictimList>,
    /// Run every repetition twice: alone, and with T threads doing path lookups in the same filesystem on the
    /// other CPUs during the reclaim.
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u32).range(1..=super::checks::MAX_CONTEND as i64))]
    pub contend: Option<u32>,
    /// Count to extrapolate the fit to (the nodes of the node-lockup report had 1.5G).
    #[arg(long, default_value = "1.5G", value_parser = crate::size::parse_count, allow_hyphen_values = true)]
    pub extrapolate: u64,
    /// CPU that runs the reclaim and its latency probe (default: the first allowed CPU).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Probe wake-up interval in microseconds.
    #[arg(long, default_value_t = crate::probe::gap::DEFAULT_INTERVAL.as_micros() as u64, value_parser = clap::value_parser!(u64).range(10..=100_000))]
    pub probe_interval_us: u64,
    /// A check: before the first probed repetition's reclaim, a full census of the kernel's dentry hash table names the top directory of the workload's filesystem and counts every directory the workload filled against what it made (exit 1 if they differ). Root and a kernel with /proc/kcore and BTF (see 'dentrylab census'); refused at once (one line, exit 1) where the census cannot run.
    #[arg(long)]
    pub census: bool,
    /// Run sizes that the safety checks refuse (more than half of MemAvailable or of what the memory cgroup's limit leaves, or a predicted monopolisation over 10 s).
    #[arg(long)]
    pub force: bool,
    /// Allow actions that affect the whole machine (--method drop-caches drops every unused dentry and inode on the node).
    #[arg(long)]
    pub allow_global: bool,
    /// Lower kernel.watchdog_thresh for the run and compare, size by size, the predicted lockups with what the kernel's soft-lockup watchdog reports (needs --allow-global; raises rcupdate.rcu_cpu_stall_timeout too when RCU would report a stretch first, since its report restarts the soft-lockup clock; the original values are restored however the run ends).
    #[arg(long)]
    pub watchdog_check: bool,
    /// watchdog_thresh to use with --watchdog-check, seconds (soft lockup after twice this); a list (1,2) runs the sweep once per threshold and reports, for each, the observed edge (largest size the watchdog let pass, smallest it fired at) against the predicted edge's 90% interval.
    #[arg(long, value_name = "S,...", value_delimiter = ',', default_values_t = [super::watchdog::CHECK_THRESH_SECONDS], value_parser = clap::value_parser!(u64).range(1..=60))]
    pub watchdog_thresh: Vec<u64>,
    /// Sample the reclaiming CPU with perf (call graphs, 4000 Hz, on the probe's clock) during each reclaim and
    /// report the kernel stacks that held it in the longest gap and over the whole reclaim; the verdict names
    /// the path behind the longest stretch. Needs perf (Debian: linux-perf), root and readable kernel symbols:
    /// without them, says so in one line and runs without it.
    #[arg(long)]
    pub profile: bool,
    /// Do not save the fit as this node's calibration (used by 'status').
    #[arg(long)]
    pub no_save: bool,
    /// Directory for the saved calibration [default: $DENTRYLAB_STATE_DIR, /var/lib/dentrylab as root, else ~/.local/state/dentrylab].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl Args {
    /// The run's options: `cpus` is the default generator thread count,
    /// `cpu` and `control_cpu` the CPUs chosen for `--cpu`. Usage errors
    /// (exit 2): an overlay layer named without `--fs overlay`,
    /// `--watchdog-check` without `--allow-global`; and `--probe-policy
    /// fifo` where this process may not use it is an error.
    pub(crate) fn options(&self, cpus: usize, cpu: usize, control_cpu: Option<usize>) -> Result<Options> {
        let (fs, overlay) = self.workload.fs()?;
        let (probe_policy, probe_policy_why) = Policy::choose(self.probe_policy)?;
        if self.watchdog_check && !self.allow_global {
            return Err(UsageError(
                "--watchdog-check changes kernel.watchdog_thresh for the whole machine during the run: add --allow-global"
                    .into(),
            )
            .into());
        }
        let unobserved_reps = self.unobserved_reps.unwrap_or(self.reps.div_ceil(2));
        let given = self.victims.as_ref().map(|v| v.0.as_slice());
        let allowed = crate::sys::allowed_cpus()?;
        let (victims, victims_skipped) =
            super::auto::victims(given, self.sizes.auto.is_some(), (crate::sys::is_root(), cpu, &allowed));
        Ok(Options {
            sizes: self.sizes.list.clone(),
            reps: self.reps,
            kind: self.workload.kind,
            layout: self.workload.layout,
            threads: self.workload.threads(cpus),
            fs,
            methods: self.method.0.clone(),
            contend: self.contend.unwrap_or(0) as usize,
            allow_global: self.allow_global,
            extrapolate: self.extrapolate,
            cpu,
            control_cpu,
            probe_interval_us: self.probe_interval_us,
            force: self.force,
            unobserved_reps,
            unpinned_reps: self.unpinned_reps.unwrap_or(unobserved_reps),
            profile: self.profile,
            overlay,
            auto: self.sizes.auto,
            probe_policy,
            probe_policy_why,
            victims,
            victims_skipped,
            census: self.census,
        })
    }
}

/// The sizes of a reclaim sweep: a list, or `auto` (the list then holds
/// the first size).
#[derive(Debug, Clone)]
pub(crate) struct SweepSizes {
    pub list: Vec<u64>,
    pub auto: Option<Auto>,
}

fn parse_sweep_sizes(s: &str) -> Result<SweepSizes, String> {
    let t = s.trim();
    if t == "auto" {
        return Ok(SweepSizes { list: vec![START], auto: Some(Auto { cap: None }) });
    }
    if let Some(cap) = t.strip_prefix("auto:") {
        let cap = crate::size::parse_count(cap).map_err(|e| format!("auto:SIZE caps the auto sweep: {e}"))?;
        return Ok(SweepSizes { list: vec![START.min(cap)], auto: Some(Auto { cap: Some(cap) }) });
    }
    crate::size::parse_sizes(s).map(|list| SweepSizes { list, auto: None })
}

/// The reclaim methods of a sweep, in the order given (one value to clap,
/// not a list of values).
#[derive(Debug, Clone)]
pub(crate) struct Methods(pub Vec<Method>);

fn parse_methods(s: &str) -> Result<Methods, String> {
    super::methods::parse_list(s).map(Methods)
}

/// `--victims`' list (one value to clap, not a list of values).
#[derive(Debug, Clone)]
pub(crate) struct VictimList(pub Vec<crate::probe::victims::Victim>);

fn parse_victims(s: &str) -> Result<VictimList, String> {
    if s.split(',').any(|w| w.trim() == "none") {
        return match s.trim() {
            "none" => Ok(VictimList(Vec::new())),
            _ => Err("'none' runs no victims: give it alone".into()),
        };
    }
    crate::probe::victims::parse_list(s).map(VictimList)
}
