//! `/proc/kallsyms`: the addresses of the kernel's symbols, one per line
//! (`ffffffff83a0b1c8 b dentry_hashtable`, a module's symbols followed by
//! `[module]`).
//!
//! Addresses are shown to root only while `kernel.kptr_restrict` allows it
//! (0, or 1 with CAP_SYSLOG); otherwise every address reads as zero, which
//! [`Symbols::hidden`] reports.

use std::collections::BTreeMap;
use std::io::BufRead;

use anyhow::{Context, Result};

/// The addresses of the wanted symbols of the kernel image (module symbols
/// are skipped), and whether every address read was zero.
#[derive(Debug, Default, Clone)]
pub(crate) struct Symbols {
    pub addresses: BTreeMap<String, u64>,
    /// Lines read, and how many of them had a non-zero address.
    pub lines: u64,
    pub nonzero: u64,
}

impl Symbols {
    /// Every address was zero: `kptr_restrict` hides them from this reader.
    pub(crate) fn hidden(&self) -> bool {
        self.lines > 0 && self.nonzero == 0
    }

    pub(crate) fn get(&self, name: &str) -> Option<u64> {
        self.addresses.get(name).copied()
    }
}

/// Reads the lines of `r`, keeping the first address of each name in
/// `wanted` that belongs to the kernel image (not to a module).
pub(crate) fn parse(r: impl BufRead, wanted: &[&str]) -> Result<Symbols> {
    let mut s = Symbols::default();
    for (i, line) in r.lines().enumerate() {
        let line = line.context("/proc/kallsyms: cannot read")?;
        let mut it = line.split_whitespace();
        let (Some(addr), Some(_kind), Some(name)) = (it.next(), it.next(), it.next()) else {
            anyhow::bail!("/proc/kallsyms: line {}: expected `ADDRESS TYPE NAME`, found {line:?}", i + 1);
        };
        let addr = u64::from_str_radix(addr, 16)
            .with_context(|| format!("/proc/kallsyms: line {}: {addr:?} is not a hexadecimal address", i + 1))?;
        s.lines += 1;
        if addr != 0 {
            s.nonzero += 1;
        }
        if it.next().is_some() {
            continue; // `[module]`
        }
        if wanted.contains(&name) && !s.addresses.contains_key(name) {
            s.addresses.insert(name.to_string(), addr);
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "ffffffff81000000 T _text\n\
                        ffffffff83a0b1c8 b dentry_hashtable\n\
                        ffffffff83a0b1d0 b d_hash_shift\n\
                        ffffffffc0a00010 t dentry_hashtable\t[fake]\n\
                        ffffffff8299f0a0 d super_blocks\n";

    #[test]
    fn wanted_symbols_of_the_image_are_found_and_modules_skipped() {
        let s = parse(TEXT.as_bytes(), &["dentry_hashtable", "super_blocks", "absent"]).unwrap();
        assert_eq!(s.get("dentry_hashtable"), Some(0xffffffff83a0b1c8));
        assert_eq!(s.get("super_blocks"), Some(0xffffffff8299f0a0));
        assert_eq!(s.get("absent"), None);
        assert!(!s.hidden());
    }

    #[test]
    fn all_zero_addresses_are_hidden() {
        let t = "0000000000000000 T _text\n0000000000000000 b dentry_hashtable\n";
        let s = parse(t.as_bytes(), &["dentry_hashtable"]).unwrap();
        assert!(s.hidden());
        assert_eq!(s.get("dentry_hashtable"), Some(0));
    }

    #[test]
    fn a_bad_line_names_its_number() {
        let e = parse("ffffffff81000000 T _text\nzz T x\n".as_bytes(), &[]).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("zz"), "{e}");
    }
}
