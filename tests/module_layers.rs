//! The top-level modules import one way. Every `crate::x` path under `src/`
//! is an edge from the file's top-level module to `x`; an edge must go to a
//! strictly lower layer of [`LAYERS`], which also rules out every cycle.
//! A new top-level module must be placed in [`LAYERS`] before it is used.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may use only modules of lower layers.
const LAYERS: &[&[&str]] = &[
    // Utilities that depend on nothing in the crate.
    &["error", "size", "duration", "result", "output", "stats", "histogram", "sys"],
    &["procfs"],
    &["env"],
    &["sandbox"],
    &["workload"],
    &["probe"],
    &["analysis"],
    // The calibration file stores fits.
    &["state"],
    // status reads the kernel and the calibration beside the benchmarks, and
    // needs none of them; report renders every result, status's included;
    // exporter serves status.
    &["bench", "status"],
    &["report"],
    &["exporter"],
    &["cli"],
    &["main"],
];

/// (from, to) -> files where `from` names `to`.
type Edges = BTreeMap<(String, String), BTreeSet<String>>;

/// Top-level module names that `crate::` paths in `text` name. Handles
/// `crate::a::b`, `crate::{a, b::c}` and nested groups; skips comment lines.
fn referenced(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            let before = rest[..i].chars().next_back();
            rest = &rest[i + "crate::".len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue; // e.g. `dentrylab_crate::`
            }
            if let Some(group) = rest.strip_prefix('{') {
                // Names right after `{` or a `,` at depth 1.
                let mut depth = 1;
                let mut start = true;
                let mut name = String::new();
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 1 => start = true,
                        c if start && (c.is_alphanumeric() || c == '_') => name.push(c),
                        _ => {
                            if !name.is_empty() {
                                out.insert(std::mem::take(&mut name));
                            }
                            if !c.is_whitespace() {
                                start = false;
                            }
                        }
                    }
                    if depth == 0 {
                        break;
                    }
                }
            } else {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn edges(src: &Path) -> Edges {
    let mut files = vec![];
    rust_files(src, &mut files);
    let mut edges = Edges::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
        let from = first.strip_suffix(".rs").unwrap_or(&first).to_string();
        let text = std::fs::read_to_string(&f).unwrap();
        for to in referenced(&text) {
            if to != from && to != "self" {
                edges.entry((from.clone(), to)).or_default().insert(rel.display().to_string());
            }
        }
    }
    edges
}

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
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = edges(&src);
    assert!(edges.len() > 30, "found only {} import edges under {}: is the scanner broken?", edges.len(), src.display());
    let bad = violations(&edges, LAYERS);
    assert!(
        bad.is_empty(),
        "{} import edge(s) against the layer order (lowest first: {:?}):\n  {}",
        bad.len(),
        LAYERS,
        bad.join("\n  ")
    );
}

#[test]
fn every_layer_name_is_a_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
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
    assert_eq!(bad, ["low -> high goes up (layer 0 -> 1) in low.rs", "peer -> high goes sideways (layer 1 -> 1) in peer.rs"]);
}
