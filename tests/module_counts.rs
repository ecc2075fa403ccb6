//! The import counts docs/architecture.md gives are computed here from the
//! code, never typed: the block between [`BEGIN`] and [`END`] in the doc
//! must equal what [`block`] makes of `src/` today. When an import moves,
//! the test fails with the new block; `DENTRYLAB_BLESS=1 cargo test
//! --release --test module_counts` writes it into the doc (then commit it).
//! The scanner is `tests/module_graph/`, the one the layer tests use.

mod module_graph;

use module_graph::{LAYERS, edges, folder_edges, module_of, rust_files, upward_imports};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

const DOC: &str = "docs/architecture.md";
const BEGIN: &str = "<!-- import counts: begin (written by tests/module_counts.rs) -->";
const END: &str = "<!-- import counts: end -->";

/// Every module under `src`, as its path of names (`bench/reclaim/sweep.rs` → bench, reclaim, sweep).
fn modules(src: &Path) -> BTreeSet<Vec<String>> {
    let mut files = vec![];
    rust_files(src, &mut files);
    files.iter().map(|f| module_of(f.strip_prefix(src).unwrap())).filter(|m| !m.is_empty()).collect()
}

/// Name (count), … for the modules a module names, highest layer first.
fn targets(list: &[(String, usize)]) -> String {
    list.iter().map(|(to, n)| format!("{to} ({n})")).collect::<Vec<_>>().join(", ")
}

/// (layer, highest first; module) → each module it names, with its count.
type Rows = BTreeMap<(std::cmp::Reverse<usize>, String), Vec<(String, usize)>>;

/// The top level: one row per module that imports, highest layer first,
/// each lower module it names with how many of its files name it.
fn top_level(src: &Path, out: &mut String) {
    let e = edges(src);
    let layer = |m: &str| LAYERS.iter().position(|l| l.contains(&m)).map_or(usize::MAX, |i| i);
    let mut rows: Rows = BTreeMap::new();
    let mut files = 0;
    let mut against = 0;
    for ((from, to), f) in &e {
        files += f.len();
        if layer(to) >= layer(from) {
            against += 1;
        }
        rows.entry((std::cmp::Reverse(layer(from)), from.clone())).or_default().push((to.clone(), f.len()));
    }
    let mut all = vec![];
    rust_files(src, &mut all);
    let names: BTreeSet<String> = all
        .iter()
        .map(|f| f.strip_prefix(src).unwrap().components().next().unwrap().as_os_str().to_string_lossy().into_owned())
        .map(|n| n.strip_suffix(".rs").map_or(n.clone(), str::to_string))
        .collect();
    writeln!(
        out,
        "Top level: {} modules (the crate roots `lib` and `main` included) on {} layers; {} import edges \
         (module → module), written in {files} places (a file naming a module counts once); {against} \
         against the layer order.\n",
        names.len(),
        LAYERS.len(),
        e.len()
    )
    .unwrap();
    writeln!(out, "| layer | module | names (how many of its files) |\n|---|---|---|").unwrap();
    for ((std::cmp::Reverse(l), from), mut to) in rows {
        to.sort_by_key(|(t, n)| (std::cmp::Reverse(layer(t)), std::cmp::Reverse(*n), t.clone()));
        writeln!(out, "| {l} | `{from}` | {} |", targets(&to)).unwrap();
    }
}

/// Inside the folders: one row per folder with children, and the children
/// of `bench/reclaim/` one by one.
fn folders(src: &Path, out: &mut String) {
    let all = folder_edges(src);
    let mods = modules(src);
    let children = |folder: &[String]| {
        mods.iter().filter(|m| m.len() == folder.len() + 1 && m[..folder.len()] == folder[..]).count()
    };
    writeln!(
        out,
        "\nInside the folders (an edge: a child naming a sibling; upward: a child naming an item of the \
         folder's own `mod.rs`):\n\n| folder | children | edges between them | upward imports |\n|---|---|---|---|"
    )
    .unwrap();
    let folders: BTreeSet<&Vec<String>> = mods.iter().filter(|m| children(m) >= 2).collect();
    for f in folders {
        let name = f.join("/");
        let edges = all.get(&name).map_or(0, |e| e.len());
        let refs: Vec<&str> = f.iter().map(String::as_str).collect();
        let up = upward_imports(src, &refs).len();
        writeln!(out, "| `src/{name}/` | {} | {edges} | {up} |", children(f)).unwrap();
    }
    let reclaim = &["bench".to_string(), "reclaim".to_string()];
    let up = upward_imports(src, &["bench", "reclaim"]);
    let e = all.get("bench/reclaim").cloned().unwrap_or_default();
    let files: usize = e.values().map(BTreeSet::len).sum();
    writeln!(
        out,
        "\n`src/bench/reclaim/`: {} children, {} edges between them written in {files} places, {} upward \
         imports. What each child names of its siblings (how many of its files):\n\n| child | names |\n|---|---|",
        children(reclaim),
        e.len(),
        up.len()
    )
    .unwrap();
    let mut rows: BTreeMap<&str, Vec<(String, usize)>> = BTreeMap::new();
    for ((from, to), f) in &e {
        rows.entry(from.as_str()).or_default().push((to.clone(), f.len()));
    }
    for (from, to) in rows {
        writeln!(out, "| `{from}` | {} |", targets(&to)).unwrap();
    }
}

/// The doc's block for the tree at `src`.
fn block(src: &Path) -> String {
    let mut out = String::new();
    top_level(src, &mut out);
    folders(src, &mut out);
    out
}

#[test]
fn architecture_doc_counts_match_the_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let want = block(&module_graph::src());
    let path = root.join(DOC);
    let doc = std::fs::read_to_string(&path).unwrap();
    let (head, rest) = doc.split_once(BEGIN).unwrap_or_else(|| panic!("{DOC} has no line `{BEGIN}`"));
    let (have, tail) = rest.split_once(END).unwrap_or_else(|| panic!("{DOC} has no line `{END}` after `{BEGIN}`"));
    if have.trim() == want.trim() {
        return;
    }
    if std::env::var_os("DENTRYLAB_BLESS").is_some() {
        std::fs::write(&path, format!("{head}{BEGIN}\n{want}{END}{tail}")).unwrap();
        eprintln!("wrote the counts into {DOC}");
        return;
    }
    let old: BTreeSet<&str> = have.trim().lines().collect();
    let new: BTreeSet<&str> = want.trim().lines().collect();
    let gone: Vec<&&str> = old.difference(&new).collect();
    let came: Vec<&&str> = new.difference(&old).collect();
    panic!(
        "{DOC}'s import counts are not the code's: run `DENTRYLAB_BLESS=1 cargo test --release --test \
         module_counts` and commit the doc.\nlines gone:\n  {}\nlines new:\n  {}",
        gone.iter().map(|l| l.to_string()).collect::<Vec<_>>().join("\n  "),
        came.iter().map(|l| l.to_string()).collect::<Vec<_>>().join("\n  ")
    );
}

#[test]
fn block_counts_a_small_tree() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |p: &str, text: &str| {
        let p = src.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("lib.rs", "pub mod sys;\npub mod bench;\n");
    write("sys/mod.rs", "pub fn f() {}\n");
    write("bench/mod.rs", "pub mod reclaim;\n");
    write("bench/reclaim/mod.rs", "mod a;\nmod b;\nmod c;\npub struct T;\n");
    write("bench/reclaim/a.rs", "use super::b::U;\nuse crate::sys::f;\n");
    write("bench/reclaim/b.rs", "pub struct U;\nuse super::T;\n");
    write("bench/reclaim/c.rs", "use super::{a, b};\nuse crate::sys;\n");
    let b = block(src);
    assert!(b.contains("3 modules (the crate roots"), "{b}");
    assert!(b.contains("1 import edges (module → module), written in 2 places"), "{b}");
    assert!(b.contains("| `src/bench/reclaim/` | 3 | 3 | 1 |"), "{b}");
    assert!(b.contains("`src/bench/reclaim/`: 3 children, 3 edges between them written in 3 places, 1 upward"), "{b}");
    assert!(b.contains("| `c` | a (1), b (1) |"), "{b}");
}
