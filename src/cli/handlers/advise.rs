//! `dentrylab advise`: the node read (twice, `--sample` apart, unless
//! `--growth` says the rate), the recorded mitigate results loaded, the
//! advice printed and written as JSON.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli;
use crate::output::{Outputs, Paths};
use crate::procfs::ProcRoot;
use crate::report;
use crate::state;
use crate::status;
use crate::status::advise::{self, GrowthSource, recorded};

pub(crate) fn run(a: cli::AdviseArgs) -> Result<ExitCode> {
    let mut out = Outputs::open(&Paths::json(&a.output))?;
    let recorded = recorded::load(&a.mitigate)?;
    let mut opts = status::Options::basic(
        ProcRoot::new(a.node.proc_root),
        a.node.state_dir.map_or_else(state::read_dirs, |d| vec![d]),
    );
    let (st, growth, source) = match a.growth {
        Some(g) => (status::run(&opts)?, Some(g), GrowthSource::Given),
        None => {
            let secs = a.sample.as_secs_f64();
            opts.growth_window_seconds = Some(secs * 2.0 + 1.0);
            let collector = status::Collector::new(&opts);
            collector.collect()?;
            std::thread::sleep(a.sample);
            let st = collector.collect()?;
            let g = st.growth.as_ref().map(|g| g.rate.dentries_per_second);
            (st, g, GrowthSource::Sampled(secs))
        }
    };
    let node = advise::Node { status: &st, growth_per_second: growth, growth_source: source };
    let advice = advise::assess(&node, &recorded, &opts.proc);
    out.emit(&report::advise::text(&advice), &advice)?;
    Ok(ExitCode::SUCCESS)
}

/// `status --advise`: the advice from the shipped results on a reading
/// already taken (its growth, when `status` has one).
pub(crate) fn for_status(st: &status::StatusResult, proc: &ProcRoot) -> Result<String> {
    let recorded = recorded::shipped()?;
    let growth = st.growth.as_ref().map(|g| g.rate.dentries_per_second);
    let source = if growth.is_some() { GrowthSource::Sampled(0.0) } else { GrowthSource::Unknown };
    let node = advise::Node { status: st, growth_per_second: growth, growth_source: source };
    Ok(report::advise::lines(&advise::assess(&node, &recorded, proc)))
}
