//! The census walk inside the kernel: `src/bpf/census.bpf.c`, compiled by
//! clang at build time (`build.rs`), embedded here and loaded with libbpf-rs.
//! Its `dentrylab_walk` program walks a range of `dentry_hashtable`'s
//! buckets and tallies each dentry positive or negative under its
//! (`d_sb`, `d_parent`) in the `dirs` map; `dentrylab_read` copies up to
//! 4 KiB of kernel memory (`bpf_probe_read_kernel`) for the names and the
//! superblocks. Both are raw tracepoint programs never attached: they run
//! only when this process asks (`BPF_PROG_TEST_RUN`), each run under
//! `rcu_read_lock()`, which is what keeps a dentry on an RCU hash chain from
//! being freed while the walk reads it (`__d_lookup_rcu()` walks the same
//! way). One run holds RCU for at most [`MAX_STEPS`] steps (a bucket or a
//! dentry each) and stops at a chain's end; user space drives the walk run
//! by run and drains `dirs` when it nears [`MAX_DIRS`].
//!
//! The programs and maps belong to the file descriptors of this process:
//! nothing is pinned or attached, so they are gone when it exits, however
//! it exits. Nothing of the kernel's is written.
//!
//! The table's address and size: since 6.12 `d_hash()` reads them from
//! instructions patched at boot (`runtime_const_ptr()` and
//! `runtime_const_shift_right_32()`, `arch/x86/include/asm/runtime-const.h`),
//! whose sites are listed between `__start_runtime_ptr_dentry_hashtable`
//! and `__stop_…` (and `…_shift_d_hash_shift`) in `/proc/kallsyms`: each
//! entry is an `s32` offset from itself to the site, and the site holds the
//! 8-byte address (a `movabs` immediate) or the 1-byte shift (a `shr`
//! immediate). Older kernels keep them in the data symbols
//! `dentry_hashtable` and `d_hash_shift`, shown with `CONFIG_KALLSYMS_ALL`.

use std::collections::HashMap;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};

use super::bpf_prog::{Bpf, Stats};
use super::btf::Layout;
use super::census::{Backend, BpfWalk, PathCache, Superblock, Tally, Walker, path_of, superblock_at};
use super::memory::Memory;
use crate::procfs::kallsyms::Symbols;

/// Steps (buckets or dentries) of one run at most: `MAX_STEPS` in the program.
pub(crate) const MAX_STEPS: u64 = 1 << 20;
/// Entries of the `dirs` map: `MAX_DIRS` in the program.
pub(crate) const MAX_DIRS: u64 = 1 << 18;
/// Longest chain a run follows: `MAX_CHAIN` in the program.
const MAX_CHAIN: u64 = 4096;
/// The lowest kernel address on x86-64.
const KERNEL_MIN: u64 = 0xffff_8000_0000_0000;

/// The symbols the table is found by.
pub(crate) const SYMBOLS: [&str; 6] = [
    "__start_runtime_ptr_dentry_hashtable",
    "__stop_runtime_ptr_dentry_hashtable",
    "__start_runtime_shift_d_hash_shift",
    "__stop_runtime_shift_d_hash_shift",
    "dentry_hashtable",
    "d_hash_shift",
];

/// The sites listed between `start` and `stop` (4-byte entries, each the
/// offset from itself to its site).
pub(crate) fn patched_sites(mem: &dyn Memory, start: u64, stop: u64) -> Result<Vec<u64>> {
    if stop <= start || !(stop - start).is_multiple_of(4) || stop - start > 4096 {
        bail!("the runtime-constant section {start:#x}..{stop:#x} is not a list of 4-byte entries");
    }
    (start..stop)
        .step_by(4)
        .map(|e| {
            let v =
                mem.read_u32(e).map_err(|err| anyhow!("cannot read the runtime-constant entry at {e:#x} ({err:?})"))?;
            Ok(e.wrapping_add_signed(i64::from(v as i32)))
        })
        .collect()
}

/// The one value every site holds, or an error naming the disagreement.
fn agreed<T: PartialEq + Copy + std::fmt::LowerHex>(what: &str, values: &[T]) -> Result<T> {
    let first = *values.first().with_context(|| format!("no patched site of {what}"))?;
    if let Some(other) = values.iter().find(|&&v| v != first) {
        bail!("the {} patched sites of {what} disagree ({first:#x} and {other:#x})", values.len());
    }
    Ok(first)
}

/// The table's address and hash shift, and how they were found.
pub(crate) fn locate(mem: &dyn Memory, syms: &Symbols) -> Result<(u64, u32, &'static str)> {
    let s = |n: &str| syms.get(n);
    let (table, shift, how) = if let (Some(p0), Some(p1), Some(s0), Some(s1)) = (
        s("__start_runtime_ptr_dentry_hashtable"),
        s("__stop_runtime_ptr_dentry_hashtable"),
        s("__start_runtime_shift_d_hash_shift"),
        s("__stop_runtime_shift_d_hash_shift"),
    ) {
        let tables = patched_sites(mem, p0, p1)?
            .into_iter()
            .map(|a| mem.read_u64(a).map_err(|e| anyhow!("cannot read the patched address at {a:#x} ({e:?})")))
            .collect::<Result<Vec<u64>>>()?;
        let shifts = patched_sites(mem, s0, s1)?
            .into_iter()
            .map(|a| {
                let mut b = [0u8; 1];
                mem.read(a, &mut b).map_err(|e| anyhow!("cannot read the patched shift at {a:#x} ({e:?})"))?;
                Ok(u32::from(b[0]))
            })
            .collect::<Result<Vec<u32>>>()?;
        (agreed("dentry_hashtable", &tables)?, agreed("d_hash_shift", &shifts)?, "runtime_const")
    } else if let (Some(t), Some(sh)) = (s("dentry_hashtable"), s("d_hash_shift")) {
        let table = mem.read_u64(t).map_err(|e| anyhow!("cannot read dentry_hashtable at {t:#x} ({e:?})"))?;
        let shift = mem.read_u32(sh).map_err(|e| anyhow!("cannot read d_hash_shift at {sh:#x} ({e:?})"))?;
        (table, shift, "kallsyms")
    } else {
        bail!(
            "/proc/kallsyms has neither __start_runtime_ptr_dentry_hashtable (kernels since 6.12) nor \
             dentry_hashtable (CONFIG_KALLSYMS_ALL): the dentry hash table cannot be found"
        );
    };
    if !(4..32).contains(&shift) {
        bail!("d_hash_shift reads {shift}: not a hash shift (expected 4 to 31)");
    }
    if table < KERNEL_MIN || !table.is_multiple_of(8) {
        bail!("dentry_hashtable reads {table:#x}: not a kernel address");
    }
    Ok((table, shift, how))
}

/// The table, walked by the BPF program.
pub(crate) struct BpfCensus {
    bpf: Bpf,
    layout: Layout,
    table: u64,
    shift: u32,
    buckets: u64,
    superblocks: HashMap<u64, Superblock>,
    superblocks_rejected: u64,
    details: BpfWalk,
}

impl BpfCensus {
    /// Finds the table (through `syms`) and checks its first bucket can be read.
    pub(crate) fn open(bpf: Bpf, layout: Layout, syms: &Symbols) -> Result<BpfCensus> {
        let (table, shift, how) = locate(&bpf, syms)?;
        bpf.read_u64(table)
            .map_err(|e| anyhow!("cannot read dentry_hashtable's first bucket at {table:#x} ({e:?})"))?;
        Ok(BpfCensus {
            bpf,
            layout,
            table,
            shift,
            buckets: 1u64 << (32 - shift),
            superblocks: HashMap::new(),
            superblocks_rejected: 0,
            details: BpfWalk { located: how.into(), steps_bound: MAX_STEPS, ..BpfWalk::default() },
        })
    }

    /// Ready for another walk: the map emptied, the counters zeroed, the
    /// superblocks forgotten (a superblock's address may be reused).
    pub(crate) fn reset(&mut self) -> Result<()> {
        self.drain(&mut Tally::default())?;
        self.bpf.set_stats(&Stats::default())?;
        self.superblocks.clear();
        self.superblocks_rejected = 0;
        self.details = BpfWalk { located: self.details.located.clone(), steps_bound: MAX_STEPS, ..BpfWalk::default() };
        Ok(())
    }

    /// Moves every entry of `dirs` into the tally; checks it moved as many
    /// as the program created.
    fn drain(&mut self, tally: &mut Tally) -> Result<()> {
        let mut st = self.bpf.stats()?;
        let (moved, left) = self.bpf.drain_dirs(&mut |key, counts| {
            let c = tally.by_parent.entry(key).or_default();
            c[0] += counts[0];
            c[1] += counts[1];
        })?;
        if moved != st.created || left {
            bail!("draining the census's BPF map moved {moved} directories of the {} it held", st.created);
        }
        st.created = 0;
        self.bpf.set_stats(&st)?;
        self.details.drains += 1;
        Ok(())
    }
}

impl Walker for BpfCensus {
    fn backend(&self) -> Backend {
        Backend::Bpf
    }

    fn buckets(&self) -> u64 {
        self.buckets
    }

    fn walk(&mut self, first: u64, count: u64, tally: &mut Tally) -> Result<()> {
        let end = (first + count).min(self.buckets);
        let room = MAX_DIRS - MAX_CHAIN - 1;
        let mut next = first;
        let mut stuck = 0;
        while next < end {
            let t = Instant::now();
            let done = self.bpf.run("dentrylab_walk", [self.table, next, end - next, u64::from(self.shift), room])?;
            self.details.longest_run_seconds = self.details.longest_run_seconds.max(t.elapsed().as_secs_f64());
            next += u64::from(done);
            if next < end {
                // Stopped at a chain's end: the step bound, or the map nearly full.
                if self.bpf.stats()?.created >= room {
                    self.drain(tally)?;
                }
                stuck = if done == 0 { stuck + 1 } else { 0 };
                if stuck > 1 {
                    bail!("the census's BPF walk makes no progress at bucket {next}");
                }
            }
        }
        Ok(())
    }

    fn finish(&mut self, tally: &mut Tally) -> Result<()> {
        self.drain(tally)?;
        let st = self.bpf.stats()?;
        self.bpf.set_stats(&Stats::default())?;
        tally.walked += st.walked;
        tally.buckets += st.buckets;
        let r = &mut tally.rejected;
        r.bad_pointer += st.bad_pointer;
        r.unreadable += st.unreadable;
        r.chains_cut += st.chains_cut;
        r.wrong_bucket += st.wrong_bucket;
        self.details.runs += st.runs;
        self.details.max_steps_per_run = self.details.max_steps_per_run.max(st.max_steps);
        self.details.unrecorded += st.unrecorded;
        // The superblocks the walk met: a dentry's d_sb, read under RCU.
        let sbs: Vec<u64> = {
            let mut v: Vec<u64> = tally.by_parent.keys().map(|k| k.0).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        for sb in sbs {
            if self.superblocks.contains_key(&sb) {
                continue;
            }
            match superblock_at(&self.bpf, &self.layout, sb) {
                Some(s) => {
                    self.superblocks.insert(sb, s);
                }
                None => {
                    self.superblocks_rejected += 1;
                    let lost: u64 = tally.by_parent.iter().filter(|(k, _)| k.0 == sb).map(|(_, c)| c[0] + c[1]).sum();
                    tally.by_parent.retain(|k, _| k.0 != sb);
                    tally.walked -= lost.min(tally.walked);
                    tally.rejected.unknown_superblock += lost;
                }
            }
        }
        Ok(())
    }

    fn superblocks(&self) -> &HashMap<u64, Superblock> {
        &self.superblocks
    }

    fn superblocks_rejected(&self) -> u64 {
        self.superblocks_rejected
    }

    fn path(&self, sb: u64, d: u64, cache: &mut PathCache) -> Option<String> {
        path_of(&self.bpf, &self.layout, &|p| p >= KERNEL_MIN && p.is_multiple_of(8), sb, d, cache)
    }

    fn details(&self) -> Option<BpfWalk> {
        Some(self.details.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::memory::ReadError;

    /// Kernel memory as a map of byte addresses.
    struct Fake(HashMap<u64, u8>);

    impl Fake {
        fn put(&mut self, a: u64, bytes: &[u8]) {
            for (i, b) in bytes.iter().enumerate() {
                self.0.insert(a + i as u64, *b);
            }
        }
    }

    impl Memory for Fake {
        fn read(&self, vaddr: u64, buf: &mut [u8]) -> Result<(), ReadError> {
            for (i, b) in buf.iter_mut().enumerate() {
                *b = *self.0.get(&(vaddr + i as u64)).ok_or(ReadError::Unmapped)?;
            }
            Ok(())
        }
    }

    fn syms(pairs: &[(&str, u64)]) -> Symbols {
        let mut s = Symbols::default();
        for (n, a) in pairs {
            s.addresses.insert((*n).into(), *a);
        }
        s
    }

    /// Sites laid out as `.long 1b - 8 - .` and `.long 1b - 1 - .` lay them
    /// out: each entry the signed distance from itself to its immediate.
    #[test]
    fn the_table_is_read_from_the_patched_instructions() {
        let (p0, s0) = (0xffff_ffff_83b2_4730u64, 0xffff_ffff_83b2_4718u64);
        let table = 0xffff_8881_0000_0000u64;
        let mut m = Fake(HashMap::new());
        for (i, site) in [0xffff_ffff_816f_df80u64, 0xffff_ffff_816f_e010].iter().enumerate() {
            let e = p0 + 4 * i as u64;
            m.put(e, &((site.wrapping_sub(e)) as i64 as i32).to_le_bytes());
            m.put(*site, &table.to_le_bytes());
        }
        for (i, site) in [0xffff_ffff_816f_df90u64, 0xffff_ffff_816f_e020].iter().enumerate() {
            let e = s0 + 4 * i as u64;
            m.put(e, &((site.wrapping_sub(e)) as i64 as i32).to_le_bytes());
            m.put(*site, &[10]);
        }
        let s = syms(&[
            ("__start_runtime_ptr_dentry_hashtable", p0),
            ("__stop_runtime_ptr_dentry_hashtable", p0 + 8),
            ("__start_runtime_shift_d_hash_shift", s0),
            ("__stop_runtime_shift_d_hash_shift", s0 + 8),
        ]);
        assert_eq!(locate(&m, &s).unwrap(), (table, 10, "runtime_const"));
        // One site patched with another address: refused, naming both.
        m.put(0xffff_ffff_816f_e010, &(table + 8).to_le_bytes());
        let e = format!("{:#}", locate(&m, &s).unwrap_err());
        assert!(e.contains("2 patched sites of dentry_hashtable disagree"), "{e}");
    }

    #[test]
    fn older_kernels_read_the_data_symbols_and_none_is_one_line() {
        let mut m = Fake(HashMap::new());
        m.put(0xffff_ffff_8300_0000, &0xffff_8881_0000_0000u64.to_le_bytes());
        m.put(0xffff_ffff_8300_0010, &12u32.to_le_bytes());
        let s = syms(&[("dentry_hashtable", 0xffff_ffff_8300_0000), ("d_hash_shift", 0xffff_ffff_8300_0010)]);
        assert_eq!(locate(&m, &s).unwrap(), (0xffff_8881_0000_0000, 12, "kallsyms"));
        let e = format!("{:#}", locate(&m, &syms(&[])).unwrap_err());
        assert!(e.contains("CONFIG_KALLSYMS_ALL") && e.lines().count() == 1, "{e}");
        m.put(0xffff_ffff_8300_0010, &40u32.to_le_bytes());
        assert!(format!("{:#}", locate(&m, &s).unwrap_err()).contains("not a hash shift"));
    }
}
