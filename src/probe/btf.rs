//! The layouts of the kernel structures the census reads, learnt from the
//! running kernel's own BTF (`/sys/kernel/btf/vmlinux`, parsed by the
//! `btf-rs` crate): no debug info, no offsets compiled in. A kernel whose
//! `struct dentry` moved a field (6.8 replaced `d_subdirs` with
//! `d_children`; 6.14 `d_iname` with `d_shortname`) is read right as long
//! as the fields below keep their names.

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use btf_rs::{Btf, BtfType, Struct, Type};
use serde::Serialize;

/// Byte offsets and sizes, each read from BTF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Layout {
    pub dentry_size: u64,
    /// `struct dentry`: `d_hash` (the `hlist_bl_node` on the hash chain),
    /// `d_parent`, `d_name` (a `struct qstr`), `d_inode`, `d_sb`.
    pub d_hash: u64,
    pub d_parent: u64,
    pub d_name: u64,
    pub d_inode: u64,
    pub d_sb: u64,
    /// `struct qstr`: `hash` and `len` (u32s inside its anonymous union) and
    /// `name`.
    pub qstr_hash: u64,
    pub qstr_len: u64,
    pub qstr_name: u64,
    /// `struct hlist_bl_node`: `next`.
    pub bl_next: u64,
    /// `struct super_block`: `s_list`, `s_dev`, `s_type`, `s_id` and its length.
    pub s_list: u64,
    pub s_dev: u64,
    pub s_type: u64,
    pub s_id: u64,
    pub s_id_len: u64,
    /// `struct file_system_type`: `name`.
    pub fs_name: u64,
}

impl Layout {
    /// The bytes of a dentry the walk reads: up to the end of the last field it uses.
    pub(crate) fn dentry_read_len(&self) -> u64 {
        [
            self.d_hash + self.bl_next + 8,
            self.d_parent + 8,
            self.d_name + self.qstr_name + 8,
            self.d_inode + 8,
            self.d_sb + 8,
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
    }

    pub(crate) fn load(path: &Path) -> Result<Layout> {
        let btf = Btf::from_file(path).with_context(|| format!("cannot read BTF from {}", path.display()))?;
        Layout::of(&btf)
    }

    #[cfg(test)]
    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<Layout> {
        Layout::of(&Btf::from_bytes(bytes).map_err(|e| anyhow!("not BTF: {e}"))?)
    }

    pub(crate) fn of(btf: &Btf) -> Result<Layout> {
        let dentry = structure(btf, "dentry")?;
        let qstr = structure(btf, "qstr")?;
        let bl = structure(btf, "hlist_bl_node")?;
        let sb = structure(btf, "super_block")?;
        let fst = structure(btf, "file_system_type")?;
        let (s_id, s_id_type) = member(btf, &sb, "super_block", "s_id")?;
        let s_id_len = match strip(btf, s_id_type)? {
            Type::Array(a) => a.len() as u64,
            t => bail!("BTF: super_block.s_id is a {}, not an array", t.name()),
        };
        let off = |s: &Struct, sname: &str, m: &str| member(btf, s, sname, m).map(|(o, _)| o);
        Ok(Layout {
            dentry_size: dentry.size() as u64,
            d_hash: off(&dentry, "dentry", "d_hash")?,
            d_parent: off(&dentry, "dentry", "d_parent")?,
            d_name: off(&dentry, "dentry", "d_name")?,
            d_inode: off(&dentry, "dentry", "d_inode")?,
            d_sb: off(&dentry, "dentry", "d_sb")?,
            qstr_hash: off(&qstr, "qstr", "hash")?,
            qstr_len: off(&qstr, "qstr", "len")?,
            qstr_name: off(&qstr, "qstr", "name")?,
            bl_next: off(&bl, "hlist_bl_node", "next")?,
            s_list: off(&sb, "super_block", "s_list")?,
            s_dev: off(&sb, "super_block", "s_dev")?,
            s_type: off(&sb, "super_block", "s_type")?,
            s_id,
            s_id_len,
            fs_name: off(&fst, "file_system_type", "name")?,
        })
    }
}

/// The struct of that name that has members (not a forward declaration).
fn structure(btf: &Btf, name: &str) -> Result<Struct> {
    let types = btf.resolve_types_by_name(name).map_err(|e| anyhow!("BTF has no struct {name}: {e}"))?;
    types
        .into_iter()
        .find_map(|t| match t {
            Type::Struct(s) if !s.members.is_empty() => Some(s),
            _ => None,
        })
        .ok_or_else(|| anyhow!("BTF has no struct {name}"))
}

/// Follows typedefs and qualifiers to the type they name.
fn strip(btf: &Btf, mut id: u32) -> Result<Type> {
    for _ in 0..32 {
        let t = btf.resolve_type_by_id(id).map_err(|e| anyhow!("BTF type {id}: {e}"))?;
        match &t {
            Type::Typedef(x) => id = x.get_type_id().ok_or_else(|| anyhow!("BTF typedef {id} names no type"))?,
            Type::Const(x) | Type::Volatile(x) | Type::Restrict(x) => {
                id = x.get_type_id().ok_or_else(|| anyhow!("BTF qualifier {id} names no type"))?
            }
            Type::TypeTag(x) => id = x.get_type_id().ok_or_else(|| anyhow!("BTF type tag {id} names no type"))?,
            _ => return Ok(t),
        }
    }
    bail!("BTF type {id}: a chain of more than 32 typedefs")
}

/// The byte offset and type id of member `name` of `s`, looking inside
/// anonymous struct and union members as C does.
fn member(btf: &Btf, s: &Struct, sname: &str, name: &str) -> Result<(u64, u32)> {
    find(btf, s, name, 0)?.ok_or_else(|| anyhow!("BTF: struct {sname} has no member {name}"))
}

fn find(btf: &Btf, s: &Struct, name: &str, depth: u32) -> Result<Option<(u64, u32)>> {
    if depth > 8 {
        return Ok(None);
    }
    for m in &s.members {
        let n = btf.resolve_name(m).unwrap_or_default();
        let id = m.get_type_id().ok_or_else(|| anyhow!("BTF member {n:?} has no type"))?;
        if n == name {
            if m.bitfield_size().is_some_and(|b| b != 0) || m.bit_offset() % 8 != 0 {
                bail!("BTF: member {name} is a bit field");
            }
            return Ok(Some((u64::from(m.bit_offset() / 8), id)));
        }
        if n.is_empty()
            && let Type::Struct(inner) | Type::Union(inner) = strip(btf, id)?
            && let Some((o, t)) = find(btf, &inner, name, depth + 1)?
        {
            return Ok(Some((u64::from(m.bit_offset() / 8) + o, t)));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        use std::io::Read;
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/btf").join(name);
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&p).unwrap()).read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn debian_6_12_layout_from_its_recorded_btf() {
        let l = Layout::from_bytes(&fixture("6.12.118+deb13-cloud-amd64.btf.gz")).unwrap();
        // struct dentry of include/linux/dcache.h at 6.12 (x86-64): d_flags
        // and d_seq (8 bytes), d_hash (16), d_parent, d_name (qstr: 8 bytes
        // of hash and len, then name), d_inode, d_iname[40], then
        // d_lockref, d_op, d_sb.
        assert_eq!((l.d_hash, l.d_parent, l.d_name, l.d_inode), (8, 24, 32, 48), "{l:?}");
        assert_eq!((l.qstr_hash, l.qstr_len, l.qstr_name, l.bl_next), (0, 4, 8, 0), "{l:?}");
        assert_eq!(l.d_sb, 104, "{l:?}");
        assert_eq!(l.dentry_size, 192, "{l:?}");
        assert_eq!(l.s_id_len, 32, "{l:?}");
        assert_eq!(l.fs_name, 0, "{l:?}");
        assert_eq!(l.dentry_read_len(), 112);
    }

    #[test]
    fn not_btf_is_an_error() {
        assert!(Layout::from_bytes(b"not btf at all").is_err());
    }
}
