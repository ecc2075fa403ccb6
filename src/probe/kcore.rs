//! Read-only reads of the running kernel's memory through `/proc/kcore`.
//!
//! `/proc/kcore` is an ELF core file whose `PT_LOAD` program headers map
//! kernel virtual addresses (the kernel image, the direct map of RAM,
//! vmalloc, modules) to file offsets (`fs/proc/kcore.c`). The headers are
//! parsed with the `object` crate; a read is one `pread` (`FileExt::read_at`)
//! of the file offset that maps the address. Nothing is ever written, and a
//! read of an address no segment maps is refused before any system call.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use anyhow::{Context, Result, bail};
use object::Endianness;
use object::elf::{FileHeader64, PT_LOAD};
use object::read::elf::{FileHeader, ProgramHeader};

/// One `PT_LOAD` segment: `[vaddr, vaddr + size)` lives at `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment {
    pub vaddr: u64,
    pub size: u64,
    pub offset: u64,
}

/// Why a read was refused or failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadError {
    /// No segment maps the whole range.
    Unmapped,
    /// The kernel refused the read (errno) or returned fewer bytes.
    Failed,
}

pub(crate) struct Kcore {
    file: File,
    /// Sorted by `vaddr`.
    segments: Vec<Segment>,
}

/// The segments of an ELF core header held in `data` (at least the file
/// header and every program header).
pub(crate) fn segments_of(data: &[u8]) -> Result<Vec<Segment>> {
    let h = FileHeader64::<Endianness>::parse(data).map_err(|e| anyhow::anyhow!("not a 64-bit ELF core: {e}"))?;
    let endian = h.endian().map_err(|e| anyhow::anyhow!("{e}"))?;
    let phdrs = h.program_headers(endian, data).map_err(|e| anyhow::anyhow!("program headers: {e}"))?;
    let mut out: Vec<Segment> = phdrs
        .iter()
        .filter(|p| p.p_type(endian) == PT_LOAD)
        .map(|p| Segment { vaddr: p.p_vaddr(endian), size: p.p_filesz(endian), offset: p.p_offset(endian) })
        .filter(|s| s.size > 0)
        .collect();
    out.sort_by_key(|s| s.vaddr);
    Ok(out)
}

/// An ELF64 core header as `fs/proc/kcore.c` writes it on x86-64: the file
/// header, then one program header per `(p_type, offset, vaddr, size)`
/// (`PT_LOAD` segments map kernel addresses to file offsets). For tests: the
/// start of a made-up `/proc/kcore`.
pub fn core_header(program_headers: &[(u32, u64, u64, u64)]) -> Vec<u8> {
    let mut d = vec![0u8; 64];
    d[..4].copy_from_slice(b"\x7fELF");
    d[4] = 2; // ELFCLASS64
    d[5] = 1; // little endian
    d[6] = 1; // EV_CURRENT
    d[16..18].copy_from_slice(&4u16.to_le_bytes()); // ET_CORE
    d[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    d[20..24].copy_from_slice(&1u32.to_le_bytes());
    d[32..40].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
    d[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
    d[54..56].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
    let phnum = u16::try_from(program_headers.len()).expect("at most 65535 program headers");
    d[56..58].copy_from_slice(&phnum.to_le_bytes()); // e_phnum
    for &(ty, offset, vaddr, size) in program_headers {
        let mut p = vec![0u8; 56];
        p[..4].copy_from_slice(&ty.to_le_bytes());
        p[8..16].copy_from_slice(&offset.to_le_bytes());
        p[16..24].copy_from_slice(&vaddr.to_le_bytes());
        p[32..40].copy_from_slice(&size.to_le_bytes());
        p[40..48].copy_from_slice(&size.to_le_bytes());
        d.extend(p);
    }
    d
}

/// How many bytes of the file hold the ELF header and its program headers.
fn header_len(first: &[u8]) -> Result<u64> {
    let h = FileHeader64::<Endianness>::parse(first).map_err(|e| anyhow::anyhow!("not a 64-bit ELF core: {e}"))?;
    let endian = h.endian().map_err(|e| anyhow::anyhow!("{e}"))?;
    let phoff: u64 = h.e_phoff(endian);
    Ok(phoff + u64::from(h.e_phnum(endian)) * u64::from(h.e_phentsize(endian)))
}

impl Kcore {
    /// Opens `path` (`/proc/kcore`) read-only and reads its segments.
    pub(crate) fn open(path: &Path) -> Result<Kcore> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let mut first = vec![0u8; 64];
        file.read_exact_at(&mut first, 0).with_context(|| format!("cannot read {}'s ELF header", path.display()))?;
        let len = header_len(&first)?;
        if len > 16 << 20 {
            bail!("{}: program headers end at byte {len}: not a kcore header", path.display());
        }
        let mut data = vec![0u8; len as usize];
        file.read_exact_at(&mut data, 0)
            .with_context(|| format!("cannot read {}'s program headers", path.display()))?;
        let segments = segments_of(&data)?;
        if segments.is_empty() {
            bail!("{} maps no memory (no PT_LOAD segment)", path.display());
        }
        Ok(Kcore { file, segments })
    }

    /// The file offset of `[vaddr, vaddr + len)`, if one segment maps it whole.
    pub(crate) fn offset_of(&self, vaddr: u64, len: u64) -> Option<u64> {
        let i = self.segments.partition_point(|s| s.vaddr <= vaddr);
        let s = self.segments.get(i.checked_sub(1)?)?;
        let end = vaddr.checked_add(len)?;
        (end <= s.vaddr + s.size).then(|| s.offset + (vaddr - s.vaddr))
    }

    /// Whether some segment maps `vaddr`.
    pub(crate) fn maps(&self, vaddr: u64, len: u64) -> bool {
        self.offset_of(vaddr, len).is_some()
    }

    /// Fills `buf` from kernel address `vaddr`.
    pub(crate) fn read(&self, vaddr: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let off = self.offset_of(vaddr, buf.len() as u64).ok_or(ReadError::Unmapped)?;
        match self.file.read_at(buf, off) {
            Ok(n) if n == buf.len() => Ok(()),
            _ => Err(ReadError::Failed),
        }
    }

    pub(crate) fn read_u64(&self, vaddr: u64) -> Result<u64, ReadError> {
        let mut b = [0u8; 8];
        self.read(vaddr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    pub(crate) fn read_u32(&self, vaddr: u64) -> Result<u32, ReadError> {
        let mut b = [0u8; 4];
        self.read(vaddr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two PT_LOAD segments and a PT_NOTE, as `fs/proc/kcore.c` lays them out.
    fn three_segments() -> Vec<u8> {
        core_header(&[
            (object::elf::PT_NOTE.0, 0x1000, 0, 0x100),
            (PT_LOAD.0, 0x2000_0000, 0xffff_8880_0000_0000, 0x1000_0000),
            (PT_LOAD.0, 0x1000_0000, 0xffff_ffff_8100_0000, 0x200_0000),
        ])
    }

    #[test]
    fn load_segments_map_addresses_to_offsets() {
        let d = three_segments();
        assert_eq!(header_len(&d[..64]).unwrap(), 64 + 3 * 56);
        let segs = segments_of(&d).unwrap();
        assert_eq!(segs.len(), 2);
        assert_eq!(segs[0].vaddr, 0xffff_8880_0000_0000);
        let k = Kcore { file: File::open("/dev/null").unwrap(), segments: segs };
        assert_eq!(k.offset_of(0xffff_8880_0000_0010, 8), Some(0x2000_0010));
        assert_eq!(k.offset_of(0xffff_ffff_8100_0100, 8), Some(0x1000_0100));
        // The end of a segment, a range crossing it, and an unmapped address.
        assert_eq!(k.offset_of(0xffff_8880_0fff_fff8, 8), Some(0x2fff_fff8));
        assert_eq!(k.offset_of(0xffff_8880_0fff_fffc, 8), None);
        assert_eq!(k.offset_of(0x1000, 8), None);
        assert_eq!(k.read_u64(0x1000), Err(ReadError::Unmapped));
        // /dev/null gives no bytes: a mapped read that comes back short fails.
        assert_eq!(k.read_u64(0xffff_8880_0000_0010), Err(ReadError::Failed));
    }

    #[test]
    fn not_an_elf_core_is_an_error() {
        assert!(segments_of(&[0u8; 128]).is_err());
    }
}
