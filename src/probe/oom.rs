//! The kernel's OOM reports logged during a run: `/dev/kmsg` is opened and
//! moved to its end when the run starts ([`LogMark::now`]), and what was
//! logged since is read when the run ends. Only records the kernel logged
//! after the mark are read (the kmsg sequence, not a guess of the clock),
//! and of those only the reports of the run's own memory cgroup.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;

use crate::procfs::oom::{OomReport, parse_reports};

/// Most bytes read after a mark (a report is ~200 records of < 200 bytes).
const MAX_READ: usize = 8 << 20;

/// A place in the kernel log.
pub(crate) struct LogMark {
    file: Result<File, String>,
}

impl LogMark {
    /// The end of the log now. Never fails: when `/dev/kmsg` cannot be
    /// read, [`reports_of`](Self::reports_of) says why.
    pub(crate) fn now() -> LogMark {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .and_then(|mut f| f.seek(SeekFrom::End(0)).map(|_| f))
            .map_err(|e| format!("cannot read /dev/kmsg ({e})"));
        LogMark { file }
    }

    /// Every record logged since the mark, one `PRIO,SEQ,USEC,FLAGS;message` line each.
    pub(crate) fn read_since(&mut self) -> Result<String, String> {
        let f = self.file.as_mut().map_err(|e| e.clone())?;
        let mut out = String::new();
        let mut buf = vec![0u8; 8192];
        while out.len() < MAX_READ {
            match f.read(&mut buf) {
                Ok(0) => break,
                // One read is one record; its dictionary lines start with a space.
                Ok(n) => {
                    let rec = String::from_utf8_lossy(&buf[..n]);
                    if let Some(line) = rec.lines().next() {
                        out.push_str(line);
                        out.push('\n');
                    }
                }
                // EPIPE: records were overwritten before they were read.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(format!("cannot read /dev/kmsg: {e}")),
            }
        }
        Ok(out)
    }

    /// The OOM reports logged since the mark for the memory cgroup whose
    /// directory is named `cgroup` (the kernel prints its whole path).
    pub(crate) fn reports_of(&mut self, cgroup: &str) -> Result<Vec<OomReport>, String> {
        let text = self.read_since()?;
        let suffix = format!("/{cgroup}");
        Ok(parse_reports(&text)
            .into_iter()
            .filter(|r| r.memcg.as_deref().is_some_and(|m| m.ends_with(&suffix)))
            .collect())
    }
}
