//! `dentrylab gvisor` as a [`Benchmark`]: its command line, and the steps
//! the generic handler runs.

use anyhow::Result;

use super::{GvisorResult, Options};
use crate::bench::common::{Benchmark, Context, WithJson};
use crate::error::UsageError;

/// The same workload natively and inside runsc, side by side.
pub(crate) struct Gvisor;

impl Benchmark for Gvisor {
    type Args = WithJson<super::Args>;
    type Plan = Options;
    type Result = GvisorResult;

    const ABOUT: &'static str =
        "The same workload natively and inside gVisor's runsc: lookups against -dcache sizes, a build-like tree";
    const LONG_ABOUT: Option<&'static str> = Some(LONG_ABOUT);
    const DISPLAY_ORDER: usize = 6;
    const MINIMAL_ARGS: &'static [&'static str] = &["--runsc", "/bin/true"];
    const INTERNAL: &'static [&'static dyn crate::sys::internal::InternalCommand] = &[&super::worker::WORKER_ENTRY];

    const REPORTS: bool = false;

    fn plan(a: Self::Args, _cx: &Context) -> Result<Options> {
        let opts = a.args.options()?;
        if !nix::unistd::geteuid().is_root() {
            return Err(UsageError(
                "gvisor needs root (runsc run creates namespaces and mounts): run it as root".into(),
            )
            .into());
        }
        Ok(opts)
    }

    fn run(opts: &mut Options, _cx: &Context, announce: &dyn Fn(&str)) -> Result<GvisorResult> {
        super::run(opts, announce)
    }
}

/// `--help` below its one line.
const LONG_ABOUT: &str = "The same workload natively and inside gVisor (runsc, systrap platform), side by \
side in one run, with how many times slower each runsc configuration is than native.\n\n\
Workloads: lookup (stat of files picked at random from a tree of --files files in --dirs directories, made \
beforehand on the host; one untimed pass, then --seconds timed per thread count), lookup-missing (the same with \
names that do not exist: negative lookups), build (mkdir the directories, create every file, stat every file, \
unlink every file, rmdir: each step timed, and the whole).\n\n\
Inside runsc the workload runs as the sandbox's init process, on the tree bind-mounted at the same path (a gofer \
mount, directfs), the root being the host's / without overlay. --dcache sets runsc's -dcache: one global LRU of \
that many unreferenced dentries, or per-mount (runsc's default: 1,000 per mount). Configurations are interleaved \
round by round; figures are medians over --rounds. The host's dentry counters do not see the sentry's cache; \
counted instead: latency and throughput in the workload, the most host FDs the sentry held (one per cached gofer \
dentry with directfs), and runsc's metrics at exit (in the JSON).\n\n\
--dcache sizes within 1,000 of the open-file limit (ulimit -n) are refused: the sentry inherits it and holds one \
host FD per cached dentry, and lookups fail with EMFILE once the cache fills. runsc runs from a private mount \
namespace (runsc --network=none leaves a bind mount of a network namespace under its state directory).\n\n\
runsc: --runsc PATH, else $DENTRYLAB_RUNSC, else runsc on the PATH; bench/gvisor/install.sh builds it. Needs root.";
