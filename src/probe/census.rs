//! The census walk: every chain of the dentry hash table (`dentry_hashtable`,
//! `1 << (32 - d_hash_shift)` buckets of `struct hlist_bl_head`, whose
//! `first` pointer carries the bucket's lock in bit 0: `hlist_bl_first` in
//! `include/linux/list_bl.h`), read through `/proc/kcore`, each dentry
//! counted positive (`d_inode` set) or negative under its superblock and
//! its parent.
//!
//! The kernel changes the table while it is read. Every pointer is checked
//! before it is followed (inside the direct map, 8-byte aligned, mapped by
//! kcore), a dentry counts only if its `d_sb` is one of the superblocks on
//! the kernel's `super_blocks` list and its name length is at most
//! NAME_MAX, and a chain longer than [`MAX_CHAIN`] nodes or leading into
//! another bucket is read again, then cut and left out: what fails is
//! counted, never followed. The walk never writes and always ends.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::btf::Layout;
use super::kcore::{Kcore, ReadError};
use super::memory::Memory;

/// Longest chain followed. A kernel's chains hold a few dentries (the
/// table has about one bucket per dentry of memory's worth); a longer one
/// is a chain rewritten under the walk.
pub(crate) const MAX_CHAIN: usize = 4096;
/// How many times a bucket is walked again after its chain led into
/// another bucket's.
pub(crate) const CHAIN_RETRIES: u32 = 8;
/// Most superblocks read from `super_blocks`.
pub(crate) const MAX_SUPERBLOCKS: usize = 65536;
/// Deepest path rebuilt from `d_parent`.
pub(crate) const MAX_DEPTH: usize = 256;
const NAME_MAX: u32 = 255;

/// The kernel addresses the walk starts from (from `/proc/kallsyms`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Roots {
    /// `&dentry_hashtable`, `&d_hash_shift`, `&super_blocks`.
    pub hashtable: u64,
    pub hash_shift: u64,
    pub super_blocks: u64,
    /// `&page_offset_base` (KASLR kernels), else the direct map starts at
    /// x86-64's fixed `__PAGE_OFFSET_BASE_L4`.
    pub page_offset_base: Option<u64>,
}

/// x86-64's direct map without KASLR (`arch/x86/include/asm/page_64_types.h`).
pub(crate) const PAGE_OFFSET_L4: u64 = 0xffff_8880_0000_0000;
/// The direct map's size limit on 4-level paging: 64 TiB.
const DIRECT_MAP_SPAN: u64 = 64 << 40;

/// A superblock on the kernel's list.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Superblock {
    #[serde(skip)]
    pub addr: u64,
    /// `s_dev`: `major << 20 | minor`.
    pub dev: u32,
    pub fs_type: String,
    /// `s_id`: the device name or the filesystem's own id.
    pub id: String,
}

/// Reads skipped, by reason.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Rejected {
    /// A pointer outside the direct map or not 8-byte aligned.
    pub bad_pointer: u64,
    /// kcore maps no segment there, or the read failed.
    pub unreadable: u64,
    /// `d_sb` is not a superblock on the list.
    pub unknown_superblock: u64,
    /// A name longer than NAME_MAX, or a name pointer that is not a kernel address.
    pub bad_name: u64,
    /// Chains cut (longer than MAX_CHAIN nodes, or leading into another
    /// bucket's) after [`CHAIN_RETRIES`] retries: counted here, their
    /// dentries left out of every count.
    pub chains_cut: u64,
    /// A dentry whose name hashes to another bucket than the chain it was
    /// reached from: the walk had left the chain through a dentry freed and
    /// reused while it read. The bucket is walked again (at most
    /// [`CHAIN_RETRIES`] times; then it is cut before that dentry).
    #[serde(default)]
    pub wrong_bucket: u64,
    /// Dentries read on the chains cut, left out of every count (what the
    /// walk may have missed there is unknown; these it saw).
    #[serde(default)]
    pub left_out: u64,
}

impl Rejected {
    pub(crate) fn total(&self) -> u64 {
        self.bad_pointer
            + self.unreadable
            + self.unknown_superblock
            + self.bad_name
            + self.chains_cut
            + self.wrong_bucket
    }

    pub(crate) fn add(&mut self, o: &Rejected) {
        self.bad_pointer += o.bad_pointer;
        self.unreadable += o.unreadable;
        self.unknown_superblock += o.unknown_superblock;
        self.bad_name += o.bad_name;
        self.chains_cut += o.chains_cut;
        self.wrong_bucket += o.wrong_bucket;
        self.left_out += o.left_out;
    }

    /// Reads of dentries the layout could not make sense of: what a wrong
    /// BTF gives (every field read at the wrong offset), as opposed to
    /// chains that changed under the walk.
    pub(crate) fn unreadable_dentries(&self) -> u64 {
        self.bad_pointer + self.unknown_superblock + self.bad_name
    }
}

/// What a walk of some buckets found: per (superblock, parent) the
/// positive and negative dentries hashed under that parent.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tally {
    pub by_parent: HashMap<(u64, u64), [u64; 2]>,
    pub walked: u64,
    pub buckets: u64,
    pub rejected: Rejected,
}

/// How one read of a chain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// To its end (or to a read that failed, counted as rejected).
    Whole,
    /// At a dentry hashed to another bucket: the walk had left the chain.
    LeftBucket,
    /// At [`MAX_CHAIN`] nodes: a chain rewritten under the walk.
    TooLong,
}

/// One chain as read, counted only once it is known to be one chain.
#[derive(Default)]
struct Chain {
    dentry: Vec<u8>,
    /// (superblock, parent, negative) of each dentry counted.
    found: Vec<(u64, u64, bool)>,
    rejected: Rejected,
}

impl Chain {
    fn commit(&self, tally: &mut Tally) {
        for &(sb, parent, negative) in &self.found {
            tally.by_parent.entry((sb, parent)).or_default()[usize::from(negative)] += 1;
        }
        tally.walked += self.found.len() as u64;
        tally.rejected.add(&self.rejected);
    }
}

/// The table, the superblocks and the layout: what every walk needs.
pub(crate) struct Census<'k> {
    pub kcore: &'k Kcore,
    pub layout: Layout,
    pub table: u64,
    pub buckets: u64,
    pub direct_map: (u64, u64),
    pub superblocks: HashMap<u64, Superblock>,
    /// Superblock list entries that could not be read.
    pub superblocks_rejected: u64,
}

/// Unmapped and failed reads are both counted as unreadable.
fn read_err(r: &mut Rejected, _: ReadError) {
    r.unreadable += 1;
}

impl<'k> Census<'k> {
    /// Reads the table's address and size, the direct map's start and
    /// every superblock on `super_blocks`.
    pub(crate) fn open(kcore: &'k Kcore, layout: Layout, roots: Roots) -> anyhow::Result<Census<'k>> {
        use anyhow::{Context, bail};
        let r = |a: u64, what: &str| {
            kcore.read_u64(a).map_err(|e| anyhow::anyhow!("cannot read {what} at {a:#x} through /proc/kcore ({e:?})"))
        };
        let table = r(roots.hashtable, "dentry_hashtable")?;
        let shift = kcore
            .read_u32(roots.hash_shift)
            .map_err(|e| anyhow::anyhow!("cannot read d_hash_shift through /proc/kcore ({e:?})"))?;
        if !(4..32).contains(&shift) {
            bail!("d_hash_shift reads {shift}: not a hash shift (expected 4 to 31)");
        }
        let buckets = 1u64 << (32 - shift);
        let base = match roots.page_offset_base {
            Some(a) => r(a, "page_offset_base")?,
            None => PAGE_OFFSET_L4,
        };
        if !kcore.maps(table, buckets * 8) {
            bail!("dentry_hashtable ({buckets} buckets at {table:#x}) is not mapped by /proc/kcore");
        }
        let mut c = Census {
            kcore,
            layout,
            table,
            buckets,
            direct_map: (base, base.saturating_add(DIRECT_MAP_SPAN)),
            superblocks: HashMap::new(),
            superblocks_rejected: 0,
        };
        c.read_superblocks(roots.super_blocks).context("reading the super_blocks list")?;
        Ok(c)
    }

    /// A pointer the walk may follow: in the direct map and 8-byte aligned.
    pub(crate) fn valid(&self, p: u64) -> bool {
        p.is_multiple_of(8) && p >= self.direct_map.0 && p < self.direct_map.1
    }

    fn read_superblocks(&mut self, head: u64) -> anyhow::Result<()> {
        let l = self.layout;
        let mut next = self.kcore.read_u64(head).map_err(|e| anyhow::anyhow!("cannot read super_blocks ({e:?})"))?;
        let mut seen = HashSet::new();
        while next != head && seen.len() < MAX_SUPERBLOCKS {
            if !self.valid(next) || !seen.insert(next) {
                self.superblocks_rejected += 1;
                break;
            }
            let sb = next - l.s_list;
            let (Some(s), Ok(n)) = (superblock_at(self.kcore, &l, sb), self.kcore.read_u64(next)) else {
                self.superblocks_rejected += 1;
                break;
            };
            self.superblocks.insert(sb, s);
            next = n;
        }
        Ok(())
    }

    /// Walks buckets `[first, first + count)`, reading the heads in blocks.
    pub(crate) fn walk(&self, first: u64, count: u64, tally: &mut Tally) {
        const BLOCK: u64 = 512;
        let mut heads = vec![0u8; (BLOCK * 8) as usize];
        let mut chain = Chain { dentry: vec![0u8; self.layout.dentry_read_len() as usize], ..Chain::default() };
        let end = (first + count).min(self.buckets);
        let mut b = first;
        while b < end {
            let n = BLOCK.min(end - b);
            let heads = &mut heads[..(n * 8) as usize];
            if let Err(e) = self.kcore.read(self.table + b * 8, heads) {
                read_err(&mut tally.rejected, e);
                b += n;
                continue;
            }
            for i in 0..n {
                tally.buckets += 1;
                // hlist_bl_first: the lock bit masked off.
                let mut head = u64::from_le_bytes(heads[(i * 8) as usize..][..8].try_into().unwrap()) & !1;
                for attempt in 0..=CHAIN_RETRIES {
                    if attempt > 0 {
                        match self.kcore.read_u64(self.table + (b + i) * 8) {
                            Ok(h) => head = h & !1,
                            Err(e) => {
                                read_err(&mut tally.rejected, e);
                                break;
                            }
                        }
                    }
                    let read = self.chain(b + i, head, &mut chain);
                    if read == Read::LeftBucket {
                        tally.rejected.wrong_bucket += 1;
                    }
                    if read == Read::Whole {
                        chain.commit(tally);
                        break;
                    }
                    if attempt == CHAIN_RETRIES {
                        // Cut after its retries: counted, and left out.
                        chain.rejected.chains_cut += 1;
                        chain.rejected.left_out += chain.found.len() as u64;
                        tally.rejected.add(&chain.rejected);
                    }
                }
            }
            b += n;
        }
    }

    /// Reads bucket `bucket`'s chain from `head` into `c` (cleared first),
    /// and how the read ended.
    fn chain(&self, bucket: u64, head: u64, c: &mut Chain) -> Read {
        let l = self.layout;
        let shift = 32 - self.buckets.trailing_zeros();
        let u64_at = |b: &[u8], o: u64| u64::from_le_bytes(b[o as usize..o as usize + 8].try_into().unwrap());
        let u32_at = |b: &[u8], o: u64| u32::from_le_bytes(b[o as usize..o as usize + 4].try_into().unwrap());
        c.found.clear();
        c.rejected = Rejected::default();
        let mut node = head;
        let mut steps = 0;
        while node != 0 {
            steps += 1;
            if steps > MAX_CHAIN {
                return Read::TooLong;
            }
            if !self.valid(node) {
                c.rejected.bad_pointer += 1;
                break;
            }
            if let Err(e) = self.kcore.read(node - l.d_hash, &mut c.dentry) {
                read_err(&mut c.rejected, e);
                break;
            }
            let d = &c.dentry;
            // d_hash() in fs/dcache.c: the name hash's top bits.
            if u64::from(u32_at(d, l.d_name + l.qstr_hash) >> shift) != bucket {
                return Read::LeftBucket;
            }
            let (sb, parent) = (u64_at(d, l.d_sb), u64_at(d, l.d_parent));
            let (name_len, name) = (u32_at(d, l.d_name + l.qstr_len), u64_at(d, l.d_name + l.qstr_name));
            if !self.superblocks.contains_key(&sb) {
                c.rejected.unknown_superblock += 1;
            } else if name_len > NAME_MAX || name < self.direct_map.0 {
                c.rejected.bad_name += 1;
            } else if !self.valid(parent) {
                c.rejected.bad_pointer += 1;
            } else {
                c.found.push((sb, parent, u64_at(d, l.d_inode) == 0));
            }
            node = u64_at(d, l.d_hash + l.bl_next);
        }
        Read::Whole
    }

    /// The path of directory `d` from its superblock's root ([`path_of`]).
    pub(crate) fn path(&self, sb: u64, d: u64, cache: &mut PathCache) -> Option<String> {
        path_of(self.kcore, &self.layout, &|p| self.valid(p), sb, d, cache)
    }
}

/// Directory names already read: dentry → (name, parent), `None` when unreadable.
pub(crate) type PathCache = HashMap<u64, Option<(String, u64)>>;

/// The superblock at `sb`: its `s_dev`, its type's name and `s_id`;
/// `None` when a field cannot be read.
pub(crate) fn superblock_at(mem: &dyn Memory, l: &Layout, sb: u64) -> Option<Superblock> {
    let mut id = vec![0u8; l.s_id_len as usize];
    let dev = mem.read_u32(sb + l.s_dev).ok()?;
    let ty = mem.read_u64(sb + l.s_type).ok()?;
    mem.read(sb + l.s_id, &mut id).ok()?;
    let fs_type = mem.read_u64(ty + l.fs_name).ok().and_then(|p| mem.read_cstr(p, 64)).unwrap_or_else(|| "?".into());
    let end = id.iter().position(|&b| b == 0).unwrap_or(id.len());
    let id = String::from_utf8_lossy(&id[..end]).into_owned();
    Some(Superblock { addr: sb, dev, fs_type, id })
}

/// The path of directory `d` from its superblock's root, rebuilt from
/// `d_parent` and `d_name`; `None` when a read fails, the chain leaves
/// the superblock or is deeper than MAX_DEPTH. `valid`: a pointer that may
/// be followed.
pub(crate) fn path_of(
    mem: &dyn Memory,
    l: &Layout,
    valid: &dyn Fn(u64) -> bool,
    sb: u64,
    mut d: u64,
    cache: &mut PathCache,
) -> Option<String> {
    let mut parts = Vec::new();
    for _ in 0..MAX_DEPTH {
        let entry = cache.entry(d).or_insert_with(|| {
            if !valid(d) {
                return None;
            }
            let mut buf = vec![0u8; l.dentry_read_len() as usize];
            mem.read(d, &mut buf).ok()?;
            let g = |o: u64| u64::from_le_bytes(buf[o as usize..o as usize + 8].try_into().unwrap());
            if g(l.d_sb) != sb {
                return None;
            }
            let len = u32::from_le_bytes(buf[(l.d_name + l.qstr_len) as usize..][..4].try_into().unwrap());
            if len > NAME_MAX {
                return None;
            }
            let mut name = vec![0u8; len as usize];
            mem.read(g(l.d_name + l.qstr_name), &mut name).ok()?;
            Some((String::from_utf8_lossy(&name).into_owned(), g(l.d_parent)))
        });
        let (name, parent) = entry.clone()?;
        if parent == d {
            parts.reverse();
            return Some(format!("/{}", parts.join("/")));
        }
        parts.push(name);
        d = parent;
    }
    None
}

/// What the BPF walk did, beside the counts.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct BpfWalk {
    /// How the table was found: "runtime_const" (the patched instructions) or "kallsyms" (the data symbols).
    pub located: String,
    /// Runs of the walk program, and the most steps one took (of at most `steps_bound`).
    pub runs: u64,
    pub max_steps_per_run: u64,
    pub steps_bound: u64,
    /// Steps of all runs, and the batches of bucket heads read (`batch` heads, 512 bytes, at most per read).
    #[serde(default)]
    pub steps: u64,
    #[serde(default)]
    pub batches: u64,
    #[serde(default)]
    pub batch: u64,
    /// Chains walked side by side.
    #[serde(default)]
    pub lanes: u64,
    /// The longest run as this process timed it (the system call around it): how long RCU was held at most.
    pub longest_run_seconds: f64,
    /// Times the `dirs` map was drained into user space (the last one at the end).
    pub drains: u64,
    /// Dentries not counted because the map refused an entry.
    pub unrecorded: u64,
}

/// Which way the table was walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Backend {
    /// A BPF program in the kernel, under RCU (`census_bpf`).
    Bpf,
    /// User space reading `/proc/kcore`.
    Kcore,
}

impl Backend {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Backend::Bpf => "bpf",
            Backend::Kcore => "kcore",
        }
    }
}

/// A walk of the table, whichever backend reads it: what ranking and
/// naming need.
pub(crate) trait Walker {
    fn backend(&self) -> Backend;
    fn buckets(&self) -> u64;
    /// Walks buckets `[first, first + count)` into `tally` (a backend may
    /// hold counts back until [`Walker::finish`]).
    fn walk(&mut self, first: u64, count: u64, tally: &mut Tally) -> anyhow::Result<()>;
    /// After the last walk: adds what was held back, and learns the
    /// superblocks the walk met if it did not know them before.
    fn finish(&mut self, tally: &mut Tally) -> anyhow::Result<()>;
    fn superblocks(&self) -> &HashMap<u64, Superblock>;
    fn superblocks_rejected(&self) -> u64;
    fn path(&self, sb: u64, d: u64, cache: &mut PathCache) -> Option<String>;
    /// The backend's own account of the walk (the BPF runs), if any.
    fn details(&self) -> Option<BpfWalk> {
        None
    }
}

impl Walker for Census<'_> {
    fn backend(&self) -> Backend {
        Backend::Kcore
    }
    fn buckets(&self) -> u64 {
        self.buckets
    }
    fn walk(&mut self, first: u64, count: u64, tally: &mut Tally) -> anyhow::Result<()> {
        Census::walk(self, first, count, tally);
        Ok(())
    }
    fn finish(&mut self, _: &mut Tally) -> anyhow::Result<()> {
        Ok(())
    }
    fn superblocks(&self) -> &HashMap<u64, Superblock> {
        &self.superblocks
    }
    fn superblocks_rejected(&self) -> u64 {
        self.superblocks_rejected
    }
    fn path(&self, sb: u64, d: u64, cache: &mut PathCache) -> Option<String> {
        Census::path(self, sb, d, cache)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejected_reads_add_up() {
        let r = Rejected {
            bad_pointer: 1,
            unreadable: 2,
            unknown_superblock: 3,
            bad_name: 4,
            chains_cut: 5,
            wrong_bucket: 6,
            left_out: 40,
        };
        assert_eq!(r.total(), 21, "reads, not the dentries left out");
        assert_eq!(r.unreadable_dentries(), 8);
    }
}
