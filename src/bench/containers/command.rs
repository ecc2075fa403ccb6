//! `dentrylab containers` as a [`Benchmark`]: its command line, and the
//! steps the generic handler runs.

use anyhow::Result;

use super::{ContainersResult, Edge, Options};
use crate::bench::common::{self, Benchmark, Context, WithJson};
use crate::sandbox::Sandbox;

/// Containers on overlayfs run a workload and die.
pub(crate) struct Containers;

impl Benchmark for Containers {
    type Args = WithJson<super::Args>;
    type Plan = (Options, Edge);
    type Result = ContainersResult;

    const ABOUT: &'static str = "Containers on overlayfs run a workload and die: what each leaves on the host, teardown stretch, time to the lockup edge";
    const LONG_ABOUT: Option<&'static str> = Some(LONG_ABOUT);
    const DISPLAY_ORDER: usize = 10;
    const MINIMAL_ARGS: &'static [&'static str] = &["--count", "2"];
    const INTERNAL: &'static [&'static dyn crate::sys::internal::InternalCommand] =
        &[&crate::bench::common::container::child::CHILD_ENTRY];

    fn plan(a: Self::Args, cx: &Context) -> Result<(Options, Edge)> {
        let (cpu, _) = common::choose_cpus(a.args.cpu)?;
        let opts = a.args.options(cpu);
        super::validate(&opts)?;
        super::preflight(&opts, cx.proc)?;
        if opts.census {
            // Where the census cannot run: its one line, before any work.
            crate::census::available(&crate::census::Source::of(cx.proc), cx.proc)?;
        }
        // The lockup count of the calibration `status` uses, for the projection.
        let edge = (cx.lockup_edge)(a.args.state_dir.as_deref())?;
        let edge = Edge { calibration: edge.calibration, lockup_dentries: edge.dentries, lockup_dentries_low: None };
        Ok((opts, edge))
    }

    fn run((opts, edge): &mut (Options, Edge), cx: &Context, announce: &dyn Fn(&str)) -> Result<ContainersResult> {
        let mut sandbox = Sandbox::enter()?;
        super::run(opts, edge, &mut sandbox, cx.proc, announce)
    }

    fn finish(_: (Options, Edge), result: &ContainersResult) -> Result<std::process::ExitCode> {
        if let Some(n) = result.census.as_ref().filter(|n| !n.ok) {
            anyhow::bail!("{}", n.line());
        }
        Ok(std::process::ExitCode::SUCCESS)
    }
}

/// `--help` below its one line.
const LONG_ABOUT: &str = "A node's life in fast-forward. --count containers, --parallel at a time, each in a mount \
namespace of its own with an overlay of one shared image (the lower layer, on an ext4 or xfs loop filesystem of \
the sandbox) and a snapshot of its own (upper and work directories on the same filesystem, as containerd's \
overlayfs snapshotter keeps them). Each runs --workload for --ops operations, then dies as a container does (its \
last process exits and the overlay goes with its mount namespace), and its snapshot is removed.\n\n\
Workloads: temp-tables (create, write 4 KiB, unlink: an on-disk temporary table), lookups (stat of names that do \
not exist, over 8 directories), files (create and keep), mixed=temp-tables=60,lookups=30,files=10 (shares in \
percent, summing to 100).\n\n\
Per container: dentries created, freed at teardown and left on the host, teardown time and the longest stretch \
on the teardown CPU (the latency probe). At the end the run's own filesystem is unmounted (untimed): what that \
frees is exactly what the containers left, whatever else the node did. From that growth, at --rate containers \
an hour, the time until the host reaches the lockup count of the calibration 'status' uses. Runs whose memory \
estimate exceeds half of MemAvailable are refused unless --force. Needs root.\n\n\
--profile: perf samples the teardown CPU with call graphs during each teardown (at 4000 Hz, perf itself on the \
other CPUs, timestamps on the probe's clock); for the container with the longest teardown stretch the stacks \
inside that stretch (top 5 with their share, counted for the task of the phase it lies in: the exiting container \
or the harness removing the snapshot), over all teardowns the top stacks, and one line naming the path. The JSON \
carries the folded stacks; 'report' draws the flame graph. Where perf or kernel symbols are not available, one \
line says so and the run goes on without it. Starting and stopping perf around each teardown makes the run \
slower (the harness time is not comparable with a run without --profile).";
