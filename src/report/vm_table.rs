//! `dentrylab vm`'s table on standard output: one line per row of the
//! matrix, with the figures taken from each guest's reclaim result.

use crate::analysis::interval::count_with_interval;
use crate::bench::reclaim::ReclaimResult;
use crate::bench::reclaim::watchdog::WatchdogReport;
use crate::bench::vm::{Matrix, Row};
use crate::report::Grid;
use crate::report::table::render_grid;
use crate::size::human;

/// An exponent with its 90% interval (the high end unbounded as `None`).
pub type Exponent = (f64, Option<(f64, Option<f64>)>);

/// The figures of one row's reclaim result, as the table shows them.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Figures {
    pub path: String,
    pub ns_per_dentry: Option<f64>,
    /// Longest stretch at the largest size, seconds, and its share of that reclaim.
    pub longest: Option<(f64, f64)>,
    pub gap_exponent: Option<Exponent>,
    pub edge: Option<String>,
    pub watchdog: Vec<String>,
    pub heaviest: Option<String>,
}

/// The figures of a reclaim result (`None` for another command's).
pub fn figures(r: &ReclaimResult) -> Figures {
    let o = &r.options;
    let method = o.methods.first().map(|m| m.name()).unwrap_or("?");
    let path = format!("{} {} {}", o.fs_label(), o.kind.name(), method);
    let largest = r.runs.iter().map(|x| x.target).max();
    let at_largest: Vec<_> = r.runs.iter().filter(|x| Some(x.target) == largest).collect();
    let longest = at_largest
        .iter()
        .max_by(|a, b| a.probe.max_gap_seconds.total_cmp(&b.probe.max_gap_seconds))
        .map(|x| (x.probe.max_gap_seconds, x.probe.max_gap_seconds / x.reclaim_seconds.max(1e-12)));
    let ns_per_dentry = r.sizes.iter().rfind(|s| s.method == *o.methods.first().unwrap_or(&s.method)).map(|s| s.ns_per_dentry.median);
    let gap_exponent = r.fits.gap_power.as_ref().map(|f| {
        let iv = f.band.as_ref().map(|b| b.exponent(f)).map(|i| (i.low, i.high));
        (f.exponent, iv)
    });
    let edge = r.verdict.as_ref().and_then(|v| v.lockup_count.map(|c| count_with_interval(c, v.lockup_count_low, v.lockup_count_high)));
    let watchdog = r.watchdog.iter().chain(&r.watchdog_more).map(watchdog_cell).collect();
    let heaviest = at_largest
        .iter()
        .filter_map(|x| x.profile.as_ref())
        .filter_map(|p| p.longest_gap.reclaimer.as_ref().and_then(|m| m.path.as_ref()))
        .map(|p| format!("{} ({:.0}%)", p.name(), p.share * 100.0))
        .next();
    Figures { path, ns_per_dentry, longest, gap_exponent, edge, watchdog, heaviest }
}

/// `thresh 1 s: silent ≤2M, fired ≥4M; predicted 2.05M (2.01M–2.1M); 0 FP 0 FN`.
pub fn watchdog_cell(w: &WatchdogReport) -> String {
    let obs = |v: Option<u64>| v.map(human).unwrap_or_else(|| "–".into());
    let pred = w
        .predicted_edge
        .map(|p| count_with_interval(p, w.predicted_edge_low, w.predicted_edge_high))
        .unwrap_or_else(|| "none".into());
    format!(
        "thresh {} s: silent ≤{}, fired ≥{}; predicted {pred}; {} FP {} FN",
        w.thresh_seconds,
        obs(w.observed_largest_silent),
        obs(w.observed_smallest_fired),
        w.false_positive,
        w.false_negative
    )
}

/// The row's reclaim result, if it has one.
pub fn reclaim_of(row: &Row) -> Option<ReclaimResult> {
    let raw = row.result.as_ref()?;
    let v: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
    if v.get("benchmark")?.as_str()? != "reclaim" {
        return None;
    }
    serde_json::from_value(v).ok()
}

pub fn render(m: &Matrix) -> String {
    let header = [
        "kernel",
        "model",
        "accel/clock",
        "path",
        "ns/dentry",
        "longest stretch (share)",
        "gap exponent (90%)",
        "predicted edge (90%)",
        "heaviest path",
    ];
    let mut g = Grid { header: header.iter().map(|s| s.to_string()).collect(), rows: vec![] };
    let mut notes = Vec::new();
    for (i, row) in m.rows.iter().enumerate() {
        let f = reclaim_of(row).map(|r| figures(&r)).unwrap_or_default();
        let model = match &row.preempt_requested {
            Some(r) if *r != row.preempt => format!("{} (asked {r})", row.preempt),
            _ => row.preempt.clone(),
        };
        let accel = if row.accel == "host" { "host".to_string() } else { format!("{}/{}", row.accel, row.clock) };
        let dash = || "–".to_string();
        let cells = vec![
            format!("{}{}", row.kernel_release, if row.error.is_some() { format!(" [{}]", i + 1) } else { String::new() }),
            model,
            accel,
            if f.path.is_empty() { dash() } else { f.path.clone() },
            f.ns_per_dentry.map(|v| format!("{v:.0}")).unwrap_or_else(dash),
            f.longest
                .map(|(s, share)| match share {
                    // A stretch longer than the reclaim call lies partly outside it.
                    x if x > 1.0 => format!("{} (> the reclaim)", crate::duration::secs(s)),
                    _ => format!("{} ({:.1}%)", crate::duration::secs(s), share * 100.0),
                })
                .unwrap_or_else(dash),
            f.gap_exponent
                .map(|(e, iv)| match iv {
                    Some((lo, Some(hi))) => format!("{e:.2} ({lo:.2}–{hi:.2})"),
                    Some((lo, None)) => format!("{e:.2} ({lo:.2}–)"),
                    None => format!("{e:.2}"),
                })
                .unwrap_or_else(dash),
            f.edge.clone().unwrap_or_else(dash),
            f.heaviest.clone().unwrap_or_else(dash),
        ];
        g.rows.push(cells);
        for w in &f.watchdog {
            notes.push(format!("{} {}: watchdog {w}", row.kernel_release, row.preempt));
        }
        if let Some(e) = &row.error {
            notes.push(format!("[{}] {}: {e}", i + 1, row.kernel_spec));
        }
    }
    let mut out = render_grid(&g);
    if m.rows.iter().any(|r| r.emulated) {
        out += "Rows under tcg are emulated (every instruction translated by QEMU): compare them with each other, \
                never with the host row.\n";
    }
    if m.rows.iter().any(|r| r.clock.starts_with("icount")) {
        out += "Rows on an icount clock count instructions: their times are the emulated machine's, not the host's.\n";
    }
    out += &format!("Accelerator: {}.\n", m.accel_reason);
    for n in notes {
        out += &n;
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::vm::channel::Transcript;
    use crate::bench::vm::{HostInfo, Matrix};

    fn matrix() -> Matrix {
        let t = Transcript::parse(include_str!("../../tests/fixtures/vm/channel.txt"));
        let hello = t.hello.unwrap();
        let row = Row {
            kernel_spec: "linux-image-6.12.117+deb13-cloud-amd64".into(),
            kernel_release: hello.release.clone(),
            preempt: hello.preempt.clone(),
            preempt_requested: None,
            accel: "tcg".into(),
            clock: "host".into(),
            emulated: true,
            memory_bytes: 2 << 30,
            cpus: 2,
            wall_seconds: 30.0,
            result: Some(serde_json::value::RawValue::from_string(t.result.unwrap()).unwrap()),
            kernel_log: t.kernel_log,
            error: None,
            console_tail: vec![],
        };
        let mut failed = row.clone();
        failed.result = None;
        failed.error = Some("no report within 60 s (--timeout)".into());
        Matrix {
            schema: crate::bench::vm::SCHEMA.into(),
            started_at: "2026-11-25T08:43:00Z".into(),
            host: HostInfo { kernel: "6.18".into(), cpus: 2, memory_bytes: 24 << 30 },
            command: vec!["reclaim".into()],
            accel_reason: "asked for (--accel tcg)".into(),
            rows: vec![row, failed],
        }
    }

    #[test]
    fn a_guest_reclaim_gives_the_rows_figures() {
        let m = matrix();
        let r = reclaim_of(&m.rows[0]).expect("the recorded result is a reclaim result");
        let f = figures(&r);
        assert_eq!(f.path, "tmpfs hardlink umount");
        assert!(f.ns_per_dentry.is_some_and(|v| v > 0.0));
        let (gap, share) = f.longest.expect("longest stretch");
        assert!(gap > 0.0 && share > 0.0 && share < 1.0, "{gap} {share}");
        assert!(reclaim_of(&m.rows[1]).is_none());
    }

    #[test]
    fn the_table_marks_emulated_rows_and_lists_errors() {
        let out = render(&super::tests::matrix());
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("kernel") && lines[2].contains("tcg/host"), "{out}");
        assert!(lines[3].contains("[2]"), "{out}");
        assert!(out.contains("emulated") && out.contains("never with the host row"), "{out}");
        assert!(out.contains("[2] linux-image-6.12.117+deb13-cloud-amd64: no report within 60 s"), "{out}");
    }
}
