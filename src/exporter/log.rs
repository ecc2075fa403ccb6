//! The exporter's log: `tracing` events on stderr, one line each, as text
//! (the default) or JSON (`--log-format json`, one object a line, for a
//! log pipeline). A failing collector, a census that cannot run and the
//! address served are events; a write to a closed stderr is dropped, never
//! an error.

use anyhow::{Result, anyhow};

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Text,
    Json,
}

/// Installs the process's subscriber; info and above. Fails only when one
/// was already installed.
pub(crate) fn init(format: Format) -> Result<()> {
    let b = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::INFO)
        .with_target(false)
        .with_ansi(false);
    let set = match format {
        Format::Text => b.try_init(),
        Format::Json => b.json().flatten_event(true).try_init(),
    };
    set.map_err(|e| anyhow!("cannot set up the log: {e}"))
}
