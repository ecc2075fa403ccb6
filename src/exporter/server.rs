//! A deliberately small HTTP/1.1 server for `/metrics`: a fixed number of
//! worker threads accept from one listener, each reads one bounded request
//! head, answers it and closes the connection. Concurrency, memory and time
//! per connection are all bounded: excess connections wait in the kernel's
//! accept queue, never in a thread of their own, and each connection has a
//! total deadline (a client trickling one byte every few seconds is cut off
//! at [`CONNECTION_DEADLINE`], not kept for hours).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::metrics;
use crate::status::Collector;

/// Largest request head read; a longer one gets 431.
pub const MAX_REQUEST_HEAD_BYTES: usize = 8 * 1024;
/// Total time one connection may take, from accept to the last byte
/// written: reading the request head, answering and writing it. A scrape on
/// a LAN takes milliseconds; a client slower than this frees its worker.
pub const CONNECTION_DEADLINE: Duration = Duration::from_secs(5);

struct Response {
    status: u16,
    reason: &'static str,
    content_type: &'static str,
    body: String,
    allow: bool,
}

impl Response {
    fn text(status: u16, reason: &'static str, body: impl Into<String>) -> Response {
        Response { status, reason, content_type: "text/plain; charset=utf-8", body: body.into(), allow: false }
    }
}

const INDEX: &str = "<html><head><title>dentrylab exporter</title></head><body>\
<h1>dentrylab exporter</h1><p><a href=\"/metrics\">/metrics</a></p></body></html>\n";

/// Starts `workers` threads serving `listener`; they serve until the
/// process ends (join the handles to wait). A thread that cannot be started
/// is an error naming the limit to raise.
pub fn start(listener: TcpListener, collector: Arc<Collector>, workers: usize) -> Result<Vec<JoinHandle<()>>> {
    let listener = Arc::new(listener);
    (0..workers)
        .map(|i| {
            let l = Arc::clone(&listener);
            let c = Arc::clone(&collector);
            std::thread::Builder::new().name(format!("http-{i}")).spawn(move || worker(&l, &c)).with_context(|| {
                format!(
                    "cannot start HTTP worker thread {} of {workers} (lower --workers, or raise the \
                     process's thread limit: ulimit -u, the pids cgroup)",
                    i + 1
                )
            })
        })
        .collect()
}

fn worker(listener: &TcpListener, collector: &Collector) {
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = handle(stream, collector);
            }
            // Out of file descriptors or a connection reset before accept:
            // back off a little and go on.
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// The time left before `deadline`, or a timed-out error once it passed.
fn left(deadline: Instant) -> std::io::Result<Duration> {
    let d = deadline.saturating_duration_since(Instant::now());
    if d.is_zero() {
        return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "connection deadline passed"));
    }
    Ok(d)
}

fn handle(mut stream: TcpStream, collector: &Collector) -> std::io::Result<()> {
    let deadline = Instant::now() + CONNECTION_DEADLINE;
    let _ = stream.set_nodelay(true);
    let Some(head) = read_head(&mut stream, deadline)? else {
        let r = Response::text(431, "Request Header Fields Too Large", "request head too large\n");
        return write(&mut stream, &r, true, deadline);
    };
    let (method, target) = match parse_request_line(&head) {
        Some(x) => x,
        None => return write(&mut stream, &Response::text(400, "Bad Request", "bad request\n"), true, deadline),
    };
    let path = target.split('?').next().unwrap_or("");
    let head_only = method == "HEAD";
    let r = match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let t0 = Instant::now();
            match collector.collect() {
                Ok(s) => Response {
                    status: 200,
                    reason: "OK",
                    content_type: metrics::CONTENT_TYPE,
                    body: metrics::encode(&s, t0.elapsed().as_secs_f64()),
                    allow: false,
                },
                Err(e) => Response::text(500, "Internal Server Error", format!("dentrylab: {e:#}\n")),
            }
        }
        ("GET" | "HEAD", "/") => Response {
            status: 200,
            reason: "OK",
            content_type: "text/html; charset=utf-8",
            body: INDEX.into(),
            allow: false,
        },
        ("GET" | "HEAD", _) => Response::text(404, "Not Found", "not found: try /metrics\n"),
        _ => Response { allow: true, ..Response::text(405, "Method Not Allowed", "only GET and HEAD\n") },
    };
    write(&mut stream, &r, !head_only, deadline)
}

/// Reads up to the blank line that ends the head. `None` when it is longer
/// than [`MAX_REQUEST_HEAD_BYTES`]; an error once `deadline` passed.
fn read_head(stream: &mut TcpStream, deadline: Instant) -> std::io::Result<Option<String>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        stream.set_read_timeout(Some(left(deadline)?))?;
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.windows(2).any(|w| w == b"\n\n") {
            break;
        }
        if buf.len() > MAX_REQUEST_HEAD_BYTES {
            return Ok(None);
        }
    }
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

/// `GET /metrics HTTP/1.1` → (`GET`, `/metrics`).
fn parse_request_line(head: &str) -> Option<(&str, &str)> {
    let line = head.lines().next()?;
    let mut it = line.split_whitespace();
    let (method, target, version) = (it.next()?, it.next()?, it.next()?);
    (version.starts_with("HTTP/") && it.next().is_none()).then_some((method, target))
}

fn write(stream: &mut TcpStream, r: &Response, with_body: bool, deadline: Instant) -> std::io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        r.status,
        r.reason,
        r.content_type,
        r.body.len()
    );
    if r.allow {
        out.push_str("Allow: GET, HEAD\r\n");
    }
    out.push_str("\r\n");
    if with_body {
        out.push_str(&r.body);
    }
    let mut rest = out.as_bytes();
    while !rest.is_empty() {
        stream.set_write_timeout(Some(left(deadline)?))?;
        match stream.write(rest) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    stream.shutdown(std::net::Shutdown::Write)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines() {
        assert_eq!(parse_request_line("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), Some(("GET", "/metrics")));
        assert_eq!(parse_request_line("HEAD /?a=b HTTP/1.0\r\n\r\n"), Some(("HEAD", "/?a=b")));
        assert_eq!(parse_request_line("GET /metrics\r\n\r\n"), None);
        assert_eq!(parse_request_line("GET /metrics FTP/1\r\n\r\n"), None);
        assert_eq!(parse_request_line(""), None);
    }
}
