//! From samples to answers: a summary per row (medians over reps, the
//! throughput relative to the baseline with its spread), the 30-day
//! projection against this node's lockup edge, and a verdict per knob.

use serde::{Deserialize, Serialize};

use super::knobs::{Knob, Value};
use super::one::RunResult;
use super::{Options, Row};
use crate::stats::{Spread, median};

/// Minutes in the 30 days the growth is projected over.
pub(crate) const PROJECTION_MINUTES: f64 = 30.0 * 24.0 * 60.0;

/// What one run showed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunSummary {
    pub ops: u64,
    pub ops_per_second: f64,
    /// Dentries (negative ones) the run's filesystem held at the end, per
    /// 1,000 operations, and as growth per minute of the run: the run's own
    /// figures, read across its umount.
    pub fs_dentries_at_end: i64,
    pub fs_negative_at_end: i64,
    pub dentries_per_1000_ops: f64,
    pub negative_per_1000_ops: f64,
    pub growth_per_minute: f64,
    /// fs_negative_at_end / fs_dentries_at_end.
    pub negative_share: f64,
    /// Machine-wide (dentry-state, other processes included): nr_dentry
    /// at the end and at its peak, above the run's start.
    pub dentries_added_end: i64,
    pub dentries_added_peak: i64,
    pub negative_added_end: i64,
    /// Machine-wide nr_negative added over the measured window per 1,000
    /// operations: the workload's alone on an idle machine, and unlike the
    /// held counts free of what the set-up (mariadb's install and load) left.
    pub machine_negative_per_1000_ops: f64,
    /// Machine-wide: slope of nr_dentry over the second half of the run
    /// (after the cgroup's limit has had time to bite), per minute, and its
    /// standard error.
    pub machine_growth_per_minute: f64,
    pub machine_growth_per_minute_stderr: f64,
    /// Machine-wide nr_dentry at the run's start.
    pub nr_dentry_start: u64,
    pub cgroup_kernel_peak_bytes: u64,
    /// Longest probe gap on the workload's CPU over the run.
    pub longest_stretch_seconds: f64,
    /// Longest gap in the seconds in which caches were dropped.
    pub longest_drop_stretch_seconds: Option<f64>,
    /// Longest drop_caches write (wall time).
    pub longest_drop_write_seconds: Option<f64>,
    /// containers: what is particular to them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<ContainerFigures>,
}

/// `--workload containers`: per run (and per row, medians over reps, the
/// longest stretch the longest).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct ContainerFigures {
    /// Containers torn down in the run.
    pub containers: f64,
    pub containers_per_minute: f64,
    /// Dentries (negative ones) the run's filesystem still held at the end
    /// per container torn down: what each left on the host, after the
    /// cgroup's reclaim and the knobs had their say.
    pub left_per_container: f64,
    pub left_negative_per_container: f64,
    /// The median container's dentry-state left (machine-wide counters
    /// around its life: noisy on a busy machine).
    pub machine_left_per_container: f64,
    pub teardown_seconds: f64,
    /// Longest gap on the teardown CPU during any teardown.
    pub teardown_stretch_seconds: f64,
}

fn container_figures(r: &RunResult, elapsed: f64) -> Option<ContainerFigures> {
    if r.containers.is_empty() {
        return None;
    }
    let n = r.containers.len() as f64;
    Some(ContainerFigures {
        containers: n,
        containers_per_minute: n / (elapsed / 60.0),
        left_per_container: r.fs_dentries_at_end as f64 / n,
        left_negative_per_container: r.fs_negative_at_end as f64 / n,
        machine_left_per_container: median(&r.containers.iter().map(|c| c.left as f64).collect::<Vec<_>>()),
        teardown_seconds: median(&r.containers.iter().map(|c| c.teardown_seconds).collect::<Vec<_>>()),
        teardown_stretch_seconds: r.containers.iter().map(|c| c.probe.max_gap_seconds).fold(0.0, f64::max),
    })
}

fn row_containers(runs: &[RunSummary]) -> Option<ContainerFigures> {
    let c: Vec<ContainerFigures> = runs.iter().filter_map(|r| r.containers).collect();
    if c.is_empty() {
        return None;
    }
    let m = |f: &dyn Fn(&ContainerFigures) -> f64| median(&c.iter().map(f).collect::<Vec<_>>());
    Some(ContainerFigures {
        containers: m(&|x| x.containers),
        containers_per_minute: m(&|x| x.containers_per_minute),
        left_per_container: m(&|x| x.left_per_container),
        left_negative_per_container: m(&|x| x.left_negative_per_container),
        machine_left_per_container: m(&|x| x.machine_left_per_container),
        teardown_seconds: m(&|x| x.teardown_seconds),
        teardown_stretch_seconds: c.iter().map(|x| x.teardown_stretch_seconds).fold(0.0, f64::max),
    })
}

/// A row over its reps: medians, and spreads where they matter.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RowSummary {
    pub runs: Vec<RunSummary>,
    pub ops_per_second: Spread,
    /// Each rep's ops/s over the baseline's in the same rep.
    pub throughput_vs_baseline: Option<Spread>,
    pub fs_dentries_at_end: f64,
    pub fs_negative_at_end: f64,
    /// Machine-wide (see [`RunSummary`]).
    pub dentries_added_end: f64,
    pub dentries_added_peak: f64,
    pub growth_per_minute: Spread,
    pub dentries_per_1000_ops: f64,
    pub negative_per_1000_ops: f64,
    pub machine_negative_per_1000_ops: f64,
    pub negative_share: f64,
    pub longest_stretch_seconds: f64,
    pub longest_drop_stretch_seconds: Option<f64>,
    /// The node's nr_dentry at the start plus 30 days of the growth the
    /// run's filesystem kept (range over reps),
    /// and that count as a share of this node's lockup edge.
    pub projected_30d_dentries: Spread,
    pub projected_30d_edge_share: Option<Spread>,
    pub limit_reached_runs: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<ContainerFigures>,
}

/// Slope of y on x and its standard error.
fn slope(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    if points.len() < 3 {
        return match points {
            [a, b] if b.0 > a.0 => ((b.1 - a.1) / (b.0 - a.0), f64::NAN),
            _ => (0.0, f64::NAN),
        };
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= 0.0 {
        return (0.0, f64::NAN);
    }
    let b = sxy / sxx;
    let a = my - b * mx;
    let ss: f64 = points.iter().map(|p| (p.1 - a - b * p.0).powi(2)).sum();
    (b, (ss / (n - 2.0) / sxx).sqrt())
}

pub(crate) fn run_summary(r: &RunResult) -> Option<RunSummary> {
    let (first, last) = (r.samples.first()?, r.samples.last()?);
    let elapsed = (last.seconds - first.seconds).max(1e-9);
    let added = |v: u64, base: u64| v as i64 - base as i64;
    let half = &r.samples[r.samples.len() / 2..];
    let (g, g_se) = slope(&half.iter().map(|s| (s.seconds / 60.0, s.nr_dentry as f64)).collect::<Vec<_>>());
    let per_k = |d: i64| if last.ops > 0 { d as f64 * 1000.0 / last.ops as f64 } else { f64::NAN };
    let (fs_d, fs_n) = (r.fs_dentries_at_end, r.fs_negative_at_end);
    let drop_gaps: Vec<f64> =
        r.samples.windows(2).filter(|w| w[1].drops > w[0].drops).map(|w| w[1].max_gap_seconds).collect();
    Some(RunSummary {
        ops: last.ops,
        ops_per_second: last.ops as f64 / elapsed,
        fs_dentries_at_end: fs_d,
        fs_negative_at_end: fs_n,
        dentries_per_1000_ops: per_k(fs_d),
        negative_per_1000_ops: per_k(fs_n),
        growth_per_minute: fs_d as f64 / (elapsed / 60.0),
        negative_share: if fs_d > 0 { fs_n as f64 / fs_d as f64 } else { 0.0 },
        dentries_added_end: added(last.nr_dentry, first.nr_dentry),
        dentries_added_peak: r.samples.iter().map(|s| added(s.nr_dentry, first.nr_dentry)).max().unwrap_or(0),
        negative_added_end: added(last.nr_negative, first.nr_negative),
        machine_negative_per_1000_ops: per_k(added(last.nr_negative, first.nr_negative)),
        machine_growth_per_minute: g,
        machine_growth_per_minute_stderr: g_se,
        nr_dentry_start: first.nr_dentry,
        cgroup_kernel_peak_bytes: r.samples.iter().map(|s| s.cgroup_kernel_bytes).max().unwrap_or(0),
        longest_stretch_seconds: r.samples.iter().map(|s| s.max_gap_seconds).fold(0.0, f64::max),
        longest_drop_stretch_seconds: (!drop_gaps.is_empty()).then(|| drop_gaps.iter().copied().fold(0.0, f64::max)),
        longest_drop_write_seconds: (!r.drops.is_empty()).then(|| r.drops.iter().map(|d| d.1).fold(0.0, f64::max)),
        containers: container_figures(r, elapsed),
    })
}

fn row_summary(
    runs: Vec<RunSummary>,
    baseline: Option<&[RunSummary]>,
    limit_reached: usize,
    edge: Option<f64>,
) -> RowSummary {
    let m = |f: &dyn Fn(&RunSummary) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    let ratios: Vec<f64> = baseline
        .map(|b| {
            runs.iter()
                .zip(b)
                .filter(|(_, b)| b.ops_per_second > 0.0)
                .map(|(r, b)| r.ops_per_second / b.ops_per_second)
                .collect()
        })
        .unwrap_or_default();
    let projected: Vec<f64> =
        runs.iter().map(|r| r.nr_dentry_start as f64 + r.growth_per_minute.max(0.0) * PROJECTION_MINUTES).collect();
    let drop: Vec<f64> = runs.iter().filter_map(|r| r.longest_drop_stretch_seconds).collect();
    RowSummary {
        ops_per_second: Spread::of(&runs.iter().map(|r| r.ops_per_second).collect::<Vec<_>>()),
        throughput_vs_baseline: (!ratios.is_empty()).then(|| Spread::of(&ratios)),
        fs_dentries_at_end: m(&|r| r.fs_dentries_at_end as f64),
        fs_negative_at_end: m(&|r| r.fs_negative_at_end as f64),
        dentries_added_end: m(&|r| r.dentries_added_end as f64),
        dentries_added_peak: m(&|r| r.dentries_added_peak as f64),
        growth_per_minute: Spread::of(&runs.iter().map(|r| r.growth_per_minute).collect::<Vec<_>>()),
        dentries_per_1000_ops: m(&|r| r.dentries_per_1000_ops),
        negative_per_1000_ops: m(&|r| r.negative_per_1000_ops),
        machine_negative_per_1000_ops: m(&|r| r.machine_negative_per_1000_ops),
        negative_share: m(&|r| r.negative_share),
        longest_stretch_seconds: runs.iter().map(|r| r.longest_stretch_seconds).fold(0.0, f64::max),
        longest_drop_stretch_seconds: (!drop.is_empty()).then(|| drop.iter().copied().fold(0.0, f64::max)),
        projected_30d_edge_share: edge.map(|e| Spread::of(&projected.iter().map(|p| p / e).collect::<Vec<_>>())),
        projected_30d_dentries: Spread::of(&projected),
        limit_reached_runs: limit_reached,
        containers: row_containers(&runs),
        runs,
    }
}

/// Fills each row's summary and returns a verdict line per knob value
/// (and for the server-options row).
pub(crate) fn summarise(rows: &mut [Row], opts: &Options) -> Vec<String> {
    let edge = opts.edge.as_ref().map(|e| e.dentries);
    let base: Vec<RunSummary> =
        rows.first().map(|r| r.runs.iter().filter_map(run_summary).collect()).unwrap_or_default();
    for (i, row) in rows.iter_mut().enumerate() {
        let runs: Vec<RunSummary> = row.runs.iter().filter_map(run_summary).collect();
        let reached = row.runs.iter().filter(|r| r.limit_reached).count();
        // A row whose every rep was OOM-killed has nothing to summarise.
        row.summary = (!runs.is_empty()).then(|| row_summary(runs, (i > 0).then_some(&base[..]), reached, edge));
    }
    let mut out = Vec::new();
    let Some(baseline) = rows.first() else { return out };
    let ops_name = if opts.workload == super::Workload::Mariadb { "queries" } else { "ops" };
    for row in rows.iter().skip(1) {
        // The rows that differ from the baseline in one thing.
        let diffs: Vec<(Knob, Value, Value)> = row
            .settings
            .iter()
            .zip(&baseline.settings)
            .filter(|(a, b)| a.1 != b.1)
            .map(|(a, b)| (a.0, b.1, a.1))
            .collect();
        let (what, acts_on) = match (diffs.as_slice(), row.server_options.is_empty()) {
            // The limits have their own verdict (limits::sweep).
            ([(Knob::MemoryLimit, _, _)], true) => continue,
            ([(k, from, to)], true) => (format!("{} {from} → {to}", k.name()), Some(k.acts_on())),
            ([], false) => {
                let o: Vec<String> = row.server_options.iter().map(|(k, v)| format!("{k}={v}")).collect();
                (format!("server {}", o.join(" ")), None)
            }
            // The baseline itself, or more than one change at once: no
            // one-line verdict.
            ([], true) | ([_], false) | ([_, _, ..], _) => continue,
        };
        let (Some(b), Some(s)) = (&baseline.summary, &row.summary) else { continue };
        let mut line = verdict(&what, b, s, ops_name);
        if let Some(a) = acts_on {
            line.push_str(&format!("; this knob {a}"));
        }
        out.push(line);
    }
    out
}

fn pct(from: f64, to: f64) -> String {
    if from.abs() < 1e-12 {
        return "n/a".into();
    }
    format!("{:+.0}%", (to - from) / from.abs() * 100.0)
}

fn verdict(what: &str, b: &RowSummary, s: &RowSummary, ops: &str) -> String {
    let tp = s.throughput_vs_baseline.map_or("throughput n/a".to_string(), |t| {
        if b.runs.len() > 1 {
            format!("throughput ×{:.2} (×{:.2}–×{:.2} over {} reps)", t.median, t.min, t.max, s.runs.len())
        } else {
            format!("throughput ×{:.2} (1 rep: no spread)", t.median)
        }
    });
    let mut line = format!(
        "{what}: negative dentries per 1,000 {ops} {:.0} → {:.0} ({}), dentries held at the end {:.0} → {:.0} ({}), \
         growth {:.0} → {:.0}/min; cost: {tp}, longest stretch {:.1} → {:.1} ms",
        b.negative_per_1000_ops,
        s.negative_per_1000_ops,
        pct(b.negative_per_1000_ops, s.negative_per_1000_ops),
        b.fs_dentries_at_end,
        s.fs_dentries_at_end,
        pct(b.fs_dentries_at_end, s.fs_dentries_at_end),
        b.growth_per_minute.median,
        s.growth_per_minute.median,
        b.longest_stretch_seconds * 1e3,
        s.longest_stretch_seconds * 1e3,
    );
    if let Some(d) = s.longest_drop_stretch_seconds {
        line.push_str(&format!(" (the drops themselves: up to {:.1} ms)", d * 1e3));
    }
    if let (Some(bc), Some(sc)) = (b.containers, s.containers) {
        line.push_str(&format!(
            "; containers: left on the host per container {:.0} → {:.0} ({}), {:.0} → {:.0} containers/min, teardown \
             stretch up to {:.1} → {:.1} ms",
            bc.left_per_container,
            sc.left_per_container,
            pct(bc.left_per_container, sc.left_per_container),
            bc.containers_per_minute,
            sc.containers_per_minute,
            bc.teardown_stretch_seconds * 1e3,
            sc.teardown_stretch_seconds * 1e3
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_of_a_line() {
        let (b, se) = slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0), (3.0, 7.0)]);
        assert!((b - 2.0).abs() < 1e-12);
        assert!(se.abs() < 1e-9);
        assert_eq!(slope(&[(0.0, 1.0)]).0, 0.0);
    }

    /// A combination whose every rep was OOM-killed keeps no summary (and
    /// no verdict), and the others are summarised as before.
    #[test]
    fn a_row_without_runs_has_no_summary() {
        let opts = Options {
            workload: super::super::Workload::Steady(crate::bench::mitigate::steady::Steady::TempTables),
            settings: Vec::new(),
            memory_limit: None,
            duration_seconds: 1.0,
            reps: 1,
            clients: 1,
            mariadb_options: Vec::new(),
            container_mix: crate::workload::container::DEFAULT_MIX,
            container_ops: 0,
            fs: crate::sandbox::FsType::Ext4,
            cpu: 0,
            allow_global: true,
            edge: None,
        };
        let row = |label: &str, v: u64, oom: bool| Row {
            label: label.into(),
            settings: vec![(Knob::VfsCachePressure, Value::Number(v))],
            server_options: Vec::new(),
            runs: Vec::new(),
            summary: None,
            oom_killed: if oom { vec!["rep 1: OOM".into()] } else { Vec::new() },
            oom: Vec::new(),
            not_run: Vec::new(),
        };
        let mut rows = vec![row("a", 100, true), row("b", 500, true)];
        let verdicts = summarise(&mut rows, &opts);
        assert!(rows.iter().all(|r| r.summary.is_none()));
        assert!(verdicts.is_empty());
    }

    #[test]
    fn percent_change() {
        assert_eq!(pct(100.0, 50.0), "-50%");
        assert_eq!(pct(0.0, 5.0), "n/a");
    }
}
