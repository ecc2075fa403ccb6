//! What every result file carries first: the schema version, the benchmark,
//! the command line that produced it, and when it started.

use serde::{Deserialize, Serialize};

/// Version of the JSON result format. Bump it when a field changes meaning.
pub const SCHEMA: u32 = 2;

/// Seconds since the epoch, and the same as an RFC 3339 UTC string.
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

/// Formats seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The command line that produced a result, for "reproduce with".
pub fn command_line() -> String {
    let mut args = std::env::args();
    let _ = args.next();
    let rest: Vec<String> = args
        .map(|a| if a.contains(' ') || a.is_empty() { format!("'{a}'") } else { a })
        .collect();
    format!("dentrylab {}", rest.join(" "))
}

/// Fields every result file carries first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    pub schema: u32,
    pub benchmark: String,
    pub command: String,
    pub started_at: String,
}

impl Header {
    pub fn new(benchmark: &str) -> Header {
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
}
