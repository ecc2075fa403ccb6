//! One boot of a guest under QEMU: the command line, the accelerator and
//! clock, the console and result channel as files, a time limit, and
//! QEMU tied to this process (PR_SET_PDEATHSIG) so it never outlives it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::channel::Transcript;
use super::init::{INIT_COMMAND, INIT_PATH, PROBE_PARAM};
use crate::sys;

pub(crate) const QEMU: &str = "qemu-system-x86_64";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Accel {
    Kvm,
    Tcg,
}

impl Accel {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// The guest's clock: the host's (real time) or QEMU's instruction
/// counter (`-icount shift=N`: each guest instruction takes 2^N ns of
/// virtual time; TCG only, one host thread runs every vCPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clock {
    Host,
    Icount(u32),
}

impl Clock {
    pub(crate) fn parse(s: &str) -> Result<Clock, String> {
        if s == "host" {
            return Ok(Clock::Host);
        }
        let shift = s.strip_prefix("icount:").ok_or_else(|| format!("`{s}`: give host or icount:SHIFT"))?;
        match shift.parse::<u32>() {
            // QEMU refuses shifts above 10 (icount_configure, MAX_ICOUNT_SHIFT).
            Ok(n) if n <= 10 => Ok(Clock::Icount(n)),
            _ => Err(format!("`{s}`: SHIFT is a whole number from 0 to 10 (2^SHIFT ns per instruction)")),
        }
    }

    pub(crate) fn label(self) -> String {
        match self {
            Clock::Host => "host".into(),
            Clock::Icount(n) => format!("icount:{n}"),
        }
    }
}

/// The virtual machine every row shares.
#[derive(Debug, Clone)]
pub(crate) struct Machine {
    pub accel: Accel,
    pub clock: Clock,
    pub memory_bytes: u64,
    pub cpus: u32,
    /// QEMU's `-cpu` model; `None`: `host` under KVM, `max` under TCG.
    pub cpu_model: Option<String>,
}

/// One boot.
#[derive(Clone)]
pub(crate) struct Boot<'a> {
    pub image: &'a Path,
    pub initramfs: &'a Path,
    /// `preempt=` on the kernel command line.
    pub preempt: Option<&'a str>,
    /// Report and power off without running the command.
    pub probe_only: bool,
    /// Where the console, channel and QEMU's own messages go.
    pub dir: PathBuf,
    pub timeout: Duration,
}

/// What a boot left.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub transcript: Transcript,
    /// The console's last lines (kernel messages, the command's output),
    /// or its oops to the end ([`console_excerpt`]).
    pub console_tail: Vec<String>,
    /// QEMU's own error output, trimmed.
    pub qemu_stderr: String,
    pub timed_out: bool,
    /// Stopped because the init never said hello within [`HELLO_TIMEOUT`].
    pub no_hello: bool,
    pub wall_seconds: f64,
}

/// How long a boot may take to reach dentrylab's init (its hello on the
/// channel) before it is stopped: a TCG boot takes seconds, an icount:7
/// boot about a minute.
pub(crate) const HELLO_TIMEOUT: Duration = Duration::from_secs(600);

pub(crate) const CONSOLE_TAIL_LINES: usize = 25;

/// The line a kernel's panic starts with.
pub(crate) const PANIC_LINE: &str = "Kernel panic - not syncing";

/// At most this many lines of a console that shows an oops or a panic:
/// from a few lines before the first report, so that its RIP and call
/// trace are kept, and the last [`CONSOLE_TAIL_LINES`], so that what the
/// guest said last is too.
pub(crate) const CONSOLE_OOPS_LINES: usize = 200;

/// What of a console a row keeps: from just before the first oops, BUG
/// or panic (the kernel's own report lines) to the end, at most
/// [`CONSOLE_OOPS_LINES`] with a line saying how many were left out in
/// the middle; with none, the last [`CONSOLE_TAIL_LINES`].
pub(crate) fn console_excerpt(console: &str) -> Vec<String> {
    const MARKS: [&str; 4] = [PANIC_LINE, "BUG:", "Oops:", "general protection fault"];
    let lines: Vec<String> = console.lines().map(|l| l.trim_end().to_string()).collect();
    let Some(first) = lines.iter().position(|l| MARKS.iter().any(|m| l.contains(m))) else {
        return lines[lines.len().saturating_sub(CONSOLE_TAIL_LINES)..].to_vec();
    };
    let from = first.saturating_sub(5);
    if lines.len() - from <= CONSOLE_OOPS_LINES {
        return lines[from..].to_vec();
    }
    let head = CONSOLE_OOPS_LINES - CONSOLE_TAIL_LINES - 1;
    let tail = lines.len() - CONSOLE_TAIL_LINES;
    let mut out = lines[from..from + head].to_vec();
    out.push(format!("[dentrylab vm: {} console lines left out]", tail - from - head));
    out.extend_from_slice(&lines[tail..]);
    out
}

/// QEMU's arguments for `boot` on `m`.
pub(crate) fn args(m: &Machine, b: &Boot) -> Vec<String> {
    // `no_timer_check`: skip check_timer()'s test of the IO-APIC timer
    // (arch/x86/kernel/apic/io_apic.c). Under TCG on a busy host the test's
    // few ticks can come late, and 6.1 then panicked with "IO-APIC + timer
    // doesn't work!" (docs/vm.md).
    let mut append = ["console=ttyS0", "quiet", "panic=-1", "no_timer_check", "rdinit=/dentrylab"].join(" ");
    if let Some(p) = b.preempt {
        append += &format!(" preempt={p}");
    }
    if b.probe_only {
        append += &format!(" {PROBE_PARAM}");
    }
    // Everything after `--` goes to init as its arguments (init/main.c).
    append += &format!(" -- {} {INIT_COMMAND}", crate::sys::INTERNAL_COMMAND);
    debug_assert_eq!(INIT_PATH, "/dentrylab");
    let mut a: Vec<String> = ["-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-monitor", "none"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (accel, cpu) = match m.accel {
        Accel::Kvm => ("kvm", "host"),
        Accel::Tcg => ("tcg", "max"),
    };
    a.extend(["-accel".into(), accel.into(), "-cpu".into(), m.cpu_model.clone().unwrap_or_else(|| cpu.into())]);
    if let Clock::Icount(shift) = m.clock {
        // sleep=off: when every vCPU idles, virtual time jumps to the next
        // timer instead of waiting for real time (docs/devel/tcg-icount.rst).
        a.extend(["-icount".into(), format!("shift={shift},sleep=off")]);
    }
    a.extend([
        "-smp".into(),
        m.cpus.to_string(),
        "-m".into(),
        format!("{}M", m.memory_bytes >> 20),
        "-kernel".into(),
        b.image.display().to_string(),
        "-initrd".into(),
        b.initramfs.display().to_string(),
        "-append".into(),
        append,
        "-serial".into(),
        format!("file:{}", b.dir.join("console.log").display()),
        "-serial".into(),
        format!("file:{}", b.dir.join("channel.log").display()),
    ]);
    a
}

/// Boots, waits for the guest to power off or for the time limit, and
/// gathers what it sent.
pub(crate) fn boot(m: &Machine, b: &Boot) -> Result<Outcome> {
    std::fs::create_dir_all(&b.dir).with_context(|| format!("cannot create {}", b.dir.display()))?;
    let stderr_path = b.dir.join("qemu.stderr");
    let stderr = std::fs::File::create(&stderr_path)?;
    let mut cmd = Command::new(QEMU);
    cmd.args(args(m, b)).stdin(Stdio::null()).stdout(Stdio::null()).stderr(stderr);
    let start = Instant::now();
    let mut child = sys::spawn_tied(&mut cmd)
        .with_context(|| format!("cannot start {QEMU} (install the qemu-system-x86 package)"))?;
    let mut timed_out = false;
    let mut no_hello = false;
    let mut hello_seen = false;
    let mut last_look = start;
    let hello_limit = HELLO_TIMEOUT.min(b.timeout);
    let _status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if !hello_seen && last_look.elapsed() > Duration::from_secs(2) {
            last_look = Instant::now();
            let channel = std::fs::read(b.dir.join("channel.log")).unwrap_or_default();
            hello_seen = Transcript::parse(&String::from_utf8_lossy(&channel)).hello.is_some();
            no_hello = !hello_seen && start.elapsed() > hello_limit;
        }
        if start.elapsed() > b.timeout || no_hello {
            timed_out = true;
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let wall_seconds = start.elapsed().as_secs_f64();
    let read =
        |n: &str| std::fs::read(b.dir.join(n)).map(|v| String::from_utf8_lossy(&v).into_owned()).unwrap_or_default();
    let console_tail = console_excerpt(&read("console.log"));
    Ok(Outcome {
        transcript: Transcript::parse(&read("channel.log")),
        console_tail,
        qemu_stderr: read("qemu.stderr").trim().to_string(),
        timed_out,
        no_hello,
        wall_seconds,
    })
}

/// Whether this process may use KVM (/dev/kvm opens read-write); why not.
pub(crate) fn kvm_device() -> Result<(), String> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .map(|_| ())
        .map_err(|e| format!("/dev/kvm: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_values_parse_and_bad_ones_are_refused() {
        assert_eq!(Clock::parse("host"), Ok(Clock::Host));
        assert_eq!(Clock::parse("icount:4"), Ok(Clock::Icount(4)));
        assert!(Clock::parse("icount:11").is_err());
        assert!(Clock::parse("icount").is_err());
        assert!(Clock::parse("tsc").is_err());
    }

    #[test]
    fn command_line_has_two_serial_ports_and_the_init() {
        let m = Machine { accel: Accel::Tcg, clock: Clock::Icount(4), memory_bytes: 2 << 30, cpus: 2, cpu_model: None };
        let b = Boot {
            image: Path::new("/k"),
            initramfs: Path::new("/i"),
            preempt: Some("full"),
            probe_only: false,
            dir: PathBuf::from("/d"),
            timeout: Duration::from_secs(1),
        };
        let a = args(&m, &b);
        let joined = a.join(" ");
        assert_eq!(a.iter().filter(|x| *x == "-serial").count(), 2);
        assert!(joined.contains("-icount shift=4,sleep=off"), "{joined}");
        assert!(joined.contains("-m 2048M") && joined.contains("-cpu max"), "{joined}");
        let append = &a[a.iter().position(|x| x == "-append").unwrap() + 1];
        assert!(append.contains("preempt=full") && append.ends_with("-- __internal __vm-init"), "{append}");
        assert!(append.contains(" no_timer_check "), "{append}");
    }

    #[test]
    fn a_console_that_oopsed_keeps_its_trace_and_a_quiet_one_its_tail() {
        let quiet: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let tail = console_excerpt(&quiet);
        assert_eq!(tail.len(), CONSOLE_TAIL_LINES);
        assert_eq!(tail.last().map(String::as_str), Some("line 99"));

        let mut oops: String = (0..40).map(|i| format!("boot {i}\n")).collect();
        oops += "BUG: kernel NULL pointer dereference, address: 0000000000000008\nRIP: 0010:foo+0x1/0x2\nCall Trace:\n";
        oops += &(0..60).map(|i| format!(" frame {i}\n")).collect::<String>();
        oops += "Kernel panic - not syncing: Fatal exception in interrupt\n";
        let kept = console_excerpt(&oops);
        assert_eq!(kept.first().map(String::as_str), Some("boot 35"), "{kept:?}");
        assert!(kept.iter().any(|l| l.starts_with("RIP: 0010:foo")), "{kept:?}");
        assert!(kept.last().is_some_and(|l| l.contains("Fatal exception")), "{kept:?}");

        let long: String = "Oops: 0000\n".to_string() + &(0..1000).map(|i| format!("x{i}\n")).collect::<String>();
        let kept = console_excerpt(&long);
        assert_eq!(kept.len(), CONSOLE_OOPS_LINES);
        assert_eq!(kept[0], "Oops: 0000");
        assert!(kept.contains(&"[dentrylab vm: 802 console lines left out]".to_string()), "{kept:?}");
        assert_eq!(kept.last().map(String::as_str), Some("x999"));
    }
}
