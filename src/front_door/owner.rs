//! A connection of the front door's own to an owner, spoken HTTP/1.1
//! to directly: what an upgrade ([`super::upgrade`]) and a long-running
//! pass ([`super::stream`]) need, where awc's client would hold more than
//! either uses (its buffers) or cannot be steered (an upgrade's bytes).

use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use actix_web::http::Method;
use actix_web::http::header::HeaderMap;
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::{Target, headers};

/// The largest response head read from a downstream.
const HEAD_LIMIT: usize = 64 * 1024;

/// The request head as the owner gets it: `method` and `target` (path and
/// query) as sent, under the owner's URL path; the owner's `Host`; the
/// client's end-to-end headers, but the identity claims
/// ([`headers::to_downstream`]); `X-Forwarded-For` with `peer`; then the
/// `extra` lines, which frame this exchange.
pub(super) fn request_head(
    method: &Method,
    target: &str,
    client_headers: &HeaderMap,
    peer: Option<IpAddr>,
    owner: &Target,
    extra: &[(&[u8], &[u8])],
) -> Vec<u8> {
    let mut head = Vec::with_capacity(1024);
    head.extend_from_slice(method.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(owner.prefix.as_bytes());
    head.extend_from_slice(target.as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    head.extend_from_slice(owner.authority.as_bytes());
    head.extend_from_slice(b"\r\n");
    let line = |head: &mut Vec<u8>, name: &[u8], value: &[u8]| {
        head.extend_from_slice(name);
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    };
    for (name, value) in headers::to_downstream(client_headers) {
        line(&mut head, name.as_str().as_bytes(), value.as_bytes());
    }
    if let Some(xff) = headers::forwarded_for(client_headers, peer) {
        line(&mut head, b"x-forwarded-for", xff.as_bytes());
    }
    for (name, value) in extra {
        line(&mut head, name, value);
    }
    head.extend_from_slice(b"\r\n");
    head
}

/// A downstream's response head, as read.
pub(super) struct Answer {
    pub(super) code: u16,
    /// The head, and whatever came after it in the same reads.
    pub(super) bytes: Bytes,
    pub(super) head_len: usize,
    /// Its headers, names in lower case, in their order.
    pub(super) headers: Vec<(String, Vec<u8>)>,
    pub(super) reason: String,
    pub(super) content_length: Option<u64>,
    /// `Transfer-Encoding: chunked`.
    pub(super) chunked: bool,
}

/// The owner's response head, read within [`HEAD_LIMIT`], `first_read`
/// bytes at first: what comes after the head in those reads is the body's
/// start, so a caller that keeps little of a body asks for little here.
pub(super) async fn read_head<S: AsyncRead + Unpin>(
    io: &mut S,
    first_read: usize,
) -> io::Result<Answer> {
    let mut buf = BytesMut::with_capacity(first_read);
    loop {
        if io.read_buf(&mut buf).await? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed before an answer"));
        }
        let mut lines = [httparse::EMPTY_HEADER; 96];
        let mut parsed = httparse::Response::new(&mut lines);
        match parsed.parse(&buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                let code = parsed.code.unwrap_or(502);
                let headers: Vec<(String, Vec<u8>)> = parsed
                    .headers
                    .iter()
                    .map(|h| (h.name.to_ascii_lowercase(), h.value.to_vec()))
                    .collect();
                let content_length = headers
                    .iter()
                    .find(|(n, _)| n == "content-length")
                    .and_then(|(_, v)| std::str::from_utf8(v).ok()?.trim().parse().ok());
                let chunked = headers.iter().any(|(n, v)| {
                    n == "transfer-encoding"
                        && std::str::from_utf8(v)
                            .is_ok_and(|v| v.to_ascii_lowercase().contains("chunked"))
                });
                let reason = parsed.reason.unwrap_or("").to_owned();
                return Ok(Answer {
                    code,
                    bytes: buf.freeze(),
                    head_len,
                    headers,
                    reason,
                    content_length,
                    chunked,
                });
            }
            Ok(httparse::Status::Partial) if buf.len() < HEAD_LIMIT => {}
            Ok(httparse::Status::Partial) => {
                return Err(io::Error::other("response head over 64 KiB"));
            }
            Err(e) => return Err(io::Error::other(format!("malformed response head: {e}"))),
        }
    }
}

/// A connection to a downstream: plain or TLS.
pub(super) enum Upstream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// A new connection to `target`, TLS when its URL is `https://`, within
/// its connect timeout.
pub(super) async fn connect(target: &Target) -> io::Result<Upstream> {
    let timeout = target.connect_timeout;
    let tcp =
        tokio::time::timeout(timeout, TcpStream::connect((target.host.as_str(), target.port)))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??;
    let _ = tcp.set_nodelay(true);
    let Some(tls) = &target.tls else { return Ok(Upstream::Plain(tcp)) };
    let name = rustls_pki_types::ServerName::try_from(target.host.clone())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let connector = tokio_rustls::TlsConnector::from(Arc::clone(tls));
    let stream = tokio::time::timeout(timeout, connector.connect(name, tcp))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))??;
    Ok(Upstream::Tls(Box::new(stream)))
}

impl AsyncRead for Upstream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Upstream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_flush(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
