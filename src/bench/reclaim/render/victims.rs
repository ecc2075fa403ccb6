//! `--victims`: the victims table (each victim's longest call during the
//! reclaim beside the longest stretch and the same victim outside it), the
//! deadlines table (who misses each deadline first, at what count), and the
//! line that opens the verdict.

use crate::analysis::interval::count_with_interval;
use crate::analysis::victims::{Incident, Watches};
use crate::bench::reclaim::deadline_keys;
use crate::bench::reclaim::result::ReclaimResult;
use crate::bench::reclaim::victims::Analysis;
use crate::duration::secs;
use crate::render::Grid;
use crate::render::cell::spread_secs;
use crate::size::human;
use crate::state::MeasuredBy;

/// A time that may be missing (NaN: no call).
fn maybe_secs(s: f64) -> String {
    if s.is_finite() { secs(s) } else { "–".into() }
}

/// Whether the victims ran under more than one reclaim path.
fn several_methods(a: &Analysis) -> bool {
    a.sizes.iter().any(|s| s.method != a.sizes[0].method)
}

pub(crate) fn victims_grid(a: &Analysis) -> Option<Grid> {
    if a.sizes.is_empty() {
        return None;
    }
    let methods = several_methods(a);
    let mut header = [
        "Victim",
        "Target",
        "Longest during",
        "× stretch",
        "p99 during",
        "calls/s during",
        "Longest outside",
        "p99 outside",
        "calls/s outside",
        "Waits in",
    ]
    .map(String::from)
    .to_vec();
    if methods {
        header.insert(0, "Method".into());
    }
    let rows = a
        .sizes
        .iter()
        .map(|s| {
            let mut row = vec![
                s.victim.name().to_string(),
                human(s.target),
                spread_secs(&s.longest_seconds),
                s.of_stretch.map(|x| format!("{x:.2}×")).unwrap_or_else(|| "–".into()),
                maybe_secs(s.p99_seconds),
                format!("{:.0}", s.per_second),
                maybe_secs(s.outside_longest_seconds),
                maybe_secs(s.outside_p99_seconds),
                format!("{:.0}", s.outside_per_second),
                match (&s.waits_in, &s.slowest_step) {
                    (Some(w), Some(step)) => format!("{w} (step: {step})"),
                    (None, Some(step)) => format!("step: {step}"),
                    (w, None) => w.clone().unwrap_or_else(|| "–".into()),
                },
            ];
            if methods {
                row.insert(0, s.method.name().to_string());
            }
            row
        })
        .collect();
    Some(Grid { header, rows })
}

/// With more than one reclaim path: which path stalls which victim, one
/// row per victim, a column per path; a cell is the victim's longest call
/// during the reclaim at the path's largest size (× the stretch), or `no`.
pub(crate) fn stalls_grid(a: &Analysis) -> Option<Grid> {
    if !several_methods(a) {
        return None;
    }
    let mut methods: Vec<crate::bench::reclaim::methods::Method> = Vec::new();
    let mut victims: Vec<crate::probe::victims::Victim> = Vec::new();
    for s in &a.stalls {
        if !methods.contains(&s.method) {
            methods.push(s.method);
        }
        if !victims.contains(&s.victim) {
            victims.push(s.victim);
        }
    }
    let mut header = vec!["Victim".to_string()];
    header.extend(methods.iter().map(|m| m.name().to_string()));
    let rows = victims
        .iter()
        .map(|&v| {
            let mut row = vec![v.name().to_string()];
            for &m in &methods {
                let stall = a.stalls.iter().find(|s| s.method == m && s.victim == v);
                let last = a.sizes.iter().rev().find(|s| s.method == m && s.victim == v);
                row.push(match (stall, last) {
                    (Some(st), Some(l)) => format!(
                        "{} {}{}",
                        match (st.waits, &st.why) {
                            (true, None) => "waits",
                            (true, Some(_)) => "may wait",
                            (false, _) => "no:",
                        },
                        secs(l.longest_seconds.median),
                        l.of_stretch.map(|x| format!(" ({x:.2}×)")).unwrap_or_default()
                    ),
                    _ => "–".into(),
                });
            }
            row
        })
        .collect();
    Some(Grid { header, rows })
}

/// Where the deadline is first missed; one no victim of the run measures
/// (the node lease; the pod-startup SLO without the pod-start victim)
/// says "not measured", never "not reached".
fn crossing(i: &Incident, a: &Analysis) -> String {
    match (&i.first, deadline_keys::key(&i.deadline).measured_by()) {
        (Some(c), _) => count_with_interval(c.count, c.interval.map(|x| x.low), c.interval.and_then(|x| x.high)),
        (None, MeasuredBy::Nobody(_)) => "not measured: no victim does it".into(),
        (None, MeasuredBy::Only(v)) if !a.sizes.iter().any(|s| s.victim == v) => {
            format!("not measured: the {} victim did not run", v.name())
        }
        (None, MeasuredBy::Only(_) | MeasuredBy::AnyVictim) => "not reached by any fitted wait".into(),
    }
}

pub(crate) fn deadlines_grid(a: &Analysis) -> Option<Grid> {
    if a.incidents.is_empty() {
        return None;
    }
    let header = ["Deadline", "Seconds", "From", "First missed at (90% interval)", "By"].map(String::from).to_vec();
    let rows = a
        .incidents
        .iter()
        .map(|i| {
            vec![
                i.deadline.name.clone(),
                format!("{:.0}", i.deadline.seconds),
                match &i.deadline.before {
                    Some(b) if b.factor == 1.0 => format!("{}, less {} s: {}", i.deadline.source, b.seconds, b.source),
                    Some(b) => format!("{}, less {} s, ÷ {}: {}", i.deadline.source, b.seconds, b.factor, b.source),
                    None => i.deadline.source.clone(),
                },
                crossing(i, a),
                i.first.as_ref().map(|c| who(&c.who, i.deadline.watches)).unwrap_or_else(|| "–".into()),
            ]
        })
        .collect();
    Some(Grid { header, rows })
}

fn who(name: &str, w: Watches) -> String {
    match w {
        Watches::ReclaimingCpu => "the reclaiming CPU's longest stretch".into(),
        Watches::Victims => format!("the {name} victim"),
    }
}

/// The verdict's first line: the first incident and its count.
pub(crate) fn first_incident_line(r: &ReclaimResult) -> Option<String> {
    let a = r.victims.as_ref()?;
    let i = a.first()?;
    let c = i.first.as_ref()?;
    let op = a.sizes.iter().find(|s| s.victim.name() == c.who).map(|s| s.victim.operation());
    Some(format!(
        "First incident: {} misses {} ({:.0} s) from about {} dentries per reclaim{}.",
        who(&c.who, i.deadline.watches),
        i.deadline.name,
        i.deadline.seconds,
        crossing(i, a),
        op.map(|o| format!(" ({o})")).unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests {
    /// A column per reclaim path: umount stalls the umount victim, ns-exit
    /// does not (its wait under 2× the control).
    #[test]
    fn the_stalls_grid_has_a_column_per_path() {
        let a = crate::bench::reclaim::victims::tests::two_methods();
        let g = super::stalls_grid(&a).unwrap();
        assert_eq!(g.header, ["Victim", "umount", "ns-exit"]);
        assert!(g.rows[0][1].starts_with("waits 404 ms"), "{:?}", g.rows);
        assert!(g.rows[0][2].starts_with("no:"), "{:?}", g.rows);
    }
}
