//! One repetition: stage the dentries, reclaim them on the chosen CPU —
//! observed (the gap probe on that CPU, a control probe on another, the
//! contenders when asked for) or unobserved (nothing but the reclaim and
//! the clock) — and count what moved: [`one_run`] stages and counts,
//! [`reclaim`] is the timed window, [`record`] what the counts say.

use std::time::Duration;

use anyhow::{Context, Result};

use super::methods::{self, StageSpec};
use super::placement;
use super::profile;
use super::schedule::Slot;
use super::{methods::Method, options::Options, repetition::Run, repetition::fit_count};
use crate::probe::counters::Counts;
use crate::probe::gap::GapProbe;
use crate::probe::kmsg::KmsgWatch;
use crate::procfs::ProcRoot;
use crate::procfs::cpu_stat;
use crate::procfs::kmsg::Alert;
use crate::sandbox::Sandbox;
use crate::size::human;
use crate::stats::GapStats;
use crate::sys;
use crate::workload::contend::{self, ContendStats, Contenders};
use crate::workload::{CreateOutcome, CreateSpec};

pub(super) fn report_progress(r: &Run, observed: bool) {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        eprintln!(
            "  {:>6} {}{} rep {}{}{}: created {} at {:.0}/s, {} in {:.3} s{}",
            human(r.target),
            r.method.name(),
            if r.contenders > 0 { format!(" +{} lookup threads", r.contenders) } else { String::new() },
            r.rep + 1,
            if observed { "" } else { " unobserved" },
            if r.placement.pinned { String::new() } else { format!(" ({})", r.placement.describe()) },
            r.create.entries,
            r.create.rate_per_second,
            if r.method.frees() {
                format!("freed {:.1}%", r.freed_fraction * 100.0)
            } else {
                "walked (frees none)".into()
            },
            r.reclaim_seconds,
            if observed { format!(", max gap {:.3} s", r.probe.max_gap_seconds) } else { String::new() }
        );
    }
}

/// How long the probes run before and after the reclaim call.
const PROBE_MARGIN: Duration = Duration::from_millis(20);
/// How long the counts wait after a reclaim for RCU-deferred frees.
const COUNT_SETTLE: Duration = Duration::from_millis(60);

/// Which run this is.
pub(super) struct At {
    pub target: u64,
    pub rep: u32,
    pub method: Method,
    /// What the repetition measures besides the reclaim.
    pub slot: Slot,
    /// Record this reclaim with perf (`--profile`).
    pub profile: bool,
}

/// Runs one repetition: stage, reclaim ([`reclaim`]), count ([`record`]).
/// For an unobserved one, the returned run's `probe` is empty (no
/// samples): the caller keeps only its timing.
pub(super) fn one_run(
    opts: &Options,
    sandbox: &mut Sandbox,
    proc: &ProcRoot,
    kmsg: &KmsgWatch,
    at: &At,
    db: Option<&crate::probe::victims::Database>,
) -> Result<Run> {
    let (target, rep) = (at.target, at.rep);
    let before = Counts::read(proc)?;
    let spec = CreateSpec { kind: opts.kind, layout: opts.layout, count: target, threads: opts.threads };
    let label = format!("create {} {} rep {}", human(target), at.method.name(), rep + 1);
    let (observed, contenders) = (at.slot.observed(), at.slot.contenders());
    let pin = at.slot.pinned().then_some(opts.cpu);
    // The victims start before the run's filesystem exists (see probe::victims).
    let victims = match at.slot {
        Slot::Victims => Some(super::victims::start(opts, sandbox, db)?),
        Slot::Unobserved { .. } | Slot::Probed { .. } => None,
    };
    let stage =
        StageSpec { method: at.method, create: spec, fs: opts.fs, cpu: pin, label: &label, overlay: opts.overlay };
    let (mut staged, create) = methods::stage(&stage, sandbox)?;
    let after_create = Counts::read(proc)?;
    let census_here = opts.census
        && observed
        && contenders == 0
        && victims.is_none()
        && rep == 0
        && opts.sizes.first() == Some(&target)
        && opts.methods.first().is_some_and(|m| m.name() == at.method.name());
    let census = census_here.then(|| census_check(opts, &staged.lookup_root(), create.entries, proc)).transpose()?;

    let timed = reclaim(opts, sandbox, proc, kmsg, at, &mut staged, victims)?;
    // Dentries are freed to the slab after an RCU grace period: let those
    // land before the counts are read (the kmsg watch used to give them
    // this time by sleeping before it handed its messages over).
    std::thread::sleep(COUNT_SETTLE);
    let after_reclaim = Counts::read(proc)?;
    let layers = super::overlay::teardown(&mut staged, opts, observed, proc, &timed.done, &timed.probe)?;
    let after_cleanup = if staged.finish()? { Some(Counts::read(proc)?) } else { None };
    let counted = Counted { create, before, after_create, after_reclaim, after_cleanup, layers, census };
    Ok(record(opts, at, counted, timed))
}

/// What the reclaim's window gave: the reclaim's own outcome, where it
/// ran, the probes, the contenders, the victims, the kernel's messages.
struct Timed {
    done: methods::Reclaimed,
    reclaim_task: u32,
    placement: placement::Placement,
    /// The other CPUs' busy share over the reclaim.
    others_busy: Option<f64>,
    probe: GapStats,
    control: Option<GapStats>,
    contention: Option<ContendStats>,
    kernel_messages: Vec<Alert>,
    profile: Option<profile::RunProfile>,
    profile_problem: Option<String>,
    victims: Option<super::victims::Observed>,
}

/// Reclaims what `staged` holds on a known CPU, with the probes (and the
/// contenders) around it when observed; with nothing else of ours on that
/// CPU when not (the kmsg reader stays off it, and its records are sorted
/// by their own time stamps afterwards). `victims`, started before the
/// filesystem was, go a control window before the reclaim.
fn reclaim(
    opts: &Options,
    sandbox: &Sandbox,
    proc: &ProcRoot,
    kmsg: &KmsgWatch,
    at: &At,
    staged: &mut methods::Staged,
    victims: Option<crate::probe::victims::Victims>,
) -> Result<Timed> {
    let (observed, contenders) = (at.slot.observed(), at.slot.contenders());
    let pin = at.slot.pinned().then_some(opts.cpu);
    let reclaim_task = staged.reclaiming_tid().unwrap_or_else(|| nix::unistd::gettid().as_raw() as u32);
    let all = sys::allowed_cpus()?;
    if let Some(cpu) = pin {
        sys::pin_current_thread(cpu)?;
    }
    let interval = Duration::from_micros(opts.probe_interval_us);
    let lookups = if observed && contenders > 0 {
        let others: Vec<usize> = all.iter().copied().filter(|&c| c != opts.cpu).collect();
        let paths = contend::hot_paths(&staged.lookup_root(), opts.layout, at.target);
        Some(Contenders::start(paths, contenders, &others)?)
    } else {
        None
    };
    let policy = opts.probe_policy;
    let probe = observed.then(|| GapProbe::start_with(opts.cpu, interval, policy)).transpose()?;
    let control =
        opts.control_cpu.filter(|_| observed).map(|c| GapProbe::start_with(c, interval, policy)).transpose()?;
    if let Some(v) = &victims {
        v.go();
        std::thread::sleep(super::victims::CONTROL_WINDOW);
    }
    // Both kinds wait the same margin on the pinned CPU before the reclaim,
    // so that they start alike (the probes get going meanwhile).
    std::thread::sleep(PROBE_MARGIN);
    let tag = format!("{}-{}-{}", at.target, at.method.name(), at.rep);
    let mut recording = profile::start(at.profile, opts.cpu, sandbox.scratch(), &tag)?;
    let (start_cpu, migrations0) = placement::here();
    let stat = || std::fs::read_to_string(proc.path("stat")).map(|t| cpu_stat::parse(&t)).ok();
    let stat0 = stat();
    let start_ns = sys::monotonic_ns();
    let done = recording.time(reclaim_task, || staged.reclaim(proc));
    let end_ns = sys::monotonic_ns();
    let stat1 = stat();
    let (end_cpu, migrations1) = placement::here();
    // The calling thread's CPUs say nothing of a child that reclaimed.
    let own = reclaim_task == nix::unistd::gettid().as_raw() as u32;
    let placement = placement::Placement {
        pinned: pin.is_some(),
        cpu: if pin.is_some() { pin } else { end_cpu.filter(|_| own) },
        start_cpu: if pin.is_some() { pin } else { start_cpu.filter(|_| own) },
        migrations: migrations0.zip(migrations1).map(|(a, b)| b.saturating_sub(a)).filter(|_| own),
        allowed: if pin.is_some() { pin.into_iter().collect() } else { all.clone() },
    };
    if observed || victims.is_some() {
        std::thread::sleep(PROBE_MARGIN);
    }
    let victims = victims
        .map(|v| v.finish().map(|records| super::victims::Observed { records, start_ns, end_ns }))
        .transpose()?;
    let probe = probe.map(GapProbe::finish_with_longest).transpose();
    let control = control.map(GapProbe::finish).transpose();
    let contention = lookups.map(Contenders::finish);
    sys::unpin_current_thread(&all)?;
    let done = done.with_context(|| format!("reclaiming by {}", at.method.name()))?;
    // A probe that died is an error, never a 0 s gap; an unobserved run has
    // no probe, and its empty gap statistics are never fitted.
    let (probe, longest_gap) = match probe.context("the gap probe")? {
        Some((p, w)) => (p, w),
        None => (GapStats::from_gaps_ns(opts.cpu, interval, &[]), None),
    };
    let control = control.context("the control probe")?;
    let (profile, profile_problem) = recording.finish(longest_gap);
    let (kernel_messages, _) = kmsg.take_between(start_ns, end_ns);
    Ok(Timed {
        done,
        reclaim_task,
        placement,
        // The other CPUs' load while the reclaim ran (all of them when it
        // ran unpinned: its CPU is then not known for the whole window).
        others_busy: stat0.zip(stat1).and_then(|(a, b)| cpu_stat::busy_share(&a, &b, |c| Some(c) != pin)),
        probe,
        control,
        contention,
        kernel_messages,
        profile,
        profile_problem,
        victims,
    })
}

/// What was counted around the reclaim: the generator's outcome, the
/// counters before creating, after it, after the reclaim and after the
/// clean-up umount (for the paths that leave the filesystem mounted), and
/// with `--fs overlay` or `--census` what those found.
struct Counted {
    create: CreateOutcome,
    before: Counts,
    after_create: Counts,
    after_reclaim: Counts,
    after_cleanup: Option<Counts>,
    layers: Option<crate::bench::layers::StackTeardown>,
    census: Option<crate::census::workload::Named>,
}

/// The repetition's record: what the counters say it made and freed, and
/// what its reclaim's window gave.
fn record(opts: &Options, at: &At, c: Counted, t: Timed) -> Run {
    let (target, rep) = (at.target, at.rep);
    let witness = |n: &Counts| {
        if opts.kind.is_negative() { n.dentry_state.nr_negative as i64 } else { n.dentry_state.nr_dentry as i64 }
    };
    let reclaimed_w = witness(&c.after_create) - witness(&c.after_reclaim);
    let left_for_umount = c.after_cleanup.as_ref().map(|a| (witness(&c.after_reclaim) - witness(a)).max(0));
    // The generator made exactly one dentry per entry; the counters are
    // machine-wide, so other processes add noise over the seconds creation
    // takes. Only the short windows around the reclaim and the clean-up
    // umount are read as this run's.
    let made = c.create.entries as i64;
    let freed = match left_for_umount {
        Some(left) => (made - left).clamp(0, made),
        None => reclaimed_w.clamp(0, made),
    };
    let created = c.after_create.dentry_state.nr_dentry as i64 - c.before.dentry_state.nr_dentry as i64;
    let reclaimed = c.after_create.dentry_state.nr_dentry as i64 - c.after_reclaim.dentry_state.nr_dentry as i64;
    let neg = |a: &Counts, b: &Counts| a.dentry_state.nr_negative as i64 - b.dentry_state.nr_negative as i64;
    let slab = |a: &Counts, b: &Counts| Some(a.slab_dentry_active? as i64 - b.slab_dentry_active? as i64);
    let reclaim_seconds = t.done.took.as_secs_f64();
    let grown_slab = c.after_create.slab_bytes.saturating_sub(c.before.slab_bytes) as f64;
    let lost_avail = c.before.mem_available_bytes.saturating_sub(c.after_create.mem_available_bytes) as f64;
    Run {
        target,
        rep,
        method: at.method,
        contenders: at.slot.contenders(),
        created_slab: slab(&c.after_create, &c.before),
        reclaimed_slab: slab(&c.after_create, &c.after_reclaim),
        created_negative: neg(&c.after_create, &c.before),
        reclaimed_negative: neg(&c.after_create, &c.after_reclaim),
        witness: if opts.kind.is_negative() { "nr_negative" } else { "nr_dentry" }.into(),
        freed,
        freed_fraction: freed as f64 / made.max(1) as f64,
        left_for_umount,
        after_cleanup: c.after_cleanup,
        contention: t.contention,
        memcg: t.done.memcg,
        watch: t.done.watch,
        ns_per_dentry: reclaim_seconds * 1e9 / fit_count(at.method, freed, target),
        // Over the dentries the generator made (exact), not nr_dentry's
        // delta: other jobs freeing dentries meanwhile can take that delta
        // to nothing, and a per-dentry cost divided by it refused the next
        // size for needing a thousand times the memory it does.
        bytes_per_dentry: grown_slab.max(lost_avail) / made.max(1) as f64,
        create: c.create,
        before: c.before,
        after_create: c.after_create,
        after_reclaim: c.after_reclaim,
        created,
        reclaimed,
        reclaim_seconds,
        reclaim_sys_seconds: t.done.sys.as_secs_f64(),
        call_returned_seconds: t.done.returned_after.map(|d| d.as_secs_f64()),
        others_busy: t.others_busy,
        probe: t.probe,
        control: t.control,
        kernel_messages: t.kernel_messages,
        reclaim_task_pid: t.reclaim_task,
        placement: t.placement,
        profile: t.profile,
        profile_problem: t.profile_problem,
        layers: c.layers,
        victims: t.victims,
        census: c.census,
    }
}

/// `--census`: a full census names the top directory of the workload's
/// filesystem and counts the directories it filled.
fn census_check(
    opts: &Options,
    root: &std::path::Path,
    made: u64,
    proc: &ProcRoot,
) -> Result<crate::census::workload::Named> {
    let expected = crate::census::Expected::of_workload(root, opts.kind, opts.layout, made);
    let named = crate::census::workload::check(&crate::census::Source::of(proc), proc, &expected)
        .context("the census check (--census)")?;
    eprintln!("{}", named.line());
    Ok(named)
}
