//! Inside each folder of `src/` the child modules import one way (no cycle
//! among siblings), no benchmark's folder imports another's, and no child of
//! `bench/reclaim/` names an item of `reclaim/mod.rs` (an upward import).
//! The top-level layers are `tests/module_layers.rs`'s; the scanner both use
//! is `tests/module_graph/`.

mod module_graph;

use module_graph::{Edges, FolderEdges, find_cycle, folder_edges, paths_in, upward_imports};
use std::collections::BTreeSet;

/// One line per folder with a cycle: the cycle, and where each of its
/// edges is written.
fn folder_cycles(all: &FolderEdges) -> Vec<String> {
    let mut out = vec![];
    for (folder, edges) in all {
        if let Some(c) = find_cycle(edges) {
            let wheres: Vec<String> = c
                .windows(2)
                .map(|w| {
                    let files = &edges[&(w[0].clone(), w[1].clone())];
                    format!("{} -> {} ({})", w[0], w[1], files.iter().cloned().collect::<Vec<_>>().join(", "))
                })
                .collect();
            out.push(format!("src/{folder}/: {}: {}", c.join(" -> "), wheres.join("; ")));
        }
    }
    out
}

#[test]
fn files_inside_each_folder_import_one_way() {
    let src = module_graph::src();
    let all = folder_edges(&src);
    let n: usize = all.values().map(|e| e.len()).sum();
    assert!(n > 30, "found only {n} edges inside folders under {}: is the scanner broken?", src.display());
    for (folder, e) in &all {
        eprintln!("src/{folder}/: {} import edges between its children", e.len());
    }
    let bad = folder_cycles(&all);
    assert!(bad.is_empty(), "import cycle(s) inside a folder (types below, users above):\n  {}", bad.join("\n  "));
}

#[test]
fn folder_scanner_resolves_super_crate_and_groups() {
    let me: Vec<String> = ["report", "svg", "axis"].iter().map(|s| s.to_string()).collect();
    let text = "use super::kinds::*;\nuse super::{Figure, figures::{a, b}};\nlet x = super::super::table::render(1);\n// super::hidden\nuse crate::analysis::fit::PowerFit;\nuse self::inner::Thing;";
    let got: Vec<String> = paths_in(text, &me).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        got,
        [
            "report::svg::kinds",
            "report::svg::Figure",
            "report::svg::figures::a",
            "report::svg::figures::b",
            "report::table::render",
            "analysis::fit::PowerFit",
            "report::svg::axis::inner::Thing"
        ]
    );
}

#[test]
fn cycle_finder_finds_a_cycle_and_passes_a_chain() {
    let edge = |e: &mut Edges, a: &str, b: &str| {
        e.entry((a.into(), b.into())).or_default().insert(format!("{a}.rs"));
    };
    let mut chain = Edges::new();
    edge(&mut chain, "fit", "interval");
    edge(&mut chain, "interval", "run_scatter");
    edge(&mut chain, "fit", "run_scatter");
    assert_eq!(find_cycle(&chain), None);
    let mut circle = chain.clone();
    edge(&mut circle, "run_scatter", "fit");
    assert_eq!(find_cycle(&circle).unwrap(), ["fit", "interval", "run_scatter", "fit"]);
    let mut all = FolderEdges::new();
    all.insert("analysis".into(), circle);
    all.insert("report".into(), chain);
    let bad = folder_cycles(&all);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].starts_with("src/analysis/: fit -> interval -> run_scatter -> fit"), "{bad:?}");
}

// ---------------------------------------------------------------------------
// Between benchmarks: a benchmark (a line of `each_benchmark!` in
// `src/bench/mod.rs`) uses `bench/common/` (and the shared `layers/`), never
// another benchmark's folder. (That `report/` names no benchmark is a
// top-level edge: `tests/module_layers.rs`.)

/// Edges between benchmarks that remain, each with why; the test fails on
/// any other, and on one of these once it is gone (so the list shrinks).
/// None today: what two benchmarks share is in `bench/common/`.
const BENCHMARK_EDGES_LEFT: &[(&str, &str, &str)] = &[];

/// One line per edge from one benchmark's folder into another's, not in `left`.
fn benchmark_violations(bench: &Edges, names: &[String], left: &[(&str, &str, &str)]) -> Vec<String> {
    let mut out = vec![];
    for ((from, to), files) in bench {
        if names.contains(from) && names.contains(to) && !left.iter().any(|(f, t, _)| f == from && t == to) {
            let files = files.iter().cloned().collect::<Vec<_>>().join(", ");
            out.push(format!("bench/{from} -> bench/{to} in {files}: move what both use into bench/common"));
        }
    }
    for (f, t, why) in left {
        if !bench.contains_key(&(f.to_string(), t.to_string())) {
            out.push(format!("{f} -> {t} is gone ({why}): remove it from BENCHMARK_EDGES_LEFT"));
        }
    }
    out
}

#[test]
fn no_benchmark_imports_another() {
    let src = module_graph::src();
    let names = module_graph::benchmarks(&src);
    assert!(
        names.len() >= 8 && names.contains(&"reclaim".to_string()),
        "benchmarks read from each_benchmark!: {names:?}"
    );
    let all = folder_edges(&src);
    let bad = benchmark_violations(&all["bench"], &names, BENCHMARK_EDGES_LEFT);
    assert!(bad.is_empty(), "benchmark(s) importing another benchmark:\n  {}", bad.join("\n  "));
}

#[test]
fn benchmark_checker_names_an_edge() {
    let mut e = Edges::new();
    e.entry(("reclaim".into(), "gvisor".into())).or_default().insert("bench/reclaim/victims.rs".into());
    e.entry(("reclaim".into(), "common".into())).or_default().insert("bench/reclaim/checks.rs".into());
    let names = ["reclaim".to_string(), "gvisor".to_string()];
    let bad = benchmark_violations(&e, &names, &[]);
    assert_eq!(
        bad,
        ["bench/reclaim -> bench/gvisor in bench/reclaim/victims.rs: move what both use into bench/common"]
    );
    let bad = benchmark_violations(&Edges::new(), &names, &[("reclaim", "gvisor", "why")]);
    assert_eq!(bad.len(), 1, "{bad:?}");
}

/// Upward imports left inside `bench/reclaim/` (each a child naming an item
/// of `reclaim/mod.rs`): the test fails when there are more, and asks for
/// this number to come down when there are fewer, until it is 0.
const RECLAIM_UPWARD_LEFT: usize = 0;

#[test]
fn bench_reclaim_imports_no_item_of_its_own_file() {
    let src = module_graph::src();
    let up = upward_imports(&src, &["bench", "reclaim"]);
    let files: BTreeSet<&str> = up.iter().map(|(f, _)| f.as_str()).collect();
    let list: Vec<String> = up.iter().map(|(f, i)| format!("{f}: {i}")).collect();
    eprintln!("bench/reclaim: {} upward imports in {} files", up.len(), files.len());
    assert_eq!(
        up.len(),
        RECLAIM_UPWARD_LEFT,
        "{} upward import(s) inside bench/reclaim/ (expected {RECLAIM_UPWARD_LEFT}): import the child that defines \
         the item instead:\n  {}",
        up.len(),
        list.join("\n  ")
    );
}

#[test]
fn upward_scanner_finds_an_item_of_the_folder_file() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("b/r")).unwrap();
    std::fs::write(src.join("b/r/mod.rs"), "mod x;\nmod y;\npub struct T;\n").unwrap();
    std::fs::write(src.join("b/r/x.rs"), "use super::T;\nuse super::y::U;\n").unwrap();
    std::fs::write(src.join("b/r/y.rs"), "pub struct U;\n").unwrap();
    let up = upward_imports(src, &["b", "r"]);
    assert_eq!(up.into_iter().collect::<Vec<_>>(), [("b/r/x.rs".to_string(), "T".to_string())]);
}
