//! `status --by-cgroup`: on fixture trees (cgroup v1 with the
//! cgroupfs driver, v2 with systemd's) as root and as nobody, and on the
//! real kernel: two memory cgroups, one making 1M negative dentries and one
//! 100k, are ranked in that order with estimates within ±20% of what they
//! made, by `status` and through the exporter; and as nobody on this
//! machine's own cgroups.

mod common;
mod metrics;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use dentrylab::procfs::ProcRoot;
use dentrylab::procfs::cgroup::own_memory_controller;
use metrics::{Exporter, fixture, repo};

fn cgroup_fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures/cgroup").join(name)
}

fn by_cgroup_json(prefix: &[&str], root: &Path, extra: &[&str]) -> serde_json::Value {
    let mut cmd = Command::new(prefix.first().copied().unwrap_or(env!("CARGO_BIN_EXE_dentrylab")));
    if !prefix.is_empty() {
        cmd.args(&prefix[1..]).arg(env!("CARGO_BIN_EXE_dentrylab"));
    }
    let o = cmd
        .args(["status", "--state-dir", "/nonexistent", "--by-cgroup", "--cgroup-root", root.to_str().unwrap()])
        .args(extra)
        .args(["--json", "-"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["by_cgroup"].clone()
}

const NOBODY: &[&str] = &["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];

#[test]
fn fixture_trees_rank_own_slab_with_kubernetes_names() {
    let v1 = by_cgroup_json(
        &[],
        &cgroup_fixture("v1-cgroupfs"),
        &["--proc-root", fixture("6.18").to_str().unwrap(), "--top", "3"],
    );
    assert_eq!(v1["cgroup_version"], 1);
    let top = v1["top"].as_array().unwrap();
    assert_eq!(top.len(), 3);
    assert!(
        top[0]["cgroup"]
            .as_str()
            .unwrap()
            .ends_with("4a1d6e8f2b3c5d7e9f0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6")
    );
    assert_eq!(top[0]["kubernetes"]["qos"], "burstable");
    assert_eq!(top[0]["estimated_dentries"], 550_000_000 / 200);
    assert_eq!(v1["other"]["cgroups"], 8);
    assert!(v1["shrinker_debugfs"].as_str().unwrap().starts_with("absent"));

    let v2 = by_cgroup_json(&[], &cgroup_fixture("v2-systemd"), &["--proc-root", fixture("6.18").to_str().unwrap()]);
    assert_eq!(v2["cgroup_version"], 2);
    assert_eq!(v2["top"][0]["kubernetes"]["pod_uid"], "0f3b5d2a-8c1e-4b7f-9a6d-2e4c8b1a7f90");
    assert_eq!(v2["top"][0]["bytes"], 360_000_000u64);
}

/// The exporter on the v2 fixture: the pod's working set as cAdvisor
/// computes it, its reclaimable slab and the working set without it, in
/// `tests/golden/6.18-cgroup-v2.prom` (which the dashboard's metrics are
/// checked against, tests/deploy.rs), labelled `uid` to join kube_pod_info.
#[test]
fn exporter_gives_the_pods_working_set_and_its_slab_on_v2() {
    let state = tempfile::tempdir().unwrap();
    let e = Exporter::start(&[
        "--proc-root",
        fixture("6.18").to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
        "--by-cgroup",
        "--top",
        "3",
        "--cgroup-root",
        cgroup_fixture("v2-systemd").to_str().unwrap(),
    ]);
    let m = e.metrics();
    let uid = "uid=\"0f3b5d2a-8c1e-4b7f-9a6d-2e4c8b1a7f90\"";
    let value = |family: &str| -> f64 {
        m.lines()
            .find(|l| l.starts_with(&format!("{family}{{")) && l.contains(uid))
            .unwrap_or_else(|| panic!("no {family} for the pod:\n{m}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(value("dentrylab_cgroup_working_set_bytes"), 417e6);
    assert_eq!(value("dentrylab_cgroup_slab_reclaimable_bytes"), 400e6);
    assert_eq!(value("dentrylab_cgroup_working_set_without_reclaimable_slab_bytes"), 17e6);
    assert_eq!(value("dentrylab_cgroup_dentry_bytes_estimated"), 400e6);
    metrics::assert_golden("6.18-cgroup-v2", &m);
    metrics::assert_promtool_ok(&["check", "metrics"], Some(&m), &repo());
}

#[test]
fn as_nobody_on_a_fixture_with_an_unreadable_file() {
    require!(common::is_root(), "needs root to switch to nobody with setpriv");
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("v1");
    let copy = Command::new("cp").args(["-r"]).arg(cgroup_fixture("v1-cgroupfs")).arg(&root).status().unwrap();
    assert!(copy.success());
    let secret = root.join("system.slice/containerd.service/memory.kmem.usage_in_bytes");
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    std::fs::set_permissions(d.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let v = by_cgroup_json(NOBODY, &root, &["--proc-root", fixture("6.18").to_str().unwrap()]);
    let unreadable = v["unreadable"].as_array().unwrap();
    assert_eq!(unreadable.len(), 1, "{v}");
    assert!(unreadable[0].as_str().unwrap().contains("containerd.service/memory.kmem.usage_in_bytes"), "{v}");
    assert!(unreadable[0].as_str().unwrap().contains("Permission denied"), "{v}");
    let names: Vec<&str> = v["top"].as_array().unwrap().iter().map(|r| r["cgroup"].as_str().unwrap()).collect();
    assert!(!names.contains(&"/system.slice/containerd.service"), "left out, not guessed: {names:?}");
    // Its parent keeps the whole figure as its own: nothing is subtracted for an unknown child.
    let sys = v["top"].as_array().unwrap().iter().find(|r| r["cgroup"] == "/system.slice").unwrap();
    assert_eq!(sys["bytes"], 80_000_000);
}

/// The memory hierarchy's root and the directory to make test cgroups in
/// (this process's own cgroup on v1; the root on v2, whose children get
/// `memory` from its `cgroup.subtree_control`).
fn memory_hierarchy() -> (PathBuf, PathBuf) {
    let m = own_memory_controller(&ProcRoot::default()).unwrap().expect("a memory cgroup hierarchy mounted");
    if m.version == 2 {
        let sub = std::fs::read_to_string(m.mount_point.join("cgroup.subtree_control")).unwrap();
        assert!(
            sub.split_whitespace().any(|c| c == "memory"),
            "cgroup v2 without the memory controller enabled at its root"
        );
        return (m.mount_point.clone(), m.mount_point);
    }
    (m.mount_point, m.own_dir)
}

/// A `dentrylab create` of negative dentries held in its own memory cgroup.
struct Creator {
    cgroup: PathBuf,
    child: Child,
}

impl Creator {
    fn start(parent: &Path, name: &str, count: &str) -> Creator {
        let cgroup = parent.join(name);
        std::fs::create_dir(&cgroup).unwrap();
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > {}/cgroup.procs && exec {} create --kind negative --fs ext4 --threads 1 --count {count}",
                cgroup.display(),
                env!("CARGO_BIN_EXE_dentrylab")
            ))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            if out.read_line(&mut line).unwrap() == 0 {
                let mut err = String::new();
                let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err);
                panic!("create in {name} ended before holding: {err}");
            }
            if line.contains("holding") {
                break;
            }
        }
        Creator { cgroup, child }
    }
}

impl Drop for Creator {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), nix::sys::signal::SIGTERM);
        let _ = self.child.wait();
        for _ in 0..100 {
            if std::fs::remove_dir(&self.cgroup).is_ok() || !self.cgroup.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        eprintln!("could not remove {}", self.cgroup.display());
    }
}

fn within(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * want
}

#[test]
fn two_memory_cgroups_ranked_with_estimates_within_20_percent() {
    require_root!();
    let _k = common::kernel_lock();
    let (root, parent) = memory_hierarchy();
    let tag = std::process::id();
    let (big_name, small_name) = (format!("dentrylab-test-{tag}-big"), format!("dentrylab-test-{tag}-small"));
    let big = Creator::start(&parent, &big_name, "1M");
    let small = Creator::start(&parent, &small_name, "100k");

    let find = |v: &serde_json::Value, name: &str| -> (usize, f64) {
        let top = v["top"].as_array().unwrap();
        let i = top
            .iter()
            .position(|r| r["cgroup"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("{name} not listed: {v}"));
        (i, top[i]["estimated_dentries"].as_f64().unwrap())
    };
    for who in [&[][..], NOBODY] {
        let v = by_cgroup_json(who, &root, &["--top", "1000"]);
        let (bi, be) = find(&v, &big_name);
        let (si, se) = find(&v, &small_name);
        assert!(bi < si, "1M ranks above 100k: {v}");
        assert!(within(be, 1_000_000.0, 0.2), "big: estimated {be} for 1M");
        assert!(within(se, 100_000.0, 0.2), "small: estimated {se} for 100k");
        assert!(v["unreadable"].as_array().unwrap().is_empty() || !who.is_empty(), "{v}");
    }

    // The same through the exporter, and its cardinality bound.
    let e = Exporter::start(&[
        "--state-dir",
        "/nonexistent",
        "--by-cgroup",
        "--cgroup-root",
        root.to_str().unwrap(),
        "--top",
        "1000",
    ]);
    let m = e.metrics();
    let value = |name: &str| -> f64 {
        m.lines()
            .find(|l| l.starts_with("dentrylab_cgroup_dentries_estimated{") && l.contains(&format!("{name}\"")))
            .unwrap_or_else(|| panic!("no series for {name}:\n{m}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (be, se) = (value(&big_name), value(&small_name));
    assert!(be > se && within(be, 1_000_000.0, 0.2) && within(se, 100_000.0, 0.2), "exporter: {be} {se}");
    metrics::assert_promtool_ok(&["check", "metrics"], Some(&m), &repo());
    let e = Exporter::start(&[
        "--state-dir",
        "/nonexistent",
        "--by-cgroup",
        "--cgroup-root",
        root.to_str().unwrap(),
        "--top",
        "1",
    ]);
    let m = e.metrics();
    let series = m.lines().filter(|l| l.starts_with("dentrylab_cgroup_slab_bytes{")).count();
    assert!(series <= 2, "--top 1 and one other: {m}");
    assert!(m.contains("dentrylab_cgroup_slab_bytes{cgroup=\"other\""), "{m}");
    drop(small);
    drop(big);
}
