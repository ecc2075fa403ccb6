//! Thin wrappers over the system calls dentrylab needs. Every `unsafe`
//! block of the crate lives under this module.
//!
//! In: file descriptors, pids, CPU numbers. Out: safe wrappers and the
//! guardian processes. Imports only `error`; imported by any module above.

pub(crate) mod group;
pub(crate) mod guardian;
pub(crate) mod internal;
pub(crate) mod loopdev;

use std::os::fd::BorrowedFd;
use std::os::unix::process::CommandExt;
use std::time::Duration;

use anyhow::{Context, Result};
use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::sys::resource::{UsageWho, getrusage};
use nix::unistd::Pid;

/// The CPUs this process may run on, in ascending order.
pub(crate) fn allowed_cpus() -> Result<Vec<usize>> {
    let set = sched_getaffinity(Pid::from_raw(0)).context("sched_getaffinity")?;
    Ok((0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect())
}

/// Pins the calling thread to one CPU.
pub(crate) fn pin_current_thread(cpu: usize) -> Result<()> {
    let mut set = CpuSet::new();
    set.set(cpu).with_context(|| format!("CPU {cpu} is out of range"))?;
    sched_setaffinity(Pid::from_raw(0), &set).with_context(|| format!("cannot pin a thread to CPU {cpu}"))
}

/// The top real-time priority the calling thread may take under
/// SCHED_FIFO (99 on Linux).
pub(crate) fn fifo_max_priority() -> i32 {
    // SAFETY: a plain syscall with an integer argument.
    unsafe { libc::sched_get_priority_max(libc::SCHED_FIFO) }
}

/// Makes the calling thread SCHED_FIFO at the top priority, as the
/// kernel's per-CPU stopper threads are. Needs root or CAP_SYS_NICE (or an
/// RLIMIT_RTPRIO that allows it); the error says so.
pub(crate) fn set_current_thread_fifo() -> Result<()> {
    let param = libc::sched_param { sched_priority: fifo_max_priority() };
    // SAFETY: pid 0 is the calling thread; `param` lives across the call.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        anyhow::bail!(
            "sched_setscheduler(SCHED_FIFO, priority {}) failed: {e} (it needs root or CAP_SYS_NICE)",
            param.sched_priority
        );
    }
    Ok(())
}

/// Whether a thread of this process may become SCHED_FIFO: tried on a
/// short-lived thread, so nothing else changes. The error says why not.
pub(crate) fn fifo_permitted() -> Result<()> {
    std::thread::spawn(set_current_thread_fifo)
        .join()
        .map_err(|_| anyhow::anyhow!("the thread that tried SCHED_FIFO died"))?
}

/// Lets the calling thread run on any of `cpus` again.
pub(crate) fn unpin_current_thread(cpus: &[usize]) -> Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c).ok();
    }
    sched_setaffinity(Pid::from_raw(0), &set).context("cannot restore the thread's CPU affinity")
}

/// Lets process (or thread) `pid` run only on `cpus`.
pub(crate) fn set_process_affinity(pid: u32, cpus: &[usize]) -> Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c).with_context(|| format!("CPU {c} is out of range"))?;
    }
    sched_setaffinity(Pid::from_raw(pid as i32), &set)
        .with_context(|| format!("cannot move process {pid} to CPUs {cpus:?}"))
}

/// User and system CPU time used so far by the calling thread.
pub(crate) fn thread_cpu_times() -> (Duration, Duration) {
    match getrusage(UsageWho::RUSAGE_THREAD) {
        Ok(u) => (tv(u.user_time()), tv(u.system_time())),
        Err(_) => (Duration::ZERO, Duration::ZERO),
    }
}

/// System CPU time used so far by the whole process.
pub(crate) fn process_cpu_times() -> (Duration, Duration) {
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => (tv(u.user_time()), tv(u.system_time())),
        Err(_) => (Duration::ZERO, Duration::ZERO),
    }
}

fn tv(t: nix::sys::time::TimeVal) -> Duration {
    Duration::new(t.tv_sec().max(0) as u64, (t.tv_usec().max(0) as u32) * 1000)
}

/// Asks the kernel to SIGKILL the calling thread's process when the thread
/// that forked it exits, so a helper process never outlives dentrylab.
pub(crate) fn die_with_parent() -> Result<()> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).context("prctl(PR_SET_PDEATHSIG)")
}

/// Spawns `cmd` tied to this process (see [`command_dies_with_parent`]).
/// Spawn from the thread that outlives the child (the main thread).
pub(crate) fn spawn_tied(cmd: &mut std::process::Command) -> std::io::Result<std::process::Child> {
    command_dies_with_parent(cmd).spawn()
}

/// What a finished child wrote on its piped standard error, trimmed.
pub(crate) fn child_stderr(c: &mut std::process::Child) -> String {
    use std::io::Read;
    let mut err = String::new();
    if let Some(mut e) = c.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    err.trim().to_string()
}

/// CLOCK_MONOTONIC now, nanoseconds (comparable across processes).
pub(crate) fn monotonic_ns() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always there");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// The running executable, reachable even where its path is not.
pub(crate) const SELF_EXE: &str = "/proc/self/exe";

/// The hidden command under which dentrylab re-executes itself: every
/// child, worker, guardian and the guest's init is `dentrylab __internal
/// NAME ...` (NAME: the constant beside the code it runs).
pub(crate) const INTERNAL_COMMAND: &str = "__internal";

/// A copy of dentrylab running hidden `subcommand` with one JSON argument,
/// tied to this process ([`command_dies_with_parent`]), talking over its
/// standard input and output (standard error goes to ours). Through
/// /proc/self/exe: inside the sandbox the executable's own path may be
/// hidden (a binary under /tmp is under the scratch tmpfs).
pub(crate) struct SelfChild {
    pub child: std::process::Child,
    pub input: std::process::ChildStdin,
    pub output: std::io::BufReader<std::process::ChildStdout>,
}

/// Starts a [`SelfChild`]; `what` names it in the error.
pub(crate) fn spawn_self(subcommand: &str, json: String, what: &str) -> Result<SelfChild> {
    use std::process::Stdio;
    let mut cmd = std::process::Command::new(SELF_EXE);
    cmd.arg(INTERNAL_COMMAND)
        .arg(subcommand)
        .arg(json)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    command_dies_with_parent(&mut cmd);
    let mut child = cmd.spawn().with_context(|| format!("cannot start {what}"))?;
    let input = child.stdin.take().with_context(|| format!("{what}: no standard input"))?;
    let output = std::io::BufReader::new(child.stdout.take().with_context(|| format!("{what}: no standard output"))?);
    Ok(SelfChild { child, input, output })
}

/// Makes a child process get SIGKILL when the thread that spawns it exits
/// (PR_SET_PDEATHSIG, set between fork and exec and kept across exec), and
/// exit at once if dentrylab died before that was set: even a child killed
/// before it runs any of our code cannot outlive dentrylab.
pub(crate) fn command_dies_with_parent(cmd: &mut std::process::Command) -> &mut std::process::Command {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        })
    }
}

/// Ignores SIGINT, SIGTERM, SIGHUP and SIGPIPE in this process: a guardian
/// must live long enough to clean up after its parent.
pub(crate) fn ignore_termination_signals() -> Result<()> {
    use nix::sys::signal::{SigHandler, Signal, signal};
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP, Signal::SIGPIPE] {
        // SAFETY: SIG_IGN installs no handler code.
        unsafe { signal(s, SigHandler::SigIgn) }.with_context(|| format!("cannot ignore {s}"))?;
    }
    Ok(())
}

/// Writes a filesystem's dirty data and metadata (syncfs(2)), so a later
/// reclaim does not also pay for writeback.
pub(crate) fn syncfs(fd: BorrowedFd<'_>) -> Result<()> {
    nix::unistd::syncfs(fd).context("syncfs")
}

/// Waits for child `pid` to end, returning its wait status and the system
/// CPU time it used over its whole life (wait4(2)).
pub(crate) fn wait_child(pid: u32) -> Result<(i32, Duration)> {
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: both pointers are valid for the duration of the call.
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut ru) };
        if r == pid as libc::pid_t {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e).with_context(|| format!("wait4 for child {pid}"));
        }
    }
    let sys = Duration::new(ru.ru_stime.tv_sec.max(0) as u64, (ru.ru_stime.tv_usec.max(0) as u32) * 1000);
    Ok((status, sys))
}

/// Number of threads of this process (from /proc/self/status).
pub(crate) fn thread_count() -> usize {
    threads_of("self").unwrap_or(1)
}

/// Number of threads of process `pid` (`self` for this one), from
/// /proc/PID/status; `None` when it cannot be read.
pub fn threads_of(pid: &str) -> Option<usize> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Threads:").map(|v| v.trim().parse().ok())).flatten())
}

/// The effective user is root.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The first executable file named `tool` in the directories of `PATH`:
/// the crate's one PATH lookup ([`which_or`] and [`which_in`] are its
/// other forms).
pub fn which(tool: &str) -> Option<std::path::PathBuf> {
    which_in(tool, path_dirs())
}

/// `tool` on the `PATH`, else in one of `extra` (for programs in sbin
/// directories a user's `PATH` may lack).
pub(crate) fn which_or(tool: &str, extra: &[&str]) -> Option<std::path::PathBuf> {
    which_in(tool, path_dirs().into_iter().chain(extra.iter().map(std::path::PathBuf::from)))
}

/// The first executable file named `tool` in `dirs`, in order.
pub(crate) fn which_in(tool: &str, dirs: impl IntoIterator<Item = std::path::PathBuf>) -> Option<std::path::PathBuf> {
    dirs.into_iter().map(|d| d.join(tool)).find(|p| is_executable(p))
}

/// The directories of `PATH` (none when it is unset).
fn path_dirs() -> Vec<std::path::PathBuf> {
    std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default()
}

/// `p` is a file with an execute bit.
pub(crate) fn is_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A TCP listener on `addr` with an explicit accept backlog (the standard
/// library's is 128, too short for a burst of concurrent scrapes: a
/// dropped SYN costs the client a one-second retransmit).
pub(crate) fn tcp_listener(addr: std::net::SocketAddr, backlog: i32) -> Result<std::net::TcpListener> {
    use nix::sys::socket::{
        AddressFamily, Backlog, SockFlag, SockType, SockaddrStorage, bind, listen, setsockopt, socket, sockopt,
    };
    let family = if addr.is_ipv4() { AddressFamily::Inet } else { AddressFamily::Inet6 };
    let fd = socket(family, SockType::Stream, SockFlag::SOCK_CLOEXEC, None).context("socket(2)")?;
    setsockopt(&fd, sockopt::ReuseAddr, &true).context("setsockopt(SO_REUSEADDR)")?;
    bind(std::os::fd::AsRawFd::as_raw_fd(&fd), &SockaddrStorage::from(addr))
        .with_context(|| format!("cannot listen on {addr}"))?;
    listen(&fd, Backlog::new(backlog).context("listen backlog")?)
        .with_context(|| format!("cannot listen on {addr}"))?;
    Ok(std::net::TcpListener::from(fd))
}

/// Makes a child process move itself into a cgroup (writes `0` to the
/// cgroup's `cgroup.procs`) and, with `cpu`, pin itself to that CPU, both
/// between fork and exec: everything it allocates after exec is charged to
/// the cgroup, and no window exists in which it runs outside it.
pub(crate) fn command_in_cgroup<'a>(
    cmd: &'a mut std::process::Command,
    procs: &std::path::Path,
    cpu: Option<usize>,
) -> Result<&'a mut std::process::Command> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(procs.as_os_str().as_bytes()).context("cgroup path contains a NUL byte")?;
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if let Some(c) = cpu {
        // SAFETY: `set` is a valid cpu_set_t.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: the closure runs between fork and exec and calls only
    // async-signal-safe functions (open, write, close, sched_setaffinity)
    // on data prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
            let err = std::io::Error::last_os_error();
            libc::close(fd);
            if !ok {
                return Err(err);
            }
            if cpu.is_some() && libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    Ok(cmd)
}

/// Loads a kernel module from its file (finit_module(2)); `compressed`:
/// the file is compressed and the kernel decompresses it
/// (MODULE_INIT_COMPRESSED_FILE, CONFIG_MODULE_DECOMPRESS). A module
/// already loaded or built in (EEXIST) is not an error.
pub(crate) fn load_module(path: &std::path::Path, compressed: bool) -> Result<()> {
    use nix::kmod::{ModuleInitFlags, finit_module};
    const MODULE_INIT_COMPRESSED_FILE: libc::c_uint = 4;
    let f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let flags = if compressed {
        ModuleInitFlags::from_bits_retain(MODULE_INIT_COMPRESSED_FILE)
    } else {
        ModuleInitFlags::empty()
    };
    match finit_module(&f, c"", flags) {
        Ok(()) | Err(nix::errno::Errno::EEXIST) => Ok(()),
        Err(e) => Err(e).context("finit_module"),
    }
}

/// Powers the machine off (reboot(2) with RB_POWER_OFF), after a sync.
/// Only the guest's init calls this.
pub(crate) fn power_off() -> ! {
    nix::unistd::sync();
    let _ = nix::sys::reboot::reboot(nix::sys::reboot::RebootMode::RB_POWER_OFF);
    // reboot(2) returns only on failure (not PID 1 of the initial namespace).
    std::process::exit(1)
}
