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
//! way). It reads the bucket heads [`BATCH`] at a time (one
//! `bpf_probe_read_kernel` of 512 bytes) and passes over the empty ones
//! without a helper call; a batch it cannot read it reads head by head, so
//! each unreadable bucket is counted. It walks up to [`LANES`] chains side
//! by side: each step copies the next dentry of every chain before counting
//! any, so their cache misses overlap. It counts each dentry in a cache of
//! [`CACHE`] directories before the map (a cached directory costs no map
//! lookup). One run holds RCU for at most [`MAX_STEPS`] steps (a dentry
//! each, or a look through the batch that found none), stops with every
//! chain ended and adds its cached directories to `dirs` (a map update
//! each at most); user space drives the walk run by run and drains `dirs`
//! when it nears [`MAX_DIRS`].
//!
//! The programs and maps belong to the file descriptors of this process:
//! nothing is pinned or attached, so they are gone when it exits, however
//! it exits. Nothing of the kernel's is written.
//!
//! The table's address and size: since 6.12 `d_hash()` reads them from
//! instructions patched at boot (`runtime_const_ptr()`,
//! `arch/x86/include/asm/runtime-const.h`), and the sections that list the
//! patched sites are init memory, freed after boot. So they are found from
//! fresh dentries ([`vote`]): a dentry just hashed is first on its chain,
//! and its `d_hash.pprev` is its bucket's address. Kernels that show the
//! data symbols `dentry_hashtable` and `d_hash_shift` (`CONFIG_KALLSYMS_ALL`)
//! are read there.

use std::collections::HashMap;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};

use super::bpf_prog::{Bpf, Stats};
use super::btf::Layout;
use super::census::{Backend, BpfWalk, PathCache, Superblock, Tally, Walker, path_of, superblock_at};
use super::memory::Memory;
use crate::procfs::kallsyms::Symbols;

/// Steps of one run at most: `MAX_STEPS` in the program. A step is one
/// dentry read (every lane's counts), or one look through a batch of heads
/// that found no chain (up to [`BATCH`] empty heads passed over). A run holds its
/// CPU with preemption off (and RCU's grace periods) for as long as it
/// runs, and a step costs more as the chains fill: when every bucket was a
/// step, 2^20 steps took up to 111 ms at 1M dentries, 362 ms at 10M and
/// 841 ms at 50M on this project's 6.18 VM (idle), close to the 1 s probe
/// deadline a reclaim is judged by; 2^18 keeps it near a quarter of that.
pub(crate) const MAX_STEPS: u64 = 1 << 18;
/// Bucket heads read at once (512 bytes): `BATCH` in the program.
pub(crate) const BATCH: u64 = 64;
/// Chains the program walks side by side at most: `LANES` in the program.
pub(crate) const LANES: u64 = 4;
/// Chains walked side by side unless told otherwise: four walked 1M
/// dentries 1.10× as fast as two with the cache, loaded (docs/census.md).
pub(crate) const DEFAULT_LANES: u64 = 4;
/// The fewest steps a run may be given: room for three lanes' longest
/// chains. A lane starts a chain only while it and every busy lane's, each
/// at its longest, fit in the run's steps, so a short run walks fewer
/// chains at once near its end, never more steps than it was given.
pub(crate) const MIN_STEPS: u64 = 16_384;

/// Entries of the `dirs` map: `MAX_DIRS` in the program.
pub(crate) const MAX_DIRS: u64 = 1 << 18;
/// Directories a run counts in its cache before they reach `dirs`: `CACHE` in the program.
/// A run adds them to `dirs` after its steps: at most this many map updates more.
const CACHE: u64 = 1 << 14;
/// Longest chain a run follows: `MAX_CHAIN` in the program.
const MAX_CHAIN: u64 = 4096;
/// The lowest kernel address on x86-64: 5-level paging's (LA57: the direct
/// map starts at `0xff11_0000_0000_0000`), below 4-level paging's
/// `0xffff_8000_0000_0000`. Under 4-level paging nothing between the two is
/// canonical and a read there faults, which `bpf_probe_read_kernel` reports:
/// the bound only keeps what cannot be a kernel pointer from being read.
/// `KERNEL_MIN` in the program.
const KERNEL_MIN: u64 = 0xff00_0000_0000_0000;

/// How the walk runs: the steps one run takes at most (from [`MIN_STEPS`]
/// to [`MAX_STEPS`]), the heads one read takes (1 to [`BATCH`]) and the
/// chains walked side by side (1 to [`LANES`]). Lower than the defaults
/// only to check the walk's seams (`census --bpf-steps`, `--bpf-batch`):
/// more runs, batches that end short of a range; `--bpf-lanes` to compare
/// lane counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tuning {
    pub steps: u64,
    pub batch: u64,
    pub lanes: u64,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning { steps: MAX_STEPS, batch: BATCH, lanes: DEFAULT_LANES }
    }
}

/// The data symbols the table is found by, where `/proc/kallsyms` has them.
pub(crate) const SYMBOLS: [&str; 2] = ["dentry_hashtable", "d_hash_shift"];

/// How many fresh dentries the table is found from.
const FRESH: usize = 16;

/// The table's address and shift from fresh dentries: a dentry just hashed
/// is first on its chain (`hlist_bl_add_head_rcu()` in `__d_rehash()`), so
/// its `d_hash.pprev` is its bucket's address, `table + 8 * (hash >> shift)`.
/// For the true shift every sample gives the same table; for any other, the
/// samples disagree. `None` unless more than half agree on one.
pub(crate) fn vote(samples: &[(u64, u32)]) -> Option<(u64, u32)> {
    let mut best: Option<(u64, u32, usize)> = None;
    for shift in 4..32u32 {
        let mut counts: HashMap<u64, usize> = HashMap::new();
        for &(pprev, hash) in samples {
            *counts.entry(pprev.wrapping_sub(8 * u64::from(hash >> shift))).or_default() += 1;
        }
        if let Some((table, n)) = counts.into_iter().max_by_key(|&(t, n)| (n, std::cmp::Reverse(t)))
            && best.is_none_or(|(_, _, b)| n > b)
        {
            best = Some((table, shift, n));
        }
    }
    best.filter(|&(_, _, n)| n * 2 > samples.len()).map(|(t, s, _)| (t, s))
}

/// Makes [`FRESH`] files in a directory of its own under the temporary
/// directory, reads each one's dentry through its descriptor, and votes.
fn locate_by_fresh_dentries(bpf: &Bpf) -> Result<(u64, u32)> {
    use std::os::fd::AsRawFd;
    let dir = std::env::temp_dir().join(format!("dentrylab-census-{}", std::process::id()));
    std::fs::create_dir(&dir).with_context(|| format!("cannot make {}", dir.display()))?;
    let read = || -> Result<Vec<(u64, u32)>> {
        let mut samples = Vec::new();
        for i in 0..FRESH {
            let f = std::fs::File::create(dir.join(format!("f{i}")))?;
            let (_, pprev, hash) = bpf.locate_fd(f.as_raw_fd() as u64)?;
            samples.push((pprev, hash));
        }
        Ok(samples)
    };
    let samples = read();
    let _ = std::fs::remove_dir_all(&dir);
    let samples = samples?;
    vote(&samples).with_context(|| {
        format!("the dentry hash table cannot be found: {FRESH} fresh dentries agree on no table and shift")
    })
}

/// The table's address and hash shift, and how they were found: the data
/// symbols (`CONFIG_KALLSYMS_ALL`), else fresh dentries ([`vote`]).
pub(crate) fn locate(bpf: &Bpf, syms: &Symbols) -> Result<(u64, u32, &'static str)> {
    let (table, shift, how) = if let (Some(t), Some(sh)) = (syms.get("dentry_hashtable"), syms.get("d_hash_shift")) {
        let table = bpf.read_u64(t).map_err(|e| anyhow!("cannot read dentry_hashtable at {t:#x} ({e:?})"))?;
        let shift = bpf.read_u32(sh).map_err(|e| anyhow!("cannot read d_hash_shift at {sh:#x} ({e:?})"))?;
        (table, shift, "kallsyms")
    } else {
        let (t, s) = locate_by_fresh_dentries(bpf)?;
        (t, s, "fresh_dentries")
    };
    check_located(table, shift)?;
    Ok((table, shift, how))
}

fn check_located(table: u64, shift: u32) -> Result<()> {
    if !(4..32).contains(&shift) {
        bail!("d_hash_shift reads {shift}: not a hash shift (expected 4 to 31)");
    }
    if table < KERNEL_MIN || !table.is_multiple_of(8) {
        bail!("dentry_hashtable reads {table:#x}: not a kernel address");
    }
    Ok(())
}

/// The account of a walk not yet begun.
fn fresh_details(located: String, t: Tuning) -> BpfWalk {
    BpfWalk { located, steps_bound: t.steps, batch: t.batch, lanes: t.lanes, ..BpfWalk::default() }
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
    tuning: Tuning,
    details: BpfWalk,
}

impl BpfCensus {
    /// Finds the table (through `syms`) and checks its first bucket can be read.
    pub(crate) fn open(bpf: Bpf, layout: Layout, syms: &Symbols, tuning: Tuning) -> Result<BpfCensus> {
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
            tuning,
            details: fresh_details(how.into(), tuning),
        })
    }

    /// Ready for another walk: the map emptied, the counters zeroed, the
    /// superblocks forgotten (a superblock's address may be reused), to
    /// walk as `tuning` says.
    pub(crate) fn reset(&mut self, tuning: Tuning) -> Result<()> {
        self.tuning = tuning;
        self.drain(&mut Tally::default())?;
        self.bpf.set_stats(&Stats::default())?;
        self.superblocks.clear();
        self.superblocks_rejected = 0;
        self.details = fresh_details(self.details.located.clone(), self.tuning);
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
        // Every lane's chain may add up to MAX_CHAIN directories after the run's last look at the map,
        // and the run's end every cached one.
        let room = MAX_DIRS - LANES * MAX_CHAIN - CACHE - 1;
        let mut next = first;
        let mut stuck = 0;
        while next < end {
            let t = self.tuning;
            let args = [self.table, next, end - next, u64::from(self.shift), room, t.steps, t.batch, t.lanes];
            let start = Instant::now();
            let done = self.bpf.run("dentrylab_walk", &args)?;
            self.details.longest_run_seconds = self.details.longest_run_seconds.max(start.elapsed().as_secs_f64());
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
        self.details.steps += st.steps;
        self.details.batches += st.batches;
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

    /// Fresh dentries of a 4M-bucket table at a 32 MiB-aligned address (as
    /// read on this project's 6.18 VM), and one that was not first on its
    /// chain (its pprev is the previous dentry's `next`).
    #[test]
    fn fresh_dentries_agree_on_the_table_and_its_shift() {
        let table = 0xffff_8886_25c0_0000u64;
        let hashes = [0x33dd_9fc5u32, 0xb7c2_02f8, 0x089c_9aaf, 0x58c4_b4f8, 0x1006_b27a, 0x9b56_41c1];
        let mut s: Vec<(u64, u32)> = hashes.iter().map(|&h| (table + 8 * u64::from(h >> 10), h)).collect();
        s.push((0xffff_8881_b827_7548, 0x1234_5678));
        assert_eq!(vote(&s), Some((table, 10)));
        // Half or fewer agreeing: no table.
        let few: Vec<(u64, u32)> = (0..6u64).map(|i| (0xffff_8881_0000_0000 + i * 4104, i as u32 * 77)).collect();
        assert_eq!(vote(&few[..2]), None);
        assert!(check_located(table, 40).is_err() && check_located(0x1000, 10).is_err());
        assert!(check_located(table, 10).is_ok());
        // Under 5-level paging (as a 6.12 guest on QEMU's `-cpu max` runs)
        // the table is in a direct map below 4-level paging's kernel half.
        assert!(check_located(0xff31_eccc_fd00_0000, 12).is_ok());
        assert!(check_located(0x00ff_eccc_fd00_0000, 12).is_err());
    }
}
