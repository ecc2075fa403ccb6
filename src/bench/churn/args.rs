//! `dentrylab churn`'s options as clap parses them, and the run's
//! [`Options`] they give (defaults resolved: one worker per CPU, one
//! directory per worker). `cli` flattens [`Args`] into its command and adds
//! the output files.

use super::{MAX_INTERVAL, MIN_INTERVAL, Options};
use crate::sandbox::FsType;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Files in the tree (suffixes k, M, G).
    #[arg(long, default_value = super::DEFAULT_FILES, value_parser = crate::size::parse_count, allow_hyphen_values = true)]
    pub files: u64,
    /// Directories the files are spread over (default: one per worker, as the unlink-regression report's one rm -rf per directory).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=crate::workload::MAX_DIRS as i64))]
    pub dirs: Option<u32>,
    /// Unlinking threads (default: the CPU count).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=super::MAX_WORKERS as i64))]
    pub workers: Option<u32>,
    /// Sampling interval: 100ms, 0.5s, 1s (10ms to 10s).
    #[arg(long, default_value = super::DEFAULT_INTERVAL, value_parser = parse_interval)]
    pub interval: std::time::Duration,
    /// Filesystem: ext4 or xfs (tmpfs keeps nothing of an unlinked file).
    #[arg(long, default_value = "ext4", value_parser = |s: &str| s.parse::<FsType>())]
    pub fs: FsType,
    /// Do not remount before removing: unlink with every dentry and inode still cached.
    #[arg(long)]
    pub warm: bool,
    /// Run even if the tree would take more than half of MemAvailable.
    #[arg(long)]
    pub force: bool,
}

impl Args {
    /// The run's options: `cpus` is the default worker count.
    pub(crate) fn options(&self, cpus: usize) -> Options {
        let workers = self.workers.map_or(cpus, |w| w as usize);
        Options {
            files: self.files,
            dirs: self.dirs.unwrap_or(workers as u32),
            workers,
            interval_seconds: self.interval.as_secs_f64(),
            fs: self.fs,
            warm: self.warm,
            force: self.force,
        }
    }
}

/// A duration such as `100ms`, `0.5s` or `2s`, within the churn interval bounds.
fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else {
        (t, 1.0)
    };
    let bad = || format!("{s:?} is not a duration from 10ms to 10s (write for example 100ms or 0.5s)");
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    if !v.is_finite() || v <= 0.0 {
        return Err(bad());
    }
    let d = std::time::Duration::from_secs_f64(v * scale);
    if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&d) {
        return Err(bad());
    }
    Ok(d)
}
