//! Every command opens its outputs before any work: `--json` into a
//! missing directory fails at once with exit 1 and the one error of the
//! file, nothing printed before it, for every benchmark of the registry
//! (the library's, which the binary is built from) and for `status` and `vm`.

mod common;

use common::bin;
use dentrylab::cli::registry::{MINIMAL_ARGS, NAMES};

const MISSING: &str = "/nonexistent/x.json";

/// `dentrylab ARGS --json MISSING REST` fails before any work.
fn fails_first(args: &[&str], rest: &[&str]) {
    let out = bin().args(args).args(["--json", MISSING]).args(rest).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert_eq!(
        err,
        format!(
            "dentrylab: error: cannot create output file {MISSING}\n  caused by: No such file or directory (os error 2)\n"
        ),
        "{args:?}"
    );
    assert!(out.stdout.is_empty(), "{args:?} printed {}", String::from_utf8_lossy(&out.stdout));
}

/// The registry's benchmarks: each one's name and the fewest arguments a
/// valid run takes (its `Benchmark::MINIMAL_ARGS`).
fn registry() -> Vec<Vec<&'static str>> {
    let lines: Vec<Vec<&str>> = NAMES
        .iter()
        .zip(MINIMAL_ARGS)
        .map(|(name, args)| std::iter::once(*name).chain(args.iter().copied()).collect())
        .collect();
    assert!(lines.iter().any(|l| l[0] == "reclaim"), "{lines:?}");
    lines
}

#[test]
fn json_into_a_missing_directory_fails_before_any_benchmark_runs() {
    // gvisor refuses to plan without root: its own test below.
    for line in registry().iter().filter(|l| l[0] != "gvisor") {
        fails_first(line, &[]);
    }
    fails_first(&["status"], &[]);
    // vm's own --json goes before the command it runs in its guests.
    fails_first(&["vm", "--kernel", "/nonexistent/vmlinuz"], &["--", "status"]);
}

/// gvisor used to open --json only after its run.
#[test]
fn gvisor_opens_its_json_before_the_run() {
    require_root!();
    let gvisor = registry().into_iter().find(|l| l[0] == "gvisor").expect("gvisor in the registry");
    fails_first(&gvisor, &[]);
}
