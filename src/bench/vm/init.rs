//! The guest's init: this same binary as PID 1 of the initramfs
//! (`rdinit=/dentrylab -- __internal __vm-init`). It mounts the pseudo-filesystems,
//! loads the modules, reads the preemption model the kernel ended up with,
//! refuses (one line on the channel) when it is not the one asked for,
//! runs the command with `--json`, sends the JSON and the kernel log over
//! the result channel (ttyS1, see [`super::channel`]) and powers off.
//! It runs only inside the guest: nothing here touches the host.

use std::io::Write;
use std::os::fd::AsFd;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::channel::{Hello, Record};
use crate::sys;

pub(crate) const INIT_COMMAND: &str = "__vm-init";

/// The guest's init's internal command.
pub(crate) const INIT_ENTRY: crate::sys::internal::Entry<crate::sys::internal::NoArgs> = crate::sys::internal::Entry {
    name: INIT_COMMAND,
    about: "The guest's init (PID 1 of the initramfs 'vm' builds)",
    aliases: &[],
    run: |_| main(),
};
pub(crate) const INIT_PATH: &str = "/dentrylab";
pub(crate) const CONFIG_PATH: &str = "/vm.json";
/// The result channel: the guest's second serial port.
pub(crate) const CHANNEL: &str = "/dev/ttyS1";
/// Kernel parameter that makes the init report and power off without
/// running the command (the accelerator's test boot).
pub(crate) const PROBE_PARAM: &str = "dentrylab.probe=1";
const RESULT_FILE: &str = "/tmp/dentrylab-vm-result.json";

/// What the host tells the init, in `/vm.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct GuestConfig {
    /// The dentrylab command to run (without the program name).
    pub argv: Vec<String>,
    /// Module files to load, in order.
    pub modules: Vec<String>,
    /// The files are compressed and the kernel decompresses them
    /// (CONFIG_MODULE_DECOMPRESS, finit_module's MODULE_INIT_COMPRESSED_FILE).
    pub compressed_modules: bool,
    /// The kernel selftests to run after the command (`vm --selftests`):
    /// `collection:test` under [`super::selftests::GUEST_DIR`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selftests: Vec<String>,
}

/// PID 1: never returns; on error says why on the console and powers off.
pub(crate) fn main() -> ! {
    if let Err(e) = run() {
        eprintln!("dentrylab vm init: {e:#}");
    }
    let _ = std::io::stderr().flush();
    sys::power_off();
}

fn run() -> Result<()> {
    mount_pseudo()?;
    if let Err(e) = mount_cgroup2() {
        eprintln!("dentrylab vm init: no memory cgroups in the guest (--method memcg, the cgroup victim): {e:#}");
    }
    let cfg: GuestConfig = serde_json::from_str(&std::fs::read_to_string(CONFIG_PATH).context("cannot read /vm.json")?)
        .context("/vm.json")?;
    let mut module_errors = Vec::new();
    for m in &cfg.modules {
        if let Err(e) = sys::load_module(Path::new(m), cfg.compressed_modules) {
            module_errors.push(format!("{m}: {e:#}"));
        }
    }
    let mut chan = Channel::open()?;
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let requested = cmdline.split_whitespace().find_map(|w| w.strip_prefix("preempt=")).map(str::to_string);
    let hello = hello(module_errors);
    chan.send(&Record::Hello(hello.clone()))?;
    let probe_only = cmdline.split_whitespace().any(|w| w == PROBE_PARAM);
    match refusal(requested.as_deref(), &hello) {
        Some(why) => chan.send(&Record::Refused(why))?,
        None if probe_only => {}
        None => {
            if cfg.argv.iter().any(|a| a == "--profile") {
                allow_profiling();
            }
            let code = run_command(&cfg.argv);
            if let Ok(text) = std::fs::read_to_string(RESULT_FILE) {
                chan.send(&Record::Result(text))?;
            }
            chan.send(&Record::Exit(code))?;
            // After the command, so that nothing a test leaves behind
            // (mounts, namespaces) is in what the command measured.
            for t in &cfg.selftests {
                eprintln!("dentrylab vm init: kernel selftest {t}");
                let o = super::selftests::run_one(Path::new(super::selftests::GUEST_DIR), t);
                chan.send(&Record::Selftest(o))?;
            }
        }
    }
    for line in kernel_log() {
        chan.send(&Record::Kmsg(line))?;
    }
    chan.send(&Record::End)?;
    chan.drain();
    Ok(())
}

/// Why the model in force is not the one asked for, if it is not.
pub(crate) fn refusal(requested: Option<&str>, hello: &Hello) -> Option<String> {
    let r = requested?;
    if r == hello.preempt {
        return None;
    }
    let offered = if hello.offered.is_empty() {
        format!("its model is fixed at build time ({})", hello.preempt)
    } else {
        format!("it offers {}", hello.offered.join(", "))
    };
    Some(format!(
        "kernel {} booted with preempt={r} runs preemption model {} ({}): {offered}",
        hello.release, hello.preempt, hello.preempt_source
    ))
}

fn mount_pseudo() -> Result<()> {
    use nix::mount::{MsFlags, mount};
    for (src, target, fs) in [
        ("proc", "/proc", "proc"),
        ("sysfs", "/sys", "sysfs"),
        ("devtmpfs", "/dev", "devtmpfs"),
        ("debugfs", "/sys/kernel/debug", "debugfs"),
        ("tmpfs", "/tmp", "tmpfs"),
    ] {
        mount(Some(src), target, Some(fs), MsFlags::empty(), None::<&str>)
            .with_context(|| format!("cannot mount {fs} on {target}"))?;
    }
    Ok(())
}

/// The cgroup v2 hierarchy on /sys/fs/cgroup with the memory controller
/// enabled for the root's children: what `--method memcg` and the `cgroup`
/// victim make their cgroups in (`sandbox::cgroup`). The root cgroup may
/// hold processes and still enable controllers (the "no internal
/// processes" rule exempts it), so the init stays where it is.
fn mount_cgroup2() -> Result<()> {
    use nix::mount::{MsFlags, mount};
    let root = Path::new(CGROUP_ROOT);
    mount(Some("cgroup2"), root, Some("cgroup2"), MsFlags::empty(), None::<&str>)
        .with_context(|| format!("cannot mount cgroup2 on {CGROUP_ROOT}"))?;
    let ctl = root.join("cgroup.subtree_control");
    std::fs::write(&ctl, "+memory").with_context(|| format!("cannot write +memory to {}", ctl.display()))
}

/// Where the guest's init mounts the cgroup v2 hierarchy.
pub(crate) const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// The kernel and its preemption model as the guest sees them: a
/// PREEMPT_RT build says so in /sys/kernel/realtime and `uname -v`; a
/// PREEMPT_DYNAMIC one lists its models in debugfs `sched/preempt` with
/// the one in force in parentheses (kernel/sched/debug.c).
fn hello(module_errors: Vec<String>) -> Hello {
    let uts = nix::sys::utsname::uname().ok();
    let field = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
        uts.as_ref().map(|u| f(u).to_string_lossy().into_owned()).unwrap_or_default()
    };
    let (release, version) = (field(|u| u.release()), field(|u| u.version()));
    let realtime = std::fs::read_to_string("/sys/kernel/realtime").is_ok_and(|s| s.trim() == "1");
    let debugfs = std::fs::read_to_string("/sys/kernel/debug/sched/preempt").ok();
    let (preempt, source, offered) = match (&debugfs, realtime || version.contains("PREEMPT_RT")) {
        (_, true) => ("rt".to_string(), "/sys/kernel/realtime and uname -v (PREEMPT_RT)".to_string(), vec![]),
        (Some(s), false) => (
            crate::env::parse_debugfs_preempt(s).unwrap_or_default(),
            "/sys/kernel/debug/sched/preempt".to_string(),
            s.split_whitespace().map(|w| w.trim_matches(['(', ')']).to_string()).collect(),
        ),
        (None, false) => {
            let (m, src) = crate::env::preemption_model(&crate::procfs::ProcRoot::default(), &version);
            (m, src, vec![])
        }
    };
    let memory_bytes = crate::procfs::ProcRoot::default().meminfo().map(|m| m.mem_total_bytes).unwrap_or(0);
    let cpus = crate::env::cpus();
    // fs/proc/base.c has the file only with CONFIG_STACKTRACE.
    let proc_stack = Path::new("/proc/self/stack").exists();
    Hello { release, version, preempt, preempt_source: source, offered, cpus, memory_bytes, module_errors, proc_stack }
}

/// `--profile` in the guest: Debian's kernels default to
/// perf_event_paranoid 3 (a Debian patch), which refuses perf_event_open
/// to everyone, and /proc/kallsyms shows addresses to perf users only
/// below 2 (`kallsyms_for_perf()`). The guest is dentrylab's alone.
fn allow_profiling() {
    if let Err(e) = std::fs::write("/proc/sys/kernel/perf_event_paranoid", "-1\n") {
        eprintln!("dentrylab vm init: cannot set kernel.perf_event_paranoid for --profile: {e}");
    }
}

/// Runs `dentrylab ARGV --json RESULT_FILE` with the console as its
/// output; its exit status (128 + signal when killed).
fn run_command(argv: &[String]) -> i32 {
    let status = std::process::Command::new(INIT_PATH)
        .args(argv)
        .arg("--json")
        .arg(RESULT_FILE)
        .env_clear()
        .env("PATH", "/sbin:/bin:/usr/sbin:/usr/bin")
        .env("HOME", "/root")
        .status();
    match status {
        Ok(s) => s.code().unwrap_or_else(|| 128 + std::os::unix::process::ExitStatusExt::signal(&s).unwrap_or(0)),
        Err(e) => {
            eprintln!("dentrylab vm init: cannot start the command: {e}");
            127
        }
    }
}

/// Every record in the kernel's log buffer, as `[seconds] message`.
fn kernel_log() -> Vec<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(mut f) = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open("/dev/kmsg") else {
        return vec![];
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend(format_kmsg(&String::from_utf8_lossy(&buf[..n]))),
            // EPIPE: a record was overwritten before we read it; go on.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(_) => break,
        }
    }
    out
}

/// `6,1234,5678901,-;message` → `[    5.678901] message`.
pub(crate) fn format_kmsg(record: &str) -> Option<String> {
    let (head, msg) = record.split_once(';')?;
    let us: u64 = head.split(',').nth(2)?.parse().ok()?;
    let msg = msg.lines().next().unwrap_or("");
    Some(format!("[{:5}.{:06}] {msg}", us / 1_000_000, us % 1_000_000))
}

/// The second serial port, in raw mode (no newline translation).
struct Channel {
    f: std::fs::File,
}

impl Channel {
    fn open() -> Result<Channel> {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open(CHANNEL)
            .with_context(|| format!("cannot open the result channel {CHANNEL}"))?;
        if let Ok(mut t) = nix::sys::termios::tcgetattr(f.as_fd()) {
            nix::sys::termios::cfmakeraw(&mut t);
            let _ = nix::sys::termios::tcsetattr(f.as_fd(), nix::sys::termios::SetArg::TCSANOW, &t);
        }
        Ok(Channel { f })
    }

    fn send(&mut self, r: &Record) -> Result<()> {
        self.f.write_all(r.line().as_bytes()).context("cannot write to the result channel")
    }

    /// Waits until the port has sent everything (before the power goes).
    fn drain(&self) {
        let _ = nix::sys::termios::tcdrain(self.f.as_fd());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(preempt: &str, offered: &[&str]) -> Hello {
        Hello {
            release: "6.12.117+deb13-cloud-amd64".into(),
            version: String::new(),
            preempt: preempt.into(),
            preempt_source: "/sys/kernel/debug/sched/preempt".into(),
            offered: offered.iter().map(|s| s.to_string()).collect(),
            cpus: 2,
            memory_bytes: 0,
            module_errors: vec![],
            proc_stack: true,
        }
    }

    #[test]
    fn a_model_the_kernel_did_not_take_is_refused_in_one_line() {
        let h = hello("voluntary", &["none", "voluntary", "full"]);
        assert_eq!(refusal(None, &h), None);
        assert_eq!(refusal(Some("voluntary"), &h), None);
        let why = refusal(Some("lazy"), &h).expect("refused");
        assert!(why.contains("preempt=lazy") && why.contains("none, voluntary, full"), "{why}");
        assert!(!why.contains('\n'));
        let rt = refusal(Some("none"), &hello("rt", &[])).expect("refused");
        assert!(rt.contains("fixed at build time (rt)"), "{rt}");
    }

    #[test]
    fn kmsg_records_format_like_dmesg() {
        assert_eq!(
            format_kmsg("4,812,22512345,-;watchdog: BUG: soft lockup - CPU#1 stuck for 22s!\n").as_deref(),
            Some("[   22.512345] watchdog: BUG: soft lockup - CPU#1 stuck for 22s!")
        );
        assert_eq!(format_kmsg("garbage"), None);
    }
}
