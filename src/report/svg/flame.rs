//! Flame graphs of the longest stretch: the folded stacks perf sampled in
//! the probe's longest gap (`reclaim --profile`, `containers --profile`), drawn by inferno (the
//! Rust port of Brendan Gregg's flamegraph.pl). Colours come from a hash
//! of each function's name, so the same input gives the same SVG.

use anyhow::{Context, Result};

use super::Figure;
use crate::analysis::folded::Window;
use crate::bench::containers::ContainersResult;
use crate::bench::reclaim::{Method, ReclaimResult, profile::longest};
use crate::size::human;

/// Width of a flame graph, pixels.
pub const FLAME_WIDTH: usize = 1200;
/// Frames narrower than this many pixels are left out (flamegraph.pl's
/// `--minwidth`): at [`FLAME_WIDTH`], stacks under about 0.17% of the
/// samples, which would otherwise only make the graph tall.
pub const FLAME_MIN_WIDTH_PX: f64 = 2.0;

/// One flame graph per result and method that was profiled: the run with
/// the longest gap.
pub fn longest_stretch(results: &[&ReclaimResult], labels: &[String]) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    for (i, r) in results.iter().enumerate() {
        for &method in &r.options.methods {
            let Some(run) = longest(&r.runs, method) else { continue };
            let Some(p) = run.profile.as_ref() else { continue };
            if p.longest_gap.folded.is_empty() {
                continue;
            }
            let mut file = "reclaim-longest-stretch".to_string();
            if results.len() > 1 {
                file += &format!("-{}", i + 1);
            }
            if r.options.methods.len() > 1 {
                file += &format!("-{}", method.name());
            }
            file += ".svg";
            let what = format!(
                "{} of {} {} dentries on {}, rep {}",
                method_words(method),
                human(run.target),
                r.options.kind.name(),
                r.options.fs,
                run.rep + 1
            );
            let label = if results.len() > 1 { format!("{}: ", labels[i]) } else { String::new() };
            let ms = format!("{:.0}", run.probe.max_gap_seconds * 1e3);
            let f = Flame {
                label: &label,
                stretch: "longest stretch",
                ms,
                what: &what,
                cpu: r.options.cpu,
                kernel: &r.environment.kernel,
            };
            out.push(f.figure(file, p.frequency_hz, &p.longest_gap)?);
        }
    }
    Ok(out)
}

/// What a longest-stretch flame graph says about itself: its caption,
/// title and subtitle, the same for a reclaim's and a teardown's.
struct Flame<'a> {
    /// "A: " when several results are drawn, else empty.
    label: &'a str,
    /// "longest stretch", "longest teardown stretch".
    stretch: &'a str,
    /// The stretch in milliseconds, formatted.
    ms: String,
    /// What was reclaimed, in words.
    what: &'a str,
    cpu: usize,
    kernel: &'a str,
}

impl Flame<'_> {
    fn figure(&self, file: String, hz: u32, gap: &Window) -> Result<Figure> {
        let (label, stretch, ms, what, cpu) = (self.label, self.stretch, &self.ms, self.what, self.cpu);
        let samples = gap.samples;
        let caption =
            format!("{label}flame graph of the {stretch} ({ms} ms, {samples} samples at {hz} Hz on CPU {cpu}), {what}");
        let title = format!("{label}What held CPU {cpu} in the {stretch}");
        let subtitle =
            format!("{what}: {ms} ms, {samples} samples at {hz} Hz (all tasks on the CPU; kernel {})", self.kernel);
        Ok(Figure { file, caption, svg: draw(title, subtitle, &gap.folded)? })
    }
}

/// One flame graph of folded stacks (`stack count`), the same for the same input.
fn draw(title: String, subtitle: String, folded: &[(String, u64)]) -> Result<String> {
    let mut o = inferno::flamegraph::Options::default();
    o.title = title;
    o.subtitle = Some(subtitle);
    o.count_name = "samples".into();
    o.deterministic = true;
    o.image_width = Some(FLAME_WIDTH);
    o.min_width = FLAME_MIN_WIDTH_PX;
    let lines: Vec<String> = folded.iter().map(|(s, c)| format!("{s} {c}")).collect();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut o, lines.iter().map(String::as_str), &mut svg)
        .context("drawing the flame graph")?;
    String::from_utf8(svg).context("flame graph SVG")
}

/// `containers --profile`: the flame graph of the longest teardown
/// stretch, one per result that was profiled.
pub fn containers_longest_stretch(results: &[&ContainersResult], labels: &[String]) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let Some(p) = r.profile.as_ref() else { continue };
        if p.longest_gap.folded.is_empty() {
            continue;
        }
        let file = if results.len() > 1 {
            format!("containers-longest-stretch-{}.svg", i + 1)
        } else {
            "containers-longest-stretch.svg".to_string()
        };
        let label = if results.len() > 1 { format!("{}: ", labels[i]) } else { String::new() };
        let what = format!(
            "teardown of container {} of {} ({} × {} operations, overlay on {})",
            p.longest_id,
            r.options.count,
            r.options.mix.name(),
            human(r.options.ops),
            r.options.fs
        );
        let ms = format!("{:.1}", p.longest_gap_seconds * 1e3);
        let f = Flame {
            label: &label,
            stretch: "longest teardown stretch",
            ms,
            what: &what,
            cpu: r.options.cpu,
            kernel: &r.environment.kernel,
        };
        out.push(f.figure(file, p.frequency_hz, &p.longest_gap)?);
    }
    Ok(out)
}

fn method_words(m: Method) -> &'static str {
    match m {
        Method::Umount => "umount",
        Method::NsExit => "namespace exit",
        Method::DropCaches => "drop_caches",
        Method::Memcg => "memory cgroup reclaim",
        Method::Inotify => "inotify_add_watch's children walk",
    }
}
