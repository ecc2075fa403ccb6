//! `containers --census`: once every container has died, a full census of
//! the kernel's dentry hash table names the top directory of the run's
//! disk filesystem and counts the image's directories against the names
//! the containers made: every new name leaves one negative dentry in the
//! image (the lower layer), in the directory the workload used (`tmp/`
//! for temporary tables, `data/` for files, `probe/pK/` for lookups).

use std::path::Path;

use anyhow::{Context, Result};

use super::ContainerRun;
use crate::census::workload::Named;
use crate::census::{Expected, Source};
use crate::procfs::ProcRoot;
use crate::workload::container::{LOOKUP_DIRS, Mix, Op};

/// The image's directories and the negatives the containers left in each,
/// the largest first.
pub(super) fn expected(image: &Path, mix: &Mix, ops: u64, runs: &[ContainerRun]) -> Expected {
    let sum = |f: fn(&ContainerRun) -> u64| runs.iter().map(f).sum::<u64>();
    let mut dirs =
        vec![(image.join("tmp"), sum(|r| r.outcome.temp_tables)), (image.join("data"), sum(|r| r.outcome.files))];
    // The lookups go round the probe directories by operation number
    // (`workload::container::run`): replay one container's sequence.
    let mut per_dir = vec![0u64; LOOKUP_DIRS as usize];
    let mut done = [0u64; 3];
    for i in 0..ops {
        if mix.next(&mut done) == Op::Lookup {
            per_dir[(i % u64::from(LOOKUP_DIRS)) as usize] += 1;
        }
    }
    let full = runs.iter().filter(|r| r.outcome.new_names() == ops).count() as u64;
    dirs.extend(per_dir.iter().enumerate().map(|(k, n)| (image.join("probe").join(format!("p{k}")), n * full)));
    dirs.retain(|(_, n)| *n > 0);
    dirs.sort_by_key(|d| std::cmp::Reverse(d.1));
    Expected { kind: "negative".into(), negative: true, directories: dirs }
}

/// The census and its check (its line on stderr).
pub(super) fn check(image: &Path, mix: &Mix, ops: u64, runs: &[ContainerRun], proc: &ProcRoot) -> Result<Named> {
    let e = expected(image, mix, ops, runs);
    let named = crate::census::workload::check(&Source::of(proc), proc, &e).context("the census check (--census)")?;
    eprintln!("{}", named.line());
    Ok(named)
}
