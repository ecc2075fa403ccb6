//! `/proc/self/cgroup` and the cgroup lines of `/proc/self/mountinfo`:
//! which cgroup hierarchy has the memory controller, where it is mounted,
//! and where this process sits in it.

use std::io::BufRead;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

/// One line of `/proc/<pid>/cgroup`: `hierarchy-ID:controllers:path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    pub hierarchy: u32,
    /// Empty for the cgroup v2 line (`0::/path`).
    pub controllers: Vec<String>,
    pub path: String,
}

pub fn parse_membership(r: impl BufRead) -> Result<Vec<Membership>> {
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
pub struct CgroupMount {
    /// 1 for `cgroup`, 2 for `cgroup2`.
    pub version: u8,
    pub mount_point: PathBuf,
    /// The cgroup shown at the mount point (`/` unless bind-mounted or namespaced).
    pub root: String,
    /// Super options: the v1 controllers (`memory`, `name=systemd`, ...).
    pub options: Vec<String>,
}

/// The cgroup mounts among mountinfo's lines.
pub fn parse_mounts(r: impl BufRead) -> Result<Vec<CgroupMount>> {
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
pub fn memory_controller(
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
    fn bad_lines_are_named() {
        let e = parse_membership("x:memory:/\n".as_bytes()).unwrap_err();
        assert!(format!("{e:#}").contains("hierarchy ID \"x\""));
        assert!(parse_membership("nonsense\n".as_bytes()).is_err());
        assert_eq!(unescape(r"/a\040b"), "/a b");
    }
}
