//! `containers`: the host's dentries against containers run, and the
//! teardown time and longest stretch against containers run.

use anyhow::Result;

use super::kinds::*;
use super::*;
use crate::bench::containers::ContainersResult;

pub fn containers(results: &[&ContainersResult], labels: &[String], subtitle: &str) -> Result<Vec<Figure>> {
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
    Ok(vec![
        Figure {
            file: "containers-host.svg".into(),
            caption: "The host's nr_dentry after each container's teardown, and what the containers left".into(),
            svg: xy(&host)?,
        },
        Figure {
            file: "containers-teardown.svg".into(),
            caption: "Teardown time and the longest stretch on the teardown CPU, per container".into(),
            svg: xy(&teardown)?,
        },
    ])
}
