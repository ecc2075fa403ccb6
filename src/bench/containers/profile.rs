//! `containers --profile`: what held the teardown CPU. Each teardown is
//! recorded by [`super::life`] with the machinery of `reclaim --profile`;
//! here the container with the longest teardown stretch is picked, its
//! stretch named in one line, and the stacks of every teardown added up.

use serde::{Deserialize, Serialize};

use super::ContainerRun;
use crate::analysis::folded::{self, Window};
use crate::bench::common::profile::name_stretch;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ContainersProfile {
    pub frequency_hz: u32,
    /// Containers whose teardown was recorded.
    pub profiled: u64,
    /// The recorded container with the longest teardown stretch.
    pub longest_id: u32,
    pub longest_gap_seconds: f64,
    /// Its longest gap's stacks (folded, top 5 with their share).
    pub longest_gap: Window,
    /// Every recorded teardown's stacks added up (all tasks on the CPU).
    pub teardowns: Window,
    /// The one line naming the path behind the longest stretch.
    pub verdict: Option<String>,
}

/// The profiled container with the longest teardown gap.
pub(crate) fn longest(runs: &[ContainerRun]) -> Option<&ContainerRun> {
    runs.iter()
        .filter(|r| r.profile.is_some())
        .max_by(|a, b| a.probe.max_gap_seconds.total_cmp(&b.probe.max_gap_seconds))
}

/// `None` when no teardown was recorded.
pub(crate) fn summarise(runs: &[ContainerRun]) -> Option<ContainersProfile> {
    let r = longest(runs)?;
    let p = r.profile.as_ref()?;
    let profiled: Vec<&ContainerRun> = runs.iter().filter(|r| r.profile.is_some()).collect();
    let teardowns = folded::combine(profiled.iter().filter_map(|r| r.profile.as_ref().map(|p| &p.reclaim)));
    let phase = r.profile_phase.unwrap_or(crate::bench::common::container::life::Phase::Exit);
    let at = format!("{:.1} ms, container {}, in its {}", r.probe.max_gap_seconds * 1e3, r.id, phase_words(phase));
    let mut verdict = format!("teardown: {}", name_stretch(p, &at, phase.task()));
    if let Some(path) = teardowns.path.as_ref().filter(|p| p.frames.len() >= 2) {
        verdict.push_str(&format!(
            "; over all {} teardowns ({} samples) the heaviest path is `{}` ({:.0}%)",
            profiled.len(),
            teardowns.samples,
            path.name(),
            path.share * 100.0
        ));
    }
    Some(ContainersProfile {
        frequency_hz: p.frequency_hz,
        profiled: profiled.len() as u64,
        longest_id: r.id,
        longest_gap_seconds: r.probe.max_gap_seconds,
        longest_gap: p.longest_gap.clone(),
        teardowns,
        verdict: Some(verdict),
    })
}

fn phase_words(p: crate::bench::common::container::life::Phase) -> &'static str {
    match p {
        crate::bench::common::container::life::Phase::Exit => "exit",
        crate::bench::common::container::life::Phase::Removal => "snapshot removal",
    }
}
