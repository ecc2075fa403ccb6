//! The kernel's own selftests (`tools/testing/selftests`) in the guests:
//! `vm --kernel-source … --selftests TARGET,…` builds the targets from the
//! same source ([`super::source::selftests`]), the initramfs carries what
//! `make install` put in place under [`GUEST_DIR`] with the programs'
//! libraries and a shell, and the guest's init runs every test the install
//! lists (`kselftest-list.txt`), one after the other, after the command
//! (nothing a test leaves behind is in what the command measured), sending
//! each outcome over the result channel; the kernel log sent after them
//! holds any warning a test made the kernel print. The matrix gets a grid:
//! per test and row, its verdict and its TAP counts, so that a patched
//! kernel and its baseline are read side by side.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::render::Grid;

/// Where the installed selftests are in the guest.
pub(crate) const GUEST_DIR: &str = "/selftests";
/// The list `make install` writes: one `collection:test` per line.
pub(crate) const LIST: &str = "kselftest-list.txt";
/// Each test's time limit in the guest: kselftest's own default is 45 s
/// (`tools/testing/selftests/kselftest/runner.sh`); under TCG every
/// instruction is emulated, so this allows ten times more.
const TIME_LIMIT: Duration = Duration::from_secs(450);
/// The lines of a failed test's output kept, from its end, when it
/// printed no `not ok` line.
const TAIL: usize = 12;
/// The `not ok` lines kept of one test.
const MAX_NOT_OK: usize = 10;
/// kselftest's exit status for a test that skipped (`KSFT_SKIP`,
/// tools/testing/selftests/kselftest.h).
const KSFT_SKIP: i32 = 4;

/// How one test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    Pass,
    Fail,
    Skip,
    /// Killed at [`TIME_LIMIT`].
    Timeout,
    /// Could not be started.
    Error,
}

impl Verdict {
    fn of(exit: Option<i32>, timed_out: bool) -> Verdict {
        match exit {
            _ if timed_out => Verdict::Timeout,
            Some(0) => Verdict::Pass,
            Some(KSFT_SKIP) => Verdict::Skip,
            _ => Verdict::Fail,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "skip",
            Verdict::Timeout => "TIMEOUT",
            Verdict::Error => "ERROR",
        }
    }
}

/// One test run in a guest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Outcome {
    /// `collection:test`, as the install's list names it.
    pub test: String,
    pub verdict: Verdict,
    /// Its exit status; none when it was killed or never ran.
    pub exit: Option<i32>,
    /// Its TAP counts (the harness's `# Totals:` line when it printed one,
    /// else its top-level `ok`/`not ok` lines).
    pub pass: u32,
    pub fail: u32,
    pub skip: u32,
    pub seconds: f64,
    /// Its `not ok` lines (the first 10), and when it did not pass or
    /// skip its first `Expected` line, or its last lines when it printed no
    /// `not ok`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<String>,
}

/// The TAP counts of a test's output: (pass, fail, skip), and its
/// `not ok` lines.
pub(crate) fn counts(output: &str) -> (u32, u32, u32, Vec<String>) {
    let mut tally = (0, 0, 0);
    let mut failed = Vec::new();
    let mut totals = None;
    for l in output.lines() {
        if let Some(t) = l.strip_prefix("# Totals:") {
            let n = |k: &str| t.split_whitespace().find_map(|w| w.strip_prefix(k)?.parse::<u32>().ok()).unwrap_or(0);
            totals = Some((n("pass:") + n("xfail:"), n("fail:") + n("xpass:") + n("error:"), n("skip:")));
            continue;
        }
        let skip = l.contains("# SKIP");
        if l.starts_with("not ok ") {
            if skip {
                tally.2 += 1;
            } else {
                tally.1 += 1;
                failed.push(l.to_string());
            }
        } else if l.starts_with("ok ") {
            if skip {
                tally.2 += 1;
            } else {
                tally.0 += 1;
            }
        }
    }
    let (p, f, s) = totals.unwrap_or(tally);
    (p, f, s, failed)
}

/// Runs one installed test in the guest: `dir/collection/test`, in its
/// collection's directory, its output (both streams) kept in a file.
pub(crate) fn run_one(dir: &Path, entry: &str) -> Outcome {
    let (collection, test) = entry.split_once(':').unwrap_or(("", entry));
    let cwd = dir.join(collection);
    let started = Instant::now();
    let out_path = std::env::temp_dir().join(format!("selftest-{}.out", entry.replace(['/', ':'], "_")));
    let ran = (|| -> Result<(Option<i32>, bool)> {
        let out = std::fs::File::create(&out_path)?;
        let mut child = Command::new(cwd.join(test))
            .current_dir(&cwd)
            .env("PATH", "/bin:/sbin:/usr/bin:/usr/sbin")
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("cannot start {}", cwd.join(test).display()))?;
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok((status.code(), false));
            }
            if started.elapsed() > TIME_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                return Ok((None, true));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    })();
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(&out_path) {
        let _ = f.read_to_string(&mut text);
    }
    let _ = std::fs::remove_file(&out_path);
    let (exit, verdict, error) = match ran {
        Ok((exit, timed_out)) => (exit, Verdict::of(exit, timed_out), None),
        Err(e) => (None, Verdict::Error, Some(format!("{e:#}"))),
    };
    let (pass, fail, skip, mut lines) = counts(&text);
    if lines.len() > MAX_NOT_OK {
        let more = lines.len() - MAX_NOT_OK;
        lines.truncate(MAX_NOT_OK);
        lines.push(format!("… and {more} more not ok"));
    }
    // What it said first of why (the harness's first `Expected` line),
    // or, when it printed no `not ok`, its last lines.
    if !matches!(verdict, Verdict::Pass | Verdict::Skip) {
        match text.lines().find(|l| l.contains("Expected") || l.contains("error:")) {
            Some(why) if !lines.is_empty() => lines.push(why.to_string()),
            _ if lines.is_empty() => {
                let all: Vec<&str> = text.lines().collect();
                lines.extend(all[all.len().saturating_sub(TAIL)..].iter().map(|l| l.to_string()));
            }
            _ => {}
        }
        lines.extend(error);
    }
    Outcome {
        test: entry.to_string(),
        verdict,
        exit,
        pass,
        fail,
        skip,
        seconds: started.elapsed().as_secs_f64(),
        lines,
    }
}

/// The tests an install lists, `collection:test`, in its order.
pub(crate) fn listed(list: &str) -> Vec<String> {
    list.lines().map(str::trim).filter(|l| l.contains(':') && !l.starts_with('#')).map(str::to_string).collect()
}

/// One line per test and a column per row that ran selftests; `None`
/// when no row did.
pub(crate) fn grid<R>(m: &super::Matrix<R>) -> Option<Grid> {
    let rows: Vec<&super::Row<R>> = m.rows.iter().filter(|r| !r.selftests.is_empty()).collect();
    if rows.is_empty() {
        return None;
    }
    let mut header = vec!["Selftest".to_string()];
    header.extend(rows.iter().map(|r| match &r.build {
        Some(t) if !t.patches.is_empty() => format!("{} + {}", r.kernel_release, t.patches.join(" + ")),
        Some(_) => format!("{} (unpatched)", r.kernel_release),
        None => r.kernel_release.clone(),
    }));
    let mut tests: Vec<&str> = Vec::new();
    for r in &rows {
        for o in &r.selftests {
            if !tests.contains(&o.test.as_str()) {
                tests.push(&o.test);
            }
        }
    }
    let lines = tests
        .iter()
        .map(|t| {
            let mut line = vec![t.to_string()];
            line.extend(rows.iter().map(|r| match r.selftests.iter().find(|o| o.test == *t) {
                Some(o) => format!("{} (ok {}, not ok {}, skip {})", o.verdict.name(), o.pass, o.fail, o.skip),
                None => "not run".into(),
            }));
            line
        })
        .collect();
    Some(Grid { header, rows: lines })
}

/// The failed tests' lines, for under the grid: `row: test: line`.
pub(crate) fn failures<R>(m: &super::Matrix<R>) -> Vec<String> {
    let mut out = Vec::new();
    for r in &m.rows {
        for o in r.selftests.iter().filter(|o| !o.lines.is_empty()) {
            for l in &o.lines {
                out.push(format!("{}: {}: {l}", r.kernel_release, o.test));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_harness_totals_win_over_the_lines() {
        let out = "TAP version 13\n1..3\n# Starting 3 tests\nok 1 a.b\nnot ok 2 a.c\nok 3 a.d # SKIP no idmap\n\
                   # FAILED: 1 / 3 tests passed.\n# Totals: pass:1 fail:1 xfail:0 xpass:0 skip:1 error:0\n";
        assert_eq!(counts(out), (1, 1, 1, vec!["not ok 2 a.c".to_string()]));
        let bare = "ok 1 one\nok 2 two\nnot ok 3 three # SKIP why\n#  ok 9 nested\n";
        assert_eq!(counts(bare), (2, 0, 1, vec![]));
    }

    #[test]
    fn an_exit_status_is_kselftests_verdict() {
        assert_eq!(Verdict::of(Some(0), false), Verdict::Pass);
        assert_eq!(Verdict::of(Some(4), false), Verdict::Skip);
        assert_eq!(Verdict::of(Some(1), false), Verdict::Fail);
        assert_eq!(Verdict::of(None, false), Verdict::Fail);
        assert_eq!(Verdict::of(Some(0), true), Verdict::Timeout);
    }

    #[test]
    fn a_test_runs_in_its_collection_with_its_output_read() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("mount");
        std::fs::create_dir_all(&c).unwrap();
        let script = |name: &str, text: &str| {
            std::fs::write(c.join(name), text).unwrap();
            std::fs::set_permissions(c.join(name), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        };
        script(
            "t.sh",
            "#!/bin/sh\necho 'ok 1 here'; echo '# t.c:9:x:Expected 1 (1) == 0 (0)' >&2\n\
                        echo 'not ok 2 there' >&2; echo '# more'; exit 1\n",
        );
        let o = run_one(dir.path(), "mount:t.sh");
        assert_eq!((o.verdict, o.exit, o.pass, o.fail), (Verdict::Fail, Some(1), 1, 1), "{o:?}");
        assert_eq!(o.lines, ["not ok 2 there", "# t.c:9:x:Expected 1 (1) == 0 (0)"], "{o:?}");
        // No `not ok` line: its last lines, here where it ran.
        script("u.sh", "#!/bin/sh\npwd; exit 2\n");
        let u = run_one(dir.path(), "mount:u.sh");
        assert_eq!((u.verdict, u.exit), (Verdict::Fail, Some(2)), "{u:?}");
        assert!(u.lines.iter().any(|l| l.ends_with("/mount")), "{u:?}");
        let missing = run_one(dir.path(), "mount:nothing");
        assert_eq!(missing.verdict, Verdict::Error, "{missing:?}");
        assert!(missing.lines.iter().any(|l| l.contains("cannot start")), "{missing:?}");
    }

    #[test]
    fn the_list_is_its_collection_test_lines() {
        assert_eq!(
            listed("mount:run_nosymfollow.sh\n\nmount_setattr:mount_setattr_test\n"),
            vec!["mount:run_nosymfollow.sh".to_string(), "mount_setattr:mount_setattr_test".to_string()]
        );
    }
}
