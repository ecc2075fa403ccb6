//! dentrylab: measure the Linux dentry cache on the real kernel.

mod analysis;
mod bench;
mod cli;
mod env;
mod error;
mod output;
mod probe;
mod procfs;
mod report;
mod sandbox;
mod size;
mod state;
mod sys;
mod workload;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Result;
use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::UsageError;
use crate::procfs::ProcRoot;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return clap_error(e),
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let usage = e.downcast_ref::<UsageError>().is_some();
            let mut chain = e.chain();
            if let Some(top) = chain.next() {
                eprintln!("dentrylab: error: {top}");
            }
            for cause in chain {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

/// Help and version go out whole; a bad flag gets one line and exit 2.
fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand { 2 } else { 0 })
        }
        _ => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("dentrylab: error: {first} (see --help)");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let proc = ProcRoot::default();
    match cli.command {
        Command::Reclaim(a) => cmd_reclaim(a, &proc),
        Command::Create(a) => cmd_create(a, &proc),
        Command::ReclaimChild { spec } => {
            bench::reclaim::child::child_main(&spec)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::CgroupGuard { parent, pid } => {
            sandbox::cgroup::guard_main(&parent, pid)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Generator threads: as asked, else one per CPU and at most one per
/// directory (a flat layout uses one: threads in one directory serialise
/// on its lock).
fn generator_threads(asked: Option<u32>, layout: workload::Layout) -> usize {
    if let Some(t) = asked {
        return t as usize;
    }
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    cpus.min(layout.dirs() as usize).max(1)
}

fn cmd_reclaim(a: cli::ReclaimArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let (cpu, control_cpu) = bench::reclaim::choose_cpus(a.cpu)?;
    let opts = bench::reclaim::Options {
        sizes: a.sizes.0.clone(),
        reps: a.reps,
        kind: a.workload.kind,
        layout: a.workload.layout,
        threads: generator_threads(a.workload.threads, a.workload.layout),
        fs: a.workload.fs,
        methods: a.method.0.clone(),
        contend: a.contend.unwrap_or(0) as usize,
        allow_global: a.allow_global,
        extrapolate: a.extrapolate,
        cpu,
        control_cpu,
        probe_interval_us: a.probe_interval_us,
        force: a.force,
    };
    bench::reclaim::validate(&opts)?;
    bench::reclaim::preflight(&opts.sizes, opts.kind, opts.force, proc)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    let mut markdown = output::open_opt(a.markdown.as_deref())?;
    let state = if a.no_save {
        None
    } else {
        Some(state::StateDir::open(&a.state_dir.clone().unwrap_or_else(state::default_dir))?)
    };
    // The cgroup guardian must start outside the sandbox (see sandbox::cgroup).
    let guardian = if opts.methods.contains(&bench::reclaim::Method::Memcg) {
        Some(sandbox::cgroup::Guardian::start(proc)?)
    } else {
        None
    };
    let mut sandbox = sandbox::Sandbox::enter()?;
    if let Some(g) = guardian {
        sandbox.adopt(g);
    }
    let result = bench::reclaim::run(&opts, &mut sandbox, proc)?;

    let table = report::table::reclaim(&result);
    if json.as_ref().is_some_and(|j| j.is_stdout()) {
        eprint!("{table}");
    } else {
        print!("{table}");
    }
    if let Some(j) = json.as_mut() {
        report::json::write(j, &result)?;
    }
    if let Some(m) = markdown.as_mut() {
        m.write_str(&report::markdown::reclaim(&result))?;
    }
    if let (Some(st), Some(v)) = (&state, &result.verdict) {
        if result.fits.time_power.is_some() {
            let cal = state::Calibration {
                schema: state::CALIBRATION_SCHEMA,
                saved_at: bench::now_utc(),
                kernel: result.environment.kernel.clone(),
                preemption: result.environment.preemption.clone(),
                fs: opts.fs.to_string(),
                kind: opts.kind.name().into(),
                layout: opts.layout.to_string(),
                method: opts.methods[0].name().into(),
                largest_size: result.sizes.last().map(|s| s.target).unwrap_or(0),
                bytes_per_dentry: result.bytes_per_dentry,
                time_linear: result.fits.time_linear,
                time_power: result.fits.time_power,
                gap_power: result.fits.gap_power,
                governs: Some(v.governs),
                watchdog_thresh_seconds: result.environment.watchdog_thresh_seconds,
                validated_by_watchdog: false,
                command: result.header.command.clone(),
            };
            let p = st.save(&cal)?;
            eprintln!("calibration saved to {}", p.display());
        }
    }
    if let Some(r) = result.refused.first() {
        anyhow::bail!("stopped before size {}: {}", size::human(r.target), r.reason);
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_create(a: cli::CreateArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let opts = bench::create::Options {
        count: a.count,
        kind: a.workload.kind,
        layout: a.workload.layout,
        threads: generator_threads(a.workload.threads, a.workload.layout),
        fs: a.workload.fs,
        hold_seconds: a.hold,
    };
    bench::reclaim::check_kind(opts.kind, opts.fs)?;
    bench::reclaim::preflight(&[opts.count], opts.kind, a.force, proc)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    let mut sandbox = sandbox::Sandbox::enter()?;
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&interrupted))?;
    }
    let to_stderr = json.as_ref().is_some_and(|j| j.is_stdout());
    let announce = |m: &str| {
        if to_stderr {
            eprintln!("{m}")
        } else {
            println!("{m}")
        }
    };
    let r = bench::create::run(&opts, &mut sandbox, proc, &interrupted, &announce)?;
    if let Some(rc) = &r.reclaim {
        announce(&format!(
            "reclaimed {} dentries by umount in {} ({})",
            size::grouped(rc.reclaimed.max(0) as u64),
            report::secs(rc.umount_seconds),
            rc.reason
        ));
    }
    if let Some(j) = json.as_mut() {
        report::json::write(j, &r)?;
    }
    Ok(ExitCode::SUCCESS)
}
