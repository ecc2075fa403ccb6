//! `dentrylab vm`: a Debian kernel fetched by dentrylab itself boots under
//! TCG and a tiny reclaim comes back whole over the result channel, its
//! victims (`--victims`) too; a
//! model the kernel lacks and bad flags are refused in one line (exit 2);
//! SIGKILL while fetching, while booting and while the guest runs the
//! command leaves no QEMU and no temporary directory.
//!
//! The kernel is Debian's cloud metapackage (`linux-image-cloud-amd64`,
//! 6.12 in Debian 13), or `DENTRYLAB_VM_TEST_KERNEL`.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{bin, has, kernel_lock, usage_error, wait_until};

fn test_kernel() -> String {
    std::env::var("DENTRYLAB_VM_TEST_KERNEL").unwrap_or_else(|_| "linux-image-cloud-amd64".into())
}

/// The tools a guest run needs on the host.
macro_rules! require_vm_tools {
    () => {
        for t in ["qemu-system-x86_64", "apt-get", "dpkg-deb", "depmod", "ldd"] {
            require!(has(t), "needs {t} (see .ci/run for its package)");
        }
    };
}

const TINY: [&str; 5] = ["reclaim", "--sizes", "20k,40k", "--reps", "1"];

#[test]
fn a_debian_kernel_boots_under_tcg_and_the_json_comes_back_whole() {
    require_vm_tools!();
    let _k = kernel_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("m.json");
    let out = bin()
        .args(["vm", "--kernel", &test_kernel(), "--preempt", "full", "--accel", "tcg", "--timeout", "5m", "--json"])
        .arg(&json)
        .arg("--")
        .args(TINY)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A failed row keeps the console's oops or panic in the JSON: show it.
    let console = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .map(|m| m["rows"][0]["console_tail"].to_string())
        .unwrap_or_default();
    assert!(out.status.success(), "{stdout}\n{}\nconsole: {console}", String::from_utf8_lossy(&out.stderr));
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(m["schema"], "dentrylab.vm-matrix/1");
    assert_eq!(m["command"], serde_json::json!(TINY));
    let rows = m["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{m}");
    let r = &rows[0];
    assert_eq!(r["error"], serde_json::Value::Null, "{r}");
    assert_eq!((r["accel"].as_str(), r["emulated"].as_bool()), (Some("tcg"), Some(true)));
    // The model asked for is the one the guest reported from debugfs.
    assert_eq!((r["preempt"].as_str(), r["preempt_requested"].as_str()), (Some("full"), Some("full")), "{r}");
    let release = r["kernel_release"].as_str().unwrap();
    assert!(release.contains("cloud"), "{release}");
    // The guest's own reclaim result, whole: its sizes, its kernel.
    let res = &r["result"];
    assert_eq!(res["benchmark"], "reclaim");
    assert_eq!(res["environment"]["kernel"], release);
    let targets: Vec<u64> = res["sizes"].as_array().unwrap().iter().map(|s| s["target"].as_u64().unwrap()).collect();
    assert_eq!(targets, [20_000, 40_000]);
    // The guest's kernel log came back on the channel, not the console.
    let log = r["kernel_log"].as_array().unwrap();
    assert!(log.iter().any(|l| l.as_str().unwrap().contains("Linux version")), "{log:?}");
    assert!(stdout.contains(release) && stdout.contains("tcg (emulated)"), "{stdout}");
}

/// `reclaim --victims` in a guest: the victims run on the guest's second
/// vCPU and their rows come back in the row's result and in vm's table.
/// fork-exec execs /bin/true, which the initramfs carries for it.
#[test]
fn the_victims_run_in_a_guest_and_their_rows_come_back() {
    require_vm_tools!();
    let _k = kernel_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("m.json");
    let command =
        ["reclaim", "--sizes", "20k,40k", "--reps", "1", "--unobserved-reps", "0", "--unpinned-reps", "0", "--victims"];
    let out = bin()
        .args(["vm", "--kernel", &test_kernel(), "--accel", "tcg", "--cpus", "2", "--timeout", "5m", "--json"])
        .arg(&json)
        .arg("--")
        .args(command)
        .arg("umount,fork-exec")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    // The matrix's own table, with the victims' grid under it (not the
    // one-line fallback of a result the matrix cannot read).
    assert!(!stdout.contains("result in --json") && stdout.contains("Victim"), "{stdout}");
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let r = &m["rows"][0];
    assert_eq!(r["error"], serde_json::Value::Null, "{r}");
    assert_eq!(r["cpus"], 2, "{r}");
    assert_eq!(r["proc_stack"], true, "Debian's kernels have /proc/PID/stack: {r}");
    let res = &r["result"];
    let runs = res["victim_runs"].as_array().expect("victim repetitions in the guest's result");
    assert_eq!(runs.len(), 2, "{res}");
    assert_eq!(runs[1]["target"], 40_000);
    let victims = runs[1]["victims"].as_array().unwrap();
    for name in ["umount", "fork-exec"] {
        let v = victims.iter().find(|v| v["victim"] == name).unwrap_or_else(|| panic!("no {name}: {victims:?}"));
        assert_eq!(v["error"], serde_json::Value::Null, "{v}");
        assert!(v["during"]["calls"].as_u64().unwrap() >= 1, "{name} made no call during the reclaim: {v}");
        assert!(v["outside"]["calls"].as_u64().unwrap() >= 1, "{name} made no call before the reclaim: {v}");
    }
    let sizes = res["victims"]["sizes"].as_array().unwrap();
    assert!(sizes.iter().any(|s| s["victim"] == "umount" && s["target"] == 40_000), "{sizes:?}");
}

#[test]
fn a_model_the_kernel_lacks_is_refused_before_anything_boots() {
    require_vm_tools!();
    let _k = kernel_lock();
    // Debian 13's 6.12 kernels are PREEMPT_DYNAMIC without lazy (x86 has
    // it from 6.13). The build's config is read from the package, so on a
    // machine whose cache does not hold it yet the kernel is fetched first
    // and `fetching …` progress lines come before the refusal (a new CI
    // machine, or a new version behind the metapackage). Refused before
    // anything boots: exit 2, one error line, nothing on stdout, and no
    // other progress line (no accelerator test, no `booting`). (No
    // wall-clock bound: a loaded machine may be slow to unpack the kernel.)
    let args = ["vm", "--kernel", &test_kernel(), "--preempt", "none,lazy", "--", "reclaim", "--sizes", "20k"];
    let out = bin().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&out.stdout));
    let (progress, rest): (Vec<&str>, Vec<&str>) = err.lines().partition(|l| l.starts_with("dentrylab vm: "));
    assert!(
        progress.iter().all(|l| l.starts_with("dentrylab vm: fetching ")),
        "only fetching before the refusal: {err}"
    );
    assert_eq!(rest.len(), 1, "one error line: {err}");
    for n in ["--preempt lazy", "offers none, voluntary, full"] {
        assert!(rest[0].contains(n), "{err} lacks {n:?}");
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let k = ["--kernel", "linux-image-cloud-amd64"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["--kernel", "linux-image-cloud-amd64"];
        v.extend_from_slice(extra);
        v
    };
    usage_error("vm", &with(&["--clock", "icount:x", "--", "reclaim"]), &["--clock", "SHIFT"]);
    usage_error("vm", &with(&["--accel", "xen", "--", "reclaim"]), &["xen"]);
    usage_error("vm", &with(&["--preempt", "rt", "--", "reclaim"]), &["rt"]);
    usage_error("vm", &["--kernel", "6.12-rt", "--", "reclaim"], &["6.12-rt", "linux-image-"]);
    usage_error("vm", &with(&["--", "reclaim", "--sizes", "lots"]), &["command after --", "lots"]);
    usage_error("vm", &with(&["--", "reclaim", "--json", "x"]), &["--json"]);
    usage_error("vm", &with(&["--", "vm", "--kernel", "host"]), &["vm"]);
    usage_error("vm", &with(&["--accel", "kvm", "--clock", "icount:4", "--", "reclaim"]), &["icount", "TCG"]);
    usage_error("vm", &with(&["--cpus", "1", "--", "reclaim", "--victims", "umount"]), &["--cpus 1", "--victims"]);
    usage_error("vm", &with(&["--", "reclaim", "--victims=umount,container"]), &["container victim", "runsc"]);
    usage_error("vm", &with(&["--memory", "100T", "--", "reclaim"]), &["--memory", "lower --memory"]);
    usage_error("vm", &["--kernel", "/nonexistent/vmlinuz", "--", "reclaim"], &["/nonexistent/vmlinuz"]);
    let _ = k;
}

/// Processes whose command line mentions `needle` (QEMU's names the run's
/// temporary directory; apt's the state directory).
fn processes_mentioning(needle: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
        .filter(|e| e.file_name().to_string_lossy() != me)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok().map(|c| (e.file_name(), c)))
        .filter(|(_, c)| String::from_utf8_lossy(c).contains(needle))
        .map(|(p, c)| format!("{}: {}", p.to_string_lossy(), String::from_utf8_lossy(&c).replace('\0', " ")))
        .collect()
}

fn spawn_vm(state: &Path, command: &[&str]) -> Child {
    bin()
        .args(["vm", "--kernel", &test_kernel(), "--accel", "tcg", "--state-dir"])
        .arg(state)
        .arg("--")
        .args(command)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Kills `child` with SIGKILL, then checks within 10 s that no QEMU (or
/// apt) of the run is left and that its temporary directories are gone.
fn kill_and_check(mut child: Child, moment: &str, state: &Path) {
    let pid = child.id();
    let tmp = std::env::temp_dir().join(format!("dentrylab-vm-{pid}"));
    let partial: PathBuf = state.join(format!("vm/kernels/.partial-{pid}"));
    let before = processes_mentioning(&tmp.to_string_lossy());
    let ok = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap().success();
    assert!(ok);
    child.wait().unwrap();
    let limit = Duration::from_secs(10);
    wait_until(
        &format!("{moment}: QEMU outlived dentrylab: {:?}", processes_mentioning(&tmp.to_string_lossy())),
        limit,
        || processes_mentioning(&tmp.to_string_lossy()).is_empty(),
    );
    wait_until(&format!("{moment}: apt outlived dentrylab"), limit, || {
        processes_mentioning(&state.join("vm/apt").to_string_lossy()).is_empty()
    });
    wait_until(&format!("{moment}: {} is left", tmp.display()), limit, || !tmp.exists());
    wait_until(&format!("{moment}: {} is left", partial.display()), limit, || !partial.exists());
    let _ = before;
}

/// Waits until the guest booting in `boot` has said hello on its channel.
/// A TCG boot on a loaded 2-core machine has taken over a minute, so the
/// bound is generous; a guest that panics or a `vm` that ends is reported
/// at once, with the console's last lines.
fn wait_for_hello(child: &mut Child, boot: &Path) {
    let console = || {
        let text = std::fs::read_to_string(boot.join("console.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    };
    let t = Instant::now();
    loop {
        let channel = std::fs::read_to_string(boot.join("channel.log")).unwrap_or_default();
        if channel.contains("dentrylab-vm hello") {
            return;
        }
        let ended = child.try_wait().unwrap();
        let tail = console();
        assert!(
            ended.is_none() && !tail.contains("Kernel panic") && t.elapsed() < Duration::from_secs(300),
            "the guest never said hello (vm ended: {ended:?}, after {:?}); its console ends:\n{tail}",
            t.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Reads the child's standard error until a line holds `needle`.
fn wait_for_line(child: &mut Child, needle: &str, limit: Duration) {
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let t = Instant::now();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "vm ended before `{needle}`");
        if line.contains(needle) {
            break;
        }
        assert!(t.elapsed() < limit, "no `{needle}` within {limit:?}");
    }
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
}

#[test]
fn sigkill_while_fetching_booting_or_running_leaves_no_qemu_and_no_temporary_directory() {
    require_vm_tools!();
    let _k = kernel_lock();
    // 1. While fetching the kernel (a fresh state directory: apt runs).
    let fresh = tempfile::tempdir().unwrap();
    let mut c = spawn_vm(fresh.path(), &TINY);
    wait_for_line(&mut c, "fetching", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    kill_and_check(c, "while fetching", fresh.path());

    // 2. While the guest boots (the cached kernel of the default state dir).
    let state = std::env::var_os("DENTRYLAB_STATE_DIR").map(PathBuf::from).unwrap_or_else(|| {
        if common::is_root() {
            PathBuf::from("/var/lib/dentrylab")
        } else {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".local/state/dentrylab")
        }
    });
    let mut c = spawn_vm(&state, &TINY);
    let pid = c.id();
    wait_for_line(&mut c, "booting", Duration::from_secs(120));
    let qemu_running = || !processes_mentioning(&format!("dentrylab-vm-{pid}/")).is_empty();
    wait_until("QEMU never started", Duration::from_secs(30), qemu_running);
    kill_and_check(c, "while booting", &state);

    // 3. While the guest runs the command: its hello is on the channel.
    let mut c = spawn_vm(&state, &["reclaim", "--sizes", "400k", "--reps", "3"]);
    let pid = c.id();
    wait_for_line(&mut c, "booting", Duration::from_secs(120));
    let boot = std::env::temp_dir().join(format!("dentrylab-vm-{pid}/boot-0-0"));
    wait_for_hello(&mut c, &boot);
    std::thread::sleep(Duration::from_secs(2));
    kill_and_check(c, "while the guest runs the command", &state);
}
