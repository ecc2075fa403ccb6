//! The exporter's HTTP side: hyper's HTTP/1 server on a single-threaded
//! tokio runtime. Every connection is a task of its own on one event-loop
//! thread, so a slow client costs a few kilobytes and a timer, never a
//! thread: it cannot keep another client waiting. Three bounds:
//!
//! - the request head must arrive within `--header-timeout` of the
//!   connection's accept (hyper's `header_read_timeout`), and be at most
//!   [`MAX_REQUEST_HEAD_BYTES`] (else 431);
//! - at most `--max-requests` scrapes of `/metrics` are in flight; one
//!   past that is answered 503 at once (node_exporter's
//!   `--web.max-requests`);
//! - a whole connection lasts at most [`CONNECTION_DEADLINE`] (a client
//!   that sends its request and then never reads the answer).
//!
//! One request per connection (`Connection: close`). The collection runs on
//! the threads of [`super::collect`], never on the event loop.

use std::convert::Infallible;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Semaphore;

use super::collect::Scrapes;
use super::metrics;

/// Largest request head (request line and headers); a longer one gets 431.
pub(crate) const MAX_REQUEST_HEAD_BYTES: usize = 8 * 1024;
/// Total time one connection may take, from accept to the last byte
/// written. The head has `--header-timeout`; this bounds the rest (a
/// collection waiting its turn, a client that does not read its answer).
pub(crate) const CONNECTION_DEADLINE: Duration = Duration::from_secs(30);
/// Pause after a failed accept (out of file descriptors, a connection reset
/// before it was accepted) before the next one.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// The bounds on what clients may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Time from accept for the whole request head to arrive.
    pub header_timeout: Duration,
    /// Scrapes of `/metrics` in flight at once; 0: no bound.
    pub max_requests: usize,
}

const INDEX: &str = "<html><head><title>dentrylab exporter</title></head><body>\
<h1>dentrylab exporter</h1><p><a href=\"/metrics\">/metrics</a></p></body></html>\n";

struct Shared {
    scrapes: Scrapes,
    in_flight: Option<Arc<Semaphore>>,
    max_requests: usize,
}

/// Serves `listener` until the process ends. Fails only when the event
/// loop cannot be set up.
pub(crate) fn serve(listener: TcpListener, scrapes: Scrapes, limits: Limits) -> Result<()> {
    listener.set_nonblocking(true).context("setting the listening socket non-blocking")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .context("cannot start the HTTP event loop")?;
    let shared = Arc::new(Shared {
        scrapes,
        in_flight: (limits.max_requests > 0).then(|| Arc::new(Semaphore::new(limits.max_requests))),
        max_requests: limits.max_requests,
    });
    runtime.block_on(accept_loop(listener, shared, limits))
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, limits: Limits) -> Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener).context("registering the listening socket")?;
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_header_size(MAX_REQUEST_HEAD_BYTES)
        .keep_alive(false)
        .title_case_headers(true);
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(_) => {
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = Arc::clone(&shared);
        let service = service_fn(move |req| {
            let shared = Arc::clone(&shared);
            async move { Ok::<_, Infallible>(answer(&shared, req).await) }
        });
        let conn = http.serve_connection(TokioIo::new(stream), service);
        // A connection's error (a timeout, a reset, a malformed head that
        // hyper already answered 400 or 431) concerns that client only.
        tokio::spawn(async move {
            let _ = tokio::time::timeout(CONNECTION_DEADLINE, conn).await;
        });
    }
}

fn text(status: StatusCode, body: impl Into<String>) -> Response<Full<Bytes>> {
    with_type(status, "text/plain; charset=utf-8", body.into())
}

fn with_type(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// The answer to one request. HEAD gets GET's head (hyper leaves the body
/// out and keeps its Content-Length).
async fn answer(shared: &Shared, req: Request<Incoming>) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    match req.uri().path() {
        "/metrics" => scrape(shared).await,
        "/" => with_type(StatusCode::OK, "text/html; charset=utf-8", INDEX.into()),
        _ => text(StatusCode::NOT_FOUND, "not found: try /metrics\n"),
    }
}

async fn scrape(shared: &Shared) -> Response<Full<Bytes>> {
    let permit = match &shared.in_flight {
        None => None,
        Some(s) => match Arc::clone(s).try_acquire_owned() {
            Ok(p) => Some(p),
            Err(_) => {
                return text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!(
                        "{} scrapes already in flight (--max-requests {}): try again later\n",
                        shared.max_requests, shared.max_requests
                    ),
                );
            }
        },
    };
    match shared.scrapes.metrics(permit).await {
        Ok(body) => with_type(StatusCode::OK, metrics::CONTENT_TYPE, body),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("dentrylab: {e:#}\n")),
    }
}
