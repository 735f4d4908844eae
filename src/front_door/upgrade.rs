//! Passing on a connection upgrade (`kubectl exec`, `attach`,
//! `port-forward`: WebSocket or SPDY over HTTP/1.1).
//!
//! actix-http hands a request that asks to switch protocols to this service
//! with the connection itself. The request head is written to a new
//! connection to the owner; the owner's response head comes back as it was
//! sent. When it is `101 Switching Protocols`, both sides agreed, and from
//! then on bytes are copied both ways until either side closes or neither
//! sends a byte for `frontDoorIdleTimeout`. Any other answer (401, 403,
//! 400) is passed back with its body and the connection closes.
//!
//! Nothing the client sent after the head reaches the owner before its
//! `101`: until then those bytes may be the client's next request, for
//! another owner, and relaying them would pass it on unrouted, uncounted
//! and unlogged. After a `101` they belong to the new protocol and go
//! first; after anything else they are dropped with the connection, which
//! the answer says closes (`Connection: close`), so a client sends them
//! again on a new one. kube-apiserver's upgrade-aware proxy likewise joins
//! the two streams only after a `101`.
//!
//! Only WebSocket and SPDY (`SPDY/3.1`, what kubectl sends) are taken as
//! upgrades ([`is_tunnel_upgrade`]); any other `Upgrade:` value is an
//! ordinary request and streams as one. `CONNECT` is refused (405), and so
//! is an upgrade head over [`UPGRADE_HEAD_LIMIT`] or
//! [`UPGRADE_HEADER_LINES`] (431), whichever reader took it.
//!
//! A metadata path asked with an upgrade is answered as without one, and
//! the connection closes: nothing here switches protocols.

use std::cell::Cell;
use std::io;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_codec::Framed;
use actix_http::Request;
use actix_http::h1::Codec;
use actix_service::{ServiceFactory, fn_service};
use actix_web::HttpMessage;
use actix_web::http::Method;
use actix_web::http::header::{self, HeaderMap};
use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::class::classify;
use super::headers;
use super::owner::{self, Answer, connect, read_head};
use super::{FrontDoor, RESPONSE_HEAD_TIMEOUT, Target};
use crate::discovery::owners::group_version_of;
use crate::http::connection::LongExchange;
use crate::http::head::Checked;
use crate::http::reply::{Reply, Request as Asked, write_head};
use crate::http::{AppState, access, router, status};

/// The largest upgrade request head passed on: the raw first-request
/// readers' limit (`serve::direct::HEAD_LIMIT`), applied to the heads
/// actix-http takes too.
pub(crate) const UPGRADE_HEAD_LIMIT: usize = 8 * 1024;

/// The most header lines in an upgrade request head passed on: what the
/// TLS first-request reader parses.
pub(crate) const UPGRADE_HEADER_LINES: usize = 64;

/// Bytes copied at a time, each way: what a tunnel holds.
const PIPE_BUFFER: usize = 16 * 1024;

/// Why an upgrade ended early (logged at debug: the client or the
/// downstream went away).
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpgradeError {
    /// Writing to the client or the downstream, or reading them, failed.
    #[error("passing an upgraded connection on")]
    Io(#[from] io::Error),
}

/// actix-http's upgrade service for `door`.
pub(crate) fn upgrades<T>(
    state: AppState,
    door: Arc<FrontDoor>,
) -> impl ServiceFactory<
    (Request, Framed<T, Codec>),
    Config = (),
    Response = (),
    Error = std::convert::Infallible,
    InitError = (),
> + Clone
where
    T: AsyncRead + AsyncWrite + Unpin + 'static,
{
    fn_service(move |(req, framed): (Request, Framed<T, Codec>)| {
        let state = state.clone();
        let door = Arc::clone(&door);
        async move {
            // The connection is this service's alone: an error ends it, and
            // there is nobody left to answer (the client or the downstream
            // went away).
            if let Err(e) = upgrade(&state, &door, req, framed).await {
                tracing::debug!(error = %crate::error_chain(&e), "front door: upgrade ended");
            }
            Ok(())
        }
    })
}

async fn upgrade<T>(
    state: &AppState,
    door: &Arc<FrontDoor>,
    req: Request,
    framed: Framed<T, Codec>,
) -> Result<(), UpgradeError>
where
    T: AsyncRead + AsyncWrite + Unpin + 'static,
{
    // actix-http hands `CONNECT` here as an upgrade, whatever its headers.
    if req.method() == Method::CONNECT {
        return refuse(framed, status::connect_refused(), false).await;
    }
    if head_over_limits(&req) {
        return refuse(framed, status::upgrade_head_too_large(), false).await;
    }
    let decoded = router::decode_path(req.path()).unwrap_or_default();
    if router::route(&decoded).is_some() {
        // Metadata: answered as without the upgrade, then closed.
        let asked = Asked::from_head(req.head());
        let access = access::access(state, &asked).await;
        let reply = router::answer(state, &asked, access).await;
        return refuse(framed, reply, req.method() == Method::HEAD).await;
    }
    if let Some(long) = req.conn_data::<LongExchange>() {
        long.mark().until_closed();
    }
    let upgrade = UpgradeRequest {
        method: req.method().clone(),
        target: req.uri().path_and_query().map_or(req.path(), |pq| pq.as_str()).to_owned(),
        headers: req.headers().clone(),
        peer: req.peer_addr().map(|a| a.ip()),
    };
    let parts = framed.into_parts();
    relay(state, door, &upgrade, parts.io, &parts.read_buf).await
}

/// Whether `req`'s head is over the limits the raw first-request readers
/// apply: counted as written (`name: value\r\n` a line), so a head they
/// hand to actix-http for its size is not passed on here instead.
fn head_over_limits(req: &Request) -> bool {
    let lines = req.headers().len();
    let target = req.uri().path_and_query().map_or(req.path().len(), |pq| pq.as_str().len());
    let size = req.method().as_str().len()
        + target
        + " HTTP/1.1\r\n\r\n".len()
        + req.headers().iter().map(|(n, v)| n.as_str().len() + v.len() + 4).sum::<usize>();
    lines > UPGRADE_HEADER_LINES || size > UPGRADE_HEAD_LIMIT
}

/// Whether the `Upgrade` header values ask for a tunnel the front door
/// passes on: a WebSocket (`websocket`) or SPDY (`SPDY/3.1`, what kubectl
/// sends) protocol among their comma-separated tokens, case-insensitive.
/// Anything else (`h2c`, made-up values) is an ordinary request, which
/// streams as one instead of being held as an upgrade's refusal.
pub(crate) fn is_tunnel_upgrade<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> bool {
    values.into_iter().any(|value| {
        std::str::from_utf8(value).is_ok_and(|v| {
            v.split(',').map(str::trim).any(|token| {
                token.eq_ignore_ascii_case("websocket") || token.eq_ignore_ascii_case("spdy/3.1")
            })
        })
    })
}

/// An upgrade request, as the front door passes it on.
#[derive(Debug)]
pub(crate) struct UpgradeRequest {
    method: Method,
    /// Path and query, as sent.
    target: String,
    headers: HeaderMap,
    peer: Option<IpAddr>,
}

impl UpgradeRequest {
    /// The upgrade a raw request head asks for, when the front door is to
    /// pass it on: it asks to switch protocols (`Connection: upgrade` and
    /// an `Upgrade` header naming WebSocket or SPDY, [`is_tunnel_upgrade`])
    /// on a path no metadata route serves. `None` for anything else, which
    /// goes its usual way.
    /// Only a head that passed the strict check ([`check`](crate::http::head::check): the rules
    /// of actix-http's parser) is taken, so what actix-http refuses with
    /// 400 is never passed on from a raw reader either.
    /// `peer` is asked for the client's address only for an upgrade (on
    /// the direct writer's path it is a system call).
    pub(crate) fn of_raw(
        head: &Checked<'_, '_, '_>,
        peer: impl FnOnce() -> Option<IpAddr>,
    ) -> Option<Self> {
        let head = head.raw();
        // Most requests are not upgrades: tell from the raw lines first,
        // before anything is decoded or copied.
        let connection_upgrade = head.headers.iter().any(|h| {
            h.name.eq_ignore_ascii_case("connection")
                && std::str::from_utf8(h.value)
                    .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("upgrade")))
        });
        let upgrades =
            head.headers.iter().filter(|h| h.name.eq_ignore_ascii_case("upgrade")).map(|h| h.value);
        if !connection_upgrade || !is_tunnel_upgrade(upgrades) || head.version != Some(1) {
            return None;
        }
        // The target as actix-http's upgrade service takes it: an
        // absolute-form one (`http://host/path`) by its path and query.
        let uri = actix_web::http::Uri::try_from(head.path?).ok()?;
        let target = uri.path_and_query().map_or(uri.path(), |pq| pq.as_str());
        let path = uri.path();
        if router::route(&router::decode_path(path)?).is_some() {
            return None;
        }
        let mut headers = HeaderMap::new();
        for h in head.headers.iter() {
            let name = header::HeaderName::from_bytes(h.name.as_bytes()).ok()?;
            let value = header::HeaderValue::from_bytes(h.value).ok()?;
            headers.append(name, value);
        }
        Some(Self {
            method: Method::from_bytes(head.method?.as_bytes()).ok()?,
            target: target.to_owned(),
            headers,
            peer: peer(),
        })
    }

    fn path(&self) -> &str {
        self.target.split_once('?').map_or(&self.target, |(p, _)| p)
    }

    fn query(&self) -> &str {
        self.target.split_once('?').map_or("", |(_, q)| q)
    }
}

/// Passes `upgrade` on to its owner over `client`, whose next
/// bytes (already read) are `early`: a refusal is answered and the
/// connection closed, `early` dropped with it; after a `101`, `early` goes
/// to the owner first and the two are piped until either side is done.
pub(crate) async fn relay<C>(
    state: &AppState,
    door: &Arc<FrontDoor>,
    upgrade: &UpgradeRequest,
    mut client: C,
    early: &[u8],
) -> Result<(), UpgradeError>
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    if upgrade.method == Method::CONNECT {
        return Ok(write_reply(&mut client, status::connect_refused(), false).await?);
    }
    let started = Instant::now();
    let decoded = router::decode_path(upgrade.path()).unwrap_or_default();
    let class = classify(&upgrade.method, &decoded, upgrade.query(), true);
    let owner =
        group_version_of(&decoded).and_then(|k| state.store.load().owners.owner(k).cloned());
    let Some(target) = owner.and_then(|o| door.targets.get(&o).cloned()) else {
        state.metrics.front_door("", class.verb, 404, None);
        write_reply(&mut client, status::not_owned(), false).await?;
        return Ok(());
    };
    let _permit = match door.admit(true, upgrade.peer) {
        Ok(permit) => permit,
        Err(refused) => {
            state.metrics.front_door(&target.name, class.verb, 429, None);
            tracing::debug!(downstream = %target.name, bound = refused.label(),
                "front door: too many requests in flight");
            write_reply(&mut client, refused.reply(), false).await?;
            return Ok(());
        }
    };
    let mut downstream = match connect(&target).await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(downstream = %target.name, error = %e,
                "front door: cannot connect to pass an upgrade on");
            state.metrics.front_door(&target.name, class.verb, 503, None);
            write_reply(&mut client, status::owner_unreachable(), false).await?;
            return Ok(());
        }
    };
    let head = request_head(upgrade, &target);
    // Only the head: what follows it is not the owner's before a `101`.
    downstream.write_all(&head).await?;
    let answer =
        match tokio::time::timeout(RESPONSE_HEAD_TIMEOUT, read_head(&mut downstream, 4096)).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                tracing::warn!(downstream = %target.name, error = %e,
                "front door: no valid answer to an upgrade");
                state.metrics.front_door(&target.name, class.verb, 502, None);
                write_reply(&mut client, status::owner_failed(), false).await?;
                return Ok(());
            }
            Err(_) => {
                state.metrics.front_door(&target.name, class.verb, 504, None);
                write_reply(&mut client, status::owner_timeout(), false).await?;
                return Ok(());
            }
        };
    state.metrics.front_door(&target.name, class.verb, answer.code, Some(started.elapsed()));
    tracing::debug!(downstream = %target.name, code = answer.code, path = %upgrade.path(),
        "front door: upgrade answered");
    if answer.code == 101 {
        downstream.write_all(early).await?;
        client.write_all(&answer.bytes).await?;
        let (up, down) = pipe(client, downstream, door.idle).await;
        tracing::debug!(downstream = %target.name, to_downstream = up, to_client = down,
            "front door: upgraded connection ended");
        return Ok(());
    }
    // Refused (401, 403, 400: a `Status`): its body is read whole, within
    // REFUSAL_LIMIT, and passed back with its length on a closing
    // connection, whatever framing the downstream chose.
    let body =
        match tokio::time::timeout(RESPONSE_HEAD_TIMEOUT, refusal_body(&mut downstream, &answer))
            .await
        {
            Ok(Ok(body)) => body,
            Ok(Err(e)) => {
                tracing::warn!(downstream = %target.name, error = %e,
                "front door: the refusal of an upgrade could not be read");
                return write_reply(&mut client, status::owner_failed(), false)
                    .await
                    .map_err(Into::into);
            }
            Err(_) => {
                return write_reply(&mut client, status::owner_timeout(), false)
                    .await
                    .map_err(Into::into);
            }
        };
    client.write_all(&answer.closing_head(body.len())).await?;
    client.write_all(&body).await?;
    client.shutdown().await?;
    Ok(())
}

/// The request head as the owner gets it ([`owner::request_head`]), asking
/// for the upgrade the client asked for.
fn request_head(upgrade: &UpgradeRequest, target: &Target) -> Vec<u8> {
    let mut extra: Vec<(&[u8], &[u8])> = upgrade
        .headers
        .get_all(header::UPGRADE)
        .map(|value| (&b"upgrade"[..], value.as_bytes()))
        .collect();
    extra.push((b"connection", b"Upgrade"));
    if let Some(length) = upgrade.headers.get(header::CONTENT_LENGTH) {
        extra.push((b"content-length", length.as_bytes()));
    }
    owner::request_head(
        &upgrade.method,
        &upgrade.target,
        &upgrade.headers,
        upgrade.peer,
        target,
        &extra,
    )
}

impl Answer {
    /// The head of a refusal whose body, `length` bytes, follows whole:
    /// its hop-by-hop and framing headers replaced by that length and
    /// `Connection: close`.
    fn closing_head(&self, length: usize) -> Vec<u8> {
        let connection = headers::connection_names(
            self.headers.iter().filter(|(n, _)| n == "connection").map(|(_, v)| &v[..]),
        );
        let mut head = format!("HTTP/1.1 {} {}\r\n", self.code, self.reason).into_bytes();
        for (name, value) in &self.headers {
            if !headers::stays_behind(name, &connection) {
                head.extend_from_slice(name.as_bytes());
                head.extend_from_slice(b": ");
                head.extend_from_slice(value);
                head.extend_from_slice(b"\r\n");
            }
        }
        head.extend_from_slice(
            format!("content-length: {length}\r\nconnection: close\r\n\r\n").as_bytes(),
        );
        head
    }

    /// The whole body in `raw` (what followed the head), once it is all
    /// there: by `Content-Length`, by chunks, or (`eof`) up to the close.
    fn body_in(&self, raw: &[u8], eof: bool) -> io::Result<Option<Vec<u8>>> {
        if self.code < 200 || self.code == 204 || self.code == 304 {
            return Ok(Some(Vec::new()));
        }
        if self.chunked {
            return dechunked(raw);
        }
        match self.content_length {
            Some(n) => {
                Ok(usize::try_from(n).ok().filter(|n| raw.len() >= *n).map(|n| raw[..n].to_vec()))
            }
            None => Ok(eof.then(|| raw.to_vec())),
        }
    }
}

/// The largest refusal body read (a `Status` is a few hundred bytes).
const REFUSAL_LIMIT: usize = 1024 * 1024;

/// The body of a refusal `answer`, read on from `io` until whole.
async fn refusal_body<S: AsyncRead + Unpin>(io: &mut S, answer: &Answer) -> io::Result<Vec<u8>> {
    let mut raw = BytesMut::from(&answer.bytes[answer.head_len..]);
    loop {
        if let Some(body) = answer.body_in(&raw, false)? {
            return Ok(body);
        }
        if raw.len() > REFUSAL_LIMIT {
            return Err(io::Error::other("a refusal's body over 1 MiB"));
        }
        if io.read_buf(&mut raw).await? == 0 {
            return answer.body_in(&raw, true)?.ok_or_else(|| {
                io::Error::new(io::ErrorKind::UnexpectedEof, "closed in the middle of a body")
            });
        }
    }
}

/// The data of a chunked body once `raw` holds all of it (trailers
/// skipped); `None` while it does not.
fn dechunked(raw: &[u8]) -> io::Result<Option<Vec<u8>>> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let (line, size) = match httparse::parse_chunk_size(&raw[at..]) {
            Ok(httparse::Status::Complete(found)) => found,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err(io::Error::other("malformed chunked body")),
        };
        at += line;
        if size == 0 {
            // Trailers, if any, up to an empty line.
            let rest = &raw[at..];
            let ended = rest.starts_with(b"\r\n") || rest.windows(4).any(|w| w == b"\r\n\r\n");
            return Ok(ended.then_some(body));
        }
        let size = usize::try_from(size).map_err(|_| io::Error::other("chunk too large"))?;
        let Some(end) = at.checked_add(size).filter(|end| end.saturating_add(2) <= raw.len())
        else {
            return Ok(None);
        };
        body.extend_from_slice(&raw[at..end]);
        at = end + 2;
    }
}

/// Answers an upgrade taken from actix-http with `reply` (a refusal, or a
/// metadata answer; its head only for HEAD), and closes.
async fn refuse<T>(
    framed: Framed<T, Codec>,
    reply: Reply,
    head_only: bool,
) -> Result<(), UpgradeError>
where
    T: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let mut io = framed.into_parts().io;
    Ok(write_reply(&mut io, reply, head_only).await?)
}

/// Writes `reply` as the direct writer does, and closes the connection.
/// A gzip-only body answered plain is inflated as it is written, as there.
async fn write_reply<T: AsyncWrite + Unpin>(
    io: &mut T,
    reply: Reply,
    head_only: bool,
) -> io::Result<()> {
    let mut head = Vec::with_capacity(256);
    write_head(&mut head, &reply, true);
    io.write_all(&head).await?;
    if !head_only {
        io.write_all(&reply.body).await?;
        if let Some(plain) = reply.inflate {
            let mut inflating = plain.inflating()?;
            while let Some(chunk) = inflating.next_chunk() {
                io.write_all(&chunk?).await?;
                tokio::task::consume_budget().await;
            }
        }
    }
    io.shutdown().await
}

/// Copies bytes both ways until both directions have ended, or neither
/// moved a byte for `idle`; the bytes copied each way.
async fn pipe<A, B>(a: A, b: B, idle: Duration) -> (u64, u64)
where
    A: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Unpin,
{
    let last = Cell::new(tokio::time::Instant::now());
    let (mut ar, mut aw) = tokio::io::split(a);
    let (mut br, mut bw) = tokio::io::split(b);
    let up = Cell::new(0u64);
    let down = Cell::new(0u64);
    let copy = async {
        let _ = futures_util::future::join(
            half(&mut ar, &mut bw, &last, &up),
            half(&mut br, &mut aw, &last, &down),
        )
        .await;
    };
    let watchdog = async {
        loop {
            tokio::time::sleep_until(last.get() + idle).await;
            if tokio::time::Instant::now() >= last.get() + idle {
                tracing::debug!(
                    idle_s = idle.as_secs(),
                    "front door: upgraded connection idle; ended"
                );
                return;
            }
        }
    };
    tokio::select! {
        () = copy => {}
        () = watchdog => {}
    }
    (up.get(), down.get())
}

/// One direction of [`pipe`]: at its end the other side's writing half
/// is shut down, so a half-close crosses.
async fn half<R, W>(
    r: &mut R,
    w: &mut W,
    last: &Cell<tokio::time::Instant>,
    count: &Cell<u64>,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0; PIPE_BUFFER];
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            return w.shutdown().await;
        }
        w.write_all(&buf[..n]).await?;
        last.set(tokio::time::Instant::now());
        count.set(count.get() + n as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::head;
    use bytes::Bytes;

    fn upgrade_of(raw: &str) -> Option<UpgradeRequest> {
        let mut lines = [httparse::EMPTY_HEADER; 16];
        let mut head = httparse::Request::new(&mut lines);
        assert!(head.parse(raw.as_bytes()).expect("parses").is_complete());
        let checked = head::check(&head).ok()?;
        UpgradeRequest::of_raw(&checked, || Some("10.1.2.3".parse().expect("ip")))
    }

    fn target() -> Target {
        Target {
            name: Arc::from("kube"),
            base: "https://10.0.0.1:6443/prefix".into(),
            host: "10.0.0.1".into(),
            port: 6443,
            authority: "10.0.0.1:6443".into(),
            prefix: "/prefix".into(),
            tls: None,
            connect_timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn only_upgrades_of_resource_paths_are_taken() {
        let exec = "GET /api/v1/namespaces/a/pods/p/exec?command=ls HTTP/1.1\r\nHost: x\r\n\
                    Connection: keep-alive, Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n";
        assert!(upgrade_of(exec).is_some());
        let websocket = "GET /api/v1/namespaces/a/pods/p/attach HTTP/1.1\r\nHost: x\r\nconnection: upgrade\r\n\
                         upgrade: websocket\r\n\r\n";
        assert!(upgrade_of(websocket).is_some());
        let plain = "GET /api/v1/namespaces/a/pods HTTP/1.1\r\nHost: x\r\n\r\n";
        assert!(upgrade_of(plain).is_none(), "no upgrade asked");
        let no_connection = "GET /api/v1/pods HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n";
        assert!(upgrade_of(no_connection).is_none(), "Upgrade without Connection: upgrade");
        let metadata =
            "GET /openapi/v3 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
        assert!(upgrade_of(metadata).is_none(), "metadata is answered, not passed on");
        let old = "GET /api/v1/pods HTTP/1.0\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
        assert!(upgrade_of(old).is_none(), "HTTP/1.0 cannot upgrade");
    }

    #[test]
    fn only_websocket_and_spdy_are_tunnel_upgrades() {
        let tunnel = |values: &[&str]| is_tunnel_upgrade(values.iter().map(|v| v.as_bytes()));
        assert!(tunnel(&["websocket"]));
        assert!(tunnel(&["WebSocket"]));
        assert!(tunnel(&["SPDY/3.1"]));
        assert!(tunnel(&["spdy/3.1"]));
        assert!(tunnel(&["x-other, websocket"]), "one of the tokens");
        assert!(tunnel(&["h2c", " SPDY/3.1 "]), "one of the lines");
        assert!(!tunnel(&["x-anything"]));
        assert!(!tunnel(&["h2c"]));
        assert!(!tunnel(&["websocketx"]), "a token, not a prefix");
        assert!(!tunnel(&["SPDY/3"]), "the version kubectl sends");
        assert!(!tunnel(&[""]));
        assert!(!tunnel(&[]));
        assert!(!is_tunnel_upgrade([&b"websocket\xff"[..]]), "not text");
    }

    #[test]
    fn an_unknown_upgrade_is_an_ordinary_request() {
        let watch = "GET /api/v1/pods?watch=1 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n\
                     Upgrade: x-anything\r\n\r\n";
        assert!(upgrade_of(watch).is_none());
        let h2c = "GET /api/v1/pods HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n\
                   Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n";
        assert!(upgrade_of(h2c).is_none());
        let two = "GET /api/v1/pods HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: x-anything\r\n\
                   Upgrade: websocket\r\n\r\n";
        assert!(upgrade_of(two).is_some(), "a WebSocket among the values");
    }

    #[test]
    fn the_owner_gets_the_upgrade_the_clients_headers_and_x_forwarded_for() {
        let raw = "POST /api/v1/namespaces/a/pods/p/exec?command=sh HTTP/1.1\r\nHost: proxy\r\n\
                   Authorization: Bearer c\r\nConnection: Upgrade, X-Secret\r\nX-Secret: 1\r\n\
                   Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\
                   Proxy-Authorization: Basic p\r\nContent-Length: 0\r\n\r\n";
        let head = String::from_utf8(request_head(&upgrade_of(raw).expect("taken"), &target()))
            .expect("text");
        let lower = head.to_ascii_lowercase();
        assert!(
            head.starts_with(
                "POST /prefix/api/v1/namespaces/a/pods/p/exec?command=sh HTTP/1.1\r\n"
            ),
            "{head}"
        );
        assert!(lower.contains("host: 10.0.0.1:6443\r\n"), "{head}");
        assert!(lower.contains("authorization: bearer c\r\n"), "{head}");
        assert!(
            lower.contains("upgrade: spdy/3.1\r\n") && lower.contains("connection: upgrade\r\n")
        );
        assert!(lower.contains("x-stream-protocol-version: v4.channel.k8s.io\r\n"));
        assert!(lower.contains("x-forwarded-for: 10.1.2.3\r\n"), "{head}");
        assert!(lower.contains("content-length: 0\r\n"));
        assert!(!lower.contains("x-secret") && !lower.contains("proxy-authorization"), "{head}");
        assert!(!lower.contains("host: proxy"), "{head}");
        assert!(head.ends_with("\r\n\r\n"));
    }

    #[test]
    fn a_refusal_is_passed_back_to_close() {
        let answer = Answer {
            code: 403,
            bytes: Bytes::new(),
            head_len: 0,
            headers: vec![
                ("content-type".into(), b"application/json".to_vec()),
                ("connection".into(), b"keep-alive".to_vec()),
                ("content-length".into(), b"12".to_vec()),
            ],
            reason: "Forbidden".into(),
            content_length: Some(12),
            chunked: false,
        };
        let head = String::from_utf8(answer.closing_head(12)).expect("text");
        assert_eq!(
            head,
            "HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\ncontent-length: 12\r\n\
             connection: close\r\n\r\n"
        );
    }

    /// A refusal's body, however the downstream framed it, is known whole
    /// before it is passed back with its length: a chunked one is not
    /// passed on raw under a head that no longer says `chunked`.
    #[test]
    fn a_refusals_body_is_taken_whole_whatever_its_framing() {
        let answer = |content_length, chunked| Answer {
            code: 403,
            bytes: Bytes::new(),
            head_len: 0,
            headers: Vec::new(),
            reason: "Forbidden".into(),
            content_length,
            chunked,
        };
        let chunked = answer(None, true);
        let raw = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        assert_eq!(chunked.body_in(raw, false).expect("framed"), Some(b"hello world".to_vec()));
        assert_eq!(chunked.body_in(&raw[..20], false).expect("framed"), None, "not all there");
        let trailers = b"2\r\nok\r\n0\r\nX-T: 1\r\n\r\n";
        assert_eq!(chunked.body_in(trailers, false).expect("framed"), Some(b"ok".to_vec()));
        assert!(chunked.body_in(b"zz\r\n", false).is_err());
        let sized = answer(Some(5), false);
        assert_eq!(sized.body_in(b"hel", false).expect("framed"), None);
        assert_eq!(sized.body_in(b"hello", false).expect("framed"), Some(b"hello".to_vec()));
        let until_close = answer(None, false);
        assert_eq!(until_close.body_in(b"abc", false).expect("framed"), None);
        assert_eq!(until_close.body_in(b"abc", true).expect("framed"), Some(b"abc".to_vec()));
    }
}
