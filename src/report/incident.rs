//! `status`'s first-incident table: for each deadline of the node, who
//! misses it first, at what count (with its 90% interval), how far the node
//! is from that count, and the ratio of the predicted wait to the deadline,
//! as the soft-lockup edge is given above it.

use std::fmt::Write;

use super::Grid;
use super::plain::render_grid;
use crate::analysis::edge::Level;
use crate::analysis::interval::count_with_interval;
use crate::size::human;
use crate::state::DeadlineKey;
use crate::status::StatusResult;
use crate::status::incident::{Incidents, RECLAIMING_CPU, Row};

/// The section under the prediction.
pub(crate) fn section(inc: &Incidents) -> String {
    let mut s = String::new();
    if !inc.known {
        let _ = writeln!(s, "first incident: unknown: {}", inc.unknown.as_deref().unwrap_or("no victims measured"));
        return s;
    }
    let _ = writeln!(s, "{}", first_line(inc));
    let rows: Vec<Vec<String>> = inc
        .rows
        .iter()
        .map(|r| {
            vec![
                deadline(r),
                match (&r.who, &r.not_measured) {
                    (Some(w), _) => w.clone(),
                    (None, Some(_)) => "not measured (below)".into(),
                    (None, None) => "– (no measured wait grows to it)".into(),
                },
                r.dentries.map_or("–".into(), |n| count_with_interval(n, r.dentries_low, r.dentries_high)),
                distance(r),
                ratio_cell(r),
            ]
        })
        .collect();
    s += &render_grid(&Grid {
        header: vec![
            "Deadline".into(),
            "First to miss it".into(),
            "At (90% interval)".into(),
            "Distance".into(),
            "Ratio".into(),
        ],
        rows,
    });
    for r in inc.rows.iter().filter(|r| r.who.is_none()) {
        if let Some(why) = &r.not_measured {
            let _ = writeln!(s, "not measured: {}: {why}", r.deadline.name);
        }
    }
    let waiting: Vec<&str> = inc.waiting.iter().map(String::as_str).collect();
    let not: Vec<&str> = inc.victims_ran.iter().map(|v| v.name()).filter(|n| !waiting.contains(n)).collect();
    let list = |v: &[&str]| if v.is_empty() { "none".to_string() } else { v.join(", ") };
    let _ =
        writeln!(s, "victims measured when calibrated: waiting {}; not waiting {}", list(&waiting[..]), list(&not[..]));
    let _ = writeln!(
        s,
        "ratio: the predicted longest wait of the first to miss it, were every dentry reclaimed in one walk, over \
         the deadline (1 = missed)"
    );
    s
}

fn seconds(x: f64) -> String {
    if x.fract() == 0.0 { format!("{x:.0} s") } else { format!("{x} s") }
}

fn deadline(r: &Row) -> String {
    let now = if r.read_now { ", read now" } else { "" };
    // What the task takes anyway, where a wait was judged against the rest.
    let before = r.deadline.before.as_ref().filter(|_| r.not_measured.is_none());
    let before = before.map(|b| {
        let own = format!(", {} of it {}'s own", seconds(b.seconds), b.of);
        if b.factor == 1.0 { own } else { format!("{own}, the rest ÷ {} for a busy node", b.factor) }
    });
    format!("{} ({}{now}{})", r.deadline.name, seconds(r.deadline.seconds), before.unwrap_or_default())
}

fn distance(r: &Row) -> String {
    let end = if r.dentries_low.is_some() { "its low end" } else { "it" };
    match (r.dentries, r.dentries_to_incident) {
        (Some(_), Some(t)) if t >= 0.0 => format!("{} dentries to {end}", human(t as u64)),
        (Some(_), Some(t)) => format!("{} dentries past {end}", human((-t) as u64)),
        _ => "–".into(),
    }
}

/// Three significant digits, as the soft-lockup ratio is printed.
fn ratio(r: f64) -> String {
    if r == 0.0 || !r.is_finite() {
        return format!("{r}");
    }
    let digits = (2 - r.abs().log10().floor() as i32).max(0) as usize;
    format!("{r:.digits$}")
}

fn ratio_cell(r: &Row) -> String {
    match (r.ratio, r.ratio_high) {
        (Some(p), Some(h)) => format!("{} (90% up to {})", ratio(p), ratio(h)),
        (Some(p), None) => ratio(p),
        _ => "–".into(),
    }
}

/// `first incident: ...`: the deadline missed at the smallest count, and
/// where the soft-lockup edge lies beside it.
fn first_line(inc: &Incidents) -> String {
    let Some(f) = inc.first_row() else {
        return "first incident: none predicted: no measured wait grows to any deadline".into();
    };
    let mut s = format!(
        "first incident: {} ({}), missed by {} from {} dentries: {}",
        f.deadline.name,
        seconds(f.deadline.seconds),
        f.who.as_deref().unwrap_or("–"),
        f.dentries.map_or("–".into(), |n| count_with_interval(n, f.dentries_low, f.dentries_high)),
        distance(f)
    );
    if let Some(edge) = inc
        .row(DeadlineKey::SoftLockup)
        .filter(|r| r.key != f.key)
        .and_then(|r| r.dentries.map(|n| count_with_interval(n, r.dentries_low, r.dentries_high)).zip(r.dentries))
    {
        let _ = write!(
            s,
            "; the soft-lockup edge is at {}, {:.1}× as many",
            edge.0,
            edge.1 / f.dentries.unwrap_or(f64::NAN)
        );
    }
    s
}

/// `level: warn, set by ...`: the node's level, what `--fail-on` follows,
/// and the deadline that set it (the nearest to being missed).
pub(crate) fn level_line(st: &StatusResult) -> String {
    let mut s = format!("level: {}", st.level.name());
    let Some(src) = &st.level_source else {
        s += ": no deadline has a prediction (the watchdog is off and the first incident is unknown)";
        return s;
    };
    let verb = if st.level == Level::Ok { "the nearest deadline is" } else { "set by" };
    let what = match src.who.as_deref() {
        Some(RECLAIMING_CPU) => "the reclaiming CPU's predicted longest stretch".to_string(),
        Some(who) => format!("{who}'s predicted longest wait"),
        None => "the predicted wait".into(),
    };
    let upper = if src.interval { " (the upper end of its 90% interval)" } else { "" };
    let _ = write!(s, ", {verb} {}: {what} is {} of it{upper}", src.deadline(), ratio(src.ratio));
    if st.incidents.as_ref().is_none_or(|i| !i.known) {
        s += "; the first incident is unknown, so this is the soft-lockup level";
    } else if src.key != DeadlineKey::SoftLockup {
        let _ = write!(s, "; the soft-lockup level alone is {}", st.prediction.level.name());
    }
    s
}
