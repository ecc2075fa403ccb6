//! Helpers for the `status`, `exporter` and `deploy` tests: fixture proc
//! roots, the golden `/metrics` files, promtool, and an exporter process
//! on loopback.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A captured proc tree: `tests/fixtures/proc/<kernel>`.
pub fn fixture(kernel: &str) -> PathBuf {
    repo().join("tests/fixtures/proc").join(kernel)
}

/// The calibration a real quick sweep saved on the project's 6.18 machine.
pub fn calibration_dir() -> PathBuf {
    repo().join("tests/fixtures/calibration/6.18-quick")
}

/// A proc root like the 6.18 fixture but with this dentry-state line and
/// watchdog_thresh.
pub fn proc_root_with(dentry_state: &str, watchdog_thresh: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let src = fixture("6.18");
    for rel in ["meminfo", "config.gz", "sys/kernel/osrelease", "sys/kernel/version", "sys/vm/vfs_cache_pressure"] {
        let to = d.path().join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(src.join(rel), to).unwrap();
    }
    std::fs::create_dir_all(d.path().join("sys/fs")).unwrap();
    std::fs::write(d.path().join("sys/fs/dentry-state"), dentry_state).unwrap();
    std::fs::write(d.path().join("sys/kernel/watchdog_thresh"), watchdog_thresh).unwrap();
    d
}

/// Figures that depend on when the scrapes happened.
const TIMED: [&str; 6] = [
    "dentrylab_scrape_duration_seconds",
    "dentrylab_dentries_growth_per_second",
    "dentrylab_dentries_negative_growth_per_second",
    "dentrylab_growth_window_seconds",
    "dentrylab_seconds_to_lockup",
    "dentrylab_seconds_to_first_incident",
];

/// The scrape duration and the growth (timed) are the figures that differ between runs.
/// The build's revision and compiler are left out too (tests/exporter.rs
/// checks them against the build).
pub fn normalise(metrics: &str) -> String {
    metrics
        .lines()
        .map(|l| match TIMED.iter().find(|t| l.starts_with(&format!("{t} "))) {
            Some(t) => format!("{t} 0\n"),
            None if l.starts_with("dentrylab_build_info{") => {
                format!(
                    "dentrylab_build_info{{version=\"{}\",revision=\"\",rustc=\"\"}} 1\n",
                    env!("CARGO_PKG_VERSION")
                )
            }
            None => format!("{l}\n"),
        })
        .collect()
}

pub fn golden_path(name: &str) -> PathBuf {
    repo().join("tests/golden").join(format!("{name}.prom"))
}

/// Compares with `tests/golden/<name>.prom`; `UPDATE_GOLDEN=1` rewrites it.
/// The built-in default's cost per dentry (ns), read from the results file
/// the code's constant must equal (a unit test checks that).
pub fn builtin_ns_per_dentry() -> f64 {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results/worst-per-dentry-6.18.md");
    let doc = std::fs::read_to_string(&p).unwrap();
    let line = doc.lines().find(|l| l.starts_with("worst ns/dentry:")).unwrap();
    line["worst ns/dentry:".len()..].split_whitespace().next().unwrap().parse().unwrap()
}

pub fn assert_golden(name: &str, metrics: &str) {
    let got = normalise(metrics);
    let path = golden_path(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    for (i, (w, g)) in want.lines().zip(got.lines()).enumerate() {
        assert_eq!(w, g, "{} line {} differs (UPDATE_GOLDEN=1 rewrites it)", path.display(), i + 1);
    }
    assert_eq!(want.lines().count(), got.lines().count(), "{}: line count differs", path.display());
}

/// Runs promtool with `stdin`, or says it is skipped when it is not
/// installed (CI installs it: Debian package `prometheus`).
pub fn promtool(args: &[&str], stdin: Option<&str>, dir: &Path) -> Option<Output> {
    let mut c = Command::new("promtool");
    c.args(args).current_dir(dir).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = match c.spawn() {
        Ok(c) => c,
        Err(_) => {
            crate::common::skip("needs promtool (Debian package prometheus): its checks did not run");
            return None;
        }
    };
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    Some(child.wait_with_output().unwrap())
}

pub fn assert_promtool_ok(args: &[&str], stdin: Option<&str>, dir: &Path) {
    if let Some(out) = promtool(args, stdin, dir) {
        assert!(
            out.status.success(),
            "promtool {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A running `dentrylab exporter --listen 127.0.0.1:0 ...`, killed on drop.
/// Its log lines after the banner are collected in `log`.
pub struct Exporter {
    pub child: Child,
    pub addr: SocketAddr,
    pub banner: String,
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Exporter {
    pub fn start(args: &[&str]) -> Exporter {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dentrylab"))
            .args(["exporter", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut banner = String::new();
        err.read_line(&mut banner).unwrap();
        let addr = banner
            .split("://") // http, or https with --web-config-file
            .nth(1)
            .and_then(|r| r.split("/metrics").next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| {
                let mut rest = String::new();
                let _ = err.read_to_string(&mut rest);
                panic!("no address in the exporter's first line: {banner:?} {rest}")
            });
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let lines = std::sync::Arc::clone(&log);
        std::thread::spawn(move || {
            for l in err.lines().map_while(Result::ok) {
                lines.lock().unwrap().push(l);
            }
        });
        Exporter { child, addr, banner, log }
    }

    /// The log lines so far that contain `what`.
    pub fn log_lines(&self, what: &str) -> Vec<String> {
        self.log.lock().unwrap().iter().filter(|l| l.contains(what)).cloned().collect()
    }

    /// Waits (up to 30 s) for a log line containing `what`, then returns
    /// every such line.
    pub fn wait_log(&self, what: &str) -> Vec<String> {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while self.log_lines(what).is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.log_lines(what)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn get(&self, path: &str) -> Response {
        request(self.addr, &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n"))
    }

    pub fn metrics(&self) -> String {
        let r = self.get("/metrics");
        assert_eq!(r.status, 200, "{}", r.body);
        r.body
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Response {
    pub status: u16,
    pub head: String,
    pub body: String,
}

/// Sends `raw` and reads the whole answer (the server closes).
pub fn request(addr: SocketAddr, raw: &str) -> Response {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(raw.as_bytes()).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    Response { status, head: head.to_string(), body: body.to_string() }
}
