//! The Markdown engine: a benchmark's [`Doc`] with every grid as a pipe
//! table, and `report.md` around the benchmarks' parts.

use std::fmt::Write;

use super::{Doc, Grid};
use crate::render::Render;

/// A document as Markdown, its grids as pipe tables.
pub(crate) fn render(doc: &Doc) -> String {
    doc.render(&render_grid)
}

/// One result alone as a Markdown section (`--markdown`).
pub(crate) fn section<R: Render>(r: &R) -> String {
    render(&r.section())
}

pub(crate) fn render_grid(g: &Grid) -> String {
    let esc = |c: &String| c.replace('|', "\\|");
    let mut s = format!("| {} |\n", g.header.iter().map(esc).collect::<Vec<_>>().join(" | "));
    s += &format!("|{}\n", "---|".repeat(g.header.len()));
    for r in &g.rows {
        s += &format!("| {} |\n", r.iter().map(esc).collect::<Vec<_>>().join(" | "));
    }
    s
}

/// `report.md`: a title, the results it was rendered from, then one part
/// per benchmark (each from its [`Render::part`]).
pub(crate) fn report(sources: &[(Option<String>, &crate::result::Header)], parts: &[String]) -> String {
    let mut s = String::from("# dentrylab report\n\n");
    let _ = writeln!(s, "Rendered by `dentrylab report` from {} result file(s):\n", sources.len());
    for (label, h) in sources {
        let label = label.as_ref().map(|l| format!("{l}: ")).unwrap_or_default();
        let _ = writeln!(s, "- {label}`{}` benchmark, started {} (schema {})", h.benchmark, h.started_at, h.schema);
    }
    for p in parts {
        s.push('\n');
        s += p;
    }
    s
}
