//! dentrylab: measure the Linux dentry cache on the real kernel.

mod analysis;
mod bench;
mod cli;
mod duration;
mod env;
mod error;
mod exporter;
mod histogram;
mod output;
mod probe;
mod procfs;
mod report;
mod result;
mod sandbox;
mod size;
mod state;
mod stats;
mod status;
mod sys;
mod workload;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
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
            // clap's message, up to the usage block, folded onto one line.
            let text = e.render().to_string();
            let msg: Vec<&str> = text
                .lines()
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let msg = msg.join(" ");
            let msg = msg.strip_prefix("error: ").unwrap_or(&msg);
            eprintln!("dentrylab: error: {msg} (see --help)");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let proc = ProcRoot::default();
    match cli.command {
        Command::Reclaim(a) => cmd_reclaim(a, &proc),
        Command::Create(a) => cmd_create(a, &proc),
        Command::Status(a) => cmd_status(a),
        Command::Exporter(a) => cmd_exporter(a),
        Command::Scale(a) => cmd_scale(a, &proc),
        Command::Pollute(a) => cmd_pollute(a, &proc),
        Command::Churn(a) => cmd_churn(a, &proc),
        Command::Mitigate(a) => cmd_mitigate(a, &proc),
        Command::MitigateContainers { spec } => {
            bench::mitigate::containers::worker_main(&spec)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::MitigateWorker { workload, root } => {
            bench::mitigate::worker_main(&workload, &root)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::ScaleWorker(a) => {
            sys::die_with_parent()?;
            bench::scale::worker_main(&a.root, a.op, a.index, a.seconds, a.sample_every)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Report(a) => cmd_report(a),
        Command::Containers(a) => cmd_containers(a, &proc),
        Command::ContainerChild { spec } => {
            bench::containers::child::child_main(&spec)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::ReclaimChild { spec } => {
            bench::reclaim::child::child_main(&spec)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::SysctlGuard { path, value } => {
            bench::reclaim::watchdog::guard_main(&path, &value)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Vm(a) => cli::vm::run(a),
        Command::VmInit => bench::vm::init::main(),
        Command::VmGuard { paths } => bench::vm::guard_main(&paths).map(|_| ExitCode::SUCCESS),
        Command::CgroupGuard { parent, pid } => {
            sandbox::cgroup::guard_main(&parent, pid)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The table on stdout (on stderr when the JSON goes to stdout), then the JSON.
fn print_table_and_json<T: serde::Serialize>(table: &str, json: Option<&mut output::Sink>, value: &T) -> Result<()> {
    if json.as_ref().is_some_and(|j| j.is_stdout()) {
        eprint!("{table}");
    } else {
        print!("{table}");
    }
    json.map(|j| report::json::write(j, value)).transpose()?;
    Ok(())
}

fn node_options(a: cli::NodeArgs, x: cli::NodeExtraArgs) -> status::Options {
    let mut o = status::Options::basic(ProcRoot::new(a.proc_root), a.state_dir.unwrap_or_else(state::default_dir));
    if x.by_cgroup {
        o.by_cgroup =
            Some(status::cgroups::Options { root: x.cgroup_root, top: x.top as usize, debugfs: x.debugfs });
    }
    o.kernel_log = x.kernel_log.map(|p| {
        if p == std::path::Path::new(status::kernel_log::KMSG) { status::kernel_log::Source::Kmsg } else { status::kernel_log::Source::File(p) }
    });
    o
}

fn cmd_status(a: cli::StatusArgs) -> Result<ExitCode> {
    if let Some(p) = &a.textfile
        && p.extension().is_none_or(|e| e != "prom")
    {
        return Err(UsageError(format!(
            "--textfile {}: node_exporter's textfile collector reads only files ending in .prom",
            p.display()
        ))
        .into());
    }
    let mut json = output::open_opt(a.output.json.as_deref())?;
    let mut opts = node_options(a.node, a.extra);
    if let Some(every) = a.watch {
        opts.growth_window_seconds = Some(a.window.as_secs_f64());
        return watch(&opts, every, a.samples, json.as_mut());
    }
    let s = status::run(&opts)?;
    print_table_and_json(&report::table::status(&s), json.as_mut(), &s)?;
    if let Some(p) = &a.textfile {
        output::write_atomic(p, &exporter::metrics::encode(&s, s.collection_seconds))?;
    }
    Ok(ExitCode::from(status::exit_code(s.prediction.level, a.fail_on)))
}

/// `status --watch`: one line per sample (and one JSON object per line
/// with --json) until Ctrl-C or `samples`.
fn watch(opts: &status::Options, every: std::time::Duration, samples: Option<u32>, mut json: Option<&mut output::Sink>) -> Result<ExitCode> {
    let collector = status::Collector::new(opts);
    let start = std::time::Instant::now();
    let mut n = 0u32;
    loop {
        let s = collector.collect()?;
        let line = report::node::watch_line(&s, start.elapsed().as_secs_f64());
        if json.as_ref().is_some_and(|j| j.is_stdout()) {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
        if let Some(j) = json.as_mut() {
            j.write_str(&(serde_json::to_string(&s)? + "\n"))?;
        }
        n += 1;
        if samples.is_some_and(|m| n >= m) {
            return Ok(ExitCode::SUCCESS);
        }
        // Sample on a fixed schedule so the interval does not drift by the collection time.
        let next = start + every * n;
        std::thread::sleep(next.saturating_duration_since(std::time::Instant::now()));
    }
}

fn cmd_exporter(a: cli::ExporterArgs) -> Result<ExitCode> {
    let mut status = node_options(a.node, a.extra);
    status.growth_window_seconds = Some(status::growth::EXPORTER_WINDOW_SECONDS);
    let opts = exporter::Options { listen: a.listen, workers: a.workers as usize, status };
    // As PID 1 in a container the default action of SIGTERM is ignored:
    // handle it. Nothing to clean up, the exporter only reads.
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT])
        .context("cannot handle SIGTERM")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if signals.forever().next().is_some() {
                std::process::exit(0);
            }
        })
        .context("cannot start the signal thread (raise the process's thread limit: ulimit -u, the pids cgroup)")?;
    exporter::run(&opts, &|addr, calibration| {
        eprintln!("dentrylab exporter: listening on http://{addr}/metrics (calibration: {calibration})")
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Generator threads: as asked, else one per CPU. Where the layout has
/// fewer directories than threads, threads share a directory: they then
/// serialise on its lock while linking, but the rest of each call (name
/// formatting, lookup, allocation) still runs in parallel (2M hard links,
/// one directory, 2 CPUs: 257k/s with one thread, 374k/s with two).
/// `--fs`, `--lower-fs` and `--upper-fs` of reclaim and create: the
/// filesystem the kinds are checked against (an overlay's lower) and the
/// overlay stack, if any.
fn fs_of(w: &cli::WorkloadArgs) -> Result<(sandbox::FsType, Option<sandbox::overlay::Stack>)> {
    match w.fs {
        cli::FsChoice::Overlay => {
            let stack = bench::layers::stack(w.lower_fs, w.upper_fs);
            Ok((stack.lower, Some(stack)))
        }
        cli::FsChoice::Plain(fs) => {
            if let Some(flag) = [("--lower-fs", w.lower_fs), ("--upper-fs", w.upper_fs)].iter().find(|f| f.1.is_some()) {
                return Err(UsageError(format!(
                    "{}: the layers of an overlay are chosen only with --fs overlay (this run uses --fs {fs}); \
                     add --fs overlay or drop {}",
                    flag.0, flag.0
                ))
                .into());
            }
            Ok((fs, None))
        }
    }
}

fn generator_threads(asked: Option<u32>) -> usize {
    if let Some(t) = asked {
        return t as usize;
    }
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

fn cmd_reclaim(a: cli::ReclaimArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let (cpu, control_cpu) = bench::reclaim::choose_cpus(a.cpu)?;
    let (fs, overlay) = fs_of(&a.workload)?;
    let (policy, policy_why) = probe::gap::Policy::choose(a.probe_policy)?;
    let opts = bench::reclaim::Options {
        sizes: a.sizes.list.clone(),
        reps: a.reps,
        kind: a.workload.kind,
        layout: a.workload.layout,
        threads: generator_threads(a.workload.threads),
        fs,
        methods: a.method.0.clone(),
        contend: a.contend.unwrap_or(0) as usize,
        allow_global: a.allow_global,
        extrapolate: a.extrapolate,
        cpu,
        control_cpu,
        probe_interval_us: a.probe_interval_us,
        force: a.force,
        unobserved_reps: a.unobserved_reps.unwrap_or(a.reps),
        profile: a.profile,
        overlay,
        auto: a.sizes.auto,
        probe_policy: policy,
        probe_policy_why: policy_why,
    };
    bench::reclaim::validate(&opts)?;
    bench::reclaim::preflight(&opts.sizes, opts.kind, opts.force, proc)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    let mut markdown = output::open_opt(a.markdown.as_deref())?;
    let report_dir = a.report.as_deref().map(output::OutDir::create).transpose()?;
    let state = match (a.no_save, &a.state_dir) {
        (true, _) => None,
        // A directory the user named must work.
        (false, Some(dir)) => Some(state::StateDir::open(dir)?),
        // The default one may not (no home, read-only): say so and go on.
        (false, None) => match state::StateDir::open(&state::default_dir()) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("dentrylab: warning: the calibration will not be saved: {e:#} (use --state-dir DIR)");
                None
            }
        },
    };
    if a.watchdog_check && !a.allow_global {
        return Err(UsageError(
            "--watchdog-check changes kernel.watchdog_thresh for the whole machine during the run: add --allow-global"
                .into(),
        )
        .into());
    }
    // Both guardians are copies of dentrylab started outside the sandbox
    // (sys::guardian): they clean up when it ends, however it ends.
    let guardian = if opts.methods.contains(&bench::reclaim::Method::Memcg) {
        Some(sandbox::cgroup::Guardian::start(proc)?)
    } else {
        None
    };
    // With --watchdog-check, one sweep per threshold: lowered (and guarded:
    // the guardian puts the original back however the run ends) before
    // the sandbox, set to each threshold in turn, restored at the end.
    let mut lowered = match a.watchdog_thresh.first() {
        Some(&t) if a.watchdog_check => Some(bench::reclaim::watchdog::lower(t)?),
        _ => None,
    };
    let mut sandbox = sandbox::Sandbox::enter()?;
    if let Some(g) = guardian {
        sandbox.adopt(g);
    }
    let mut result: Option<bench::reclaim::ReclaimResult> = None;
    let threshs: Vec<Option<u64>> =
        if a.watchdog_check { a.watchdog_thresh.iter().map(|&t| Some(t)).collect() } else { vec![None] };
    for thresh in threshs {
        if let (Some(l), Some(t)) = (lowered.as_mut(), thresh) {
            l.set(t)?;
        }
        let mut r = bench::reclaim::run(&opts, &mut sandbox, proc)?;
        if let (Some(l), Some(t)) = (lowered.as_ref(), thresh) {
            let w = bench::reclaim::watchdog::compare(&r, l.original, t);
            match result.as_mut() {
                Some(first) => first.watchdog_more.push(w),
                None => r.watchdog = Some(w),
            }
        }
        result.get_or_insert(r);
    }
    if let Some(l) = lowered {
        l.restore()?;
    }
    let result = result.context("no sweep ran")?;

    print_table_and_json(&report::table::reclaim(&result), json.as_mut(), &result)?;
    if let Some(m) = markdown.as_mut() {
        m.write_str(&report::markdown::reclaim(&result))?;
    }
    if let Some(dir) = &report_dir {
        let loaded = [report::document::Loaded::Reclaim(Box::new(result.clone()))];
        let written = write_report(dir, &loaded)?;
        eprintln!("report written to {}", written.display());
    }
    if let (Some(st), Some(cal)) = (&state, result.calibration()) {
        let p = st.save(&cal)?;
        eprintln!("calibration saved to {}", p.display());
    }
    if let Some(r) = result.refused.first() {
        anyhow::bail!("stopped before size {}: {}", size::human(r.target), r.reason);
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_report(a: cli::ReportArgs) -> Result<ExitCode> {
    let loaded = report::document::load(&a.results)?;
    let dir = output::OutDir::create(&a.output)?;
    let written = write_report(&dir, &loaded)?;
    println!("{}", written.display());
    Ok(ExitCode::SUCCESS)
}

/// Renders the results into `dir`; returns the path of report.md.
fn write_report(dir: &output::OutDir, loaded: &[report::document::Loaded]) -> Result<std::path::PathBuf> {
    let mut md = None;
    for f in report::document::render(loaded)? {
        let p = dir.write(&f.name, &f.contents)?;
        md.get_or_insert(p);
    }
    md.ok_or_else(|| anyhow::anyhow!("nothing to render"))
}

fn cmd_create(a: cli::CreateArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let (fs, overlay) = fs_of(&a.workload)?;
    let opts = bench::create::Options {
        count: a.count,
        kind: a.workload.kind,
        layout: a.workload.layout,
        threads: generator_threads(a.workload.threads),
        fs,
        hold_seconds: a.hold,
        overlay,
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
            duration::secs(rc.umount_seconds),
            rc.reason
        ));
    }
    if let Some(t) = &r.layers {
        announce(&format!("\nLayers of the {}, unmounted in turn", t.stack));
        announce(report::table::render_grid(&report::layers::create_grid(t)).trim_end());
        announce(report::layers::LEGEND);
        if let Some(l) = t.longest() {
            announce(&format!("Longest stretch on the CPU: the {} layer's umount ({}).", l.layer, l.fs));
        }
    }
    if let Some(j) = json.as_mut() {
        report::json::write(j, &r)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_scale(a: cli::ScaleArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let threads = match &a.threads {
        Some(spec) => spec.resolve(cpus).map_err(|e| UsageError(format!("--threads: {e}")))?,
        None => bench::scale::default_threads(cpus),
    };
    let opts = bench::scale::Options {
        ops: a.ops.map(|o| o.0).unwrap_or_else(|| workload::lookup::Op::ALL.to_vec()),
        threads,
        mode: if a.procs { bench::scale::Mode::Processes } else { bench::scale::Mode::Threads },
        seconds: a.seconds,
        fs: a.fs,
        sample_every: a.sample_every,
        profile: a.profile,
    };
    bench::scale::validate(&opts)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    let mut sandbox = sandbox::Sandbox::enter()?;
    let to_stderr = json.as_ref().is_some_and(|j| j.is_stdout());
    let announce = |m: &str| eprintln!("{m}");
    let result = bench::scale::run(&opts, &mut sandbox, proc, &announce)?;
    let table = report::table::scale(&result);
    if to_stderr {
        eprint!("{table}");
    } else {
        print!("{table}");
    }
    if let Some(j) = json.as_mut() {
        report::json::write(j, &result)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_pollute(a: cli::PolluteArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let opts = bench::pollute::Options {
        negatives: a.negatives.0.clone(),
        reps: a.reps,
        calls: a.calls as usize,
        fs: a.fs,
        cpu: bench::pollute::choose_cpu(a.cpu)?,
        force: a.force,
    };
    bench::pollute::validate(&opts)?;
    bench::pollute::preflight(&opts, proc)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    let mut sandbox = sandbox::Sandbox::enter()?;
    let announce = |m: &str| eprintln!("{m}");
    let result = bench::pollute::run(&opts, &mut sandbox, proc, &announce)?;
    print_table_and_json(&report::table::pollute(&result), json.as_mut(), &result)?;
    Ok(ExitCode::SUCCESS)
}

fn cmd_churn(a: cli::ChurnArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let workers = a.workers.map_or(cpus, |w| w as usize);
    let opts = bench::churn::Options {
        files: a.files,
        dirs: a.dirs.unwrap_or(workers as u32),
        workers,
        interval_seconds: a.interval.as_secs_f64(),
        fs: a.fs,
        warm: a.warm,
        force: a.force,
    };
    bench::churn::validate(&opts)?;
    bench::churn::preflight(&opts, proc)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    let mut sandbox = sandbox::Sandbox::enter()?;
    let announce = |m: &str| eprintln!("{m}");
    let result = bench::churn::run(&opts, &mut sandbox, proc, &announce)?;
    print_table_and_json(&report::table::churn(&result), json.as_mut(), &result)?;
    Ok(ExitCode::SUCCESS)
}

fn cmd_mitigate(a: cli::MitigateArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let cpus = sys::allowed_cpus()?;
    let cpu = match a.cpu {
        Some(c) if !cpus.contains(&c) => {
            return Err(UsageError(format!("--cpu {c}: this process may only run on CPUs {cpus:?}; choose one of them")).into());
        }
        Some(c) => c,
        None => *cpus.last().context("no CPU is available to this process")?,
    };
    // This node's lockup edge, from its calibration (as `status` finds it).
    let state_dir = a.state_dir.clone().unwrap_or_else(state::default_dir);
    let edge = status::calibration::Store::new(&state_dir).current().ok().and_then(|cal| {
        let thresh =
            proc.sysctl_u64("sys/kernel/watchdog_thresh").unwrap_or(env::DEFAULT_WATCHDOG_THRESH_SECONDS);
        analysis::edge::predict(&cal.model(), 0, thresh)
            .lockup_dentries
            .map(|d| bench::mitigate::Edge { dentries: d, calibration: cal.name.clone() })
    });
    let (container_mix, container_ops) =
        bench::mitigate::containers::options(a.workload, a.container_workload, a.container_ops)?;
    let opts = bench::mitigate::Options {
        workload: a.workload,
        settings: a.settings,
        memory_limit: a.memory_limit,
        duration_seconds: a.duration,
        reps: a.reps,
        clients: a.clients as usize,
        mariadb_options: a.mariadb_options,
        container_mix,
        container_ops,
        fs: a.fs,
        cpu,
        allow_global: a.allow_global,
        edge,
    };
    bench::mitigate::validate(&opts)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    // Guardians first, outside the sandbox: the sysctls' originals and the
    // cgroups (with the server in them) are put right however this ends.
    let sysctls = bench::mitigate::knobs::Sysctls::guard(&opts.settings)?;
    let guardian = sandbox::cgroup::Guardian::start(proc)?;
    let mut sandbox = sandbox::Sandbox::enter()?;
    sandbox.adopt(guardian);
    let announce = |m: &str| eprintln!("{m}");
    let result = bench::mitigate::run(&opts, sysctls, &mut sandbox, proc, &announce)?;
    print_table_and_json(&report::mitigate::table(&result), json.as_mut(), &result)?;
    Ok(ExitCode::SUCCESS)
}
fn cmd_containers(a: cli::ContainersArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let (cpu, _) = bench::reclaim::choose_cpus(a.cpu)?;
    let opts = bench::containers::Options {
        count: a.count,
        parallel: a.parallel,
        mix: a.workload,
        ops: a.ops,
        rate_per_hour: a.rate,
        fs: a.fs,
        cpu,
        probe_interval_us: a.probe_interval_us,
        force: a.force,
        profile: a.profile,
    };
    bench::containers::validate(&opts)?;
    bench::containers::preflight(&opts, proc)?;
    let edge = containers_edge(a.state_dir.unwrap_or_else(state::default_dir), proc)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    let mut sandbox = sandbox::Sandbox::enter()?;
    let announce = |m: &str| eprintln!("{m}");
    let result = bench::containers::run(&opts, &edge, &mut sandbox, proc, &announce)?;
    print_table_and_json(&report::table::containers(&result), json.as_mut(), &result)?;
    Ok(ExitCode::SUCCESS)
}

/// The lockup count of the calibration `status` uses, for the projection.
fn containers_edge(state_dir: std::path::PathBuf, proc: &ProcRoot) -> Result<bench::containers::Edge> {
    let used = status::calibration::Store::new(&state_dir).current()?;
    let thresh = proc.sysctl_u64("sys/kernel/watchdog_thresh").unwrap_or(env::DEFAULT_WATCHDOG_THRESH_SECONDS);
    let p = analysis::edge::predict(&used.model(), 0, thresh);
    Ok(bench::containers::Edge {
        calibration: used.name.clone(),
        lockup_dentries: p.lockup_dentries,
        lockup_dentries_low: None,
    })
}
