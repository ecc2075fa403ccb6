//! `dentrylab census`: where the node's dentries are. Walks the running
//! kernel's dentry hash table with a BPF program under RCU
//! (`probe::census_bpf`) or from user space through `/proc/kcore`
//! (`probe::kcore`, `probe::census`), whichever [`Source::backend`] picks,
//! finds the table through `/proc/kallsyms` (`procfs::kallsyms`), learns
//! the structures' layouts from the kernel's BTF (`probe::btf`) and ranks
//! the directories by
//! their negative and total children, per filesystem and overall, each
//! count with its 90% interval on a sampled walk (`analysis::census`).
//!
//! In: the arguments (or a [`Survey`] and a [`Source`]), `/proc`,
//! `/sys/kernel/btf/vmlinux`. Out: [`CensusResult`], or a workload's check
//! ([`workload::Named`]). Imports `probe`, `analysis`, `procfs`, `sandbox`
//! and `workload` (for `--plant`); imported by `bench` (`reclaim` and
//! `containers --census`), `status` (`--census`), `exporter` and `cli`.

pub(crate) mod args;
pub(crate) mod impact;
pub(crate) mod plant;
pub(crate) mod rank;
#[cfg(test)]
pub(crate) mod synthetic;
pub(crate) mod table;
pub(crate) mod workload;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::analysis::census::{Estimate, estimate};
use crate::probe::bpf_prog::Bpf;
use crate::probe::btf::Layout;
use crate::probe::census::{BpfWalk, Census, Rejected, Roots, Tally, Walker};
use crate::probe::census_bpf::{self, BpfCensus};
use crate::probe::kcore::Kcore;
use crate::procfs::kmsg::Alert;
use crate::procfs::{ProcRoot, kallsyms, mountinfo};
pub(crate) use args::{Args, Choice};
pub(crate) use plant::Expected;
pub(crate) use rank::{DirRow, FsRow};

/// Buckets per block: the unit of sampling and of reading the table.
pub(crate) const BLOCK: u64 = 512;

/// Share of the dentry reads the layout cannot make sense of (bad
/// pointer, unknown superblock, bad name) over which the walk is refused:
/// a wrong BTF reads every field at the wrong offset and rejects nearly
/// all; a kernel changing its table under the walk rejects a few (0 to 21
/// of thousands in the recorded churn runs, docs/census.md).
pub(crate) const WRONG_LAYOUT_SHARE: f64 = 0.5;

/// The one-line refusal of a walk whose dentry reads are mostly rejected.
fn check_layout(src: &Source, tally: &Tally) -> Result<()> {
    let r = &tally.rejected;
    let bad = r.unreadable_dentries();
    let reads = tally.walked + bad;
    if bad == 0 || (bad as f64) <= WRONG_LAYOUT_SHARE * reads as f64 {
        return Ok(());
    }
    bail!(
        "the census rejected {bad} of {reads} dentry reads (bad pointer {}, unknown superblock {}, bad name {}): \
         the BTF in {} does not describe this kernel's struct dentry and super_block; give --btf the running \
         kernel's own (/sys/kernel/btf/vmlinux)",
        r.bad_pointer,
        r.unknown_superblock,
        r.bad_name,
        src.btf.display()
    )
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Walk {
    /// Which walked: "bpf" or "kcore".
    #[serde(default = "kcore")]
    pub backend: String,
    /// "full" or "sample".
    pub mode: String,
    /// Buckets walked ÷ buckets in the table.
    pub fraction: f64,
    pub buckets_total: u64,
    pub buckets_walked: u64,
    pub dentries_walked: u64,
    pub seconds: f64,
    pub dentries_per_second: f64,
    /// CPU time of the walking thread during the walk (user and system:
    /// a BPF run counts as system time).
    #[serde(default)]
    pub cpu_seconds: f64,
    pub rejected: Rejected,
    /// Superblocks known: on the kernel's list (kcore), or met by the walk (bpf).
    pub superblocks: u64,
    pub superblocks_rejected: u64,
    /// The BPF walk's runs: how long one held RCU at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf: Option<BpfWalk>,
}

fn kcore() -> String {
    "kcore".into()
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct CensusResult {
    #[serde(flatten)]
    pub header: crate::result::Header,
    pub kernel: String,
    pub layout: Layout,
    pub walk: Walk,
    /// `nr_dentry` of /proc/sys/fs/dentry-state after the walk.
    pub nr_dentry: u64,
    /// Hashed dentries found (estimated on a sample).
    pub hashed: Estimate,
    /// `nr_dentry` less the hashed estimate: dentries not on a hash chain
    /// (roots, unhashed, being freed) and what changed during the walk.
    pub unhashed_remainder: f64,
    pub filesystems: Vec<FsRow>,
    pub top_negative: Vec<DirRow>,
    pub top_total: Vec<DirRow>,
    pub planted: Vec<plant::Check>,
    /// With --churn: names created and deleted from its start (planting's
    /// end) to the walk's end.
    pub churn_operations: Option<u64>,
    /// With --churn: the rate asked for and the rate reached during the walk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<ChurnReport>,
    /// The kernel log during the walk: RCU stalls, soft lockups, hung tasks
    /// (none is clean), and whether /dev/kmsg could be watched.
    pub kernel_log_watched: bool,
    pub kernel_alerts: Vec<Alert>,
    /// With --impact: what walks like this one did to lookups and to a
    /// umount beside them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impact: Option<impact::Impact>,
}

/// What `--churn` did.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct ChurnReport {
    pub asked_per_second: u64,
    /// Threads sharing the rate (`--churn-threads`).
    #[serde(default = "one")]
    pub threads: u64,
    /// Creates and unlinks from the churn's start to the walk's end.
    pub operations: u64,
    /// Of which while the walk ran.
    pub during_walk: u64,
    /// On the clock the walk's seconds are taken with (`CLOCK_MONOTONIC`;
    /// in a `vm` guest under `--clock icount`, the instruction counter's).
    pub per_second_during_walk: f64,
    /// The churn threads' CPU time (`CLOCK_THREAD_CPUTIME_ID`) from their
    /// start to the walk's end, and the creates and unlinks per second of it.
    #[serde(default)]
    pub cpu_seconds: f64,
    #[serde(default)]
    pub per_cpu_second: f64,
}

fn one() -> u64 {
    1
}

const SYMBOLS: [&str; 4] = ["dentry_hashtable", "d_hash_shift", "super_blocks", "page_offset_base"];

/// Where the kernel's memory and BTF are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Source {
    pub kcore: PathBuf,
    pub btf: PathBuf,
    pub backend: Choice,
    /// The BPF walk's steps a run and heads a read (`census --bpf-steps`, `--bpf-batch`).
    pub bpf: census_bpf::Tuning,
}

impl Source {
    /// `PROC/kcore` and the kernel's own BTF; either backend for the real
    /// `/proc`, only kcore for another proc root (the BPF walk reads the
    /// running kernel, whatever the proc root says).
    pub(crate) fn of(proc: &ProcRoot) -> Source {
        let backend = if proc.root() == std::path::Path::new("/proc") { Choice::Auto } else { Choice::Kcore };
        Source { kcore: proc.path("kcore"), btf: PathBuf::from(BTF), backend, bpf: Default::default() }
    }
}

/// The running kernel's BTF.
pub(crate) const BTF: &str = "/sys/kernel/btf/vmlinux";

/// What a census walks and ranks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Survey {
    /// Fraction of the hash buckets (1: all).
    pub fraction: f64,
    /// Directories per ranking.
    pub top: usize,
    /// Only filesystems of this type.
    pub fs: Option<String>,
    /// Directories whose counts are known (planted, or a workload's).
    pub expected: Vec<Expected>,
    /// Names created and deleted beside the walk.
    pub churn: Option<plant::ChurnSpec>,
}

/// Checks that the census can run here: the one-line refusals of the
/// backend [`open`] picks, before a command spends time on anything else.
pub(crate) fn available(src: &Source, proc: &ProcRoot) -> Result<()> {
    if let Opened::Bpf(census, _) = open(src, proc)? {
        keep(census);
    }
    Ok(())
}

/// A backend ready to walk.
enum Opened {
    Kcore(Kcore, Layout, Roots),
    Bpf(Box<BpfCensus>, Layout),
}

/// The backend `src.backend` asks for; `auto`: bpf, else kcore, else one
/// line with both reasons.
fn open(src: &Source, proc: &ProcRoot) -> Result<Opened> {
    let kcore = || open_kernel(src, proc).map(|(k, l, r)| Opened::Kcore(k, l, r));
    match src.backend {
        Choice::Kcore => kcore(),
        Choice::Bpf => open_bpf(src, proc),
        Choice::Auto => open_bpf(src, proc).or_else(|b| {
            kcore().map_err(|k| anyhow::anyhow!("no census backend can run here: bpf: {b:#}; kcore: {k:#}"))
        }),
    }
}

fn no_btf(btf: &std::path::Path) -> anyhow::Error {
    anyhow::anyhow!(
        "{} does not exist: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF), which the census needs to learn \
         struct dentry's layout; use a kernel built with it (Debian's 6.1 and later are)",
        btf.display()
    )
}

fn addresses_hidden(proc: &ProcRoot) -> anyhow::Error {
    let k = proc.read_line("sys/kernel/kptr_restrict").unwrap_or_else(|_| "?".into());
    anyhow::anyhow!(
        "/proc/kallsyms shows every address as 0: kernel.kptr_restrict is {k}, which hides kernel addresses \
         from this process; as root, sysctl kernel.kptr_restrict=1 lets root see them (0: everyone)"
    )
}

/// The BPF backend's one-line refusals: no BTF, the kernel refusing the
/// program (its errno), addresses hidden, no symbol to find the table by.
fn open_bpf(src: &Source, proc: &ProcRoot) -> Result<Opened> {
    if !src.btf.exists() {
        return Err(no_btf(&src.btf));
    }
    let layout = Layout::load(&src.btf)?;
    if src.btf == std::path::Path::new(BTF)
        && let Some(mut loaded) = LOADED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
        && loaded.reset(src.bpf).is_ok()
    {
        return Ok(Opened::Bpf(loaded, layout));
    }
    let bpf = Bpf::load(&src.btf)?;
    let syms = kallsyms::parse(proc.open("kallsyms")?, &census_bpf::SYMBOLS)?;
    if syms.hidden() {
        return Err(addresses_hidden(proc));
    }
    Ok(Opened::Bpf(Box::new(BpfCensus::open(bpf, layout, &syms, src.bpf)?), layout))
}

/// The BPF walk last used in this process, kept loaded for the next one
/// (the exporter's walk every `--census-interval`): loaded once, freed when
/// the process exits.
static LOADED: std::sync::Mutex<Option<Box<BpfCensus>>> = std::sync::Mutex::new(None);

/// Keeps `census` loaded for the next walk of this process.
fn keep(census: Box<BpfCensus>) {
    *LOADED.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(census);
}

/// The one-line refusals, checked before anything else is done.
fn open_kernel(a: &Source, proc: &ProcRoot) -> Result<(Kcore, Layout, Roots)> {
    if !a.kcore.exists() {
        bail!(
            "{} does not exist: this kernel was built without CONFIG_PROC_KCORE, so its memory cannot be read; \
             run the census on a kernel that has it (Debian's do), e.g. in a guest: \
             dentrylab vm --kernel linux-image-cloud-amd64 -- census",
            a.kcore.display()
        );
    }
    let kcore = Kcore::open(&a.kcore).map_err(|e| {
        let root = nix::unistd::geteuid().is_root();
        anyhow::anyhow!("{e:#}{}", if root { "" } else { ": the census reads kernel memory and needs root" })
    })?;
    if !a.btf.exists() {
        return Err(no_btf(&a.btf));
    }
    let layout = Layout::load(&a.btf)?;
    let syms = kallsyms::parse(proc.open("kallsyms")?, &SYMBOLS)?;
    if syms.hidden() {
        return Err(addresses_hidden(proc));
    }
    let need = |n: &str| {
        syms.get(n).with_context(|| {
            format!("/proc/kallsyms has no {n}: the kernel was built without CONFIG_KALLSYMS_ALL (data symbols)")
        })
    };
    let roots = Roots {
        hashtable: need("dentry_hashtable")?,
        hash_shift: need("d_hash_shift")?,
        super_blocks: need("super_blocks")?,
        page_offset_base: syms.get("page_offset_base"),
    };
    Ok((kcore, layout, roots))
}

/// splitmix64: a block's draw for the sample.
fn draw(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The blocks of a walk: all of them, or a uniform sample without
/// replacement of `round(fraction × nblocks)` (at least one), in table order.
pub(crate) fn blocks(nblocks: u64, fraction: f64, seed: u64) -> Vec<u64> {
    if fraction >= 1.0 {
        return (0..nblocks).collect();
    }
    let m = ((fraction * nblocks as f64).round() as u64).clamp(1, nblocks.max(1)) as usize;
    let mut by_draw: Vec<(u64, u64)> = (0..nblocks).map(|i| (draw(seed, i), i)).collect();
    by_draw.sort_unstable();
    let mut v: Vec<u64> = by_draw.into_iter().take(m).map(|(_, i)| i).collect();
    v.sort_unstable();
    v
}

/// Runs the census (planting first with `--plant`).
pub(crate) fn run(a: &Args, proc: &ProcRoot, say: &dyn Fn(&str)) -> Result<CensusResult> {
    let bpf = census_bpf::Tuning { steps: a.bpf_steps, batch: a.bpf_batch, lanes: a.bpf_lanes };
    let src = Source { kcore: a.kcore.clone(), btf: a.btf.clone(), backend: a.backend, bpf };
    // The refusals come before any planting.
    available(&src, proc)?;
    let plants = a.plants();
    let mut sandbox = None;
    let mut planted = Vec::new();
    if !plants.is_empty() || a.impact.is_some() {
        let mut s = crate::sandbox::Sandbox::enter()?;
        planted = plant::make(&mut s, &plants, crate::env::cpus(), say)?;
        sandbox = Some(s);
    }
    let survey = Survey {
        fraction: a.fraction(),
        top: a.top as usize,
        fs: a.fs.clone(),
        expected: planted.iter().map(plant::Planted::expected).collect(),
        churn: a.churn.zip(planted.first()).map(|(per_second, p)| plant::ChurnSpec {
            dir: p.mount.path().to_path_buf(),
            per_second,
            threads: a.churn_threads as usize,
        }),
    };
    let mut impact = |c: &mut dyn Walker, chosen: &[u64]| match (a.impact, sandbox.as_mut()) {
        (Some(n), Some(s)) => impact::measure(c, chosen, s, n, say).map(Some),
        _ => Ok(None),
    };
    let result = survey_and(&src, proc, &survey, say, &mut impact);
    drop(planted);
    drop(sandbox);
    result
}

/// Walks the chosen blocks, saying after the first 2% how long the rest
/// will take; the tally and the seconds the walk took.
fn walk_blocks(census: &mut dyn Walker, chosen: &[u64], say: &dyn Fn(&str)) -> Result<(Tally, f64)> {
    let mut tally = Tally::default();
    let t0 = Instant::now();
    let pilot = (chosen.len() / 50).max(1);
    // Adjacent blocks are one range: the BPF walk takes a range per run.
    let mut i = 0;
    while i < chosen.len() {
        let mut j = i + 1;
        while j < chosen.len() && chosen[j] == chosen[j - 1] + 1 && j != pilot {
            j += 1;
        }
        census.walk(chosen[i] * BLOCK, (j - i) as u64 * BLOCK, &mut tally)?;
        i = j;
        if i == pilot && chosen.len() > pilot {
            let per = t0.elapsed().as_secs_f64() / pilot as f64;
            say(&format!(
                "census: the first {} blocks walked; the walk will take about {:.0} s more",
                pilot,
                per * (chosen.len() - pilot) as f64
            ));
        }
    }
    census.finish(&mut tally)?;
    Ok((tally, t0.elapsed().as_secs_f64()))
}

/// Walks the table (all of it, or a sample) and ranks what it found. The
/// superblocks are read after everything `survey.expected` names exists.
pub(crate) fn survey_of(src: &Source, proc: &ProcRoot, survey: &Survey, say: &dyn Fn(&str)) -> Result<CensusResult> {
    survey_and(src, proc, survey, say, &mut |_, _| Ok(None))
}

/// What runs after the census with its walker and the blocks it walked
/// (`--impact`).
type After<'a> = dyn FnMut(&mut dyn Walker, &[u64]) -> Result<Option<impact::Impact>> + 'a;

/// [`survey_of`], then `after`.
fn survey_and(
    src: &Source,
    proc: &ProcRoot,
    survey: &Survey,
    say: &dyn Fn(&str),
    after: &mut After<'_>,
) -> Result<CensusResult> {
    match open(src, proc)? {
        Opened::Kcore(kcore, layout, roots) => {
            let mut census = Census::open(&kcore, layout, roots)?;
            survey_with(&mut census, layout, src, (proc, survey), say, after)
        }
        Opened::Bpf(mut census, layout) => {
            let r = survey_with(&mut *census, layout, src, (proc, survey), say, after);
            keep(census);
            r
        }
    }
}

fn survey_with(
    census: &mut dyn Walker,
    layout: Layout,
    src: &Source,
    (proc, survey): (&ProcRoot, &Survey),
    say: &dyn Fn(&str),
    after: &mut After<'_>,
) -> Result<CensusResult> {
    let churn = survey.churn.as_ref().map(plant::Churn::start);
    let nblocks = census.buckets().div_ceil(BLOCK);
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1);
    let chosen = blocks(nblocks, survey.fraction, seed);
    say(&format!(
        "census ({}): {} of {} hash buckets ({}), {} superblocks known before the walk",
        census.backend().name(),
        chosen.len() as u64 * BLOCK,
        census.buckets(),
        if survey.fraction >= 1.0 {
            "full walk".to_string()
        } else {
            format!("a {:.3}% sample", survey.fraction * 100.0)
        },
        census.superblocks().len()
    ));
    let ops0 = churn.as_ref().map(plant::Churn::operations);
    let kmsg = crate::probe::kmsg::KmsgWatch::start(None);
    let t0 = crate::sys::monotonic_ns();
    let cpu0 = crate::sys::thread_cpu_times();
    let walked = walk_blocks(census, &chosen, say);
    let cpu1 = crate::sys::thread_cpu_times();
    let cpu_seconds = ((cpu1.0 + cpu1.1).saturating_sub(cpu0.0 + cpu0.1)).as_secs_f64();
    let (kernel_alerts, _) = kmsg.take_between(t0, crate::sys::monotonic_ns());
    let kernel_log_watched = kmsg.unavailable.is_none();
    let (tally, seconds) = walked?;
    check_layout(src, &tally)?;
    let churn = churn.map(|c| {
        let during = c.operations() - ops0.unwrap_or(0);
        let (asked, threads) = (c.per_second, c.threads as u64);
        let s = c.stop();
        ChurnReport {
            asked_per_second: asked,
            threads,
            operations: s.operations,
            during_walk: during,
            per_second_during_walk: during as f64 / seconds.max(1e-9),
            cpu_seconds: s.cpu_seconds,
            per_cpu_second: s.operations as f64 / s.cpu_seconds.max(1e-9),
        }
    });
    let fraction = (tally.buckets as f64 / census.buckets() as f64).min(1.0);
    let nr_dentry = proc.dentry_state().map(|d| d.nr_dentry).unwrap_or(0);
    let mounts = mountinfo::parse(proc.open("self/mountinfo")?)?;
    let found: u64 = tally.by_parent.values().map(|c| c[0] + c[1]).sum();
    // What the rejected reads and the chains left out might have held
    // widens the count's upper end (a full walk racing the kernel is not
    // exact).
    let hashed = estimate(found, fraction).with_rejected(tally.rejected.total() + tally.rejected.left_out, fraction);
    let mut paths = HashMap::new();
    let ranked = rank::rank(census, &tally, &mounts, fraction, survey.top, survey.fs.as_deref(), &mut paths);
    let checks = rank::check(census, &tally, &mounts, fraction, &survey.expected, &mut paths);
    let mut result = CensusResult {
        header: crate::result::Header::new("census"),
        kernel: proc.read_line("sys/kernel/osrelease").unwrap_or_default(),
        layout,
        walk: Walk {
            backend: census.backend().name().into(),
            mode: if fraction >= 1.0 { "full" } else { "sample" }.into(),
            fraction,
            buckets_total: census.buckets(),
            buckets_walked: tally.buckets,
            dentries_walked: tally.walked,
            seconds,
            dentries_per_second: tally.walked as f64 / seconds.max(1e-9),
            cpu_seconds,
            rejected: tally.rejected,
            superblocks: census.superblocks().len() as u64,
            superblocks_rejected: census.superblocks_rejected(),
            bpf: census.details(),
        },
        nr_dentry,
        hashed,
        unhashed_remainder: nr_dentry as f64 - hashed.estimate,
        filesystems: ranked.0,
        top_negative: ranked.1,
        top_total: ranked.2,
        planted: checks,
        churn_operations: churn.as_ref().map(|c| c.operations),
        churn,
        kernel_log_watched,
        kernel_alerts,
        impact: None,
    };
    result.impact = after(census, &chosen)?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A proc tree with `kallsyms` and `kptr_restrict`, a fake kcore and the
    /// recorded 6.12 BTF: the refusals that come after /proc/kcore opened.
    fn refusal(kallsyms: &str) -> String {
        use clap::Parser;
        use std::io::Read;
        #[derive(Parser)]
        struct T {
            #[command(flatten)]
            a: Args,
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
        std::fs::write(root.join("proc/kallsyms"), kallsyms).unwrap();
        std::fs::write(root.join("proc/sys/kernel/kptr_restrict"), "2\n").unwrap();
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/btf/6.12.118+deb13-cloud-amd64.btf.gz");
        let mut btf = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(fixture).unwrap()).read_to_end(&mut btf).unwrap();
        std::fs::write(root.join("btf"), btf).unwrap();
        std::fs::write(
            root.join("kcore"),
            crate::probe::kcore::core_header(&[(object::elf::PT_LOAD.0, 0, PAGE_OFFSET, 4096)]),
        )
        .unwrap();
        let (k, b) = (root.join("kcore"), root.join("btf"));
        let t = T::parse_from(["census", "--kcore", k.to_str().unwrap(), "--btf", b.to_str().unwrap()]);
        let src = Source { kcore: t.a.kcore, btf: t.a.btf, backend: Choice::Kcore, bpf: Default::default() };
        let e = open_kernel(&src, &ProcRoot::new(root.join("proc"))).err().expect("refused");
        format!("{e:#}")
    }
    const PAGE_OFFSET: u64 = crate::probe::census::PAGE_OFFSET_L4;

    #[test]
    fn kptr_restrict_hiding_addresses_is_one_line_naming_its_value() {
        let e = refusal("0000000000000000 T _text\n0000000000000000 b dentry_hashtable\n");
        assert!(e.contains("kptr_restrict is 2") && e.contains("sysctl kernel.kptr_restrict=1"), "{e}");
        assert_eq!(e.lines().count(), 1);
    }

    #[test]
    fn a_kernel_without_data_symbols_is_one_line() {
        let e = refusal("ffffffff81000000 T _text\n");
        assert!(e.contains("no dentry_hashtable") && e.contains("CONFIG_KALLSYMS_ALL"), "{e}");
    }

    #[test]
    fn a_sample_draws_its_fraction_of_blocks_uniformly_and_a_full_walk_all() {
        assert_eq!(blocks(1000, 1.0, 7).len(), 1000);
        let b = blocks(2048, 0.01, 7);
        assert_eq!(b.len(), 20);
        assert!(b.windows(2).all(|w| w[0] < w[1]) && b[19] < 2048, "{b:?}");
        assert_eq!(blocks(3, 1e-9, 7).len(), 1, "never an empty sample");
        assert_ne!(blocks(10_000, 0.1, 1), blocks(10_000, 0.1, 2));
        // Uniform: over many seeds each block is drawn about as often.
        let mut hits = [0u32; 16];
        for seed in 0..4000 {
            for i in blocks(16, 0.25, seed) {
                hits[i as usize] += 1;
            }
        }
        assert!(hits.iter().all(|&h| (850..1150).contains(&h)), "{hits:?}");
    }
}
