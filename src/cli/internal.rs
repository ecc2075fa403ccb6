//! The internal command (`dentrylab __internal NAME ...`, hidden): dentrylab
//! re-executing itself as a generator in its own mount namespace, a
//! container, a worker process, the guest's init, or a guardian that
//! restores sysctls and removes cgroups and directories however the parent
//! ends; or the victims' fit for a script's series (`__fit-waits`). Each
//! one is an entry ([`crate::sys::internal::Entry`]) beside the code it
//! serves, under the command-name constant the parent spawns it with
//! (behind [`crate::sys::INTERNAL_COMMAND`]), listed by its owner and
//! gathered by [`super::registry::internal_commands`]; this only finds
//! the entry by its name, parses its arguments and runs it, and exits 0,
//! or 1 with the error.

use std::ffi::OsString;
use std::process::ExitCode;

use anyhow::Result;

use crate::error::UsageError;

/// `__internal NAME ARGS...`.
#[derive(Debug, clap::Args)]
pub(crate) struct Internal {
    /// The internal command.
    name: String,
    /// Its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

impl Internal {
    /// Runs one internal command.
    pub(crate) fn run(self) -> Result<ExitCode> {
        let all = super::registry::internal_commands();
        let Some(c) = all.iter().find(|c| c.name() == self.name || c.aliases().contains(&self.name.as_str())) else {
            let names: Vec<&str> = all.iter().map(|c| c.name()).collect();
            return Err(UsageError(format!(
                "unknown internal command {:?}: this dentrylab has {}",
                self.name,
                names.join(", ")
            ))
            .into());
        };
        let m = c.command().no_binary_name(true).try_get_matches_from(self.args)?;
        c.run(&m)?;
        Ok(ExitCode::SUCCESS)
    }
}
