//! The HTTP client for one downstream server.
//!
//! - Only the configured base URL is ever contacted: paths are joined to it
//!   here, redirects are not followed (a redirect is a failure), and nothing
//!   from a client request reaches this module.
//! - Bodies are read with a size limit, enforced while streaming.
//! - TLS is verified by default (the system's roots or a CA bundle);
//!   client certificates for mutual TLS; a bearer token read from a file and
//!   re-read when the file changes, because projected service-account tokens
//!   rotate. Tokens are never logged.
//!
//! awc's client is not `Send`: a [`DownstreamClient`] lives on the thread of
//! its poll loop.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use awc::http::StatusCode;
use awc::http::header::{self, HeaderValue};
use bytes::Bytes;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

use crate::config::{DownstreamConfig, TlsConfig};
use crate::credentials::{BearerToken, PemSource};

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
            Ok(Self::NotFound | Self::NotAcceptable) | Err(_) => FetchResult::Error,
        }
    }
}

/// Why a request to a downstream failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// Connecting, sending, or waiting for the response headers failed or
    /// timed out.
    #[error("requesting {url}")]
    Send {
        /// The URL.
        url: String,
        /// awc's error, as text (awc's error type is not `Send`).
        #[source]
        source: std::io::Error,
    },
    /// The downstream answered with a status we cannot use.
    #[error("{url} answered {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: StatusCode,
    },
    /// Reading the body failed, timed out, or exceeded the size limit.
    #[error("reading the body of {url}")]
    Body {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The token file could not be read.
    #[error("reading token file {path}")]
    Token {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl FetchError {
    /// A short stable reason for metrics.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Send { source, .. } | Self::Body { source, .. }
                if source.kind() == std::io::ErrorKind::TimedOut =>
            {
                "timeout"
            }
            Self::Send { .. } => "connect",
            Self::Status { .. } => "status",
            Self::Body { source, .. } if source.kind() == std::io::ErrorKind::FileTooLarge => {
                "too_large"
            }
            Self::Body { .. } => "body",
            Self::Token { .. } => "token",
        }
    }
}

/// Why a client could not be made from the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// A certificate or key file could not be read or parsed.
    #[error("{what} {path}")]
    Pem {
        /// Which file.
        what: &'static str,
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// rustls refused a certificate or key, or the configuration.
    #[error("{what} {path}")]
    Tls {
        /// What was being loaded.
        what: &'static str,
        /// The file(s) involved.
        path: String,
        /// rustls's reason.
        #[source]
        source: rustls::Error,
    },
    /// An inline token cannot be sent as a header.
    #[error("token {origin}")]
    Token {
        /// Where it came from.
        origin: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No CA certificate was found (empty bundle, no system roots).
    #[error("no CA certificates found ({0})")]
    NoRoots(String),
}

/// The `Authorization` header: from a file, re-read when the file's
/// modification time changes, or fixed (a kubeconfig's inline token).
#[derive(Debug)]
enum Token {
    File(TokenFile),
    Fixed(HeaderValue),
}

impl Token {
    fn new(token: &BearerToken) -> Result<Self, ClientError> {
        match token {
            BearerToken::File(path) => {
                Ok(Self::File(TokenFile { path: path.clone(), cached: None }))
            }
            BearerToken::Inline { origin, value: token } => bearer(token)
                .map(Self::Fixed)
                .map_err(|source| ClientError::Token { origin: origin.clone(), source }),
        }
    }

    fn header(&mut self) -> Result<HeaderValue, FetchError> {
        match self {
            Self::File(file) => file.header(),
            Self::Fixed(value) => Ok(value.clone()),
        }
    }
}

/// `Bearer TOKEN`, marked sensitive (also what `openapi-proxy check`
/// sends).
pub(crate) fn bearer(token: &str) -> Result<HeaderValue, std::io::Error> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.trim())).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, "token is not a valid header value")
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// The bearer token from a file, re-read when the file's modification time
/// changes.
#[derive(Debug)]
struct TokenFile {
    path: PathBuf,
    cached: Option<(SystemTime, HeaderValue)>,
}

impl TokenFile {
    fn header(&mut self) -> Result<HeaderValue, FetchError> {
        let err = |source| FetchError::Token { path: self.path.display().to_string(), source };
        let modified = std::fs::metadata(&self.path).and_then(|m| m.modified()).map_err(err)?;
        if let Some((at, value)) = &self.cached
            && *at == modified
        {
            return Ok(value.clone());
        }
        let token = std::fs::read_to_string(&self.path).map_err(err)?;
        let value = bearer(&token).map_err(err)?;
        self.cached = Some((modified, value.clone()));
        Ok(value)
    }
}

/// A client bound to one downstream's base URL.
pub struct DownstreamClient {
    base: String,
    client: awc::Client,
    token: Option<Token>,
    max_bytes: usize,
    timeout: Duration,
    /// The downstream speaks HTTP/1.0: every request asks for the
    /// connection to be closed.
    close_connections: bool,
}

impl DownstreamClient {
    /// Builds the client: TLS from `config.tls`, timeouts, no redirects.
    ///
    /// # Errors
    /// [`ClientError`] when TLS material cannot be loaded.
    pub fn new(config: &DownstreamConfig, max_bytes: usize) -> Result<Self, ClientError> {
        let client = http_client(
            &config.tls,
            config.timeout,
            concat!("openapi-proxy/", env!("CARGO_PKG_VERSION")),
        )?;
        let token = config.token.as_ref().map(Token::new).transpose()?;
        Ok(Self {
            base: config.url.clone(),
            client,
            token,
            max_bytes,
            timeout: config.timeout,
            close_connections: false,
        })
    }

    /// A GET of `url` with this client's headers.
    fn request(
        &mut self,
        url: &str,
        accept: &str,
        etag: Option<&HeaderValue>,
    ) -> Result<awc::ClientRequest, FetchError> {
        let mut req = self.client.get(url).insert_header((header::ACCEPT, accept));
        if let Some(tag) = etag {
            req = req.insert_header((header::IF_NONE_MATCH, tag.clone()));
        }
        if let Some(token) = &mut self.token {
            req = req.insert_header((header::AUTHORIZATION, token.header()?));
        }
        if self.close_connections {
            req = req.insert_header((header::CONNECTION, "close"));
        }
        Ok(req)
    }

    /// The base URL (for logs).
    #[must_use]
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `GET base + path` with `accept`, conditional on `etag`.
    ///
    /// `path` must start with `/`; it is appended to the configured base
    /// URL, never used as a URL of its own.
    ///
    /// # Errors
    /// [`FetchError`] for transport failures, timeouts, oversized bodies
    /// and statuses other than 200, 304, 404 and 406.
    pub async fn get(
        &mut self,
        path: &str,
        accept: &str,
        etag: Option<&HeaderValue>,
    ) -> Result<Fetched, FetchError> {
        let url = format!("{}{path}", self.base);
        let resp = match self.request(&url, accept, etag)?.send().await {
            // A kept-alive connection the downstream had closed: GET is
            // idempotent, so ask once more on a new connection (Go's
            // net/http does the same for requests on reused connections).
            Err(awc::error::SendRequestError::Connect(awc::error::ConnectError::Disconnected)) => {
                tracing::debug!(%url, "connection closed before an answer; retrying once");
                self.request(&url, accept, etag)?.send().await
            }
            other => other,
        };
        let resp = resp.map_err(|e| {
            let kind = match e {
                awc::error::SendRequestError::Timeout => std::io::ErrorKind::TimedOut,
                _ => std::io::ErrorKind::Other,
            };
            FetchError::Send { url: url.clone(), source: std::io::Error::new(kind, e.to_string()) }
        })?;
        if resp.version() < awc::http::Version::HTTP_11 && !self.close_connections {
            // awc keeps an HTTP/1.0 connection answered with a
            // Content-Length for reuse, but the server closes it: from now
            // on say `Connection: close`, so no dead connection is pooled.
            tracing::debug!(%url, "HTTP/1.0 downstream; not reusing connections");
            self.close_connections = true;
        }
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
        // The body gets its own deadline: a server that sends headers and
        // then stalls must not hold the poll loop forever.
        let mut resp = resp.timeout(self.timeout);
        let body = read_whole_body(&mut resp, self.max_bytes, announced).await.map_err(|e| {
            let kind = match &e {
                awc::error::PayloadError::Overflow => std::io::ErrorKind::FileTooLarge,
                awc::error::PayloadError::Io(io) => io.kind(),
                _ => std::io::ErrorKind::Other,
            };
            let message = match e {
                awc::error::PayloadError::Overflow => {
                    format!("body larger than {} bytes", self.max_bytes)
                }
                other => other.to_string(),
            };
            FetchError::Body { url: url.clone(), source: std::io::Error::new(kind, message) }
        })?;
        Ok(Fetched::Body { body, etag, content_type })
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

/// The whole body of a response that announced `announced` bytes (its
/// `Content-Length`, when valid): [`read_body`] within `max`, and then
/// refused if shorter than announced — awc ends a body quietly when the
/// connection closes early, and a document cut short must never pass for a
/// whole one.
pub(crate) async fn read_whole_body<S>(
    stream: &mut S,
    max: usize,
    announced: Option<u64>,
) -> Result<Bytes, awc::error::PayloadError>
where
    S: futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin,
{
    let body = read_body(stream, max, announced).await?;
    if let Some(announced) = announced
        && u64::try_from(body.len()).ok() != Some(announced)
    {
        let message = format!("body ended after {} of {announced} bytes", body.len());
        let source = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, message);
        return Err(awc::error::PayloadError::Incomplete(Some(source)));
    }
    Ok(body)
}

/// Reads a body of at most `max` bytes, failing with
/// [`PayloadError::Overflow`](awc::error::PayloadError::Overflow) as soon as
/// it is exceeded — without reading the rest, and without `announced`
/// bytes when the announced length is already too large.
///
/// Memory is what a limit is for: awc's own `body().limit()` grows one
/// buffer by doubling, so a body refused at a 64 MiB limit peaked at about
/// 180 MiB. Here a body of announced length is read into one buffer of
/// exactly that size, and one of unknown length is kept as the chunks that
/// arrived and joined once at the end, so the peak stays near the limit.
async fn read_body<S>(
    stream: &mut S,
    max: usize,
    announced: Option<u64>,
) -> Result<Bytes, awc::error::PayloadError>
where
    S: futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin,
{
    use futures_util::StreamExt;

    let announced = match announced.map(usize::try_from) {
        Some(Ok(n)) if n <= max => Some(n),
        Some(_) => return Err(awc::error::PayloadError::Overflow),
        None => None,
    };
    let mut total = 0usize;
    let mut exact = announced.map(bytes::BytesMut::with_capacity);
    let mut chunks: Vec<Bytes> = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        total = total.saturating_add(chunk.len());
        if total > max {
            return Err(awc::error::PayloadError::Overflow);
        }
        match &mut exact {
            Some(buf) => buf.extend_from_slice(&chunk),
            None => chunks.push(chunk),
        }
    }
    if let Some(buf) = exact {
        return Ok(buf.freeze());
    }
    if chunks.len() == 1 {
        return Ok(chunks.pop().unwrap_or_default());
    }
    let mut joined = bytes::BytesMut::with_capacity(total);
    for chunk in chunks {
        joined.extend_from_slice(&chunk);
    }
    Ok(joined.freeze())
}

/// The `Content-Length` a response announced, if it announced a valid one.
pub(crate) fn content_length(headers: &awc::http::header::HeaderMap) -> Option<u64> {
    headers.get(header::CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls client configuration for one downstream (also what
/// `openapi-proxy check` connects with).
pub(crate) fn tls_config(tls: &TlsConfig) -> Result<rustls::ClientConfig, ClientError> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|source| ClientError::Tls {
            what: "TLS protocol versions",
            path: String::new(),
            source,
        })?;
    let builder = if tls.insecure_skip_verify {
        builder.dangerous().with_custom_certificate_verifier(Arc::new(NoVerification(provider())))
    } else {
        builder.with_root_certificates(roots(tls.ca.as_ref())?)
    };
    match &tls.client_cert {
        Some((cert, key)) => {
            let certs = read_certs(cert, "reading client certificate")?;
            let key_der = key.private_key().map_err(|source| ClientError::Pem {
                what: "reading client key",
                path: key.to_string(),
                source,
            })?;
            builder.with_client_auth_cert(certs, key_der).map_err(|source| ClientError::Tls {
                what: "using client certificate and key",
                path: format!("{cert} and {key}"),
                source,
            })
        }
        None => Ok(builder.with_no_client_auth()),
    }
}

fn read_certs(
    source: &PemSource,
    what: &'static str,
) -> Result<Vec<CertificateDer<'static>>, ClientError> {
    source.certificates().map_err(|e| ClientError::Pem {
        what,
        path: source.to_string(),
        source: e,
    })
}

fn roots(ca: Option<&PemSource>) -> Result<rustls::RootCertStore, ClientError> {
    let mut store = rustls::RootCertStore::empty();
    match ca {
        Some(source) => {
            for cert in read_certs(source, "reading CA bundle")? {
                store.add(cert).map_err(|e| ClientError::Tls {
                    what: "adding a CA certificate from",
                    path: source.to_string(),
                    source: e,
                })?;
            }
            if store.is_empty() {
                return Err(ClientError::NoRoots(source.to_string()));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(ClientError::NoRoots(
                    "the system has no CA certificates; set caFile".into(),
                ));
            }
        }
    }
    Ok(store)
}

/// `insecureSkipTlsVerify`: accepts any server certificate, still checks
/// that the handshake signatures are sound.
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_valid_content_length_is_taken_as_announced() {
        let mut headers = awc::http::header::HeaderMap::new();
        assert_eq!(content_length(&headers), None);
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("100000"));
        assert_eq!(content_length(&headers), Some(100_000));
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("-1"));
        assert_eq!(content_length(&headers), None);
    }

    fn chunks(
        parts: &[&'static [u8]],
    ) -> impl futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin {
        futures_util::stream::iter(
            parts.iter().map(|p| Ok(Bytes::from_static(p))).collect::<Vec<_>>(),
        )
    }

    fn read(parts: &[&'static [u8]], max: usize, announced: Option<u64>) -> Result<Bytes, String> {
        futures_util::FutureExt::now_or_never(read_body(&mut chunks(parts), max, announced))
            .expect("a ready stream never waits")
            .map_err(|e| e.to_string())
    }

    #[test]
    fn bodies_are_joined_whole_and_refused_past_the_limit() {
        assert_eq!(read(&[b"ab", b"cd"], 4, None).unwrap(), Bytes::from_static(b"abcd"));
        assert_eq!(read(&[b"ab", b"cd"], 4, Some(4)).unwrap(), Bytes::from_static(b"abcd"));
        assert_eq!(read(&[b"abcd"], 4, None).unwrap(), Bytes::from_static(b"abcd"));
        assert_eq!(read(&[], 4, None).unwrap(), Bytes::new());
        assert!(read(&[b"ab", b"cde"], 4, None).is_err(), "past the limit while streaming");
        assert!(read(&[b"ab"], 4, Some(5)).is_err(), "announced past the limit");
        // A short body is returned as it came; the caller compares it with
        // the announced length.
        assert_eq!(read(&[b"ab"], 4, Some(3)).unwrap(), Bytes::from_static(b"ab"));
    }

    #[test]
    fn a_whole_body_is_refused_when_shorter_than_announced() {
        let whole = |parts: &[&'static [u8]], announced| {
            futures_util::FutureExt::now_or_never(read_whole_body(&mut chunks(parts), 8, announced))
                .expect("a ready stream never waits")
                .map_err(|e| e.to_string())
        };
        assert_eq!(whole(&[b"ab", b"c"], Some(3)), Ok(Bytes::from_static(b"abc")));
        assert_eq!(whole(&[b"ab"], None), Ok(Bytes::from_static(b"ab")));
        let short = whole(&[b"ab"], Some(3)).expect_err("cut short");
        assert!(short.contains("body ended after 2 of 3 bytes"), "{short}");
    }

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
}
