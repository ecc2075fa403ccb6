//! `create`: make dentries in the sandbox and hold them.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Result;

use crate::bench;
use crate::cli;
use crate::duration;
use crate::output;
use crate::procfs::ProcRoot;
use crate::report;
use crate::sandbox;
use crate::size;

/// `dentrylab create`.
pub fn run(a: cli::CreateArgs, proc: &ProcRoot) -> Result<ExitCode> {
    let cpus = crate::env::cpus();
    let opts = a.create.options(cpus)?;
    bench::reclaim::check_kind(opts.kind, opts.fs)?;
    bench::reclaim::preflight(&[opts.count], opts.kind, a.create.force, proc)?;
    let mut json = output::open_opt(a.output.json.as_deref())?;
    let mut sandbox = sandbox::Sandbox::enter()?;
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&interrupted))?;
    }
    let to_stderr = json.as_ref().is_some_and(|j| j.is_stdout());
    let announce = |m: &str| {
        if to_stderr { eprintln!("{m}") } else { println!("{m}") }
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
        announce(report::plain::render_grid(&crate::bench::layers::grid::create_grid(t)).trim_end());
        announce(crate::bench::layers::grid::LEGEND);
        if let Some(l) = t.longest() {
            announce(&format!("Longest stretch on the CPU: the {} layer's umount ({}).", l.layer, l.fs));
        }
    }
    if let Some(j) = json.as_mut() {
        report::json::write(j, &r)?;
    }
    Ok(ExitCode::SUCCESS)
}
