//! The options of `gvisor`: one workload natively and inside gVisor's runsc.

use std::path::PathBuf;

use clap::Args;

use super::OutputArgs;
use crate::bench::gvisor::runsc::Dcache;
use crate::bench::gvisor::worker::Workload;

pub(super) const GVISOR_ABOUT: &str = "The same workload natively and inside gVisor (runsc, systrap platform), side by \
side in one run, with how many times slower each runsc configuration is than native.\n\n\
Workloads: lookup (stat of files picked at random from a tree of --files files in --dirs directories, made \
beforehand on the host; one untimed pass, then --seconds timed per thread count), lookup-missing (the same with \
names that do not exist: negative lookups), build (mkdir the directories, create every file, stat every file, \
unlink every file, rmdir: each step timed, and the whole).\n\n\
Inside runsc the workload runs as the sandbox's init process, on the tree bind-mounted at the same path (a gofer \
mount, directfs), the root being the host's / without overlay. --dcache sets runsc's -dcache: one global LRU of \
that many unreferenced dentries, or per-mount (runsc's default: 1,000 per mount). Configurations are interleaved \
round by round; figures are medians over --rounds. The host's dentry counters do not see the sentry's cache; \
counted instead: latency and throughput in the workload, the most host FDs the sentry held (one per cached gofer \
dentry with directfs), and runsc's metrics at exit (in the JSON).\n\n\
--dcache sizes within 1,000 of the open-file limit (ulimit -n) are refused: the sentry inherits it and holds one \
host FD per cached dentry, and lookups fail with EMFILE once the cache fills. runsc runs from a private mount \
namespace (runsc --network=none leaves a bind mount of a network namespace under its state directory).\n\n\
runsc: --runsc PATH, else $DENTRYLAB_RUNSC, else runsc on the PATH; bench/gvisor/install.sh builds it. Needs root.";

#[derive(Debug, Args)]
pub struct GvisorArgs {
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
    #[command(flatten)]
    pub output: OutputArgs,
}

impl GvisorArgs {
    /// The benchmark's options; a missing runsc is a usage error (exit 2).
    pub fn options(&self) -> anyhow::Result<crate::bench::gvisor::Options> {
        let o = crate::bench::gvisor::Options {
            workload: self.workload,
            dcache: self.dcache.clone(),
            threads: self.threads.clone(),
            files: self.files,
            dirs: self.dirs,
            seconds: self.seconds,
            rounds: self.rounds,
            runsc: PathBuf::new(),
            dir: self.dir.clone().unwrap_or_else(crate::bench::gvisor::default_dir),
            runsc_flags: self.runsc_flags.clone(),
        };
        crate::bench::gvisor::validate(&o)?;
        let runsc = crate::bench::gvisor::runsc::find(self.runsc.as_deref())?;
        if !nix::unistd::geteuid().is_root() {
            return Err(crate::error::UsageError(
                "gvisor needs root (runsc run creates namespaces and mounts): run it as root".into(),
            )
            .into());
        }
        Ok(crate::bench::gvisor::Options { runsc, ..o })
    }
}
