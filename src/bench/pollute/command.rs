//! `dentrylab pollute` as a [`Benchmark`]: its command line, and the steps
//! the generic handler runs.

use anyhow::Result;

use super::{Options, PolluteResult};
use crate::bench::common::{Benchmark, Context, WithJson};
use crate::sandbox::Sandbox;

/// Hot lookups before and after negative dentries.
pub(crate) struct Pollute;

impl Benchmark for Pollute {
    type Args = WithJson<super::Args>;
    type Plan = Options;
    type Result = PolluteResult;

    const ABOUT: &'static str = "Lookup latency of hot paths before and after N negative dentries, same and other directory (the 2020 lookup-pollution report's question; docs/background.md)";
    const LONG_ABOUT: Option<&'static str> = Some(LONG_ABOUT);
    const DISPLAY_ORDER: usize = 2;

    fn plan(a: Self::Args, cx: &Context) -> Result<Options> {
        let opts = a.args.options(super::choose_cpu(a.args.cpu)?);
        super::validate(&opts)?;
        super::preflight(&opts, cx.proc)?;
        Ok(opts)
    }

    fn run(opts: &mut Options, cx: &Context, announce: &dyn Fn(&str)) -> Result<PolluteResult> {
        let mut sandbox = Sandbox::enter()?;
        super::run(opts, &mut sandbox, cx.proc, announce)
    }
}

/// `--help` below its one line.
const LONG_ABOUT: &str = "The question of the 2020 lookup-pollution report (docs/background.md), measured call by call: do negative dentries slow down lookups of \
hot, existing paths?\n\n\
Each repetition mounts a fresh ext4 (or xfs) in the sandbox with two directories of hot files: polluted/ (where \
the negative dentries go, as that report's /dev/null$i went into /dev) and other/. Every call of six probes is timed \
with CLOCK_MONOTONIC: stat and open+close of a hot file in each directory, a stat that hits a cached negative \
dentry, and a stat of a name never looked up (a miss, answered by the filesystem). Then negative dentries are \
added to polluted/ up to each size of --negatives in turn, and the probes are timed again, in the same run.\n\n\
Reported per size and probe: p50, p99, max and mean latency, and the slowdown against the unpolluted \
measurement: per repetition the ratio of medians, over repetitions their geometric mean with a 95% Student-t \
interval. dentry-state before and after each size (nr_negative is the witness). The output says plainly whether \
the report's effect (hot lookups slowing as negative dentries pile up) shows on this kernel.\n\n\
tmpfs (and devtmpfs, where that report polluted /dev) keeps no negative dentries: --fs tmpfs is refused.";
