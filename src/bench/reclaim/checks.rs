//! What a sweep refuses before and while it runs: sizes past memory or past
//! the predicted 10 s stretch, kinds the filesystem cannot hold, flag
//! combinations that cannot work; and the notes said once up front.

use anyhow::{Result, bail};

use super::{options::MAX_PREDICTED_GAP_SECONDS, options::Options, repetition::Run};
use crate::analysis::fit;
use crate::bench::common::{MAX_MEMORY_SHARE, check_kind};
use crate::error::UsageError;
use crate::procfs::ProcRoot;
use crate::sandbox::FsType;
use crate::size::human;
use crate::sys;

/// What the chosen methods cannot do, said once up front.
pub(super) fn method_notes(opts: &Options) -> Vec<String> {
    let mut out = Vec::new();
    for m in &opts.methods {
        if m.lru_only() && opts.fs == FsType::Tmpfs {
            out.push(format!(
                "{}: tmpfs pins its dentries (they are never on the LRU), so {} frees none of them; \
                 use --fs ext4 or xfs to measure this path",
                m.name(),
                m.name()
            ));
        }
    }
    out.extend(opts.methods.iter().filter_map(|m| m.path().note(&opts.asked())));
    if opts.contend > 0 && opts.methods.iter().any(|m| !m.leaves_mounted()) {
        out.push(
            "umount and ns-exit detach the filesystem before freeing its dentries: from then on the contending \
             lookups walk to the empty mount point instead"
                .into(),
        );
    }
    out
}

/// `inotify` runs whose clean-up umount found far fewer negatives still
/// cached than were made: memory pressure shrank some before the walk, so
/// the walk covered at most what was left.
pub(super) fn walk_notes(runs: &[Run]) -> Vec<String> {
    runs.iter()
        .filter(|r| !r.method.frees())
        .filter_map(|r| {
            let left = r.left_for_umount?;
            let made = r.create.entries as i64;
            ((left as f64) < made as f64 * (1.0 - super::repetition::COUNT_TOLERANCE)).then(|| {
                format!(
                    "size {} rep {}: the clean-up umount found {left} of the {made} negatives still cached: the \
                     walk covered at most those, but the run is counted at its target",
                    human(r.target),
                    r.rep + 1
                )
            })
        })
        .collect()
}

/// The largest size that fits in [`MAX_MEMORY_SHARE`] of MemAvailable at
/// the measured bytes per dentry (the kind's estimate before a size ran).
/// `--sizes auto` never passes it, even with `--force`.
pub(super) fn memory_limit(opts: &Options, bpd: Option<f64>, proc: &ProcRoot) -> Result<u64> {
    let avail = crate::bench::common::memory_available(proc)?.bytes as f64;
    let bpd = bpd.unwrap_or(opts.kind.default_bytes_per_dentry() as f64).max(1.0);
    Ok((avail * MAX_MEMORY_SHARE / bpd) as u64)
}

/// Why `target` must not run, if it must not.
pub(super) fn refuse(
    opts: &Options,
    target: u64,
    bpd: Option<f64>,
    runs: &[Run],
    proc: &ProcRoot,
) -> Result<Option<String>> {
    if opts.force {
        return Ok(None);
    }
    let avail = crate::bench::common::memory_available(proc)?;
    let bpd_used = bpd.unwrap_or(opts.kind.default_bytes_per_dentry() as f64);
    let need = target as f64 * bpd_used;
    if need > avail.bytes as f64 * MAX_MEMORY_SHARE {
        return Ok(Some(format!(
            "it needs about {} ({bpd_used:.0} bytes per dentry{}), more than half of {}; pass --force to run it anyway",
            crate::size::bytes(need as u64),
            if bpd.is_some() { ", measured" } else { ", estimated" },
            avail.what
        )));
    }
    for &method in &opts.methods {
        let mine: Vec<&Run> = runs.iter().filter(|r| r.method == method).collect();
        let distinct: std::collections::BTreeSet<u64> = mine.iter().map(|r| r.target).collect();
        if distinct.len() < 2 {
            continue;
        }
        let pts: Vec<_> = mine.iter().map(|r| (r.fit_count(), r.probe.max_gap_seconds)).collect();
        if let Some(p) = fit::power(&pts) {
            let g = p.at(target as f64);
            if g > MAX_PREDICTED_GAP_SECONDS {
                return Ok(Some(format!(
                    "the smaller sizes predict {} would hold CPU {} for about {g:.1} s (over {MAX_PREDICTED_GAP_SECONDS:.0} s); pass --force to run it anyway",
                    method.name(),
                    opts.cpu
                )));
            }
        }
    }
    Ok(None)
}

/// Most `--contend` threads.
pub(crate) const MAX_CONTEND: usize = 256;

/// Rejects combinations that cannot work, before anything is created.
pub(crate) fn validate(opts: &Options) -> Result<()> {
    if opts.sizes.is_empty() {
        bail!(UsageError("--sizes: give at least one size".into()));
    }
    if opts.methods.is_empty() {
        bail!(UsageError("--method: give at least one reclaim method".into()));
    }
    check_kind(opts.kind, opts.fs)?;
    for m in &opts.methods {
        m.path().refuse_options(&opts.asked())?;
    }
    super::overlay::validate(opts)?;
    for m in &opts.methods {
        m.path().refuse_unpermitted(&opts.asked())?;
    }
    victims_check(opts)?;
    if opts.contend > 0 {
        let cpus = sys::allowed_cpus()?;
        if !cpus.iter().any(|&c| c != opts.cpu) {
            bail!(UsageError(format!(
                "--contend {}: the lookup threads run on the CPUs other than the reclaiming one (CPU {}), and \
                 this process may only use CPUs {cpus:?}",
                opts.contend, opts.cpu
            )));
        }
    }
    Ok(())
}

/// `--victims`: a CPU besides the reclaiming one, root for the victims
/// that make namespaces, mounts or cgroups, and the programs the container
/// and mariadb victims run. Checked before anything is made.
fn victims_check(opts: &Options) -> Result<()> {
    if opts.victims.is_empty() {
        return Ok(());
    }
    let cpus = sys::allowed_cpus()?;
    if !cpus.iter().any(|&c| c != opts.cpu) {
        bail!(UsageError(format!(
            "--victims: the victims run on the CPUs other than the reclaiming one (CPU {}), and this process may \
             only use CPUs {cpus:?}",
            opts.cpu
        )));
    }
    if let Some(v) = opts.victims.iter().find(|v| v.needs_root()).filter(|_| !sys::is_root()) {
        bail!(UsageError(format!(
            "--victims {}: {} needs root (a namespace, a mount or a cgroup of its own): run dentrylab with sudo, or \
             leave it out (stat, fork-exec and inotify run as any user)",
            v.name(),
            v.operation()
        )));
    }
    if opts.victims.contains(&crate::probe::victims::Victim::Container) {
        // Missing: a usage error naming how to build it.
        crate::bench::common::runsc::find(None)?;
    }
    if opts.victims.contains(&crate::probe::victims::Victim::Mariadb) {
        // Missing: a usage error naming how to install it.
        crate::bench::common::mariadb::locate_for("--victims mariadb")?;
    }
    Ok(())
}
