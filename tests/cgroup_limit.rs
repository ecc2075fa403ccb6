//! In a memory cgroup with a limit (a pod), the memory checks plan with what
//! the limit leaves, not with the node's MemAvailable: dentries are charged
//! to the cgroup, so the limit is what a run would hit first.

mod common;

use std::path::Path;

use common::{TempCgroup, bin};

#[test]
fn a_cgroup_limit_refuses_what_the_node_would_allow() {
    require_root!();
    let memory = Path::new("/sys/fs/cgroup/memory");
    require!(memory.join("cgroup.procs").exists(), "needs the cgroup v1 memory controller at {}", memory.display());
    // 300k hard links: about 68 MB at 227 B each, far under half of the
    // node's MemAvailable, over half of a 64 MiB limit.
    let args = ["create", "--count", "300k", "--kind", "hardlink", "--hold", "0", "--json", "/dev/null"];
    let free = bin().args(args).output().unwrap();
    assert_eq!(free.status.code(), Some(0), "{}", String::from_utf8_lossy(&free.stderr));

    let cg = TempCgroup::new(memory, "memory-limit");
    std::fs::write(cg.0.join("memory.limit_in_bytes"), (64u64 << 20).to_string()).unwrap();
    let out = cg.command().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    for needle in
        ["300k", "memory cgroup's limit leaves", "64.0 MiB", "dentrylab-test-memory-limit", "MemAvailable", "--force"]
    {
        assert!(lines[0].contains(needle), "{:?} lacks {needle:?}", lines[0]);
    }
}
