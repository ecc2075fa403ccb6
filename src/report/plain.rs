//! Plain-text grids: columns aligned, a rule under the header, numbers
//! right-aligned. The engine every text table of `report` renders with.

use super::Grid;

/// Aligns a grid in columns with a rule under the header.
pub(crate) fn render_grid(g: &Grid) -> String {
    let ncol = g.header.len();
    let width =
        |i: usize| g.rows.iter().map(|r| r[i].chars().count()).chain([g.header[i].chars().count()]).max().unwrap_or(0);
    let widths: Vec<usize> = (0..ncol).map(width).collect();
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = widths[i] - c.chars().count();
            if i > 0 {
                s.push_str("  ");
            }
            // Numbers read best right-aligned; the first column is a label.
            if i == 0 {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(&g.header) + "\n";
    out += &widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  ");
    out.push('\n');
    for r in &g.rows {
        out += &line(r);
        out.push('\n');
    }
    out
}
