//! `containers` results for people: the per-container figures, the
//! witness, and the projection, as a grid and lines shared by the table
//! and the Markdown report; and, with `--profile`, the teardowns' top
//! stacks.

use crate::bench::containers::{ContainersResult, Projection};
use crate::duration::secs;
use crate::render::Grid;
use crate::render::profile::stacks_grid;
use crate::size::{grouped, human};
use crate::stats::Spread;

fn count(v: f64) -> String {
    if !v.is_finite() {
        "–".into()
    } else if v < 0.0 {
        format!("−{}", grouped((-v).round() as u64))
    } else {
        grouped(v.round() as u64)
    }
}

/// Per container: median, min, max of each figure.
pub(crate) fn grid(r: &ContainersResult) -> Grid {
    let s = &r.summary;
    let c = |name: &str, sp: &Spread| vec![name.to_string(), count(sp.median), count(sp.min), count(sp.max)];
    let t = |name: &str, sp: &Spread| vec![name.to_string(), secs(sp.median), secs(sp.min), secs(sp.max)];
    Grid {
        header: ["per container", "median", "min", "max"].map(String::from).to_vec(),
        rows: vec![
            c("dentries created (workload)", &s.created),
            c("dentries freed at teardown", &s.freed),
            c("dentries left on the host", &s.left),
            c("negative dentries left", &s.left_negative),
            t("teardown (exit + snapshot removal)", &s.teardown_seconds),
            t("  exit: namespace and overlay go", &s.exit_seconds),
            t("  snapshot removal", &s.remove_seconds),
            t("longest stretch on the teardown CPU", &s.max_gap_seconds),
            t("harness (spawn to torn down, less workload)", &s.harness_seconds),
        ],
    }
}

/// The witness, growth and projection, one line each.
pub(crate) fn lines(r: &ContainersResult) -> Vec<String> {
    let s = &r.summary;
    let w = &r.witness;
    let mut out = vec![format!(
        "witness{}: unmounting the run's {} filesystem at the end freed {} dentries ({} negative; {} are the \
             image's directories): {} left per container, {} per 1,000 containers",
        if w.disturbed { " (disturbed: medians used)" } else { "" },
        r.options.fs,
        grouped(w.dentries.max(0) as u64),
        grouped(w.negative.max(0) as u64),
        w.image_dentries,
        count(s.witness_left_per_container),
        count(s.host_growth_per_1000)
    )];
    if s.new_names_per_container > 0.0 {
        out.push(format!(
            "each container used {} new names and left {:.3} dentries per name on the host",
            count(s.new_names_per_container),
            s.left_per_new_name
        ));
    }
    if let (Some(tn), Some(gn)) = (&s.teardown_vs_n, &s.max_gap_vs_n) {
        out.push(format!(
            "against containers run (N): teardown {} {} per 1,000 containers (R² {:.2}), longest stretch {} {} per 1,000 (R² {:.2})",
            if tn.slope >= 0.0 { "grows" } else { "falls" },
            secs(tn.slope.abs() * 1000.0),
            tn.r2,
            if gn.slope >= 0.0 { "grows" } else { "falls" },
            secs(gn.slope.abs() * 1000.0),
            gn.r2
        ));
    }
    out.push(projection_line(&r.projection));
    out
}

fn hours(h: f64) -> String {
    if h < 48.0 {
        format!("{h:.1} h")
    } else if h < 24.0 * 730.0 {
        format!("{:.1} days", h / 24.0)
    } else {
        format!("{:.1} years", h / 24.0 / 365.0)
    }
}

pub(crate) fn projection_line(p: &Projection) -> String {
    let Some(edge) = p.lockup_dentries else {
        return format!("projection: the calibration gives no lockup count ({})", p.calibration);
    };
    let Some(t) = p.hours_to_edge else {
        return format!(
            "projection: this workload leaves nothing on the host, so containers alone never bring it to its lockup \
             edge ({} dentries, {})",
            human(edge as u64),
            p.calibration
        );
    };
    let range = match (p.hours_to_edge_low, p.hours_to_edge_high) {
        (Some(lo), Some(hi)) if hours(lo) != hours(hi) => format!(" (range {} – {})", hours(lo), hours(hi)),
        _ => String::new(),
    };
    format!(
        "projection: at {:.0} containers an hour of this workload ({} dentries stay per container, {} per hour), this \
         node ({} dentries now) reaches its lockup edge of {} dentries in {}{range}; calibration: {}",
        p.rate_per_hour,
        count(p.growth_per_container),
        count(p.growth_per_hour),
        human(p.host_dentries),
        human(edge as u64),
        hours(t),
        p.calibration
    )
}

/// `containers --profile`: the longest teardown stretch's top stacks, then
/// every teardown's added up.
pub(crate) fn stacks(r: &ContainersResult, md: bool) -> Vec<(String, Grid)> {
    let Some(p) = r.profile.as_ref() else { return Vec::new() };
    vec![
        (
            format!(
                "Longest teardown stretch (container {}: {:.1} ms, {} samples at {} Hz): top stacks",
                p.longest_id,
                p.longest_gap_seconds * 1e3,
                p.longest_gap.samples,
                p.frequency_hz
            ),
            stacks_grid(&p.longest_gap, md),
        ),
        (
            format!("All {} recorded teardowns ({} samples): top stacks", p.profiled, p.teardowns.samples),
            stacks_grid(&p.teardowns, md),
        ),
    ]
}

/// Why some containers' teardowns have no profile.
pub(crate) fn problems(r: &ContainersResult) -> Vec<String> {
    r.containers
        .iter()
        .filter_map(|c| c.profile_problem.as_ref().map(|p| format!("container {}: no profile: {p}", c.id)))
        .collect()
}
