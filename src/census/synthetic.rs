//! Tests only: a made-up kernel for the census to walk. Its memory is a
//! `/proc/kcore`-shaped ELF core file with one segment at the start of
//! x86-64's direct map, laid out as the recorded 6.12 BTF says (the
//! fixture `tests/fixtures/btf/`): a dentry hash table, superblocks on a
//! `super_blocks` list, dentries on the chains; with the `/proc` files the
//! census reads beside it (kallsyms, dentry-state, mountinfo, osrelease).

use std::io::Read;
use std::path::Path;

use object::elf::PT_LOAD;

use super::Source;
use crate::probe::btf::Layout;
use crate::probe::census::PAGE_OFFSET_L4;
use crate::probe::kcore::core_header;
use crate::procfs::ProcRoot;

/// Where the segment's bytes start in the core file.
const DATA: u64 = 4096;

pub(crate) struct Image {
    pub layout: Layout,
    btf: Vec<u8>,
    mem: Vec<u8>,
    next: u64,
    table: u64,
    buckets: u64,
    head: u64,
    symbols: Vec<(&'static str, u64)>,
    /// Hashed dentries made.
    pub hashed: u64,
}

impl Image {
    /// An empty kernel with `1 << (32 - shift)` hash buckets.
    pub(crate) fn new(shift: u32, bytes: usize) -> Image {
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/btf/6.12.118+deb13-cloud-amd64.btf.gz");
        let mut btf = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(fixture).unwrap()).read_to_end(&mut btf).unwrap();
        let layout = Layout::from_bytes(&btf).unwrap();
        let mut i = Image {
            layout,
            btf,
            mem: vec![0; bytes],
            next: PAGE_OFFSET_L4 + 64,
            table: 0,
            buckets: 1 << (32 - shift),
            head: 0,
            symbols: vec![],
            hashed: 0,
        };
        let ptr = i.alloc(8);
        let sh = i.alloc(8);
        i.head = i.alloc(16);
        i.table = i.alloc(i.buckets as usize * 8);
        i.put(ptr, i.table);
        i.put32(sh, shift);
        // An empty list points at itself.
        i.put(i.head, i.head);
        i.put(i.head + 8, i.head);
        i.symbols = vec![("dentry_hashtable", ptr), ("d_hash_shift", sh), ("super_blocks", i.head)];
        i
    }

    fn alloc(&mut self, n: usize) -> u64 {
        let a = self.next;
        self.next = (self.next + n as u64 + 63) & !63;
        assert!(self.next - PAGE_OFFSET_L4 <= self.mem.len() as u64, "synthetic kernel memory full");
        a
    }

    fn at(&mut self, a: u64, n: usize) -> &mut [u8] {
        let o = (a - PAGE_OFFSET_L4) as usize;
        &mut self.mem[o..o + n]
    }

    pub(crate) fn put(&mut self, a: u64, v: u64) {
        self.at(a, 8).copy_from_slice(&v.to_le_bytes());
    }

    fn put32(&mut self, a: u64, v: u32) {
        self.at(a, 4).copy_from_slice(&v.to_le_bytes());
    }

    fn string(&mut self, s: &str) -> u64 {
        let a = self.alloc(s.len() + 1);
        self.at(a, s.len()).copy_from_slice(s.as_bytes());
        a
    }

    fn raw_dentry(&mut self, sb: u64, parent: Option<u64>, name: &str, positive: bool) -> u64 {
        let l = self.layout;
        let d = self.alloc(l.dentry_size as usize);
        let n = self.string(name);
        self.put(d + l.d_sb, sb);
        self.put(d + l.d_parent, parent.unwrap_or(d));
        self.put32(d + l.d_name + l.qstr_len, name.len() as u32);
        self.put(d + l.d_name + l.qstr_name, n);
        // Any non-NULL inode pointer makes the dentry positive.
        self.put(d + l.d_inode, if positive { PAGE_OFFSET_L4 } else { 0 });
        d
    }

    /// A superblock with its root dentry (unhashed, as roots are).
    pub(crate) fn superblock(&mut self, fs_type: &str, dev: u32, id: &str) -> (u64, u64) {
        let l = self.layout;
        let sb = self.alloc((l.s_id + l.s_id_len).max(l.s_list + 16).max(l.s_type + 8) as usize);
        let fst = self.alloc((l.fs_name + 8) as usize);
        let name = self.string(fs_type);
        self.put(fst + l.fs_name, name);
        self.put(sb + l.s_type, fst);
        self.put32(sb + l.s_dev, dev);
        self.at(sb + l.s_id, id.len()).copy_from_slice(id.as_bytes());
        // Pushed at the list's head.
        let first = u64::from_le_bytes(self.at(self.head, 8).try_into().unwrap());
        self.put(sb + l.s_list, first);
        let head = self.head;
        self.put(head, sb + l.s_list);
        let root = self.raw_dentry(sb, None, "/", true);
        (sb, root)
    }

    /// A dentry hashed under `parent`, on the chain of a bucket its name picks.
    pub(crate) fn dentry(&mut self, sb: u64, parent: u64, name: &str, positive: bool) -> u64 {
        let l = self.layout;
        let d = self.raw_dentry(sb, Some(parent), name, positive);
        let h =
            name.bytes().fold(parent ^ 0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
        let index = (h >> 17) % self.buckets;
        // The name hash whose top bits pick that bucket (d_hash()).
        let shift = 32 - self.buckets.trailing_zeros();
        self.put32(d + l.d_name + l.qstr_hash, ((index << shift) | (h & ((1 << shift) - 1))) as u32);
        let bucket = self.table + index * 8;
        let first = u64::from_le_bytes(self.at(bucket, 8).try_into().unwrap());
        self.put(d + l.d_hash + l.bl_next, first);
        self.put(bucket, d + l.d_hash);
        self.hashed += 1;
        d
    }

    /// The bucket dentry `d`'s name hash picks.
    pub(crate) fn bucket_of(&mut self, d: u64) -> u64 {
        let l = self.layout;
        let h = u32::from_le_bytes(self.at(d + l.d_name + l.qstr_hash, 4).try_into().unwrap());
        u64::from(h >> (32 - self.buckets.trailing_zeros()))
    }

    /// Makes `from`'s chain continue at `to`, as when the dentry `from`
    /// pointed to was freed and reused as `to` under a walk.
    pub(crate) fn link(&mut self, from: u64, to: u64) {
        let l = self.layout;
        self.put(from + l.d_hash + l.bl_next, to + l.d_hash);
    }

    /// Writes the core file, the BTF and the proc tree under `dir`, with
    /// `mounts` as (dev, mount point, type) in mountinfo.
    pub(crate) fn write(&self, dir: &Path, mounts: &[(u32, &str, &str)]) -> (Source, ProcRoot) {
        let mut d = core_header(&[(PT_LOAD.0, DATA, PAGE_OFFSET_L4, self.mem.len() as u64)]);
        d.resize(DATA as usize, 0);
        d.extend(&self.mem);
        std::fs::write(dir.join("kcore"), d).unwrap();
        std::fs::write(dir.join("btf"), &self.btf).unwrap();
        let proc = dir.join("proc");
        std::fs::create_dir_all(proc.join("sys/fs")).unwrap();
        std::fs::create_dir_all(proc.join("sys/kernel")).unwrap();
        std::fs::create_dir_all(proc.join("self")).unwrap();
        let syms: String = self.symbols.iter().map(|(n, a)| format!("{a:016x} b {n}\n")).collect();
        std::fs::write(proc.join("kallsyms"), format!("ffffffff81000000 T _text\n{syms}")).unwrap();
        std::fs::write(proc.join("sys/fs/dentry-state"), format!("{} 0 45 0 0 0\n", self.hashed + 8)).unwrap();
        std::fs::write(proc.join("sys/kernel/osrelease"), "6.12.0-synthetic\n").unwrap();
        let mi: String = mounts
            .iter()
            .enumerate()
            .map(|(i, (dev, mp, t))| format!("{} 1 {}:{} / {mp} rw - {t} {t} rw\n", 30 + i, dev >> 20, dev & 0xfffff))
            .collect();
        std::fs::write(proc.join("self/mountinfo"), mi).unwrap();
        (
            Source {
                kcore: dir.join("kcore"),
                btf: dir.join("btf"),
                backend: super::Choice::Kcore,
                bpf: Default::default(),
            },
            ProcRoot::new(proc),
        )
    }
}

/// A small node: a tmpfs at /mnt/t with `a` (300 negatives, 20 positives)
/// and `b` (50 positives), an ext4 at /var/x with `c` (120 negatives),
/// and one dentry whose `d_sb` is no superblock (a rejected read).
pub(crate) fn small(dir: &Path) -> (Source, ProcRoot) {
    let mut i = Image::new(20, 4 << 20);
    let (t, troot) = i.superblock("tmpfs", 42, "tmpfs");
    let (e, eroot) = i.superblock("ext4", (7 << 20) | 3, "loop3");
    let a = i.dentry(t, troot, "a", true);
    let b = i.dentry(t, troot, "b", true);
    let c = i.dentry(e, eroot, "c", true);
    for k in 0..300 {
        i.dentry(t, a, &format!("n{k}"), false);
    }
    for k in 0..20 {
        i.dentry(t, a, &format!("p{k}"), true);
    }
    for k in 0..50 {
        i.dentry(t, b, &format!("f{k}"), true);
    }
    for k in 0..120 {
        i.dentry(e, c, &format!("m{k}"), false);
    }
    i.dentry(PAGE_OFFSET_L4 + 8, c, "stray", false);
    i.write(dir, &[(42, "/mnt/t", "tmpfs"), ((7 << 20) | 3, "/var/x", "ext4")])
}

#[cfg(test)]
mod tests {
    use super::super::{Survey, survey_of};
    use super::*;

    #[test]
    fn a_full_walk_finds_every_directory_with_its_exact_count_by_path() {
        let dir = tempfile::tempdir().unwrap();
        let (src, proc) = small(dir.path());
        use super::super::Expected;
        let expected = vec![
            Expected { kind: "negative".into(), negative: true, directories: vec![("/var/x/c".into(), 120)] },
            Expected { kind: "hardlink".into(), negative: false, directories: vec![("/mnt/t/b".into(), 50)] },
        ];
        let s = Survey { fraction: 1.0, top: 3, expected, ..Survey::default() };
        let r = survey_of(&src, &proc, &s, &|_| {}).unwrap();
        assert_eq!(r.walk.mode, "full");
        assert_eq!(r.walk.rejected.unknown_superblock, 1, "{:?}", r.walk.rejected);
        assert_eq!(r.hashed.found, 3 + 300 + 20 + 50 + 120);
        // The stray read may have been one more dentry: a full walk's count
        // carries its rejected reads (the walk before this said it exactly).
        assert_eq!((r.hashed.low, r.hashed.high), (493.0, 494.0), "{:?}", r.hashed);
        let first = &r.top_negative[0];
        assert_eq!((first.path.as_str(), first.negative.found, first.positive.found), ("/mnt/t/a", 300, 20));
        assert_eq!(r.top_negative[1].path, "/var/x/c");
        assert_eq!(r.top_total[0].path, "/mnt/t/a");
        let tmpfs = r.filesystems.iter().find(|f| f.fs_type == "tmpfs").unwrap();
        assert_eq!((tmpfs.mount_point.as_deref(), tmpfs.total.found), (Some("/mnt/t"), 2 + 300 + 20 + 50));
        assert_eq!(r.planted.len(), 2);
        assert!(r.planted.iter().all(|c| c.ok), "{:?}", r.planted);
        // What a workload's check says of the same walk.
        let n = super::super::workload::named(&r, &s.expected[1]);
        assert_eq!(
            (n.found, n.created, n.exact, n.ok),
            (50, 50, 1, false),
            "b is not the top of its filesystem: {n:?}"
        );
        assert_eq!(n.top_directory.as_deref(), Some("/mnt/t/a"));
    }

    /// A chain that leads into another bucket's (a dentry freed and reused
    /// under the walk) is walked again, and cut when it keeps doing so: cut
    /// and counted as such, its dentries left out, none counted twice.
    /// (The walk before this counted the cut chain's dentries: 42 walked,
    /// no chain cut.)
    #[test]
    fn a_chain_that_leads_into_another_bucket_is_retried_and_counted_once() {
        use crate::probe::census::CHAIN_RETRIES;
        let dir = tempfile::tempdir().unwrap();
        let mut i = Image::new(20, 4 << 20);
        let (t, root) = i.superblock("tmpfs", 42, "tmpfs");
        let a = i.dentry(t, root, "a", true);
        let mut others = Vec::new();
        for k in 0..40 {
            others.push(i.dentry(t, a, &format!("n{k}"), false));
        }
        let x = i.dentry(t, a, "x", false);
        let y = *others.iter().find(|&&y| i.bucket_of(y) != i.bucket_of(x)).unwrap();
        i.link(x, y);
        let (src, proc) = i.write(dir.path(), &[(42, "/mnt/t", "tmpfs")]);
        let s = Survey { fraction: 1.0, top: 3, ..Survey::default() };
        let r = survey_of(&src, &proc, &s, &|_| {}).unwrap();
        assert_eq!(r.walk.rejected.wrong_bucket, u64::from(CHAIN_RETRIES) + 1, "{:?}", r.walk.rejected);
        assert_eq!((r.walk.rejected.chains_cut, r.walk.rejected.left_out), (1, 1), "{:?}", r.walk.rejected);
        assert_eq!(r.walk.dentries_walked, 1 + 40, "x's chain left out, each other dentry once");
        assert_eq!((r.top_negative[0].path.as_str(), r.top_negative[0].negative.found), ("/mnt/t/a", 40));
        // What the cut chain held is not known: the full walk's interval
        // reaches past what it found by its rejected reads.
        assert_eq!(r.hashed.low, 41.0);
        assert!(r.hashed.high >= 41.0 + r.walk.rejected.left_out as f64, "{:?}", r.hashed);
    }

    /// A chain that loops (rewritten under the walk) is read MAX_CHAIN
    /// nodes deep, read again, then cut and left out: counted once as cut,
    /// never as 4,096 dentries. (The walk before this committed it: the
    /// one dentry counted 4,096 times.)
    #[test]
    fn a_chain_too_long_is_cut_after_its_retries_and_left_out() {
        use crate::probe::census::MAX_CHAIN;
        let dir = tempfile::tempdir().unwrap();
        let mut i = Image::new(20, 4 << 20);
        let (t, root) = i.superblock("tmpfs", 42, "tmpfs");
        let a = i.dentry(t, root, "a", true);
        for k in 0..30 {
            i.dentry(t, a, &format!("n{k}"), false);
        }
        let x = i.dentry(t, a, "x", false);
        i.link(x, x);
        let (src, proc) = i.write(dir.path(), &[(42, "/mnt/t", "tmpfs")]);
        let s = Survey { fraction: 1.0, top: 3, ..Survey::default() };
        let r = survey_of(&src, &proc, &s, &|_| {}).unwrap();
        assert_eq!(r.walk.rejected.chains_cut, 1, "{:?}", r.walk.rejected);
        assert_eq!(r.walk.rejected.left_out, MAX_CHAIN as u64);
        assert!(r.walk.dentries_walked <= 1 + 30, "{}", r.walk.dentries_walked);
        assert!(r.top_negative[0].negative.found <= 30);
    }

    /// The census read with a BTF that is not the kernel's: every dentry
    /// it reads is rejected. That is one line naming the BTF and what was
    /// rejected, and an error (exit 1), not counts near zero. (The walk
    /// before this returned them.)
    #[test]
    fn a_walk_whose_reads_are_mostly_rejected_says_the_btf_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let mut i = Image::new(20, 4 << 20);
        let (t, root) = i.superblock("tmpfs", 42, "tmpfs");
        let a = i.dentry(t, root, "a", true);
        // As a wrong layout reads them: d_sb at the wrong offset.
        for k in 0..200 {
            i.dentry(PAGE_OFFSET_L4 + 8 * (k + 1), a, &format!("n{k}"), false);
        }
        i.dentry(t, a, "ok", false);
        let (src, proc) = i.write(dir.path(), &[(42, "/mnt/t", "tmpfs")]);
        let s = Survey { fraction: 1.0, top: 3, ..Survey::default() };
        let e = survey_of(&src, &proc, &s, &|_| {}).expect_err("an error");
        let line = format!("{e:#}");
        assert!(!line.contains('\n'), "one line: {line}");
        assert!(line.contains("200 of 202") && line.contains("unknown superblock 200"), "{line}");
        assert!(line.contains(&src.btf.display().to_string()) && line.contains("--btf"), "{line}");
        // The small node's one stray read is no such thing.
        let (src, proc) = small(dir.path());
        assert!(survey_of(&src, &proc, &s, &|_| {}).is_ok());
    }
}
