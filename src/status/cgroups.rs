//! `status --by-cgroup`: which memory cgroups hold the dentries. The kernel
//! charges a dentry to the memory cgroup of the task that allocated it (a
//! removed cgroup's charges move to its parent), so the cgroup's kernel slab
//! says who made them:
//!
//! - cgroup v2: `slab_reclaimable` of `memory.stat`;
//! - cgroup v1: `memory.kmem.usage_in_bytes` (all kernel memory charged to
//!   the cgroup: slab, reclaimable or not, kernel stacks, page tables). v1's
//!   `memory.kmem.slabinfo` would name the caches, but since Linux 5.9 it
//!   is empty (slab objects are no longer kept in per-cgroup caches).
//!
//! Both are hierarchical; a cgroup's own share is its figure minus its
//! children's. The dentry count is an estimate: the bytes divided by what
//! one dentry charges ([`CHARGED_BYTES_PER_DENTRY`]), which is exact for a
//! cgroup that made only dentries and an upper bound otherwise (inodes,
//! and on v1 every other kernel allocation, are in the same figure). A
//! second estimate scales it by the node-wide share of dentries in the
//! reclaimable slab. Where the kernel has shrinker debugfs
//! (`CONFIG_SHRINKER_DEBUG`), the exact number of objects on the
//! superblocks' LRUs per cgroup is read too.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::calibration::DENTRY_OBJECT_BYTES;
use super::kube::{self, KubeNames};
use crate::procfs::memcg::CgroupMemory;
use crate::procfs::{ProcRoot, cgroup, shrinker};

/// Cgroups listed by default (and exported as series, plus one "other").
pub(crate) const DEFAULT_TOP: usize = 10;
pub(crate) const MAX_TOP: usize = 1000;
/// Bytes one dentry with an inline name charges to its memory cgroup: the
/// slab object plus the 8-byte object-cgroup pointer the slab keeps for each
/// charged object (`slab->obj_exts`, mm/memcontrol.c). Measured: 1M negative
/// dentries raised a v1 cgroup's `memory.kmem.usage_in_bytes` by 200 MB
/// (docs/by-cgroup.md).
pub(crate) const CHARGED_BYTES_PER_DENTRY: u64 = DENTRY_OBJECT_BYTES + 8;

#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// The memory hierarchy's root directory; found in mountinfo when `None`.
    pub root: Option<PathBuf>,
    pub top: usize,
    /// Where debugfs is mounted (its `shrinker/` directory is read).
    pub debugfs: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Row {
    /// Path relative to the hierarchy's root; `other` for the rest.
    pub cgroup: String,
    /// The cgroup's own figure (its children's taken out).
    pub bytes: u64,
    /// Bytes ÷ [`CHARGED_BYTES_PER_DENTRY`]: exact if the cgroup made only
    /// dentries, an upper bound otherwise.
    pub estimated_dentries: u64,
    /// The same scaled by the node's share of dentries in the reclaimable slab.
    pub estimated_dentries_node_mix: Option<u64>,
    /// `estimated_dentries` over the node's nr_dentry.
    pub share_of_node_dentries: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<KubeNames>,
    /// Objects (dentries and inodes) on the superblocks' LRUs charged to the
    /// cgroup, exact, from shrinker debugfs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lru_objects_exact: Option<u64>,
    /// Cgroups folded into this row (1 but for `other`).
    pub cgroups: usize,
    /// The cgroup's memory, hierarchical as cAdvisor reads it (its children
    /// included): the working set, the reclaimable slab in it and the
    /// working set without it. `None` for `other` and where the files are
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<RowMemory>,
}

/// What a pod's memory is made of: cAdvisor's working set, the slab in it,
/// the dentries' bytes estimated from that slab, and the working set
/// without the slab the kernel may reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct RowMemory {
    #[serde(flatten)]
    pub figures: CgroupMemory,
    /// Dentries in the cgroup and its children, estimated from their slab
    /// (v2 `slab_reclaimable`, v1 all kernel memory) ÷
    /// [`CHARGED_BYTES_PER_DENTRY`]: an upper bound, exact for a cgroup
    /// whose slab is only dentries.
    pub dentries_estimated: u64,
    /// Those dentries × [`CHARGED_BYTES_PER_DENTRY`].
    pub dentry_bytes_estimated: u64,
}

impl RowMemory {
    pub(crate) fn of(figures: CgroupMemory) -> RowMemory {
        let slab = figures.slab_reclaimable_bytes.or(figures.kernel_bytes).unwrap_or(0);
        let dentries_estimated = slab / CHARGED_BYTES_PER_DENTRY;
        RowMemory { figures, dentries_estimated, dentry_bytes_estimated: dentries_estimated * CHARGED_BYTES_PER_DENTRY }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ByCgroup {
    pub root: String,
    pub cgroup_version: u8,
    /// The file and field read, and what else it counts.
    pub figure: String,
    pub includes: String,
    pub charged_bytes_per_dentry: u64,
    /// nr_dentry × object size ÷ SReclaimable (capped at 1).
    pub node_dentry_share_of_reclaimable_slab: Option<f64>,
    pub cgroups_read: usize,
    pub total_bytes: u64,
    pub top: Vec<Row>,
    pub other: Option<Row>,
    /// Files that exist but could not be read (not guessed: left out).
    pub unreadable: Vec<String>,
    /// Whether exact LRU counts were available, and if not why.
    pub shrinker_debugfs: String,
}

/// The memory hierarchy's root directory from the proc root's
/// `self/cgroup` and `self/mountinfo`.
pub(crate) fn find_root(proc: &ProcRoot) -> Result<PathBuf> {
    match cgroup::own_memory_controller(proc)? {
        Some(mc) => Ok(mc.mount_point),
        None => bail!(
            "--by-cgroup: no cgroup hierarchy with the memory controller is mounted (per {}); give its root with --cgroup-root",
            proc.path("self/mountinfo").display()
        ),
    }
}

fn version_of(root: &Path) -> Result<u8> {
    if root.join("memory.use_hierarchy").exists() || root.join("memory.kmem.usage_in_bytes").exists() {
        Ok(1)
    } else if root.join("cgroup.controllers").exists() {
        Ok(2)
    } else {
        bail!(
            "--cgroup-root {}: not the root of a memory cgroup hierarchy (neither memory.use_hierarchy nor cgroup.controllers there)",
            root.display()
        )
    }
}

fn v2_slab_reclaimable(text: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix("slab_reclaimable ")).and_then(|v| v.trim().parse().ok())
}

struct Walk {
    version: u8,
    own: Vec<(String, u64, u64)>,
    unreadable: Vec<String>,
}

impl Walk {
    /// The figure of `dir` (hierarchical); records each cgroup's own share.
    fn visit(&mut self, root: &Path, dir: &Path) -> Option<u64> {
        let file = if self.version == 1 { "memory.kmem.usage_in_bytes" } else { "memory.stat" };
        let f = dir.join(file);
        let value = match std::fs::read_to_string(&f) {
            Ok(t) if self.version == 1 => t.trim().parse().ok(),
            Ok(t) => v2_slab_reclaimable(&t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                self.unreadable.push(format!("{}: {e}", f.display()));
                None
            }
        };
        let mut children = 0u64;
        match std::fs::read_dir(dir) {
            Ok(rd) => {
                let mut subs: Vec<PathBuf> =
                    rd.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect();
                subs.sort();
                for s in subs {
                    children += self.visit(root, &s).unwrap_or(0);
                }
            }
            Err(e) => self.unreadable.push(format!("{}: {e}", dir.display())),
        }
        let v = value?;
        if dir != root {
            let rel = format!("/{}", dir.strip_prefix(root).unwrap_or(dir).display());
            let ino = std::fs::metadata(dir).map(|m| m.ino()).unwrap_or(0);
            self.own.push((rel, v.saturating_sub(children), ino));
        }
        Some(v)
    }
}

/// Exact LRU objects per cgroup inode from every `sb-*` shrinker, or why not.
fn shrinker_counts(debugfs: &Path) -> (Option<HashMap<u64, u64>>, String) {
    let dir = debugfs.join("shrinker");
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return (
                None,
                format!(
                    "absent: {} does not exist (kernel built without CONFIG_SHRINKER_DEBUG, or debugfs not mounted): dentry counts are estimates",
                    dir.display()
                ),
            );
        }
        Err(e) => {
            return (
                None,
                format!("not readable: {}: {e} (debugfs needs root): dentry counts are estimates", dir.display()),
            );
        }
    };
    let mut per = HashMap::new();
    let mut files = 0;
    for e in rd.flatten() {
        if !e.file_name().to_string_lossy().starts_with("sb-") {
            continue;
        }
        let f = e.path().join("count");
        let Ok(text) = std::fs::read_to_string(&f) else { continue };
        if let Ok(v) = shrinker::parse_count(text.as_bytes()) {
            files += 1;
            for (ino, n) in v {
                *per.entry(ino).or_insert(0) += n;
            }
        }
    }
    (
        Some(per),
        format!(
            "read: exact counts of dentries and inodes on the LRUs of {files} superblocks ({}/sb-*/count)",
            dir.display()
        ),
    )
}

pub(crate) fn collect(opts: &Options, proc: &ProcRoot, nr_dentry: u64, s_reclaimable: u64) -> Result<ByCgroup> {
    let root = match &opts.root {
        Some(r) => r.clone(),
        None => find_root(proc)?,
    };
    if !root.is_dir() {
        bail!("--cgroup-root {}: no such directory", root.display());
    }
    // /sys/fs/cgroup itself on a v1 host: the memory hierarchy is below it.
    let root = if !root.join("memory.use_hierarchy").exists() && root.join("memory/memory.use_hierarchy").exists() {
        root.join("memory")
    } else {
        root
    };
    let version = version_of(&root)?;
    let mut w = Walk { version, own: Vec::new(), unreadable: Vec::new() };
    w.visit(&root, &root);
    let (exact, shrinker_note) = shrinker_counts(&opts.debugfs);
    let share = (s_reclaimable > 0)
        .then(|| (nr_dentry.saturating_mul(DENTRY_OBJECT_BYTES) as f64 / s_reclaimable as f64).min(1.0));
    let row = |cgroup: String, bytes: u64, cgroups: usize| {
        let est = bytes / CHARGED_BYTES_PER_DENTRY;
        Row {
            kubernetes: kube::names(&cgroup),
            estimated_dentries: est,
            estimated_dentries_node_mix: share.map(|s| (est as f64 * s).round() as u64),
            share_of_node_dentries: if nr_dentry > 0 { est as f64 / nr_dentry as f64 } else { 0.0 },
            cgroup,
            bytes,
            lru_objects_exact: None,
            cgroups,
            memory: None,
        }
    };
    let cgroups_read = w.own.len();
    let total_bytes = w.own.iter().map(|o| o.1).sum();
    w.own.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let rest = w.own.split_off(opts.top.min(w.own.len()));
    let top = w
        .own
        .into_iter()
        .map(|(p, b, ino)| Row {
            lru_objects_exact: exact.as_ref().map(|m| m.get(&ino).copied().unwrap_or(0)),
            memory: CgroupMemory::read(&root.join(p.trim_start_matches('/')), version).map(RowMemory::of),
            ..row(p, b, 1)
        })
        .collect();
    let other = (!rest.is_empty()).then(|| {
        let bytes = rest.iter().map(|o| o.1).sum();
        let lru = exact.as_ref().map(|m| rest.iter().map(|o| m.get(&o.2).copied().unwrap_or(0)).sum());
        Row { kubernetes: None, lru_objects_exact: lru, ..row("other".into(), bytes, rest.len()) }
    });
    let (figure, includes) = if version == 1 {
        (
            "memory.kmem.usage_in_bytes (cgroup v1)",
            "all kernel memory charged to the cgroup: dentries, inodes and every other slab, kernel stacks, page tables",
        )
    } else {
        ("slab_reclaimable in memory.stat (cgroup v2)", "dentries, inodes and the other reclaimable slab caches")
    };
    Ok(ByCgroup {
        root: root.display().to_string(),
        cgroup_version: version,
        figure: figure.into(),
        includes: includes.into(),
        charged_bytes_per_dentry: CHARGED_BYTES_PER_DENTRY,
        node_dentry_share_of_reclaimable_slab: share,
        cgroups_read,
        total_bytes,
        top,
        other,
        unreadable: w.unreadable,
        shrinker_debugfs: shrinker_note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cgroup").join(name)
    }

    fn opts(root: PathBuf, top: usize, debugfs: &Path) -> Options {
        Options { root: Some(root), top, debugfs: debugfs.into() }
    }

    const M: u64 = 1_000_000;

    #[test]
    fn v1_cgroupfs_own_shares_ranked_with_kubernetes_names() {
        let none = tempfile::tempdir().unwrap();
        let proc = ProcRoot::new(crate::procfs::fixture_dir("6.18"));
        let b = collect(&opts(fixture("v1-cgroupfs"), 4, none.path()), &proc, 4 * M, 2000 * M).unwrap();
        assert_eq!(b.cgroup_version, 1);
        assert_eq!(b.cgroups_read, 11);
        assert_eq!(b.total_bytes, 790 * M, "the top-level cgroups: all but the root's own");
        let got: Vec<(&str, u64)> = b.top.iter().map(|r| (r.cgroup.as_str(), r.bytes)).collect();
        let c1 = "/kubepods/burstable/pod0f3b5d2a-8c1e-4b7f-9a6d-2e4c8b1a7f90/4a1d6e8f2b3c5d7e9f0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6";
        assert_eq!(
            got,
            vec![
                (c1, 550 * M),
                ("/system.slice/containerd.service", 60 * M),
                ("/kubepods/burstable", 50 * M),
                ("/kubepods/burstable/pod0f3b5d2a-8c1e-4b7f-9a6d-2e4c8b1a7f90", 50 * M)
            ]
        );
        let top = &b.top[0];
        // The container's memory (v1): 600 MB charged, 20 MB inactive file, 550 MB kernel memory.
        let m = top.memory.unwrap();
        assert_eq!(m.figures.working_set_bytes, 580 * M, "memory.usage_in_bytes − total_inactive_file");
        assert_eq!(m.figures.slab_reclaimable_bytes, None, "v1 has no slab line");
        assert_eq!(m.figures.working_set_without_kernel_bytes, Some(30 * M));
        assert_eq!(m.dentries_estimated, 550 * M / 200);
        assert!(b.top[1..].iter().all(|r| r.memory.is_none()), "the other cgroups have no usage file");
        assert_eq!(top.estimated_dentries, 550 * M / 200);
        assert!((top.share_of_node_dentries - 550.0 / 200.0 / 4.0).abs() < 1e-9);
        // 4M dentries × 192 B of 2000 MB reclaimable slab: 38.4%.
        assert_eq!(top.estimated_dentries_node_mix, Some((550.0 * M as f64 / 200.0 * 0.384).round() as u64));
        let k = top.kubernetes.as_ref().unwrap();
        assert_eq!(k.qos.as_deref(), Some("burstable"));
        assert_eq!(k.pod_uid.as_deref(), Some("0f3b5d2a-8c1e-4b7f-9a6d-2e4c8b1a7f90"));
        assert!(k.container_id.as_deref().unwrap().starts_with("4a1d6e8f"));
        let other = b.other.as_ref().unwrap();
        assert_eq!((other.cgroups, other.bytes), (7, 80 * M));
        assert!(b.shrinker_debugfs.starts_with("absent:"), "{}", b.shrinker_debugfs);
        assert!(b.unreadable.is_empty());
    }

    #[test]
    fn v2_systemd_and_exact_counts_from_shrinker_debugfs() {
        let root = fixture("v2-systemd");
        let debugfs = tempfile::tempdir().unwrap();
        let pod = root.join(
            "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f3b5d2a_8c1e_4b7f_9a6d_2e4c8b1a7f90.slice",
        );
        let ino = std::fs::metadata(&pod).unwrap().ino();
        for (sb, text) in [("sb-ext4-27", format!("1 50\n{ino} 1000000 5\n")), ("sb-tmpfs-3", format!("{ino} 7\n"))] {
            std::fs::create_dir_all(debugfs.path().join("shrinker").join(sb)).unwrap();
            std::fs::write(debugfs.path().join("shrinker").join(sb).join("count"), text).unwrap();
        }
        std::fs::create_dir_all(debugfs.path().join("shrinker/thp-zero-1")).unwrap();
        let proc = ProcRoot::new(crate::procfs::fixture_dir("6.18"));
        let b = collect(&opts(root, 10, debugfs.path()), &proc, 4 * M, 0).unwrap();
        assert_eq!(b.cgroup_version, 2);
        assert!(b.figure.contains("slab_reclaimable"));
        assert_eq!(b.top[0].bytes, 360 * M, "the pod's own: the removed containers' charges");
        assert_eq!(b.top[0].lru_objects_exact, Some(1_000_012));
        assert_eq!(b.top[0].kubernetes.as_ref().unwrap().container_id, None);
        // The pod's memory, hierarchical: 420 MB charged, 3 MB inactive file, 400 MB reclaimable slab.
        let m = b.top[0].memory.unwrap();
        assert_eq!(m.figures.working_set_bytes, 417 * M, "cAdvisor: memory.current − inactive_file");
        assert_eq!(m.figures.slab_reclaimable_bytes, Some(400 * M));
        assert_eq!(m.figures.working_set_without_reclaimable_slab_bytes, Some(17 * M));
        assert_eq!((m.dentries_estimated, m.dentry_bytes_estimated), (2 * M, 400 * M));
        assert!(b.top[1..].iter().all(|r| r.memory.is_none()), "no memory.current in the other fixtures");
        let crio = b.top.iter().find(|r| r.cgroup.contains("crio-")).unwrap();
        assert_eq!(crio.bytes, 100 * M);
        assert_eq!(crio.lru_objects_exact, Some(0));
        assert_eq!(crio.kubernetes.as_ref().unwrap().qos.as_deref(), Some("guaranteed"));
        assert_eq!(b.top[0].estimated_dentries_node_mix, None, "no SReclaimable, no node mix");
        assert!(
            b.shrinker_debugfs.starts_with("read:") && b.shrinker_debugfs.contains("2 superblocks"),
            "{}",
            b.shrinker_debugfs
        );
        assert!(b.other.is_none());
    }

    #[test]
    fn not_a_cgroup_root() {
        let d = tempfile::tempdir().unwrap();
        let proc = ProcRoot::new(crate::procfs::fixture_dir("6.18"));
        let e = collect(&opts(d.path().into(), 10, d.path()), &proc, 1, 1).unwrap_err();
        assert!(format!("{e:#}").contains("not the root of a memory cgroup hierarchy"), "{e:#}");
    }

    #[test]
    fn slab_reclaimable_line() {
        assert_eq!(v2_slab_reclaimable("anon 1\nslab_reclaimable 4096\nslab_unreclaimable 8\n"), Some(4096));
        assert_eq!(v2_slab_reclaimable("anon 1\n"), None);
    }
}
