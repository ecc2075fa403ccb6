//! `census`'s clap arguments and their parsers.

use std::path::PathBuf;

use clap::Args as ClapArgs;

use super::plant::Plant;
use crate::probe::census_bpf::{BATCH, DEFAULT_LANES, LANES, MAX_STEPS, MIN_STEPS};

pub(crate) const ABOUT: &str = "Where the node's dentries are: every hashed dentry (or a uniform sample of the hash \
buckets) counted positive and negative, per filesystem (type, device, mount point) and per parent directory \
(named by its path), the top K directories by negative and by total children, per filesystem and overall, and \
what the hash table does not hold (nr_dentry less what was found).\n\n\
Two backends walk the same table and give the same result (--backend; auto picks bpf where the kernel allows \
it). bpf: a BPF program, loaded from this binary and never attached, walks a range of buckets per run inside \
the kernel under rcu_read_lock() (BPF_PROG_TEST_RUN of a raw tracepoint program), the way the kernel's own \
lookups walk it, the bucket heads read 64 at a time and two chains walked side by side, at most 2^18 steps (a dentry each) per run; its offsets are relocated against the kernel's BTF (CO-RE); the \
table is found from dentries it makes (a fresh dentry's d_hash.pprev is its bucket). Needs root \
(CAP_BPF and CAP_PERFMON) and BTF. kcore: user space reads the kernel's memory read-only through /proc/kcore, \
racy by nature: every pointer is checked before it is followed, chains are bounded, and what fails is skipped \
and counted (rejected reads); needs root, /proc/kcore (CONFIG_PROC_KCORE), BTF and the data symbols of \
CONFIG_KALLSYMS_ALL. Neither loads a module or writes kernel memory; each missing piece is one line (exit 1).\n\n\
--sample FRACTION walks that fraction of the buckets: each count is an estimate with its 90% interval. \
--plant makes directories with known counts in dentrylab's sandbox first and checks what the census found \
there. The same walk serves 'status --census', 'exporter --census-interval' and the check of 'reclaim --census' and 'containers --census'. See docs/census.md.";

/// Which backend walks the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Choice {
    /// BPF where the kernel allows it, else /proc/kcore.
    Auto,
    /// A BPF program in the kernel, run on demand under RCU.
    Bpf,
    /// User space reading /proc/kcore.
    Kcore,
}

/// Most directories listed per ranking.
pub(crate) const MAX_TOP: u32 = 1000;

/// Most churn threads.
pub(crate) const MAX_CHURN_THREADS: u32 = 64;

#[derive(Debug, Clone, ClapArgs)]
pub(crate) struct Args {
    /// How many directories each ranking lists (overall by negative and by total children, and per filesystem).
    #[arg(long, value_name = "K", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=MAX_TOP as i64))]
    pub top: u32,
    /// Walk a uniform sample of this fraction of the hash buckets (0.01 = 1%) and estimate every count with its 90% interval.
    #[arg(long, value_name = "FRACTION", value_parser = parse_fraction, conflicts_with = "full")]
    pub sample: Option<f64>,
    /// Walk every hash bucket (the default): exact counts of what was hashed during the walk.
    #[arg(long)]
    pub full: bool,
    /// Only list filesystems of this type (as /proc/filesystems names it: ext4, tmpfs, overlay, ...).
    #[arg(long, value_name = "TYPE", value_parser = parse_fs_type)]
    pub fs: Option<String>,
    /// A check: first make directories with known counts in dentrylab's sandbox (FS:KIND:COUNT[:dirs=K], e.g.
    /// ext4:negative:300k or tmpfs:hardlink:50k; repeat or separate with `+`), then report whether the census
    /// found each one with its count (exactly on a full walk, within the interval on a sample; exit 1 if not).
    #[arg(long, value_name = "SPEC", value_parser = parse_plants, action = clap::ArgAction::Append)]
    pub plant: Vec<Vec<Plant>>,
    /// With --plant: names created and deleted per second beside the first planted directory while the census
    /// walks, in subdirectories removed after each round, so dentries are freed under the walk (its rejected
    /// reads are counted).
    #[arg(long, value_name = "PER_SECOND", requires = "plant", value_parser = crate::size::parse_count)]
    pub churn: Option<u64>,
    /// With --churn: threads sharing the rate, each in subdirectories of its own (default 1). More threads take
    /// a larger share of a busy CPU from the walk.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "churn",
          value_parser = clap::value_parser!(u32).range(1..=MAX_CHURN_THREADS as i64))]
    pub churn_threads: u32,
    /// Also measure what the walk does beside it (after the census, whose figures it leaves alone): lookups
    /// (fstatat of existing names on the walk's CPU and on another, their rate and longest stall, beside the
    /// walk and alone), and a reclaim (a umount of a tmpfs of N hard links, 3 times alone and 3 beside the walk).
    #[arg(long, value_name = "N", value_parser = parse_impact)]
    pub impact: Option<u64>,
    /// Which walk: bpf (a BPF program in the kernel, under RCU), kcore (user space reading /proc/kcore), or
    /// auto: bpf where the kernel allows it, else kcore. The result says which walked.
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = Choice::Auto)]
    pub backend: Choice,
    /// bpf: the steps one run takes at most (16384 to 262144, the default): fewer, shorter runs under RCU.
    /// A check of the walk's seams between runs.
    #[arg(long, value_name = "N", default_value_t = MAX_STEPS, hide = true,
          value_parser = clap::value_parser!(u64).range(MIN_STEPS..=MAX_STEPS))]
    pub bpf_steps: u64,
    /// bpf: the bucket heads one read takes (1 to 64, the default). A check of batches that end short of a range.
    #[arg(long, value_name = "N", default_value_t = BATCH, hide = true,
          value_parser = clap::value_parser!(u64).range(1..=BATCH))]
    pub bpf_batch: u64,
    /// bpf: the hash chains walked side by side (1 to 4; the default 4). A check of each lane count.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LANES, hide = true,
          value_parser = clap::value_parser!(u64).range(1..=LANES))]
    pub bpf_lanes: u64,
    /// The kernel memory file to read [default: /proc/kcore].
    #[arg(long, value_name = "FILE", default_value = "/proc/kcore", hide = true)]
    pub kcore: PathBuf,
    /// The kernel's BTF [default: /sys/kernel/btf/vmlinux].
    #[arg(long, value_name = "FILE", default_value = "/sys/kernel/btf/vmlinux", hide = true)]
    pub btf: PathBuf,
    /// Write the result as JSON to FILE ('-' for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl Args {
    /// The fraction of buckets walked: 1 unless --sample.
    pub(crate) fn fraction(&self) -> f64 {
        self.sample.unwrap_or(1.0)
    }

    pub(crate) fn plants(&self) -> Vec<Plant> {
        self.plant.iter().flatten().cloned().collect()
    }
}

pub(crate) fn parse_fraction(s: &str) -> Result<f64, String> {
    let v: f64 = match s.strip_suffix('%') {
        Some(p) => p.parse::<f64>().map(|p| p / 100.0),
        None => s.parse(),
    }
    .map_err(|_| format!("{s:?} is not a fraction: write for example 0.01 or 1%"))?;
    if v > 0.0 && v <= 1.0 && v.is_finite() {
        Ok(v)
    } else {
        Err(format!("{s} is outside (0, 1]: write for example 0.01 or 1%"))
    }
}

fn parse_fs_type(s: &str) -> Result<String, String> {
    if !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
        Ok(s.to_string())
    } else {
        Err(format!("{s:?} is not a filesystem type name (for example ext4, tmpfs, overlay)"))
    }
}

/// Most hard links `--impact` unmounts.
pub(crate) const MAX_IMPACT: u64 = 50_000_000;

fn parse_impact(s: &str) -> Result<u64, String> {
    match crate::size::parse_count(s)? {
        n @ 1..=MAX_IMPACT => Ok(n),
        _ => Err(format!("{s}: the umount's hard links must be from 1 to 50M")),
    }
}

fn parse_plants(s: &str) -> Result<Vec<Plant>, String> {
    s.split('+').map(str::parse).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions() {
        assert_eq!(parse_fraction("0.01"), Ok(0.01));
        assert_eq!(parse_fraction("5%"), Ok(0.05));
        assert_eq!(parse_fraction("1"), Ok(1.0));
        for bad in ["0", "-0.1", "1.5", "x", "NaN", "inf"] {
            assert!(parse_fraction(bad).is_err(), "{bad}");
        }
    }
}
