//! `dentrylab churn` as a [`Benchmark`]: its command line, and the steps
//! the generic handler runs.

use anyhow::Result;

use super::{ChurnResult, Options};
use crate::bench::common::{Benchmark, Context, WithJson};
use crate::sandbox::Sandbox;

/// A parallel unlink of a large tree.
pub(crate) struct Churn;

impl Benchmark for Churn {
    type Args = WithJson<super::Args>;
    type Plan = Options;
    type Result = ChurnResult;

    const ABOUT: &'static str = "Parallel unlink of a large tree: throughput timeline, dentry high-water mark, oscillation (the 2011 unlink-regression report's experiment; docs/background.md)";
    const LONG_ABOUT: Option<&'static str> = Some(LONG_ABOUT);
    const DISPLAY_ORDER: usize = 3;

    fn plan(a: Self::Args, cx: &Context) -> Result<Options> {
        let opts = a.args.options(crate::env::cpus());
        super::validate(&opts)?;
        super::preflight(&opts, cx.proc)?;
        Ok(opts)
    }

    fn run(opts: &mut Options, cx: &Context, announce: &dyn Fn(&str)) -> Result<ChurnResult> {
        let mut sandbox = Sandbox::enter()?;
        super::run(opts, &mut sandbox, cx.proc, announce)
    }
}

/// `--help` below its one line.
const LONG_ABOUT: &str = "The experiment of the 2011 unlink-regression report (docs/background.md): an N-way parallel unlink of a large tree.\n\n\
A fresh ext4 (or xfs) in the sandbox gets --files empty files spread over --dirs directories; it is then \
unmounted and mounted again so the removal starts with a cold cache, as the report's did (--warm skips this). \
--workers threads unlink the files, each its share of the directories, while the unlink counter, dentry-state \
(nr_dentry, nr_negative) and meminfo are sampled every --interval.\n\n\
Reported: the throughput timeline, the steady-state rate and dentry count (the middle 80% of the timeline), the \
dentry high-water mark, how many unlinked files stayed cached as negative dentries, what the rmdirs and the final umount freed, \
and whether the throughput oscillates: the autocorrelation of the detrended rate gives the period, and the \
peak/trough ratio its depth (the report saw about 20 s, 80k against 20k unlinks/s).\n\n\
Sizes that would take more than half of MemAvailable (about 2000 bytes per file) are refused unless --force.";
