//! The environment a result was measured in: kernel, CPUs, memory,
//! preemption model and the sysctls that govern dentry reclaim.

use serde::{Deserialize, Serialize};

use crate::procfs::ProcRoot;

/// The kernel's default (and boot-time) watchdog_thresh, seconds.
pub(crate) const DEFAULT_WATCHDOG_THRESH_SECONDS: u64 = 10;

/// The CPUs this process may use (`available_parallelism`: the affinity
/// mask and cgroup quota), at least 1: the default thread and worker
/// counts, and the `cpus` a result records.
pub(crate) fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Environment {
    pub kernel: String,
    pub kernel_version: String,
    pub hostname: String,
    pub cpus: usize,
    pub mem_total_bytes: u64,
    pub mem_available_bytes: u64,
    /// `none`, `voluntary`, `full`, `lazy` or `rt`, and where it was read.
    pub preemption: String,
    pub preemption_source: String,
    pub watchdog_thresh_seconds: Option<u64>,
    pub vfs_cache_pressure: Option<u64>,
    pub dentrylab_version: String,
}

impl Environment {
    pub(crate) fn capture(proc: &ProcRoot) -> Environment {
        let uts = nix::sys::utsname::uname().ok();
        let s = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
            uts.as_ref().map(|u| f(u).to_string_lossy().into_owned()).unwrap_or_default()
        };
        // Through the proc root first, so a fixture tree or a host /proc
        // mounted in a container describes its own kernel.
        let release = proc.read_line("sys/kernel/osrelease").unwrap_or_else(|_| s(|u| u.release()));
        let version = proc.read_line("sys/kernel/version").unwrap_or_else(|_| s(|u| u.version()));
        let mem = proc.meminfo().ok();
        let (preemption, preemption_source) = preemption_model(proc, &version);
        Environment {
            kernel: release,
            kernel_version: version,
            hostname: s(|u| u.nodename()),
            cpus: cpus(),
            mem_total_bytes: mem.map(|m| m.mem_total_bytes).unwrap_or(0),
            mem_available_bytes: mem.map(|m| m.mem_available_bytes).unwrap_or(0),
            preemption,
            preemption_source,
            watchdog_thresh_seconds: proc.sysctl_u64("sys/kernel/watchdog_thresh").ok(),
            vfs_cache_pressure: proc.sysctl_u64("sys/vm/vfs_cache_pressure").ok(),
            dentrylab_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// The preemption model in force, from the most direct source available:
/// debugfs `sched/preempt` (the live choice of a PREEMPT_DYNAMIC kernel),
/// the `preempt=` boot parameter, the kernel config, then `uname -v`.
/// debugfs and `/boot` are consulted only when `proc` is the live `/proc`.
pub(crate) fn preemption_model(proc: &ProcRoot, uname_version: &str) -> (String, String) {
    if proc.is_default()
        && let Ok(s) = std::fs::read_to_string("/sys/kernel/debug/sched/preempt")
        && let Some(m) = parse_debugfs_preempt(&s)
    {
        return (m, "/sys/kernel/debug/sched/preempt".into());
    }
    if let Ok(cmd) = std::fs::read_to_string(proc.path("cmdline"))
        && let Some(v) = cmd.split_whitespace().find_map(|w| w.strip_prefix("preempt="))
    {
        return (v.to_string(), "preempt= boot parameter".into());
    }
    if let Some(m) = config_preempt(proc) {
        return (m, "kernel config (the default of this build)".into());
    }
    let m = if uname_version.contains("PREEMPT_RT") {
        "rt"
    } else if uname_version.contains("PREEMPT_DYNAMIC") {
        "dynamic (model unknown)"
    } else if uname_version.contains("PREEMPT") {
        "full"
    } else {
        "none or voluntary"
    };
    (m.to_string(), "uname -v".into())
}

/// `none voluntary (full) lazy` → `full`.
pub(crate) fn parse_debugfs_preempt(s: &str) -> Option<String> {
    let open = s.find('(')?;
    let close = s[open..].find(')')? + open;
    Some(s[open + 1..close].to_string())
}

fn config_preempt(proc: &ProcRoot) -> Option<String> {
    let text = read_config(proc)?;
    for (key, name) in [
        ("CONFIG_PREEMPT_RT=y", "rt"),
        ("CONFIG_PREEMPT_NONE=y", "none"),
        ("CONFIG_PREEMPT_VOLUNTARY=y", "voluntary"),
        ("CONFIG_PREEMPT_LAZY=y", "lazy"),
        ("CONFIG_PREEMPT=y", "full"),
    ] {
        if text.lines().any(|l| l.trim() == key) {
            return Some(name.to_string());
        }
    }
    None
}

fn read_config(proc: &ProcRoot) -> Option<String> {
    let gz = std::fs::read(proc.path("config.gz")).ok();
    if let Some(gz) = gz {
        use std::io::Read;
        let mut s = String::new();
        if flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut s).is_ok() {
            return Some(s);
        }
    }
    if !proc.is_default() {
        return None;
    }
    let rel = nix::sys::utsname::uname().ok()?.release().to_string_lossy().into_owned();
    std::fs::read_to_string(format!("/boot/config-{rel}")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debugfs_format() {
        assert_eq!(parse_debugfs_preempt("none voluntary (full) lazy\n").as_deref(), Some("full"));
        assert_eq!(parse_debugfs_preempt("(none) voluntary full\n").as_deref(), Some("none"));
        assert_eq!(parse_debugfs_preempt("none voluntary full"), None);
    }
}
