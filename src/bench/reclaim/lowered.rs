//! The thresholds a watchdog check changes, and their guardians:
//! `kernel.watchdog_thresh` (lowered) and RCU's CPU stall timeout (raised
//! when it would report first). Both come back however the run ends.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::sys::guardian::Guardian;

pub(crate) const SYSCTL: &str = "/proc/sys/kernel/watchdog_thresh";
/// The lowered threshold, guarded so that it comes back however the run ends.
pub(crate) struct Lowered {
    guardian: Guardian,
    pub original: u64,
    pub lowered: u64,
    /// RCU's CPU stall timeout, raised for the check when it would report
    /// a stretch before the soft-lockup watchdog could ([`raise_rcu_stall`]).
    pub rcu: Option<RcuStall>,
}

/// RCU's CPU stall timeout (seconds), as found and as set for the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RcuTimeout {
    pub original_seconds: u64,
    pub during_check_seconds: u64,
}

/// A raised RCU stall timeout and the guardian that puts it back.
pub(crate) struct RcuStall {
    guardian: Option<Guardian>,
    pub timeout: RcuTimeout,
}

/// RCU's CPU stall timeout (kernel/rcu/update.c, `rcu_cpu_stall_timeout`,
/// CONFIG_RCU_CPU_STALL_TIMEOUT at boot).
pub(crate) const RCU_STALL_TIMEOUT: &str = "/sys/module/rcupdate/parameters/rcu_cpu_stall_timeout";
/// The kernel clamps the timeout to 300 s (`rcu_jiffies_till_stall_check`).
pub(crate) const RCU_STALL_TIMEOUT_MAX: u64 = 300;

/// Lowers watchdog_thresh to `to` (the first of the thresholds to check)
/// and raises RCU's stall timeout to `rcu_needed` if it is shorter. Call
/// outside the sandbox.
pub(crate) fn lower(to: u64, rcu_needed: u64) -> Result<Lowered> {
    let (guardian, original_text) = Guardian::sysctl(SYSCTL, "kernel.watchdog_thresh")?;
    let original: u64 = original_text.parse().with_context(|| format!("{SYSCTL}: not a number"))?;
    std::fs::write(SYSCTL, format!("{to}\n")).with_context(|| {
        format!("cannot set {SYSCTL} to {to} (lowering the watchdog threshold needs root in the initial namespace)")
    })?;
    let rcu = raise_rcu_stall(rcu_needed)?;
    Ok(Lowered { guardian, original, lowered: to, rcu })
}

/// When RCU's CPU stall detector would report a stretch before the
/// soft-lockup watchdog can, raises its timeout for the check (guarded:
/// restored however the run ends). Its report calls
/// `print_cpu_stall_info()`, which calls `touch_nmi_watchdog()` and so
/// `touch_softlockup_watchdog()` (kernel/rcu/tree_stall.h): the soft-lockup
/// clock restarts, and a stretch between RCU's timeout and 2 × thresh past
/// it is reported as an RCU stall only. `None` when the timeout is already
/// long enough, or the kernel has no such parameter (no RCU stall detector).
fn raise_rcu_stall(needed: u64) -> Result<Option<RcuStall>> {
    let Ok(text) = std::fs::read_to_string(RCU_STALL_TIMEOUT) else { return Ok(None) };
    let original: u64 = text.trim().parse().with_context(|| format!("{RCU_STALL_TIMEOUT}: not a number"))?;
    if original >= needed {
        let timeout = RcuTimeout { original_seconds: original, during_check_seconds: original };
        return Ok(Some(RcuStall { guardian: None, timeout }));
    }
    let (guardian, _) = Guardian::sysctl(RCU_STALL_TIMEOUT, "rcupdate.rcu_cpu_stall_timeout")?;
    std::fs::write(RCU_STALL_TIMEOUT, format!("{needed}\n"))
        .with_context(|| format!("cannot set {RCU_STALL_TIMEOUT} to {needed}"))?;
    let timeout = RcuTimeout { original_seconds: original, during_check_seconds: needed };
    Ok(Some(RcuStall { guardian: Some(guardian), timeout }))
}

impl Lowered {
    /// Sets another lowered value (the guardian still restores the original).
    pub(crate) fn set(&mut self, to: u64) -> Result<()> {
        std::fs::write(SYSCTL, format!("{to}\n")).with_context(|| format!("cannot set {SYSCTL} to {to}"))?;
        self.lowered = to;
        Ok(())
    }

    /// RCU's stall timeout for the check, when the kernel has one.
    pub(crate) fn rcu_timeout(&self) -> Option<RcuTimeout> {
        self.rcu.as_ref().map(|r| r.timeout)
    }

    /// Puts the original values back now, then lets the guardians go.
    pub(crate) fn restore(self) -> Result<()> {
        let r = std::fs::write(SYSCTL, format!("{}\n", self.original))
            .with_context(|| format!("cannot restore {SYSCTL} to {}", self.original));
        self.guardian.finish();
        if let Some(RcuStall { guardian: Some(g), timeout }) = self.rcu {
            let back = std::fs::write(RCU_STALL_TIMEOUT, format!("{}\n", timeout.original_seconds))
                .with_context(|| format!("cannot restore {RCU_STALL_TIMEOUT} to {}", timeout.original_seconds));
            g.finish();
            back?;
        }
        r
    }
}
