//! `dentrylab mitigate` as a [`Benchmark`]: its command line, and the
//! steps the generic handler runs.

use anyhow::{Context as _, Result};

use super::{Edge, MitigateResult, Options};
use crate::bench::common::{Benchmark, Context, WithJson};
use crate::error::UsageError;
use crate::sandbox::{self, Sandbox};
use crate::sys;

/// A/B of mitigations on a workload in a memory cgroup.
pub(crate) struct Mitigate;

impl Benchmark for Mitigate {
    type Args = WithJson<super::Args>;
    type Plan = Options;
    type Result = MitigateResult;

    const ABOUT: &'static str = "Test dentry-cache mitigations A/B (sysctls, periodic drop_caches, MariaDB options) on a workload in a memory cgroup";
    const LONG_ABOUT: Option<&'static str> = Some(LONG_ABOUT);
    const DISPLAY_ORDER: usize = 4;
    const MINIMAL_ARGS: &'static [&'static str] = &["--workload", "lookups"];
    const INTERNAL: &'static [&'static dyn crate::sys::internal::InternalCommand] =
        &[&super::one::WORKER_ENTRY, &super::containers::WORKER_ENTRY];

    fn plan(a: Self::Args, cx: &Context) -> Result<Options> {
        let cpus = sys::allowed_cpus()?;
        let cpu = match a.args.cpu {
            Some(c) if !cpus.contains(&c) => {
                return Err(UsageError(format!(
                    "--cpu {c}: this process may only run on CPUs {cpus:?}; choose one of them"
                ))
                .into());
            }
            Some(c) => c,
            None => *cpus.last().context("no CPU is available to this process")?,
        };
        // This node's lockup edge, from its calibration (as `status` finds it).
        let edge = (cx.lockup_edge)(a.args.state_dir.as_deref())
            .ok()
            .and_then(|e| e.dentries.map(|d| Edge { dentries: d, calibration: e.calibration }));
        let opts = a.args.options(cpu, edge)?;
        super::validate(&opts)?;
        Ok(opts)
    }

    fn run(opts: &mut Options, cx: &Context, announce: &dyn Fn(&str)) -> Result<MitigateResult> {
        // Guardians first, outside the sandbox: the sysctls' originals and the
        // cgroups (with the server in them) are put right however this ends.
        let sysctls = super::knobs::Sysctls::guard(&opts.settings)?;
        let guardian = sandbox::cgroup::Guardian::start(cx.proc)?;
        let mut sandbox = Sandbox::enter()?;
        sandbox.adopt(guardian);
        super::run(opts, sysctls, &mut sandbox, cx.proc, announce)
    }
}

/// `--help` below its one line.
const LONG_ABOUT: &str = "Runs a workload that grows the dentry cache under every combination of the --setting \
values (the first values are the baseline), each combination in a fresh filesystem of the sandbox with the \
workload's processes in a fresh memory cgroup limited to --memory-limit, so the memory pressure is the run's own. \
Every second it samples dentry-state (total, unused, negative), the cgroup's kernel memory, the workload's \
operations (queries for mariadb) and the longest stretch the latency probe sees on the workload's CPU. Per \
combination: dentries at the end and at the peak, growth per minute and per 1,000 operations, the negative \
share, the longest stretch, the throughput relative to the baseline (with its spread over --reps), and where 30 \
days of that growth would put the node against its lockup edge. Then a verdict line per knob.\n\n\
Knobs: vm.vfs_cache_pressure=N, vm.vfs_cache_pressure_denom=N, fs.dentry-negative=0|1, and \
drop-caches-every=DURATION|off (dentrylab writes 2 to /proc/sys/vm/drop_caches on that period, from the \
probed CPU, so the drops' own stretch is measured; one value compares it with no drops). All of them act on the \
whole machine: --allow-global is required, and every sysctl's original value is written back when the run ends, \
however it ends (a guardian process does it even after SIGKILL); the output names what was changed and \
restored.\n\n\
Workloads: temp-tables (create, write 4 KiB, unlink uniquely named files, as MariaDB's on-disk temporary \
tables), lookups (stat names that do not exist), files (create files that stay), and mariadb: a real MariaDB \
server (mariadbd, started by dentrylab with --no-defaults in the sandbox, as the mysql user, datadir and tmpdir on \
the sandbox's filesystem, a unix socket, --skip-networking) driven by --clients connections with GROUP BY queries \
that need an on-disk temporary table, Aria and InnoDB temporary tables and INFORMATION_SCHEMA scans. \
--mariadb-option NAME=VALUE (repeatable) adds one more row: the baseline settings with those server options \
(for example tmp_table_size=256M and max_heap_table_size=256M). containers: the life of 'dentrylab containers' \
over and over, one container at a time, all of it in the cgroup: a container in a mount namespace of its own on \
an overlay of a shared image, --container-workload (temp-tables, lookups, files or \
mixed=temp-tables=60,lookups=30,files=10; default mixed) for --container-ops operations (default 1k), its exit \
(the overlay goes with the namespace), its snapshot removed; per combination also the containers torn down per \
minute, the dentries each left on the host (what the run's filesystem still held at the end, per container) and \
the longest stretch of the teardowns (a probe of their own on the same CPU, during each teardown only).\n\n\
A rep that the cgroup's OOM killer ends is named in the notes and the run goes on with the other \
combinations, whose results are kept; the run fails only when every combination was OOM-killed.\n\n\
Default --memory-limit: the cgroup's usage once the workload is set up (for mariadb: the server started and its \
tables loaded), plus a headroom for its own memory, plus twice the largest growth measured for the workload over \
--duration, at most half of MemAvailable (see --memory-limit; docs/mitigate.md): a default run does not reach its \
limit and runs to its duration. A limit that is reached may OOM-kill the workload rather than make the cgroup \
reclaim its dentries (docs/memory-limit.md): ask for one with --memory-limit, or compare several with --setting \
memory-limit=16M,64M. Keep runs that change sysctls short on shared machines.";
