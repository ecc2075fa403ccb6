//! The pieces benchmarks share: [`Benchmark`] (what every benchmark is to
//! the command line), the memory a run may plan with and the refusal of
//! runs past it, the choice of CPUs, the kinds a filesystem can hold, and
//! the `--profile` recorder (`profile`), and the outside programs more
//! than one benchmark drives: gVisor's `runsc` ([`runsc`]: `gvisor`,
//! `reclaim --victims runsc`) and MariaDB ([`mariadb`]: `mitigate`,
//! `reclaim --victims mariadb`).
//!
//! In: the proc root, the options. Out: usage errors (exit 2), CPU
//! numbers, profiles. Imported by every benchmark folder; imports none of
//! them.

pub(crate) mod benchmark;
pub(crate) mod container;
pub mod mariadb;
pub(crate) mod profile;
pub mod runsc;

pub(crate) use benchmark::{Benchmark, Context, LockupEdge, OutputPaths, WithJson};

use anyhow::{Context as _, Result, bail};

use crate::error::UsageError;
use crate::procfs::ProcRoot;
use crate::sandbox::FsType;
use crate::size::human;
use crate::sys;
use crate::workload::Kind;

/// Refuse a run whose memory estimate exceeds this share of MemAvailable.
pub(crate) const MAX_MEMORY_SHARE: f64 = 0.5;

/// The memory a run may plan with: MemAvailable, or what this process's
/// memory cgroup leaves below its limit when that is less (dentries are
/// charged to the cgroup: in a pod the limit, not the node, stops a run).
pub(crate) struct Available {
    pub bytes: u64,
    /// What the figure is, for messages: "MemAvailable (23.1 GiB)".
    pub what: String,
}

pub(crate) fn memory_available(proc: &ProcRoot) -> Result<Available> {
    let avail = proc.meminfo()?.mem_available_bytes;
    let room = crate::procfs::cgroup::own_memory_controller(proc)
        .ok()
        .flatten()
        .and_then(|mc| crate::procfs::cgroup::headroom(&mc));
    let b = crate::size::bytes;
    Ok(match room {
        Some(h) if h.bytes < avail => Available {
            bytes: h.bytes,
            what: format!(
                "what the memory cgroup's limit leaves ({} below {} at {}; MemAvailable {})",
                b(h.bytes),
                b(h.limit),
                h.dir.display(),
                b(avail)
            ),
        },
        _ => Available { bytes: avail, what: format!("MemAvailable ({})", b(avail)) },
    })
}

/// Refuses work whose memory estimate `need` is over
/// [`MAX_MEMORY_SHARE`] of the memory available
/// ([`memory_available`]), unless `force`: bad input (exit 2), one line
/// saying what (`what`, `detail`) and how to fix it.
pub(crate) fn check_memory(what: &str, need: u64, detail: &str, fix: &str, force: bool, proc: &ProcRoot) -> Result<()> {
    if force {
        return Ok(());
    }
    let avail = memory_available(proc)?;
    if need as f64 > avail.bytes as f64 * MAX_MEMORY_SHARE {
        return Err(UsageError(format!(
            "{what} needs about {}{detail}, more than half of {}: {fix}",
            crate::size::bytes(need),
            avail.what
        ))
        .into());
    }
    Ok(())
}

/// Checks the sizes against memory before anything is created, with the
/// kind's conservative bytes-per-dentry. Bad input: exit 2.
pub(crate) fn preflight(sizes: &[u64], kind: Kind, force: bool, proc: &ProcRoot) -> Result<()> {
    let bpd = kind.default_bytes_per_dentry();
    for &n in sizes {
        check_memory(
            &format!("size {} of {} dentries", human(n), kind.name()),
            n.saturating_mul(bpd),
            &format!(" (≈{bpd} bytes each)"),
            "choose a smaller size, or pass --force",
            force,
            proc,
        )?;
    }
    Ok(())
}

/// Picks the reclaiming CPU and the control CPU from the allowed set.
pub(crate) fn choose_cpus(requested: Option<usize>) -> Result<(usize, Option<usize>)> {
    let cpus = sys::allowed_cpus()?;
    let cpu = match requested {
        Some(c) if cpus.contains(&c) => c,
        Some(c) => {
            return Err(UsageError(format!(
                "--cpu {c}: this process may only run on CPUs {cpus:?}; choose one of them"
            ))
            .into());
        }
        None => *cpus.first().context("no CPU is available to this process")?,
    };
    Ok((cpu, cpus.iter().copied().find(|&c| c != cpu)))
}

/// Rejects a kind the filesystem cannot hold.
pub(crate) fn check_kind(kind: Kind, fs: FsType) -> Result<()> {
    if kind.is_negative() && !fs.is_disk() {
        bail!(UsageError(format!(
            "--kind {} needs a disk filesystem: tmpfs deletes a negative dentry as soon as it is unused, so it \
             never keeps any (1M failed lookups on tmpfs leave none); add --fs ext4 or --fs xfs",
            kind.name()
        )));
    }
    Ok(())
}
