//! `census --backend bpf` on this host's own kernel: planted directories
//! found with their exact counts by the walk inside the kernel (beside a
//! churn of creates and unlinks, the kernel log clean), a sample's
//! intervals holding their counts, the refusal as nobody (one line, the
//! kernel's errno), a SIGKILL leaving no program or map of ours loaded,
//! the exporter's background census loading its programs once and
//! freeing them when it exits, and `--impact` measuring lookups and
//! umounts beside the walk.

mod common;
mod metrics;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, has, is_root, kernel_lock, run_json};

/// A BPF census needs root, BTF, the BPF system call and the symbols the
/// table is found by; a plant needs mkfs.ext4.
macro_rules! require_bpf_census {
    () => {
        require!(is_root(), "needs root to load BPF programs and to mount");
        require!(std::path::Path::new("/sys/kernel/btf/vmlinux").exists(), "needs a kernel with BTF");
        require!(has("mkfs.ext4"), "needs mkfs.ext4 (see .ci/run for its package)");
    };
}

fn planted(r: &serde_json::Value) -> &Vec<serde_json::Value> {
    r["planted"].as_array().unwrap()
}

#[test]
fn a_bpf_census_finds_every_planted_directory_with_its_exact_count() {
    require_bpf_census!();
    let _k = kernel_lock();
    // The churn goes to the first planted filesystem (tmpfs: an unlink frees
    // its dentry), so dentries are freed under the walk.
    let plant = "tmpfs:hardlink:2k+ext4:negative:20k+ext4:hardlink:5k+ext4:negative:5k:dirs=50";
    let r = run_json(&["census", "--backend", "bpf", "--top", "5", "--plant", plant, "--churn", "20k"]);
    let w = &r["walk"];
    assert_eq!(w["backend"], "bpf", "{w}");
    assert_eq!(w["mode"], "full", "{w}");
    assert_eq!(w["buckets_walked"], w["buckets_total"], "{w}");
    // 1 + 1 + 1 + 50 planted directories, each found with its exact count.
    let p = planted(&r);
    assert_eq!(p.len(), 53, "{r}");
    let bad: Vec<_> = p.iter().filter(|c| c["ok"] != true).collect();
    assert!(bad.is_empty(), "{bad:?}");
    let found = |c: &serde_json::Value| c["found"]["found"].as_u64().unwrap();
    assert_eq!((found(&p[0]), found(&p[1]), found(&p[2])), (2_000, 20_000, 5_000), "{r}");
    assert!(p[3..].iter().all(|c| found(c) == 100 && c["other"]["found"] == 0), "{r}");
    // Named by path under the sandbox's mount point; the ranking's first
    // directory holds at least the 20k planted negatives.
    assert!(p[1]["path"].as_str().unwrap().starts_with('/'), "{r}");
    assert!(r["top_negative"][0]["negative"]["found"].as_u64().unwrap() >= 20_000, "{r}");
    // Every run stayed inside its step bound; the map never refused an entry.
    let b = &w["bpf"];
    assert!(b["runs"].as_u64().unwrap() >= 1, "{b}");
    assert!(b["max_steps_per_run"].as_u64().unwrap() <= b["steps_bound"].as_u64().unwrap(), "{b}");
    assert_eq!(b["unrecorded"], 0, "{b}");
    assert_eq!(b["located"], "fresh_dentries", "{b}");
    // Empty buckets cost no step of their own: the heads are read 64 at a
    // time and passed over inside the batch.
    assert_steps_account_for_the_walk(w);
    // The churn ran beside the walk, and the kernel logged no RCU stall,
    // soft lockup or hung task while it walked (on a machine running only
    // the tests: a lockup another job causes then fails this too).
    assert!(r["churn"]["during_walk"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["kernel_log_watched"], true, "{r}");
    assert_eq!(r["kernel_alerts"].as_array().unwrap().len(), 0, "{r}");
}

/// The BPF walk's steps: one per dentry read (its chain's first is found
/// in the same step), one per batch of heads read, at most one per batch
/// for a look that finds no chain, one per run to stop. Not one per bucket
/// (as when each bucket was a step and a helper call of its own): the
/// empty buckets are passed over inside their batch.
fn assert_steps_account_for_the_walk(w: &serde_json::Value) {
    let b = &w["bpf"];
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or_else(|| panic!("not a count: {v} in {w}"));
    let r = w["rejected"].as_object().unwrap();
    let rejected: u64 =
        r.iter().filter(|(k, _)| *k != "left_out").map(|(_, v)| n(v)).sum::<u64>() + n(&b["unrecorded"]);
    let (steps, batches, runs, batch) = (n(&b["steps"]), n(&b["batches"]), n(&b["runs"]), n(&b["batch"]));
    let buckets = n(&w["buckets_walked"]);
    assert!(batch >= 1 && batches >= buckets.div_ceil(batch), "every bucket read in some batch: {b}");
    // A batch ends short only at a range's end or a run's (each run starts one).
    assert!(batches <= buckets.div_ceil(batch) + 2 * runs, "{b}");
    assert!(steps <= n(&w["dentries_walked"]) + rejected + 2 * batches + runs, "a step per dentry or batch: {w}");
    assert!(n(&b["max_steps_per_run"]) <= n(&b["steps_bound"]), "{b}");
}

/// The seams of the BPF walk: with runs of at most 16,384 steps (more than
/// ten: the 187k planted dentries alone need twelve; each stopping between
/// chains wherever it stands in a batch)
/// and batches of 48 heads (which end short of every 512-bucket range and
/// of the table), a full walk still finds every planted count exactly and
/// walks every bucket once; a sample walks exactly its blocks.
#[test]
fn short_runs_and_short_batches_keep_every_count_exact() {
    require_bpf_census!();
    let _k = kernel_lock();
    let plant = "tmpfs:hardlink:2k+ext4:negative:180k+ext4:negative:5k:dirs=50";
    let seams = ["--bpf-steps", "16384", "--bpf-batch", "48"];
    let r = run_json(&[&["census", "--backend", "bpf", "--top", "3", "--plant", plant][..], &seams].concat());
    let w = &r["walk"];
    assert_eq!(w["buckets_walked"], w["buckets_total"], "{w}");
    let p = planted(&r);
    assert_eq!(p.len(), 52, "{r}");
    let bad: Vec<_> = p.iter().filter(|c| c["ok"] != true).collect();
    assert!(bad.is_empty(), "{bad:?}");
    let found = |c: &serde_json::Value| c["found"]["found"].as_u64().unwrap();
    assert_eq!((found(&p[0]), found(&p[1])), (2_000, 180_000), "{r}");
    assert!(p[2..].iter().all(|c| found(c) == 100), "{r}");
    let b = &w["bpf"];
    assert_eq!((b["steps_bound"].as_u64(), b["batch"].as_u64()), (Some(16384), Some(48)), "{b}");
    assert!(b["runs"].as_u64().unwrap() > 10, "many runs, many seams: {b}");
    assert_steps_account_for_the_walk(w);
    assert_eq!(b["lanes"].as_u64(), Some(4), "{b}");
    // A sample: blocks of 512 buckets, each range ending inside a batch of 48, one chain at a time.
    let sample = ["--sample", "10%", "--top", "1", "--bpf-batch", "48", "--bpf-lanes", "1"];
    let r = run_json(&[&["census", "--backend", "bpf"][..], &sample].concat());
    let w = &r["walk"];
    assert_eq!(w["bpf"]["lanes"].as_u64(), Some(1), "{w}");
    let total = w["buckets_total"].as_u64().unwrap();
    let blocks = (0.1 * total.div_ceil(512) as f64).round() as u64;
    assert_eq!(w["buckets_walked"].as_u64(), Some(blocks * 512), "exactly the sampled blocks: {w}");
    assert_steps_account_for_the_walk(w);
}

#[test]
fn bad_bpf_steps_batch_or_lanes_is_one_line_and_exit_2() {
    common::usage_error("census", &["--bpf-steps", "100"], &["--bpf-steps", "16384"]);
    common::usage_error("census", &["--bpf-batch", "65"], &["--bpf-batch", "64"]);
    common::usage_error("census", &["--bpf-lanes", "5"], &["--bpf-lanes", "4"]);
}

#[test]
fn a_bpf_sample_holds_the_planted_counts_in_its_intervals() {
    require_bpf_census!();
    let _k = kernel_lock();
    let r = run_json(&["census", "--backend", "bpf", "--sample", "25%", "--plant", "ext4:negative:40k"]);
    let w = &r["walk"];
    assert_eq!((w["backend"].as_str(), w["mode"].as_str()), (Some("bpf"), Some("sample")), "{w}");
    let frac = w["fraction"].as_f64().unwrap();
    assert!(frac > 0.2 && frac < 0.3, "{w}");
    let c = &planted(&r)[0];
    let (lo, hi) = (c["found"]["low"].as_f64().unwrap(), c["found"]["high"].as_f64().unwrap());
    let estimate = c["found"]["estimate"].as_f64().unwrap();
    assert!(lo < estimate && estimate < hi, "{c}");
    // A 90% interval misses one run in ten by design: the test holds the
    // estimate to the same spread at 99.9% (3.29 σ for 1.645 σ), which a
    // wrong variance or a biased sample still fails.
    let sigma = (hi - lo) / (2.0 * 1.645);
    assert!(
        (estimate - 40_000.0).abs() < 3.29 * sigma,
        "40,000 is {:.1} σ off the estimate: {c}",
        (estimate - 40_000.0).abs() / sigma
    );
}

#[test]
fn as_nobody_the_bpf_census_is_one_line_with_the_kernels_errno() {
    require!(is_root(), "needs root to switch to nobody with setpriv");
    require!(has("setpriv"), "needs setpriv (see .ci/run for its package)");
    for backend in ["bpf", "auto"] {
        let o = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_dentrylab")])
            .args(["census", "--backend", backend])
            .output()
            .expect("setpriv (util-linux) runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{backend}: {err}");
        assert_eq!(err.lines().count(), 1, "{backend}: one line: {err}");
        assert!(o.stdout.is_empty(), "{backend}");
        for n in ["refused the census's BPF program", "Operation not permitted", "unprivileged_bpf_disabled"] {
            assert!(err.contains(n), "{backend}: {err} lacks {n:?}");
        }
    }
}

#[test]
fn bad_backend_is_one_line_and_exit_2() {
    common::usage_error("census", &["--backend", "ebpf"], &["--backend", "ebpf"]);
}

/// The BPF objects (`prog_id:` and `map_id:` of its fdinfo) process `pid` holds.
fn bpf_ids(pid: u32) -> Vec<(&'static str, u64)> {
    let mut ids = Vec::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else { return ids };
    for e in dir.flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        for l in text.lines() {
            for (key, kind) in [("prog_id:", "prog"), ("map_id:", "map")] {
                if let Some(v) = l.strip_prefix(key) {
                    ids.push((kind, v.trim().parse().unwrap()));
                }
            }
        }
    }
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Whether the kernel still has BPF object `kind` `id` (bpftool finds it).
fn loaded(kind: &str, id: u64) -> bool {
    Command::new("bpftool")
        .args([kind, "show", "id", &id.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("bpftool runs")
        .success()
}

#[test]
fn a_sigkill_leaves_no_program_or_map_of_ours_loaded() {
    require_bpf_census!();
    require!(has("bpftool"), "needs bpftool (see .ci/run for its package)");
    let _k = kernel_lock();
    // A churn that never lets the walk end soon: the census is killed mid-walk.
    let mut child = bin()
        .args(["census", "--backend", "bpf", "--plant", "tmpfs:hardlink:1k", "--churn", "1k"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    // "census (bpf): …" comes once the programs are loaded, before the walk.
    let said = lines.by_ref().map_while(Result::ok).find(|l| l.starts_with("census (bpf)"));
    assert!(said.is_some(), "the census never said it walks by bpf");
    // Stopped where it stands (mid-walk), so what it holds can be read.
    let target = nix::unistd::Pid::from_raw(pid as i32);
    nix::sys::signal::kill(target, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let ids = bpf_ids(pid);
    let progs = ids.iter().filter(|(k, _)| *k == "prog").count();
    let maps = ids.iter().filter(|(k, _)| *k == "map").count();
    assert!(progs >= 2 && maps >= 3, "the census holds its 2 programs and 3 maps: {ids:?}");
    assert!(ids.iter().all(|(k, id)| loaded(k, *id)), "bpftool sees them while it runs: {ids:?}");
    nix::sys::signal::kill(target, nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    // Freed once the last descriptor closed (after an RCU grace period).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut left: Vec<_> = ids.clone();
    while !left.is_empty() && Instant::now() < deadline {
        left.retain(|(k, id)| loaded(k, *id));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(left.is_empty(), "still loaded after SIGKILL: {left:?}");
}

#[test]
fn no_btf_refuses_the_bpf_census_in_one_line() {
    let o = bin().args(["census", "--backend", "bpf", "--btf", "/nonexistent/vmlinux"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/vmlinux does not exist") && err.contains("CONFIG_DEBUG_INFO_BTF"), "{err}");
}

/// The node tools pick the same way: `status --census` and the check of
/// `reclaim --census` walk by BPF on this host.
#[test]
fn status_and_reclaim_census_walk_by_bpf_here() {
    require_bpf_census!();
    let _k = kernel_lock();
    let state = tempfile::tempdir().unwrap();
    let j = run_json(&["status", "--census", "--census-sample", "5%", "--state-dir", state.path().to_str().unwrap()]);
    assert_eq!(j["census"]["walk"]["backend"], "bpf", "{}", j["census"]);
    let r = run_json(&["reclaim", "--sizes", "10k", "--reps", "1", "--unobserved-reps", "0", "--census", "--no-save"]);
    let runs = r["runs"].as_array().unwrap();
    let checked: Vec<_> = runs.iter().filter(|x| !x["census"].is_null()).collect();
    assert_eq!(checked.len(), 1, "one repetition checked: {r}");
    let c = &checked[0]["census"];
    assert_eq!(c["ok"], true, "{c}");
    let created = checked[0]["create"]["entries"].as_u64().unwrap();
    assert_eq!((c["created"].as_u64(), c["found"].as_u64()), (Some(created), Some(created)), "{c}");
    assert_eq!(c["top_directory"], c["workload_directory"], "{c}");
}

/// `--impact`: lookups on the walk's CPU (and another) and umounts of a
/// small tmpfs, each measured beside the walk and alone. Behaviour only
/// (never a time): every window made lookups, and the walk ran beside
/// each umount.
#[test]
fn impact_measures_lookups_and_umounts_beside_the_walk_and_alone() {
    require_bpf_census!();
    let _k = kernel_lock();
    let r = run_json(&["census", "--backend", "bpf", "--sample", "5%", "--top", "1", "--impact", "20k"]);
    let i = &r["impact"];
    let l = &i["lookups"];
    let threads = l["threads"].as_array().unwrap();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(threads.len(), cpus.min(2), "{l}");
    assert_eq!(threads[0]["walk_cpu"], true, "{l}");
    assert_eq!(threads[0]["cpu"], l["walk_cpu"], "{l}");
    assert!(threads[1..].iter().all(|t| t["walk_cpu"] == false && t["cpu"] != l["walk_cpu"]), "{l}");
    assert!(l["walk_passes"].as_f64().unwrap() >= 1.0, "one whole walk at least beside the lookups: {l}");
    for t in threads {
        for w in ["beside_walk", "alone"] {
            let x = &t[w];
            assert!(x["lookups"].as_u64().unwrap() > 0, "{w}: {t}");
            let (stall, secs) = (x["longest_stall_seconds"].as_f64().unwrap(), x["seconds"].as_f64().unwrap());
            assert!(stall > 0.0 && stall <= secs, "{w}: {t}");
        }
    }
    let u = &i["umount"];
    assert_eq!(u["dentries"], 20_000, "{u}");
    let reps = u["reps"].as_array().unwrap();
    assert_eq!(reps.len(), 3, "{u}");
    for rep in reps {
        assert!(rep["alone_seconds"].as_f64().unwrap() > 0.0, "{rep}");
        assert!(rep["beside_walk_seconds"].as_f64().unwrap() > 0.0, "{rep}");
        assert!(rep["walk_passes"].as_f64().unwrap() > 0.0, "the walk ran beside the umount: {rep}");
    }
    assert!(i["kernel_alerts"].is_array(), "{i}");
    // The census proper is unchanged by it.
    assert_eq!(r["walk"]["mode"], "sample", "{r}");
}

/// The names of the BPF programs among `ids` (bpftool's `name`, which the
/// kernel cuts to 15 bytes).
fn prog_names(ids: &[(&str, u64)]) -> Vec<String> {
    let mut names: Vec<String> = ids
        .iter()
        .filter(|(k, _)| *k == "prog")
        .filter_map(|(_, id)| {
            let o = Command::new("bpftool").args(["prog", "show", "id", &id.to_string()]).output().ok()?;
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.split_whitespace().skip_while(|w| *w != "name").nth(1).map(str::to_string)
        })
        .collect();
    names.sort_unstable();
    names
}

/// The exporter's background census walks by BPF: its first walk loads
/// the object (three programs of ours), which stays loaded, the same ids,
/// for the next walk while scrapes come; when the exporter is stopped
/// (SIGTERM, as Kubernetes stops a pod) the kernel frees every program and
/// map it held.
#[test]
fn the_exporters_bpf_census_loads_once_and_is_freed_on_exit() {
    require_bpf_census!();
    require!(has("bpftool"), "needs bpftool (see .ci/run for its package)");
    let _k = kernel_lock();
    let state = tempfile::tempdir().unwrap();
    let mut e = metrics::Exporter::start(&[
        "--state-dir",
        state.path().to_str().unwrap(),
        "--census-interval",
        "5m",
        "--census-sample",
        "5%",
    ]);
    let deadline = Instant::now() + Duration::from_secs(120);
    let m = loop {
        let m = e.metrics();
        if m.contains("dentrylab_census_walks_total 1") || Instant::now() > deadline {
            break m;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(m.contains("dentrylab_census_up 1"), "{m}\n{:?}", e.log_lines("census"));
    let ids = bpf_ids(e.pid());
    let names = prog_names(&ids);
    assert_eq!(names.len(), 3, "the census's three programs: {names:?} ({ids:?})");
    assert!(names.iter().all(|n| n.starts_with("dentrylab_")), "{names:?}");
    // Between walks, scrapes neither load nor free anything.
    for _ in 0..5 {
        assert!(e.metrics().contains("dentrylab_census_walks_total 1"));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(bpf_ids(e.pid()), ids, "the loaded object is kept for the next walk");
    let target = nix::unistd::Pid::from_raw(e.pid() as i32);
    nix::sys::signal::kill(target, nix::sys::signal::Signal::SIGTERM).unwrap();
    e.child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut left = ids.clone();
    while !left.is_empty() && Instant::now() < deadline {
        left.retain(|(k, id)| loaded(k, *id));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(left.is_empty(), "still loaded after the exporter exited: {left:?}");
}
