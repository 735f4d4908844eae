//! HTTP/1.1 by hand over a plain socket, for requests no client library
//! will send: absolute-form targets, `..` segments, oversized heads,
//! header bytes that are not ASCII, a head dribbled a byte at a time.
//!
//! Blocking sockets with timeouts, run on actix's blocking pool through
//! [`send`], so the proxy's own tasks on the test's thread keep running.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// What came back on one connection.
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// The status code, 0 when the connection closed (or timed out) before
    /// a status line arrived.
    pub status: u16,
    /// Everything read, head and body.
    pub bytes: Vec<u8>,
}

impl RawResponse {
    /// The head as text.
    pub fn head(&self) -> String {
        let end = self.bytes.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(self.bytes.len());
        String::from_utf8_lossy(&self.bytes[..end]).into_owned()
    }

    /// The value of header `name` (first one; case-insensitive name).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head().lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }

    /// The body (after the blank line).
    pub fn body(&self) -> &[u8] {
        match self.bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(i) => &self.bytes[i + 4..],
            None => &[],
        }
    }
}

/// The status code of the first status line in `bytes`, 0 if none.
pub fn status_of(bytes: &[u8]) -> u16 {
    let line = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let text = String::from_utf8_lossy(line);
    let mut parts = text.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some(v), Some(code)) if v.starts_with("HTTP/1.") => code.parse().unwrap_or(0),
        _ => 0,
    }
}

/// Writes `request` (whole, as given) and reads until the server closes or
/// 10 s pass. Blocking: call it through [`send`] from async tests.
pub fn exchange(addr: SocketAddr, request: &[u8]) -> RawResponse {
    let mut stream = TcpStream::connect(addr).expect("connect to the proxy");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("read timeout");
    stream.set_write_timeout(Some(Duration::from_secs(10))).expect("write timeout");
    // The server may answer (431) and close before it has read everything:
    // a failed write is then expected, the answer is still there to read.
    let _ = stream.write_all(request);
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    RawResponse { status: status_of(&bytes), bytes }
}

/// [`exchange`] on the blocking pool.
pub async fn send(addr: SocketAddr, request: Vec<u8>) -> RawResponse {
    actix_web::rt::task::spawn_blocking(move || exchange(addr, &request))
        .await
        .expect("the raw exchange does not panic")
}

/// A `GET target` request with `Connection: close`, `Host: 127.0.0.1` and
/// `extra` header lines (each `Name: value`, no CRLF).
pub fn get(target: &str, extra: &[&str]) -> Vec<u8> {
    request("GET", target, extra)
}

/// Like [`get`] with any method.
pub fn request(method: &str, target: &str, extra: &[&str]) -> Vec<u8> {
    let mut head =
        format!("{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for line in extra {
        head.push_str(line);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}
