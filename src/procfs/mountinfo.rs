//! `/proc/self/mountinfo`: which device (`MAJOR:MINOR`, the superblock's
//! `s_dev`) is mounted where, with what root and filesystem type.

use std::io::BufRead;

use anyhow::{Context, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// `s_dev` as the kernel keeps it: `major << 20 | minor`.
    pub dev: u32,
    /// The directory of the filesystem that is mounted (`/` for the whole).
    pub root: String,
    pub mount_point: String,
    pub fs_type: String,
    pub source: String,
}

/// The kernel's `new_encode_dev`-free form: `MKDEV(ma, mi)` of
/// `include/linux/kdev_t.h` (`ma << 20 | mi`).
pub(crate) fn kernel_dev(major: u32, minor: u32) -> u32 {
    (major << 20) | (minor & 0xfffff)
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every mount of a mountinfo file.
pub fn parse(r: impl BufRead) -> Result<Vec<Mount>> {
    let mut out = Vec::new();
    for (i, line) in r.lines().enumerate() {
        let line = line.context("mountinfo: cannot read")?;
        let f: Vec<&str> = line.split(' ').collect();
        let bad = || format!("mountinfo: line {}: unexpected format {line:?}", i + 1);
        let sep = f.iter().position(|t| *t == "-").with_context(bad)?;
        if sep < 6 || f.len() < sep + 3 {
            anyhow::bail!(bad());
        }
        let (ma, mi) = f[2].split_once(':').with_context(bad)?;
        let (ma, mi): (u32, u32) = (ma.parse().with_context(bad)?, mi.parse().with_context(bad)?);
        out.push(Mount {
            dev: kernel_dev(ma, mi),
            root: unescape(f[3]),
            mount_point: unescape(f[4]),
            fs_type: f[sep + 1].to_string(),
            source: unescape(f[sep + 2]),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_roots_and_escaped_mount_points() {
        let t = "22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw\n\
                 30 25 7:0 /sub /mnt/a\\040b rw - ext4 /dev/loop0 rw\n";
        let m = parse(t.as_bytes()).unwrap();
        assert_eq!(m[0].dev, 21);
        assert_eq!((m[1].dev, m[1].root.as_str(), m[1].mount_point.as_str()), (7 << 20, "/sub", "/mnt/a b"));
        assert_eq!((m[1].fs_type.as_str(), m[1].source.as_str()), ("ext4", "/dev/loop0"));
    }

    #[test]
    fn a_short_line_is_an_error() {
        assert!(parse("1 2 3\n".as_bytes()).is_err());
    }
}
