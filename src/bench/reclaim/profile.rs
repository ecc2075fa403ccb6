//! `reclaim --profile`: per method, the profiled run with the longest gap
//! and the verdict's line naming the path behind it; the recorder is
//! shared ([`crate::bench::common::profile`]).

pub(crate) use crate::bench::common::profile::*;

use super::{methods::Method, repetition::Run};
use crate::size::human;

/// The profiled run of `method` with the longest gap.
pub(crate) fn longest(runs: &[Run], method: Method) -> Option<&Run> {
    runs.iter()
        .filter(|r| r.method == method && r.contenders == 0 && r.profile.is_some())
        .max_by(|a, b| a.probe.max_gap_seconds.total_cmp(&b.probe.max_gap_seconds))
}

/// The verdict's line naming the code behind the longest stretch.
pub(crate) fn verdict_line(runs: &[Run], method: Method) -> Option<String> {
    let r = longest(runs, method)?;
    let p = r.profile.as_ref()?;
    let at = format!("{:.0} ms, {} rep {}", r.probe.max_gap_seconds * 1e3, human(r.target), r.rep + 1);
    Some(name_stretch(p, &at, "reclaiming task"))
}
