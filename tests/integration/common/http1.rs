//! HTTP/1.1 responses read strictly off one connection's byte stream, over
//! plain TCP or TLS.
//!
//! A client library forgives framing mistakes that matter on a kept-alive
//! or pipelined connection: a HEAD answer that carries a body, a GET answer
//! whose `Content-Length` promises bytes that never come. Here every
//! response is framed as RFC 9112 §6.3 says — no body for HEAD, 1xx, 204
//! and 304; chunked when `Transfer-Encoding` says so; otherwise exactly
//! `Content-Length` bytes — and every line must be a well-formed HTTP/1.1
//! line. So a surplus body becomes a malformed next status line and a
//! missing one swallows the next response: both fail loudly instead of
//! passing unnoticed.
//!
//! Blocking sockets with read timeouts (liveness bounds only); run it on
//! actix's blocking pool from async tests.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// How long a read may wait before the test gives up on the server: a
/// bound on a failing test, not a measurement.
pub const LIVENESS: Duration = Duration::from_secs(10);

/// A byte stream a test talks HTTP/1.1 over.
pub trait Stream: Read + Write + Send {}

impl<T: Read + Write + Send> Stream for T {}

/// One client connection.
pub struct Conn {
    reader: BufReader<Box<dyn Stream>>,
    tcp: TcpStream,
}

/// A response as read off the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// `HTTP/1.1 200 OK`.
    pub status_line: String,
    /// The status code.
    pub status: u16,
    /// Header lines in order, names lower-cased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Response {
    /// The value of the first `name` line; `None` when absent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.values(name).into_iter().next()
    }

    /// The values of every `name` line, in order.
    pub fn values(&self, name: &str) -> Vec<&str> {
        self.headers.iter().filter(|(n, _)| n == name).map(|(_, v)| v.as_str()).collect()
    }

    /// Whether a `Connection` line lists `close`.
    pub fn closes(&self) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n == "connection")
            .any(|(_, v)| v.split(',').any(|o| o.trim().eq_ignore_ascii_case("close")))
    }
}

/// How a connection ended, seen from the client.
#[derive(Debug, PartialEq, Eq)]
pub enum Ending {
    /// The server closed it cleanly (TCP FIN; over TLS, `close_notify` or a
    /// FIN).
    Eof,
    /// The server reset it.
    Reset,
    /// It sent more bytes.
    Bytes(Vec<u8>),
    /// Nothing came within the wait.
    Open,
}

impl Conn {
    /// A plain connection to `addr`.
    pub fn plain(addr: SocketAddr) -> Self {
        Self::over(connect(addr), None)
    }

    /// A TLS connection to `addr` (as `127.0.0.1`), trusting `client`'s
    /// roots; no ALPN, so the server speaks HTTP/1.1.
    pub fn tls(addr: SocketAddr, client: &Arc<rustls::ClientConfig>) -> Self {
        Self::over(connect(addr), Some(client))
    }

    /// A connection over `tcp`, in TLS with `tls` when given.
    pub fn over(tcp: TcpStream, tls: Option<&Arc<rustls::ClientConfig>>) -> Self {
        let stream = tcp.try_clone().expect("clone the socket");
        let stream: Box<dyn Stream> = match tls {
            None => Box::new(stream),
            Some(client) => {
                let name = ServerName::try_from("127.0.0.1").expect("server name");
                let tls =
                    rustls::ClientConnection::new(Arc::clone(client), name).expect("TLS client");
                Box::new(rustls::StreamOwned::new(tls, stream))
            }
        };
        Self { reader: BufReader::new(stream), tcp }
    }

    /// The stream itself, for bytes that are not HTTP (after a `101`).
    pub fn stream(&mut self) -> &mut BufReader<Box<dyn Stream>> {
        &mut self.reader
    }

    /// Writes `bytes` (one or several requests) at once.
    pub fn send(&mut self, bytes: &[u8]) {
        let stream = self.reader.get_mut();
        stream.write_all(bytes).expect("write requests");
        stream.flush().expect("flush requests");
    }

    /// The next response, the answer to a `method` request.
    ///
    /// # Errors
    /// What is wrong with the bytes, and where.
    pub fn response(&mut self, method: &str) -> Result<Response, String> {
        let mut response = self.response_head()?;
        self.response_body(&mut response, method)?;
        Ok(response)
    }

    /// The status line and headers of the next response; its body is
    /// left to [`Conn::response_body`].
    ///
    /// # Errors
    /// What is wrong with the bytes, and where.
    pub fn response_head(&mut self) -> Result<Response, String> {
        let status_line = self.line().map_err(|e| format!("status line: {e}"))?;
        let status = status_of(&status_line)?;
        let mut headers = Vec::new();
        loop {
            let line = self.line().map_err(|e| format!("header line after {headers:?}: {e}"))?;
            if line.is_empty() {
                break;
            }
            headers.push(header_line(&line)?);
        }
        Ok(Response { status_line, status, headers, body: Vec::new() })
    }

    /// The body of `response`, whose head was read, the answer to a
    /// `method` request.
    ///
    /// # Errors
    /// What is wrong with the bytes, and where.
    pub fn response_body(&mut self, response: &mut Response, method: &str) -> Result<(), String> {
        let status = response.status;
        if method == "HEAD" || (100..200).contains(&status) || status == 204 || status == 304 {
            return Ok(());
        }
        let chunked = framing_header(response, "transfer-encoding")?;
        let length = framing_header(response, "content-length")?;
        let body = match (chunked, length) {
            (Some(_), Some(_)) => {
                return Err(format!("both Transfer-Encoding and Content-Length: {response:?}"));
            }
            (Some(te), None) if te.eq_ignore_ascii_case("chunked") => self.chunked()?,
            (Some(te), None) => return Err(format!("unknown Transfer-Encoding {te}")),
            (None, Some(n)) => {
                let n: usize = n.parse().map_err(|_| format!("Content-Length {n:?}"))?;
                self.exactly(n).map_err(|e| format!("{n} body bytes: {e}"))?
            }
            (None, None) if response.closes() => {
                let mut rest = Vec::new();
                self.reader.read_to_end(&mut rest).map_err(|e| format!("body to close: {e}"))?;
                rest
            }
            (None, None) => {
                return Err(format!("a kept-alive response without framing: {response:?}"));
            }
        };
        response.body = body;
        Ok(())
    }

    /// What comes next within `wait`: the end of the connection, more
    /// bytes, or nothing.
    pub fn ending(&mut self, wait: Duration) -> Ending {
        self.tcp.set_read_timeout(Some(wait)).expect("read timeout");
        let mut buf = [0u8; 4096];
        let ending = match self.reader.read(&mut buf) {
            Ok(0) => Ending::Eof,
            Ok(n) => Ending::Bytes(buf[..n].to_vec()),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                Ending::Open
            }
            // rustls reports a peer that closed TCP without close_notify
            // so; the connection did end with a FIN.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ending::Eof,
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => Ending::Reset,
            Err(e) => panic!("reading the end of the connection: {e}"),
        };
        self.tcp.set_read_timeout(Some(LIVENESS)).expect("read timeout");
        ending
    }

    /// One CRLF-terminated line, without the CRLF.
    fn line(&mut self) -> Result<String, String> {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line).map_err(|e| e.to_string())?;
        if line.is_empty() {
            return Err("the connection ended".into());
        }
        let Some(text) = line.strip_suffix(b"\r\n") else {
            return Err(format!("not a CRLF line: {:?}", String::from_utf8_lossy(&line)));
        };
        String::from_utf8(text.to_vec()).map_err(|_| format!("not text: {text:?}"))
    }

    fn exactly(&mut self, n: usize) -> Result<Vec<u8>, String> {
        let mut body = vec![0; n];
        self.reader.read_exact(&mut body).map_err(|e| e.to_string())?;
        Ok(body)
    }

    /// A chunked body (RFC 9112 §7.1), trailers dropped.
    fn chunked(&mut self) -> Result<Vec<u8>, String> {
        let mut body = Vec::new();
        loop {
            let line = self.line().map_err(|e| format!("chunk size: {e}"))?;
            let size = line.split(';').next().unwrap_or_default().trim();
            let size =
                usize::from_str_radix(size, 16).map_err(|_| format!("chunk size {line:?}"))?;
            if size == 0 {
                while !self.line().map_err(|e| format!("trailer: {e}"))?.is_empty() {}
                return Ok(body);
            }
            body.extend(self.exactly(size)?);
            if !self.line().map_err(|e| format!("after a chunk: {e}"))?.is_empty() {
                return Err("chunk data longer than its size".into());
            }
        }
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    timeouts(TcpStream::connect(addr).expect("connect to the proxy"))
}

/// A socket to `addr` with a receive buffer as small as the kernel allows
/// (a few KiB): a client that does not read soon blocks the server's
/// writes.
pub fn connect_small_window(addr: SocketAddr) -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None).expect("socket");
    socket.set_recv_buffer_size(4096).expect("receive buffer");
    socket.connect(&addr.into()).expect("connect to the proxy");
    timeouts(socket.into())
}

fn timeouts(tcp: TcpStream) -> TcpStream {
    tcp.set_read_timeout(Some(LIVENESS)).expect("read timeout");
    tcp.set_write_timeout(Some(LIVENESS)).expect("write timeout");
    tcp.set_nodelay(true).expect("nodelay");
    tcp
}

fn status_of(line: &str) -> Result<u16, String> {
    let rest = line
        .strip_prefix("HTTP/1.1 ")
        .ok_or_else(|| format!("not an HTTP/1.1 status line: {line:?}"))?;
    let code = rest.get(..3).filter(|c| c.bytes().all(|b| b.is_ascii_digit()));
    let code = code.ok_or_else(|| format!("no status code: {line:?}"))?;
    if rest.len() > 3 && !rest[3..].starts_with(' ') {
        return Err(format!("no space after the status code: {line:?}"));
    }
    code.parse().map_err(|_| format!("status code {code:?}"))
}

/// `name: value`, the name a token (RFC 9110 §5.1), no obsolete folding.
fn header_line(line: &str) -> Result<(String, String), String> {
    let (name, value) = line.split_once(':').ok_or_else(|| format!("not a header: {line:?}"))?;
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(token) {
        return Err(format!("not a header name: {line:?}"));
    }
    Ok((name.to_ascii_lowercase(), value.trim_matches([' ', '\t']).to_owned()))
}

/// The one value of a framing header; two lines of it are an error.
fn framing_header<'r>(response: &'r Response, name: &str) -> Result<Option<&'r str>, String> {
    let mut values = response.headers.iter().filter(|(n, _)| n == name);
    let first = values.next().map(|(_, v)| v.as_str());
    if values.next().is_some() {
        return Err(format!("{name} twice: {response:?}"));
    }
    Ok(first)
}

/// A TLS client trusting only the CA in `ca` (a PEM file), offering no
/// ALPN protocol.
pub fn tls_client(ca: &std::path::Path) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).expect("CA file") {
        roots.add(c.expect("CA PEM")).expect("CA certificate");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("protocol versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    Arc::new(config)
}

/// A request head: `method target`, `Host`, the `extra` lines (each
/// `Name: value`), and a blank line.
pub fn head(method: &str, target: &str, extra: &[&str]) -> Vec<u8> {
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for line in extra {
        head.push_str(line);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_and_headers_are_read_strictly() {
        assert_eq!(status_of("HTTP/1.1 200 OK"), Ok(200));
        assert_eq!(status_of("HTTP/1.1 304 "), Ok(304));
        assert!(status_of("HTTP/1.0 200 OK").is_err());
        assert!(status_of("{\"major\":\"1\"}").is_err());
        assert!(status_of("HTTP/1.1 20 OK").is_err());
        assert_eq!(header_line("ETag: \"x\""), Ok(("etag".into(), "\"x\"".into())));
        assert!(header_line(" folded").is_err());
        assert!(header_line("{\"a\": 1}").is_err());
    }
}
