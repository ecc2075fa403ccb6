//! What a containers result says, for the engines in `report`: the
//! [`Render`] implementation of [`ContainersResult`]. The grid, lines and
//! profile tables are in [`grids`], the figures in [`figures`].
//!
//! Inside, one way: `grids` and `figures`, below this file.

pub(crate) mod figures;
pub(crate) mod grids;

use std::fmt::Write;

use crate::bench::containers::ContainersResult;
use crate::duration::secs;
use crate::render::cell::environment_line;
use crate::render::{self, Doc, FigureSpec, Render, closing, common_facets};
use crate::result::Header;
use crate::size::{grouped, human};

impl Render for ContainersResult {
    const BENCHMARK: &'static str = "containers";

    fn header(&self) -> &Header {
        &self.header
    }

    fn text(&self) -> Doc {
        text(self)
    }

    fn facets(&self) -> Vec<String> {
        let o = &self.options;
        let mut f = common_facets(&self.environment, o.fs);
        f.insert(0, format!("{} × {} operations", o.mix.name(), human(o.ops)));
        f.insert(1, format!("{} containers, {} at a time", o.count, o.parallel));
        f
    }

    fn figures(results: &[&Self], labels: &[String], subtitle: &str) -> Vec<FigureSpec> {
        let mut f = figures::containers(results, labels, subtitle);
        f.extend(figures::longest_stretch(results, labels));
        f
    }

    fn part(results: &[&Self], labels: &[String], subtitle: &str, figures: &[FigureSpec]) -> Doc {
        part(results, labels, subtitle, figures)
    }
}

/// The human table.
fn text(r: &ContainersResult) -> Doc {
    let o = &r.options;
    let mut s = Doc::new();
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
    let _ = writeln!(s, "{}\n", environment_line(&r.environment));
    s.grid(grids::grid(r));
    s.push('\n');
    for l in grids::lines(r) {
        let _ = writeln!(s, "{l}");
    }
    for (title, g) in grids::stacks(r, false) {
        let _ = writeln!(s, "\n{title} (perf, --profile; stacks leaf first)");
        s.grid(g);
    }
    for p in grids::problems(r) {
        let _ = writeln!(s, "{p}");
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// The report's section for `containers` results.
fn part(results: &[&ContainersResult], labels: &[String], subtitle: &str, figures: &[FigureSpec]) -> Doc {
    render::part(
        format!("Containers on overlayfs: {subtitle}"),
        figures,
        "Each container runs in a mount namespace of its own over one shared image; after its teardown the host's \
         nr_dentry is read (machine-wide). The second line adds up each container's negative dentries created − freed (the least noisy counter).",
        results,
        labels,
        &body,
    )
}

fn body(r: &ContainersResult, level: usize) -> Doc {
    let h = "#".repeat(level);
    let o = &r.options;
    let mut s = Doc::new();
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
    s.grid(grids::grid(r));
    s.push('\n');
    for l in grids::lines(r) {
        let _ = writeln!(s, "- {l}");
    }
    let stacks = grids::stacks(r, true);
    if !stacks.is_empty() {
        let _ = writeln!(s, "\n{h} What held CPU {} in the teardowns (perf)\n", o.cpu);
        for (title, g) in stacks {
            let _ = writeln!(s, "{title}:\n");
            s.grid(g);
            s.push('\n');
        }
    }
    for p in grids::problems(r) {
        let _ = writeln!(s, "- {p}");
    }
    s += closing(&h, &r.notes, &r.header.command, &r.environment).as_str();
    s
}
