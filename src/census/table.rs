//! The census as text: the walk, the filesystems, the top directories, the
//! planted checks.

use std::fmt::Write;

use super::{CensusResult, DirRow};
use crate::analysis::census::Estimate;
use crate::size::human;

/// A count: exact, or its estimate and 90% interval.
pub(crate) fn est(e: &Estimate, exact: bool) -> String {
    if exact && e.high <= e.low {
        e.found.to_string()
    } else if exact {
        // A full walk that raced the kernel: its rejected reads might have
        // been dentries.
        format!("{} (to {} with the rejected reads)", e.found, e.high.ceil() as u64)
    } else {
        format!(
            "{} ({}–{})",
            human(e.estimate.round() as u64),
            human(e.low.floor() as u64),
            human(e.high.ceil() as u64)
        )
    }
}

fn dirs(out: &mut String, title: &str, rows: &[DirRow], exact: bool) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title}");
    let _ = writeln!(out, "  {:>22} {:>22} {:>22}  {:<8} directory", "negative", "positive", "total", "fs");
    for r in rows {
        let _ = writeln!(
            out,
            "  {:>22} {:>22} {:>22}  {:<8} {}",
            est(&r.negative, exact),
            est(&r.positive, exact),
            est(&r.total, exact),
            r.fs_type,
            r.path
        );
    }
}

/// The BPF runs and the kernel log during the walk.
fn walk_notes(out: &mut String, r: &CensusResult) {
    let w = &r.walk;
    if let Some(b) = &w.bpf {
        let _ = writeln!(
            out,
            "bpf: {} runs under RCU, at most {} steps each (bound {}), the longest {:.1} ms; {} steps, {} reads of up to {} bucket heads; {} map drains, {} unrecorded; table found by {}",
            b.runs,
            b.max_steps_per_run,
            b.steps_bound,
            b.longest_run_seconds * 1e3,
            b.steps,
            b.batches,
            b.batch,
            b.drains,
            b.unrecorded,
            b.located
        );
    }
    let _ = writeln!(
        out,
        "kernel log during the walk: {}",
        if !r.kernel_log_watched {
            "not watched (/dev/kmsg unreadable)".to_string()
        } else if r.kernel_alerts.is_empty() {
            "clean (no RCU stall, soft lockup or hung task)".to_string()
        } else {
            r.kernel_alerts.iter().map(|a| a.message.clone()).collect::<Vec<_>>().join("; ")
        }
    );
}

pub(crate) fn text(r: &CensusResult) -> String {
    let w = &r.walk;
    let exact = w.mode == "full";
    let mut out = String::new();
    let _ = writeln!(
        out,
        "census of {} ({}, walked by {}): {} of {} hash buckets, {} dentries in {:.2} s ({:.0} dentries/s, {:.2} s of CPU)",
        r.kernel,
        if exact { "full walk".to_string() } else { format!("{:.3}% sample", w.fraction * 100.0) },
        w.backend,
        w.buckets_walked,
        w.buckets_total,
        w.dentries_walked,
        w.seconds,
        w.dentries_per_second,
        w.cpu_seconds
    );
    let rj = &w.rejected;
    let _ = writeln!(
        out,
        "rejected reads: {} (bad pointer {}, unreadable {}, unknown superblock {}, bad name {}, chains cut {} with {} dentries left out, wrong bucket {}); superblocks read {} ({} rejected)",
        rj.total(),
        rj.bad_pointer,
        rj.unreadable,
        rj.unknown_superblock,
        rj.bad_name,
        rj.chains_cut,
        rj.left_out,
        rj.wrong_bucket,
        w.superblocks,
        w.superblocks_rejected
    );
    walk_notes(&mut out, r);
    let _ = writeln!(
        out,
        "hashed dentries: {}; nr_dentry {}; not on a hash chain (or changed during the walk): {:.0}{}",
        est(&r.hashed, exact),
        r.nr_dentry,
        r.unhashed_remainder,
        if exact { "" } else { " (estimate; counts are estimates with their 90% interval)" }
    );
    let _ = writeln!(out, "\nfilesystems");
    let _ = writeln!(
        out,
        "  {:>22} {:>22} {:>9}  {:<8} {:<8} mount point (id)",
        "negative", "positive", "dirs", "fs", "dev"
    );
    for f in &r.filesystems {
        let _ = writeln!(
            out,
            "  {:>22} {:>22} {:>9}  {:<8} {:<8} {} ({})",
            est(&f.negative, exact),
            est(&f.positive, exact),
            f.directories,
            f.fs_type,
            f.dev,
            f.mount_point.as_deref().unwrap_or("not mounted here"),
            f.id
        );
    }
    dirs(&mut out, "top directories by negative children", &r.top_negative, exact);
    dirs(&mut out, "top directories by total children", &r.top_total, exact);
    for f in r.filesystems.iter().filter(|f| f.top.len() > 1) {
        dirs(
            &mut out,
            &format!(
                "top directories of {} {} ({})",
                f.fs_type,
                f.dev,
                f.mount_point.as_deref().unwrap_or("not mounted here")
            ),
            &f.top,
            exact,
        );
    }
    if !r.planted.is_empty() {
        let bad = r.planted.iter().filter(|c| !c.ok).count();
        let _ = writeln!(
            out,
            "\nplanted directories: {} of {} found with their count{}",
            r.planted.len() - bad,
            r.planted.len(),
            if exact { " (exact)" } else { " (inside the 90% interval)" }
        );
        for c in r.planted.iter().filter(|c| !c.ok).take(20).chain(r.planted.iter().filter(|c| c.ok).take(3)) {
            let _ = writeln!(
                out,
                "  {} {} planted {} found {} other {} {}",
                if c.ok { "ok  " } else { "FAIL" },
                c.path,
                c.planted,
                est(&c.found, exact),
                est(&c.other, exact),
                c.kind
            );
        }
    }
    beside(&mut out, r);
    out
}

/// What ran beside the walk: the churn, and `--impact`'s walks.
fn beside(out: &mut String, r: &CensusResult) {
    if let Some(c) = &r.churn {
        let _ = writeln!(out, "\n{}", churn_line(c));
    }
    if let Some(i) = &r.impact {
        out.push_str(&super::impact::text(i));
    }
}

/// What the churn did beside the walk, one line.
fn churn_line(c: &super::ChurnReport) -> String {
    format!(
        "churn: {} creates and unlinks during the walk ({:.0}/s; {}/s asked, {} thread{}), {} in all in {:.2} s of \
         its threads' CPU time ({:.0} per CPU second)",
        c.during_walk,
        c.per_second_during_walk,
        c.asked_per_second,
        c.threads,
        if c.threads == 1 { "" } else { "s" },
        c.operations,
        c.cpu_seconds,
        c.per_cpu_second
    )
}
