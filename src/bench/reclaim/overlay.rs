//! `reclaim --fs overlay`: the dentries are created through an overlay
//! (lower: a directory on an ext4 or xfs loop filesystem; upper and work
//! directories on a filesystem of their own), the reclaim takes the overlay
//! (`umount` of it, or `ns-exit`: the death of the only namespace it was
//! mounted in, as a container's), and then the upper and lower filesystems
//! are unmounted in turn, counted and probed ([`crate::bench::layers`]):
//! what the container's teardown left in each layer, and which layer's
//! umount holds the CPU longest.

use anyhow::{Result, bail};

use super::methods::{Reclaimed, Staged};
use super::options::Options;
use crate::bench::layers::{self, StackTeardown};
use crate::error::UsageError;
use crate::procfs::ProcRoot;
use crate::stats::GapStats;

/// Rejects methods that do not apply to an overlay (exit 2).
pub(crate) fn validate(opts: &Options) -> Result<()> {
    if opts.overlay.is_none() {
        return Ok(());
    }
    if let Some(m) = opts.methods.iter().find(|m| !m.about().takes_overlay) {
        let (takes, plain) = super::methods::overlay_words();
        bail!(UsageError(format!(
            "--method {} with --fs overlay: an overlay's dentries are reclaimed by taking the overlay down; \
             use --method {takes} ({plain} are measured on plain ext4 or xfs)",
            m.name()
        )));
    }
    Ok(())
}

/// After the reclaim: unmounts the upper and lower filesystems (counted
/// and probed) and returns the stack's rows, the overlay's from the reclaim
/// itself. Only observed repetitions keep them; the others still unmount
/// the layers, so that nothing carries over.
pub(super) fn teardown(
    staged: &mut Staged,
    opts: &Options,
    observed: bool,
    proc: &ProcRoot,
    done: &Reclaimed,
    probe: &GapStats,
) -> Result<Option<StackTeardown>> {
    let (Some(stack), Some(rest)) = (opts.overlay, staged.unmount_layers(proc, opts.cpu)?) else {
        return Ok(None);
    };
    let Some(counted) = staged.overlay_counted().filter(|_| observed) else {
        return Ok(None);
    };
    let top = layers::counted_row("overlay", "overlay", counted, done.took.as_secs_f64(), Some(probe.max_gap_seconds));
    Ok(Some(StackTeardown { stack, cpu: opts.cpu, layers: std::iter::once(top).chain(rest).collect() }))
}
