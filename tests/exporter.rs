//! `dentrylab exporter`: real scrapes on loopback of captured
//! fixtures against golden `/metrics` files, promtool, HTTP behaviour,
//! bounded concurrency, and that a scrape never touches /proc/slabinfo.

mod common;
mod metrics;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use metrics::{Exporter, assert_golden, assert_promtool_ok, calibration_dir, fixture, request};

fn empty_state() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// An exporter on the proc tree `proc` with the state directory `state`.
fn start(proc: &Path, state: &Path, extra: &[&str]) -> Exporter {
    let mut args = vec!["--proc-root", proc.to_str().unwrap(), "--state-dir", state.to_str().unwrap()];
    args.extend_from_slice(extra);
    Exporter::start(&args)
}

#[test]
fn golden_metrics_from_fixtures() {
    let state = empty_state();
    let e = start(&fixture("6.18"), state.path(), &[]);
    assert!(e.banner.contains("calibration: built-in conservative default"), "{}", e.banner);
    let r = e.get("/metrics");
    assert_eq!(r.status, 200);
    assert!(r.head.contains("Content-Type: text/plain; version=0.0.4"), "{}", r.head);
    assert_golden("6.18-builtin", &r.body);

    let e = start(&fixture("5.10"), &calibration_dir(), &[]);
    assert_golden("5.10-calibrated", &e.metrics());
}

/// `--by-cgroup` and `--kernel-log` on fixtures, and the growth from the
/// second scrape on (the dentry count grows by 10,000 between the scrapes).
#[test]
fn golden_metrics_with_cgroups_kernel_log_and_growth() {
    let state = empty_state();
    let proc = metrics::proc_root_with("37475\t15765\t45\t0\t6072\t0\n", "10\n");
    let cg = metrics::repo().join("tests/fixtures/cgroup/v1-cgroupfs");
    let log = fixture("6.18").join("kmsg-soft-lockup");
    let e = start(
        proc.path(),
        state.path(),
        &["--by-cgroup", "--top", "3", "--cgroup-root", cg.to_str().unwrap(), "--kernel-log", log.to_str().unwrap()],
    );
    let first = e.metrics();
    assert!(!first.contains("dentrylab_dentries_growth_per_second"), "no growth from one scrape: {first}");
    std::fs::write(proc.path().join("sys/fs/dentry-state"), "47475\t15765\t45\t0\t6072\t0\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let m = e.metrics();
    let growth: f64 = m
        .lines()
        .find_map(|l| l.strip_prefix("dentrylab_dentries_growth_per_second "))
        .expect("growth from the second scrape")
        .parse()
        .unwrap();
    assert!(growth > 0.0, "{m}");
    assert!(m.contains("\ndentrylab_seconds_to_lockup "), "{m}");
    assert_golden("6.18-extras", &m);
    assert_promtool_ok(&["check", "metrics"], Some(&m), &metrics::repo());
}

#[test]
fn metrics_pass_promtool() {
    let dir = metrics::repo();
    for g in ["6.18-builtin", "5.10-calibrated", "6.18-extras"] {
        let text = std::fs::read_to_string(metrics::golden_path(g)).unwrap();
        assert_promtool_ok(&["check", "metrics"], Some(&text), &dir);
    }
    // And a live scrape of this machine.
    let state = empty_state();
    let e = Exporter::start(&["--state-dir", state.path().to_str().unwrap()]);
    let live = e.metrics();
    assert!(live.contains("\ndentrylab_dentries "), "{live}");
    assert_promtool_ok(&["check", "metrics"], Some(&live), &dir);
}

#[test]
fn http_answers() {
    let state = empty_state();
    let e = start(&fixture("6.18"), state.path(), &[]);
    assert_eq!(e.get("/").status, 200);
    assert!(e.get("/").body.contains("/metrics"));
    assert_eq!(e.get("/metrics?x=1").status, 200);
    let nf = e.get("/nope");
    assert_eq!(nf.status, 404);
    let post = request(e.addr, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(post.status, 405);
    assert!(post.head.contains("Allow: GET, HEAD"), "{}", post.head);
    let head = request(e.addr, "HEAD /metrics HTTP/1.1\r\n\r\n");
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    let len: usize =
        head.head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).and_then(|v| v.parse().ok()).unwrap();
    assert!(len > 1000, "{len}");
    assert_eq!(request(e.addr, "garbage\r\n\r\n").status, 400);
    let huge = format!("GET /metrics HTTP/1.1\r\nX-Fill: {}\r\n\r\n", "a".repeat(20_000));
    assert_eq!(request(e.addr, &huge).status, 431);
    // Still serving after all that.
    assert_eq!(e.get("/metrics").status, 200);
}

/// A scrape must not read /proc/slabinfo (root-only, costly on a
/// huge slab). Here it is a FIFO with no writer: opening it would block the
/// scrape for ever.
#[test]
fn never_reads_slabinfo() {
    let root = metrics::proc_root_with("37475\t36077\t45\t0\t6072\t0\n", "10\n");
    nix::unistd::mkfifo(&root.path().join("slabinfo"), nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let state = empty_state();
    let e = start(root.path(), state.path(), &[]);
    let m = e.metrics();
    assert!(m.contains("\ndentrylab_dentries 37475\n"), "{m}");
}

#[test]
fn concurrent_scrapes_are_all_answered_by_a_bounded_pool() {
    let state = empty_state();
    // 200 at once: above the default --max-requests (40) on purpose.
    let e = start(&fixture("6.18"), state.path(), &["--workers", "3", "--max-requests", "200"]);
    let addr = e.addr;
    let clients: Vec<_> =
        (0..200).map(|_| std::thread::spawn(move || request(addr, "GET /metrics HTTP/1.1\r\n\r\n"))).collect();
    let mut ok = 0;
    for c in clients {
        let r = c.join().unwrap();
        assert_eq!(r.status, 200);
        assert!(r.body.ends_with("\n") && r.body.contains("dentrylab_scrape_duration_seconds"));
        ok += 1;
    }
    assert_eq!(ok, 200);
    // main (the event loop) + signal thread + 3 scrape workers: no thread
    // per connection.
    let threads = dentrylab::sys::threads_of(&e.pid().to_string()).expect("the exporter's /proc/PID/status");
    assert!(threads <= 5, "{threads} threads");
}

#[test]
fn picks_up_a_calibration_saved_while_running() {
    let state = empty_state();
    let e = start(&fixture("6.18"), state.path(), &[]);
    assert!(e.metrics().contains("\ndentrylab_calibration_builtin 1\n"));
    std::fs::copy(calibration_dir().join("calibration.json"), state.path().join("calibration.json")).unwrap();
    let m = e.metrics();
    assert!(m.contains("\ndentrylab_calibration_builtin 0\n"), "{m}");
    assert!(m.contains("source=\"file\",kernel=\"6.18.44-fc-v657\""), "{m}");
}

#[test]
fn sigterm_stops_it_cleanly() {
    let state = empty_state();
    let mut e = Exporter::start(&["--state-dir", state.path().to_str().unwrap()]);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(e.pid() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let st = e.child.wait().unwrap();
    assert_eq!(st.code(), Some(0), "{st:?}");
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dentrylab")).args(args).output().unwrap()
}

#[test]
fn bad_input_and_failures() {
    let out = run(&["exporter", "--listen", "localhost"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--listen") && err.contains("\"localhost\"") && err.lines().count() == 1, "{err}");

    let out = run(&["exporter", "--workers", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["exporter", "--header-timeout", "0s"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--header-timeout") && err.contains("100ms to 60s"), "{err}");
    let out = run(&["exporter", "--max-requests", "-1"]);
    assert_eq!(out.status.code(), Some(2));

    let out = run(&["exporter", "--proc-root", "/nonexistent", "--listen", "127.0.0.1:0"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("/nonexistent/sys/fs/dentry-state"), "{err}");

    let state = empty_state();
    let e = Exporter::start(&["--state-dir", state.path().to_str().unwrap()]);
    let out = run(&["exporter", "--listen", &e.addr.to_string(), "--state-dir", state.path().to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("cannot listen on {}", e.addr)), "{err}");
}

/// A client that trickles a request head that never ends, one byte a
/// second, until the server hangs up or `stop` is set. Returns the bytes
/// it sent and whether the server hung up on it.
fn slow_client(addr: std::net::SocketAddr, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> (u32, bool) {
    use std::io::{Read, Write};
    use std::sync::atomic::Ordering;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    // The wait for an answer is the one-second pause between bytes.
    s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut sent = 0;
    let mut buf = [0u8; 512];
    while !stop.load(Ordering::Relaxed) {
        if s.write_all(b"G").is_err() {
            return (sent, true);
        }
        sent += 1;
        match s.read(&mut buf) {
            // EOF or an answer (hyper may say 408): the server ended it.
            Ok(_) => return (sent, true),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return (sent, true),
        }
    }
    (sent, false)
}

/// Slow clients cannot starve scrapes: 16 clients trickle a request head
/// one byte a second while 100 scrapes arrive at once; every scrape is
/// answered 200 (`--max-requests 100` so that none is turned away by the
/// in-flight bound, which has its own test). With the fixed pool of worker
/// threads the exporter had before, each slow client held a worker for
/// its connection deadline. Then every slow client is disconnected by the
/// header timeout (1 s here). The 20 s read timeout of each scrape and the
/// 30 s wait for the slow clients are liveness bounds only: a stalled
/// server fails the test instead of hanging it; nothing here asserts a
/// time.
#[test]
fn slow_clients_cannot_starve_scrapes() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let state = empty_state();
    let e =
        start(&fixture("6.18"), state.path(), &["--workers", "2", "--max-requests", "100", "--header-timeout", "1s"]);
    let addr = e.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let slow: Vec<_> = (0..16)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || slow_client(addr, stop))
        })
        .collect();
    // Let the slow clients connect and start trickling first.
    std::thread::sleep(Duration::from_millis(300));
    let scrapes: Vec<_> =
        (0..100).map(|_| std::thread::spawn(move || request(addr, "GET /metrics HTTP/1.1\r\n\r\n"))).collect();
    let mut answered = 0;
    for (i, c) in scrapes.into_iter().enumerate() {
        let r = c.join().unwrap();
        assert_eq!(r.status, 200, "scrape {i}: {}", r.head);
        assert!(r.body.contains("dentrylab_scrape_duration_seconds"), "scrape {i}");
        answered += 1;
    }
    assert_eq!(answered, 100);
    // The header timeout ends every slow client; `stop` only after the
    // liveness bound, so that a client still connected then shows up.
    let t0 = std::time::Instant::now();
    while !slow.iter().all(|c| c.is_finished()) && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    for c in slow {
        let (sent, hung_up) = c.join().unwrap();
        assert!(sent >= 1, "a slow client sent nothing");
        assert!(hung_up, "a slow client was still connected after sending {sent} bytes");
    }
    // And it still serves.
    assert_eq!(e.get("/metrics").status, 200);
}

/// Past `--max-requests` scrapes in flight, `/metrics` answers 503 at
/// once, while the other paths (and a scrape once the first is over) are
/// answered. The scrape in flight is held by a `--kernel-log` FILE that is
/// a FIFO (read at every scrape): its collection blocks until the test
/// opens and closes the writing end.
#[test]
fn scrapes_past_max_requests_get_503() {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("kernel-log");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    // An empty log for one collection.
    let feed = {
        let f = fifo.clone();
        move || std::fs::write(&f, "").unwrap()
    };
    let feeder = std::thread::spawn(feed.clone());
    let state = empty_state();
    let e = start(
        &fixture("6.18"),
        state.path(),
        &["--max-requests", "1", "--workers", "2", "--kernel-log", fifo.to_str().unwrap()],
    );
    feeder.join().unwrap();
    let addr = e.addr;
    let first = std::thread::spawn(move || request(addr, "GET /metrics HTTP/1.1\r\n\r\n"));
    // Its collection has opened the FIFO once a non-blocking writer can open
    // it (ENXIO while no reader has). Liveness bound: 20 s.
    let t0 = std::time::Instant::now();
    let writer = loop {
        match std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&fifo) {
            Ok(w) => break w,
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) && t0.elapsed() < Duration::from_secs(20) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("the first scrape's collection never opened {}: {e}", fifo.display()),
        }
    };
    let busy = e.get("/metrics");
    assert_eq!(busy.status, 503, "{}", busy.head);
    assert!(busy.body.contains("--max-requests 1"), "{}", busy.body);
    // The event loop is not blocked by the collection in flight.
    assert_eq!(e.get("/").status, 200);
    assert_eq!(e.get("/nope").status, 404);
    drop(writer);
    let r = first.join().unwrap();
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(r.body.contains("\ndentrylab_kernel_lockups_total{dcache=\"true\"} 0\n"), "{}", r.body);
    // The place is free again.
    let feeder = std::thread::spawn(feed);
    assert_eq!(e.get("/metrics").status, 200);
    feeder.join().unwrap();
}

/// A worker thread that cannot be started was a panic. In a pids cgroup
/// that allows three tasks (main, signal thread, one scrape worker) the
/// second worker cannot start: one line naming the limit (and its cause),
/// exit 1.
#[test]
fn a_thread_that_cannot_start_is_one_line_and_exit_1() {
    require_root!();
    let pids = Path::new("/sys/fs/cgroup/pids");
    require!(pids.join("cgroup.procs").exists(), "needs the cgroup v1 pids controller at {}", pids.display());
    let cg = common::TempCgroup::new(pids, "exporter");
    std::fs::write(cg.0.join("pids.max"), "3").unwrap();
    let state = empty_state();
    let out = cg
        .command()
        .args(["exporter", "--listen", "127.0.0.1:0", "--workers", "4", "--proc-root"])
        .arg(fixture("6.18"))
        .arg("--state-dir")
        .arg(state.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // One line, then the OS's reason on a `caused by:` line.
    let first = err.lines().next().unwrap_or_default();
    assert!(first.contains("cannot start scrape worker thread 2 of 4") && first.contains("--workers"), "{err}");
    assert!(err.lines().count() <= 2, "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// The families a scrape serves (its `# TYPE` lines).
fn families(m: &str) -> std::collections::BTreeSet<String> {
    m.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect()
}

fn collector_success(m: &str, name: &str) -> Option<f64> {
    let key = format!("dentrylab_scrape_collector_success{{collector=\"{name}\"}} ");
    m.lines().find_map(|l| l.strip_prefix(&key)).and_then(|v| v.parse().ok())
}

/// Issue 39: a calibration that stops parsing after start drops the
/// calibration's families (and the incidents', which need it), sets its
/// collector to 0 and logs one line naming it; the scrape is still 200 with
/// every other family. Fixed again, it comes back.
#[test]
fn a_calibration_broken_after_start_drops_only_its_families() {
    let state = empty_state();
    let e = start(&fixture("6.18"), state.path(), &[]);
    let before = e.metrics();
    for c in ["dentries", "calibration", "incidents"] {
        assert_eq!(collector_success(&before, c), Some(1.0), "{c}: {before}");
    }
    assert!(e.log_lines("collector failed").is_empty(), "{:?}", e.log.lock().unwrap());
    let file = state.path().join("calibration.json");
    std::fs::write(&file, "{ \"this is\": not a calibration").unwrap();
    let r = e.get("/metrics");
    assert_eq!(r.status, 200, "{}", r.body);
    let m = r.body;
    assert_eq!(collector_success(&m, "calibration"), Some(0.0), "{m}");
    assert_eq!(collector_success(&m, "incidents"), Some(0.0), "{m}");
    assert_eq!(collector_success(&m, "dentries"), Some(1.0), "{m}");
    // The growth comes from the second scrape on: not what is compared.
    let steady = |m: &str| -> std::collections::BTreeSet<String> {
        families(m).into_iter().filter(|f| !f.contains("growth")).collect()
    };
    let (was, now) = (steady(&before), steady(&m));
    assert!(now.is_subset(&was), "{now:?} {was:?}");
    let gone: Vec<&String> = was.difference(&now).collect();
    let theirs = [
        "dentrylab_calibration_",
        "dentrylab_predicted_",
        "dentrylab_lockup_",
        "dentrylab_level",
        "dentrylab_incident_",
        "dentrylab_dentries_to_",
        "dentrylab_soft_lockup_threshold_seconds",
    ];
    assert!(!gone.is_empty(), "{m}");
    for f in &gone {
        assert!(theirs.iter().any(|p| f.starts_with(p)), "{f} is not the calibration's or the incidents'");
    }
    for f in [
        "dentrylab_dentries",
        "dentrylab_memory_available_bytes",
        "dentrylab_node_info",
        "dentrylab_build_info",
        "dentrylab_scrape_collector_success",
        "dentrylab_scrape_duration_seconds",
    ] {
        assert!(now.contains(f), "{f} missing: {m}");
    }
    assert_promtool_ok(&["check", "metrics"], Some(&m), &metrics::repo());
    // One line for the one failing scrape, naming the collector and the file.
    let lines = e.wait_log("collector failed");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("calibration") && lines[0].contains(file.to_str().unwrap()), "{}", lines[0]);
    std::fs::copy(calibration_dir().join("calibration.json"), &file).unwrap();
    let m = e.metrics();
    assert_eq!(collector_success(&m, "calibration"), Some(1.0), "{m}");
    assert!(m.contains("\ndentrylab_calibration_builtin 0\n"), "{m}");
}

/// A calibration broken before start: the exporter still starts (the
/// banner says why), and serves the node's figures.
#[test]
fn a_calibration_broken_at_start_still_serves() {
    let state = empty_state();
    std::fs::write(state.path().join("calibration.json"), "[]").unwrap();
    let e = start(&fixture("6.18"), state.path(), &[]);
    assert!(e.banner.contains("calibration collector is at 0"), "{}", e.banner);
    let m = e.metrics();
    assert_eq!(collector_success(&m, "calibration"), Some(0.0), "{m}");
    assert!(m.contains("\ndentrylab_dentries "), "{m}");
}

/// `dentrylab_build_info`: this package's version, the revision and
/// compiler the build captured; the same as `--version` says.
#[test]
fn build_info_names_the_build() {
    let state = empty_state();
    let e = start(&fixture("6.18"), state.path(), &[]);
    let m = e.metrics();
    let line = m.lines().find(|l| l.starts_with("dentrylab_build_info{")).expect("build_info");
    assert!(line.ends_with("} 1"), "{line}");
    assert!(line.contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION"))), "{line}");
    let label = |k: &str| line.split(&format!("{k}=\"")).nth(1).and_then(|r| r.split('"').next()).unwrap().to_string();
    let rustc = label("rustc");
    assert!(
        rustc.split('.').count() == 3 && rustc.split('.').all(|p| p.chars().next().is_some_and(|c| c.is_ascii_digit())),
        "{line}"
    );
    let rev = label("revision");
    assert!(!rev.is_empty(), "{line}");
    // In a git checkout the revision is HEAD's (a build outside git says unknown).
    if let Ok(o) = Command::new("git").args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"]).output()
        && o.status.success()
    {
        let head = String::from_utf8_lossy(&o.stdout);
        assert!(head.starts_with(&rev), "{rev} is not HEAD {head}");
    }
    let v = run(&["--version"]);
    let v = String::from_utf8_lossy(&v.stdout);
    assert!(v.contains(env!("CARGO_PKG_VERSION")) && v.contains(&rev), "{v}");
}

/// `--log-format json`: every log line is one JSON object.
#[test]
fn json_logs_are_one_object_a_line() {
    let state = empty_state();
    let e = start(&fixture("6.18"), state.path(), &["--log-format", "json"]);
    let banner: serde_json::Value = serde_json::from_str(e.banner.trim()).expect("the banner is JSON");
    assert!(banner["message"].as_str().unwrap().contains("listening on http://"), "{banner}");
    std::fs::write(state.path().join("calibration.json"), "{").unwrap();
    assert_eq!(e.get("/metrics").status, 200);
    let lines = e.wait_log("collector failed");
    assert_eq!(lines.len(), 1, "{lines:?}");
    let v: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(v["collector"], "calibration", "{v}");
    assert_eq!(v["level"], "WARN", "{v}");
}
