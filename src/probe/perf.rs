//! Where the kernel time of a `scale` step goes, when the machine lets us
//! see it: `perf record -e cpu-clock -g` for the kernel functions, `perf
//! lock record` + `perf lock contention` (the `lock:contention_begin`
//! tracepoint) for the contended locks, and whether `/proc/lock_stat`
//! exists. Each source is tried once; what does not work is reported with
//! the reason, never guessed around.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::StepHook;
use crate::sys;

/// The perf binary (found on PATH).
pub(crate) const PERF: &str = "perf";
/// Rows kept from each report.
pub(crate) const TOP_ROWS: usize = 12;
/// How long perf may take to attach before the step gives up on it.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(20);

/// One attribution source and whether it works here.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Source {
    pub name: String,
    pub available: bool,
    /// What it measures, or why it cannot be used.
    pub detail: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Availability {
    pub functions: Source,
    pub locks: Source,
    pub lock_stat: Source,
}

impl Profile {
    /// Adds what a second step, run under the other tool, saw.
    pub(crate) fn merge(mut self, other: Profile) -> Profile {
        if self.top_symbols.is_empty() {
            self.top_symbols = other.top_symbols;
        }
        self.locks = self.locks.or(other.locks);
        self.samples_seconds = self.samples_seconds.max(other.samples_seconds);
        self.problems.extend(other.problems);
        self
    }
}

/// A kernel (or user) symbol and its share of the samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Symbol {
    pub percent: f64,
    /// `k` for kernel, `.` for user space.
    pub space: String,
    pub symbol: String,
}

/// A contended lock as `perf lock contention` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LockRow {
    pub contended: u64,
    pub total_wait_ns: u64,
    pub max_wait_ns: u64,
    pub avg_wait_ns: u64,
    pub kind: String,
    pub caller: String,
}

/// What perf saw during one step (or two: one per tool) of one operation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Profile {
    pub threads: usize,
    /// Length of the step each tool watched.
    pub samples_seconds: f64,
    /// Top symbols by self time (cpu-clock samples, callers folded away).
    pub top_symbols: Vec<Symbol>,
    /// Top contended locks, when the lock tracepoints work.
    pub locks: Option<Vec<LockRow>>,
    /// What failed while profiling this step.
    pub problems: Vec<String>,
}

/// Checks each source once (runs perf on `true`; files go to `scratch`).
pub(crate) fn availability(scratch: &Path) -> Availability {
    let functions = match try_perf(&["record", "-q", "-e", "cpu-clock", "-g", "-o"], scratch, "probe-rec.data") {
        Ok(()) => Source {
            name: "perf record -e cpu-clock -g".into(),
            available: true,
            detail: "kernel functions by sampled CPU time (software clock: works without a hardware PMU)".into(),
        },
        Err(e) => Source { name: "perf record".into(), available: false, detail: format!("{e:#}") },
    };
    let locks = match try_perf(&["lock", "record", "-q", "-o"], scratch, "probe-lock.data") {
        Ok(()) => Source {
            name: "perf lock contention".into(),
            available: true,
            detail: "contended kernel locks from the lock:contention_begin/end tracepoints".into(),
        },
        Err(e) => Source { name: "perf lock contention".into(), available: false, detail: format!("{e:#}") },
    };
    let lock_stat = if Path::new("/proc/lock_stat").exists() {
        Source {
            name: "/proc/lock_stat".into(),
            available: false,
            detail: "present but not used: enabling and clearing it (kernel.lock_stat) is global to the machine".into(),
        }
    } else {
        Source {
            name: "/proc/lock_stat".into(),
            available: false,
            detail: "absent: this kernel was built without CONFIG_LOCK_STAT".into(),
        }
    };
    Availability { functions, locks, lock_stat }
}

fn try_perf(args: &[&str], scratch: &Path, file: &str) -> Result<()> {
    let out = scratch.join(file);
    let r = Command::new(PERF).args(args).arg(&out).args(["--", "true"]).stdin(Stdio::null()).output();
    let _ = std::fs::remove_file(&out);
    let r = r.with_context(|| format!("cannot run {PERF} (is it installed and on PATH?)"))?;
    if !r.status.success() {
        let err = String::from_utf8_lossy(&r.stderr);
        let line = err.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no message");
        bail!("{PERF} {} fails here: {line}", args[..args.len() - 1].join(" "));
    }
    Ok(())
}

/// A step hook that does nothing: the measured steps run without perf.
pub(crate) struct NoProfile;

impl StepHook for NoProfile {
    fn before_go(&mut self, _pids: &[u32]) -> Result<()> {
        Ok(())
    }
    fn after(&mut self) -> Result<()> {
        Ok(())
    }
}

/// One perf process attached to the step's workers, started with its
/// events disabled and enabled through its control fifo just before the
/// workers start, so it sees the whole loop and nothing of the setup.
pub(crate) struct Attached {
    pub(crate) child: Child,
    data: PathBuf,
    ctl: std::fs::File,
    ack: std::fs::File,
}

/// Runs perf over one step and parses what it recorded.
pub(crate) struct Profiler {
    functions: bool,
    locks: bool,
    dir: PathBuf,
    tag: String,
    rec: Option<Attached>,
    lock: Option<Attached>,
    started: Option<std::time::Instant>,
    seconds: f64,
    problems: Vec<String>,
}

impl Profiler {
    /// A profiler running the function sampler, the lock tracer, or both.
    pub(crate) fn new(scratch: &Path, tag: &str, functions: bool, locks: bool) -> Profiler {
        Profiler {
            functions,
            locks,
            dir: scratch.to_path_buf(),
            tag: tag.to_string(),
            rec: None,
            lock: None,
            started: None,
            seconds: 0.0,
            problems: Vec::new(),
        }
    }

    fn attach(&self, kind: &str, pre: &[&str], pids: &[u32]) -> Result<Attached> {
        let base = self.dir.join(format!("perf-{}-{kind}", self.tag));
        let pid_list = pids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        // --no-inherit: attach to the workers only, not to processes
        // they (or this coordinator, e.g. the other perf) start later.
        let mut a = spawn_controlled(&base, pre, &["--no-inherit", "-p", &pid_list])?;
        command(&mut a, "enable").with_context(|| format!("{PERF} {} did not start", pre.join(" ")))?;
        Ok(a)
    }

    /// Stops perf and summarises the step.
    pub(crate) fn finish(mut self, threads: usize) -> Profile {
        let top_symbols = match self.rec.take() {
            Some(a) => match stop(a).and_then(|d| report_symbols(&d)) {
                Ok(s) => s,
                Err(e) => {
                    self.problems.push(format!("perf record: {e:#}"));
                    Vec::new()
                }
            },
            None => Vec::new(),
        };
        let locks = match self.lock.take() {
            Some(a) => match stop(a).and_then(|d| report_locks(&d)) {
                Ok(l) => Some(l),
                Err(e) => {
                    self.problems.push(format!("perf lock: {e:#}"));
                    None
                }
            },
            None => None,
        };
        Profile { threads, samples_seconds: self.seconds, top_symbols, locks, problems: self.problems }
    }
}

impl StepHook for Profiler {
    fn before_go(&mut self, pids: &[u32]) -> Result<()> {
        if self.functions {
            match self.attach("rec", &["record", "-e", "cpu-clock", "-g"], pids) {
                Ok(a) => self.rec = Some(a),
                Err(e) => self.problems.push(format!("perf record: {e:#}")),
            }
        }
        if self.locks {
            match self.attach("lock", &["lock", "record"], pids) {
                Ok(a) => self.lock = Some(a),
                Err(e) => self.problems.push(format!("perf lock record: {e:#}")),
            }
        }
        self.started = Some(std::time::Instant::now());
        Ok(())
    }

    fn after(&mut self) -> Result<()> {
        if let Some(t) = self.started.take() {
            self.seconds = t.elapsed().as_secs_f64();
        }
        for a in [&mut self.rec, &mut self.lock].into_iter().flatten() {
            let _ = command(a, "disable");
        }
        Ok(())
    }
}

/// Starts `perf <pre> -o <base>.data -q -D -1 <target>` with its events
/// disabled and a control fifo (`<base>.ctl`, `<base>.ack`): [`command`]
/// "enable" starts the recording, and is acknowledged once perf is ready.
pub(crate) fn spawn_controlled(base: &Path, pre: &[&str], target: &[&str]) -> Result<Attached> {
    let data = base.with_extension("data");
    let (ctl_path, ack_path) = (base.with_extension("ctl"), base.with_extension("ack"));
    for p in [&ctl_path, &ack_path] {
        let _ = std::fs::remove_file(p);
        nix::unistd::mkfifo(p.as_path(), nix::sys::stat::Mode::from_bits_truncate(0o600))
            .with_context(|| format!("mkfifo {}", p.display()))?;
    }
    let mut cmd = Command::new(PERF);
    cmd.args(pre)
        .arg("-o")
        .arg(&data)
        .args(["-q", "-D", "-1"])
        .args(target)
        .arg(format!("--control=fifo:{},{}", ctl_path.display(), ack_path.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = sys::spawn_tied(&mut cmd).with_context(|| format!("cannot start {PERF} {}", pre.join(" ")))?;
    // Read+write opens of a fifo do not block on Linux.
    let rw = |p: &Path| std::fs::OpenOptions::new().read(true).write(true).open(p);
    let ctl = rw(&ctl_path).with_context(|| format!("open {}", ctl_path.display()))?;
    let ack = rw(&ack_path).with_context(|| format!("open {}", ack_path.display()))?;
    Ok(Attached { child, data, ctl, ack })
}

/// Sends a control command and waits for perf's "ack".
pub(crate) fn command(a: &mut Attached, cmd: &str) -> Result<()> {
    use std::io::{Read, Write};
    use std::os::fd::AsFd;
    writeln!(a.ctl, "{cmd}").context("write to perf's control fifo")?;
    let mut fds = [nix::poll::PollFd::new(a.ack.as_fd(), nix::poll::PollFlags::POLLIN)];
    let ms = u16::try_from(ATTACH_TIMEOUT.as_millis()).unwrap_or(u16::MAX);
    loop {
        if let Some(st) = a.child.try_wait()? {
            bail!("perf exited with {st}: {}", sys::child_stderr(&mut a.child).lines().next().unwrap_or(""));
        }
        match nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms.min(200))) {
            Ok(n) if n > 0 => break,
            Ok(_) if a.child.try_wait()?.is_none() && ms > 200 => continue,
            Ok(_) => bail!("no acknowledgement from perf"),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => bail!("poll on perf's ack fifo: {e}"),
        }
    }
    let mut buf = [0u8; 16];
    let n = a.ack.read(&mut buf).context("read perf's ack fifo")?;
    if !buf[..n].starts_with(b"ack") {
        bail!("unexpected answer from perf: {:?}", String::from_utf8_lossy(&buf[..n]));
    }
    Ok(())
}

/// Stops perf with SIGINT (it then writes its data file); returns the file.
pub(crate) fn stop(mut a: Attached) -> Result<PathBuf> {
    let pid = nix::unistd::Pid::from_raw(a.child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
    let st = a.child.wait().context("waiting for perf")?;
    // perf writes its file on SIGINT, then re-raises the signal.
    let by_sigint = std::os::unix::process::ExitStatusExt::signal(&st) == Some(libc::SIGINT);
    if !st.success() && !by_sigint && st.code() != Some(130) {
        bail!("perf exited with {st}: {}", sys::child_stderr(&mut a.child));
    }
    Ok(a.data)
}

fn perf_output(args: &[&str], data: &Path) -> Result<String> {
    let out = Command::new(PERF)
        .args(args)
        .arg("-i")
        .arg(data)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {PERF} {}", args.join(" ")))?;
    if !out.status.success() {
        bail!("{PERF} {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    let _ = std::fs::remove_file(data);
    // perf lock contention prints its table on stderr.
    let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok(s)
}

fn report_symbols(data: &Path) -> Result<Vec<Symbol>> {
    let text = perf_output(&["report", "--stdio", "--no-children", "--sort", "sym", "-g", "none", "-q"], data)?;
    Ok(parse_report(&text, TOP_ROWS))
}

fn report_locks(data: &Path) -> Result<Vec<LockRow>> {
    let text = perf_output(&["lock", "contention", "-E", &TOP_ROWS.to_string()], data)?;
    Ok(parse_contention(&text))
}

/// Parses `perf report --stdio --no-children --sort sym -g none` lines
/// (`    12.34%  [k] __d_lookup_rcu`), keeping the first `top`.
pub(crate) fn parse_report(text: &str, top: usize) -> Vec<Symbol> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let (pct, rest) = l.split_once('%')?;
            let percent = pct.trim().parse::<f64>().ok()?;
            let rest = rest.trim();
            let (space, symbol) = rest.strip_prefix('[')?.split_once(']')?;
            Some(Symbol { percent, space: space.to_string(), symbol: symbol.trim().to_string() })
        })
        .take(top)
        .collect()
}

/// `1.23 ms` → ns.
fn duration_ns(v: &str, unit: &str) -> Option<u64> {
    let v: f64 = v.parse().ok()?;
    let m = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        "h" => 3600e9,
        _ => return None,
    };
    Some((v * m).round() as u64)
}

/// Parses the table of `perf lock contention`:
/// ` contended  total wait  max wait  avg wait  type  caller` then rows
/// like `       12    1.23 ms   200.00 us   102.50 us   rwsem:R   walk_component+0x1a`.
pub(crate) fn parse_contention(text: &str) -> Vec<LockRow> {
    text.lines()
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            if t.len() < 9 {
                return None;
            }
            Some(LockRow {
                contended: t[0].parse().ok()?,
                total_wait_ns: duration_ns(t[1], t[2])?,
                max_wait_ns: duration_ns(t[3], t[4])?,
                avg_wait_ns: duration_ns(t[5], t[6])?,
                kind: t[7].to_string(),
                caller: t[8..].join(" "),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!("{}/tests/fixtures/perf/6.18/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn report_fixture() {
        let s = parse_report(&fixture("report-stat-missing"), 5);
        assert_eq!(s.len(), 5);
        assert_eq!(s[0], Symbol { percent: 9.62, space: "k".into(), symbol: "link_path_walk".into() });
        assert_eq!(s[2].symbol, "d_alloc_parallel");
        let all = parse_report(&fixture("report-stat-missing"), 100);
        assert!(all.iter().any(|x| x.space == "." && x.symbol == "__GI___fstatat64"));
        assert!(parse_report("# comment\n\n", 5).is_empty());
    }

    #[test]
    fn contention_fixture() {
        let l = parse_contention(&fixture("lock-contention-create-unlink-shared"));
        assert_eq!(l.len(), 6, "the header is skipped: {l:?}");
        assert_eq!(
            l[0],
            LockRow {
                contended: 2,
                total_wait_ns: 109_930,
                max_wait_ns: 60_160,
                avg_wait_ns: 54_960,
                kind: "rwsem:W".into(),
                caller: "__x64_sys_unlinkat+0x5d".into(),
            }
        );
        assert_eq!(l[2].kind, "spinlock");
    }

    #[test]
    fn durations() {
        assert_eq!(duration_ns("1.5", "ms"), Some(1_500_000));
        assert_eq!(duration_ns("2", "s"), Some(2_000_000_000));
        assert_eq!(duration_ns("x", "ms"), None);
        assert_eq!(duration_ns("1", "parsec"), None);
    }
}
