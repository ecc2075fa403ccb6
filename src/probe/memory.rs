//! Read-only reads of the running kernel's memory, whichever way they are
//! made: through `/proc/kcore` (`kcore`) or by a BPF program's
//! `bpf_probe_read_kernel` (`census_bpf`). The census's names and
//! superblocks are read through this one interface.

pub(crate) use super::kcore::ReadError;

pub(crate) trait Memory {
    /// Fills `buf` from kernel address `vaddr`.
    fn read(&self, vaddr: u64, buf: &mut [u8]) -> Result<(), ReadError>;

    fn read_u64(&self, vaddr: u64) -> Result<u64, ReadError> {
        let mut b = [0u8; 8];
        self.read(vaddr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn read_u32(&self, vaddr: u64) -> Result<u32, ReadError> {
        let mut b = [0u8; 4];
        self.read(vaddr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// A NUL-terminated string of at most `max` bytes (shorter when it ends
    /// near the end of what can be read).
    fn read_cstr(&self, addr: u64, max: usize) -> Option<String> {
        let mut buf = vec![0u8; max];
        let mut n = max;
        while n > 0 && self.read(addr, &mut buf[..n]).is_err() {
            n /= 2;
        }
        let s = &buf[..n];
        let end = s.iter().position(|&b| b == 0)?;
        Some(String::from_utf8_lossy(&s[..end]).into_owned())
    }
}

impl Memory for super::kcore::Kcore {
    fn read(&self, vaddr: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        super::kcore::Kcore::read(self, vaddr, buf)
    }
}
