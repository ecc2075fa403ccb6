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
//!
//! With `--web-config-file` ([`Web`]): TLS ([`super::tls`]; the handshake
//! too must end within `--header-timeout`), basic auth on every path
//! ([`super::auth`]: a missing or wrong password is 401 with
//! `WWW-Authenticate: Basic`; bcrypt runs on tokio's blocking threads, never
//! on the event loop) and the file's extra headers on every answer.

use std::convert::Infallible;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ALLOW, AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue, WWW_AUTHENTICATE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Semaphore;

use super::auth::{self, Asked, Users};
use super::collect::Scrapes;
use super::metrics;
use super::web_config::WebConfig;
use crate::error::UsageError;

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

/// What `--web-config-file` asks of the server.
pub(crate) struct Web {
    tls: Option<tokio_rustls::TlsAcceptor>,
    users: Option<Arc<Users>>,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl Web {
    /// Fails (at start) on a certificate, key or client CA that cannot be
    /// used: bad input ([`UsageError`]) when it is not one, a failure when
    /// it cannot be read.
    pub(crate) fn new(c: &WebConfig) -> Result<Web> {
        let tls = c.tls.as_ref().map(super::tls::server_config).transpose()?;
        let mut headers = Vec::new();
        for (k, v) in &c.headers {
            let bad = |what: String| -> anyhow::Error { UsageError(what).into() };
            let name = HeaderName::from_bytes(k.as_bytes()).map_err(|e| bad(format!("header name {k:?}: {e}")))?;
            let value =
                HeaderValue::from_str(v).map_err(|e| bad(format!("http_server_config.headers.{k}: {v:?}: {e}")))?;
            headers.push((name, value));
        }
        Ok(Web {
            tls: tls.map(tokio_rustls::TlsAcceptor::from),
            users: Users::new(c.users.clone()).map(Arc::new),
            headers,
        })
    }

    /// `https` or `http`.
    pub(crate) fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    /// What the start line says of TLS and auth ("" for neither).
    pub(crate) fn describe(&self) -> String {
        let mut d = Vec::new();
        if self.tls.is_some() {
            d.push("TLS".to_string());
        }
        if let Some(u) = &self.users {
            let n = u.count();
            d.push(format!("basic auth for {n} user{}", if n == 1 { "" } else { "s" }));
        }
        d.join(", ")
    }
}

struct Shared {
    scrapes: Scrapes,
    in_flight: Option<Arc<Semaphore>>,
    max_requests: usize,
    web: Web,
}

/// Serves `listener` until the process ends. Fails only when the event
/// loop cannot be set up.
pub(crate) fn serve(listener: TcpListener, scrapes: Scrapes, limits: Limits, web: Web) -> Result<()> {
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
        web,
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
        let (http, tls) = (http.clone(), shared.web.tls.clone());
        let shared = Arc::clone(&shared);
        let service = service_fn(move |req| {
            let shared = Arc::clone(&shared);
            async move { Ok::<_, Infallible>(answer(&shared, req).await) }
        });
        // A connection's error (a timeout, a reset, a failed handshake, a
        // malformed head that hyper already answered 400 or 431) concerns
        // that client only.
        tokio::spawn(tokio::time::timeout(CONNECTION_DEADLINE, async move {
            match tls {
                None => {
                    let _ = http.serve_connection(TokioIo::new(stream), service).await;
                }
                Some(tls) => {
                    if let Ok(Ok(stream)) = tokio::time::timeout(limits.header_timeout, tls.accept(stream)).await {
                        let _ = http.serve_connection(TokioIo::new(stream), service).await;
                    }
                }
            }
        }));
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

/// The answer to one request: 401 without the credentials the web config
/// asks for, with its extra headers.
async fn answer(shared: &Shared, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let mut r = match &shared.web.users {
        Some(users) if !authorized(users, &req).await => {
            let mut r = text(StatusCode::UNAUTHORIZED, "Unauthorized\n");
            r.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Basic"));
            r
        }
        _ => route(shared, req).await,
    };
    for (k, v) in &shared.web.headers {
        r.headers_mut().insert(k.clone(), v.clone());
    }
    r
}

/// The request's basic-auth credentials are a listed user's. bcrypt runs
/// on a blocking thread unless the answer is remembered.
async fn authorized(users: &Arc<Users>, req: &Request<Incoming>) -> bool {
    match auth::asked(req.headers().get(AUTHORIZATION).map(HeaderValue::as_bytes)) {
        Asked::Nothing => false,
        Asked::Credentials(user, password) => {
            if let Some(ok) = users.remembered(&user, &password) {
                return ok;
            }
            let users = Arc::clone(users);
            tokio::task::spawn_blocking(move || users.check(&user, &password)).await.unwrap_or(false)
        }
    }
}

/// HEAD gets GET's head (hyper leaves the body out and keeps its
/// Content-Length).
async fn route(shared: &Shared, req: Request<Incoming>) -> Response<Full<Bytes>> {
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
