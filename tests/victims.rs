//! `reclaim --victims`: what the node's other tasks wait for during a
//! reclaim. A 1M tmpfs umount makes the `umount` victim (a mount + umount
//! on the other CPU) wait for the reclaiming CPU's stretch, in the kernel's
//! expedited grace period; a SIGKILL while the victims run leaves none of
//! their namespaces, mounts, cgroups or runsc sandboxes, nor the mariadb
//! victim's server; bad input is one line, and so is a container victim
//! without runsc or a mariadb victim without mariadbd. Victims run under
//! other reclaim paths than umount too. The pod-start victim starts real
//! pods around the reclaim and times each step; a SIGKILL leaves none of
//! its pods.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{bin, kernel_lock, usage_error};

const NOBODY: &[&str] = &["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];

#[test]
fn an_unknown_victim_is_one_line_and_exit_2() {
    usage_error("reclaim", &["--victims", "umount,bogus"], &["--victims", "unknown victim 'bogus'", "fork-exec"]);
    usage_error("reclaim", &["--victims", ""], &["--victims", "unknown victim ''"]);
}

#[test]
fn a_victim_that_needs_root_is_refused_as_nobody_before_anything_is_made() {
    require!(common::is_root(), "needs root to switch to nobody with setpriv");
    require!(common::has("setpriv"), "needs setpriv (util-linux)");
    let out = std::process::Command::new(NOBODY[0])
        .args(&NOBODY[1..])
        .arg(env!("CARGO_BIN_EXE_dentrylab"))
        .args(["reclaim", "--sizes", "10k", "--no-save", "--victims", "stat,netns"])
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--victims netns") && err.contains("needs root"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn the_container_victim_without_runsc_is_one_line_naming_how_to_build_it() {
    require_root!();
    let out = bin()
        .args(["reclaim", "--sizes", "10k", "--no-save", "--victims", "container"])
        .env("PATH", "/usr/bin:/bin")
        .env_remove("DENTRYLAB_RUNSC")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("runsc") && err.contains("bench/gvisor/install.sh"), "{err}");
}

/// The regression the victims exist for: during a tmpfs umount of 1M hard
/// links, a mount + umount on the other CPU waits for the reclaiming CPU
/// (its `synchronize_rcu_expedited()` cannot end while that CPU passes no
/// quiescent state), at least half the longest stretch; its control (the
/// second before) was fast, and its stack was read while it waited.
#[test]
fn a_1m_umount_makes_the_umount_victim_wait_for_the_stretch() {
    require_root!();
    let _k = kernel_lock();
    let v = common::run_json(&[
        "reclaim",
        "--sizes",
        "1M",
        "--reps",
        "1",
        "--unobserved-reps",
        "0",
        "--unpinned-reps",
        "0",
        "--victims",
        "umount,stat",
        "--no-save",
    ]);
    let stretch = v["runs"][0]["probe"]["max_gap_seconds"].as_f64().unwrap();
    let runs = v["victim_runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "one victim repetition: {runs:?}");
    let of = |name: &str| runs[0]["victims"].as_array().unwrap().iter().find(|o| o["victim"] == name).unwrap().clone();
    let umount = of("umount");
    assert!(umount["error"].is_null(), "{umount}");
    let waited = umount["during"]["longest_seconds"].as_f64().unwrap();
    assert!(waited >= 0.5 * stretch, "the umount victim waited {waited} s, the longest stretch was {stretch} s");
    let outside = umount["outside"]["longest_seconds"].as_f64().unwrap();
    assert!(umount["outside"]["calls"].as_u64().unwrap() >= 20, "the control window has calls: {umount}");
    assert!(waited > 2.0 * outside, "waited {waited} s during, {outside} s outside");
    let stack: Vec<&str> = umount["stack"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(stack.contains(&"path_umount"), "the stack sampled in the longest call is the victim's umount: {stack:?}");
    assert!(umount["waits_in"].as_str().is_some_and(|w| !w.is_empty()), "{umount}");
    // The summary and the deadlines came with it.
    let a = &v["victims"];
    assert!(a["sizes"].as_array().unwrap().iter().any(|s| s["victim"] == "umount" && s["target"] == 1_000_000));
    let deadlines: Vec<&str> =
        a["incidents"].as_array().unwrap().iter().map(|i| i["deadline"]["name"].as_str().unwrap()).collect();
    assert!(
        deadlines.contains(&"the pod-startup SLO") && deadlines.contains(&"the soft-lockup watchdog"),
        "{deadlines:?}"
    );
}

/// Every namespace (mount, network) a task of `pid` has that the test
/// itself has not.
fn namespaces_of(pid: u32) -> BTreeSet<String> {
    let mine: BTreeSet<String> = ["mnt", "net"]
        .iter()
        .filter_map(|k| std::fs::read_link(format!("/proc/self/ns/{k}")).ok())
        .map(|l| l.to_string_lossy().into_owned())
        .collect();
    let mut out = BTreeSet::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
        for k in ["mnt", "net"] {
            if let Ok(l) = std::fs::read_link(t.path().join("ns").join(k)) {
                let l = l.to_string_lossy().into_owned();
                if !mine.contains(&l) {
                    out.insert(l);
                }
            }
        }
    }
    out
}

/// The namespaces any live task has.
fn live_namespaces() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        if p.file_name().to_string_lossy().parse::<u32>().is_ok() {
            let pid: u32 = p.file_name().to_string_lossy().parse().unwrap();
            out.extend(namespaces_of_all(pid));
        }
    }
    out
}

fn namespaces_of_all(pid: u32) -> Vec<String> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
        for k in ["mnt", "net"] {
            if let Ok(l) = std::fs::read_link(t.path().join("ns").join(k)) {
                out.push(l.to_string_lossy().into_owned());
            }
        }
    }
    out
}

/// Whether a live process has `needle` in its command line.
fn processes_naming(needle: &str) -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .any(|p| std::fs::read(p.path().join("cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle)))
}

/// Whether `pid` has a victim thread running.
fn victims_running(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == "victim-umount"))
}

/// Directories named `dentrylab-PID-*` under the cgroup mounts.
fn cgroups_of(pid: u32) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, prefix: &str, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if e.file_name().to_string_lossy().starts_with(prefix) {
                out.push(e.path());
            } else if depth > 0 {
                walk(&e.path(), depth - 1, prefix, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(Path::new("/sys/fs/cgroup"), 4, &format!("dentrylab-{pid}-"), &mut out);
    out
}

/// A 300k reclaim of one repetition with `victims`, its output dropped
/// and its standard error kept in `err` (what a run that ends early said).
fn spawn_reclaim(victims: &str, err: &tempfile::NamedTempFile) -> std::process::Child {
    bin()
        .args(["reclaim", "--sizes", "300k", "--reps", "1", "--unobserved-reps", "0", "--unpinned-reps", "0"])
        .args(["--victims", victims, "--no-save"])
        .stdout(Stdio::null())
        .stderr(err.reopen().unwrap())
        .spawn()
        .unwrap()
}

/// Fails with what the run said (its exit status and standard error, kept
/// in `err`) if `child` has ended while `what` was awaited.
fn assert_still_running(child: &mut std::process::Child, err: &tempfile::NamedTempFile, what: &str) {
    if let Some(status) = child.try_wait().unwrap() {
        let said = std::fs::read_to_string(err.path()).unwrap_or_default();
        panic!("the run ended ({status}) before {what}; it said:\n{said}");
    }
}

/// Starts a 300k reclaim with `victims`, SIGKILLs it `after_ms` after its
/// victims started, and waits until the namespaces `held` named before the
/// kill and the run's cgroups are gone. Returns the run's pid and those
/// namespaces, for the caller's own checks.
fn kill_while_victims_run(victims: &str, after_ms: u64, held: fn(u32) -> BTreeSet<String>) -> (u32, BTreeSet<String>) {
    let err = tempfile::NamedTempFile::new().unwrap();
    let mut child = spawn_reclaim(victims, &err);
    let pid = child.id();
    let start = Instant::now();
    while !victims_running(pid) {
        assert!(start.elapsed() < Duration::from_secs(120), "the victims never started");
        assert_still_running(&mut child, &err, "its victims were seen");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(after_ms));
    let theirs = held(pid);
    assert!(!theirs.is_empty(), "the run and its victims have namespaces of their own");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    common::wait_until(
        &format!("killed {after_ms} ms after the victims started: namespaces {theirs:?} outlived it"),
        Duration::from_secs(60),
        || live_namespaces().is_disjoint(&theirs),
    );
    common::wait_until(
        &format!("killed {after_ms} ms after the victims started: cgroups {:?} outlived it", cgroups_of(pid)),
        Duration::from_secs(30),
        || cgroups_of(pid).is_empty(),
    );
    (pid, theirs)
}

/// SIGKILL while the pod-start victim is in its pods (as soon as it
/// starts, and a moment later): its pods' namespaces (held by the run's
/// files), their mounts and their cgroups go with the run.
#[test]
fn a_sigkill_while_the_pod_start_victim_runs_leaves_none_of_its_pods() {
    require_root!();
    let _k = kernel_lock();
    for after_ms in [0u64, 300, 1500] {
        let (_, theirs) = kill_while_victims_run("pod-start,umount", after_ms, held_namespaces);
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(!mounts.contains("victim-pod-start"), "a pod's mount is in the test's namespace");
        let pinned: Vec<&str> = mounts.lines().filter(|l| theirs.iter().any(|t| l.contains(t.as_str()))).collect();
        assert!(pinned.is_empty(), "a namespace of the run is pinned by a mount: {pinned:?}");
    }
}

/// The mount and network namespaces `pid`'s tasks are in or hold open
/// (the pod-start victim's pods are open files) that the test is not in.
fn held_namespaces(pid: u32) -> BTreeSet<String> {
    let mut out = namespaces_of(pid);
    let mine: Vec<String> = namespaces_of_all(std::process::id());
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).into_iter().flatten().flatten() {
        if let Ok(l) = std::fs::read_link(fd.path()) {
            let l = l.to_string_lossy().into_owned();
            if (l.starts_with("mnt:[") || l.starts_with("net:[")) && !mine.contains(&l) {
                out.insert(l);
            }
        }
    }
    out
}

/// SIGKILL while the victims run (as soon as they start, and a moment
/// later, during creation, the control or the reclaim): their mount and
/// network namespaces go with their threads, their tmpfs with their mount
/// namespace, and the cgroup guardian removes the `cgroup` victim's cgroup.
#[test]
fn a_sigkill_while_the_victims_run_leaves_none_of_theirs() {
    require_root!();
    require!(common::has("runsc"), "needs runsc for the container victim (bench/gvisor/install.sh)");
    let _k = kernel_lock();
    for after_ms in [0u64, 1500] {
        // All but mariadb, whose server has a kill test of its own.
        let (pid, _) =
            kill_while_victims_run("umount,netns,fork-exec,stat,cgroup,inotify,container", after_ms, namespaces_of);
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(!mounts.contains("dentrylab-victim"), "a victim's tmpfs is mounted in the test's namespace");
        // The container victim's runsc sandboxes are named for the run.
        let id = format!("dentrylab-victim-{pid}-");
        common::wait_until(
            &format!("killed {after_ms} ms after the victims started: a runsc process of {id} outlived it"),
            Duration::from_secs(30),
            || !processes_naming(&id),
        );
    }
}

/// The pod-start victim starts real pods (overlay rootfs, runc's mounts,
/// pivot_root, the old root's detach) and tears the last one down, before
/// and during a small reclaim, and says how long each step of its longest
/// call took; the summary names the step that took longest.
#[test]
fn the_pod_start_victim_times_each_step_of_a_pod_start_around_the_reclaim() {
    require_root!();
    let _k = kernel_lock();
    let v = common::run_json(&[
        "reclaim",
        "--sizes",
        "50k",
        "--reps",
        "1",
        "--unobserved-reps",
        "0",
        "--unpinned-reps",
        "0",
        "--victims",
        "pod-start",
        "--no-save",
    ]);
    let o = &v["victim_runs"][0]["victims"][0];
    assert_eq!(o["victim"], "pod-start");
    assert!(o["error"].is_null(), "{o}");
    assert!(o["outside"]["calls"].as_u64().unwrap() >= 2, "pods started before the reclaim: {o}");
    assert!(o["during"]["calls"].as_u64().unwrap() >= 1, "a pod start overlapped the reclaim: {o}");
    let steps: Vec<(&str, f64)> = o["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("the longest call's steps: {o}"))
        .iter()
        .map(|s| (s["step"].as_str().unwrap(), s["seconds"].as_f64().unwrap()))
        .collect();
    let names: Vec<&str> = steps.iter().map(|s| s.0).collect();
    // Not the first call: the previous pod's teardown came first.
    for want in ["app exit", "sandbox rootfs umount", "netns removal", "sandbox pivot_root", "app old root umount"] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    assert!(names.iter().position(|n| *n == "app exit") < names.iter().position(|n| *n == "netns"), "{names:?}");
    let sum: f64 = steps.iter().map(|s| s.1).sum();
    let took = o["during"]["longest_seconds"].as_f64().unwrap();
    assert!(steps.iter().all(|s| s.1 >= 0.0) && sum <= took, "the steps ({sum} s) lie within the call ({took} s)");
    let size = v["victims"]["sizes"].as_array().unwrap().iter().find(|s| s["victim"] == "pod-start").unwrap().clone();
    assert!(size["slowest_step"].as_str().is_some_and(|s| names.contains(&s)), "{size}");
}

/// Run from a binary under /tmp, which the sandbox covers in the victims'
/// mount namespace, the pod-start victim still starts its pods (its exe
/// bind takes a stand-in). Before, every call failed: ENOENT, then EEXIST
/// on the cgroup the first failure left.
#[test]
fn the_pod_start_victim_runs_from_a_binary_under_tmp() {
    require_root!();
    let _k = kernel_lock();
    let dir = tempfile::Builder::new().prefix("dentrylab-exe").tempdir_in("/tmp").unwrap();
    let exe = dir.path().join("dentrylab");
    std::fs::copy(env!("CARGO_BIN_EXE_dentrylab"), &exe).unwrap();
    let out = std::process::Command::new(&exe)
        .args(["reclaim", "--sizes", "50k", "--reps", "1", "--unobserved-reps", "0", "--unpinned-reps", "0"])
        .args(["--victims", "pod-start", "--no-save", "--json", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let o = &v["victim_runs"][0]["victims"][0];
    assert_eq!(o["victim"], "pod-start");
    assert!(o["error"].is_null(), "{o}");
    assert!(o["during"]["calls"].as_u64().unwrap() >= 1, "a pod start overlapped the reclaim: {o}");
}

/// The container victim starts and stops a real runsc sandbox, before and
/// during the reclaim, and says where its longest call waited.
#[test]
fn the_container_victim_runs_runsc_around_the_reclaim() {
    require_root!();
    require!(common::has("runsc"), "needs runsc for the container victim (bench/gvisor/install.sh)");
    let _k = kernel_lock();
    let v = common::run_json(&[
        "reclaim",
        "--sizes",
        "500k",
        "--reps",
        "1",
        "--unobserved-reps",
        "0",
        "--unpinned-reps",
        "0",
        "--victims",
        "container",
        "--no-save",
    ]);
    let o = &v["victim_runs"][0]["victims"][0];
    assert_eq!(o["victim"], "container");
    assert!(o["error"].is_null(), "{o}");
    assert!(o["outside"]["calls"].as_u64().unwrap() >= 1, "a container ran before the reclaim: {o}");
    assert!(o["during"]["calls"].as_u64().unwrap() >= 1, "a container overlapped the reclaim: {o}");
}

/// Without mariadbd, the mariadb victim is one line naming it and how to
/// install it, exit 2. DENTRYLAB_MARIADB_PATH names the only directories
/// searched for it: an empty one stands for a machine without MariaDB.
#[test]
fn the_mariadb_victim_without_mariadbd_is_one_line_naming_how_to_install_it() {
    require_root!();
    let empty = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["reclaim", "--sizes", "10k", "--no-save", "--victims", "umount,mariadb"])
        .env("DENTRYLAB_MARIADB_PATH", empty.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--victims mariadb: mariadbd is not installed here"), "{err}");
    assert!(err.contains("apt-get install mariadb-server"), "says how to install it: {err}");
    assert!(out.stdout.is_empty());
}

/// Processes in a cgroup of dentrylab process `pid` (`dentrylab-PID-N`):
/// the mariadb victim's server and its installer.
fn processes_in_cgroups_of(pid: u32) -> Vec<(u32, String)> {
    let mine = format!("/dentrylab-{pid}-");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|p| p.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|p| std::fs::read_to_string(format!("/proc/{p}/cgroup")).is_ok_and(|c| c.contains(&mine)))
        .map(|p| (p, std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default().trim().to_string()))
        .collect()
}

/// Whether `pid` has a thread named `name`.
fn has_thread(pid: u32, name: &str) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == name))
}

/// MariaDB's server where `dentrylab` looks for it.
fn mariadbd_present() -> bool {
    dentrylab::bench::common::mariadb::locate().is_ok()
}

/// The mariadb victim queries a real server, started for the run, in the
/// second before the reclaim and during it, and the server is gone with
/// its cgroup when the run ends.
#[test]
fn the_mariadb_victim_queries_a_real_server_around_the_reclaim() {
    require_root!();
    require!(mariadbd_present(), "needs mariadbd (apt-get install mariadb-server; .ci/run installs it)");
    let _k = kernel_lock();
    let child = bin()
        .args(["reclaim", "--sizes", "300k", "--reps", "1", "--unobserved-reps", "0", "--unpinned-reps", "0"])
        .args(["--victims", "mariadb,stat", "--no-save", "--json", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let o = v["victim_runs"][0]["victims"].as_array().unwrap().iter().find(|o| o["victim"] == "mariadb").unwrap();
    assert!(o["error"].is_null(), "{o}");
    assert!(o["outside"]["calls"].as_u64().unwrap() >= 20, "queries answered in the second before the reclaim: {o}");
    assert!(o["during"]["calls"].as_u64().unwrap() >= 1, "a query overlapped the reclaim: {o}");
    let rows = v["victims"]["sizes"].as_array().unwrap();
    assert!(rows.iter().any(|s| s["victim"] == "mariadb" && s["target"] == 300_000), "{rows:?}");
    assert!(processes_in_cgroups_of(pid).is_empty(), "a process of the run's cgroups outlived it");
    common::wait_until("a cgroup of the run outlived it", Duration::from_secs(30), || cgroups_of(pid).is_empty());
}

/// SIGKILL while the mariadb victim's server installs, once the victims
/// run, and a moment later (creation, the control, the reclaim): the cgroup
/// guardian kills every process of the server's cgroup and removes it.
#[test]
fn a_sigkill_at_any_moment_leaves_no_mariadbd() {
    require_root!();
    require!(mariadbd_present(), "needs mariadbd (apt-get install mariadb-server; .ci/run installs it)");
    let _k = kernel_lock();
    for moment in ["installing", "victims", "victims+1500ms"] {
        let err = tempfile::NamedTempFile::new().unwrap();
        let mut child = spawn_reclaim("mariadb,umount", &err);
        let pid = child.id();
        let start = Instant::now();
        let ready = |pid: u32| match moment {
            "installing" => !processes_in_cgroups_of(pid).is_empty(),
            _ => has_thread(pid, "victim-mariadb"),
        };
        while !ready(pid) {
            assert!(start.elapsed() < Duration::from_secs(120), "{moment}: never reached");
            assert_still_running(&mut child, &err, moment);
            std::thread::sleep(Duration::from_millis(2));
        }
        if moment == "victims+1500ms" {
            std::thread::sleep(Duration::from_millis(1500));
        }
        let theirs = processes_in_cgroups_of(pid);
        assert!(!theirs.is_empty(), "{moment}: the server's processes are in the run's cgroup");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
        child.wait().unwrap();
        let alive = || -> Vec<(u32, String)> {
            theirs.iter().filter(|(p, _)| Path::new(&format!("/proc/{p}")).exists()).cloned().collect()
        };
        common::wait_until(
            &format!("killed while {moment}: {:?} outlived it", alive()),
            Duration::from_secs(30),
            || alive().is_empty() && processes_in_cgroups_of(pid).is_empty(),
        );
        common::wait_until(
            &format!("killed while {moment}: cgroups {:?} outlived it", cgroups_of(pid)),
            Duration::from_secs(30),
            || cgroups_of(pid).is_empty(),
        );
    }
}

/// Victims under two reclaim paths in one run: each path's victim
/// repetitions are summarised, and the table of which path stalls whom
/// has both.
#[test]
fn victims_run_under_ns_exit_as_under_umount() {
    require_root!();
    let _k = kernel_lock();
    let v = common::run_json(&[
        "reclaim",
        "--sizes",
        "300k",
        "--method",
        "umount,ns-exit",
        "--reps",
        "1",
        "--unobserved-reps",
        "0",
        "--unpinned-reps",
        "0",
        "--victims",
        "umount,stat",
        "--no-save",
    ]);
    let runs = v["victim_runs"].as_array().unwrap();
    for method in ["umount", "ns-exit"] {
        let r = runs.iter().find(|r| r["method"] == method).unwrap_or_else(|| panic!("no {method} victims: {runs:?}"));
        for o in r["victims"].as_array().unwrap() {
            assert!(o["error"].is_null(), "{method}: {o}");
            assert!(o["during"]["calls"].as_u64().unwrap() >= 1, "{method}: a call overlapped the reclaim: {o}");
        }
        let stalls: Vec<&serde_json::Value> =
            v["victims"]["stalls"].as_array().unwrap().iter().filter(|s| s["method"] == method).collect();
        assert_eq!(stalls.len(), 2, "{method}: one judgement per victim: {stalls:?}");
    }
}
