//! The text engine: the human table printed after a run. A benchmark's
//! [`Render::text`] with every grid aligned in columns ([`render_grid`]).

use std::fmt::Write;

use super::plain::render_grid;
use super::{Doc, Grid, environment_line};
use crate::render::Render;

/// A document as text, its grids aligned.
pub(crate) fn render(doc: &Doc) -> String {
    doc.render(&render_grid)
}

/// The human table of a result.
pub(crate) fn of<R: Render>(r: &R) -> String {
    render(&r.text())
}

/// `dentrylab status` for people.
pub(crate) fn status(st: &crate::status::StatusResult) -> String {
    use crate::size::{bytes, grouped, human};
    let d = &st.dentries;
    let p = &st.prediction;
    let m = &st.memory;
    let mut s = String::new();
    let _ = writeln!(s, "dentrylab status: {}\n", environment_line(&st.environment));
    let counts = Grid {
        header: vec!["Dentries".into(), "Count".into(), "Bytes".into()],
        rows: [
            ("all (nr_dentry)", d.nr_dentry, d.dentry_bytes),
            ("unused (nr_unused)", d.nr_unused, d.unused_bytes),
            ("negative (nr_negative)", d.nr_negative, d.negative_bytes),
        ]
        .iter()
        .map(|(k, n, b)| vec![k.to_string(), grouped(*n), bytes(*b)])
        .collect(),
    };
    s += &render_grid(&counts);
    let _ = writeln!(s, "(bytes at {} per dentry: the dentry slab object)", bytes(d.bytes_per_dentry));
    let _ = writeln!(
        s,
        "memory: {} total, {} available, {} reclaimable slab\n",
        bytes(m.mem_total_bytes),
        bytes(m.mem_available_bytes),
        bytes(m.s_reclaimable_bytes)
    );
    let c = &st.calibration;
    let _ = writeln!(s, "calibration: {}", c.name);
    let _ = writeln!(
        s,
        "  validated by the kernel watchdog: {}\n",
        if c.calibration.validated_by_watchdog { "yes" } else { "no" }
    );
    let or_dash = |x: Option<String>| x.unwrap_or_else(|| "–".into());
    let stretch_kind = match (c.source, p.governs) {
        (crate::status::calibration::Source::Builtin, _) => "built-in: as if the walk never yielded",
        (_, crate::analysis::verdict::Governs::LongestStretch) => "the kernel yields inside the walk",
        (_, crate::analysis::verdict::Governs::TotalTime) => "the walk does not yield: the whole reclaim",
    };
    let edge =
        |l: f64| crate::analysis::interval::count_with_interval(l, p.lockup_dentries_low, p.lockup_dentries_high);
    let end = if p.lockup_dentries_low.is_some() { "its low end" } else { "the edge" };
    let distance = match (p.lockup_dentries, p.dentries_to_lockup) {
        (Some(l), Some(t)) if t >= 0.0 => format!("{} dentries to {end} (edge at {})", human(t as u64), edge(l)),
        (Some(l), Some(t)) => format!("{} dentries past {end} (edge at {})", human((-t) as u64), edge(l)),
        _ => "–".into(),
    };
    let rows = vec![
        vec!["predicted full reclaim time".into(), or_dash(p.predicted_reclaim_seconds.map(crate::duration::secs))],
        vec![
            "predicted longest stretch".into(),
            or_dash(
                p.predicted_longest_stretch_seconds.map(|g| format!("{} ({stretch_kind})", crate::duration::secs(g))),
            ),
        ],
        vec![
            "soft-lockup threshold".into(),
            or_dash(
                p.soft_lockup_threshold_seconds.map(|t| format!("{} (2 × watchdog_thresh)", crate::duration::secs(t))),
            ),
        ],
        vec![
            "distance: ratio".into(),
            or_dash(p.lockup_ratio.map(|r| match p.lockup_ratio_high {
                Some(h) => format!("{} (90% up to {}; 1 = the watchdog fires)", ratio(r), ratio(h)),
                None => format!("{} (1 = the watchdog fires)", ratio(r)),
            })),
        ],
        vec!["distance: count".into(), distance],
        vec!["soft-lockup level".into(), p.level.name().into()],
    ];
    let _ = writeln!(s, "prediction for {} dentries reclaimed in one walk", grouped(d.nr_dentry));
    s += &render_grid(&Grid { header: vec!["Figure".into(), "Value".into()], rows });
    if let Some(i) = &st.incidents {
        s += &super::incident::section(i);
    }
    let _ = writeln!(s, "{}", super::incident::level_line(st));
    for n in &st.notes {
        let _ = writeln!(s, "note: {n}");
    }
    if let Some(b) = &st.by_cgroup {
        s += &super::node::by_cgroup(b, d.nr_dentry);
    }
    if let Some(k) = &st.kernel_log {
        s += &super::node::kernel_log(k);
    }
    if let Some(c) = &st.census {
        s += &crate::status::census::text(c);
    }
    s
}

/// Three significant digits: `0.000812`, `0.65`, `28.1`.
fn ratio(r: f64) -> String {
    if r == 0.0 || !r.is_finite() {
        return format!("{r}");
    }
    let digits = (2 - r.abs().log10().floor() as i32).max(0) as usize;
    format!("{r:.digits$}")
}
