//! `/proc/meminfo`: the memory figures dentrylab needs (in bytes).

use std::io::BufRead;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

const FILE: &str = "meminfo";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub(crate) struct MemInfo {
    pub mem_total_bytes: u64,
    pub mem_available_bytes: u64,
    pub slab_bytes: u64,
    pub s_reclaimable_bytes: u64,
    pub shmem_bytes: u64,
}

pub(crate) fn parse(r: impl BufRead) -> Result<MemInfo> {
    let mut m = MemInfo::default();
    let mut seen_total = false;
    let mut seen_avail = false;
    for line in r.lines() {
        let line = line.with_context(|| format!("{FILE}: cannot read"))?;
        let Some((key, rest)) = line.split_once(':') else { continue };
        let mut it = rest.split_whitespace();
        let Some(v) = it.next() else { continue };
        let v: u64 = v.parse().with_context(|| format!("{FILE}: field {key}: expected a number, found {v:?}"))?;
        let v = match it.next() {
            Some("kB") => v
                .checked_mul(1024)
                .with_context(|| format!("{FILE}: field {key}: {v} kB is more bytes than 64 bits hold"))?,
            None => v,
            Some(u) => bail!("{FILE}: field {key}: unknown unit {u:?}"),
        };
        match key {
            "MemTotal" => {
                m.mem_total_bytes = v;
                seen_total = true
            }
            "MemAvailable" => {
                m.mem_available_bytes = v;
                seen_avail = true
            }
            "Slab" => m.slab_bytes = v,
            "SReclaimable" => m.s_reclaimable_bytes = v,
            "Shmem" => m.shmem_bytes = v,
            _ => {}
        }
    }
    if !seen_total {
        bail!("{FILE}: no MemTotal line");
    }
    if !seen_avail {
        bail!("{FILE}: no MemAvailable line (kernel older than 3.14?)");
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::fixture_dir;

    #[test]
    fn parses_fixtures() {
        for k in ["6.18", "5.10"] {
            let f = std::fs::File::open(fixture_dir(k).join("meminfo")).unwrap();
            let m = parse(std::io::BufReader::new(f)).unwrap();
            assert!(m.mem_total_bytes > m.mem_available_bytes, "{k}");
            assert!(m.slab_bytes >= m.s_reclaimable_bytes, "{k}");
            assert_eq!(m.mem_total_bytes % 1024, 0);
        }
    }

    #[test]
    fn converts_kb_and_reports_missing() {
        let m = parse("MemTotal: 10 kB\nMemAvailable: 4 kB\nSlab: 2 kB\nHugePages_Total: 0\n".as_bytes()).unwrap();
        assert_eq!(m.mem_total_bytes, 10240);
        assert_eq!(m.mem_available_bytes, 4096);
        assert_eq!(m.slab_bytes, 2048);
        let e = parse("MemTotal: 10 kB\n".as_bytes()).unwrap_err();
        assert!(e.to_string().contains("MemAvailable"));
        let e = parse("MemTotal: ten kB\n".as_bytes()).unwrap_err();
        assert!(format!("{e:#}").contains("MemTotal"));
    }
}
