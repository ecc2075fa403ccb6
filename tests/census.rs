//! `dentrylab census`: the refusals (no /proc/kcore, no BTF: one line,
//! exit 1), bad input (one line, exit 2), and a kcore census in a Debian
//! guest (`dentrylab vm`, one boot under TCG) that plants directories with known
//! counts, walks the whole hash table while names are created and deleted
//! beside them, and must find every planted directory with its exact count.
//!
//! The node tools: `status --census` and the exporter's census collector
//! where the census cannot run (one line, the rest goes on), their bad
//! input (exit 2), and `reclaim --census` and `containers --census` in
//! guest boots of their own, each naming the directory its own workload
//! filled.
//!
//! Two more boots walk the same planted tree by BPF and by kcore, which
//! must agree on every planted directory's count and on the rankings.
//!
//! Another boot runs the kcore census under `--clock icount:0` beside a churn of
//! 32 threads asked for 100k creates and unlinks a second in a tmpfs.
//!
//! The guest kernel is Debian's cloud metapackage, or `DENTRYLAB_VM_TEST_KERNEL`.

mod common;
mod metrics;

use common::{bin, has, kernel_lock, usage_error};

#[test]
fn bad_input_is_one_line_and_exit_2() {
    usage_error("census", &["--sample", "0"], &["--sample", "0"]);
    usage_error("census", &["--sample", "1.5"], &["--sample", "(0, 1]"]);
    usage_error("census", &["--sample", "1%", "--full"], &["--full"]);
    usage_error("census", &["--top", "0"], &["--top"]);
    usage_error("census", &["--fs", "ext4;rm"], &["--fs", "filesystem type"]);
    usage_error("census", &["--plant", "tmpfs:negative:10"], &["--plant", "disk filesystem"]);
    usage_error("census", &["--plant", "ext4:negative"], &["--plant", "FS:KIND:COUNT"]);
    usage_error("census", &["--churn", "1000"], &["--plant"]);
    usage_error("census", &["--impact", "0"], &["--impact", "at least 1"]);
    usage_error("census", &["--impact", "60M"], &["--impact", "1 to 50M"]);
    usage_error("census", &["--plant", "ext4:negative:10", "--churn-threads", "2"], &["--churn"]);
    for n in ["0", "65"] {
        usage_error(
            "census",
            &["--plant", "ext4:negative:10", "--churn", "1k", "--churn-threads", n],
            &["--churn-threads"],
        );
    }
}

fn refusal(args: &[&str]) -> String {
    let out = bin().arg("census").args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
    err
}

#[test]
fn no_kcore_is_one_line_saying_what_to_do() {
    let err = refusal(&["--backend", "kcore", "--kcore", "/nonexistent/kcore"]);
    for n in ["/nonexistent/kcore does not exist", "CONFIG_PROC_KCORE", "dentrylab vm --kernel"] {
        assert!(err.contains(n), "{err} lacks {n:?}");
    }
    // This machine's own kernel: the same line when it has no /proc/kcore
    // and the kcore walk is asked for (auto walks by BPF here: tests/census_bpf.rs).
    if !std::path::Path::new("/proc/kcore").exists() {
        let err = refusal(&["--backend", "kcore"]);
        assert!(err.contains("/proc/kcore does not exist"), "{err}");
    }
}

/// A `/proc/kcore` with one PT_LOAD segment of a page at the start of
/// x86-64's direct map, and that page.
fn fake_kcore() -> Vec<u8> {
    let mut d = dentrylab::probe::kcore::core_header(&[(1 /* PT_LOAD */, 4096, 0xffff_8880_0000_0000, 4096)]);
    d.resize(8192, 0);
    d
}

#[test]
fn no_btf_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let kcore = dir.path().join("kcore");
    std::fs::write(&kcore, fake_kcore()).unwrap();
    let err = refusal(&["--backend", "kcore", "--kcore", kcore.to_str().unwrap(), "--btf", "/nonexistent/vmlinux"]);
    for n in ["/nonexistent/vmlinux does not exist", "no BTF", "CONFIG_DEBUG_INFO_BTF"] {
        assert!(err.contains(n), "{err} lacks {n:?}");
    }
    // Not an ELF core: one line naming the file.
    std::fs::write(&kcore, b"not a core").unwrap();
    let err = refusal(&["--backend", "kcore", "--kcore", kcore.to_str().unwrap()]);
    assert!(err.contains("ELF"), "{err}");
}

fn test_kernel() -> String {
    std::env::var("DENTRYLAB_VM_TEST_KERNEL").unwrap_or_else(|_| "linux-image-cloud-amd64".into())
}

/// Boots the test kernel with `vm VM_ARGS --json F -- COMMAND` and returns
/// its stdout and the matrix's one row, which must have run without error;
/// `None` when a tool is missing (a visible skip, which fails on CI).
fn guest_row(vm_args: &[&str], command: &[&str]) -> Option<(String, serde_json::Value)> {
    if let Some(t) = ["qemu-system-x86_64", "apt-get", "dpkg-deb", "depmod", "ldd"].into_iter().find(|t| !has(t)) {
        common::skip(&format!("needs {t} (see .ci/run for its package)"));
        return None;
    }
    let _k = kernel_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("m.json");
    let out = bin()
        .args(["vm", "--kernel", &test_kernel()])
        .args(vm_args)
        .args(["--timeout", "10m", "--json"])
        .arg(&json)
        .arg("--")
        .args(command)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let m: Option<serde_json::Value> = std::fs::read_to_string(&json).ok().and_then(|t| serde_json::from_str(&t).ok());
    // A failed boot shows the guest's console, not only the row's last line.
    let console = m.as_ref().and_then(|m| m.pointer("/rows/0/console_tail")).and_then(|l| l.as_array());
    let console: Vec<&str> = console.into_iter().flatten().filter_map(|l| l.as_str()).collect();
    assert!(
        out.status.success(),
        "{stdout}\n{}\nconsole:\n{}",
        String::from_utf8_lossy(&out.stderr),
        console.join("\n")
    );
    let mut m = m.expect("vm succeeded, but its --json file is missing or not JSON");
    let row = m["rows"][0].take();
    assert_eq!(row["error"], serde_json::Value::Null, "{row}");
    Some((stdout, row))
}

#[test]
fn a_guest_census_finds_every_planted_directory_with_its_exact_count() {
    let plant = "ext4:negative:20k+ext4:hardlink:5k+ext4:negative:5k:dirs=50";
    let Some((stdout, row)) = guest_row(
        &["--accel", "tcg"],
        &["census", "--backend", "kcore", "--top", "5", "--plant", plant, "--churn", "20k"],
    ) else {
        return;
    };
    let r = &row["result"];
    assert_eq!(r["benchmark"], "census");
    assert_eq!(r["walk"]["mode"], "full");
    assert_eq!(r["walk"]["buckets_walked"], r["walk"]["buckets_total"]);
    // 1 + 1 + 50 planted directories, each found with its exact count.
    let planted = r["planted"].as_array().unwrap();
    assert_eq!(planted.len(), 52, "{r}");
    let bad: Vec<_> = planted.iter().filter(|c| c["ok"] != true).collect();
    assert!(bad.is_empty(), "{bad:?}");
    let find = |p: &serde_json::Value| p["found"]["found"].as_u64().unwrap();
    assert_eq!((find(&planted[0]), planted[0]["kind"].as_str()), (20_000, Some("negative")));
    assert_eq!((find(&planted[1]), planted[1]["kind"].as_str()), (5_000, Some("hardlink")));
    assert!(planted[2..].iter().all(|p| find(p) == 100), "{r}");
    // The ranking: the 20k negatives lead both lists, named by path.
    let first = &r["top_negative"][0];
    assert_eq!(first["negative"]["found"], 20_000, "{r}");
    assert!(first["path"].as_str().unwrap().ends_with("/d0"), "{first}");
    assert_eq!(r["top_total"][0]["path"], first["path"]);
    // The walk ran while names were created and deleted beside it; the
    // hashed count cannot exceed what the kernel holds by more than the churn.
    assert!(r["churn_operations"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["churn"]["asked_per_second"], 20_000, "{r}");
    assert!(r["churn"]["during_walk"].as_u64().unwrap() <= r["churn_operations"].as_u64().unwrap(), "{r}");
    let hashed = r["hashed"]["found"].as_u64().unwrap();
    assert!(hashed >= 30_050, "{hashed}");
    assert!(r["walk"]["rejected"].is_object(), "{r}");
    assert!(stdout.contains("result in --json"), "{stdout}");
}

/// Both backends in the same Debian guest kernel (one boot each: `vm` runs
/// one command per boot), the same planted tree: every planted directory
/// found by the BPF walk and by the kcore walk with the same exact count,
/// and the two rankings led by the same directories with the same counts.
#[test]
fn a_guest_census_by_bpf_and_by_kcore_agree_on_every_planted_directory() {
    let plant = "ext4:negative:20k+ext4:hardlink:5k+ext4:negative:5k:dirs=50";
    let mut seen = Vec::new();
    for backend in ["bpf", "kcore"] {
        let Some((_, row)) =
            guest_row(&["--accel", "tcg"], &["census", "--backend", backend, "--top", "2", "--plant", plant])
        else {
            return;
        };
        let r = row["result"].clone();
        assert_eq!(r["walk"]["backend"], backend, "{r}");
        assert_eq!(r["walk"]["buckets_walked"], r["walk"]["buckets_total"], "{r}");
        let planted = r["planted"].as_array().unwrap();
        assert_eq!(planted.len(), 52, "{backend}: {r}");
        assert!(planted.iter().all(|c| c["ok"] == true), "{backend}: {planted:?}");
        seen.push(r);
    }
    let counts = |r: &serde_json::Value| -> Vec<(String, u64, u64)> {
        r["planted"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let n = |k: &str| c[k]["found"].as_u64().unwrap();
                (c["path"].as_str().unwrap().to_string(), n("found"), n("other"))
            })
            .collect()
    };
    assert_eq!(counts(&seen[0]), counts(&seen[1]), "the two backends disagree on the planted directories");
    assert_eq!((counts(&seen[0])[0].1, counts(&seen[0])[1].1), (20_000, 5_000));
    // The rankings' planted leaders: the 20k negatives first by negatives
    // and by total, the 5k hard links second by total.
    let lead = |r: &serde_json::Value, list: &str, i: usize| {
        let d = &r[list][i];
        (d["path"].as_str().unwrap_or_default().to_string(), d["total"]["found"].as_u64())
    };
    for (list, i) in [("top_negative", 0), ("top_total", 0), ("top_total", 1)] {
        assert_eq!(lead(&seen[0], list, i), lead(&seen[1], list, i), "{list}[{i}]");
    }
    assert_eq!(lead(&seen[0], "top_total", 0), (counts(&seen[0])[0].0.clone(), Some(20_000)));
    assert_eq!(lead(&seen[0], "top_total", 1), (counts(&seen[0])[1].0.clone(), Some(5_000)));
}

/// The walk beside a churn under `--clock icount:0`: the guest's clock is
/// its instruction counter, and QEMU runs both vCPUs in turns on one host
/// thread (docs/census.md). The walk must complete with the churn's creates
/// and unlinks counted while it ran, its rejected reads counted by reason,
/// and every planted directory exact.
#[test]
fn a_guest_census_under_icount_walks_while_names_are_created_and_deleted() {
    // The churn works in the first planted filesystem: tmpfs, where every
    // unlink frees its dentry.
    let plant = "tmpfs:hardlink:1k+ext4:negative:20k+ext4:hardlink:5k";
    // Without cx16: 2-vCPU icount guests have died in SLUB's cmpxchg16b
    // (docs/vm.md), a 3 GiB census guest among them.
    let Some((_, row)) = guest_row(
        &["--clock", "icount:0", "--cpus", "2", "--cpu-model", "max,-cx16"],
        &["census", "--backend", "kcore", "--top", "3", "--plant", plant, "--churn", "100k", "--churn-threads", "32"],
    ) else {
        return;
    };
    assert_eq!(row["clock"], "icount:0", "{row}");
    let r = &row["result"];
    assert_eq!(r["walk"]["buckets_walked"], r["walk"]["buckets_total"], "{r}");
    let planted = r["planted"].as_array().unwrap();
    assert_eq!(planted.len(), 3, "{r}");
    assert!(planted.iter().all(|c| c["ok"] == true), "{planted:?}");
    let c = &r["churn"];
    assert_eq!((c["asked_per_second"].as_u64(), c["threads"].as_u64()), (Some(100_000), Some(32)), "{c}");
    assert!(c["during_walk"].as_u64().unwrap() > 0, "the churn ran beside the walk: {c}");
    assert!(c["cpu_seconds"].as_f64().unwrap() > 0.0, "{c}");
    let rejected = r["walk"]["rejected"].as_object().unwrap();
    for k in ["bad_pointer", "unreadable", "unknown_superblock", "bad_name", "chains_cut"] {
        assert!(rejected[k].is_u64(), "{k}: {rejected:?}");
    }
}

#[test]
fn node_tools_bad_input_is_one_line_and_exit_2() {
    usage_error("status", &["--census-top", "3"], &["--census"]);
    usage_error("status", &["--census", "--census-sample", "0"], &["--census-sample"]);
    usage_error("status", &["--census", "--watch", "1s"], &["--watch"]);
    usage_error("exporter", &["--census-interval", "1m"], &["--census-interval", "5m"]);
    usage_error("exporter", &["--census-interval", "x"], &["--census-interval"]);
    usage_error("exporter", &["--census-top", "3"], &["--census-interval"]);
    usage_error("exporter", &["--census-interval", "5m", "--census-top", "21"], &["--census-top"]);
}

/// A proc tree without `kcore` (the 6.18 fixture, as on this project's
/// own machines): status still reports, with one line saying why there is
/// no census.
#[test]
fn status_census_without_kcore_is_one_line_and_the_status_goes_on() {
    let state = tempfile::tempdir().unwrap();
    let proc = metrics::fixture("6.18");
    let out = bin()
        .args(["status", "--census", "--proc-root", proc.to_str().unwrap(), "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("prediction for"), "{stdout}");
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains("census")).collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert!(lines[0].contains("census: none") && lines[0].contains("kcore does not exist"), "{}", lines[0]);
    let out = bin()
        .args(["status", "--census", "--json", "-", "--proc-root", proc.to_str().unwrap(), "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(j["census"]["unavailable"].as_str().unwrap().contains("CONFIG_PROC_KCORE"), "{j}");
    assert!(j["dentries"]["nr_dentry"].as_u64().is_some(), "{j}");
}

/// The collector runs in the background: the exporter serves at once, and
/// once the first walk has ended a scrape says the census is down, still
/// valid for promtool.
#[test]
fn exporter_census_without_kcore_reports_down_and_serves_the_rest() {
    let state = tempfile::tempdir().unwrap();
    let proc = metrics::fixture("6.18");
    let e = metrics::Exporter::start(&[
        "--proc-root",
        proc.to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
        "--census-interval",
        "5m",
    ]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let m = loop {
        let m = e.metrics();
        if m.contains("dentrylab_census_up") || std::time::Instant::now() > deadline {
            break m;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(m.contains("dentrylab_census_up 0") && m.contains("dentrylab_census_walks_total 1"), "{m}");
    assert!(m.contains("dentrylab_dentries "), "{m}");
    assert!(!m.contains("dentrylab_census_directory_dentries"), "{m}");
    metrics::assert_promtool_ok(&["check", "metrics"], Some(&m), &metrics::repo());
}

#[test]
fn a_guest_reclaim_names_the_directory_its_workload_filled() {
    let Some((_, row)) = guest_row(
        &["--accel", "tcg"],
        &["reclaim", "--sizes", "20k", "--reps", "1", "--unobserved-reps", "0", "--census", "--no-save"],
    ) else {
        return;
    };
    let runs = row["result"]["runs"].as_array().unwrap();
    let checked: Vec<_> = runs.iter().filter(|r| !r["census"].is_null()).collect();
    assert_eq!(checked.len(), 1, "one repetition checked: {row}");
    let c = &checked[0]["census"];
    assert_eq!(c["ok"], true, "{c}");
    let created = checked[0]["create"]["entries"].as_u64().unwrap();
    assert_eq!((c["created"].as_u64(), c["found"].as_u64()), (Some(created), Some(created)), "{c}");
    assert_eq!(c["top_directory"], c["workload_directory"], "{c}");
    assert_eq!(c["top_count"].as_u64(), Some(created), "{c}");
    assert!(c["workload_directory"].as_str().unwrap().ends_with("/d0"), "{c}");
}

#[test]
fn a_guest_containers_run_names_the_directory_its_containers_filled() {
    let Some((_, row)) = guest_row(&["--accel", "tcg"], &["containers", "--count", "2", "--ops", "1k", "--census"])
    else {
        return;
    };
    let c = &row["result"]["census"];
    assert_eq!(c["ok"], true, "{c}");
    // Every temporary table a container made left one negative dentry in
    // the image's tmp: the census found each, and that directory on top.
    let created = c["created"].as_u64().unwrap();
    assert!(created > 0, "{c}");
    assert_eq!(c["found"].as_u64(), Some(created), "{c}");
    assert_eq!(c["kind"], "negative", "{c}");
    assert_eq!(c["top_directory"], c["workload_directory"], "{c}");
    assert!(c["workload_directory"].as_str().unwrap().ends_with("/image/tmp"), "{c}");
}
