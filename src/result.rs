//! What every result file carries first: the schema version, the benchmark,
//! the command line that produced it, and when it started.

use serde::{Deserialize, Serialize};

/// Version of the JSON result format. Bump it when a field changes meaning.
pub(crate) const SCHEMA: u32 = 2;

/// Seconds since the epoch, and the same as an RFC 3339 UTC string.
pub(crate) fn now_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    rfc3339(secs)
}

/// Formats seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (jiff).
pub(crate) fn rfc3339(secs: u64) -> String {
    let ts =
        i64::try_from(secs).ok().and_then(|s| jiff::Timestamp::from_second(s).ok()).unwrap_or(jiff::Timestamp::MAX);
    format!("{ts:.0}")
}

/// The command line that produced a result, for "reproduce with".
pub(crate) fn command_line() -> String {
    reproduce(std::env::args().skip(1))
}

/// `dentrylab ARGS…` quoted for a POSIX shell (shlex): pasting it runs the
/// same arguments, whatever quotes, spaces or `$` they hold.
pub(crate) fn reproduce(args: impl IntoIterator<Item = String>) -> String {
    let quoted: Vec<String> = args
        .into_iter()
        .map(|a| shlex::try_quote(&a).map_or_else(|_| format!("'{}'", a.replace('\0', "")), |q| q.into_owned()))
        .collect();
    std::iter::once("dentrylab".to_string()).chain(quoted).collect::<Vec<_>>().join(" ")
}

/// Fields every result file carries first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Header {
    pub schema: u32,
    pub benchmark: String,
    pub command: String,
    pub started_at: String,
}

impl Header {
    pub(crate) fn new(benchmark: &str) -> Header {
        Header { schema: SCHEMA, benchmark: benchmark.into(), command: command_line(), started_at: now_utc() }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::rfc3339(1_795_000_000), "2026-11-18T11:06:40Z");
    }

    /// Quotes and `$` broke the "reproduce with" line. A shell
    /// given the line gets back exactly the arguments.
    #[test]
    fn reproduce_survives_a_shell() {
        let args: Vec<String> = ["--json", "it's $HOME.json", "a b", "", "$(echo x)", "back\\slash", "\"dq\"", "plain"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let line = super::reproduce(args.clone());
        let script = format!("set -- {}; shift; for a in \"$@\"; do printf '%s\\0' \"$a\"; done", line);
        let out = std::process::Command::new("sh").arg("-c").arg(&script).output().unwrap();
        let got: Vec<String> = out.stdout.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        assert_eq!(&got[..got.len() - 1], &args[..], "{line}");
        assert!(line.starts_with("dentrylab --json "), "{line}");
    }
}
