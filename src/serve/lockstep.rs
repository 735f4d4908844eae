//! actix-http's HTTP/1 connections get one request at a time: the next is
//! let through only once the current one is answered.
//!
//! Why: actix-http 3.20's HTTP/1 codec keeps per-request state — whether
//! the request is a HEAD, its HTTP version, whether it asked to close —
//! in one place per connection, set when a request head is *decoded* and
//! read when a response head is *encoded*. Its dispatcher decodes every
//! request already in its read buffer before answering the first. With
//! pipelined requests the answer to one is therefore framed by what a
//! later one asked:
//!
//! - a GET followed by a HEAD gets its `Content-Length` but no body, and
//!   the client reads the next answer as that body;
//! - a HEAD followed by a GET gets a body, read as the next answer;
//! - `Connection: close` followed by another request is kept open, and the
//!   other request is answered (RFC 9112 §9.6 says to close after the
//!   first and process nothing more).
//!
//! Every HTTPS connection and every plain one the direct writer hands over
//! is served by that codec. [`Lockstep`] sits between it and the stream:
//! it runs a second decoder of the same kind over the bytes to find where
//! each request ends (head and body, as actix-http will frame it, so the
//! two cannot disagree), gives actix-http the bytes of the current request
//! only, and holds back the next until the service has answered the
//! current one ([`Turns::answered`], reported by [`reporting`]). The
//! answer's head is encoded in the same poll in which the service's answer
//! is taken, before the next read, so it is framed by its own request.
//! After a request that asks to close, nothing more is let through: the
//! dispatcher closes the connection after answering it.
//!
//! The bookkeeping also says when the connection is idle between requests,
//! which [`Slots`](super::slots) needs to evict idle connections; an
//! evicted idle connection reads as ended, and actix-http closes it.
//!
//! HTTP/2 has no such problem (each stream carries its own request) and
//! passes through untouched.

use std::cell::{Cell, RefCell};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use actix_http::h1::{Codec, Message, MessageType};
use actix_http::{Request, ServiceConfig};
use actix_service::{Service, ServiceFactory, apply_fn_factory};
use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::codec::Decoder;

use super::h2::MaxStreams;
use super::slots::Slot;
use crate::http::connection::{ClientGone, LongExchange, Progress, TakesTurns, Written};

/// What one read from the stream may take (actix-http reads 32 KiB at a
/// time; requests here are a few hundred bytes).
const READ_BUFFER: usize = 8 * 1024;

/// Room below which the read buffer is grown first.
const READ_AT_LEAST: usize = 1024;

/// What one read takes while a long exchange is watched for the client's
/// end: the first bytes of a next request, if any, stop the watch.
const WATCH_READ: usize = 512;

/// How far actix-http has come on a connection, shared between its
/// [`Lockstep`] and the service (through the connection's data).
#[derive(Debug, Default)]
pub(crate) struct Turns {
    /// Requests the service has answered.
    answered: Cell<u64>,
    /// The connection's task, waiting for an answer to let the next request
    /// through.
    waker: RefCell<Option<Waker>>,
    /// The current answer streams a body of unknown length (the front
    /// door's): it counts as answered when its hold is released
    /// ([`AnswerTurns::hold`](crate::http::connection::AnswerTurns::hold)),
    /// not when the service hands it back.
    held: Cell<bool>,
}

impl TakesTurns for Turns {
    fn hold(&self) {
        self.held.set(true);
    }

    fn release(&self) {
        self.count();
    }
}

impl Turns {
    /// The service has answered a request on this connection (unless the
    /// answer is held: then when the hold is released).
    pub(crate) fn answered(&self) {
        if self.held.replace(false) {
            return;
        }
        self.count();
    }

    fn count(&self) {
        self.answered.set(self.answered.get() + 1);
        if let Some(waker) = self.waker.borrow_mut().take() {
            waker.wake();
        }
    }

    fn park(&self, cx: &Context<'_>) {
        let mut waker = self.waker.borrow_mut();
        match &*waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => *waker = Some(cx.waker().clone()),
        }
    }
}

/// What the lockstep decoders of one worker share.
///
/// A decoder needs a `ServiceConfig`, and each new one starts a task that
/// updates its clock every half second: one per worker, not one per
/// connection.
#[derive(Debug, Clone)]
pub(crate) struct Decoding(ServiceConfig);

impl Decoding {
    /// For the current worker thread (it starts a task on it).
    pub(crate) fn new() -> Self {
        Self(ServiceConfig::default())
    }
}

/// A connection's byte stream as actix-http reads it: one HTTP/1 request
/// at a time (see the module's documentation); it also holds the
/// connection's [`Slot`].
#[derive(Debug)]
pub struct Lockstep<S> {
    inner: S,
    /// `None` for HTTP/2: everything passes through.
    gate: Option<Gate>,
    /// HTTP/2 only: the server preface, given its stream limit.
    preface: Option<MaxStreams>,
    slot: Slot,
    /// Told when the client's stream ends (HTTP/1: see [`Gate`]).
    gone: ClientGone,
    /// HTTP/2 only: the bytes written, for the front door's answers.
    progress: Option<Progress>,
}

/// The HTTP/1 bookkeeping. Offsets count bytes from the start of the
/// stream as actix-http sees it.
#[derive(Debug)]
struct Gate {
    turns: Rc<Turns>,
    /// Told when the stream ends while a long exchange is answered.
    gone: ClientGone,
    /// Marked while the front door passes a request of this connection on.
    long: LongExchange,
    /// The bytes written to the stream.
    written: Written,
    /// Decodes a copy of the stream, as actix-http's own codec will.
    codec: Codec,
    /// Read from the stream, not yet given to actix-http.
    held: BytesMut,
    /// Read from the stream, not yet decoded by `codec`.
    scan: BytesMut,
    /// Bytes given to actix-http.
    given: u64,
    /// Bytes decoded by `codec`.
    decoded: u64,
    /// Where the current request ends, once decoded whole.
    end: Option<u64>,
    /// At a request boundary: the last request given is whole, nothing of
    /// the next one has been given.
    between: bool,
    /// Requests given whole.
    completed: u64,
    /// The last request decoded asked to close the connection.
    closing: bool,
    /// The stream could not be decoded: actix-http gets the rest as it
    /// comes and answers the error.
    passthrough: bool,
    /// The stream has ended.
    eof: bool,
    /// A write is waiting for the client to read.
    write_blocked: bool,
}

impl<S> Lockstep<S> {
    /// An HTTP/1 connection's `inner` for actix-http, holding `slot`.
    pub(crate) fn http1(inner: S, slot: Slot, decoding: &Decoding) -> Self {
        let gone = ClientGone::default();
        let gate = Gate {
            turns: Rc::default(),
            gone: gone.clone(),
            long: LongExchange::default(),
            written: Written::default(),
            codec: Codec::new(decoding.0.clone()),
            held: BytesMut::new(),
            scan: BytesMut::new(),
            given: 0,
            decoded: 0,
            end: None,
            between: true,
            completed: 0,
            closing: false,
            passthrough: false,
            eof: false,
            write_blocked: false,
        };
        Self { inner, gate: Some(gate), preface: None, slot, gone, progress: None }
    }

    /// An HTTP/2 connection's `inner`, passed through but for the server's
    /// SETTINGS, which advertise at most `max_streams` streams at once;
    /// holding `slot`.
    pub(crate) fn http2(inner: S, slot: Slot, max_streams: u32) -> Self {
        Self {
            inner,
            gate: None,
            preface: Some(MaxStreams::new(max_streams)),
            slot,
            gone: ClientGone::always_watched(),
            progress: Some(Progress::default()),
        }
    }

    /// The stream it wraps.
    pub(crate) fn get_ref(&self) -> &S {
        &self.inner
    }

    /// What the service reports its answers to (for the connection's
    /// data); `None` for HTTP/2.
    pub(crate) fn turns(&self) -> Option<Rc<Turns>> {
        self.gate.as_ref().map(|g| Rc::clone(&g.turns))
    }

    /// Watches for the client's end while `long` is marked (see
    /// [`ClientGone`]).
    pub(crate) fn watching(mut self, long: LongExchange) -> Self {
        if let Some(gate) = &mut self.gate {
            gate.long = long;
        }
        self
    }

    /// An HTTP/2 connection's writes, for the front door; `None` for
    /// HTTP/1 (see [`Written`]).
    pub(crate) fn progress(&self) -> Option<Progress> {
        self.progress.clone()
    }

    /// What tells the answering side that the client has gone.
    pub(crate) fn client_gone(&self) -> ClientGone {
        self.gone.clone()
    }

    /// The count of bytes written, for the connection's data; `None` for
    /// HTTP/2.
    pub(crate) fn written(&self) -> Option<Written> {
        self.gate.as_ref().map(|g| g.written.clone())
    }

    /// Tells the slot whether the connection is idle; when it is and was
    /// evicted, has the task polled again, to end the stream.
    fn refresh(&self, cx: &Context<'_>) {
        let Some(gate) = &self.gate else { return };
        if gate.is_idle() {
            self.slot.idle();
            if self.slot.is_evicted() {
                cx.waker().wake_by_ref();
            }
        } else {
            self.slot.busy();
        }
    }
}

/// A connection dropped, however it ended, has no client left to answer.
impl<S> Drop for Lockstep<S> {
    fn drop(&mut self) {
        self.gone.close();
    }
}

impl Gate {
    /// Between requests: one was answered and written whole (answers are
    /// whole `Bytes`, so a flush that completes after the answer ends it),
    /// nothing of a next one has arrived, and the connection stays open.
    fn is_idle(&self) -> bool {
        self.completed > 0
            && self.between
            && !self.closing
            && !self.passthrough
            && self.turns.answered.get() >= self.completed
            && self.held.is_empty()
            && !self.write_blocked
    }

    /// Whether bytes of the next request may be given.
    fn allowed(&self) -> bool {
        self.passthrough
            || !self.between
            || (!self.closing && self.turns.answered.get() >= self.completed)
    }

    /// Bytes at the front of `held` that belong to the current request.
    fn releasable(&self) -> usize {
        match self.end {
            Some(end) if !self.passthrough => {
                usize::try_from(end - self.given).unwrap_or(usize::MAX).min(self.held.len())
            }
            _ => self.held.len(),
        }
    }

    /// Decodes the held bytes of the current request until its end.
    fn decode(&mut self) {
        while !self.passthrough && self.end.is_none() {
            let before = self.scan.len();
            let decoded = self.codec.decode(&mut self.scan);
            self.decoded += (before - self.scan.len()) as u64;
            match decoded {
                Ok(Some(Message::Item(_))) => {
                    self.closing = !self.codec.keep_alive() && !self.codec.upgrade();
                    if self.codec.message_type() == MessageType::None {
                        self.end = Some(self.decoded);
                    }
                }
                Ok(Some(Message::Chunk(Some(_)))) => {}
                Ok(Some(Message::Chunk(None))) => self.end = Some(self.decoded),
                Ok(None) => return,
                // actix-http's codec fails at the same byte and answers.
                Err(_) => self.passthrough = true,
            }
        }
    }

    /// Gives `buf` what it takes of the first `n` held bytes.
    fn give(&mut self, n: usize, buf: &mut ReadBuf<'_>) {
        // A new exchange: its front door asks anew to be watched for.
        self.gone.set_watched(false);
        let n = n.min(buf.remaining());
        buf.put_slice(&self.held[..n]);
        self.held.advance(n);
        self.given += n as u64;
        self.between = false;
        if self.end == Some(self.given) {
            self.end = None;
            self.between = true;
            self.completed += 1;
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Lockstep<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some(gate) = &mut this.gate else {
            // HTTP/2: read on by actix-http all along; its end reaches the
            // streams' own tasks only through `gone`.
            let before = buf.filled().len();
            let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
            match &polled {
                Poll::Ready(Ok(())) if buf.filled().len() == before && buf.remaining() > 0 => {
                    this.gone.close();
                }
                Poll::Ready(Err(_)) => this.gone.close(),
                _ => {}
            }
            return polled;
        };
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let polled = loop {
            if !gate.allowed() {
                // The front door passes a request on: its client may close
                // meanwhile. Read on until a next request's first bytes are
                // held (as Go's server reads in the background, and stops
                // at data), so the end of the stream is seen while the
                // exchange runs. Other answers are short and read nothing.
                if gate.long.is_marked() {
                    // With a next request held already, nothing more is
                    // read (its bytes wait their turn): not watched, as
                    // Go's server stops its background read at data.
                    if gate.held.is_empty() && !gate.eof {
                        // Into a small buffer on the stack: a watch keeps
                        // no read buffer of its own while its answer
                        // streams (most clients send nothing meanwhile).
                        if gate.scan.is_empty() {
                            gate.held = BytesMut::new();
                            gate.scan = BytesMut::new();
                        }
                        let mut small = [0u8; WATCH_READ];
                        let mut watch = ReadBuf::new(&mut small);
                        match Pin::new(&mut this.inner).poll_read(cx, &mut watch) {
                            Poll::Ready(Ok(())) if watch.filled().is_empty() => {
                                gate.eof = true;
                                gate.gone.close();
                            }
                            Poll::Ready(Ok(())) => {
                                gate.held.extend_from_slice(watch.filled());
                                gate.scan.extend_from_slice(watch.filled());
                            }
                            Poll::Ready(Err(e)) => {
                                gate.gone.close();
                                break Poll::Ready(Err(e));
                            }
                            Poll::Pending => {}
                        }
                    }
                    gate.gone.set_watched(true);
                } else {
                    gate.gone.park_reader(cx);
                }
                gate.turns.park(cx);
                break Poll::Pending;
            }
            gate.decode();
            let n = gate.releasable();
            if n > 0 {
                gate.give(n, buf);
                break Poll::Ready(Ok(()));
            }
            if gate.eof {
                break Poll::Ready(Ok(()));
            }
            if gate.held.capacity() - gate.held.len() < READ_AT_LEAST {
                gate.held.reserve(READ_BUFFER);
            }
            match tokio_util::io::poll_read_buf(Pin::new(&mut this.inner), cx, &mut gate.held) {
                Poll::Ready(Ok(0)) => gate.eof = true,
                Poll::Ready(Ok(n)) => {
                    let start = gate.held.len() - n;
                    gate.scan.extend_from_slice(&gate.held[start..]);
                }
                Poll::Ready(Err(e)) => break Poll::Ready(Err(e)),
                Poll::Pending if this.slot.is_evicted() && gate.is_idle() => {
                    // Idle and evicted: the stream ends here for actix-http,
                    // which closes the connection.
                    gate.eof = true;
                }
                Poll::Pending => {
                    // Waiting for the client with nothing held: keep no
                    // buffer (most connections wait most of the time).
                    if gate.held.is_empty() && gate.scan.is_empty() {
                        gate.held = BytesMut::new();
                        gate.scan = BytesMut::new();
                    }
                    this.slot.wake_on_eviction(cx);
                    break Poll::Pending;
                }
            }
        };
        this.refresh(cx);
        polled
    }
}

impl<S: AsyncWrite + Unpin> Lockstep<S> {
    fn wrote(&mut self, polled: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        if let Some(gate) = &mut self.gate {
            gate.write_blocked = polled.is_pending();
            if let Poll::Ready(Ok(n)) = &polled {
                gate.written.add(*n);
            }
            self.slot.busy();
        }
        if let Some(progress) = &self.progress {
            match &polled {
                Poll::Ready(Ok(n)) => progress.wrote(Some(*n)),
                Poll::Pending => progress.wrote(None),
                Poll::Ready(Err(_)) => {}
            }
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Lockstep<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = match &mut this.preface {
            Some(preface) => preface.poll_write(&mut this.inner, cx, buf),
            None => Pin::new(&mut this.inner).poll_write(cx, buf),
        };
        this.wrote(polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = match &mut this.preface {
            Some(preface) => {
                let buf = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &**b);
                preface.poll_write(&mut this.inner, cx, buf)
            }
            None => Pin::new(&mut this.inner).poll_write_vectored(cx, bufs),
        };
        this.wrote(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(preface) = &mut this.preface {
            match preface.poll_pending(&mut this.inner, cx) {
                Poll::Ready(Ok(())) => {}
                held => return held,
            }
        }
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        if let Some(gate) = &mut this.gate {
            gate.write_blocked = polled.is_pending();
        }
        if let Some(progress) = &this.progress {
            match &polled {
                Poll::Ready(Ok(())) => progress.wrote(Some(0)),
                Poll::Pending => progress.wrote(None),
                Poll::Ready(Err(_)) => {}
            }
        }
        this.refresh(cx);
        polled
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// actix-http's service `app`, reporting each answer to the connection's
/// [`Turns`] (found in the connection's data, see
/// [`Lockstep::turns`]) as the answer is handed back — before actix-http
/// encodes it and reads on.
pub(crate) fn reporting<SF>(
    app: SF,
) -> impl ServiceFactory<
    Request,
    Config = SF::Config,
    Response = SF::Response,
    Error = SF::Error,
    InitError = SF::InitError,
>
where
    SF: ServiceFactory<Request>,
    <SF::Service as Service<Request>>::Future: 'static,
{
    apply_fn_factory(app, |req: Request, service: &SF::Service| {
        let turns = req.conn_data::<Rc<Turns>>().cloned();
        let answer = service.call(req);
        async move {
            let answer = answer.await;
            if let Some(turns) = turns {
                turns.answered();
            }
            answer
        }
    })
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    use super::*;
    use crate::serve::slots::Slots;

    /// A lockstep stream over one end of a pipe; the other end is the
    /// client.
    async fn lockstep() -> (Lockstep<DuplexStream>, DuplexStream, Rc<Slots>) {
        let (server, client) = tokio::io::duplex(64 * 1024);
        let slots = Slots::new(1);
        let slot = slots.enter().await;
        (Lockstep::http1(server, slot, &Decoding::new()), client, slots)
    }

    /// What actix-http could read now, without waiting.
    async fn readable_now(io: &mut Lockstep<DuplexStream>) -> String {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while let Some(Ok(n)) = futures_util::FutureExt::now_or_never(io.read(&mut buf)) {
            if n == 0 {
                out.extend_from_slice(b"<EOF>");
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        String::from_utf8(out).expect("ASCII")
    }

    const GET: &str = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
    const HEAD: &str = "HEAD /b HTTP/1.1\r\nHost: x\r\n\r\n";
    const CHUNKED: &str =
        "GET /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    const CLOSE: &str = "GET /d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

    #[actix_web::test]
    async fn pipelined_requests_are_given_one_per_answer() {
        let (mut io, mut client, _slots) = lockstep().await;
        let turns = io.turns().expect("HTTP/1");
        client.write_all(format!("{CHUNKED}{GET}{HEAD}").as_bytes()).await.expect("write");
        assert_eq!(readable_now(&mut io).await, CHUNKED, "the first request, body and all");
        turns.answered();
        assert_eq!(readable_now(&mut io).await, GET);
        assert_eq!(readable_now(&mut io).await, "", "nothing before the answer");
        turns.answered();
        assert_eq!(readable_now(&mut io).await, HEAD);
        turns.answered();
        drop(client);
        assert_eq!(readable_now(&mut io).await, "<EOF>");
    }

    /// The front door's streamed answer, held through `AnswerTurns` as it
    /// finds it in the connection's data: handing it back is not its end.
    #[actix_web::test]
    async fn a_held_answer_lets_the_next_request_through_only_when_released() {
        let (mut io, mut client, _slots) = lockstep().await;
        let turns = io.turns().expect("HTTP/1");
        let held = crate::http::connection::AnswerTurns::new(turns.clone());
        client.write_all(format!("{GET}{HEAD}").as_bytes()).await.expect("write");
        assert_eq!(readable_now(&mut io).await, GET);
        let hold = held.hold();
        turns.answered();
        assert_eq!(readable_now(&mut io).await, "", "the answer still streams");
        drop(hold);
        assert_eq!(readable_now(&mut io).await, HEAD);
    }

    /// While the front door streams an answer, the watch for the client's
    /// end keeps no read buffer (a connection whose client does not read
    /// holds as little as it can); a next request that comes meanwhile,
    /// longer than one watch read, waits its turn and is then given whole.
    #[actix_web::test]
    async fn a_watched_exchange_keeps_no_read_buffer_and_the_next_request_waits() {
        let (io, mut client, _slots) = lockstep().await;
        let long = LongExchange::default();
        let mut io = io.watching(long.clone());
        let turns = io.turns().expect("HTTP/1");
        client.write_all(GET.as_bytes()).await.expect("write");
        assert_eq!(readable_now(&mut io).await, GET);
        let mark = long.mark();
        assert_eq!(readable_now(&mut io).await, "", "the answer streams");
        let gate = io.gate.as_ref().expect("HTTP/1");
        assert_eq!(gate.held.capacity() + gate.scan.capacity(), 0, "a read buffer is kept");
        let next = format!("GET /e HTTP/1.1\r\nHost: x\r\nX-Pad: {}\r\n\r\n", "p".repeat(600));
        client.write_all(next.as_bytes()).await.expect("write");
        assert_eq!(readable_now(&mut io).await, "", "the next request waits its turn");
        turns.answered();
        drop(mark);
        assert_eq!(readable_now(&mut io).await, next);
    }

    #[actix_web::test]
    async fn a_request_split_over_reads_is_given_as_it_comes() {
        let (mut io, mut client, _slots) = lockstep().await;
        let turns = io.turns().expect("HTTP/1");
        let (first, rest) = CHUNKED.split_at(40);
        client.write_all(first.as_bytes()).await.expect("write");
        assert_eq!(readable_now(&mut io).await, first);
        // An answer before the body has all come does not let the next
        // request through early.
        turns.answered();
        client.write_all(format!("{rest}{GET}").as_bytes()).await.expect("write");
        assert_eq!(readable_now(&mut io).await, format!("{rest}{GET}"));
    }

    #[actix_web::test]
    async fn nothing_is_given_after_a_request_that_closes() {
        let (mut io, mut client, _slots) = lockstep().await;
        let turns = io.turns().expect("HTTP/1");
        client.write_all(format!("{CLOSE}{GET}").as_bytes()).await.expect("write");
        assert_eq!(readable_now(&mut io).await, CLOSE);
        turns.answered();
        assert_eq!(readable_now(&mut io).await, "");
    }

    #[actix_web::test]
    async fn a_stream_that_does_not_parse_is_passed_on_for_actix_to_answer() {
        let (mut io, mut client, _slots) = lockstep().await;
        client
            .write_all(format!("GET / HTTP/1.1\r\nBad Header\r\n\r\n{GET}").as_bytes())
            .await
            .expect("write");
        let all = readable_now(&mut io).await;
        assert!(all.ends_with(GET), "{all}");
    }

    #[actix_web::test]
    async fn idle_once_the_answer_is_flushed_and_an_evicted_idle_stream_ends() {
        let (mut io, mut client, slots) = lockstep().await;
        let turns = io.turns().expect("HTTP/1");
        client.write_all(GET.as_bytes()).await.expect("write");
        assert_eq!(readable_now(&mut io).await, GET);
        turns.answered();
        io.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await.expect("answer");
        io.flush().await.expect("flush");
        // Idle now: a connection waiting for the only slot evicts it.
        let mut waiting = std::pin::pin!(slots.enter());
        assert!(futures_util::FutureExt::now_or_never(waiting.as_mut()).is_none());
        assert_eq!(readable_now(&mut io).await, "<EOF>");
    }

    #[actix_web::test]
    async fn an_answer_the_client_does_not_read_keeps_the_connection_busy() {
        let (server, mut client) = tokio::io::duplex(256);
        let slots = Slots::new(1);
        let slot = slots.enter().await;
        let mut io = Lockstep::http1(server, slot, &Decoding::new());
        let turns = io.turns().expect("HTTP/1");
        client.write_all(GET.as_bytes()).await.expect("write");
        assert_eq!(readable_now(&mut io).await, GET);
        turns.answered();
        let answer = [b'x'; 4096];
        let write = futures_util::FutureExt::now_or_never(io.write_all(&answer));
        assert!(write.is_none(), "the pipe is full");
        // Polled to read meanwhile (a timer, a signal): still busy.
        assert_eq!(readable_now(&mut io).await, "");
        let mut waiting = std::pin::pin!(slots.enter());
        assert!(futures_util::FutureExt::now_or_never(waiting.as_mut()).is_none());
        assert_eq!(readable_now(&mut io).await, "", "not evicted in the middle of an answer");
    }

    #[actix_web::test]
    async fn http2_passes_through() {
        let (server, mut client) = tokio::io::duplex(1024);
        let slot = Slots::new(1).enter().await;
        let mut io = Lockstep::http2(server, slot, 250);
        assert!(io.turns().is_none());
        client.write_all(format!("{GET}{HEAD}").as_bytes()).await.expect("write");
        assert_eq!(readable_now(&mut io).await, format!("{GET}{HEAD}"));
    }
}
