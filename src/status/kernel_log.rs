//! `status --kernel-log [FILE]`: the soft lockups, RCU stalls and hung
//! tasks this node's kernel has already reported, and whether each one's
//! stack was in the dcache. Reads `/dev/kmsg` (the kernel's ring buffer:
//! root, or CAP_SYSLOG when `kernel.dmesg_restrict` is 1) or a saved log
//! (`journalctl -k`, `dmesg`, or `/dev/kmsg` records).

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::procfs::kernel_log::{self, Report};
use crate::procfs::kmsg::Kind;

pub(crate) const KMSG: &str = "/dev/kmsg";

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    Kmsg,
    File(PathBuf),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct KernelLog {
    pub source: String,
    pub reports: Vec<Report>,
    pub soft_lockups: usize,
    pub rcu_stalls: usize,
    pub hung_tasks: usize,
    /// Reports whose stack is in the dcache.
    pub in_dcache: usize,
}

/// Every record in the kernel's ring buffer now, one per line.
fn read_kmsg() -> Result<String> {
    let mut f =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(KMSG).with_context(|| {
            format!(
                "--kernel-log: cannot open {KMSG}: reading the kernel log needs root (or CAP_SYSLOG where \
                 kernel.dmesg_restrict=1); or give a saved log: --kernel-log FILE (e.g. from journalctl -k)"
            )
        })?;
    let mut out = String::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                out.push_str(&String::from_utf8_lossy(&buf[..n]));
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            // EPIPE: records were overwritten while reading; go on.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) => return Err(e).with_context(|| format!("--kernel-log: reading {KMSG}")),
        }
    }
    Ok(out)
}

pub(crate) fn read(src: &Source) -> Result<KernelLog> {
    let (name, text) = match src {
        Source::Kmsg => (KMSG.to_string(), read_kmsg()?),
        Source::File(p) => {
            let b = std::fs::read(p).with_context(|| format!("--kernel-log {}: cannot read", p.display()))?;
            (p.display().to_string(), String::from_utf8_lossy(&b).into_owned())
        }
    };
    let reports = kernel_log::parse(text.as_bytes())?;
    let count = |k: Kind| reports.iter().filter(|r| r.kind == k).count();
    Ok(KernelLog {
        source: name,
        soft_lockups: count(Kind::SoftLockup),
        rcu_stalls: count(Kind::RcuStall),
        hung_tasks: count(Kind::HungTask),
        in_dcache: reports.iter().filter(|r| r.dcache).count(),
        reports,
    })
}
