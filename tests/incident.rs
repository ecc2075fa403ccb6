//! The first incident on the node tools. The node calibration (`reclaim
//! --sizes auto`) runs the standard victims by default and saves their
//! fits and the node's deadlines; `status` and the exporter give, for each
//! deadline, the count at which some task first misses it beside the
//! soft-lockup edge, from a calibration saved from the recorded 1M–8M
//! victims run (`tests/fixtures/calibration/6.18-victims`, made from
//! `docs/results/victims-6.18.json` by the code that saves calibrations);
//! a calibration saved before the victims still loads and says the
//! incidents are unknown and how to measure them. The level, `--fail-on`
//! and `--watch` follow the first incident as they follow the soft-lockup
//! edge, on proc trees like the 6.18 fixture at counts taken from the
//! calibration's own fits; an older calibration keeps the soft-lockup level.

mod common;
mod metrics;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{bin, kernel_lock, usage_error};
use dentrylab::size::human;
use metrics::{Exporter, assert_golden, assert_promtool_ok, calibration_dir, fixture, proc_root_with, repo};
use serde_json::Value;

fn victims_dir() -> PathBuf {
    repo().join("tests/fixtures/calibration/6.18-victims")
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn status(state: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dentrylab"))
        .args(["status", "--proc-root", p(&fixture("6.18")), "--state-dir", p(state)])
        .args(extra)
        .output()
        .unwrap()
}

/// `status` on the proc tree `proc` (exit code, stdout, stderr).
fn status_at(proc: &Path, state: &Path, extra: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_dentrylab"))
        .args(["status", "--proc-root", p(proc), "--state-dir", p(state)])
        .args(extra)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code().unwrap(), text(&o.stdout), text(&o.stderr))
}

/// A proc tree like the 6.18 fixture holding `n` dentries.
fn holding(n: f64) -> tempfile::TempDir {
    let n = n as u64;
    proc_root_with(&format!("{n} {} 45 0 1000 0\n", n / 2), "10\n")
}

fn stdout(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn calibration(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("calibration.json")).unwrap()).unwrap()
}

/// Where `who`'s saved fit (value = c·N^k) reaches `seconds`.
fn crossing(cal: &Value, who: &str, seconds: f64) -> f64 {
    let fits = cal["victims"]["fits"].as_array().unwrap();
    let f = &fits.iter().find(|f| f["who"] == who).unwrap_or_else(|| panic!("no fit of {who}: {fits:?}"))["fit"];
    let (c, k) = (f["coefficient"].as_f64().unwrap(), f["exponent"].as_f64().unwrap());
    (seconds / c).powf(1.0 / k)
}

/// The line that starts with `label`, its cells separated by one space.
fn row(out: &str, label: &str) -> String {
    let l = out.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no row {label:?} in\n{out}"));
    l.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn status_gives_each_deadline_its_first_incident_beside_the_soft_lockup_edge() {
    let cal = calibration(&victims_dir());
    let out = stdout(&status(&victims_dir(), &[]));
    // The first incident: the umount victim past a probe's 1 s timeout.
    let probe = human(crossing(&cal, "umount", 1.0) as u64);
    let first = row(&out, "first incident:");
    assert!(
        first.starts_with(&format!(
            "first incident: an exec or HTTP probe's timeout (1 s), missed by umount from {probe} ("
        )),
        "{first}"
    );
    // The calibration predates the pod-start victim: the pod-startup SLO
    // is not measured, and the umount victim's figure does not stand in;
    // nor does it for the node lease, which no victim renews.
    let pod = row(&out, "the pod-startup SLO (5 s)");
    assert!(pod.contains("not measured (below)") && !pod.contains("umount"), "{pod}");
    let why = row(&out, "not measured: the pod-startup SLO:");
    assert!(why.contains("only the pod-start victim measures it") && why.contains("reclaim --sizes auto"), "{why}");
    let lease = row(&out, "the node-lease grace period (50 s)");
    assert!(lease.contains("not measured (below)"), "{lease}");
    assert!(row(&out, "not measured: the node-lease grace period:").contains("no victim renews a node lease"));
    // The soft-lockup row is the edge the prediction gives above it, read
    // with today's watchdog_thresh.
    let distance = row(&out, "distance: count");
    let edge = distance.split("(edge at ").nth(1).unwrap().strip_suffix(')').unwrap();
    let lockup = row(&out, "the soft-lockup watchdog (20 s, read now)");
    assert!(lockup.contains(&format!("reclaiming CPU {edge} ")), "{lockup} vs {distance}");
    assert!(first.contains(&format!("the soft-lockup edge is at {edge}")), "{first}");
    // Calibrated values of the deadlines status does not read.
    assert!(out.contains("RCU's CPU stall warning (59 s)"), "{out}");
    let victims = row(&out, "victims measured when calibrated:");
    assert_eq!(victims, "victims measured when calibrated: waiting umount; not waiting netns, fork-exec, stat");
}

/// The standard victims' calibration (`6.18-victims-standard`, from
/// `docs/results/victims-standard-6.18-v857.json`): the pod-startup SLO's
/// row is the pod-start victim's own crossing (the first incident's low
/// end over several victims is tested in `status::incident` with two
/// waiting victims whose intervals overlap).
#[test]
fn the_standard_calibration_takes_the_pod_start_row_from_the_pod_start_victim() {
    let dir = repo().join("tests/fixtures/calibration/6.18-victims-standard");
    let cal = calibration(&dir);
    let v: Value = serde_json::from_str(&stdout(&status(&dir, &["--json", "-"]))).unwrap();
    let rows = v["incidents"]["rows"].as_array().unwrap();
    let by = |k: &str| rows.iter().find(|r| r["key"] == k).unwrap_or_else(|| panic!("no {k} in {rows:?}"));
    let pod = by("pod_startup_slo");
    assert_eq!(pod["who"], "pod-start", "{pod}");
    // Missed where the victim's wait reaches the SLO less a pod start's own
    // time, divided by how many times the victim's wait a busy node's pod
    // start waits.
    let before = pod["before"]["seconds"].as_f64().unwrap_or_else(|| panic!("no pod start's own time: {pod}"));
    let factor = pod["before"]["factor"].as_f64().unwrap_or_else(|| panic!("no node factor: {pod}"));
    assert!(before > 0.0 && before < 5.0 && factor > 1.0, "{pod}");
    let want = crossing(&cal, "pod-start", (5.0 - before) / factor);
    let got = pod["dentries"].as_f64().unwrap();
    assert!((got - want).abs() <= 1e-9 * want, "{got} {want}");
    assert!(pod.get("not_measured").is_none(), "{pod}");
}

#[test]
fn status_json_carries_the_incidents() {
    let cal = calibration(&victims_dir());
    let v: Value = serde_json::from_str(&stdout(&status(&victims_dir(), &["--json", "-"]))).unwrap();
    let inc = &v["incidents"];
    assert_eq!(inc["known"], true, "{inc}");
    assert_eq!(inc["first"], "probe_timeout");
    let rows = inc["rows"].as_array().unwrap();
    let keys: Vec<&str> = rows.iter().map(|r| r["key"].as_str().unwrap()).collect();
    for k in ["probe_timeout", "pod_startup_slo", "soft_lockup", "rcu_stall", "hung_task", "node_lease_grace"] {
        assert!(keys.contains(&k), "{k} in {keys:?}");
    }
    let seconds: Vec<f64> = rows.iter().map(|r| r["seconds"].as_f64().unwrap()).collect();
    assert!(seconds.windows(2).all(|w| w[0] <= w[1]), "shortest first: {seconds:?}");
    let by = |k: &str| rows.iter().find(|r| r["key"] == k).unwrap();
    let probe = by("probe_timeout");
    assert_eq!(probe["who"], "umount");
    let want = crossing(&cal, "umount", 1.0);
    let got = probe["dentries"].as_f64().unwrap();
    assert!((got - want).abs() <= 1e-9 * want, "{got} {want}");
    let (low, high) = (probe["dentries_low"].as_f64().unwrap(), probe["dentries_high"].as_f64().unwrap());
    assert!(low < got && got < high, "{probe}");
    let nr = v["dentries"]["nr_dentry"].as_f64().unwrap();
    assert_eq!(probe["dentries_to_incident"].as_f64().unwrap(), low - nr);
    for k in ["pod_startup_slo", "node_lease_grace"] {
        let r = by(k);
        assert!(r["who"].is_null() && r["dentries"].is_null(), "no borrowed figure: {r}");
        assert!(r["not_measured"].as_str().is_some_and(|w| !w.is_empty()), "{r}");
    }
    assert!(by("probe_timeout").get("not_measured").is_none());
    // The soft-lockup row is the prediction's own edge.
    let lockup = by("soft_lockup");
    let pr = &v["prediction"];
    assert_eq!(lockup["who"], "reclaiming CPU");
    for (a, b) in [
        ("dentries", "lockup_dentries"),
        ("dentries_low", "lockup_dentries_low"),
        ("ratio_high", "lockup_ratio_high"),
        ("dentries_to_incident", "dentries_to_lockup"),
    ] {
        assert_eq!(lockup[a], pr[b], "{a} vs {b}");
    }
    assert_eq!(lockup["read_now"], true);
    assert_eq!(by("rcu_stall")["read_now"], false);
}

#[test]
fn an_older_calibration_loads_and_says_the_incidents_are_unknown() {
    let old = calibration(&calibration_dir());
    assert_eq!(old["schema"], 1, "the fixture predates the victims");
    let out = stdout(&status(&calibration_dir(), &[]));
    assert_eq!(
        row(&out, "first incident:"),
        "first incident: unknown: the calibration was saved before dentrylab measured what the node's other tasks \
         wait for (schema 1): run `sudo dentrylab reclaim --sizes auto` on this node to measure them"
    );
    // Its soft-lockup edge is as before.
    assert!(row(&out, "distance: count").contains(" dentries to "), "{out}");
    let v: Value = serde_json::from_str(&stdout(&status(&calibration_dir(), &["--json", "-"]))).unwrap();
    assert_eq!(v["incidents"]["known"], false);
    assert!(v["incidents"]["rows"].as_array().unwrap().is_empty());
    // No calibration at all: the built-in default says it cannot know either.
    let empty = tempfile::tempdir().unwrap();
    let out = stdout(&status(empty.path(), &[]));
    assert!(row(&out, "first incident:").starts_with("first incident: unknown: the built-in default"), "{out}");
}

/// At 0.7 of the count at which the umount victim misses a probe's 1 s
/// timeout, its predicted wait is past half the timeout (warn) while the
/// stretch is a few percent of the soft-lockup threshold (ok): `--fail-on
/// warn` exits 3 and names the probe's timeout; past that count, danger.
#[test]
fn fail_on_sees_the_first_incident_before_the_soft_lockup() {
    let cal = calibration(&victims_dir());
    let probe = crossing(&cal, "umount", 1.0);
    let warn = holding(0.7 * probe);
    let (code, out, err) = status_at(warn.path(), &victims_dir(), &["--fail-on", "warn"]);
    assert_eq!(code, 3, "{out}{err}");
    assert_eq!(row(&out, "soft-lockup level"), "soft-lockup level ok");
    let level = row(&out, "level:");
    assert!(
        level.starts_with(
            "level: warn, set by an exec or HTTP probe's timeout (1 s): umount's predicted longest wait is 0."
        ),
        "{level}"
    );
    assert!(level.ends_with("(the upper end of its 90% interval); the soft-lockup level alone is ok"), "{level}");
    assert_eq!(status_at(warn.path(), &victims_dir(), &["--fail-on", "danger"]).0, 0);
    let (code, json, err) = status_at(warn.path(), &victims_dir(), &["--json", "-"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!((&v["level"], &v["prediction"]["level"]), (&Value::from("warn"), &Value::from("ok")));
    let rows = v["incidents"]["rows"].as_array().unwrap();
    let probe_row = rows.iter().find(|r| r["key"] == "probe_timeout").unwrap();
    assert_eq!(probe_row["level"], "warn");
    let src = &v["level_source"];
    assert_eq!(src["key"], "probe_timeout");
    assert_eq!(src["who"], "umount");
    assert_eq!(src["interval"], true);
    assert_eq!(src["ratio"], probe_row["ratio_high"]);
    let r = src["ratio"].as_f64().unwrap();
    assert!((0.5..1.0).contains(&r), "{src}");
    // Past the count: danger from the probe's timeout, the soft lockup still ok.
    let danger = holding(1.2 * probe);
    let (code, out, err) = status_at(danger.path(), &victims_dir(), &["--fail-on", "danger"]);
    assert_eq!(code, 4, "{out}{err}");
    assert!(row(&out, "level:").starts_with("level: danger, set by an exec or HTTP probe's timeout (1 s)"), "{out}");
    assert_eq!(row(&out, "soft-lockup level"), "soft-lockup level ok");
}

/// A calibration saved before the victims keeps the soft-lockup level:
/// ok at the count where the victims' calibration warns, warn from its
/// own stretch, named as the soft-lockup watchdog.
#[test]
fn an_older_calibration_keeps_the_soft_lockup_level() {
    let probe = crossing(&calibration(&victims_dir()), "umount", 1.0);
    let n = holding(0.7 * probe);
    let (code, out, err) = status_at(n.path(), &calibration_dir(), &["--fail-on", "warn"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(row(&out, "soft-lockup level"), "soft-lockup level ok");
    let level = row(&out, "level:");
    assert!(level.starts_with("level: ok, the nearest deadline is the soft-lockup watchdog (20 s)"), "{level}");
    assert!(level.ends_with("the first incident is unknown, so this is the soft-lockup level"), "{level}");
    // Its own edge (exponent 0.63, no interval): at 0.6 of it the stretch is 0.72 of the threshold.
    let (_, json, _) = status_at(&fixture("6.18"), &calibration_dir(), &["--json", "-"]);
    let edge = serde_json::from_str::<Value>(&json).unwrap()["prediction"]["lockup_dentries"].as_f64().unwrap();
    let near = holding(0.6 * edge);
    let (code, json, err) = status_at(near.path(), &calibration_dir(), &["--fail-on", "warn", "--json", "-"]);
    assert_eq!(code, 3, "{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!((&v["level"], &v["prediction"]["level"]), (&Value::from("warn"), &Value::from("warn")));
    assert_eq!(v["level_source"]["key"], "soft_lockup");
    assert_eq!(v["level_source"]["interval"], false);
    assert_eq!(v["level_source"]["ratio"], v["prediction"]["lockup_ratio"]);
}

/// `status --watch`: every line gives the level and the dentries to the
/// first incident beside those to the soft-lockup edge (text and JSON).
#[test]
fn watch_lines_carry_the_first_incident_beside_the_edge() {
    let cal = calibration(&victims_dir());
    let probe = crossing(&cal, "umount", 1.0);
    for (root, level, verb) in [(holding(1e6), "ok", "nearest:"), (holding(0.7 * probe), "warn", "set by")] {
        let args = ["--watch", "100ms", "--samples", "2", "--json", "-"];
        let (code, json, text) = status_at(root.path(), &victims_dir(), &args);
        assert_eq!(code, 0, "{text}");
        let lines: Vec<Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2, "{json}");
        let text: Vec<&str> = text.lines().collect();
        assert_eq!(text.len(), 2, "{text:?}");
        for (v, t) in lines.iter().zip(&text) {
            assert_eq!(v["level"], level, "{t}");
            assert_eq!(v["level_source"]["key"], "probe_timeout");
            assert_eq!(v["incidents"]["first"], "probe_timeout");
            let first =
                v["incidents"]["rows"].as_array().unwrap().iter().find(|r| r["key"] == "probe_timeout").unwrap();
            let nr = v["dentries"]["nr_dentry"].as_f64().unwrap();
            let low = first["dentries_low"].as_f64().unwrap();
            assert_eq!(first["dentries_to_incident"].as_f64().unwrap(), low - nr);
            let edge = v["prediction"]["dentries_to_lockup"].as_f64().unwrap();
            for want in [
                format!("level {level} ({verb} an exec or HTTP probe's timeout)"),
                format!(
                    "first incident (an exec or HTTP probe's timeout, 1 s): {} dentries to go",
                    human((low - nr) as u64)
                ),
                format!("soft-lockup edge: {} dentries to go", human(edge as u64)),
            ] {
                assert!(t.contains(&want), "{want:?} in {t}");
            }
        }
        // From the second sample: the growth, with the first incident's
        // count (a fixture does not grow: no time to it).
        let g = &lines[1]["growth"];
        let low = lines[1]["incidents"]["rows"][0]["dentries_low"].as_f64().unwrap();
        assert_eq!(g["first_incident_dentries"].as_f64(), Some(low), "{g}");
        assert!(g["seconds_to_first_incident"].is_null(), "{g}");
    }
}

/// The value of the series `name{labels}` in `text` (labels as written).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn the_exporter_gives_a_series_per_deadline_with_bounded_labels() {
    let cal = calibration(&victims_dir());
    let e = Exporter::start(&["--proc-root", p(&fixture("6.18")), "--state-dir", p(&victims_dir())]);
    let m = e.metrics();
    assert_golden("6.18-victims", &m);
    assert_promtool_ok(&["check", "metrics"], Some(&m), &repo());
    assert_eq!(sample(&m, "dentrylab_calibration_victims"), Some(1.0));
    // A calibration without the pod-start victim: its SLO is not measured,
    // and no other victim's figure is served for it.
    assert_eq!(sample(&m, r#"dentrylab_incident_measured{deadline="pod_startup_slo"}"#), Some(0.0));
    assert_eq!(sample(&m, r#"dentrylab_incident_measured{deadline="node_lease_grace"}"#), Some(0.0));
    assert_eq!(sample(&m, r#"dentrylab_incident_measured{deadline="probe_timeout"}"#), Some(1.0));
    assert!(!m.lines().any(|l| l.contains(r#"deadline="pod_startup_slo",victim="#)), "{m}");
    assert!(!m.lines().any(|l| l.contains(r#"deadline="node_lease_grace",victim="#)), "{m}");
    assert_eq!(sample(&m, r#"dentrylab_incident_deadline_seconds{deadline="probe_timeout"}"#), Some(1.0));
    // The soft-lockup deadline is the lockup edge's series, under its own labels.
    for bound in ["low", "point", "high"] {
        let i =
            format!(r#"dentrylab_incident_dentries{{deadline="soft_lockup",victim="reclaiming-cpu",bound="{bound}"}}"#);
        let l = format!(r#"dentrylab_lockup_dentries{{bound="{bound}"}}"#);
        assert_eq!(sample(&m, &i), sample(&m, &l), "{bound}");
        assert!(sample(&m, &l).is_some(), "{bound}");
    }
    assert_eq!(
        sample(&m, r#"dentrylab_incident_ratio{deadline="soft_lockup",victim="reclaiming-cpu"}"#),
        sample(&m, "dentrylab_lockup_ratio")
    );
    // Every label value from the fixed sets.
    let deadlines = ["probe_timeout", "pod_startup_slo", "soft_lockup", "rcu_stall", "hung_task", "node_lease_grace"];
    let deadlines: Vec<&str> = deadlines.into_iter().chain(["runtime_request_timeout"]).collect();
    let victims =
        ["umount", "netns", "fork-exec", "stat", "cgroup", "inotify", "container", "pod-start", "reclaiming-cpu"];
    // The level follows the first incident, and says which deadline set it.
    assert_eq!(sample(&m, "dentrylab_level"), Some(0.0));
    assert_eq!(sample(&m, r#"dentrylab_level_deadline{deadline="probe_timeout"}"#), Some(1.0));
    assert_eq!(m.matches("\ndentrylab_level_deadline{").count(), 1, "one deadline set it");
    let warn = holding(0.7 * crossing(&cal, "umount", 1.0));
    let w = Exporter::start(&["--proc-root", p(warn.path()), "--state-dir", p(&victims_dir())]).metrics();
    assert_eq!(sample(&w, "dentrylab_level"), Some(1.0), "warn from the probe's timeout");
    assert!(sample(&w, "dentrylab_lockup_ratio").is_some_and(|r| r < 0.5), "the soft lockup alone is ok");
    assert_eq!(sample(&w, r#"dentrylab_level_deadline{deadline="probe_timeout"}"#), Some(1.0));
    for l in m.lines().filter(|l| {
        ["dentrylab_incident", "dentrylab_dentries_to_incident", "dentrylab_level_deadline"]
            .iter()
            .any(|p| l.starts_with(p))
    }) {
        let label = |k: &str| l.split(&format!("{k}=\"")).nth(1).map(|r| r.split('"').next().unwrap());
        assert!(label("deadline").is_some_and(|d| deadlines.contains(&d)), "{l}");
        assert!(label("victim").is_none_or(|v| victims.contains(&v)), "{l}");
    }
    // Without victims' fits the incident series are absent, not made up.
    let old = Exporter::start(&["--proc-root", p(&fixture("6.18")), "--state-dir", p(&calibration_dir())]);
    let m = old.metrics();
    assert_eq!(sample(&m, "dentrylab_calibration_victims"), Some(0.0));
    assert!(!m.contains("dentrylab_incident") && !m.contains("dentries_to_incident"), "{m}");
    assert_eq!(sample(&m, r#"dentrylab_level_deadline{deadline="soft_lockup"}"#), Some(1.0));
}

/// From the second scrape, at the exporter's own growth: the time to the
/// first incident is its distance over the rate, beside the time to the
/// soft-lockup edge.
#[test]
fn the_exporter_times_the_first_incident_at_its_growth() {
    let root = holding(1e6);
    let e = Exporter::start(&["--proc-root", p(root.path()), "--state-dir", p(&victims_dir())]);
    assert!(!e.metrics().contains("dentrylab_seconds_to_first_incident"), "no growth from one scrape");
    std::fs::write(root.path().join("sys/fs/dentry-state"), "1010000 505000 45 0 1000 0\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let m = e.metrics();
    let growth = sample(&m, "dentrylab_dentries_growth_per_second").expect("growth from the second scrape");
    assert!(growth > 0.0, "{m}");
    let to = sample(&m, r#"dentrylab_dentries_to_incident{deadline="probe_timeout",victim="umount"}"#).unwrap();
    let t = sample(&m, "dentrylab_seconds_to_first_incident").expect("a time to the first incident");
    assert!((t - to / growth).abs() <= 1e-4 * t, "{t} s vs {to} / {growth}/s");
    let lockup = sample(&m, "dentrylab_seconds_to_lockup").unwrap();
    assert!(t < lockup, "the first incident comes first: {t} {lockup}");
}

#[test]
fn victims_none_stands_alone() {
    usage_error("reclaim", &["--victims", "none,umount"], &["--victims", "'none'", "alone"]);
}

/// The node calibration as root: `--sizes auto` (two sizes: 500k and the
/// 1M cap) runs the standard victims without being asked, and the saved
/// calibration carries the run's victims' fits, who does not wait, and the
/// deadlines' first incidents, which `status` then reads.
#[test]
fn an_auto_sweep_saves_the_victims_fits_in_the_calibration() {
    require_root!();
    let _k = kernel_lock();
    let dir = tempfile::tempdir().unwrap();
    let args = ["reclaim", "--sizes", "auto:1M", "--reps", "1", "--unobserved-reps", "0", "--unpinned-reps", "0"];
    let v = common::run_json(&[&args[..], &["--state-dir", p(dir.path())][..]].concat());
    let standard = serde_json::json!(["umount", "netns", "fork-exec", "stat", "pod-start"]);
    assert_eq!(v["options"]["victims"], standard, "the standard victims by default");
    assert_eq!(v["auto"]["sizes"], serde_json::json!([500_000, 1_000_000]));
    assert_eq!(v["victim_runs"].as_array().unwrap().len(), 2, "one victim repetition per size");
    let c = calibration(dir.path());
    assert_eq!(c["schema"], 2);
    let cv = &c["victims"];
    assert_eq!(cv["ran"], standard, "{c}");
    assert_eq!(cv["largest_size"], 1_000_000);
    // Each victim is either fitted or named as not waiting, with why.
    let fitted: Vec<&str> = cv["fits"].as_array().unwrap().iter().map(|f| f["who"].as_str().unwrap()).collect();
    let not: Vec<&str> = cv["unaffected"].as_array().unwrap().iter().map(|u| u["victim"].as_str().unwrap()).collect();
    for w in ["umount", "netns", "fork-exec", "stat"] {
        assert!(fitted.contains(&w) != not.contains(&w), "{w}: fitted {fitted:?}, not waiting {not:?}");
    }
    // The fits are the run's own victims' fits (whether a victim waits is
    // the run's judgement, tested with tests/victims.rs; under load a
    // victim's own control calls can be slow enough to hide it).
    let run_fits: Vec<&Value> =
        v["victims"]["fits"].as_array().unwrap().iter().filter(|f| f["watches"] == "victims").collect();
    assert_eq!(cv["fits"].as_array().unwrap().iter().collect::<Vec<_>>(), run_fits);
    // Every deadline, keyed, with the run's own first incident.
    let incidents = cv["incidents"].as_array().unwrap();
    let run_incidents = v["victims"]["incidents"].as_array().unwrap();
    assert_eq!(incidents.len(), run_incidents.len());
    for (i, r) in incidents.iter().zip(run_incidents) {
        assert_eq!((&i["deadline"], &i["first"]), (&r["deadline"], &r["first"]));
    }
    let keys: Vec<&str> = incidents.iter().map(|i| i["key"].as_str().unwrap()).collect();
    for k in ["probe_timeout", "pod_startup_slo", "soft_lockup", "node_lease_grace", "runtime_request_timeout"] {
        assert!(keys.contains(&k), "{k} in {keys:?}");
    }
    let pod = incidents.iter().find(|i| i["key"] == "pod_startup_slo").unwrap();
    assert_eq!(pod["deadline"]["seconds"], 5.0);
    assert_eq!(pod["deadline"]["before"]["of"], "a pod start", "the pod start's own time is saved: {pod}");
    if let Some(who) = pod["first"]["who"].as_str() {
        assert!(fitted.contains(&who), "{pod}");
        assert_eq!(who, "pod-start", "the pod-startup SLO is the pod-start victim's alone: {pod}");
    }
    // status reads them.
    let out = bin().args(["status", "--state-dir", p(dir.path())]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let first = row(&text, "first incident:");
    assert!(!first.starts_with("first incident: unknown"), "{text}");
    assert!(
        text.contains("the pod-startup SLO (5 s, 1.02 s of it a pod start's own, the rest ÷ 2.15 for a busy node)"),
        "{text}"
    );
}
