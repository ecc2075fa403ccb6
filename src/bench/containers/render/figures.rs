//! The containers figures: the host's dentries and the teardown against
//! containers run, and the flame graph of the longest teardown stretch
//! (`--profile`). Specs only: `report::svg` draws them.

use crate::bench::containers::ContainersResult;
use crate::render::FigureSpec;
use crate::render::plot::*;
use crate::size::human;

pub(crate) fn containers(results: &[&ContainersResult], labels: &[String], subtitle: &str) -> Vec<FigureSpec> {
    let many = results.len() > 1;
    let name = |i: usize, what: &str| if many { format!("{}: {what}", labels[i]) } else { what.to_string() };
    let n = |r: &crate::bench::containers::ContainerRun| (r.index + 1) as f64;
    let mut host = XyPlot::new(
        "Dentries on the host against containers run",
        Axis::new("containers run", Scale::Linear, Unit::Count),
        Axis::new("dentries", Scale::Linear, Unit::Count),
    );
    host.subtitle = subtitle.to_string();
    let mut teardown = XyPlot::new(
        "Container teardown against containers run",
        Axis::new("containers run", Scale::Linear, Unit::Count),
        Axis::new("seconds", Scale::Log, Unit::Seconds),
    );
    teardown.subtitle = subtitle.to_string();
    for (i, r) in results.iter().enumerate() {
        let mut left = 0i64;
        let stayed: Vec<(f64, f64)> = r
            .containers
            .iter()
            .map(|c| {
                left += c.left_negative;
                (n(c), left as f64)
            })
            .collect();
        let first = r.containers.first().map(|c| c.host_after.nr_dentry as f64 - c.left as f64).unwrap_or(0.0);
        // Lines join the points in container order; the host's counts
        // have no markers (one point per container).
        let series = |label: String, points: Vec<(f64, f64)>, colour: usize, marker: Marker| Series {
            label,
            lines: if marker == Marker::None {
                vec![Line { label: None, points: points.clone(), dashed: false }]
            } else {
                Vec::new()
            },
            points,
            marker,
            colour,
        };
        host.series.push(series(
            name(i, "nr_dentry on the host (machine-wide)"),
            r.containers.iter().map(|c| (n(c), c.host_after.nr_dentry as f64)).collect(),
            i * 3,
            Marker::None,
        ));
        host.series.push(series(
            name(i, "host before the first container + negative dentries the containers left"),
            stayed.iter().map(|&(x, y)| (x, first + y)).collect(),
            i * 3 + 1,
            Marker::None,
        ));
        teardown.series.push(series(
            name(i, "teardown (exit + snapshot removal)"),
            r.containers.iter().map(|c| (n(c), c.teardown_seconds.max(1e-6))).collect(),
            i * 3,
            Marker::Hollow,
        ));
        teardown.series.push(series(
            name(i, "longest stretch on the teardown CPU"),
            r.containers.iter().map(|c| (n(c), c.probe.max_gap_seconds.max(1e-6))).collect(),
            i * 3 + 2,
            Marker::Filled,
        ));
    }
    vec![
        FigureSpec {
            file: "containers-host.svg".into(),
            caption: "The host's nr_dentry after each container's teardown, and what the containers left".into(),
            plot: Plot::Xy(host),
        },
        FigureSpec {
            file: "containers-teardown.svg".into(),
            caption: "Teardown time and the longest stretch on the teardown CPU, per container".into(),
            plot: Plot::Xy(teardown),
        },
    ]
}

/// `containers --profile`: the flame graph of the longest teardown
/// stretch, one per result that was profiled.
pub(crate) fn longest_stretch(results: &[&ContainersResult], labels: &[String]) -> Vec<FigureSpec> {
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
        out.push(f.figure(file, p.frequency_hz, &p.longest_gap));
    }
    out
}
