//! Every command opens its outputs before any work: `--json` into a
//! missing directory fails at once with exit 1 and the one error of the
//! file, nothing printed before it, for every benchmark of the registry
//! (as the binary lists it) and for `status` and `vm`.

mod common;

use common::bin;

const MISSING: &str = "/nonexistent/x.json";

/// The fewest arguments a valid run of each benchmark takes, beside
/// `--json`. A benchmark added to the registry fails here until it has
/// its line.
fn minimal(name: &str) -> &'static [&'static str] {
    match name {
        "reclaim" | "pollute" | "churn" | "scale" => &[],
        "create" => &["--count", "1000"],
        "containers" => &["--count", "2"],
        "mitigate" => &["--workload", "lookups"],
        "gvisor" => &["--runsc", "/bin/true"],
        other => panic!("the registry's benchmark {other} has no arguments here: add its line to minimal()"),
    }
}

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

fn registry() -> Vec<String> {
    let out = bin().args(["__internal", "benchmarks"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let names: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(String::from).collect();
    assert!(names.iter().any(|n| n == "reclaim"), "{names:?}");
    names
}

#[test]
fn json_into_a_missing_directory_fails_before_any_benchmark_runs() {
    // gvisor refuses to plan without root: its own test below.
    for name in registry().iter().filter(|n| *n != "gvisor") {
        let mut args = vec![name.as_str()];
        args.extend(minimal(name));
        fails_first(&args, &[]);
    }
    fails_first(&["status"], &[]);
    // vm's own --json goes before the command it runs in its guests.
    fails_first(&["vm", "--kernel", "/nonexistent/vmlinuz"], &["--", "status"]);
}

/// gvisor used to open --json only after its run.
#[test]
fn gvisor_opens_its_json_before_the_run() {
    require_root!();
    assert!(registry().iter().any(|n| n == "gvisor"));
    let mut args = vec!["gvisor"];
    args.extend(minimal("gvisor"));
    fails_first(&args, &[]);
}
