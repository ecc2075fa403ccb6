//! Two dentrylab runs that change the same sysctl at once must not leave
//! it changed. Each run saves the original and its guardian writes it back;
//! without a lock the second run saves the first run's value, and the last
//! restore leaves that value behind. The guardian's per-sysctl lock makes a
//! second run wait until the first has put the value back. Here the test
//! itself holds the lock of fs.dentry-negative, as another run would, and
//! checks that a `mitigate` run that changes it waits, says so in one line,
//! changes nothing while it waits, and restores the original after.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::{bin, kernel_lock, wait_until};

const NEG: &str = "/proc/sys/fs/dentry-negative";
const LOCK: &str = "/run/lock/dentrylab-sysctl-fs.dentry-negative.lock";

/// A witness on purpose: read here, not through the library, to check the run put the value back.
fn value() -> String {
    std::fs::read_to_string(NEG).unwrap().trim().to_string()
}

#[test]
fn a_second_run_waits_for_the_sysctl_lock_and_restores_the_original() {
    require_root!();
    require!(std::path::Path::new(NEG).exists(), "this kernel has no {NEG} (6.13 and later)");
    require!(std::path::Path::new("/run/lock").is_dir(), "no /run/lock on this machine");
    let _k = kernel_lock();
    let original = value();
    let held = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(LOCK).unwrap();
    held.lock().unwrap();

    let mut child = bin()
        .args(["mitigate", "--workload", "temp-tables", "--setting", "fs.dentry-negative=0,1", "--allow-global"])
        .args(["--duration", "1s", "--json", "/dev/null"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first line on stderr is the wait, naming the sysctl and the lock.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("waiting for another dentrylab run") && line.contains("fs.dentry-negative"), "{line}");
    assert!(line.contains(LOCK), "{line}");
    // While it waits it has not started: the sysctl is untouched and the run goes on waiting.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(value(), original, "the waiting run changed {NEG}");
    assert!(child.try_wait().unwrap().is_none(), "the run did not wait for the lock");

    drop(held);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{rest}");
    // The guardian has let the lock go only after putting the value back.
    wait_until("the lock to be free again", Duration::from_secs(10), || {
        let f = std::fs::OpenOptions::new().write(true).open(LOCK).unwrap();
        f.try_lock().is_ok()
    });
    assert_eq!(value(), original, "{NEG} not restored");
}
