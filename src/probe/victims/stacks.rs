//! The victims' stack sampler: while a victim is in a long call, the
//! kernel stack of its thread (or, when it only waits for its children or
//! its server, of theirs) says where in the kernel it waits.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{SAMPLE_AFTER, SAMPLE_EVERY, Sample, Shared, Watch};
use crate::sys;

/// The stack sampler: every [`SAMPLE_EVERY`], the stack of each victim in
/// a call of [`SAMPLE_AFTER`] or more.
pub(super) fn sampler(watches: &[Arc<Watch>], cpu: usize, shared: &Shared) -> Vec<Vec<Sample>> {
    let mut out = vec![Vec::new(); watches.len()];
    let _ = sys::pin_current_thread(cpu);
    if !shared.wait_go() {
        return out;
    }
    let after = SAMPLE_AFTER.as_nanos() as u64;
    while !shared.stop.load(Ordering::SeqCst) {
        std::thread::sleep(SAMPLE_EVERY);
        let now = sys::monotonic_ns();
        for (i, w) in watches.iter().enumerate() {
            let since = w.in_call.load(Ordering::SeqCst);
            if since == 0 || now.saturating_sub(since) < after {
                continue;
            }
            if let Some(frames) = read_stack(w.tid.load(Ordering::SeqCst), w.peer) {
                out[i].push(Sample { at_ns: sys::monotonic_ns(), frames });
            }
        }
    }
    out
}

/// The kernel stack of victim thread `tid`; when it only waits for its
/// children (the `container` victim waits for its runtime) or for its
/// `peer` (the `mariadb` victim for its server), the first stack among
/// their threads (and descendants') that is not idle (see
/// [`crate::procfs::stack::idle`]), or its own when all are.
fn read_stack(tid: u32, peer: Option<u32>) -> Option<Vec<String>> {
    let own = stack_of(&Path::new("/proc/self/task").join(tid.to_string()))?;
    if !crate::procfs::stack::idle(&own) {
        return Some(own);
    }
    let mut queue: Vec<u32> = children(&Path::new("/proc/self/task").join(tid.to_string()));
    queue.extend(peer);
    let mut seen = 0;
    while let Some(pid) = queue.pop() {
        seen += 1;
        if seen > MAX_DESCENDANTS {
            break;
        }
        for t in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
            if let Some(st) = stack_of(&t.path()).filter(|s| !crate::procfs::stack::idle(s)) {
                return Some(st);
            }
            queue.extend(children(&t.path()));
        }
    }
    Some(own)
}

/// At most this many descendant processes are searched per sample.
const MAX_DESCENDANTS: usize = 64;

fn stack_of(task: &Path) -> Option<Vec<String>> {
    let f = std::fs::File::open(task.join("stack")).ok()?;
    crate::procfs::stack::parse(std::io::BufReader::new(f)).ok().filter(|f| !f.is_empty())
}

fn children(task: &Path) -> Vec<u32> {
    std::fs::read_to_string(task.join("children"))
        .map(|s| s.split_whitespace().filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default()
}
