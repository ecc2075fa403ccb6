//! One matrix row: a guest boot turned into a row (its result, kernel log,
//! or the one-line reason it has none), or the host run natively.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result};

use super::kernel::{Kernel, Spec};
use super::qemu::{self, Accel, Machine};
use super::{HostInfo, Options, Row};
use crate::procfs::ProcRoot;

pub(super) fn guest(
    o: &Options,
    m: &Machine,
    spec: &Spec,
    k: &Kernel,
    initrd: &Path,
    preempt: Option<&str>,
    dir: PathBuf,
) -> Result<Row> {
    let b = qemu::Boot { image: &k.image, initramfs: initrd, preempt, probe_only: false, dir, timeout: o.timeout };
    let (out, panics) = boot_past_early_panic(o, m, spec, &b)?;
    let t = &out.transcript;
    let hello = t.hello.as_ref();
    // An empty result is a command that failed after opening its JSON
    // file: no result, and the error is its exit status and last line.
    let result = match t.result.as_deref().filter(|r| !r.trim().is_empty()) {
        Some(text) => match serde_json::value::RawValue::from_string(text.trim().to_string()) {
            Ok(r) => Some(r),
            Err(e) => return Ok(failed(o, m, spec, k, preempt, &out, format!("the command's JSON is not whole: {e}"))),
        },
        None => None,
    };
    let error = if let Some(why) = &t.refused {
        Some(why.clone())
    } else if hello.is_none() {
        Some(boot_failure(spec, m, &out, super::asks_victims(&o.argv)))
    } else if !t.complete {
        Some(if out.timed_out {
            format!("no report within {} s (--timeout); the console's last line: {}", o.timeout.as_secs(), last(&out))
        } else {
            format!("the guest stopped before it finished; the console's last line: {}", last(&out))
        })
    } else if t.exit != Some(0) {
        Some(format!(
            "the command exited with status {}; the console's last line: {}",
            t.exit.unwrap_or(-1),
            last(&out)
        ))
    } else if result.is_none() {
        Some("the command wrote no JSON".into())
    } else {
        None
    };
    let mut row = base(o, m, spec, k, preempt, &out);
    if let Some(h) = hello {
        row.kernel_release = h.release.clone();
        row.preempt = h.preempt.clone();
        row.cpus = h.cpus;
        row.proc_stack = Some(h.proc_stack);
        if !h.module_errors.is_empty() {
            row.kernel_log.push(format!("dentrylab vm: modules not loaded: {}", h.module_errors.join("; ")));
        }
    }
    for (i, p) in panics.iter().enumerate() {
        row.kernel_log.push(format!(
            "dentrylab vm: boot {} panicked before dentrylab's init ({p}); this row is boot {}'s",
            i + 1,
            panics.len() + 1
        ));
    }
    row.kernel_log.extend(t.kernel_log.iter().cloned());
    row.result = result;
    if error.is_some() {
        row.console_tail = out.console_tail.clone();
    }
    row.error = error;
    Ok(row)
}

/// How many times a kernel that panics before dentrylab's init is booted
/// in all. Debian's 6.12 cloud kernel under TCG has panicked early in two
/// boots in a row in one CI run, and came up in the next ten (docs/vm.md).
const EARLY_PANIC_BOOTS: usize = 3;

/// Boots `b`; when the kernel panics before dentrylab's init said hello
/// (an early-boot panic: seen now and then of Debian's 6.12 cloud kernel
/// under TCG, docs/vm.md), boots it again, up to [`EARLY_PANIC_BOOTS`] in
/// all, and says so. Returns the outcome kept and the panic line of each
/// boot before it.
fn boot_past_early_panic(
    o: &Options,
    m: &Machine,
    spec: &Spec,
    b: &qemu::Boot,
) -> Result<(qemu::Outcome, Vec<String>)> {
    let keep = |b: &qemu::Boot| match &o.logs {
        Some(logs) => keep_logs(&b.dir, &logs.join(b.dir.file_name().unwrap_or_default())),
        None => Ok(()),
    };
    let mut panics = Vec::new();
    let mut boot = b.clone();
    loop {
        let out = qemu::boot(m, &boot)?;
        keep(&boot)?;
        if out.transcript.hello.is_some() || !early_panic(&out) || panics.len() + 1 == EARLY_PANIC_BOOTS {
            return Ok((out, panics));
        }
        let line = last(&out);
        eprintln!(
            "dentrylab vm: kernel {} panicked before dentrylab's init ({line}); booting it again ({} of {EARLY_PANIC_BOOTS})",
            spec.label(),
            panics.len() + 2
        );
        panics.push(line);
        let mut name = b.dir.file_name().unwrap_or_default().to_os_string();
        name.push(format!("-boot{}", panics.len() + 1));
        boot = qemu::Boot { dir: b.dir.with_file_name(name), ..b.clone() };
    }
}

/// The console holds the kernel's panic line and QEMU stopped by itself
/// (`panic=-1` with `-no-reboot`), not at a time limit.
fn early_panic(out: &qemu::Outcome) -> bool {
    !out.timed_out && out.console_tail.iter().any(|l| l.contains(qemu::PANIC_LINE))
}

fn keep_logs(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for f in ["console.log", "channel.log", "qemu.stderr"] {
        let _ = std::fs::copy(from.join(f), to.join(f));
    }
    Ok(())
}

/// A boot that never said hello: QEMU's own complaint, else the console's.
/// `victims`: the command has `--victims`, which needs two vCPUs.
fn boot_failure(spec: &Spec, m: &Machine, out: &qemu::Outcome, victims: bool) -> String {
    let what = match out.qemu_stderr.lines().rfind(|l| !l.trim().is_empty()) {
        Some(l) => format!("QEMU: {l}"),
        None if out.no_hello => format!(
            "it did not reach dentrylab's init within {} s; the console's last line: {}",
            out.wall_seconds.round(),
            last(out)
        ),
        None if out.timed_out => format!("no report before the time limit; the console's last line: {}", last(out)),
        None => format!("the guest never reported back; the console's last line: {}", last(out)),
    };
    let fix = match (m.accel, m.clock) {
        (Accel::Kvm, _) => "try --accel tcg",
        // Measured: Debian's 6.1 kernels stop at "x86: Booting SMP
        // configuration" under -icount with -smp 2 (any -cpu model, sleep on
        // or off) and boot with -smp 1 (docs/vm.md).
        (Accel::Tcg, qemu::Clock::Icount(_)) if m.cpus > 1 && out.no_hello && victims => {
            "under --clock icount some kernels (Debian's 6.1) stop while bringing up their second CPU, and \
             --victims needs two: run this kernel with --clock host"
        }
        (Accel::Tcg, qemu::Clock::Icount(_)) if m.cpus > 1 && out.no_hello => {
            "under --clock icount some kernels (Debian's 6.1) stop while bringing up their second CPU: try --cpus 1"
        }
        (Accel::Tcg, _) => "check the kernel image (x86-64 bzImage) or raise --memory",
    };
    format!("kernel {} did not boot under {}: {what} ({fix})", spec.label(), m.accel.name())
}

/// The console's last line; when the kernel panicked, its panic line
/// instead (what follows it, "Kernel Offset" and the like, says nothing).
fn last(out: &qemu::Outcome) -> String {
    let tail = &out.console_tail;
    if let Some(p) = tail.iter().rfind(|l| l.contains(qemu::PANIC_LINE)) {
        return p.clone();
    }
    tail.iter().rev().find(|l| !l.trim().is_empty()).cloned().unwrap_or_else(|| "(empty)".into())
}

fn base(o: &Options, m: &Machine, spec: &Spec, k: &Kernel, preempt: Option<&str>, out: &qemu::Outcome) -> Row {
    Row {
        kernel_spec: spec.label(),
        kernel_release: k.release.clone().unwrap_or_default(),
        preempt: preempt.unwrap_or("unknown").to_string(),
        preempt_requested: preempt.map(str::to_string),
        accel: m.accel.name().into(),
        clock: o.clock.label(),
        emulated: m.accel == Accel::Tcg,
        memory_bytes: m.memory_bytes,
        cpus: m.cpus as usize,
        wall_seconds: out.wall_seconds,
        proc_stack: None,
        result: None,
        kernel_log: vec![],
        error: None,
        console_tail: vec![],
        build: match spec {
            Spec::Built(b) => Some(b.tag.clone()),
            _ => None,
        },
        selftests: out.transcript.selftests.clone(),
    }
}

fn failed(
    o: &Options,
    m: &Machine,
    spec: &Spec,
    k: &Kernel,
    preempt: Option<&str>,
    out: &qemu::Outcome,
    e: String,
) -> Row {
    let mut r = base(o, m, spec, k, preempt, out);
    r.error = Some(e);
    r.console_tail = out.console_tail.clone();
    r
}

/// The command run natively: the reference row. Its output goes to
/// standard error, so standard output keeps the matrix alone.
pub(super) fn host(o: &Options, tmp: &Path, info: &HostInfo) -> Result<Row> {
    let json = tmp.join("host.json");
    let mut cmd = Command::new(crate::sys::SELF_EXE);
    cmd.args(&o.argv).arg("--json").arg(&json).stdin(Stdio::null());
    cmd.stdout(std::io::stderr());
    let start = Instant::now();
    let mut child = crate::sys::spawn_tied(&mut cmd).context("cannot run the command on the host")?;
    let status = child.wait()?;
    let wall_seconds = start.elapsed().as_secs_f64();
    let proc = ProcRoot::default();
    let version = nix::sys::utsname::uname().map(|u| u.version().to_string_lossy().into_owned()).unwrap_or_default();
    let (preempt, _) = crate::env::preemption_model(&proc, &version);
    let text = std::fs::read_to_string(&json).ok();
    let result = text.and_then(|t| serde_json::value::RawValue::from_string(t.trim().to_string()).ok());
    let error = match (status.success(), &result) {
        (true, Some(_)) => None,
        (true, None) => Some("the command wrote no JSON".into()),
        (false, _) => Some(format!("the command exited with {status} on the host")),
    };
    Ok(Row {
        kernel_spec: "host".into(),
        kernel_release: info.kernel.clone(),
        preempt,
        preempt_requested: None,
        accel: "host".into(),
        clock: "host".into(),
        emulated: false,
        memory_bytes: info.memory_bytes,
        cpus: info.cpus,
        wall_seconds,
        proc_stack: Some(Path::new("/proc/self/stack").exists()),
        result,
        kernel_log: vec![],
        error,
        console_tail: vec![],
        build: None,
        selftests: vec![],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stalled(no_hello: bool) -> qemu::Outcome {
        qemu::Outcome {
            transcript: Default::default(),
            console_tail: vec!["[    2.06] x86: Booting SMP configuration:".into()],
            qemu_stderr: String::new(),
            timed_out: true,
            no_hello,
            wall_seconds: 600.2,
        }
    }

    #[test]
    fn a_boot_that_never_reaches_init_says_where_it_stopped_and_what_to_try() {
        let spec = Spec::Package("linux-image-6.1.0-56-cloud-amd64".into());
        let m = |cpus, clock| Machine { accel: Accel::Tcg, clock, memory_bytes: 1 << 30, cpus, cpu_model: None };
        let e = boot_failure(&spec, &m(2, qemu::Clock::Icount(4)), &stalled(true), false);
        assert!(e.contains("did not reach dentrylab's init within 600 s"), "{e}");
        assert!(e.contains("Booting SMP configuration") && e.ends_with("try --cpus 1)"), "{e}");
        // One vCPU, or the host clock: the hint would be wrong.
        let e = boot_failure(&spec, &m(1, qemu::Clock::Icount(4)), &stalled(true), false);
        assert!(!e.contains("--cpus 1"), "{e}");
        let e = boot_failure(&spec, &m(2, qemu::Clock::Host), &stalled(false), false);
        assert!(e.contains("no report before the time limit") && !e.contains("--cpus 1"), "{e}");
        // --victims needs the second vCPU: the way out is the host clock.
        let e = boot_failure(&spec, &m(2, qemu::Clock::Icount(4)), &stalled(true), true);
        assert!(e.ends_with("run this kernel with --clock host)") && !e.contains("--cpus 1"), "{e}");
    }

    #[test]
    fn a_panicked_boot_quotes_the_panic_not_the_line_after_it() {
        let mut out = stalled(false);
        out.timed_out = false;
        out.console_tail = [
            "[    4.40] Kernel panic - not syncing: IO-APIC + timer doesn't work!",
            "[    4.41] CPU: 0 UID: 0 PID: 1 Comm: swapper/0",
            "[    4.45] Kernel Offset: 0x22200000 from 0xffffffff81000000",
            "",
        ]
        .map(String::from)
        .to_vec();
        let m =
            Machine { accel: Accel::Tcg, clock: qemu::Clock::Host, memory_bytes: 1 << 30, cpus: 2, cpu_model: None };
        let e = boot_failure(&Spec::Package("linux-image-cloud-amd64".into()), &m, &out, false);
        assert!(e.contains("console's last line: [    4.40] Kernel panic - not syncing: IO-APIC"), "{e}");
        assert!(early_panic(&out), "a panic before init, QEMU stopped by itself: boot once more");
        out.timed_out = true;
        assert!(!early_panic(&out), "stopped at the time limit: not booted again");
        out.console_tail.truncate(0);
        assert!(boot_failure(&Spec::Package("k".into()), &m, &out, false).contains("(empty)"));
        out.timed_out = false;
        assert!(!early_panic(&out), "no panic line: not booted again");
    }
}
