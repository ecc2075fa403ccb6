//! `dentrylab gvisor`'s options as clap parses them, and the run's
//! [`Options`] they give (checked, with `--runsc` resolved to the binary to
//! run). `cli` flattens [`Args`] into its command and adds the output
//! files.

use std::path::PathBuf;

use anyhow::Result;

use super::Options;
use super::worker::Workload;
use crate::bench::common::runsc::Dcache;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// lookup, lookup-missing or build.
    #[arg(long, default_value = "lookup")]
    pub workload: Workload,
    /// runsc dentry cache sizes to run (comma-separated): dentry counts and/or per-mount.
    #[arg(long, value_name = "N|per-mount,...", value_delimiter = ',', default_value = "per-mount")]
    pub dcache: Vec<Dcache>,
    /// Thread counts (comma-separated), each run in turn in the same process.
    #[arg(long, value_name = "N,...", value_delimiter = ',', default_value = "1")]
    pub threads: Vec<usize>,
    /// Files in the tree (suffixes k, M allowed).
    #[arg(long, default_value = "20k", value_parser = crate::size::parse_count)]
    pub files: u64,
    /// Directories the files are spread over.
    #[arg(long, default_value_t = 100)]
    pub dirs: u64,
    /// Timed seconds per thread count (lookup workloads).
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Rounds; each runs every configuration once, native first.
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// The runsc binary.
    #[arg(long, value_name = "PATH")]
    pub runsc: Option<PathBuf>,
    /// Directory to make the tree in (the host filesystem under test; default: the temporary directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Extra flag for runsc, before its subcommand (repeatable), e.g. --runsc-flag=--profile-cpu=/tmp/cpu.pprof.
    #[arg(long = "runsc-flag", value_name = "FLAG", allow_hyphen_values = true)]
    pub runsc_flags: Vec<String>,
}

impl Args {
    /// The run's options, checked ([`super::validate`]), with the runsc
    /// binary found ([`crate::bench::common::runsc::find`]: `--runsc`, else
    /// `$DENTRYLAB_RUNSC`, else the PATH); a bad value or a missing runsc
    /// is a usage error (exit 2).
    pub(crate) fn options(&self) -> Result<Options> {
        let o = Options {
            workload: self.workload,
            dcache: self.dcache.clone(),
            threads: self.threads.clone(),
            files: self.files,
            dirs: self.dirs,
            seconds: self.seconds,
            rounds: self.rounds,
            runsc: PathBuf::new(),
            dir: self.dir.clone().unwrap_or_else(super::default_dir),
            runsc_flags: self.runsc_flags.clone(),
        };
        super::validate(&o)?;
        let runsc = crate::bench::common::runsc::find(self.runsc.as_deref())?;
        Ok(Options { runsc, ..o })
    }
}
