//! dentrylab: measure the Linux dentry cache on the real kernel.
//!
//! The entry point only: parse the command line, hand the command to its
//! handler (a benchmark to the generic one through the registry,
//! `cli::registry`; the others to theirs in `cli::handlers`), and turn the outcome into an exit code: 0,
//! 2 for bad input (clap's errors and `UsageError`), 1 for a failure.

// `unsafe` only in `sys/`: the compiler refuses it anywhere else, and
// every block there says why it is sound (clippy, -D warnings in CI).
#![deny(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod analysis;
mod bench;
mod census;
mod cli;
mod duration;
mod env;
mod error;
mod exporter;
mod histogram;
mod output;
mod probe;
mod procfs;
mod render;
mod report;
mod result;
mod sandbox;
mod size;
mod state;
mod stats;
mod status;
#[allow(unsafe_code)]
mod sys;
mod workload;

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use crate::bench::common::Context;
use crate::cli::handlers;
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
    let lockup_edge = |dir: Option<&std::path::Path>| handlers::lockup_edge(dir, &proc);
    let cx = Context { proc: &proc, lockup_edge: &lockup_edge };
    match cli.command {
        Command::Bench(b) => b.run(&cx),
        Command::Status(a) => handlers::node::status(a),
        Command::Exporter(a) => handlers::node::exporter(a),
        Command::Report(a) => handlers::report::run(a),
        Command::Vm(a) => handlers::vm::run(a),
        Command::Census(a) => handlers::census::run(a),
        Command::Internal { command } => command.run(),
    }
}
