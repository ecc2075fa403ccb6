//! `dentrylab advise` for people: the node's count, growth and first
//! incident, then per knob its value, measured effect, cost, failure mode
//! and sources; and the one line per knob `status --advise` prints.

use std::fmt::Write;

use crate::size::{grouped, human};
use crate::status::advise::{Advice, GrowthSource, Knob};
use crate::status::growth::{human_duration, signed_rate};

fn growth(a: &Advice) -> String {
    match (a.growth_per_second, &a.growth_source) {
        (Some(g), GrowthSource::Sampled(s)) => format!("{}/s (sampled over {s:.0} s)", signed_rate(g)),
        (Some(g), _) => format!("{}/s (given)", signed_rate(g)),
        (None, _) => "not known".into(),
    }
}

/// The whole advice.
pub(crate) fn text(a: &Advice) -> String {
    let mut s = format!("dentrylab advise: kernel {}\n\n", a.kernel);
    let _ = writeln!(s, "calibration: {}", a.calibration);
    let _ =
        writeln!(s, "dentries now: {} ({} unused); growth {}", grouped(a.nr_dentry), grouped(a.nr_unused), growth(a));
    let _ = match &a.target {
        Some(t) => writeln!(
            s,
            "first incident: {} at {} dentries, {}\n",
            t.name,
            human(t.dentries as u64),
            t.seconds_to.map_or("no time at this growth".into(), |x| format!("{} away", human_duration(x)))
        ),
        None => writeln!(s, "first incident: not predicted by the calibration\n"),
    };
    // One line per knob (a table would right-align sentences): its scope,
    // its value now, and what to set or why it cannot be judged.
    let _ = writeln!(s, "what to set, per knob:");
    for k in &a.knobs {
        let now = k.current.clone().unwrap_or_else(|| if k.present { "–".into() } else { "absent".into() });
        let _ = writeln!(s, "  {} ({}, now {now}): {}", k.knob, k.scope, what(k));
    }
    for k in a.knobs.iter().filter(|k| k.judged) {
        s += &details(k);
    }
    let _ = writeln!(s, "\nrecorded results judged from:");
    for src in &a.sources {
        let _ = writeln!(s, "  {src}");
    }
    for n in &a.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

fn details(k: &Knob) -> String {
    let mut s = format!("\n{}\n", k.knob);
    for e in &k.effect_on_count {
        let _ = writeln!(s, "  effect: {e}");
    }
    if let Some(f) = &k.effect_on_first_incident {
        let _ = writeln!(s, "  first incident: {f}");
    }
    for c in &k.cost {
        let _ = writeln!(s, "  cost: {c}");
    }
    let _ = writeln!(s, "  failure mode: {}", k.failure_mode);
    s
}

/// `set VALUE`, or why the knob cannot be judged.
fn what(k: &Knob) -> String {
    match (&k.value, &k.why_not) {
        (Some(v), _) => format!("set {v}"),
        (None, Some(w)) => format!("cannot judge: {w}"),
        (None, None) => "–".into(),
    }
}

/// `status --advise`: one line per knob.
pub(crate) fn lines(a: &Advice) -> String {
    let mut s = String::from("\nadvice (dentrylab advise for the effects and sources):\n");
    for k in &a.knobs {
        let now = k.current.as_ref().map_or(String::new(), |c| format!(" (now {c})"));
        let _ = writeln!(s, "  {}{now}: {}", k.knob, what(k));
    }
    s
}
