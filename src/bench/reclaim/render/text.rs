//! The human table printed after `dentrylab reclaim`.

use std::fmt::Write;

use super::grids::{
    fit_lines, load_lines, methods_grid, methods_label, overhead_line, pinning_line, reclaim_grid, threshold_grid,
    watchdog_grid,
};
use super::{profile, stacks, victims};
use crate::bench::layers::grid;
use crate::bench::reclaim::result::ReclaimResult;
use crate::render::Doc;
use crate::render::cell::environment_line;

pub(crate) fn text(r: &ReclaimResult) -> Doc {
    let o = &r.options;
    let mut s = Doc::new();
    let _ = writeln!(
        s,
        "dentrylab reclaim: {} dentries, layout {}, {}, reclaimed by {}, {} rep(s), {} generator thread(s)",
        o.kind.name(),
        o.layout,
        o.fs_label(),
        methods_label(r),
        o.reps,
        o.threads
    );
    if o.contend > 0 {
        let _ = writeln!(s, "each repetition also ran with {} lookup thread(s) on the other CPUs", o.contend);
    }
    let _ = writeln!(s, "{}\n", environment_line(&r.environment));
    s.grid(reclaim_grid(r));
    let _ = writeln!(s, "{}", overhead_line(r));
    let _ = writeln!(s, "{}", pinning_line(r));
    for l in load_lines(r) {
        let _ = writeln!(s, "{l}");
    }
    let stacks = stacks(r);
    if let Some(g) = grid::grid(&stacks, o.cpu) {
        let _ = writeln!(s, "\nLayers of the overlay, torn down in turn (median of the probed repetitions)");
        s.grid(g);
        let _ = writeln!(s, "{}", grid::LEGEND);
        if let Some(l) = grid::longest_line(&stacks) {
            let _ = writeln!(s, "{l}");
        }
    }
    let _ = writeln!(s, "\nFit");
    for l in fit_lines(r) {
        let _ = writeln!(s, "  {l}");
    }
    let of = match o.methods.first() {
        Some(m) if o.methods.len() > 1 => format!(" ({})", m.name()),
        _ => String::new(),
    };
    if let Some(g) = threshold_grid(r) {
        let _ = writeln!(s, "\nSoft-lockup threshold{of}");
        s.grid(g);
    }
    victims_block(&mut s, r);
    if let Some(v) = &r.verdict {
        let _ = writeln!(s, "\nVerdict{of}");
        if let Some(l) = victims::first_incident_line(r) {
            let _ = writeln!(s, "  {l}");
        }
        for l in super::verdict::lines(v, &r.runs, r.options.methods.first().copied()) {
            let _ = writeln!(s, "  {l}");
        }
    }
    if let Some(g) = profile::runs_grid(r, false) {
        let _ = writeln!(s, "\nWhat held CPU {} (perf, --profile)", o.cpu);
        s.grid(g);
        for (title, g) in profile::longest_stacks(r, false) {
            let _ = writeln!(s, "\n{title}");
            s.grid(g);
        }
    }
    for p in profile::problems(r) {
        let _ = writeln!(s, "note: {p}");
    }
    for w in r.watchdog.iter().chain(&r.watchdog_more) {
        let _ = writeln!(
            s,
            "\nWatchdog check (watchdog_thresh {} s: soft lockup after {:.0} s nominally, reported for stretches of {:.2}–{:.2} s or more)",
            w.thresh_seconds, w.soft_lockup_threshold_seconds, w.detection_band_seconds.0, w.detection_band_seconds.1
        );
        s.grid(watchdog_grid(w));
        for l in &w.summary {
            let _ = writeln!(s, "  {l}");
        }
    }
    if let (Some(g), Some(d)) = (methods_grid(r), &r.comparison) {
        let _ = writeln!(s, "\nReclaim paths compared");
        s.grid(g);
        for l in &d.summary {
            let _ = writeln!(s, "  {l}");
        }
    }
    for f in &r.refused {
        let _ = writeln!(s, "\nRefused {}: {}", crate::size::human(f.target), f.reason);
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// `--victims`: the victims' table, those that do not wait, the deadlines.
fn victims_block(s: &mut Doc, r: &ReclaimResult) {
    let o = &r.options;
    let Some(a) = &r.victims else { return };
    if let Some(g) = victims::victims_grid(a) {
        let _ = writeln!(
            s,
            "\nVictims (on the CPUs other than {}, during the reclaim; median of {} victim repetition(s), outside: the 1 s before it)",
            o.cpu, o.reps
        );
        s.grid(g);
    }
    for u in &a.unaffected {
        let _ = writeln!(s, "{} does not wait for the reclaim: {}", u.victim.name(), u.why);
    }
    for (who, why) in a.fits.iter().filter_map(|f| Some((&f.who, f.may_wait.as_deref()?))) {
        let _ = writeln!(s, "{who} may wait for the reclaim: {why}");
    }
    if let Some(g) = victims::stalls_grid(a) {
        let _ = writeln!(
            s,
            "\nWhich reclaim path stalls whom (at each path's largest size: the longest call during the reclaim, × the stretch; 'no': not judged waiting, the unaffected rule above)"
        );
        s.grid(g);
    }
    if let Some(g) = victims::deadlines_grid(a) {
        let _ = writeln!(s, "\nDeadlines of the node: who misses each first, at what count");
        s.grid(g);
    }
}
