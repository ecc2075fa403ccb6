//! JSON output: the result struct as it is, with its `schema` field.

use anyhow::{Context, Result};
use serde::Serialize;

use crate::output::Sink;

pub fn write<T: Serialize>(sink: &mut Sink, value: &T) -> Result<()> {
    let name = sink.name().to_string();
    let w = sink.writer();
    serde_json::to_writer_pretty(&mut *w, value).with_context(|| format!("cannot write JSON to {name}"))?;
    writeln!(w).with_context(|| format!("cannot write JSON to {name}"))?;
    w.flush().with_context(|| format!("cannot write JSON to {name}"))
}
