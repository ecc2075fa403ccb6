//! The import scanner the module tests share (`tests/module_layers.rs`,
//! `tests/module_folders.rs`, `tests/module_counts.rs`): the layers, the
//! edges between top-level modules (every `crate::x` path under `src/`), the
//! edges between the children of each folder (`super::`, `crate::` and
//! `self::` paths resolved), cycles, and the upward imports inside a folder.
//! It reads the source as text; nothing here runs the crate.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `src/` of this checkout.
pub fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The layers, lowest first. A module may use only modules of lower layers.
pub const LAYERS: &[&[&str]] = &[
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
pub type Edges = BTreeMap<(String, String), BTreeSet<String>>;

/// Top-level module names that `crate::` paths in `text` name. Handles
/// `crate::a::b`, `crate::{a, b::c}` and nested groups; skips comment lines.
pub fn referenced(text: &str) -> BTreeSet<String> {
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

pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

pub fn edges(src: &Path) -> Edges {
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

// Inside a folder: the files of one module folder (its child modules) import
// one way too. An edge is a path in a child (or anywhere below it) that names
// a sibling child: `super::x`, `crate::folder::x`, `self::x` from the folder's
// own file is the folder itself and not an edge. Items of the folder's own
// file (`mod.rs`, or `name.rs` beside `name/`) are not nodes: that file
// declares the children. Test modules count like any other code.

/// Module path of a file under `src/`: `report/svg/axis.rs` → report, svg,
/// axis; `report/svg/mod.rs` → report, svg; `main.rs` and `lib.rs` → nothing.
pub fn module_of(rel: &Path) -> Vec<String> {
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
pub fn paths_in(text: &str, module: &[String]) -> Vec<Vec<String>> {
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
pub type FolderEdges = BTreeMap<String, Edges>;

pub fn folder_edges(src: &Path) -> FolderEdges {
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
pub fn find_cycle(edges: &Edges) -> Option<Vec<String>> {
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

/// The benchmarks of the registry, from `each_benchmark!`'s `module => Type,` lines.
pub fn benchmarks(src: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(src.join("bench/mod.rs")).unwrap();
    let start = text.find("macro_rules! each_benchmark").expect("each_benchmark! in src/bench/mod.rs");
    let body = &text[start..];
    let body = &body[..body.find("};").unwrap_or(body.len())];
    body.lines()
        .filter_map(|l| l.trim().strip_suffix(',').and_then(|l| l.split_once("=>")).map(|(m, _)| m.trim().to_string()))
        .filter(|m| !m.is_empty() && m.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .collect()
}

// Upward imports inside a folder: a child that names an item of its
// folder's own file (`super::Options` in `bench/reclaim/sweep.rs`, where
// `reclaim/mod.rs` holds shared types and re-exports its children). The
// folder-cycle test does not see these (the folder's own file is no node),
// so a folder whose own file is both the types' home and the children's
// parent hides its cycles there.

/// (file, item) of every path in `folder`'s descendants (its own file
/// aside) that names an item of the folder's own file.
pub fn upward_imports(src: &Path, folder: &[&str]) -> BTreeSet<(String, String)> {
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
