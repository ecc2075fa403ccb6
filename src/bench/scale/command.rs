//! `dentrylab scale` as a [`Benchmark`]: its command line, and the steps
//! the generic handler runs.

use anyhow::Result;

use super::{Options, ScaleResult};
use crate::bench::common::{Benchmark, Context, WithJson};
use crate::sandbox::Sandbox;

/// Path-lookup throughput from 1 to N workers.
pub(crate) struct Scale;

impl Benchmark for Scale {
    type Args = WithJson<super::Args>;
    type Plan = Options;
    type Result = ScaleResult;

    const ABOUT: &'static str =
        "Path-lookup scalability: stat, negative stat, open+close, create+unlink from 1..N threads";
    const LONG_ABOUT: Option<&'static str> = Some(LONG_ABOUT);
    const DISPLAY_ORDER: usize = 5;
    const INTERNAL: &'static [&'static dyn crate::sys::internal::InternalCommand] = &[&super::procs::WORKER_ENTRY];

    fn plan(a: Self::Args, _cx: &Context) -> Result<Options> {
        let opts = a.args.options(crate::env::cpus())?;
        super::validate(&opts)?;
        Ok(opts)
    }

    fn run(opts: &mut Options, cx: &Context, announce: &dyn Fn(&str)) -> Result<ScaleResult> {
        let mut sandbox = Sandbox::enter()?;
        super::run(opts, &mut sandbox, cx.proc, announce)
    }
}

/// `--help` below its one line.
const LONG_ABOUT: &str = "Path-lookup scalability across CPUs: the 2002 dcache scalability paper's question, asked of today's RCU path walk (docs/background.md).\n\n\
For each operation and each worker count of the sweep, the workers repeat the operation for --seconds on a \
fresh filesystem in the sandbox. Operations: stat (an existing file 8 path components deep), stat-missing \
(a missing name in the same directory: a negative lookup), open-close (the deep file), create-unlink-shared \
(create+close+unlink, all workers in one directory), create-unlink-private (one directory per worker).\n\n\
Reported per count: operations/s, speedup and efficiency against perfect scaling from the smallest count \
(ops(n) / (n · ops(1))), the system-time share and how many CPUs were busy (getrusage per worker), and the \
per-call latency p50/p99 (one call in --sample-every timed with CLOCK_MONOTONIC). With --profile, two more \
steps at the largest count run under perf (one with cpu-clock samples, one with the lock-contention \
tracepoints) to name the kernel functions and locks the time goes to; what this machine cannot do is said, not guessed.\n\n\
tmpfs keeps no negative dentries, so stat-missing on tmpfs measures dentry allocation under the directory \
lock; use a disk filesystem (--fs) for cached negative lookups.";
