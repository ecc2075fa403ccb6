//! `/proc/sys/fs/dentry-state`: the kernel's own dentry counters.
//!
//! Six numbers: nr_dentry, nr_unused, age_limit, want_pages, nr_negative
//! (since 5.0; a dummy 0 before) and a dummy. World-readable and cheap.

use std::io::BufRead;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::num;

const FILE: &str = "dentry-state";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct DentryState {
    pub nr_dentry: u64,
    pub nr_unused: u64,
    pub age_limit: u64,
    pub want_pages: u64,
    /// Negative dentries; always 0 on kernels before 5.0.
    pub nr_negative: u64,
}

pub(crate) fn parse(mut r: impl BufRead) -> Result<DentryState> {
    let mut line = String::new();
    r.read_line(&mut line).with_context(|| format!("{FILE}: cannot read"))?;
    let mut it = line.split_whitespace();
    Ok(DentryState {
        nr_dentry: num(FILE, "nr_dentry", it.next())?,
        nr_unused: num(FILE, "nr_unused", it.next())?,
        age_limit: num(FILE, "age_limit", it.next())?,
        want_pages: num(FILE, "want_pages", it.next())?,
        nr_negative: num(FILE, "nr_negative", it.next())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::fixture_dir;

    #[test]
    fn parses_literal() {
        let s = parse("37109\t35698\t45\t0\t5936\t0\n".as_bytes()).unwrap();
        assert_eq!(s.nr_dentry, 37109);
        assert_eq!(s.nr_unused, 35698);
        assert_eq!(s.age_limit, 45);
        assert_eq!(s.nr_negative, 5936);
    }

    #[test]
    fn parses_fixtures_from_real_kernels() {
        for k in ["6.18", "5.10"] {
            let f = std::fs::File::open(fixture_dir(k).join("dentry-state")).unwrap();
            let s = parse(std::io::BufReader::new(f)).unwrap();
            assert!(s.nr_dentry >= s.nr_unused, "{k}: {s:?}");
            assert!(s.nr_dentry >= s.nr_negative, "{k}: {s:?}");
        }
    }

    #[test]
    fn names_the_bad_token() {
        let e = parse("12 x 45 0 0 0".as_bytes()).unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains("nr_unused") && msg.contains("\"x\""), "{msg}");
        let e = parse("12 13".as_bytes()).unwrap_err();
        assert!(format!("{e:#}").contains("missing field age_limit"));
    }
}
