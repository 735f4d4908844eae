//! The HTTP client for one downstream server.
//!
//! - Only the configured base URL is ever contacted: paths are joined to it
//!   here, redirects are not followed (a redirect is a failure), and nothing
//!   from a client request reaches this module.
//! - Bodies are read with a size limit, enforced while streaming.
//! - TLS is verified by default ([`crate::outbound::tls`]); a bearer token
//!   is sent when configured ([`crate::outbound::token`]), never logged.
//!
//! awc's client is not `Send`: a [`DownstreamClient`] lives on the thread of
//! its poll loop. Its requests take `&self`, so that one poll can have
//! several in flight at once (a cold start fetches a thousand documents);
//! what they share — the token, the HTTP/1.0 flag — is kept in cells made
//! for one thread.

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use awc::http::StatusCode;
use awc::http::header::{self, HeaderValue};
use bytes::Bytes;

use crate::outbound::body::{content_length, read_whole_body};
use crate::outbound::credentials::TokenSource;
pub use crate::outbound::error::{ClientError, FetchError};
use crate::outbound::redact::redact_url;
use crate::outbound::tls::{TlsConfig, tls_config};
use crate::outbound::token::Token;

/// What a conditional GET came back with.
#[derive(Debug)]
pub enum Fetched {
    /// 200 with a body.
    Body {
        /// The body.
        body: Bytes,
        /// The downstream's ETag, to send back as `If-None-Match`.
        etag: Option<HeaderValue>,
        /// The downstream's Content-Type.
        content_type: Option<HeaderValue>,
    },
    /// 304: what we have is current.
    NotModified,
    /// 404: the downstream does not serve this document.
    NotFound,
    /// 406: the downstream does not serve this media type.
    NotAcceptable,
}

impl Fetched {
    /// How the fetch counts in `openapi_proxy_downstream_fetches_total`.
    #[must_use]
    pub fn result(outcome: &Result<Self, FetchError>) -> crate::metrics::FetchResult {
        use crate::metrics::FetchResult;
        match outcome {
            Ok(Self::Body { .. }) => FetchResult::Ok,
            Ok(Self::NotModified) => FetchResult::NotModified,
            Ok(Self::NotFound | Self::NotAcceptable) => FetchResult::NotServed,
            Err(_) => FetchResult::Error,
        }
    }
}

/// A client bound to one downstream's base URL.
pub struct DownstreamClient {
    /// The base URL requests go to.
    endpoint: String,
    /// `endpoint` as logs and errors show it ([`redact_url`]). The
    /// configuration refuses URLs with credentials, so this is `endpoint`
    /// unless the client was built some other way; it is kept apart so that
    /// no message can ever carry a password.
    shown: String,
    client: awc::Client,
    /// Behind an async mutex held while an exec plugin runs: requests in
    /// flight together wait for one run rather than each starting its own.
    token: Option<tokio::sync::Mutex<Token>>,
    max_bytes: usize,
    timeout: Duration,
    /// The downstream speaks HTTP/1.0: every request asks for the
    /// connection to be closed.
    close_connections: Cell<bool>,
    /// The one request of [`DownstreamClient::get_among`] allowed a
    /// body of the full `max_bytes`.
    whole: tokio::sync::Semaphore,
}

impl DownstreamClient {
    /// Builds the client for downstream `name` (named in the log lines of
    /// an exec plugin) at `base`: TLS from `tls`, the token if any,
    /// `timeout` per request, no redirects.
    ///
    /// # Errors
    /// [`ClientError`] when TLS material cannot be loaded.
    pub fn new(
        name: &str,
        base: &str,
        tls: &TlsConfig,
        token: Option<&TokenSource>,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<Self, ClientError> {
        let client =
            http_client(tls, timeout, concat!("openapi-proxy/", env!("CARGO_PKG_VERSION")))?;
        let token = token.map(|t| Token::new(t, name)).transpose()?.map(tokio::sync::Mutex::new);
        Ok(Self {
            endpoint: base.to_owned(),
            shown: redact_url(base).into_owned(),
            client,
            token,
            max_bytes,
            timeout,
            close_connections: Cell::new(false),
            whole: tokio::sync::Semaphore::new(1),
        })
    }

    /// A GET of `url` with this client's headers and `authorization`.
    fn request(
        &self,
        url: &str,
        accept: &str,
        etag: Option<&HeaderValue>,
        authorization: Option<&HeaderValue>,
    ) -> awc::ClientRequest {
        let mut req = self.client.get(url).insert_header((header::ACCEPT, accept));
        if let Some(tag) = etag {
            req = req.insert_header((header::IF_NONE_MATCH, tag.clone()));
        }
        if let Some(value) = authorization {
            req = req.insert_header((header::AUTHORIZATION, value.clone()));
        }
        if self.close_connections.get() {
            // Not a `Connection` header: awc's encoder drops those and
            // pools the connection all the same. `force_close` writes the
            // header and keeps the connection out of the pool, which
            // matters once several requests are in flight: each would
            // leave a connection the server is closing for the next one.
            req = req.force_close();
        }
        req
    }

    /// The `Authorization` header of the next request, if a token is
    /// configured (an exec plugin may run for it).
    async fn authorization(&self) -> Result<Option<HeaderValue>, FetchError> {
        match &self.token {
            Some(token) => token.lock().await.header().await.map(Some),
            None => Ok(None),
        }
    }

    /// A request that carried `sent` was answered 401: the header to ask
    /// again with, if a new token may help (an exec plugin's, run again
    /// unless another request's 401 already had it run). One lock for the
    /// check and the run, so that no request in between sees the token
    /// dropped and gives up.
    async fn renewed(&self, sent: Option<&HeaderValue>) -> Result<Option<HeaderValue>, FetchError> {
        let (Some(token), Some(sent)) = (&self.token, sent) else { return Ok(None) };
        let mut token = token.lock().await;
        if !token.rejected(sent) {
            return Ok(None);
        }
        token.header().await.map(Some)
    }

    /// The base URL as logs and errors show it (a password hidden).
    #[must_use]
    pub fn base(&self) -> &str {
        &self.shown
    }

    /// The limit of one request, headers and body together.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// `GET base + path` with `accept`, conditional on `etag`.
    ///
    /// `path` must start with `/`; it is appended to the configured base
    /// URL, never used as a URL of its own.
    ///
    /// Takes `&self`: requests may be in flight together, each with its
    /// own deadline and its own retry after a 401.
    ///
    /// # Errors
    /// [`FetchError`] for transport failures, timeouts, oversized bodies
    /// and statuses other than 200, 304, 404 and 406.
    pub async fn get(
        &self,
        path: &str,
        accept: &str,
        etag: Option<&HeaderValue>,
    ) -> Result<Fetched, FetchError> {
        self.get_within(path, accept, etag, self.max_bytes).await
    }

    /// [`get`](Self::get) for one of up to `in_flight` requests made
    /// together, bounded so that together they read no more than one
    /// request alone could: each body may have `max_bytes / in_flight`
    /// bytes, and one over that is asked for again with the whole
    /// `max_bytes`, one such request at a time. Bodies in flight stay
    /// under twice `max_bytes` whatever a downstream serves (eight bodies
    /// of the full 64 MiB would be 512 MiB, four times the default
    /// budget); documents of usual sizes are read once.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub async fn get_among(
        &self,
        path: &str,
        accept: &str,
        etag: Option<&HeaderValue>,
        in_flight: usize,
    ) -> Result<Fetched, FetchError> {
        let part = self.max_bytes / in_flight.max(1);
        match self.get_within(path, accept, etag, part).await {
            Err(e) if e.is_too_large() && part < self.max_bytes => {
                // Never closed, so acquiring cannot fail; were it to, the
                // request goes without the permit rather than not at all.
                let _whole = self.whole.acquire().await.ok();
                self.get_within(path, accept, etag, self.max_bytes).await
            }
            other => other,
        }
    }

    /// [`get`](Self::get) with bodies of at most `max_bytes`.
    async fn get_within(
        &self,
        path: &str,
        accept: &str,
        etag: Option<&HeaderValue>,
        max_bytes: usize,
    ) -> Result<Fetched, FetchError> {
        let target = format!("{}{path}", self.endpoint);
        // What errors and logs name: the same URL, a password hidden.
        let url = format!("{}{path}", self.shown);
        // One deadline for the whole request — connecting, the retry, the
        // headers and the body together — so that `timeout` means what the
        // configuration says, not twice or three times it. It starts once
        // the token is at hand: an exec plugin has its own deadline.
        let authorization = self.authorization().await?;
        let mut deadline = Instant::now() + self.timeout;
        let mut resp =
            self.send(&target, &url, accept, etag, authorization.as_ref(), deadline).await?;
        // A 401 to a plugin's token: the token may have been revoked or
        // may have expired early. As client-go does, run the plugin again
        // and ask once more, with a deadline of its own (it is a new
        // request, made with a new credential).
        if resp.status() == StatusCode::UNAUTHORIZED
            && let Some(renewed) = self.renewed(authorization.as_ref()).await?
        {
            tracing::debug!(%url, "401 to the exec plugin's token; running it again, retrying once");
            drop(resp);
            deadline = Instant::now() + self.timeout;
            resp = self.send(&target, &url, accept, etag, Some(&renewed), deadline).await?;
            if resp.status() == StatusCode::UNAUTHORIZED
                && let Some(token) = &self.token
            {
                // Not retried again, but the next request runs the plugin
                // afresh rather than sending a token known to be refused.
                token.lock().await.rejected(&renewed);
            }
        }
        let left = || deadline.saturating_duration_since(Instant::now());
        if resp.version() < awc::http::Version::HTTP_11 && !self.close_connections.get() {
            // awc keeps an HTTP/1.0 connection answered with a
            // Content-Length for reuse, but the server closes it: from now
            // on say `Connection: close`, so no dead connection is pooled.
            tracing::debug!(%url, "HTTP/1.0 downstream; not reusing connections");
            self.close_connections.set(true);
        }
        // What `-v 4` shows of each poll: every request and its answer.
        tracing::debug!(
            %url,
            status = resp.status().as_u16(),
            conditional = etag.is_some(),
            elapsed_ms = (self.timeout.saturating_sub(left())).as_millis() as u64,
            "downstream answered"
        );
        match resp.status() {
            StatusCode::OK => {}
            StatusCode::NOT_MODIFIED => return Ok(Fetched::NotModified),
            StatusCode::NOT_FOUND => return Ok(Fetched::NotFound),
            StatusCode::NOT_ACCEPTABLE => return Ok(Fetched::NotAcceptable),
            status => return Err(FetchError::Status { url, status }),
        }
        let etag = resp.headers().get(header::ETAG).cloned();
        let content_type = resp.headers().get(header::CONTENT_TYPE).cloned();
        let announced = content_length(resp.headers());
        // The body has what is left of the deadline: a server that sends
        // headers and then stalls must not hold the poll loop forever.
        let mut resp = resp.timeout(left());
        let body = read_whole_body(&mut resp, max_bytes, announced).await.map_err(|e| {
            let kind = match &e {
                awc::error::PayloadError::Overflow => std::io::ErrorKind::FileTooLarge,
                awc::error::PayloadError::Io(io) => io.kind(),
                _ => std::io::ErrorKind::Other,
            };
            let message = match e {
                awc::error::PayloadError::Overflow => {
                    format!("body larger than {max_bytes} bytes")
                }
                other => other.to_string(),
            };
            FetchError::Body { url: url.clone(), source: std::io::Error::new(kind, message) }
        })?;
        Ok(Fetched::Body { body, etag, content_type })
    }
    /// Sends one GET, retrying once on a kept-alive connection the
    /// downstream had closed, within `deadline`.
    async fn send(
        &self,
        target: &str,
        url: &str,
        accept: &str,
        etag: Option<&HeaderValue>,
        authorization: Option<&HeaderValue>,
        deadline: Instant,
    ) -> Result<awc::ClientResponse, FetchError> {
        let left = || deadline.saturating_duration_since(Instant::now());
        let resp =
            match self.request(target, accept, etag, authorization).timeout(left()).send().await {
                // A kept-alive connection the downstream had closed: GET is
                // idempotent, so ask once more on a new connection (Go's
                // net/http does the same for requests on reused connections).
                Err(awc::error::SendRequestError::Connect(
                    awc::error::ConnectError::Disconnected,
                )) if !left().is_zero() => {
                    tracing::debug!(%url, "connection closed before an answer; retrying once");
                    self.request(target, accept, etag, authorization).timeout(left()).send().await
                }
                other => other,
            };
        resp.map_err(|e| {
            let kind = match e {
                awc::error::SendRequestError::Timeout => std::io::ErrorKind::TimedOut,
                _ => std::io::ErrorKind::Other,
            };
            FetchError::Send {
                url: url.to_owned(),
                source: std::io::Error::new(kind, e.to_string()),
            }
        })
    }
}

/// An awc client for one server: TLS from `tls`, `timeout` for connecting,
/// the handshake and each request, redirects never followed, no default
/// headers but `User-Agent`. The proxy's downstream client and
/// `openapi-proxy check` both connect with it.
///
/// # Errors
/// [`ClientError`] when TLS material cannot be loaded.
pub(crate) fn http_client(
    tls: &TlsConfig,
    timeout: Duration,
    user_agent: &'static str,
) -> Result<awc::Client, ClientError> {
    let connector = awc::Connector::new()
        .rustls_0_23(Arc::new(tls_config(tls)?))
        .timeout(timeout)
        .handshake_timeout(timeout);
    Ok(awc::Client::builder()
        .connector(connector)
        .timeout(timeout)
        .disable_redirects()
        .no_default_headers()
        .add_default_header((header::USER_AGENT, user_agent))
        .finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_timeouts_count_as_timeouts() {
        let body = |kind| FetchError::Body {
            url: "http://x/openapi/v3".into(),
            source: std::io::Error::new(kind, "x"),
        };
        assert_eq!(body(std::io::ErrorKind::TimedOut).reason(), "timeout");
        assert_eq!(body(std::io::ErrorKind::FileTooLarge).reason(), "too_large");
        assert_eq!(body(std::io::ErrorKind::UnexpectedEof).reason(), "body");
    }

    /// Errors and logs name the URL a request went to: never with the
    /// password of a base URL that carries one.
    #[actix_web::test]
    async fn errors_name_the_url_without_its_password() {
        let client = DownstreamClient::new(
            "test",
            "http://user:hunter2@127.0.0.1:1",
            &TlsConfig::default(),
            None,
            Duration::from_secs(2),
            1024,
        )
        .expect("client");
        assert_eq!(client.base(), "http://user:***@127.0.0.1:1");
        let e = client.get("/openapi/v3", "application/json", None).await.expect_err("refused");
        let chain = crate::error_chain(&e);
        assert!(!chain.contains("hunter2"), "{chain}");
        assert!(chain.contains("http://user:***@127.0.0.1:1/openapi/v3"), "{chain}");
    }
}
