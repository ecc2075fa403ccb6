//! `/proc/self/cgroup` and the cgroup lines of `/proc/self/mountinfo`:
//! which cgroup hierarchy has the memory controller, where it is mounted,
//! and where this process sits in it.

use std::io::BufRead;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use super::memcg::stat_value;

/// One line of `/proc/<pid>/cgroup`: `hierarchy-ID:controllers:path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Membership {
    pub hierarchy: u32,
    /// Empty for the cgroup v2 line (`0::/path`).
    pub controllers: Vec<String>,
    pub path: String,
}

pub(crate) fn parse_membership(r: impl BufRead) -> Result<Vec<Membership>> {
    let mut out = Vec::new();
    for (i, line) in r.lines().enumerate() {
        let line = line.context("cgroup: cannot read")?;
        if line.trim().is_empty() {
            continue;
        }
        let mut it = line.splitn(3, ':');
        let (Some(id), Some(ctl), Some(path)) = (it.next(), it.next(), it.next()) else {
            bail!("cgroup: line {}: expected 'ID:controllers:path', found {line:?}", i + 1);
        };
        let hierarchy = id.parse().with_context(|| format!("cgroup: line {}: hierarchy ID {id:?}", i + 1))?;
        let controllers = ctl.split(',').filter(|c| !c.is_empty()).map(str::to_string).collect();
        out.push(Membership { hierarchy, controllers, path: path.to_string() });
    }
    Ok(out)
}

/// A mounted cgroup hierarchy, from mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CgroupMount {
    /// 1 for `cgroup`, 2 for `cgroup2`.
    pub version: u8,
    pub mount_point: PathBuf,
    /// The cgroup shown at the mount point (`/` unless bind-mounted or namespaced).
    pub root: String,
    /// Super options: the v1 controllers (`memory`, `name=systemd`, ...).
    pub options: Vec<String>,
}

/// The cgroup mounts among mountinfo's lines.
pub(crate) fn parse_mounts(r: impl BufRead) -> Result<Vec<CgroupMount>> {
    let mut out = Vec::new();
    for (i, line) in r.lines().enumerate() {
        let line = line.context("mountinfo: cannot read")?;
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let mut r = right.split_whitespace();
        let version = match r.next() {
            Some("cgroup") => 1,
            Some("cgroup2") => 2,
            _ => continue,
        };
        let _source = r.next();
        let options = r.next().unwrap_or("").split(',').map(str::to_string).collect();
        let l: Vec<&str> = left.split_whitespace().collect();
        if l.len() < 5 {
            bail!("mountinfo: line {}: too few fields before ' - ': {line:?}", i + 1);
        }
        out.push(CgroupMount { version, mount_point: PathBuf::from(unescape(l[4])), root: unescape(l[3]), options });
    }
    Ok(out)
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b.get(i + 1..i + 4).filter(|o| o.iter().all(|c| (b'0'..=b'7').contains(c)));
        let byte = octal.and_then(|o| u8::try_from(o.iter().fold(0u32, |n, c| n * 8 + u32::from(c - b'0'))).ok());
        if let (b'\\', Some(c)) = (b[i], byte) {
            out.push(c);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where the memory controller is, for this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryController {
    pub version: u8,
    pub mount_point: PathBuf,
    /// This process's cgroup, as a directory under the mount point.
    pub own_dir: PathBuf,
}

/// Finds the hierarchy that has the memory controller. cgroup v2 counts
/// only when its root lists `memory` in `root_controllers` (the contents of
/// its `cgroup.controllers`), which the caller reads; v2 wins over v1 when
/// both have it.
pub(crate) fn memory_controller(
    membership: &[Membership],
    mounts: &[CgroupMount],
    v2_root_controllers: Option<&str>,
) -> Option<MemoryController> {
    let own = |m: &CgroupMount, path: &str| {
        let rel = path.strip_prefix(m.root.as_str()).unwrap_or(path);
        m.mount_point.join(rel.trim_start_matches('/'))
    };
    if v2_root_controllers.is_some_and(|c| c.split_whitespace().any(|c| c == "memory"))
        && let (Some(m), Some(me)) =
            (mounts.iter().find(|m| m.version == 2), membership.iter().find(|m| m.hierarchy == 0))
    {
        return Some(MemoryController { version: 2, mount_point: m.mount_point.clone(), own_dir: own(m, &me.path) });
    }
    let me = membership.iter().find(|m| m.controllers.iter().any(|c| c == "memory"))?;
    let m = mounts.iter().find(|m| m.version == 1 && m.options.iter().any(|o| o == "memory"))?;
    Some(MemoryController { version: 1, mount_point: m.mount_point.clone(), own_dir: own(m, &me.path) })
}

/// This process's memory controller, from the proc root's `self/cgroup`
/// and `self/mountinfo` (v2's root controllers read from its mount).
pub fn own_memory_controller(proc: &super::ProcRoot) -> Result<Option<MemoryController>> {
    let me = parse_membership(proc.open("self/cgroup")?)?;
    let mounts = parse_mounts(proc.open("self/mountinfo")?)?;
    let v2 = mounts
        .iter()
        .find(|m| m.version == 2)
        .and_then(|m| std::fs::read_to_string(m.mount_point.join("cgroup.controllers")).ok());
    Ok(memory_controller(&me, &mounts, v2.as_deref()))
}

/// The room a memory cgroup level leaves below its limit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Headroom {
    /// limit − working set.
    pub bytes: u64,
    pub limit: u64,
    /// Usage less inactive file pages (what the kubelet calls the working
    /// set: page cache the limit would reclaim first does not count).
    pub working_set: u64,
    pub dir: PathBuf,
}

/// A limit file's value: `None` for `max` (v2) or v1's "unlimited" (a
/// number near 2^63).
pub(crate) fn parse_limit(text: &str) -> Option<u64> {
    let t = text.trim();
    let v: u64 = t.parse().ok()?;
    (v < 1 << 62).then_some(v)
}

/// The least room any level from this process's cgroup up to the
/// hierarchy's root leaves below its limit (dentries are charged to the
/// memory cgroup: a pod's limit stops a run before the node's memory does);
/// `None` when no level has a limit or none can be read.
pub(crate) fn headroom(mc: &MemoryController) -> Option<Headroom> {
    let (limit_file, usage_file, inactive) = match mc.version {
        2 => ("memory.max", "memory.current", "inactive_file"),
        _ => ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"),
    };
    let mut dir = mc.own_dir.clone();
    let mut best: Option<Headroom> = None;
    loop {
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
        let limit = read(limit_file).and_then(|t| parse_limit(&t));
        let usage = read(usage_file).and_then(|t| t.trim().parse::<u64>().ok());
        if let (Some(limit), Some(usage)) = (limit, usage) {
            let working_set =
                usage.saturating_sub(read("memory.stat").and_then(|t| stat_value(&t, inactive)).unwrap_or(0));
            let bytes = limit.saturating_sub(working_set);
            if best.as_ref().is_none_or(|b| bytes < b.bytes) {
                best = Some(Headroom { bytes, limit, working_set, dir: dir.clone() });
            }
        }
        if dir == mc.mount_point || !dir.pop() || !dir.starts_with(&mc.mount_point) {
            break;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::fixture_dir;

    fn read(name: &str) -> std::io::BufReader<std::fs::File> {
        std::io::BufReader::new(std::fs::File::open(fixture_dir("6.18").join(name)).unwrap())
    }

    #[test]
    fn this_machine_has_memory_on_v1_only() {
        let me = parse_membership(read("self-cgroup")).unwrap();
        assert_eq!(me.len(), 10);
        let mounts = parse_mounts(read("self-mountinfo")).unwrap();
        assert_eq!(mounts.iter().filter(|m| m.version == 1).count(), 9);
        assert_eq!(mounts.iter().filter(|m| m.version == 2).count(), 1);
        // The v2 root there lists no controllers.
        let mc = memory_controller(&me, &mounts, Some("")).unwrap();
        assert_eq!(mc.version, 1);
        assert_eq!(mc.mount_point, PathBuf::from("/sys/fs/cgroup/memory"));
        assert!(mc.own_dir.ends_with("memory/jobs/job-0001"), "{mc:?}");
    }

    #[test]
    fn pure_v2_machine() {
        let me = parse_membership(read("self-cgroup-v2")).unwrap();
        let mounts = parse_mounts(read("self-mountinfo-v2")).unwrap();
        let mc = memory_controller(&me, &mounts, Some("cpuset cpu io memory pids")).unwrap();
        assert_eq!(mc.version, 2);
        assert_eq!(mc.own_dir, PathBuf::from("/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope"));
        assert_eq!(memory_controller(&me, &mounts, Some("cpu io")), None);
    }

    #[test]
    fn limits_and_headroom_up_the_tree() {
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("9223372036854771712\n"), None);
        assert_eq!(parse_limit("4294967296\n"), Some(4 << 30));
        // A v2 tree: the pod's limit (1 GiB, 600 MiB used of which 100 MiB
        // inactive file: 524 MiB left) leaves less than its parent's (8 GiB,
        // 7000 MiB used: 1192 MiB left).
        let root = std::env::temp_dir().join(format!("dentrylab-headroom-{}", std::process::id()));
        let pod = root.join("kubepods/pod1");
        std::fs::create_dir_all(&pod).unwrap();
        let w = |d: &std::path::Path, f: &str, v: &str| std::fs::write(d.join(f), v).unwrap();
        w(&pod, "memory.max", "1073741824\n");
        w(&pod, "memory.current", &format!("{}\n", 600u64 << 20));
        w(&pod, "memory.stat", &format!("anon 1\ninactive_file {}\nactive_file 2\n", 100u64 << 20));
        let parent = root.join("kubepods");
        w(&parent, "memory.max", &format!("{}\n", 8u64 << 30));
        w(&parent, "memory.current", &format!("{}\n", 7000u64 << 20));
        w(&root, "memory.max", "max\n");
        let mc = MemoryController { version: 2, mount_point: root.clone(), own_dir: pod.clone() };
        let h = headroom(&mc).unwrap();
        assert_eq!((h.bytes, h.dir.clone()), (524u64 << 20, pod.clone()), "{h:?}");
        // The parent nearly full: it is the one that binds.
        w(&parent, "memory.current", &format!("{}\n", 8000u64 << 20));
        let h = headroom(&mc).unwrap();
        assert_eq!((h.bytes, h.dir.clone()), (192u64 << 20, parent.clone()), "{h:?}");
        // No limit anywhere: none.
        w(&pod, "memory.max", "max\n");
        w(&parent, "memory.max", "max\n");
        assert_eq!(headroom(&mc), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse_membership("x:memory:/\n".as_bytes()).unwrap_err();
        assert!(format!("{e:#}").contains("hierarchy ID \"x\""));
        assert!(parse_membership("nonsense\n".as_bytes()).is_err());
        assert_eq!(unescape(r"/a\040b"), "/a b");
    }
}
