//! Children that start processes of their own (a kernel build's `make`
//! and its sub-makes and compilers), each in a process group of its own
//! that is killed whole: when the child ends (whatever it left running in
//! its group) and, through a [`Guardian`], when dentrylab ends, SIGKILL
//! included. PR_SET_PDEATHSIG reaches only the child itself, never what
//! it started.
//!
//! The child tells the guardian its group between fork and exec (one line,
//! `group PGID`, on the guardian's pipe), so the guardian knows the group
//! before the child runs anything; dentrylab writes `ended PGID` once the
//! group is gone. The guardian's main calls [`wait_for_parent_end_killing_groups`].

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::Result;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;

use super::guardian::Guardian;

/// How long the guardian waits for a killed group's processes to be gone
/// before it removes the directories they worked in.
const KILLED_GROUP_WAIT: Duration = Duration::from_secs(20);

/// A child leading a process group of its own, known to a guardian.
pub(crate) struct Group<'a> {
    child: Child,
    guardian: &'a ChildStdin,
    done: bool,
}

impl Guardian {
    /// Spawns `cmd` tied to dentrylab ([`super::command_dies_with_parent`])
    /// as the leader of a new process group, which this guardian kills if
    /// dentrylab ends before [`Group::wait`] has returned. Fails if the
    /// guardian is gone (an unguarded build could outlive dentrylab).
    pub(crate) fn spawn_group(&self, cmd: &mut Command) -> std::io::Result<Group<'_>> {
        let pipe = self.pipe().ok_or_else(|| std::io::Error::other("the guardian's pipe is closed"))?;
        let fd = pipe.as_raw_fd();
        super::command_dies_with_parent(cmd).process_group(0);
        // SAFETY: the closure runs between fork and exec and calls only
        // async-signal-safe functions (getpid, write) on a stack buffer.
        unsafe { cmd.pre_exec(move || announce_group(fd)) };
        Ok(Group { child: cmd.spawn()?, guardian: pipe, done: false })
    }
}

/// In the child, before exec: `group PID\n` on the guardian's pipe (one
/// write of fewer than PIPE_BUF bytes: atomic).
fn announce_group(fd: i32) -> std::io::Result<()> {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() } as u32;
    let mut buf = [0u8; 32];
    let head = b"group ";
    buf[..head.len()].copy_from_slice(head);
    let mut digits = [0u8; 10];
    let (mut n, mut len) = (pid, 0);
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut at = head.len();
    for d in digits[..len].iter().rev() {
        buf[at] = *d;
        at += 1;
    }
    buf[at] = b'\n';
    at += 1;
    // SAFETY: `buf` lives across the call and holds `at` bytes.
    let wrote = unsafe { libc::write(fd, buf.as_ptr().cast(), at) };
    if wrote != at as isize {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

impl Group<'_> {
    /// Waits for the leader to exit, kills what it left in its group
    /// (while the leader, not yet reaped, still holds the group's id), tells
    /// the guardian the group is gone, and reaps the leader.
    pub(crate) fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let pid = Pid::from_raw(self.child.id() as i32);
        loop {
            match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
                Ok(_) => break,
            }
        }
        let _ = killpg(pid, Signal::SIGKILL);
        let mut pipe = self.guardian;
        let _ = pipe.write_all(format!("ended {pid}\n").as_bytes());
        self.done = true;
        self.child.wait()
    }

    /// What the leader wrote on its piped standard error, once it closed it.
    pub(crate) fn stderr(&mut self) -> String {
        super::child_stderr(&mut self.child)
    }
}

impl Drop for Group<'_> {
    /// A group dropped before it was waited for (an error on the way) is
    /// killed and waited for.
    fn drop(&mut self) {
        if !self.done {
            let _ = killpg(Pid::from_raw(self.child.id() as i32), Signal::SIGKILL);
            let _ = self.wait();
        }
    }
}

/// In the guardian: ignore the signals that end a session, read the
/// groups announced on standard input until dentrylab has ended
/// (end-of-file), then SIGKILL every group that had not ended and wait
/// (up to [`KILLED_GROUP_WAIT`]) until nothing of them runs.
pub(crate) fn wait_for_parent_end_killing_groups() -> Result<()> {
    super::ignore_termination_signals()?;
    let mut groups = BTreeSet::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        match line.split_once(' ') {
            Some(("group", id)) => groups.extend(id.trim().parse::<i32>().ok().filter(|&g| g > 1)),
            Some(("ended", id)) => {
                if let Ok(g) = id.trim().parse::<i32>() {
                    groups.remove(&g);
                }
            }
            _ => {}
        }
    }
    for &g in &groups {
        let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
    }
    let deadline = Instant::now() + KILLED_GROUP_WAIT;
    while groups.iter().any(|&g| !group_members(g as u32).is_empty()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// The processes of process group `pgid` that still run (zombies left
/// out), read from /proc/PID/stat.
pub(crate) fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| stat_state_and_group(&s))
                .is_some_and(|(state, group)| group == pgid && state != 'Z' && state != 'X')
        })
        .collect()
}

/// The state and process group of a /proc/PID/stat line (the command name,
/// in parentheses, may hold spaces and parentheses: the fields start after
/// the last `)`).
fn stat_state_and_group(stat: &str) -> Option<(char, u32)> {
    let mut f = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = f.next()?.chars().next()?;
    let _ppid = f.next()?;
    Some((state, f.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_its_state_and_group_whatever_the_name() {
        assert_eq!(stat_state_and_group("4242 (make) S 4200 4242 4100 0 -1"), Some(('S', 4242)));
        assert_eq!(stat_state_and_group("7 (a) b (c)) Z 1 99 99 0"), Some(('Z', 99)));
        assert_eq!(stat_state_and_group("7 (cut"), None);
    }

    #[test]
    fn a_group_is_killed_whole_when_its_leader_ends() {
        let g = Guardian::of_command(Command::new("cat").stdout(std::process::Stdio::null()));
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 300 & echo $!; exit 0"]).stdout(std::process::Stdio::piped());
        let mut group = g.spawn_group(&mut cmd).unwrap();
        let mut line = String::new();
        std::io::BufReader::new(group.child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let pgid = group.child.id();
        assert!(group.wait().unwrap().success());
        let sleeper: u32 = line.trim().parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while group_members(pgid).contains(&sleeper) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!group_members(pgid).contains(&sleeper), "the sleep the leader left still runs");
    }
}
