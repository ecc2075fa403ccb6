//! The top-level modules import one way. Every `crate::x` path under `src/`
//! is an edge from the file's top-level module to `x` (in the binary,
//! `main.rs`, every `dentrylab::x` path: the library's module `x`); an edge
//! must go to a strictly lower layer of [`LAYERS`], which also rules out
//! every cycle. A new top-level module must be placed in [`LAYERS`] before
//! it is used. The library's root, `lib.rs`, only declares the modules.
//!
//! Inside each folder the child modules import one way too, and no benchmark
//! imports another: `tests/module_folders.rs`. The scanner both use is
//! `tests/module_graph/`.

mod module_graph;

use module_graph::{Edges, LAYERS, edges, referenced};
use std::collections::BTreeSet;

/// One line per edge that is not to a strictly lower layer (or names a
/// module missing from `layers`).
fn violations(edges: &Edges, layers: &[&[&str]]) -> Vec<String> {
    let layer = |m: &str| layers.iter().position(|l| l.contains(&m));
    let mut out = vec![];
    for ((from, to), files) in edges {
        let files = files.iter().cloned().collect::<Vec<_>>().join(", ");
        match (layer(from), layer(to)) {
            (None, _) => out.push(format!("{from} is in no layer: add it to LAYERS (used in {files})")),
            (_, None) => out.push(format!("{to} is in no layer: add it to LAYERS (named by {files})")),
            (Some(a), Some(b)) if b >= a => out.push(format!(
                "{from} -> {to} goes {} (layer {a} -> {b}) in {files}",
                if a == b { "sideways" } else { "up" }
            )),
            _ => {}
        }
    }
    out
}

#[test]
fn top_level_imports_go_down_the_layers() {
    let src = module_graph::src();
    let edges = edges(&src);
    assert!(
        edges.len() > 30,
        "found only {} import edges under {}: is the scanner broken?",
        edges.len(),
        src.display()
    );
    let modules: BTreeSet<&str> = edges.keys().flat_map(|(f, t)| [f.as_str(), t.as_str()]).collect();
    eprintln!("top level: {} modules (the crate roots included), {} import edges", modules.len(), edges.len());
    let bad = violations(&edges, LAYERS);
    assert!(
        bad.is_empty(),
        "{} import edge(s) against the layer order (lowest first: {:?}):\n  {}",
        bad.len(),
        LAYERS,
        bad.join("\n  ")
    );
}

/// The binary is thin: it parses, calls the library's `cli`, prints the
/// error chain and picks the exit code; the layers live in the library.
#[test]
fn the_binary_is_thin_and_calls_the_library() {
    let src = module_graph::src();
    let main = std::fs::read_to_string(src.join("main.rs")).unwrap();
    let lines = main.lines().count();
    assert!(lines <= 60, "src/main.rs has {lines} lines (at most 60): move the work into the library");
    assert!(!main.lines().any(|l| l.trim_start().starts_with("mod ")), "src/main.rs declares a module");
    let edges = edges(&src);
    let from_main: Vec<&str> = edges.keys().filter(|(f, _)| f == "main").map(|(_, t)| t.as_str()).collect();
    assert!(from_main.contains(&"cli"), "main.rs does not call the library's cli: {from_main:?}");
    assert!(!edges.keys().any(|(f, _)| f == "lib"), "lib.rs names a module by path: it only declares them");
}

#[test]
fn every_layer_name_is_a_module() {
    let src = module_graph::src();
    for m in LAYERS.iter().flat_map(|l| l.iter()) {
        assert!(
            src.join(format!("{m}.rs")).is_file() || src.join(m).join("mod.rs").is_file(),
            "LAYERS names {m}, which is not a module under src/"
        );
    }
}

#[test]
fn scanner_reads_paths_and_groups() {
    let text = "use crate::a::b;\nuse crate::{c, d::{e, f}, g::h};\n// crate::commented\nlet x = crate::i::j(1);\nuse my_crate::k;";
    let got: Vec<String> = referenced(text).into_iter().collect();
    assert_eq!(got, ["a", "c", "d", "g", "i"]);
}

#[test]
fn checker_names_an_edge_up_and_a_cycle() {
    let mut e = Edges::new();
    e.entry(("low".into(), "high".into())).or_default().insert("low.rs".into());
    e.entry(("high".into(), "low".into())).or_default().insert("high/mod.rs".into());
    e.entry(("peer".into(), "high".into())).or_default().insert("peer.rs".into());
    let bad = violations(&e, &[&["low"], &["high", "peer"]]);
    assert_eq!(
        bad,
        ["low -> high goes up (layer 0 -> 1) in low.rs", "peer -> high goes sideways (layer 1 -> 1) in peer.rs"]
    );
}

/// Top-level edges that the layers would allow but the design forbids:
/// `report/` names no benchmark; each benchmark renders its own results,
/// which `report` reaches through the registry's readers.
const FORBIDDEN: &[(&str, &str, &str)] =
    &[("report", "bench", "each benchmark renders its own results; report reads them through the registry")];

#[test]
fn report_names_no_benchmark() {
    let src = module_graph::src();
    let edges = edges(&src);
    let bad: Vec<String> = FORBIDDEN
        .iter()
        .filter_map(|(f, t, why)| {
            edges
                .get(&(f.to_string(), t.to_string()))
                .map(|files| format!("{f} -> {t} in {} ({why})", files.iter().cloned().collect::<Vec<_>>().join(", ")))
        })
        .collect();
    assert!(bad.is_empty(), "forbidden import(s):\n  {}", bad.join("\n  "));
}
