//! docs/guidance.md's tables are the output of `__internal __guidance` on
//! the recorded matrices it names, verbatim: no number in them is typed by
//! hand. And the command on one matrix: a row per kernel and reclaim path,
//! the emulated ones marked.

mod common;
mod metrics;

use common::bin;
use metrics::repo;

/// The matrices docs/guidance.md is computed from, in its order.
const MATRICES: &[&str] = &[
    "docs/results/vm-matrix-tmpfs-hardlink-umount.json",
    "docs/results/vm-matrix-tmpfs-hardlink-ns-exit.json",
    "docs/results/vm-matrix-icount-tmpfs-hardlink-umount-nsexit.json",
    "docs/results/vm-icount-tmpfs-umount-dirs1000-7.3-vs-6.12.json",
    "docs/results/vm-matrix-ext4-negative-umount.json",
    "docs/results/vm-matrix-ext4-negative-drop-caches.json",
    "docs/results/vm-matrix-icount-ext4-negative-umount-dropcaches-inotify.json",
    "docs/results/vm-6.12-rt-vs-cloud-idle.json",
];

fn guidance(files: &[&str]) -> String {
    let o = bin().current_dir(repo()).args(["__internal", "__guidance"]).args(files).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn the_doc_holds_the_commands_output() {
    let doc = std::fs::read_to_string(repo().join("docs/guidance.md")).unwrap();
    let out = guidance(MATRICES);
    assert!(doc.contains(out.trim()), "docs/guidance.md lacks the output of __guidance on its matrices:\n{out}");
}

#[test]
fn one_row_per_kernel_and_path_emulated_ones_marked() {
    let out = guidance(&["docs/results/vm-matrix-tmpfs-hardlink-umount.json"]);
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| 6.") || l.starts_with("| 7.")).collect();
    assert_eq!(rows.len(), 5, "four guest kernels and the host: {out}");
    let host = rows.iter().find(|r| r.contains("6.18.44-fc-v669")).unwrap();
    assert!(!host.contains("TCG"), "the host row is not emulated: {host}");
    for r in rows.iter().filter(|r| !r.contains("6.18.44")) {
        assert!(r.matches("(TCG, emulated)").count() >= 4, "each figure of an emulated row says so: {r}");
    }
    assert!(out.contains("`dentrylab reclaim --sizes 50k,100k,200k"), "the guest command above its rows: {out}");
}

#[test]
fn a_file_that_is_not_a_matrix_fails_with_its_name() {
    let o =
        bin().current_dir(repo()).args(["__internal", "__guidance", "docs/results/seed-6.18.json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("seed-6.18.json: not a vm matrix"), "{o:?}");
}
