//! How a `create` result reads: what the reclaim at the end freed, and
//! with `--fs overlay` the layers unmounted in turn. `report` does not
//! render saved `create` results ([`super::Create`] says so), so its part
//! of a report is that text.

use std::fmt::Write;

use super::CreateResult;
use crate::bench::layers::grid::{LEGEND, create_grid};
use crate::render::{Doc, FigureSpec, Render, common_facets};
use crate::result::Header;

impl Render for CreateResult {
    const BENCHMARK: &'static str = "create";

    fn header(&self) -> &Header {
        &self.header
    }

    fn text(&self) -> Doc {
        let mut d = Doc::new();
        if let Some(m) = &self.memcg {
            let _ = writeln!(d, "{}", m.line());
        }
        if let Some(rc) = &self.reclaim {
            let _ = writeln!(
                d,
                "reclaimed {} dentries by umount in {} ({})",
                crate::size::grouped(rc.reclaimed.max(0) as u64),
                crate::duration::secs(rc.umount_seconds),
                rc.reason
            );
        }
        if let Some(t) = &self.layers {
            let _ = writeln!(d, "\nLayers of the {}, unmounted in turn", t.stack);
            d.grid(create_grid(t));
            let _ = writeln!(d, "{LEGEND}");
            if let Some(l) = t.longest() {
                let _ = writeln!(d, "Longest stretch on the CPU: the {} layer's umount ({}).", l.layer, l.fs);
            }
        }
        d
    }

    fn facets(&self) -> Vec<String> {
        common_facets(&self.environment, self.options.fs)
    }

    fn figures(_results: &[&Self], _labels: &[String], _subtitle: &str) -> Vec<FigureSpec> {
        Vec::new()
    }

    fn part(results: &[&Self], labels: &[String], subtitle: &str, figures: &[FigureSpec]) -> Doc {
        crate::render::part(format!("create, {subtitle}"), figures, "", results, labels, &|r, _| r.text())
    }
}
