//! Files the user asked for (`--json`, `--markdown`, `--report DIR`), opened
//! before the sandbox is entered: inside it, `/tmp` is a private tmpfs, so a path
//! opened later could land in the sandbox and vanish with it. [`Outputs`]
//! holds them all, opened from the command line ([`Paths`]) before a run
//! starts, so a bad path fails before any work.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

/// Output options every command shares.
#[derive(Debug, clap::Args)]
pub(crate) struct OutputArgs {
    /// Write the result as JSON to FILE ('-' for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Where a command writes what it found, as its command line says.
#[derive(Debug, Default, Clone)]
pub(crate) struct Paths {
    /// The result as JSON (`-`: standard output).
    pub json: Option<PathBuf>,
    /// A Markdown section of the result.
    pub markdown: Option<PathBuf>,
    /// A report directory (report.md and the plots).
    pub report: Option<PathBuf>,
}

impl Paths {
    /// Only `--json`.
    pub(crate) fn json(a: &OutputArgs) -> Paths {
        Paths { json: a.json.clone(), ..Paths::default() }
    }
}

/// Every output of a run, opened (files created, the directory made)
/// before the run starts: the JSON, the Markdown section, the report
/// directory; the text for people goes to standard output, or to standard
/// error when the JSON goes to standard output.
pub(crate) struct Outputs {
    pub json: Option<Sink>,
    pub markdown: Option<Sink>,
    pub report: Option<OutDir>,
}

impl Outputs {
    /// Opens what `paths` names, in order: the JSON, the Markdown, the
    /// report directory. The first that cannot be opened is the error.
    pub(crate) fn open(paths: &Paths) -> Result<Outputs> {
        let json = open_opt(paths.json.as_deref())?;
        let markdown = open_opt(paths.markdown.as_deref())?;
        let report = paths.report.as_deref().map(OutDir::create).transpose()?;
        Ok(Outputs { json, markdown, report })
    }

    /// Whether the JSON goes to standard output (then text for people goes
    /// to standard error).
    pub(crate) fn json_to_stdout(&self) -> bool {
        self.json.as_ref().is_some_and(Sink::is_stdout)
    }

    /// Text for people: standard output, or standard error when the JSON
    /// goes to standard output.
    pub(crate) fn print(&self, text: &str) {
        if self.json_to_stdout() {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
    }

    /// The table for people ([`Outputs::print`]), then the JSON.
    pub(crate) fn emit<T: Serialize>(&mut self, table: &str, value: &T) -> Result<()> {
        self.print(table);
        self.json.as_mut().map(|j| j.write_json(value)).transpose()?;
        Ok(())
    }
}

pub(crate) enum Sink {
    Stdout(std::io::Stdout, String),
    File(BufWriter<File>, String),
}

impl Sink {
    /// Opens `path` for writing (`-` is standard output).
    pub(crate) fn open(path: &Path) -> Result<Sink> {
        if path.as_os_str() == "-" {
            return Ok(Sink::Stdout(std::io::stdout(), "standard output".into()));
        }
        let f = File::create(path).with_context(|| format!("cannot create output file {}", path.display()))?;
        Ok(Sink::File(BufWriter::new(f), path.display().to_string()))
    }

    pub(crate) fn name(&self) -> &str {
        match self {
            Sink::Stdout(_, n) | Sink::File(_, n) => n,
        }
    }

    pub(crate) fn is_stdout(&self) -> bool {
        matches!(self, Sink::Stdout(..))
    }

    pub(crate) fn writer(&mut self) -> &mut dyn Write {
        match self {
            Sink::Stdout(s, _) => s,
            Sink::File(f, _) => f,
        }
    }

    /// Writes `value` as pretty JSON and a newline.
    pub(crate) fn write_json<T: Serialize>(&mut self, value: &T) -> Result<()> {
        let name = self.name().to_string();
        let w = self.writer();
        serde_json::to_writer_pretty(&mut *w, value).with_context(|| format!("cannot write JSON to {name}"))?;
        writeln!(w).with_context(|| format!("cannot write JSON to {name}"))?;
        w.flush().with_context(|| format!("cannot write JSON to {name}"))
    }

    pub(crate) fn write_str(&mut self, s: &str) -> Result<()> {
        let name = self.name().to_string();
        let w = self.writer();
        w.write_all(s.as_bytes()).and_then(|_| w.flush()).with_context(|| format!("cannot write to {name}"))
    }
}

/// Opens an optional output.
pub(crate) fn open_opt(path: Option<&Path>) -> Result<Option<Sink>> {
    path.map(Sink::open).transpose()
}

/// A directory the user asked for (`report -o DIR`, `reclaim --report DIR`):
/// created and opened before the sandbox is entered; files are then created
/// relative to the open directory, so they land on the real filesystem
/// even from inside the sandbox.
pub(crate) struct OutDir {
    dir: File,
    path: std::path::PathBuf,
}

impl OutDir {
    /// Creates `path` (and its parents) if needed and opens it.
    pub(crate) fn create(path: &Path) -> Result<OutDir> {
        std::fs::create_dir_all(path).with_context(|| format!("cannot create output directory {}", path.display()))?;
        let dir = File::open(path).with_context(|| format!("cannot open output directory {}", path.display()))?;
        if !dir.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            anyhow::bail!("output path {} is not a directory", path.display());
        }
        Ok(OutDir { dir, path: path.to_path_buf() })
    }

    /// Writes (creates or replaces) `name` in the directory; returns its path.
    pub(crate) fn write(&self, name: &str, contents: &str) -> Result<std::path::PathBuf> {
        use nix::fcntl::{OFlag, openat};
        use nix::sys::stat::Mode;
        let path = self.path.join(name);
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW;
        let fd = openat(&self.dir, name, flags, Mode::from_bits_truncate(0o644))
            .with_context(|| format!("cannot create {}", path.display()))?;
        let mut f = File::from(fd);
        f.write_all(contents.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }
}

/// Replaces `path` atomically with `text`: a temporary file beside it (its
/// name does not end in `.prom`, so node_exporter's textfile collector never
/// reads it half-written), synced, then renamed over `path`.
pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = path.file_name().with_context(|| format!("{} names no file", path.display()))?;
    let mut tmp_name = name.to_os_string();
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(text.as_bytes())
            .and_then(|_| f.sync_all())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    #[test]
    fn write_atomic_replaces_and_leaves_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("dentrylab.prom");
        super::write_atomic(&p, "a 1\n").unwrap();
        super::write_atomic(&p, "a 2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a 2\n");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        let e = super::write_atomic(&d.path().join("missing/x.prom"), "a\n").unwrap_err();
        assert!(format!("{e:#}").contains("cannot create"), "{e:#}");
    }
}
