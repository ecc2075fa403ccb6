//! `/proc/PID/task/TID/stack`: the kernel stack of a sleeping task, one
//! frame a line (`[<0>] synchronize_rcu_expedited+0x1c4/0x220`), innermost
//! first. Root only; empty for a task that is running.

use std::io::BufRead;

use anyhow::{Context, Result};

/// The function names of a stack, innermost first.
pub(crate) fn parse(r: impl BufRead) -> Result<Vec<String>> {
    let mut frames = Vec::new();
    for (i, line) in r.lines().enumerate() {
        let line = line.with_context(|| format!("stack: cannot read line {}", i + 1))?;
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        // "[<0>] name+off/len", or "name+off/len" on older kernels.
        let rest = t.split_once("] ").map_or(t, |(_, r)| r);
        let name = rest.split(['+', ' ']).next().unwrap_or("");
        anyhow::ensure!(!name.is_empty(), "stack: line {} has no function name: {t:?}", i + 1);
        frames.push(name.to_string());
    }
    Ok(frames)
}

/// The scheduler's and the wait queues' own frames: a task that sleeps
/// always has some of these innermost; what it waits *for* is the first
/// frame below them.
const PRIMITIVES: &[&str] = &[
    "__schedule",
    "schedule",
    "schedule_timeout",
    "schedule_preempt_disabled",
    "schedule_hrtimeout_range",
    "schedule_hrtimeout_range_clock",
    "io_schedule",
    "io_schedule_timeout",
    "__wait_for_common",
    "wait_for_common",
    "wait_for_completion",
    "wait_for_completion_state",
    "wait_for_completion_killable",
    "wait_for_completion_timeout",
    "do_wait_for_common",
    "__wait_rcu_gp",
    "wait_rcu_exp_gp",
    "rwsem_down_write_slowpath",
    "rwsem_down_read_slowpath",
    "down_write",
    "down_read",
    "__mutex_lock",
    "__mutex_lock_slowpath",
    "mutex_lock",
    "preempt_schedule_common",
    "__cond_resched",
];

/// Where a sleeping task waits: the innermost frame that is not a
/// scheduler or wait primitive, and the one that called it
/// (`exp_funnel_lock ← synchronize_rcu_expedited`); `None` for an empty
/// stack.
pub(crate) fn waits_in(frames: &[String]) -> Option<String> {
    let is_primitive = |f: &str| PRIMITIVES.contains(&f) || f.starts_with("schedule") || f.starts_with("__schedule");
    let mut own = frames.iter().map(String::as_str).filter(|f| !is_primitive(f));
    match (own.next(), own.next()) {
        (Some(a), Some(b)) => Some(format!("{a} ← {b}")),
        (Some(a), None) => Some(a.to_string()),
        (None, _) => frames.first().cloned(),
    }
}

/// Where a task sleeps when it is only waiting for work: a child to exit,
/// a futex, a poll, a pipe, a timer. A container runtime's processes sit
/// in these most of the time; a stack below none of them is doing
/// something that waits on the kernel.
const IDLE: &[&str] = &[
    "do_wait",
    "kernel_wait4",
    "futex_wait_queue",
    "futex_wait",
    "__futex_wait",
    "futex_do_wait",
    "ep_poll",
    "do_epoll_wait",
    "do_sys_poll",
    "do_select",
    "pipe_read",
    "pipe_write",
    "wait_woken",
    "do_nanosleep",
    "hrtimer_nanosleep",
    "unix_stream_read_generic",
    "__skb_wait_for_more_packets",
    "do_sigtimedwait",
    // A server's asynchronous I/O thread waiting for completions: io_uring
    // (MariaDB 10.11's InnoDB on 6.18: `io_cqring_wait ←
    // __do_sys_io_uring_enter`, read from its threads' stacks), libaio.
    "io_cqring_wait",
    "read_events",
    "sigsuspend",
    "ptrace_stop",
    "get_signal",
];

/// Whether a stack is a task idly waiting for work (see [`IDLE`]).
pub(crate) fn idle(frames: &[String]) -> bool {
    frames.iter().any(|f| IDLE.contains(&f.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `umount` victim's stack as `reclaim --victims umount` sampled
    /// it on this project's 6.18 VM during a tmpfs umount of 1M hard links
    /// on the other CPU (the run kept the names, not the offsets, which
    /// are written here as +0x0/0x0).
    const UMOUNT_VICTIM: &str = "[<0>] synchronize_rcu_expedited+0x0/0x0\n\
[<0>] namespace_unlock+0x0/0x0\n\
[<0>] path_umount+0x0/0x0\n\
[<0>] __x64_sys_umount+0x0/0x0\n\
[<0>] do_syscall_64+0x0/0x0\n\
[<0>] entry_SYSCALL_64_after_hwframe+0x0/0x0\n";

    #[test]
    fn frames_are_names_innermost_first() {
        let f = parse(UMOUNT_VICTIM.as_bytes()).unwrap();
        assert_eq!(f.len(), 6);
        assert_eq!(f[0], "synchronize_rcu_expedited");
        assert_eq!(f[2], "path_umount");
    }

    #[test]
    fn the_wait_is_below_the_primitives() {
        let f = parse(UMOUNT_VICTIM.as_bytes()).unwrap();
        assert_eq!(waits_in(&f).as_deref(), Some("synchronize_rcu_expedited ← namespace_unlock"));
        let f =
            parse("[<0>] __schedule+0x1/0x2\n[<0>] schedule+0x1/0x2\n[<0>] do_nanosleep+0x1/0x2\n".as_bytes()).unwrap();
        assert_eq!(waits_in(&f).as_deref(), Some("do_nanosleep"));
        assert_eq!(waits_in(&[]), None);
    }

    #[test]
    fn a_task_waiting_for_its_child_or_a_futex_is_idle_and_an_umount_is_not() {
        let f = parse(UMOUNT_VICTIM.as_bytes()).unwrap();
        assert!(!idle(&f));
        let w = parse("[<0>] do_wait+0x1/0x2\n[<0>] kernel_wait4+0x1/0x2\n".as_bytes()).unwrap();
        assert!(idle(&w));
        assert!(!idle(&[]));
    }

    #[test]
    fn old_format_without_the_bracket_and_a_bad_line() {
        let f = parse("synchronize_rcu+0x1/0x2\n".as_bytes()).unwrap();
        assert_eq!(f, vec!["synchronize_rcu"]);
        assert!(parse("[<0>] \n[<0>] +0x1\n".as_bytes()).is_err());
    }
}
