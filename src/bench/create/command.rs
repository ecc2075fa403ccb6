//! `dentrylab create` as a [`Benchmark`]: its command line, and the steps
//! the generic handler runs.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::{CreateResult, Options};
use crate::bench::common::{self, Benchmark, Context, WithJson};
use crate::sandbox::Sandbox;

/// Make dentries in the sandbox and hold them.
pub(crate) struct Create;

impl Benchmark for Create {
    type Args = WithJson<super::Args>;
    type Plan = Options;
    type Result = CreateResult;

    const ABOUT: &'static str = "Only create dentries in a sandbox and hold them for manual experiments";
    const DISPLAY_ORDER: usize = 1;
    const MINIMAL_ARGS: &'static [&'static str] = &["--count", "1000"];

    const REPORTS: bool = false;
    const ANNOUNCE_ON_STDOUT: bool = true;

    fn plan(a: Self::Args, cx: &Context) -> Result<Options> {
        let opts = a.args.options(crate::env::cpus())?;
        common::check_kind(opts.kind, opts.fs)?;
        common::preflight(&[opts.count], opts.kind, a.args.force, cx.proc)?;
        Ok(opts)
    }

    fn run(opts: &mut Options, cx: &Context, announce: &dyn Fn(&str)) -> Result<CreateResult> {
        // The guardian and the cgroup before the sandbox: the guardian
        // stays outside both, and removes the cgroup however this ends.
        let memcg = opts.memcg.then(|| super::memcg::enter(cx.proc)).transpose()?;
        let mut sandbox = Sandbox::enter()?;
        let interrupted = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, Arc::clone(&interrupted))?;
        }
        super::run(opts, &mut sandbox, cx.proc, &interrupted, announce, memcg.as_ref().map(|m| &m.cgroup))
    }
}
