//! `reclaim --profile`: perf samples the reclaiming CPU with call graphs
//! while the latency probe runs, on the probe's clock (perf's
//! `-k CLOCK_MONOTONIC`), so the samples inside the probe's longest gap
//! name the code that held the CPU then (folded by `analysis::folded`).
//!
//! perf records the whole CPU (`-C`), not one task: whatever held the CPU
//! during the gap is in the samples (the reclaiming task, a kworker, or
//! another process on a busy machine). perf itself is moved off that CPU.
//! What keeps it from working here (no perf, not allowed to sample a CPU,
//! kernel symbols hidden) is said in one line and the run goes on without
//! it; a stack is never guessed.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::perf::{self, Attached, PERF};
use crate::sys;

/// The fields `perf script` prints for the folding:
/// `perf script -F comm,tid,time,ip,sym,dso --ns`.
pub(crate) const SCRIPT_FIELDS: &str = "comm,tid,time,ip,sym,dso";

/// Samples per second on the reclaiming CPU (perf's own default rate;
/// `cpu-clock` is a software timer, so no hardware PMU is needed).
pub(crate) const FREQUENCY_HZ: u32 = 4000;

/// Whether perf can sample `cpu` with kernel call graphs here: Err is the
/// one line that says why not.
pub(crate) fn check(cpu: usize, scratch: &Path) -> Result<(), String> {
    if let Some(why) = kernel_symbols_hidden(Path::new("/proc/kallsyms")) {
        return Err(why);
    }
    let out = scratch.join("profile-check.data");
    let cpu_arg = cpu.to_string();
    let r = Command::new(PERF)
        .args(record_args(&cpu_arg))
        .arg("-o")
        .arg(&out)
        // A workload every system has: perf itself (`/proc/self/exe` in the
        // child perf forks), not `true` (a `vm` guest has none) nor this
        // binary's path (hidden under the sandbox's /tmp when it lives there).
        .args(["--", "/proc/self/exe", "--version"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    let _ = std::fs::remove_file(&out);
    match r {
        Err(e) => Err(format!("cannot run {PERF} ({e}): install it (Debian: linux-perf)")),
        Ok(o) if !o.status.success() => {
            let err = String::from_utf8_lossy(&o.stderr);
            let status = format!("no message, {}", o.status);
            let line = err.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or(&status);
            Err(format!(
                "{PERF} cannot sample CPU {cpu} here: {line} (sampling a CPU needs root, or kernel.perf_event_paranoid ≤ 0)"
            ))
        }
        Ok(_) => Ok(()),
    }
}

/// Why `kallsyms` names no kernel address, if it names none (read as this
/// process: kernel.kptr_restrict shows zeros to those it hides them from).
pub(crate) fn kernel_symbols_hidden(kallsyms: &Path) -> Option<String> {
    use std::io::BufRead;
    let f = match std::fs::File::open(kallsyms) {
        Ok(f) => f,
        Err(e) => return Some(format!("kernel symbols are not readable ({}: {e})", kallsyms.display())),
    };
    // Hidden addresses read as zeros; but a kernel with
    // CONFIG_KALLSYMS_ABSOLUTE_PERCPU lists its per-CPU symbols first, at
    // absolute addresses from 0 (Debian's 6.12: `0000000000000000 A
    // fixed_percpu_data`), so look past them.
    let shown = std::io::BufReader::new(f)
        .lines()
        .take(5000)
        .map_while(Result::ok)
        .any(|l| l.split_whitespace().next().is_some_and(|a| !a.is_empty() && a.bytes().any(|b| b != b'0')));
    if !shown {
        let restrict = std::fs::read_to_string("/proc/sys/kernel/kptr_restrict").unwrap_or_default();
        return Some(format!(
            "kernel symbols are hidden from this process (kernel.kptr_restrict = {}; run as root, or with kptr_restrict 0)",
            restrict.trim()
        ));
    }
    None
}

/// `perf record` on one CPU, every task on it, kernel and user call
/// chains, timestamps on CLOCK_MONOTONIC.
fn record_args(cpu: &str) -> [&str; 10] {
    ["record", "-e", "cpu-clock", "-F", FREQ, "-g", "-k", "CLOCK_MONOTONIC", "-C", cpu]
}
const FREQ: &str = "4000";

/// perf recording one CPU, started (and acknowledged) before the probe.
pub(crate) struct Recorder {
    perf: Attached,
}

impl Recorder {
    /// Starts perf on `cpu` and moves it onto the `others` CPUs (when there
    /// are any), so it does not run where it samples.
    pub(crate) fn start(cpu: usize, others: &[usize], scratch: &Path, tag: &str) -> Result<Recorder> {
        let cpu_arg = cpu.to_string();
        let args = record_args(&cpu_arg);
        let mut a = perf::spawn_controlled(&scratch.join(format!("profile-{tag}")), &args[..8], &args[8..])?;
        if !others.is_empty() {
            sys::set_process_affinity(a.child.id(), others)?;
        }
        perf::command(&mut a, "enable").context("perf record did not start")?;
        Ok(Recorder { perf: a })
    }

    /// Stops perf and returns its samples as `perf script -F`
    /// [`SCRIPT_FIELDS`] `--ns` text.
    pub(crate) fn finish(self) -> Result<String> {
        let data = perf::stop(self.perf)?;
        let text = script(&data);
        let _ = std::fs::remove_file(&data);
        text
    }
}

fn script(data: &Path) -> Result<String> {
    let out = Command::new(PERF)
        .args(["script", "-F", SCRIPT_FIELDS, "--ns", "-i"])
        .arg(data)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("cannot run {PERF} script"))?;
    if !out.status.success() {
        bail!("{PERF} script failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    String::from_utf8(out.stdout).context("perf script wrote something that is not UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_symbols_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("kallsyms");
        std::fs::write(&p, "0000000000000000 T _text\n").unwrap();
        assert!(kernel_symbols_hidden(&p).unwrap().contains("kptr_restrict"));
        std::fs::write(&p, "ffffffff81000000 T _text\n").unwrap();
        assert!(kernel_symbols_hidden(&p).is_none());
        // Per-CPU symbols at absolute addresses from 0 come first on some kernels.
        std::fs::write(&p, "0000000000000000 A fixed_percpu_data\n0000000000001000 A cpu_debug_store\n").unwrap();
        assert!(kernel_symbols_hidden(&p).is_none());
        std::fs::write(&p, "0000000000000000 A fixed_percpu_data\n0000000000000000 T _text\n").unwrap();
        assert!(kernel_symbols_hidden(&p).is_some());
        assert!(kernel_symbols_hidden(&dir.path().join("none")).unwrap().contains("not readable"));
        assert_eq!(FREQ.parse::<u32>().unwrap(), FREQUENCY_HZ);
    }
}
