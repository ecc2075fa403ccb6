//! What a user sees does not drift: `bench/transcripts/run.sh` on this
//! build (every command's `--help`, exit codes and bad-input messages, as
//! root and as nobody) must equal the transcripts recorded beside it,
//! `bench/transcripts/root.txt` and `nobody.txt`. A deliberate change
//! re-records them: `DENTRYLAB_BLESS=1 cargo test --release --test
//! transcripts`, then the diff is reviewed and committed with the change.
//! Needs root (the script runs every case as root and, through setpriv,
//! as nobody), as CI is.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

/// What names the build or the machine, recorded as a placeholder: the
/// version line's `(revision 1a2b3c4d5e6f, rustc 1.95.0)` as `(revision
/// REVISION, rustc RUSTC)`, and the CPUs this process may run on (`--cpu
/// 99`'s error, `CPUs [0, 1]`) as `CPUs [ALLOWED]`.
fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match (line.find("(revision "), line.find(", rustc ")) {
            (Some(a), Some(b)) if b > a && line.trim_end().ends_with(')') => {
                out.push_str(&line[..a]);
                out.push_str("(revision REVISION, rustc RUSTC)");
                out.push_str(&line[line.trim_end().len()..]);
            }
            _ => out.push_str(&allowed_cpus(line)),
        }
    }
    out
}

/// `CPUs [0, 1]` → `CPUs [ALLOWED]` (a list of numbers only).
fn allowed_cpus(line: &str) -> String {
    let Some(a) = line.find("CPUs [") else { return line.to_string() };
    let start = a + "CPUs [".len();
    match line[start..].find(']') {
        Some(n) if line[start..start + n].chars().all(|c| c.is_ascii_digit() || c == ',' || c == ' ') => {
            format!("{}ALLOWED{}", &line[..start], &line[start + n..])
        }
        _ => line.to_string(),
    }
}

/// A transcript's cases by their command line (`$ dentrylab ...`), each
/// with its exit code and output.
fn cases(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for case in text.split("\n$ dentrylab ").map(|c| c.trim_start_matches("$ dentrylab ")) {
        let (line, body) = case.split_once('\n').unwrap_or((case, ""));
        out.insert(line.to_string(), body.trim_end().to_string());
    }
    out
}

/// One paragraph per case that differs: gone, new, or changed (old and new).
fn differences(recorded: &str, now: &str) -> Vec<String> {
    let (old, new) = (cases(recorded), cases(now));
    let mut out = vec![];
    for (line, was) in &old {
        match new.get(line) {
            None => out.push(format!("gone: $ dentrylab {line}")),
            Some(is) if is != was => {
                out.push(format!("changed: $ dentrylab {line}\n--- recorded\n{was}\n--- now\n{is}"))
            }
            Some(_) => {}
        }
    }
    for line in new.keys().filter(|l| !old.contains_key(*l)) {
        out.push(format!("new: $ dentrylab {line}"));
    }
    out
}

#[test]
fn every_case_reads_as_recorded_as_root_and_as_nobody() {
    require_root_and!("setpriv");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("bash")
        .arg(root.join("bench/transcripts/run.sh"))
        .arg(env!("CARGO_BIN_EXE_dentrylab"))
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "bench/transcripts/run.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    let bless = std::env::var_os("DENTRYLAB_BLESS").is_some();
    let mut bad = vec![];
    for who in ["root", "nobody"] {
        let now = normalise(&std::fs::read_to_string(dir.path().join(format!("{who}.txt"))).unwrap());
        let path = root.join(format!("bench/transcripts/{who}.txt"));
        if bless {
            std::fs::write(&path, &now).unwrap();
            eprintln!("recorded {}", path.display());
            continue;
        }
        let recorded = std::fs::read_to_string(&path).unwrap_or_default();
        let d = differences(&recorded, &now);
        assert!(cases(&now).len() > 200, "only {} cases as {who}: is the script broken?", cases(&now).len());
        if !d.is_empty() {
            bad.push(format!("as {who}, {} case(s):\n{}", d.len(), d.join("\n\n")));
        }
    }
    assert!(
        bad.is_empty(),
        "what a user sees changed; if meant, re-record with `DENTRYLAB_BLESS=1 cargo test --release --test \
         transcripts` and commit the transcripts:\n{}",
        bad.join("\n\n")
    );
}

#[test]
fn differences_name_each_case() {
    let old =
        "$ dentrylab --help\n[exit 0]\n--- stdout\nA\n\n$ dentrylab nosuch\n[exit 2]\n\n$ dentrylab gone\n[exit 2]\n";
    let new =
        "$ dentrylab --help\n[exit 0]\n--- stdout\nB\n\n$ dentrylab nosuch\n[exit 2]\n\n$ dentrylab new\n[exit 0]\n";
    let d = differences(old, new);
    assert_eq!(d.len(), 3, "{d:?}");
    assert!(d[0].starts_with("changed: $ dentrylab --help\n--- recorded\n[exit 0]\n--- stdout\nA"), "{d:?}");
    assert_eq!(d[1], "gone: $ dentrylab gone");
    assert_eq!(d[2], "new: $ dentrylab new");
    assert!(differences(old, old).is_empty());
    assert_eq!(
        normalise("dentrylab 0.1.0 (revision 61db7004fc79, rustc 1.95.0)\n"),
        "dentrylab 0.1.0 (revision REVISION, rustc RUSTC)\n"
    );
    assert_eq!(
        normalise("dentrylab: error: --cpu 99: this process may only run on CPUs [0, 1]; choose one of them\n"),
        "dentrylab: error: --cpu 99: this process may only run on CPUs [ALLOWED]; choose one of them\n"
    );
}
