//! The top-level modules import one way. Every `crate::x` path under `src/`
//! is an edge from the file's top-level module to `x` (in the binary,
//! `main.rs`, every `dentrylab::x` path: the library's module `x`); an edge
//! must go to a strictly lower layer of [`LAYERS`], which also rules out
//! every cycle. A new top-level module must be placed in [`LAYERS`] before
//! it is used. The library's root, `lib.rs`, only declares the modules.
//!
//! Inside each folder the child modules import one way too: no cycle among
//! siblings (see `files_inside_each_folder_import_one_way`).

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
    // The rendering contract (tables, sections, figure specs) that each
    // benchmark implements in its own folder and report's engines consume:
    // below bench so a benchmark can implement it, above analysis for the
    // fits and profiles it draws.
    &["render"],
    // census reads the kernel's dentry hash table; below bench and status,
    // which call it (`reclaim --census`, `status --census`).
    &["census"],
    // status reads the kernel and the calibration beside the benchmarks, and
    // needs none of them; report renders every result, status's included;
    // exporter serves status.
    &["bench", "status"],
    &["report"],
    &["exporter"],
    &["cli"],
    // The crate roots: the library's (`lib.rs`, which declares the modules)
    // and the binary (`main.rs`, which calls `cli`).
    &["lib", "main"],
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
        let mut text = std::fs::read_to_string(&f).unwrap();
        if rel == Path::new("main.rs") {
            // The binary reaches the library by its name.
            text = text.replace("dentrylab::", "crate::");
        }
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
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
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
    assert_eq!(
        bad,
        ["low -> high goes up (layer 0 -> 1) in low.rs", "peer -> high goes sideways (layer 1 -> 1) in peer.rs"]
    );
}

// ---------------------------------------------------------------------------
// Inside a folder: the files of one module folder (its child modules) import
// one way too. An edge is a path in a child (or anywhere below it) that names
// a sibling child: `super::x`, `crate::folder::x`, `self::x` from the folder's
// own file is the folder itself and not an edge. Items of the folder's own
// file (`mod.rs`, or `name.rs` beside `name/`) are not nodes: that file
// declares the children. Test modules count like any other code.

/// Module path of a file under `src/`: `report/svg/axis.rs` → report, svg,
/// axis; `report/svg/mod.rs` → report, svg; `main.rs` and `lib.rs` → nothing.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap_or(&last).to_string();
    if stem != "mod" && !(parts.is_empty() && (stem == "main" || stem == "lib")) {
        parts.push(stem);
    }
    parts
}

/// Every path that starts with `crate::`, `super::` or `self::` in `text`,
/// resolved against `module` (the file's module path), groups expanded.
/// Comment lines are skipped.
fn paths_in(text: &str, module: &[String]) -> Vec<Vec<String>> {
    fn ident(s: &str) -> (&str, &str) {
        let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
        (&s[..end], &s[end..])
    }
    /// Reads `a::b::{c, d::e}` at the start of `s` into full paths after `base`.
    fn read(s: &str, base: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
        let mut path = base;
        let mut i = 0;
        loop {
            let rest = &s[i..];
            if let Some(group) = rest.strip_prefix('{') {
                let mut j = 0;
                let g = group;
                loop {
                    let t = &g[j..];
                    let skip = t.len() - t.trim_start().len();
                    j += skip;
                    if g[j..].starts_with('}') {
                        return i + 1 + j + 1;
                    }
                    j += read(&g[j..], path.clone(), out);
                    let t = &g[j..];
                    let skip = t.len() - t.trim_start().len();
                    j += skip;
                    if g[j..].starts_with(',') {
                        j += 1;
                    } else if g[j..].starts_with('}') || j >= g.len() {
                        return i + 1 + (j + 1).min(g.len());
                    }
                }
            }
            let (name, after) = ident(rest);
            if name.is_empty() {
                out.push(path);
                return i;
            }
            if name == "self" && !path.is_empty() {
                // `use super::x::{self, y}`: the module itself.
            } else {
                path.push(name.to_string());
            }
            i += name.len();
            if after.starts_with("::") {
                i += 2;
            } else {
                out.push(path);
                return i;
            }
        }
    }
    let mut out = vec![];
    for line in text.lines() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        let mut k = 0;
        while k < line.len() {
            let rest = &line[k..];
            let before = line[..k].chars().next_back();
            let boundary = !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
            let (base, len) = if !boundary {
                (None, 0)
            } else if rest.starts_with("crate::") {
                (Some(vec![]), "crate::".len())
            } else if rest.starts_with("super::") {
                let mut m = module.to_vec();
                let mut len = 0;
                while line[k + len..].starts_with("super::") {
                    m.pop();
                    len += "super::".len();
                }
                (Some(m), len)
            } else if rest.starts_with("self::") {
                (Some(module.to_vec()), "self::".len())
            } else {
                (None, 0)
            };
            match base {
                Some(b) => {
                    let used = read(&line[k + len..], b, &mut out);
                    k += len + used.max(1);
                }
                None => k += rest.chars().next().map_or(1, char::len_utf8),
            }
        }
    }
    out
}

/// Folder (module path joined by `/`) → (from child, to child) → files.
type FolderEdges = BTreeMap<String, Edges>;

fn folder_edges(src: &Path) -> FolderEdges {
    let mut files = vec![];
    rust_files(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(f.strip_prefix(src).unwrap())).collect();
    let mut out = FolderEdges::new();
    for f in &files {
        let rel = f.strip_prefix(src).unwrap();
        let me = module_of(rel);
        let text = std::fs::read_to_string(f).unwrap();
        for p in paths_in(&text, &me) {
            let common = me.iter().zip(&p).take_while(|(a, b)| a == b).count();
            // Top-level edges are the layers' business; a path into the
            // file's own module (or above it in the same line) is no edge.
            if common == 0 || common >= me.len() || common >= p.len() {
                continue;
            }
            let to = p[..=common].to_vec();
            if !modules.contains(&to) {
                continue; // an item of the folder's own file
            }
            let folder = p[..common].join("/");
            out.entry(folder)
                .or_default()
                .entry((me[common].clone(), p[common].clone()))
                .or_default()
                .insert(rel.display().to_string());
        }
    }
    out
}

/// A cycle in `edges` as its nodes, first repeated at the end; `None` if
/// the graph has none.
fn find_cycle(edges: &Edges) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from.as_str()).or_default().push(to.as_str());
    }
    // 0 unvisited, 1 on the stack, 2 done.
    fn visit<'a>(
        n: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        state: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        state.insert(n, 1);
        stack.push(n);
        for &m in next.get(n).into_iter().flatten() {
            match state.get(m).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|&s| s == m).unwrap();
                    let mut c: Vec<String> = stack[at..].iter().map(|s| s.to_string()).collect();
                    c.push(m.to_string());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(m, next, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n, 2);
        None
    }
    let mut state = BTreeMap::new();
    for &n in next.keys() {
        if state.get(n).copied().unwrap_or(0) == 0
            && let Some(c) = visit(n, &next, &mut state, &mut vec![])
        {
            return Some(c);
        }
    }
    None
}

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
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
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
// another benchmark's folder. And `report/` names no benchmark: each
// benchmark renders its own results, which `report` reaches through the
// registry's readers.

/// Edges between benchmarks that remain, each with why; the test fails on
/// any other, and on one of these once it is gone (so the list shrinks).
/// None today: what two benchmarks share is in `bench/common/`.
const BENCHMARK_EDGES_LEFT: &[(&str, &str, &str)] = &[];

/// The benchmarks of the registry, from `each_benchmark!`'s `module => Type,` lines.
fn benchmarks(src: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(src.join("bench/mod.rs")).unwrap();
    let start = text.find("macro_rules! each_benchmark").expect("each_benchmark! in src/bench/mod.rs");
    let body = &text[start..];
    let body = &body[..body.find("};").unwrap_or(body.len())];
    body.lines()
        .filter_map(|l| l.trim().strip_suffix(',').and_then(|l| l.split_once("=>")).map(|(m, _)| m.trim().to_string()))
        .filter(|m| !m.is_empty() && m.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .collect()
}

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
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let names = benchmarks(&src);
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

/// Top-level edges that the layers would allow but the design forbids.
const FORBIDDEN: &[(&str, &str, &str)] =
    &[("report", "bench", "each benchmark renders its own results; report reads them through the registry")];

#[test]
fn report_names_no_benchmark() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
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

// ---------------------------------------------------------------------------
// Upward imports inside a folder: a child that names an item of its
// folder's own file (`super::Options` in `bench/reclaim/sweep.rs`, where
// `reclaim/mod.rs` holds shared types and re-exports its children). The
// folder-cycle test does not see these (the folder's own file is no node),
// so a folder whose own file is both the types' home and the children's
// parent hides its cycles there.

/// (file, item) of every path in `folder`'s descendants (its own file
/// aside) that names an item of the folder's own file.
fn upward_imports(src: &Path, folder: &[&str]) -> BTreeSet<(String, String)> {
    let mut files = vec![];
    rust_files(&src.join(folder.join("/")), &mut files);
    let mut all = vec![];
    rust_files(src, &mut all);
    let modules: BTreeSet<Vec<String>> = all.iter().map(|f| module_of(f.strip_prefix(src).unwrap())).collect();
    let folder: Vec<String> = folder.iter().map(|s| s.to_string()).collect();
    let mut out = BTreeSet::new();
    for f in &files {
        let rel = f.strip_prefix(src).unwrap();
        let me = module_of(rel);
        if me == folder {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for p in paths_in(&text, &me) {
            if p.len() > folder.len() && p[..folder.len()] == folder[..] && !modules.contains(&p[..=folder.len()]) {
                out.insert((rel.display().to_string(), p[folder.len()].clone()));
            }
        }
    }
    out
}

/// Upward imports left inside `bench/reclaim/` (each a child naming an item
/// of `reclaim/mod.rs`): the test fails when there are more, and asks for
/// this number to come down when there are fewer, until it is 0.
const RECLAIM_UPWARD_LEFT: usize = 0;

#[test]
fn bench_reclaim_imports_no_item_of_its_own_file() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
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
