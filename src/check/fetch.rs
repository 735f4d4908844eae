//! The checker's HTTP client: read-only, bounded, and bound to one server.
//!
//! - Only `GET` is sent, and only to the base URL given on the command line:
//!   every path is appended to it, redirects are not followed (a 301 is
//!   evidence to judge, not an instruction), and a `serverRelativeURL` that
//!   does not start with `/openapi/v3/` is never requested.
//! - Each request has a timeout, each body a size limit enforced while it
//!   streams, and the whole run a deadline: a server that stalls makes rules
//!   fail with that evidence instead of hanging the command.
//! - Memory is bounded in total, not only per body: bodies being read at
//!   once share [`READ_BUDGET`], and the bodies kept as evidence share
//!   [`KEEP_BUDGET`] (a body beyond it is evidence of its own, an error
//!   saying so). Documents and probes are not kept at all:
//!   [`Fetcher::send_digest`] hands each body to a function that takes what
//!   the rules need, then drops it.
//! - TLS reuses the proxy's downstream setup (CA bundle, skipping
//!   verification); the bearer token is sent but never shown in evidence.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use awc::http::header::{self, HeaderValue};
use bytes::Bytes;

use crate::outbound::body::{content_length, read_whole_body};
use crate::outbound::client::{ClientError, http_client};
use crate::outbound::redact::redact_url;
use crate::outbound::tls::TlsConfig;
use crate::outbound::token::{bearer, read_token_file};

/// Bytes of response bodies read at once, all requests together. Eight
/// requests are in flight; this keeps eight large documents from being
/// buffered side by side (a body of unknown length reserves `--max-bytes`,
/// and no body more than the whole budget).
pub const READ_BUDGET: usize = 64 * 1024 * 1024;
/// Bytes of response bodies kept as evidence (the OpenAPI root and the
/// discovery documents; OpenAPI documents and probes are not kept). A real
/// cluster's discovery is a few MB.
pub const KEEP_BUDGET: usize = 128 * 1024 * 1024;
/// The unit [`READ_BUDGET`] is counted in.
const PERMIT_BYTES: usize = 64 * 1024;

/// The path of a base URL (`/k8s/clusters/c-1` of
/// `https://rancher/k8s/clusters/c-1`), empty for a server's root: every
/// request is made below it.
#[must_use]
pub fn base_path(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.find('/').map_or("", |i| rest[i..].trim_end_matches('/'))
}

/// How the checker reaches the server.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Base URL, `http://` or `https://`, without a trailing slash.
    pub base: String,
    /// CA bundle to verify the server with (`None`: the system's roots).
    pub ca_file: Option<PathBuf>,
    /// Skip TLS verification.
    pub insecure: bool,
    /// File holding a bearer token.
    pub token_file: Option<PathBuf>,
    /// Per-request timeout (headers and body).
    pub timeout: Duration,
    /// Deadline for the whole run.
    pub deadline: Duration,
    /// Largest body read, in bytes.
    pub max_bytes: usize,
}

/// Why the checker could not start.
#[derive(Debug, thiserror::Error)]
pub enum FetchSetupError {
    /// The URL is not `http://` or `https://`, or carries a query (the
    /// URL as shown: a password hidden).
    #[error("{0:?} must be an http:// or https:// URL without query or fragment")]
    Url(String),
    /// The URL carries a user name or password (shown hidden): the checker
    /// would not send them, and they must not end up in the report.
    #[error("{0:?} carries credentials; use --token-file")]
    Credentials(String),
    /// TLS material could not be loaded.
    #[error("TLS setup")]
    Tls(#[source] ClientError),
    /// The token file could not be read or is not a header value.
    #[error("reading token file {path}")]
    Token {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// One request as sent (the token is never recorded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Always `GET`: the checker is read-only.
    pub method: &'static str,
    /// Path and query, relative to the base URL.
    pub path: String,
    /// Headers chosen by the rule (Accept, If-None-Match), in order.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// `GET path` with `headers`.
    #[must_use]
    pub fn get(path: &str, headers: &[(&str, &str)]) -> Self {
        Self {
            method: "GET",
            path: path.to_owned(),
            headers: headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        }
    }
}

impl std::fmt::Display for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method, self.path)?;
        for (k, v) in &self.headers {
            write!(f, " [{k}: {v}]")?;
        }
        Ok(())
    }
}

/// A response, read whole (within the size limit).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, names lower-case, in wire order (repeated names kept).
    pub headers: Vec<(String, String)>,
    /// Body bytes; empty when the body was not kept
    /// ([`Fetcher::send_digest`]).
    pub body: Bytes,
    /// How many bytes the body had, kept or not.
    pub length: usize,
}

impl Response {
    /// Every value of header `name` (lower-case).
    pub fn header_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The first value of header `name` (lower-case).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON, or why not.
    ///
    /// # Errors
    /// The parser's message.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body).map_err(|e| format!("body is not JSON: {e}"))
    }
}

/// One request and what came of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// What was asked.
    pub request: Request,
    /// The response, or why there is none (refused, timeout, too large,
    /// deadline passed).
    pub outcome: Result<Response, String>,
}

/// Sends the checker's requests.
pub struct Fetcher {
    options: FetchOptions,
    client: awc::Client,
    token: Option<HeaderValue>,
    started: Instant,
    /// [`READ_BUDGET`] in units of [`PERMIT_BYTES`].
    reading: tokio::sync::Semaphore,
    /// Bytes of bodies kept so far.
    kept: AtomicUsize,
}

/// A response whose body is still held, with its share of [`READ_BUDGET`].
struct Received<'a> {
    response: Response,
    _reading: Option<tokio::sync::SemaphorePermit<'a>>,
}

impl Fetcher {
    /// Builds the client.
    ///
    /// # Errors
    /// [`FetchSetupError`] for a bad URL, TLS material or token file.
    pub fn new(mut options: FetchOptions) -> Result<Self, FetchSetupError> {
        let base = options.base.trim_end_matches('/').to_owned();
        let valid = (base.starts_with("http://") || base.starts_with("https://"))
            && !base.contains(['?', '#'])
            && base.split_once("://").is_some_and(|(_, rest)| !rest.is_empty());
        if !valid {
            return Err(FetchSetupError::Url(redact_url(&options.base).into_owned()));
        }
        if base.split_once("://").is_some_and(|(_, rest)| rest.contains('@')) {
            return Err(FetchSetupError::Credentials(redact_url(&options.base).into_owned()));
        }
        options.base = base;
        let tls = TlsConfig {
            ca: options.ca_file.clone().map(Into::into),
            insecure_skip_verify: options.insecure,
            client_cert: None,
        };
        let client = http_client(
            &tls,
            options.timeout,
            concat!("openapi-proxy-check/", env!("CARGO_PKG_VERSION")),
        )
        .map_err(FetchSetupError::Tls)?;
        let token = match &options.token_file {
            None => None,
            Some(path) => Some(read_token(path)?),
        };
        Ok(Self {
            options,
            client,
            token,
            started: Instant::now(),
            reading: tokio::sync::Semaphore::new(READ_BUDGET / PERMIT_BYTES),
            kept: AtomicUsize::new(0),
        })
    }

    /// The base URL.
    #[must_use]
    pub fn base(&self) -> &str {
        &self.options.base
    }

    /// Sends `request` and reads the whole response, keeping its body as
    /// evidence while [`KEEP_BUDGET`] lasts; past it the exchange is an
    /// error saying so.
    pub async fn send(&self, request: Request) -> Exchange {
        let outcome = match self.try_send(&request).await {
            Ok(received) => {
                let response = received.response;
                let total = self.kept.fetch_add(response.length, Ordering::Relaxed);
                if total.saturating_add(response.length) > KEEP_BUDGET {
                    self.kept.fetch_sub(response.length, Ordering::Relaxed);
                    Err(format!(
                        "status {}: body of {} bytes not kept: check keeps at most {KEEP_BUDGET} bytes of response bodies in all",
                        response.status, response.length
                    ))
                } else {
                    Ok(response)
                }
            }
            Err(why) => Err(why),
        };
        Exchange { request, outcome }
    }

    /// Sends `request`, reads the whole response, and hands the body to
    /// `digest`, which takes from it what the rules need; the exchange
    /// keeps the status, headers and length, not the body. `None` when
    /// there was no response.
    pub async fn send_digest<T>(
        &self,
        request: Request,
        digest: impl FnOnce(&Bytes) -> T,
    ) -> (Exchange, Option<T>) {
        let (outcome, digested) = match self.try_send(&request).await {
            Ok(received) => {
                let mut response = received.response;
                let digested = digest(&response.body);
                response.body = Bytes::new();
                (Ok(response), Some(digested))
            }
            Err(why) => (Err(why), None),
        };
        (Exchange { request, outcome }, digested)
    }

    async fn try_send(&self, request: &Request) -> Result<Received<'_>, String> {
        if !request.path.starts_with('/') {
            return Err(format!("{:?} is not a server-relative path; not requested", request.path));
        }
        let left = self.options.deadline.saturating_sub(self.started.elapsed());
        if left.is_zero() {
            return Err(format!(
                "not requested: the overall deadline ({:?}) has passed",
                self.options.deadline
            ));
        }
        let timeout = self.options.timeout.min(left);
        let url = format!("{}{}", self.options.base, request.path);
        let mut req = self.client.get(&url).timeout(timeout);
        for (k, v) in &request.headers {
            req = req.insert_header((k.as_str(), v.as_str()));
        }
        if let Some(token) = &self.token {
            req = req.insert_header((header::AUTHORIZATION, token.clone()));
        }
        let resp = req.send().await.map_err(|e| match e {
            awc::error::SendRequestError::Timeout => format!("no response within {timeout:?}"),
            other => format!("request failed: {other}"),
        })?;
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| {
                (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned())
            })
            .collect();
        let announced = content_length(resp.headers());
        let reading = self.reserve(announced).await;
        let mut resp = resp.timeout(timeout);
        let body = read_whole_body(&mut resp, self.options.max_bytes, announced).await.map_err(
            |e| match e {
                awc::error::PayloadError::Overflow => {
                    format!("status {status}: body larger than {} bytes", self.options.max_bytes)
                }
                other => format!("status {status}: reading the body: {other}"),
            },
        )?;
        let length = body.len();
        Ok(Received { response: Response { status, headers, body, length }, _reading: reading })
    }

    /// Waits for the share of [`READ_BUDGET`] a body of `announced` bytes
    /// needs (`--max-bytes` when unknown, the whole budget at most).
    async fn reserve(&self, announced: Option<u64>) -> Option<tokio::sync::SemaphorePermit<'_>> {
        let max = self.options.max_bytes;
        let bytes = announced.map_or(max, |n| usize::try_from(n).unwrap_or(max)).min(max);
        let permits = bytes.min(READ_BUDGET).div_ceil(PERMIT_BYTES);
        // The semaphore is never closed; without a permit the body is read
        // unaccounted rather than not at all.
        self.reading.acquire_many(u32::try_from(permits).unwrap_or(u32::MAX)).await.ok()
    }
}

fn read_token(path: &std::path::Path) -> Result<HeaderValue, FetchSetupError> {
    let err = |source| FetchSetupError::Token { path: path.display().to_string(), source };
    bearer(&read_token_file(path).map_err(err)?).map_err(err)
}

#[cfg(test)]
mod tests {
    #[test]
    fn base_path_is_what_requests_are_made_under() {
        assert_eq!(super::base_path("http://h:1"), "");
        assert_eq!(super::base_path("http://h:1/"), "");
        assert_eq!(super::base_path("https://r/k8s/clusters/c-1/"), "/k8s/clusters/c-1");
    }

    use super::*;

    fn setup_error(base: &str) -> String {
        let options = FetchOptions {
            base: base.to_owned(),
            ca_file: None,
            insecure: false,
            token_file: None,
            timeout: Duration::from_secs(1),
            deadline: Duration::from_secs(1),
            max_bytes: 1024,
        };
        match Fetcher::new(options) {
            Ok(_) => panic!("{base} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    /// The URL is quoted in the error, in the report and in every
    /// finding: a password in it must never be.
    #[test]
    fn a_url_with_credentials_is_refused_without_showing_them() {
        assert_eq!(
            setup_error("http://user:hunter2@127.0.0.1:8001"),
            "\"http://user:***@127.0.0.1:8001\" carries credentials; use --token-file"
        );
        assert_eq!(
            setup_error("https://user:hun/ter2@host"),
            "\"https://user:***@host\" carries credentials; use --token-file"
        );
        assert_eq!(
            setup_error("http://user:hunter2@host/?q"),
            "\"http://user:***@host/?q\" must be an http:// or https:// URL without query or fragment"
        );
    }
}
