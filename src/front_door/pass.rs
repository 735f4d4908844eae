//! Passing an ordinary request on (anything but an upgrade): head and body
//! streamed to the owner, its answer streamed back.
//!
//! Connections to an owner are kept alive and reused. An owner may close
//! one while a request is already on its way over it (its idle timeout, a
//! restart); the request then fails before any answer. A body-less
//! idempotent request ([`replayable`]) is sent once more then, on a new
//! connection, as Go's `net/http` `Transport` does; any other is answered
//! 503 (the owner may have acted on it).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use actix_http::error::ParseError;
use actix_web::body::{BodyStream, SizedStream};
use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::http::{Method, StatusCode, Version};
use actix_web::{HttpMessage as _, HttpRequest, HttpResponse, web};
use awc::error::{ConnectError, SendRequestError};
use bytes::Bytes;
use futures_util::{Stream, TryStreamExt as _};
use tokio::time::Sleep;

use super::class::{RequestClass, classify};
use super::headers::{self, X_FORWARDED_FOR};
use super::{Clients, Permit, RESPONSE_HEAD_TIMEOUT, Refused, owner, stream};
use crate::discovery::owners::group_version_of;
use crate::http::connection::{
    AnswerHold, AnswerTurns, ClientGone, GoneWatch, LongExchange, LongExchangeMark, Progress,
    StreamAhead, StreamPlace, StreamPlaces, Written,
};
use crate::http::{AppState, router, status};
use crate::outbound::body::content_length;

/// The answer to `req`, a request no metadata route serves: the owner's
/// answer, or a `Status` saying why there is none.
pub(crate) async fn pass(
    req: HttpRequest,
    payload: web::Payload,
    state: &AppState,
    clients: &Clients,
) -> HttpResponse {
    let started = Instant::now();
    let decoded = router::decode_path(req.path()).unwrap_or_default();
    let class = classify(req.method(), &decoded, req.query_string(), false);
    let metrics = &state.metrics;
    let owner =
        group_version_of(&decoded).and_then(|k| state.store.load().owners.owner(k).cloned());
    let Some(owner) = owner.as_ref().and_then(|o| clients.clients.get(o)) else {
        metrics.front_door("", class.verb, 404, None);
        return status::not_owned().into_actix();
    };
    let target = &owner.target;
    // Before a place in flight is taken: an HTTP/2 client that ignored
    // the SETTINGS' stream limit takes no place from another client.
    let stream = match req.conn_data::<StreamPlaces>() {
        Some(places) if class.long_running => match places.take() {
            Some(place) => Some(place),
            None => {
                let refused = Refused::StreamsPerConnection;
                metrics.front_door_refused(refused.label());
                metrics.front_door(&target.name, class.verb, 429, None);
                tracing::debug!(downstream = %target.name, bound = refused.label(),
                    "front door: too many requests in flight");
                return refused.reply().into_actix();
            }
        },
        _ => None,
    };
    let permit = match clients.door.admit(class.long_running, req.peer_addr().map(|a| a.ip())) {
        Ok(permit) => permit,
        Err(refused) => {
            metrics.front_door(&target.name, class.verb, 429, None);
            tracing::debug!(downstream = %target.name, bound = refused.label(),
                "front door: too many requests in flight");
            return refused.reply().into_actix();
        }
    };
    let long = req.conn_data::<LongExchange>().map(LongExchange::mark);
    let target_path = req.uri().path_and_query().map_or(req.path(), |pq| pq.as_str());
    let body = request_body(&req);
    // A body-less long-running HTTP/2 request keeps its request stream,
    // which tells when the client resets it ([`ResetWatch`]); a short
    // answer notices that at its next write. A body goes to the owner.
    let (upload, reset) = match body {
        RequestBody::None => {
            let h2_long = class.long_running && req.version() == Version::HTTP_2;
            (None, h2_long.then(|| ResetWatch::new(payload)))
        }
        _ => (Some(payload), None),
    };
    // A client that closes while the owner has not answered yet ends the
    // exchange (Go's server cancels the request's context then).
    let gone = req.conn_data::<ClientGone>().map(ClientGone::watch);
    let keep = |gone| Relaying {
        _permit: permit,
        _stream: stream,
        _long: long,
        gone,
        reset,
        idle: clients.door.idle,
        class,
    };
    let log = |code: u16| {
        metrics.front_door(&target.name, class.verb, code, Some(started.elapsed()));
        tracing::debug!(downstream = %target.name, verb = class.verb, code,
            path = %req.path(), took_ms = started.elapsed().as_millis(), "front door: passed on");
    };
    // The owner gave no answer to pass back: `reply` instead, logged and
    // counted with its `code`.
    let failed = |reply: crate::http::reply::Reply, code: u16, error: &dyn std::fmt::Display| {
        tracing::warn!(downstream = %target.name, verb = class.verb, code, error = %error,
            "front door: the owner of a request did not answer");
        metrics.front_door(&target.name, class.verb, code, None);
        reply.into_actix()
    };
    if class.long_running && body == RequestBody::None {
        // Read here, into a few KiB, for as long as it lasts.
        let head = owner::request_head(
            req.method(),
            target_path,
            req.headers(),
            req.peer_addr().map(|a| a.ip()),
            target,
            &[(b"connection", b"close")],
        );
        let answer = match answered(stream::exchange(target, req.method(), &head), &gone).await {
            Waited::Answer(answer) => answer,
            Waited::Failed(e) => {
                let error = crate::error_chain(&e);
                return if e.unreachable() {
                    failed(status::owner_unreachable(), 503, &error)
                } else {
                    failed(status::owner_failed(), 502, &error)
                };
            }
            waited => return waited.unanswered(target, class, metrics),
        };
        log(answer.code.as_u16());
        return respond(&req, answer.code, &answer.headers, answer.body, keep(gone));
    }
    let url = format!("{}{target_path}", target.base);
    let xff = headers::forwarded_for(req.headers(), req.peer_addr().map(|a| a.ip()));
    let build = |client: &awc::Client| {
        let mut out = client.request(req.method().clone(), url.as_str());
        for (name, value) in headers::to_downstream(req.headers()) {
            out.headers_mut().append(name.clone(), value.clone());
        }
        if let Some(xff) = &xff {
            out.headers_mut().insert(header::HeaderName::from_static(X_FORWARDED_FOR), xff.clone());
        }
        out
    };
    let replay = replayable(req.method(), req.headers(), &body);
    let sent = async {
        let first = match (body, upload) {
            (RequestBody::Sized(n), Some(upload)) => {
                build(&owner.pooled).send_body(SizedStream::new(n, upload)).await
            }
            (RequestBody::Streamed, Some(upload)) => build(&owner.pooled).send_stream(upload).await,
            _ => build(&owner.pooled).send().await,
        };
        match first {
            // A kept-alive connection the owner closed meanwhile: once
            // more, on a new connection, as Go's `Transport` does.
            Err(e) if replay && closed_before_answer(&e) => {
                tracing::debug!(downstream = %target.name, verb = class.verb, error = %e,
                    "front door: a reused connection closed before an answer; retried on a new one");
                build(&owner.fresh).force_close().send().await
            }
            sent => sent,
        }
    };
    let mut answer = match answered(sent, &gone).await {
        Waited::Answer(answer) => answer,
        Waited::Failed(e) => {
            return match &e {
                SendRequestError::Connect(_) => failed(status::owner_unreachable(), 503, &e),
                SendRequestError::Timeout => failed(status::owner_timeout(), 504, &e),
                _ => failed(status::owner_failed(), 502, &e),
            };
        }
        waited => return waited.unanswered(target, class, metrics),
    };
    let code = answer.status();
    if let Err(e) = stream::framed(req.method(), code.as_u16(), answer.headers()) {
        return failed(status::owner_failed(), 502, &e);
    }
    log(code.as_u16());
    // The body alone: the owner's head is dropped with `answer` (see `owned`).
    let payload = answer.take_payload().map_err(|e| io::Error::other(e.to_string()));
    respond(&req, code, answer.headers(), payload, keep(gone))
}

/// How waiting for an owner's answer ended.
enum Waited<T, E> {
    Answer(T),
    Failed(E),
    /// No answer head within [`RESPONSE_HEAD_TIMEOUT`].
    TimedOut,
    /// The client closed first.
    ClientGone,
}

/// Waits for `sent` within [`RESPONSE_HEAD_TIMEOUT`], or until the client
/// closes (when its connection tells, `gone`).
async fn answered<T, E>(
    sent: impl Future<Output = Result<T, E>>,
    gone: &Option<GoneWatch>,
) -> Waited<T, E> {
    let timed = async {
        match tokio::time::timeout(RESPONSE_HEAD_TIMEOUT, sent).await {
            Ok(Ok(answer)) => Waited::Answer(answer),
            Ok(Err(e)) => Waited::Failed(e),
            Err(_) => Waited::TimedOut,
        }
    };
    match gone {
        Some(gone) => tokio::select! {
            waited = timed => waited,
            () = gone.gone() => Waited::ClientGone,
        },
        None => timed.await,
    }
}

impl<T, E> Waited<T, E> {
    /// The answer to a client whose request got none: the timeout's 504,
    /// or, for a client gone, a 499 counted (written to nobody).
    fn unanswered(
        self,
        target: &super::Target,
        class: RequestClass,
        metrics: &crate::metrics::Metrics,
    ) -> HttpResponse {
        if matches!(self, Self::ClientGone) {
            tracing::debug!(downstream = %target.name, verb = class.verb,
                "front door: the client closed before the owner answered; ended");
            metrics.front_door(&target.name, class.verb, 499, None);
        } else {
            tracing::warn!(downstream = %target.name, verb = class.verb,
                timeout_s = RESPONSE_HEAD_TIMEOUT.as_secs(),
                "front door: the owner of a request sent no answer in time");
            metrics.front_door(&target.name, class.verb, 504, None);
        }
        status::owner_timeout().into_actix()
    }
}

/// How a request's body is framed.
#[derive(Debug, PartialEq, Eq)]
enum RequestBody {
    /// `Content-Length` above zero.
    Sized(u64),
    /// Of unknown length: chunked over HTTP/1 (actix-http refuses any
    /// other transfer coding), or an HTTP/2 body without `Content-Length`.
    Streamed,
    /// None.
    None,
}

fn request_body(req: &HttpRequest) -> RequestBody {
    framing(req.headers(), req.version(), req.method())
}

/// HTTP/2 frames bodies itself: a request may carry one without
/// `Content-Length` (a client streaming an upload), which only the methods
/// that take a body are assumed to do.
fn framing(headers: &HeaderMap, version: actix_web::http::Version, method: &Method) -> RequestBody {
    if headers.contains_key(header::TRANSFER_ENCODING) {
        return RequestBody::Streamed;
    }
    match content_length(headers) {
        Some(n) if n > 0 => RequestBody::Sized(n),
        Some(_) => RequestBody::None,
        None if version == actix_web::http::Version::HTTP_2
            && matches!(*method, Method::POST | Method::PUT | Method::PATCH) =>
        {
            RequestBody::Streamed
        }
        None => RequestBody::None,
    }
}

/// Whether a request may be sent again after a connection failed it
/// before any answer: it has no body (a streamed one is gone once sent),
/// and it is idempotent by Go's `net/http` rule (`Request.isReplayable`):
/// GET, HEAD, OPTIONS or TRACE, or any method with an `Idempotency-Key`
/// or `X-Idempotency-Key` header. A POST, PUT, PATCH or DELETE without
/// one is never sent twice: the owner may have acted on it.
fn replayable(method: &Method, headers: &HeaderMap, body: &RequestBody) -> bool {
    *body == RequestBody::None
        && (matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE)
            || headers.contains_key("idempotency-key")
            || headers.contains_key("x-idempotency-key"))
}

/// Whether `e` says the connection ended before a byte of the answer
/// came: closed after the request was written (no answer at all: what a
/// kept-alive connection the owner closed while the request was on its
/// way looks like), the request not written because it was closed, or
/// reset. awc takes from its pool only connections not yet seen closed,
/// so this is the race Go's `Transport` retries (`errServerClosedIdle`,
/// `nothingWrittenError`, a read error before the first byte). Anything
/// else (a partial answer, a refused connection, a timeout) is the
/// owner's answer to report.
fn closed_before_answer(e: &SendRequestError) -> bool {
    match e {
        SendRequestError::Connect(ConnectError::Disconnected) | SendRequestError::Send(_) => true,
        SendRequestError::Response(ParseError::Io(io)) => matches!(
            io.kind(),
            io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe
        ),
        _ => false,
    }
}

/// What a streamed answer keeps until its body is done.
struct Relaying {
    _permit: Permit,
    /// The HTTP/2 connection's place for a long-running pass.
    _stream: Option<StreamPlace>,
    _long: Option<LongExchangeMark>,
    /// Tells when the client closed.
    gone: Option<GoneWatch>,
    /// HTTP/2: tells when the client reset the request's stream.
    reset: Option<ResetWatch>,
    idle: Duration,
    class: RequestClass,
}

/// How often a quiet HTTP/2 answer looks whether its stream was reset.
const RESET_CHECK: Duration = Duration::from_secs(1);

/// Tells when an HTTP/2 client reset the stream of a body-less request
/// whose answer is still relayed (a watch cancelled, its connection kept
/// for others). actix-http answers each stream in a task that waits on
/// the body and never looks at the stream's state, and h2 wakes nobody
/// for a reset of a stream whose request has ended. The ended request
/// stream, read again, fails once the stream was reset: it is read every
/// [`RESET_CHECK`] while the answer is relayed.
struct ResetWatch {
    request: web::Payload,
    tick: Pin<Box<Sleep>>,
}

impl ResetWatch {
    fn new(request: web::Payload) -> Self {
        Self { request, tick: Box::pin(tokio::time::sleep(RESET_CHECK)) }
    }

    /// Ready once the stream was found reset.
    fn poll_reset(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        while self.tick.as_mut().poll(cx).is_ready() {
            self.tick.as_mut().reset(tokio::time::Instant::now() + RESET_CHECK);
            if let Poll::Ready(Some(Err(_))) = Pin::new(&mut self.request).poll_next(cx) {
                return Poll::Ready(());
            }
        }
        Poll::Pending
    }
}

/// The client's answer: the owner's status and end-to-end headers, its
/// body relayed as it arrives.
fn respond<S>(
    req: &HttpRequest,
    code: StatusCode,
    answer_headers: &HeaderMap,
    body: S,
    keep: Relaying,
) -> HttpResponse
where
    S: Stream<Item = io::Result<Bytes>> + Unpin + 'static,
{
    let mut builder = HttpResponse::build(code);
    for (name, value) in headers::end_to_end(answer_headers) {
        builder.append_header((name.clone(), owned(value)));
    }
    let length = content_length(answer_headers);
    if headers::bodiless(req.method(), code.as_u16()) {
        return match length {
            // HEAD keeps the length a GET would have had.
            Some(n) if req.method() == Method::HEAD && code != StatusCode::NOT_MODIFIED => builder
                .body(SizedStream::new(
                    n,
                    futures_util::stream::empty::<Result<Bytes, io::Error>>(),
                )),
            _ => builder.finish(),
        };
    }
    // Last: nothing may fail between taking the hold and handing the answer
    // back (see `AnswerTurns::hold`).
    let hold = req.conn_data::<AnswerTurns>().map(AnswerTurns::hold);
    let written = req.conn_data::<Written>().cloned();
    let ahead = if keep.class.long_running { LONG_WRITE_AHEAD } else { WRITE_AHEAD };
    let body = Relay {
        inner: body,
        ahead,
        start: written.as_ref().map_or(0, Written::bytes),
        written,
        handed: 0,
        h2_ahead: req.conn_data::<Progress>().map(Progress::stream),
        rest: Bytes::new(),
        sleep: Box::pin(tokio::time::sleep(keep.idle)),
        idle: keep.idle,
        last: tokio::time::Instant::now(),
        _hold: hold,
        _keep: keep,
    };
    match length {
        Some(n) => builder.body(SizedStream::new(n, body)),
        None => builder.body(BodyStream::new(body)),
    }
}

/// How far an HTTP/1 answer's body may be handed on ahead of what was
/// written to the client. actix-http takes a body for as long as its write
/// buffer is under 256 KiB (`h1_write_buffer_size`, what the metadata
/// needs); past this the rest waits at the downstream, held back by TCP,
/// so that a burst to a client that does not read costs the proxy little
/// per connection (docs/operations.md, "Streaming").
///
/// A chunk is handed on only as far as this allows, the rest of it later,
/// copied: awc reads the owner's answer into a buffer of 32 KiB or more
/// and starts a new one whenever a chunk it handed out still holds the old
/// one, so a slice kept here pins a second one (heaptrack, 200 bursty
/// watches read by one slow client: awc's buffers 82 KiB a connection at
/// the peak, 61 with the copy). Handed whole, a
/// 32 KiB chunk from awc on top of the bytes ahead grew actix-http's write
/// buffer, which keeps the capacity a burst grew it to, to 64 or 128 KiB
/// per connection (heaptrack, 200 bursty watches not read: 82 KiB each);
/// with the chunk framing this stays under its 32 KiB step. Less ahead
/// costs throughput: 12 KiB took a 34 MB list from 67 % of direct to 50 %.
const WRITE_AHEAD: u64 = 30 * 1024;

/// [`WRITE_AHEAD`] for a long-running pass, read off the owner a few KiB
/// at a time ([`stream`]): with this little ahead, actix-http's write
/// buffer keeps the 8 KiB it starts with (the head, this, and chunk
/// framing fit), where 30 KiB grows it to 32 or 64 KiB per open watch.
/// A watch's events are small and its rate the owner's, not the
/// network's.
const LONG_WRITE_AHEAD: u64 = 4 * 1024;

/// How far an HTTP/2 answer's body may be handed on ahead of what its
/// connection writes (`Progress`): h2 would buffer up to 400 KiB a stream
/// for a client that opens its windows and stops reading.
const H2_WRITE_AHEAD: u64 = 32 * 1024;

/// A downstream body relayed to the client: ended after `idle` without a
/// byte; holds the request's place in flight, its connection's long
/// exchange mark and its answer hold until dropped. Over HTTP/1 it is
/// handed on at most [`WRITE_AHEAD`] ahead of the bytes written.
///
/// The idle timer is not reset per chunk (a tokio timer reset takes the
/// timer driver's lock, and a large list is thousands of chunks): each
/// chunk notes the time, and when the timer fires early it is set again
/// from the last chunk.
struct Relay<S> {
    inner: S,
    /// How far it may be handed on ahead of the bytes written (HTTP/1).
    ahead: u64,
    sleep: Pin<Box<Sleep>>,
    idle: Duration,
    last: tokio::time::Instant,
    /// The connection's bytes written (HTTP/1), and their count when the
    /// answer began.
    written: Option<Written>,
    start: u64,
    /// The body's bytes handed on so far.
    handed: u64,
    /// HTTP/2: what it handed on ahead of the connection's writes.
    h2_ahead: Option<StreamAhead>,
    /// What is left of the last chunk read, when HTTP/1's room ahead took
    /// only part of it: a copy, owning no part of awc's read buffer.
    rest: Bytes,
    _hold: Option<AnswerHold>,
    _keep: Relaying,
}

impl<S> Stream for Relay<S>
where
    S: Stream<Item = io::Result<Bytes>> + Unpin,
{
    type Item = Result<Bytes, io::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        // The client closed while the answer was quiet: end it, so the
        // downstream exchange, its connection and its place go now, not
        // when the downstream next sends a byte.
        let left = if this._keep.gone.as_ref().is_some_and(|g| g.poll_gone(cx).is_ready()) {
            Some("the client closed the connection")
        } else if this._keep.reset.as_mut().is_some_and(|r| r.poll_reset(cx).is_ready()) {
            Some("the client reset the stream")
        } else {
            None
        };
        if let Some(how) = left {
            tracing::debug!(
                verb = this._keep.class.verb,
                how,
                "front door: the client went away; the passed-on answer ended"
            );
            return Poll::Ready(Some(Err(io::Error::new(io::ErrorKind::ConnectionAborted, how))));
        }
        let room = match &this.written {
            Some(written) => {
                let out = written.bytes().saturating_sub(this.start);
                let ahead = this.handed.saturating_sub(out);
                if ahead >= this.ahead {
                    // Not the downstream's silence: its idle time starts anew.
                    this.last = tokio::time::Instant::now();
                    written.wake_at_next(cx);
                    return Poll::Pending;
                }
                // Below `this.ahead`, so it fits a usize.
                usize::try_from(this.ahead - ahead).unwrap_or(usize::MAX)
            }
            None => match &mut this.h2_ahead {
                Some(ahead) => match ahead.poll_room(H2_WRITE_AHEAD, cx) {
                    Poll::Ready(room) => usize::try_from(room).unwrap_or(usize::MAX),
                    Poll::Pending => {
                        // As above: the client's silence, not the downstream's.
                        this.last = tokio::time::Instant::now();
                        return Poll::Pending;
                    }
                },
                None => usize::MAX,
            },
        };
        if !this.rest.is_empty() {
            let piece = this.rest.split_to(room.min(this.rest.len()));
            this.handed = this.handed.saturating_add(piece.len() as u64);
            if let Some(ahead) = &mut this.h2_ahead {
                ahead.handed(piece.len());
            }
            return Poll::Ready(Some(Ok(piece)));
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(mut chunk))) => {
                this.last = tokio::time::Instant::now();
                if chunk.len() > room {
                    this.rest = rest_of(&mut chunk, room);
                }
                this.handed = this.handed.saturating_add(chunk.len() as u64);
                if let Some(ahead) = &mut this.h2_ahead {
                    ahead.handed(chunk.len());
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => loop {
                if this.sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                let due = this.last + this.idle;
                if tokio::time::Instant::now() < due {
                    this.sleep.as_mut().reset(due);
                    continue;
                }
                tracing::debug!(
                    verb = this._keep.class.verb,
                    idle_s = this.idle.as_secs(),
                    "front door: a passed-on answer went idle; ended"
                );
                return Poll::Ready(Some(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no byte from the downstream within frontDoorIdleTimeout",
                ))));
            },
        }
    }
}

/// A copy of one of the owner's header values. awc's values are slices of
/// the first buffer it read the answer into (8 KiB), which they would keep
/// for as long as the answer streams (and actix-http keeps the heads of
/// answers it wrote in a pool, values and all).
fn owned(value: &HeaderValue) -> HeaderValue {
    HeaderValue::from_bytes(value.as_bytes()).unwrap_or_else(|_| value.clone())
}

/// Cuts `chunk` to `room` bytes and returns the rest as a copy: a slice
/// would keep awc's whole read buffer alive while the client does not
/// read, and awc reads on into a new one.
fn rest_of(chunk: &mut Bytes, room: usize) -> Bytes {
    let rest = Bytes::copy_from_slice(chunk.get(room..).unwrap_or_default());
    chunk.truncate(room);
    rest
}

#[cfg(test)]
mod tests {
    use actix_web::http::Version;
    use actix_web::http::header::{HeaderName, HeaderValue};

    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (n, v) in pairs {
            m.insert(HeaderName::from_static(n), HeaderValue::from_static(v));
        }
        m
    }

    /// A header value passed back owns its bytes: none of the buffer the
    /// owner's head was read into.
    #[test]
    fn header_values_passed_back_are_copies() {
        let read = Bytes::from_static(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n");
        let value = HeaderValue::from_maybe_shared(read.slice(31..47)).expect("valid");
        let copy = owned(&value);
        assert_eq!(copy, "application/json");
        let buffer = read.as_ptr_range();
        assert!(!buffer.contains(&copy.as_bytes().as_ptr()), "a slice of the head's buffer");
    }

    /// The part of a chunk kept for later owns its bytes: none of the
    /// buffer the chunk was read into.
    #[test]
    fn the_rest_of_a_chunk_kept_for_later_is_a_copy() {
        let read = Bytes::from(vec![7u8; 32 * 1024]);
        let mut chunk = read.clone();
        let rest = rest_of(&mut chunk, 30 * 1024);
        assert_eq!(chunk.len(), 30 * 1024);
        assert_eq!(rest.len(), 2 * 1024);
        assert!(rest.iter().all(|&b| b == 7));
        let buffer = read.as_ptr_range();
        assert!(!buffer.contains(&rest.as_ptr()), "the rest is a slice of the read buffer");
    }

    #[test]
    fn only_body_less_idempotent_requests_are_replayed() {
        let none = HeaderMap::new();
        for method in [Method::GET, Method::HEAD, Method::OPTIONS, Method::TRACE] {
            assert!(replayable(&method, &none, &RequestBody::None), "{method}");
            assert!(!replayable(&method, &none, &RequestBody::Sized(2)), "{method} with a body");
            assert!(!replayable(&method, &none, &RequestBody::Streamed), "{method} streamed");
        }
        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE, Method::CONNECT] {
            assert!(!replayable(&method, &none, &RequestBody::None), "{method}");
        }
        for key in ["idempotency-key", "x-idempotency-key"] {
            let keyed = headers(&[(key, "k-1")]);
            assert!(replayable(&Method::DELETE, &keyed, &RequestBody::None), "{key}");
            assert!(!replayable(&Method::POST, &keyed, &RequestBody::Sized(2)), "{key}, a body");
        }
    }

    #[test]
    fn only_a_connection_closed_before_an_answer_is_retried() {
        let io = |kind| io::Error::new(kind, "x");
        let retried = [
            SendRequestError::Connect(ConnectError::Disconnected),
            SendRequestError::Send(io(io::ErrorKind::BrokenPipe)),
            SendRequestError::Response(ParseError::Io(io(io::ErrorKind::ConnectionReset))),
        ];
        for e in &retried {
            assert!(closed_before_answer(e), "{e}");
        }
        let answered = [
            SendRequestError::Connect(ConnectError::Io(io(io::ErrorKind::ConnectionRefused))),
            SendRequestError::Connect(ConnectError::Timeout),
            SendRequestError::Timeout,
            SendRequestError::Response(ParseError::Io(io(io::ErrorKind::Other))),
            SendRequestError::Response(ParseError::Header),
        ];
        for e in &answered {
            assert!(!closed_before_answer(e), "{e}");
        }
    }

    #[test]
    fn bodies_are_framed_as_the_client_framed_them() {
        let h1 = Version::HTTP_11;
        let h2 = Version::HTTP_2;
        let sized = headers(&[("content-length", "12")]);
        assert_eq!(framing(&sized, h1, &Method::POST), RequestBody::Sized(12));
        let chunked = headers(&[("transfer-encoding", "chunked")]);
        assert_eq!(framing(&chunked, h1, &Method::PUT), RequestBody::Streamed);
        let empty = headers(&[("content-length", "0")]);
        assert_eq!(framing(&empty, h2, &Method::POST), RequestBody::None);
        assert_eq!(framing(&HeaderMap::new(), h1, &Method::POST), RequestBody::None);
        assert_eq!(framing(&HeaderMap::new(), h2, &Method::PATCH), RequestBody::Streamed);
        assert_eq!(framing(&HeaderMap::new(), h2, &Method::GET), RequestBody::None);
    }
}
