//! Files the user asked for (`--json`, `--markdown`), opened before the
//! sandbox is entered: inside it, `/tmp` is a private tmpfs, so a path
//! opened later could land in the sandbox and vanish with it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};

pub enum Sink {
    Stdout(std::io::Stdout, String),
    File(BufWriter<File>, String),
}

impl Sink {
    /// Opens `path` for writing (`-` is standard output).
    pub fn open(path: &Path) -> Result<Sink> {
        if path.as_os_str() == "-" {
            return Ok(Sink::Stdout(std::io::stdout(), "standard output".into()));
        }
        let f = File::create(path).with_context(|| format!("cannot create output file {}", path.display()))?;
        Ok(Sink::File(BufWriter::new(f), path.display().to_string()))
    }

    pub fn name(&self) -> &str {
        match self {
            Sink::Stdout(_, n) | Sink::File(_, n) => n,
        }
    }

    pub fn is_stdout(&self) -> bool {
        matches!(self, Sink::Stdout(..))
    }

    pub fn writer(&mut self) -> &mut dyn Write {
        match self {
            Sink::Stdout(s, _) => s,
            Sink::File(f, _) => f,
        }
    }

    pub fn write_str(&mut self, s: &str) -> Result<()> {
        let name = self.name().to_string();
        let w = self.writer();
        w.write_all(s.as_bytes()).and_then(|_| w.flush()).with_context(|| format!("cannot write to {name}"))
    }
}

/// Opens an optional output.
pub fn open_opt(path: Option<&Path>) -> Result<Option<Sink>> {
    path.map(Sink::open).transpose()
}
