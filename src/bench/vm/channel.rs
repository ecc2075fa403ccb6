//! The result channel between the guest's init and `dentrylab vm`: the
//! guest's second serial port (ttyS1), written by the init in raw mode and
//! captured by QEMU into a file. The console (ttyS0) carries the kernel's
//! and the command's own output; nothing of this protocol goes there.
//!
//! One record per line: `dentrylab-vm TAG JSON`. A JSON value never holds a
//! raw newline, so a record is one line whatever it carries; a trailing
//! `\r` (a tty's output processing) is ignored. The guest writes, in order:
//! `hello` (what kernel and model it booted), zero or one `refused` (the
//! model asked for is not the one in force), `result` (the command's JSON
//! output as one string, verbatim), `exit` (its exit status), one
//! `selftest` per kernel selftest run after it (`vm --selftests`), one `kmsg`
//! per kernel log line, then `end`. A transcript without `end` means the
//! guest stopped before it finished (panic, timeout, power cut).

use serde::{Deserialize, Serialize};

pub(crate) const PREFIX: &str = "dentrylab-vm ";

/// What the guest says about itself once it has booted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Hello {
    /// `uname -r`.
    pub release: String,
    /// `uname -v` (carries PREEMPT_DYNAMIC or PREEMPT_RT).
    pub version: String,
    /// The preemption model in force.
    pub preempt: String,
    /// Where the model was read.
    pub preempt_source: String,
    /// The models a PREEMPT_DYNAMIC kernel offers (debugfs `sched/preempt`);
    /// empty when the model is fixed at build time.
    pub offered: Vec<String>,
    /// The guest's CPUs and memory as it sees them.
    pub cpus: usize,
    pub memory_bytes: u64,
    /// Modules that would not load, with the kernel's errno.
    #[serde(default)]
    pub module_errors: Vec<String>,
    /// Whether the kernel has `/proc/PID/stack` (CONFIG_STACKTRACE), where
    /// `reclaim --victims` reads where a waiting victim waits.
    #[serde(default)]
    pub proc_stack: bool,
}

/// One record of the protocol.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Record {
    Hello(Hello),
    Refused(String),
    Result(String),
    Exit(i32),
    Kmsg(String),
    /// One kernel selftest's outcome (`vm --selftests`), after the exit.
    Selftest(super::selftests::Outcome),
    End,
}

impl Record {
    /// The record as one line, newline included.
    pub(crate) fn line(&self) -> String {
        let (tag, value) = match self {
            Record::Hello(h) => ("hello", serde_json::to_string(h)),
            Record::Refused(s) => ("refused", serde_json::to_string(s)),
            Record::Result(s) => ("result", serde_json::to_string(s)),
            Record::Exit(c) => ("exit", serde_json::to_string(c)),
            Record::Kmsg(s) => ("kmsg", serde_json::to_string(s)),
            Record::Selftest(o) => ("selftest", serde_json::to_string(o)),
            Record::End => ("end", Ok("null".to_string())),
        };
        format!("{PREFIX}{tag} {}\n", value.unwrap_or_else(|_| "null".into()))
    }

    /// Parses one line; `None` for a line that is not a record, `Err` for
    /// a record that is cut or garbled.
    pub(crate) fn parse(line: &str) -> Option<Result<Record, String>> {
        let rest = line.trim_end_matches(['\r', '\n']).strip_prefix(PREFIX)?;
        let (tag, json) = rest.split_once(' ').unwrap_or((rest, ""));
        let bad = |e: serde_json::Error| format!("garbled `{tag}` record: {e}");
        Some(match tag {
            "hello" => serde_json::from_str(json).map(Record::Hello).map_err(bad),
            "refused" => serde_json::from_str(json).map(Record::Refused).map_err(bad),
            "result" => serde_json::from_str(json).map(Record::Result).map_err(bad),
            "exit" => serde_json::from_str(json).map(Record::Exit).map_err(bad),
            "kmsg" => serde_json::from_str(json).map(Record::Kmsg).map_err(bad),
            "selftest" => serde_json::from_str(json).map(Record::Selftest).map_err(bad),
            "end" => Ok(Record::End),
            _ => Err(format!("unknown record `{tag}`")),
        })
    }
}

/// Everything a guest sent, gathered from its channel.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Transcript {
    pub hello: Option<Hello>,
    pub refused: Option<String>,
    /// The command's JSON output, verbatim.
    pub result: Option<String>,
    pub exit: Option<i32>,
    pub kernel_log: Vec<String>,
    pub selftests: Vec<super::selftests::Outcome>,
    /// The `end` record arrived: nothing was lost.
    pub complete: bool,
    /// Garbled records, in order.
    pub problems: Vec<String>,
}

impl Transcript {
    pub(crate) fn parse(text: &str) -> Transcript {
        let mut t = Transcript::default();
        for line in text.lines() {
            match Record::parse(line) {
                None => {}
                Some(Err(e)) => t.problems.push(e),
                Some(Ok(r)) => match r {
                    Record::Hello(h) => t.hello = Some(h),
                    Record::Refused(s) => t.refused = Some(s),
                    Record::Result(s) => t.result = Some(s),
                    Record::Exit(c) => t.exit = Some(c),
                    Record::Kmsg(s) => t.kernel_log.push(s),
                    Record::Selftest(o) => t.selftests.push(o),
                    Record::End => t.complete = true,
                },
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_whatever_they_carry() {
        let hello = Hello {
            release: "6.12.117+deb13-cloud-amd64".into(),
            version: "#1 SMP PREEMPT_DYNAMIC Debian 6.12.117-1".into(),
            preempt: "full".into(),
            preempt_source: "/sys/kernel/debug/sched/preempt".into(),
            offered: vec!["none".into(), "voluntary".into(), "full".into()],
            cpus: 2,
            memory_bytes: 2 << 30,
            module_errors: vec![],
            proc_stack: true,
        };
        let records = [
            Record::Hello(hello),
            Record::Result("{\n  \"a\": \"x\\ny\"\n}".into()),
            Record::Exit(3),
            Record::Kmsg("watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [dentrylab:93]".into()),
            Record::Refused("asked for lazy".into()),
            Record::Selftest(crate::bench::vm::selftests::Outcome {
                test: "mount:run_nosymfollow.sh".into(),
                verdict: crate::bench::vm::selftests::Verdict::Timeout,
                exit: None,
                pass: 1,
                fail: 0,
                skip: 2,
                seconds: 450.0,
                lines: vec!["# RUN x\n".into()],
            }),
            Record::End,
        ];
        for r in records {
            let line = r.line();
            assert_eq!(line.matches('\n').count(), 1, "{line}");
            assert_eq!(Record::parse(&line.replace('\n', "\r\n")), Some(Ok(r)));
        }
    }

    /// A transcript recorded from a guest (6.12 cloud kernel, TCG, 2 vCPUs,
    /// `reclaim --sizes 20k,40k --reps 1`), as QEMU wrote the serial port
    /// to a file.
    #[test]
    fn recorded_transcript_gives_the_result_whole() {
        let text = include_str!("../../../tests/fixtures/vm/channel.txt");
        let t = Transcript::parse(text);
        assert!(t.complete, "{:?}", t.problems);
        assert!(t.problems.is_empty(), "{:?}", t.problems);
        let hello = t.hello.expect("hello");
        assert!(hello.version.contains("PREEMPT_DYNAMIC"), "{}", hello.version);
        assert!(hello.offered.contains(&hello.preempt), "{hello:?}");
        assert_eq!(t.exit, Some(0));
        let v: serde_json::Value = serde_json::from_str(t.result.as_deref().expect("result")).expect("whole JSON");
        assert_eq!(v["benchmark"], "reclaim");
        assert!(!t.kernel_log.is_empty());
    }

    #[test]
    fn a_cut_transcript_is_incomplete_and_a_cut_record_is_a_problem() {
        let text = include_str!("../../../tests/fixtures/vm/channel.txt");
        let at = text.find("dentrylab-vm result").expect("result record") + 40;
        let t = Transcript::parse(&text[..at]);
        assert!(!t.complete);
        assert!(t.result.is_none());
        assert_eq!(t.problems.len(), 1, "{:?}", t.problems);
        assert!(t.hello.is_some());
    }

    #[test]
    fn console_lines_are_not_records() {
        let t = Transcript::parse(
            "[    0.000000] Linux version 6.12\ndentrylab-vmx hello {}\nnoise dentrylab-vm end null\n",
        );
        assert_eq!(t, Transcript::default());
    }
}
