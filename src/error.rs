//! Error kinds that decide the exit code: a [`UsageError`] is bad input
//! (exit 2); anything else is a failure at run time (exit 1).

/// Bad input from the user: the message names the flag and the value.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);
