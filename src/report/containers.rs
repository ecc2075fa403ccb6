//! `containers` results for people: the per-container figures, the
//! witness, and the projection, as a grid and lines shared by the table
//! and the Markdown report.

use super::Grid;
use crate::bench::containers::{ContainersResult, Projection};
use crate::duration::secs;
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
pub fn grid(r: &ContainersResult) -> Grid {
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
pub fn lines(r: &ContainersResult) -> Vec<String> {
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

pub fn projection_line(p: &Projection) -> String {
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

/// The human table.
pub fn table(r: &ContainersResult) -> String {
    use std::fmt::Write;
    let o = &r.options;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\ndentrylab containers: {} containers ({} at a time), workload {} × {} operations, overlay over an image on {}; {} in all",
        o.count,
        o.parallel,
        o.mix.name(),
        human(o.ops),
        o.fs,
        secs(r.wall_seconds)
    );
    let _ = writeln!(s, "{}\n", super::environment_line(&r.environment));
    s += &super::plain::render_grid(&grid(r));
    s.push('\n');
    for l in lines(r) {
        let _ = writeln!(s, "{l}");
    }
    for (title, g) in super::profile::containers_stacks(r, false) {
        let _ = writeln!(s, "\n{title} (perf, --profile; stacks leaf first)");
        s += &super::plain::render_grid(&g);
    }
    for p in super::profile::containers_problems(r) {
        let _ = writeln!(s, "{p}");
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// The report's section for `containers` results.
pub fn part(
    results: &[&ContainersResult],
    labels: &[String],
    subtitle: &str,
    figures: &[super::svg::Figure],
) -> String {
    super::markdown::part(
        format!("Containers on overlayfs: {subtitle}"),
        figures,
        "Each container runs in a mount namespace of its own over one shared image; after its teardown the host's \
         nr_dentry is read (machine-wide). The second line adds up each container's negative dentries created − freed (the least noisy counter).",
        results,
        labels,
        &|r, level| body(r, level),
    )
}

fn body(r: &ContainersResult, level: usize) -> String {
    use std::fmt::Write;
    let h = "#".repeat(level);
    let o = &r.options;
    let mut s = String::new();
    let _ = writeln!(s, "{h} Method\n");
    let _ = writeln!(
        s,
        "{} containers, {} at a time, each running {} for {} operations in an overlay of one shared image on {} \
         (upper and work directories on the same filesystem), then exiting (the overlay goes with its mount \
         namespace) and having its snapshot removed. {} in all.\n",
        o.count,
        o.parallel,
        o.mix.name(),
        grouped(o.ops),
        o.fs,
        secs(r.wall_seconds)
    );
    let _ = writeln!(s, "{h} Results\n");
    s += &super::markdown::render_grid(&grid(r));
    s.push('\n');
    for l in lines(r) {
        let _ = writeln!(s, "- {l}");
    }
    let stacks = super::profile::containers_stacks(r, true);
    if !stacks.is_empty() {
        let _ = writeln!(s, "\n{h} What held CPU {} in the teardowns (perf)\n", o.cpu);
        for (title, g) in stacks {
            let _ = writeln!(s, "{title}:\n");
            s += &super::markdown::render_grid(&g);
            s.push('\n');
        }
    }
    for p in super::profile::containers_problems(r) {
        let _ = writeln!(s, "- {p}");
    }
    s += &super::markdown::closing(&h, &r.notes, &r.header.command, &r.environment);
    s
}
