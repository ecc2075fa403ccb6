//! dentrylab: measure the Linux dentry cache on the real kernel.
//!
//! The binary only: parse the command line, hand the command to the
//! library (`dentrylab::cli::run`), and turn the outcome into an exit code:
//! 0, 2 for bad input (clap's errors and `UsageError`), 1 for a failure,
//! the error and its causes on standard error.

#![deny(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use dentrylab::cli::Cli;
use dentrylab::error::UsageError;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return clap_error(e),
    };
    match dentrylab::cli::run(cli) {
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
