//! A misbehaving downstream at the TCP level: a [`Gate`] listens on its own
//! port in front of a well-behaved fake ([`openapi_proxy::demo::Site`]) and,
//! for the requests a fault applies to, does what actix cannot be scripted
//! to do — refuse connections, accept and never answer, send headers and
//! stall, cut a body short, stream an endless body, answer in HTTP/1.0 with
//! a close-delimited body. Every other request is passed to the site.
//!
//! Each connection carries one request: the gate adds `Connection: close`
//! when it passes a request on, so a client cannot slip a second request
//! past the gate on a kept-alive connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;

/// What the gate does to the requests a fault applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Nothing listens on the port: connections are refused.
    Refuse,
    /// Reads the request and never answers.
    Silent,
    /// Sends a 200's headers (announcing a body) and a few bytes, then stalls.
    Stall,
    /// Announces a `Content-Length`, sends part of it, closes.
    CutBody,
    /// Streams a body of `bytes` bytes, chunked (no length announced), from
    /// a 64 KiB buffer: the test never holds the body.
    Huge {
        /// Body size.
        bytes: u64,
    },
    /// A complete raw response: status line, headers, body.
    Respond {
        /// Status code.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// Body.
        body: Vec<u8>,
    },
    /// Passes the request to the site and answers in HTTP/1.0, then closes
    /// the connection (an HTTP/1.0 server's default).
    Http10 {
        /// Keep the `Content-Length`; without it the body ends when the
        /// connection closes.
        content_length: bool,
    },
}

/// Which requests a fault applies to, by path (query excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every request.
    All,
    /// `/openapi/v3` and everything under it.
    OpenApiV3,
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/api`, `/apis` and everything under them.
    Discovery,
    /// This one path.
    Path(&'static str),
}

impl Scope {
    fn applies(self, path: &str) -> bool {
        let under = |p: &str| path == p || path.starts_with(&format!("{p}/"));
        match self {
            Self::All => true,
            Self::OpenApiV3 => under("/openapi/v3"),
            Self::OpenApiV2 => under("/openapi/v2"),
            Self::Discovery => under("/api") || under("/apis"),
            Self::Path(p) => path == p,
        }
    }
}

#[derive(Debug, Clone)]
struct Mode {
    fault: Option<(Fault, Scope)>,
}

/// A gate in front of a site.
#[derive(Debug)]
pub struct Gate {
    /// Where the gate listens (the downstream URL the proxy is given).
    pub addr: SocketAddr,
    mode: watch::Sender<Mode>,
    faulted: Arc<AtomicU64>,
    huge_sent: Arc<AtomicU64>,
}

impl Gate {
    /// Starts a gate passing everything to `backend`, on the current actix
    /// system.
    pub async fn start(backend: SocketAddr) -> Self {
        let listener = bind("127.0.0.1:0".parse().expect("address")).expect("gate binds");
        let addr = listener.local_addr().expect("gate address");
        let (mode, _) = watch::channel(Mode { fault: None });
        let gate = Self {
            addr,
            mode,
            faulted: Arc::new(AtomicU64::new(0)),
            huge_sent: Arc::new(AtomicU64::new(0)),
        };
        actix_web::rt::spawn(accept_loop(
            listener,
            addr,
            backend,
            gate.mode.clone(),
            Arc::clone(&gate.faulted),
            Arc::clone(&gate.huge_sent),
        ));
        gate
    }

    /// The downstream URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Applies `fault` to the requests in `scope` from now on.
    pub fn fault(&self, fault: Fault, scope: Scope) {
        self.mode.send_replace(Mode { fault: Some((fault, scope)) });
    }

    /// Passes every request again (held connections are released).
    pub fn heal(&self) {
        self.mode.send_replace(Mode { fault: None });
    }

    /// Requests a fault was applied to so far.
    pub fn faulted(&self) -> u64 {
        self.faulted.load(Ordering::SeqCst)
    }

    /// The most body bytes [`Fault::Huge`] wrote in any one request.
    pub fn huge_sent(&self) -> u64 {
        self.huge_sent.load(Ordering::SeqCst)
    }
}

fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    // The port is given up while refusing and taken again on healing.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(64)
}

async fn accept_loop(
    mut listener: TcpListener,
    addr: SocketAddr,
    backend: SocketAddr,
    mode: watch::Sender<Mode>,
    faulted: Arc<AtomicU64>,
    huge_sent: Arc<AtomicU64>,
) {
    let mut changes = mode.subscribe();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                actix_web::rt::spawn(one_request(
                    stream,
                    backend,
                    mode.subscribe(),
                    Arc::clone(&faulted),
                    Arc::clone(&huge_sent),
                ));
            }
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                let refusing = matches!(changes.borrow().fault, Some((Fault::Refuse, _)));
                if refusing {
                    drop(listener);
                    loop {
                        if changes.changed().await.is_err() {
                            return;
                        }
                        if !matches!(changes.borrow().fault, Some((Fault::Refuse, _))) {
                            break;
                        }
                    }
                    listener = rebind(addr).await;
                }
            }
        }
    }
}

async fn rebind(addr: SocketAddr) -> TcpListener {
    for _ in 0..200 {
        if let Ok(l) = bind(addr) {
            return l;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the gate could not listen on {addr} again");
}

/// Reads a request head (up to the blank line).
async fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || head.len() > 64 * 1024 {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Some(head)
}

fn request_path(head: &[u8]) -> String {
    let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let target = line.split(' ').nth(1).unwrap_or_default();
    target.split('?').next().unwrap_or_default().to_owned()
}

/// The head with any `Connection` header replaced by `Connection: close`.
fn closing(head: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let mut out = String::new();
    for line in text.split("\r\n") {
        if line.is_empty() {
            break;
        }
        if line.to_ascii_lowercase().starts_with("connection:") {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    out.into_bytes()
}

async fn one_request(
    mut stream: TcpStream,
    backend: SocketAddr,
    mut mode: watch::Receiver<Mode>,
    faulted: Arc<AtomicU64>,
    huge_sent: Arc<AtomicU64>,
) {
    let Some(head) = read_head(&mut stream).await else { return };
    let path = request_path(&head);
    let fault = mode.borrow_and_update().fault.clone();
    let fault = fault.filter(|(_, scope)| scope.applies(&path)).map(|(f, _)| f);
    if fault.is_some() {
        faulted.fetch_add(1, Ordering::SeqCst);
    }
    match fault {
        None | Some(Fault::Refuse) => pass(stream, backend, &head, None).await,
        Some(Fault::Http10 { content_length }) => {
            pass(stream, backend, &head, Some(content_length)).await;
        }
        Some(Fault::Silent) => hold(stream, &mut mode).await,
        Some(Fault::Stall) => {
            let start = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"openapi\":";
            if stream.write_all(start).await.is_ok() {
                hold(stream, &mut mode).await;
            }
        }
        Some(Fault::CutBody) => {
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"openapi\":\"3.0.0\",\"pa")
                .await;
        }
        Some(Fault::Huge { bytes }) => stream_huge(stream, bytes, &huge_sent).await,
        Some(Fault::Respond { status, headers, body }) => {
            let mut out = format!("HTTP/1.1 {status} Fault\r\nContent-Length: {}\r\n", body.len());
            for (k, v) in headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str("Connection: close\r\n\r\n");
            let mut out = out.into_bytes();
            out.extend_from_slice(&body);
            let _ = stream.write_all(&out).await;
        }
    }
}

/// Keeps the connection open, answering nothing, until the fault is healed
/// or the client gives up.
async fn hold(mut stream: TcpStream, mode: &mut watch::Receiver<Mode>) {
    let mut buf = [0u8; 1024];
    loop {
        tokio::select! {
            read = stream.read(&mut buf) => if matches!(read, Ok(0) | Err(_)) { return },
            changed = mode.changed() => if changed.is_err() || mode.borrow().fault.is_none() { return },
        }
    }
}

async fn stream_huge(mut stream: TcpStream, bytes: u64, sent: &AtomicU64) {
    let head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    if stream.write_all(head).await.is_err() {
        return;
    }
    const CHUNK: usize = 64 * 1024;
    let mut chunk = format!("{CHUNK:x}\r\n").into_bytes();
    let data_start = chunk.len();
    chunk.resize(data_start + CHUNK, b' ');
    chunk[data_start] = b'[';
    chunk.extend_from_slice(b"\r\n");
    let mut written = 0u64;
    while written < bytes {
        if stream.write_all(&chunk).await.is_err() {
            return;
        }
        if written == 0 {
            chunk[data_start] = b' ';
        }
        written += CHUNK as u64;
        sent.fetch_max(written, Ordering::SeqCst);
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
}

/// Passes one request to the site and its answer back; in HTTP/1.0 form
/// when `http10` is set (to whether the length is kept).
async fn pass(mut stream: TcpStream, backend: SocketAddr, head: &[u8], http10: Option<bool>) {
    let Ok(mut upstream) = TcpStream::connect(backend).await else { return };
    if upstream.write_all(&closing(head)).await.is_err() {
        return;
    }
    let mut answer = Vec::new();
    if upstream.read_to_end(&mut answer).await.is_err() {
        return;
    }
    let answer = match http10 {
        Some(keep_length) => as_http10(&answer, keep_length),
        None => answer,
    };
    let _ = stream.write_all(&answer).await;
    if http10.is_some() {
        // Like a real HTTP/1.0 server (Python's http.server), close a
        // moment after answering: a client that wrongly keeps the
        // connection sends its next request into a socket about to close.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = stream.shutdown().await;
}

/// An HTTP/1.1 answer with a `Content-Length` rewritten as HTTP/1.0,
/// without `Connection` and, unless `keep_length`, without the length (the
/// body is then close-delimited).
fn as_http10(answer: &[u8], keep_length: bool) -> Vec<u8> {
    let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return answer.to_vec();
    };
    let head = String::from_utf8_lossy(&answer[..end]);
    let mut out = String::new();
    for (i, line) in head.split("\r\n").enumerate() {
        if i == 0 {
            out.push_str(&line.replacen("HTTP/1.1", "HTTP/1.0", 1));
        } else {
            let lower = line.to_ascii_lowercase();
            if (!keep_length && lower.starts_with("content-length:"))
                || lower.starts_with("connection:")
            {
                continue;
            }
            out.push_str(line);
        }
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(&answer[end + 4..]);
    out
}
