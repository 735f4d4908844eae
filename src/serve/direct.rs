//! Plain HTTP/1.1 connections answered with prepared bodies written
//! straight to the socket.
//!
//! Why a second transport: actix-http copies every response body into its
//! connection's write buffer before `write(2)`. For the documents served
//! here (an `api/v1` of 90 KB gzipped, 1.2 MB plain) that copy was the
//! largest cost of a request, and what kept the proxy below nginx, whose
//! `sendfile` copies nothing (BENCHMARKS.md, "Serving"). This transport
//! writes the response head and the snapshot's shared body with one
//! vectored write: no copy of the body in user space.
//!
//! It is deliberately small. It answers only ordinary requests: HTTP/1.1,
//! GET or HEAD, an origin-form target of plain characters, no body, no
//! `Expect`, no `Upgrade`, a head that httparse reads in one piece under
//! [`HEAD_LIMIT`] and that passes actix-http's own rules (`http::head`).
//! At the first request that is anything else — malformed (two `Host`s,
//! two lengths), HTTP/1.0, a POST, a huge head — it hands the connection,
//! with every byte it has read, to actix-http ([`Connection::HandOff`]), which serves that
//! request and the rest of the connection. So whatever is unusual gets
//! actix-http's answers, limits and error statuses, and both transports ask
//! the same router (`http::router`) for every answer they write.
//!
//! Timeouts mirror the actix side: a request head must arrive within the
//! request timeout of its first byte (of the connection, for the first
//! request); an idle kept-alive connection closes after the keep-alive
//! timeout, when a graceful stop begins, or when it is evicted to make room
//! for a new connection ([`slots`](super::slots)); a response write that
//! makes no progress for the request timeout drops the connection.

use std::borrow::Cow;
use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::rt::net::TcpStream;
use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::slots::Slot;
use crate::front_door::{self, FrontDoor, UpgradeRequest};
use crate::http::head::{self, Checked, plain_target_byte};
use crate::http::reply::{Method, Reply, Request, accepts_gzip, join_value, write_head};
use crate::http::{AppState, access, router};

/// The largest request head read here; a longer one is handed to actix-http,
/// which applies its own limits (431 past 128 KiB).
pub const HEAD_LIMIT: usize = 8 * 1024;

/// Header lines read here; more are handed to actix-http (which takes 96).
const MAX_HEADERS: usize = 48;

/// How a connection left the direct transport.
#[derive(Debug)]
pub enum Connection {
    /// Closed: by the client, by a timeout, by a stop, or after a response
    /// that closes it.
    Closed,
    /// A request needs actix-http: the stream, replaying what was read.
    HandOff(Rewind<TcpStream>),
    /// A request the front door passes on as an upgrade (exec, attach,
    /// port-forward): the stream after its head, and the request. Taken
    /// here, on the raw stream, because actix-http hands only WebSocket
    /// upgrades to a service; SPDY ones it would read as ordinary requests.
    Upgrade(Rewind<TcpStream>, Box<UpgradeRequest>),
}

/// The direct transport of one server: what every connection shares.
#[derive(Debug, Clone)]
pub struct DirectWriter {
    state: AppState,
    /// The front door, when on: upgrades are taken here for it, and what
    /// no route serves goes to actix-http, which passes it on.
    door: Option<Arc<FrontDoor>>,
    request_timeout: Duration,
    /// `None`: no keep-alive, every response closes its connection.
    keep_alive: Option<Duration>,
    stopping: actix_server::GracefulShutdownSignal,
}

/// What to do with one request head.
enum Next {
    /// Answer it; `close` after the response.
    Answer { reply: Reply, head_only: bool, close: bool },
    /// Give the connection to actix-http.
    HandOff,
    /// Give the connection to the front door, as an upgrade.
    Upgrade(Box<UpgradeRequest>),
}

/// Why a connection is done before a complete head.
enum Closed {
    /// The client closed it, it failed, it idled out, or a stop began.
    Quietly,
    /// A request head did not arrive in time: answered 408.
    HeadTimeout,
}

/// One timer per connection, re-armed lazily.
///
/// Creating a tokio timer per wait (a timeout on every read and write)
/// cost more than the rest of a 304. This one is set to the earliest
/// deadline it has been asked for; a wait with a later deadline leaves it
/// alone, and when it fires before the deadline of the wait in progress it
/// is re-armed then. On a busy kept-alive connection that is about once per
/// keep-alive period instead of twice per request.
struct Clock {
    sleep: Pin<Box<Sleep>>,
    /// When `sleep` fires.
    armed: Instant,
}

impl Clock {
    fn new(deadline: Instant) -> Self {
        Self { sleep: Box::pin(tokio::time::sleep_until(deadline)), armed: deadline }
    }

    fn arm(&mut self, deadline: Instant) {
        self.sleep.as_mut().reset(deadline);
        self.armed = deadline;
    }

    /// `ready` until `deadline`, or until `stop` (when given) completes;
    /// `None` when either comes first.
    async fn wait<F: Future>(
        &mut self,
        deadline: Instant,
        ready: F,
        mut stop: Option<Pin<&mut (dyn Future<Output = ()> + '_)>>,
    ) -> Option<F::Output> {
        if self.armed > deadline {
            self.arm(deadline);
        }
        let mut ready = std::pin::pin!(ready);
        loop {
            let stopped = async {
                match stop.as_mut() {
                    Some(stop) => stop.as_mut().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                out = &mut ready => return Some(out),
                () = self.sleep.as_mut() => {
                    if Instant::now() >= deadline {
                        return None;
                    }
                    // Fired for an earlier wait's deadline.
                    self.arm(deadline);
                }
                () = stopped => return None,
            }
        }
    }
}

impl DirectWriter {
    /// The transport for `state`, with the server's timeouts; `stopping`
    /// closes idle connections when a graceful stop begins.
    #[must_use]
    pub fn new(
        state: AppState,
        door: Option<Arc<FrontDoor>>,
        request_timeout: Duration,
        keep_alive: Duration,
        stopping: actix_server::GracefulShutdownSignal,
    ) -> Self {
        let keep_alive = (!keep_alive.is_zero()).then_some(keep_alive);
        Self { state, door, request_timeout, keep_alive, stopping }
    }

    /// Passes `upgrade` on over `io` (the front door's: only returned by
    /// [`DirectWriter::serve`] when it is on).
    pub(crate) async fn upgrade(&self, io: Rewind<TcpStream>, upgrade: &UpgradeRequest) {
        let Some(door) = &self.door else { return };
        if let Err(e) = front_door::relay(&self.state, door, upgrade, io, &[]).await {
            tracing::debug!(error = %crate::error_chain(&e), "front door: upgrade ended");
        }
    }

    /// Serves `io`, which holds `slot`, until it closes or needs
    /// actix-http.
    pub(crate) async fn serve(&self, mut io: TcpStream, slot: &Slot) -> Connection {
        let mut buf = BytesMut::with_capacity(4096);
        let mut head = Vec::with_capacity(512);
        // The first head is due a request timeout after the connection.
        let mut clock = Clock::new(Instant::now() + self.request_timeout);
        let mut stop = std::pin::pin!(self.stopping.notified());
        let mut first = true;
        loop {
            // Reads and writes are tried without waiting, so a client that
            // keeps both busy (pipelining, reading at once) would never
            // give the worker back: one unit of tokio's cooperative budget
            // per request makes it yield now and then.
            tokio::task::consume_budget().await;
            // A whole head is buffered (pipelining), or read one.
            let next =
                self.read_request(&mut io, &mut buf, &mut clock, stop.as_mut(), slot, first).await;
            let (len, reply, head_only, close) = match next {
                Ok((len, Next::Answer { reply, head_only, close })) => {
                    (len, reply, head_only, close)
                }
                Ok((_, Next::HandOff)) => {
                    return Connection::HandOff(Rewind::new(buf.freeze(), io));
                }
                Ok((len, Next::Upgrade(upgrade))) => {
                    buf.advance(len);
                    return Connection::Upgrade(Rewind::new(buf.freeze(), io), upgrade);
                }
                Err(Closed::Quietly) => return Connection::Closed,
                Err(Closed::HeadTimeout) => {
                    // As actix-http: 408, then close.
                    write_head(&mut head, &Reply::new(StatusCode::REQUEST_TIMEOUT), true);
                    let _ = self.write_all(&mut io, &mut clock, &head, &[]).await;
                    let _ = io.shutdown().await;
                    return Connection::Closed;
                }
            };
            first = false;
            buf.advance(len);
            let close = close || self.keep_alive.is_none();
            write_head(&mut head, &reply, close);
            let body = if head_only { &[][..] } else { &reply.body[..] };
            let mut written = self.write_all(&mut io, &mut clock, &head, body).await.is_ok();
            if !head_only && written && reply.inflate.is_some() {
                written = self.write_inflated(&mut io, &mut clock, reply).await.is_ok();
            }
            if !written || close {
                let _ = io.shutdown().await;
                return Connection::Closed;
            }
        }
    }

    /// Writes a gzip-only body inflated, a chunk at a time. An error in
    /// the middle leaves the body short of its `Content-Length`, and the
    /// connection is closed: the client sees it was cut.
    async fn write_inflated(
        &self,
        io: &mut TcpStream,
        clock: &mut Clock,
        reply: Reply,
    ) -> io::Result<()> {
        let Some(plain) = reply.inflate else { return Ok(()) };
        let mut inflating = plain.inflating()?;
        while let Some(chunk) = inflating.next_chunk() {
            let chunk = chunk.inspect_err(|e| {
                tracing::error!(error = %e, "uncompressed answer cut: the gzip rendition does not inflate");
            })?;
            self.write_all(io, clock, &[], &chunk).await?;
            // A fast reader would keep the worker inflating hundreds of
            // megabytes while its other connections wait.
            tokio::task::consume_budget().await;
        }
        Ok(())
    }

    /// The next complete request head (its length, and what to do with
    /// it), reading as needed. A head that is not one to answer here
    /// (malformed, too long, unusual) is [`Next::HandOff`]: actix-http
    /// will say what it says.
    async fn read_request(
        &self,
        io: &mut TcpStream,
        buf: &mut BytesMut,
        clock: &mut Clock,
        mut stop: Pin<&mut (dyn Future<Output = ()> + '_)>,
        slot: &Slot,
        first: bool,
    ) -> Result<(usize, Next), Closed> {
        // Due a request timeout after the connection for the first
        // request, after its first byte for later ones.
        let mut deadline = first.then_some(clock.armed);
        loop {
            if !buf.is_empty() {
                let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut parsed = httparse::Request::new(&mut headers);
                match parsed.parse(buf) {
                    Ok(httparse::Status::Complete(len)) => {
                        return Ok((len, self.next(&parsed, io).await));
                    }
                    Ok(httparse::Status::Partial) if buf.len() < HEAD_LIMIT => {}
                    Ok(httparse::Status::Partial) | Err(_) => return Ok((0, Next::HandOff)),
                }
                deadline.get_or_insert_with(|| Instant::now() + self.request_timeout);
            }
            if buf.capacity() - buf.len() < 1024 {
                buf.reserve(4096);
            }
            // Bytes already there are read without waiting.
            match io.try_read_buf(buf) {
                Ok(0) => return Err(Closed::Quietly),
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return Err(Closed::Quietly),
            }
            let ready = match deadline {
                Some(at) => clock.wait(at, io.readable(), None).await.ok_or(Closed::HeadTimeout)?,
                None => {
                    // Idle between requests; a stop or an eviction closes
                    // the connection (a request that arrives meanwhile is
                    // served first: `wait` prefers it).
                    let Some(keep_alive) = self.keep_alive else { return Err(Closed::Quietly) };
                    let at = Instant::now() + keep_alive;
                    slot.idle();
                    let mut leave = std::pin::pin!(async {
                        tokio::select! {
                            () = stop.as_mut() => {}
                            () = slot.evicted() => {}
                        }
                    });
                    let woke = clock.wait(at, io.readable(), Some(leave.as_mut())).await;
                    slot.busy();
                    woke.ok_or(Closed::Quietly)?
                }
            };
            ready.map_err(|_| Closed::Quietly)?;
        }
    }

    /// Decides on a complete head; with delegated authentication, a
    /// token not yet known is reviewed here, on this worker, while the
    /// connection waits (the head stays in the buffer).
    async fn next(&self, parsed: &httparse::Request<'_, '_>, io: &TcpStream) -> Next {
        // What actix-http would refuse is not answered here, nor passed on:
        // it is handed over, and refused there.
        let parsed = match head::check(parsed) {
            Ok(checked) => checked,
            Err(rule) => {
                tracing::debug!(%rule, "malformed request head; handed to actix-http to refuse");
                return Next::HandOff;
            }
        };
        if self.door.is_some() {
            let peer = || io.peer_addr().ok().map(|a| a.ip());
            if let Some(upgrade) = UpgradeRequest::of_raw(&parsed, peer) {
                return Next::Upgrade(Box::new(upgrade));
            }
        }
        let Some(plain) = Plain::of(&parsed) else { return Next::HandOff };
        if self.door.is_some()
            && router::decode_path(plain.path).as_deref().and_then(router::route).is_none()
        {
            // The front door's: actix-http passes it on.
            return Next::HandOff;
        }
        let req = Request {
            method: plain.method,
            path: plain.path,
            query: plain.query,
            accept: plain.accept,
            if_none_match: plain.if_none_match,
            gzip: plain.accept_encoding.is_some_and(|v| accepts_gzip(&v)),
            authorization: plain.authorization,
        };
        let access = access::access(&self.state, &req).await;
        let reply = router::answer(&self.state, &req, access).await;
        Next::Answer { reply, head_only: plain.method == Method::Head, close: plain.close }
    }

    /// Writes `head` and `body` with as few vectored writes as the socket
    /// takes; gives up when it makes no progress for the request timeout.
    async fn write_all(
        &self,
        io: &mut TcpStream,
        clock: &mut Clock,
        head: &[u8],
        body: &[u8],
    ) -> io::Result<()> {
        let (mut head, mut body) = (head, body);
        while !head.is_empty() || !body.is_empty() {
            let slices = [IoSlice::new(head), IoSlice::new(body)];
            let written = match io.try_write_vectored(&slices) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let at = Instant::now() + self.request_timeout;
                    clock
                        .wait(at, io.writable(), None)
                        .await
                        .ok_or_else(|| io::Error::from(io::ErrorKind::TimedOut))??;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let from_head = written.min(head.len());
            head = &head[from_head..];
            body = &body[written - from_head..];
        }
        Ok(())
    }
}

/// An ordinary request, as this transport answers it.
struct Plain<'a> {
    method: Method,
    path: &'a str,
    query: &'a str,
    close: bool,
    accept: Option<Cow<'a, str>>,
    if_none_match: Option<Cow<'a, str>>,
    accept_encoding: Option<Cow<'a, str>>,
    /// The first `Authorization` line.
    authorization: Option<&'a [u8]>,
}

impl<'a> Plain<'a> {
    /// `None` for anything out of the ordinary (see the module's doc).
    fn of(req: &Checked<'_, '_, 'a>) -> Option<Self> {
        let req = req.raw();
        if req.version != Some(1) {
            return None;
        }
        let method = Method::from_token(req.method?);
        if !method.reads() {
            return None;
        }
        let target = req.path?;
        if !target.starts_with('/') || !target.bytes().all(plain_target_byte) {
            return None;
        }
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let mut close = false;
        let mut host = false;
        let (mut accept, mut if_none_match, mut accept_encoding) = (None, None, None);
        let mut authorization = None;
        for h in req.headers.iter() {
            let name = h.name;
            if name.eq_ignore_ascii_case("accept") {
                join_value(&mut accept, h.value);
            } else if name.eq_ignore_ascii_case("if-none-match") {
                join_value(&mut if_none_match, h.value);
            } else if name.eq_ignore_ascii_case("accept-encoding") {
                join_value(&mut accept_encoding, h.value);
            } else if name.eq_ignore_ascii_case("content-length") {
                if h.value.iter().any(|b| *b != b'0') || h.value.is_empty() {
                    return None;
                }
            } else if name.eq_ignore_ascii_case("transfer-encoding")
                || name.eq_ignore_ascii_case("expect")
                || name.eq_ignore_ascii_case("upgrade")
            {
                return None;
            } else if name.eq_ignore_ascii_case("connection") {
                for option in h.value.split(|b| *b == b',') {
                    let option = option.trim_ascii();
                    if option.eq_ignore_ascii_case(b"close") {
                        close = true;
                    } else if option.eq_ignore_ascii_case(b"upgrade") {
                        return None;
                    }
                }
            } else if name.eq_ignore_ascii_case("host") {
                host = true;
            } else if name.eq_ignore_ascii_case("authorization") && authorization.is_none() {
                authorization = Some(h.value);
            }
        }
        // HTTP/1.1 requires Host (RFC 9112 3.2); what to answer without one
        // is actix-http's to say.
        host.then_some(Self {
            method,
            path,
            query,
            close,
            accept,
            if_none_match,
            accept_encoding,
            authorization,
        })
    }
}

/// A stream that first replays bytes already read from it: how a
/// connection is handed to actix-http in the middle of a request head.
#[derive(Debug)]
pub struct Rewind<S> {
    read: Bytes,
    inner: S,
}

impl<S> Rewind<S> {
    /// `inner`, whose next bytes are `read`.
    pub fn new(read: Bytes, inner: S) -> Self {
        Self { read, inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewind<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.read.is_empty() {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        let n = this.read.len().min(buf.remaining());
        buf.put_slice(&this.read.split_to(n));
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewind<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    fn plain(raw: &str) -> Option<(Method, String, String, bool)> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        assert!(matches!(req.parse(raw.as_bytes()), Ok(httparse::Status::Complete(_))), "{raw}");
        let checked = head::check(&req).ok()?;
        Plain::of(&checked).map(|p| (p.method, p.path.to_owned(), p.query.to_owned(), p.close))
    }

    #[test]
    fn ordinary_gets_and_heads_are_taken() {
        let p = plain("GET /openapi/v3/api/v1?hash=AB HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(p, Some((Method::Get, "/openapi/v3/api/v1".into(), "hash=AB".into(), false)));
        let p = plain("HEAD /apis HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Close\r\n\r\n");
        assert_eq!(p, Some((Method::Head, "/apis".into(), String::new(), true)));
        let p = plain("GET /version HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
        assert!(p.is_some());
    }

    #[test]
    fn anything_unusual_goes_to_actix() {
        for raw in [
            "GET /version HTTP/1.0\r\nHost: x\r\n\r\n",
            "POST /version HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n",
            "DELETE /version HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /version HTTP/1.1\r\n\r\n",
            "GET /version HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n",
            "GET /version HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n",
            "GET /version HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
            "GET /version HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
            "GET /version HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
            "GET http://other/version HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET * HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /a\"b HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /a{b} HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /a#b HTTP/1.1\r\nHost: x\r\n\r\n",
        ] {
            assert_eq!(plain(raw), None, "{raw}");
        }
    }

    /// A head actix-http refuses is never answered here (issue 30): it is
    /// handed over, and refused there.
    #[test]
    fn heads_actix_refuses_are_handed_over() {
        for raw in [
            "GET /version HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
            "GET /version HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
        ] {
            assert_eq!(plain(raw), None, "{raw}");
        }
    }

    #[test]
    fn heads_carry_length_date_and_no_length_on_304() {
        let reply = Reply::new(StatusCode::OK)
            .header(
                actix_web::http::header::ETAG,
                actix_web::http::header::HeaderValue::from_static("\"x\""),
            )
            .body(&b"hello"[..]);
        let mut out = Vec::new();
        write_head(&mut out, &reply, false);
        let text = String::from_utf8(out.clone()).expect("ASCII");
        assert!(
            text.starts_with("HTTP/1.1 200 OK\r\ncontent-length: 5\r\netag: \"x\"\r\ndate: "),
            "{text}"
        );
        assert!(text.ends_with(" GMT\r\n\r\n"), "{text}");
        let not_modified = Reply::new(StatusCode::NOT_MODIFIED);
        write_head(&mut out, &not_modified, true);
        let text = String::from_utf8(out).expect("ASCII");
        assert!(
            text.starts_with("HTTP/1.1 304 Not Modified\r\nconnection: close\r\ndate: "),
            "{text}"
        );
    }

    #[test]
    fn lengths_print_in_decimal() {
        for n in [0, 7, 10, 99, 1_216_176] {
            let reply = Reply::new(StatusCode::OK).body(vec![b'x'; n]);
            let mut out = Vec::new();
            write_head(&mut out, &reply, false);
            let head = String::from_utf8(out).expect("ASCII");
            assert!(head.contains(&format!("\r\ncontent-length: {n}\r\n")), "{head}");
        }
    }

    proptest::proptest! {
        /// Whatever a client sends, reading it as a head never panics, and
        /// what is taken is an ordinary GET or HEAD with a plain target.
        #[test]
        fn any_bytes_are_taken_or_handed_over(
            method in proptest::sample::select(vec!["GET", "HEAD", "POST", "get", "GETX"]),
            target in "[ -~]{0,40}",
            headers in proptest::collection::vec(("[!-9;-~]{1,16}", "[ -~]{0,24}"), 0..6),
            version in proptest::sample::select(vec!["HTTP/1.1", "HTTP/1.0", "HTTP/2.0"]),
        ) {
            let mut raw = format!("{method} {target} {version}\r\nHost: x\r\n");
            for (name, value) in &headers {
                raw.push_str(&format!("{name}: {value}\r\n"));
            }
            raw.push_str("\r\n");
            let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut req = httparse::Request::new(&mut slots);
            if let Ok(httparse::Status::Complete(_)) = req.parse(raw.as_bytes())
                && let Ok(checked) = head::check(&req)
                && let Some(p) = Plain::of(&checked)
            {
                proptest::prop_assert!(p.method.reads());
                proptest::prop_assert_eq!(version, "HTTP/1.1");
                proptest::prop_assert!(p.path.starts_with('/'));
                proptest::prop_assert!(target.bytes().all(plain_target_byte));
                if let Some(path) = router::decode_path(p.path) {
                    let _ = router::route(&path);
                }
            }
        }
    }

    #[actix_web::test]
    async fn rewind_replays_then_reads_on() {
        let (a, mut b) = tokio::io::duplex(64);
        let mut r = Rewind::new(Bytes::from_static(b"GET / "), a);
        b.write_all(b"HTTP/1.1").await.expect("write");
        drop(b);
        let mut all = String::new();
        r.read_to_string(&mut all).await.expect("read");
        assert_eq!(all, "GET / HTTP/1.1");
    }
}
