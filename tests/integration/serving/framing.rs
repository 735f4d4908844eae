//! HTTP/1.1 framing and connection handling on every transport the proxy
//! serves HTTP/1.1 with: the direct writer (plain, ordinary requests),
//! actix-http after the direct writer handed a connection over, actix-http
//! alone (`directWrites: false`), and actix-http under TLS.
//!
//! Responses are read with [`http1::Conn`], which frames them strictly, so
//! a HEAD answer carrying a body or a GET answer missing its body breaks
//! the next response instead of passing unnoticed; each response is
//! compared with the answer to the same request sent alone.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use openapi_proxy::demo::{DemoSites, Routes, start_demo_sites, start_site, v3_routes};
use openapi_proxy::{Config, DocumentKey, ServingTls};

use crate::common::http1::{self, Conn, Ending, Response, head};
use crate::common::proxy::{TestProxy, config, downstream};
use crate::common::tls::Pki;

const GADGETS: &str = "apis/gadgets.example.com/v1";
const AGGREGATED: &str =
    "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// How the proxy carries a test's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    /// Plain HTTP, ordinary requests: the direct writer.
    Direct,
    /// Plain HTTP, the connection's first request has a (chunked, empty)
    /// body: the direct writer hands it to actix-http, which serves the
    /// rest of the connection.
    HandedOver,
    /// Plain HTTP with `directWrites: false`: actix-http alone.
    ActixOnly,
    /// HTTPS (HTTP/1.1, no ALPN): actix-http under rustls.
    Tls,
}

/// A proxy in front of the demo downstreams, serving `transport`.
struct Served {
    proxy: TestProxy,
    dialer: Dialer,
    _sites: DemoSites,
    _pki: Option<Pki>,
}

/// Opens connections to a [`Served`] proxy, from any thread.
#[derive(Clone)]
struct Dialer {
    addr: SocketAddr,
    tls: Option<Arc<rustls::ClientConfig>>,
    transport: Transport,
}

impl Served {
    async fn start(transport: Transport) -> Self {
        Self::start_with(transport, |_| {}).await
    }

    async fn start_with(transport: Transport, tune: impl FnOnce(&mut Config)) -> Self {
        let sites = start_demo_sites().expect("demo sites");
        let mut cfg = config(vec![
            downstream("gadgets", &sites.gadgets.url(), 2),
            downstream("widgets", &sites.widgets.url(), 1),
        ]);
        cfg.direct_writes = transport != Transport::ActixOnly;
        let pki = (transport == Transport::Tls).then(|| Pki::generate("framing"));
        if let Some(pki) = &pki {
            cfg.serving.tls = Some(ServingTls {
                cert_file: pki.server_cert.clone(),
                key_file: pki.server_key.clone(),
            });
        }
        tune(&mut cfg);
        let proxy = TestProxy::start_config(&cfg);
        proxy
            .wait_for("both downstreams published", |s| {
                s.openapi.contains_key(GADGETS) && s.discovery.groups.len() >= 2
            })
            .await;
        let tls = pki.as_ref().map(|p| http1::tls_client(&p.ca));
        let dialer = Dialer { addr: proxy.running.addr, tls, transport };
        Self { proxy, dialer, _sites: sites, _pki: pki }
    }

    /// Runs `talk` on the blocking pool (the proxy runs on this thread).
    async fn talk<T: Send + 'static>(&self, talk: impl FnOnce(Dialer) -> T + Send + 'static) -> T {
        let dialer = self.dialer.clone();
        actix_web::rt::task::spawn_blocking(move || talk(dialer)).await.expect("no panic")
    }

    /// Runs `talk` with a fresh connection ([`Dialer::dial`]) on the
    /// blocking pool.
    async fn with_conn<T: Send + 'static>(
        &self,
        talk: impl FnOnce(Conn) -> T + Send + 'static,
    ) -> T {
        self.talk(move |d| talk(d.dial())).await
    }
}

impl Dialer {
    /// A fresh connection, nothing sent.
    fn connect(&self) -> Conn {
        match &self.tls {
            Some(client) => Conn::tls(self.addr, client),
            None => Conn::plain(self.addr),
        }
    }

    /// A fresh connection; for [`Transport::HandedOver`], one already
    /// handed over to actix-http.
    fn dial(&self) -> Conn {
        self.hand_over(self.connect())
    }

    /// [`Dialer::dial`] with a receive window of a few KiB.
    fn dial_small_window(&self) -> Conn {
        let tcp = http1::connect_small_window(self.addr);
        self.hand_over(Conn::over(tcp, self.tls.as_ref()))
    }

    /// For [`Transport::HandedOver`], hands `conn` over to actix-http.
    fn hand_over(&self, mut conn: Conn) -> Conn {
        if self.transport == Transport::HandedOver {
            conn.send(&chunked_empty(&head("GET", "/healthz", &["Transfer-Encoding: chunked"])));
            let r = conn.response("GET").expect("the hand-over request is answered");
            assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]), "{r:?}");
        }
        conn
    }
}

/// `head` followed by an empty chunked body.
fn chunked_empty(head: &[u8]) -> Vec<u8> {
    [head, b"0\r\n\r\n"].concat()
}

/// One request of a pipeline.
#[derive(Debug, Clone)]
struct Req {
    method: &'static str,
    target: String,
    headers: Vec<String>,
    /// Sent with `Transfer-Encoding: chunked` and an empty body.
    chunked: bool,
}

impl Req {
    fn new(method: &'static str, target: &str, headers: &[&str]) -> Self {
        let headers = headers.iter().map(|h| (*h).to_owned()).collect();
        Self { method, target: target.to_owned(), headers, chunked: false }
    }

    fn chunked(mut self) -> Self {
        self.chunked = true;
        self
    }

    fn bytes(&self, close: bool) -> Vec<u8> {
        let mut lines: Vec<&str> = self.headers.iter().map(String::as_str).collect();
        if self.chunked {
            lines.push("Transfer-Encoding: chunked");
        }
        if close {
            lines.push("Connection: close");
        }
        let h = head(self.method, &self.target, &lines);
        if self.chunked { chunked_empty(&h) } else { h }
    }
}

/// The answer to `req` as a GET sent alone on its own connection: what the
/// same request must get in a pipeline (without a body for HEAD).
fn reference(conn: &mut Conn, req: &Req) -> Response {
    let alone = Req { method: "GET", chunked: false, ..req.clone() };
    conn.send(&alone.bytes(true));
    conn.response("GET").unwrap_or_else(|e| panic!("{} alone: {e}", req.target))
}

/// `got` answers `req` as `alone` (the GET sent alone) says it must.
fn assert_answers(req: &Req, got: &Response, alone: &Response) {
    let what = format!("{} {} {:?}", req.method, req.target, req.headers);
    assert_eq!(got.status_line, alone.status_line, "{what}: {got:?}");
    for name in ["content-length", "content-type", "content-encoding", "etag", "vary", "location"] {
        assert_eq!(got.values(name), alone.values(name), "{what}: {name} of {got:?}");
    }
    if req.method == "HEAD" {
        assert!(got.body.is_empty(), "{what}");
    } else {
        assert!(got.body == alone.body, "{what}: the body is not the one sent alone");
    }
}

/// Sends `pipeline` on one connection in one write, reads the answers in
/// order, then checks that the connection still frames a next request.
fn check_pipeline(mut conn: Conn, references: &[Response], pipeline: &[Req]) {
    conn.send(&pipeline.iter().flat_map(|r| r.bytes(false)).collect::<Vec<u8>>());
    for (i, (req, alone)) in pipeline.iter().zip(references).enumerate() {
        let got = conn.response(req.method).unwrap_or_else(|e| {
            panic!("answer {i} of {pipeline:?}, to {} {}: {e}", req.method, req.target)
        });
        assert_answers(req, &got, alone);
    }
    // Nothing left over from the pipeline: the next answer is the next one.
    conn.send(&head("GET", "/healthz", &[]));
    let next = conn.response("GET").unwrap_or_else(|e| panic!("after {pipeline:?}: {e}"));
    assert_eq!((next.status, next.body.as_slice()), (200, &b"ok"[..]), "after {pipeline:?}");
}

/// The pipelines each transport must frame: the reported ones (a GET with
/// a chunked body, a GET, a HEAD; GET, HEAD, GET), one the direct writer
/// hands over in the middle, and HEADs between GETs of every kind of
/// answer (200 plain and gzip, 304, 404, 406).
async fn pipelines(served: &Served) -> Vec<Vec<Req>> {
    let etag = served
        .with_conn(|mut c| reference(&mut c, &Req::new("GET", "/openapi/v3", &[])))
        .await
        .header("etag")
        .expect("the root has an ETag")
        .to_owned();
    let inm = format!("If-None-Match: {etag}");
    let doc = format!("/openapi/v3/{GADGETS}");
    vec![
        vec![
            Req::new("GET", "/api", &[]).chunked(),
            Req::new("GET", "/version", &[]),
            Req::new("HEAD", "/api", &[]),
        ],
        vec![
            Req::new("GET", "/api", &[]),
            Req::new("HEAD", "/api", &[]),
            Req::new("GET", "/version", &[]),
        ],
        vec![
            Req::new("GET", "/version", &[]),
            Req::new("HEAD", "/api", &[]),
            Req::new("GET", "/api", &[]).chunked(),
            Req::new("HEAD", "/version", &[]),
            Req::new("GET", "/openapi/v3", &[]),
            Req::new("HEAD", "/apis", &[]),
        ],
        vec![
            Req::new("HEAD", "/openapi/v3", &[]),
            Req::new("GET", &doc, &["Accept-Encoding: gzip"]),
            Req::new("HEAD", &doc, &["Accept-Encoding: gzip"]),
            Req::new("GET", "/openapi/v3", &[&inm]),
            Req::new("HEAD", "/apis", &[AGGREGATED]),
            Req::new("GET", "/apis", &[AGGREGATED]),
            Req::new("HEAD", "/nothing", &[]),
            Req::new("GET", "/nothing", &[]),
            Req::new("HEAD", &doc, &["Accept: text/html"]),
            Req::new("GET", &doc, &["Accept: text/html"]),
            Req::new("HEAD", "/version", &[]),
        ],
    ]
}

async fn pipelined_answers_are_framed(transport: Transport) {
    let served = Served::start(transport).await;
    for pipeline in pipelines(&served).await {
        let mut references = Vec::new();
        for req in &pipeline {
            let req = req.clone();
            references.push(served.with_conn(move |mut c| reference(&mut c, &req)).await);
        }
        served.with_conn(move |c| check_pipeline(c, &references, &pipeline)).await;
    }
}

#[actix_web::test]
async fn pipelined_heads_and_gets_are_framed_by_the_direct_writer() {
    pipelined_answers_are_framed(Transport::Direct).await;
}

#[actix_web::test]
async fn pipelined_heads_and_gets_are_framed_after_the_hand_over() {
    pipelined_answers_are_framed(Transport::HandedOver).await;
}

#[actix_web::test]
async fn pipelined_heads_and_gets_are_framed_by_actix_http_alone() {
    pipelined_answers_are_framed(Transport::ActixOnly).await;
}

#[actix_web::test]
async fn pipelined_heads_and_gets_are_framed_over_tls() {
    pipelined_answers_are_framed(Transport::Tls).await;
}

/// Ways of saying `close`: any case, beside other options, on a second
/// `Connection` line; and on a request the direct writer hands over (it
/// has a body).
fn closing_requests() -> Vec<Req> {
    let closing: &[&[&str]] = &[
        &["Connection: close"],
        &["Connection: Close"],
        &["Connection: keep-alive, close"],
        &["Connection: close, TE", "TE: trailers"],
        &["Connection: keep-alive", "Connection: close"],
    ];
    let mut requests: Vec<Req> = closing.iter().map(|h| Req::new("GET", "/version", h)).collect();
    requests.push(Req::new("GET", "/version", &["Connection: close"]).chunked());
    requests
}

/// `Connection: close` (RFC 9112 §9.6): the request is answered, the
/// answer says `close`, and the server closes the connection — also when
/// another request follows in the same write, which is not answered.
async fn connection_close_closes(transport: Transport) {
    let served = Served::start(transport).await;
    let mut kept = Vec::new();
    for closing in closing_requests() {
        for follow in [false, true] {
            let req = closing.clone();
            let ending = served
                .with_conn(move |mut conn| {
                    let mut bytes = req.bytes(false);
                    if follow {
                        bytes.extend(head("GET", "/healthz", &[]));
                    }
                    conn.send(&bytes);
                    let answer = conn.response("GET").expect("the closing request is answered");
                    assert_eq!(answer.status, 200, "{answer:?}");
                    assert!(answer.closes(), "the answer says close: {answer:?}");
                    conn.ending(Duration::from_secs(5))
                })
                .await;
            let ending = match ending {
                Ending::Bytes(b) => format!("more bytes: {}", String::from_utf8_lossy(&b)),
                other => format!("{other:?}"),
            };
            if ending != "Eof" {
                kept.push(format!("{closing:?}, a request following: {follow}: {ending}"));
            }
        }
    }
    assert!(kept.is_empty(), "{transport:?} did not close:\n{}", kept.join("\n"));
}

#[actix_web::test]
async fn connection_close_closes_on_the_direct_writer() {
    connection_close_closes(Transport::Direct).await;
}

#[actix_web::test]
async fn connection_close_closes_after_the_hand_over() {
    connection_close_closes(Transport::HandedOver).await;
}

#[actix_web::test]
async fn connection_close_closes_on_actix_http_alone() {
    connection_close_closes(Transport::ActixOnly).await;
}

#[actix_web::test]
async fn connection_close_closes_over_tls() {
    connection_close_closes(Transport::Tls).await;
}

/// Connections one worker serves in the eviction tests (one worker, so
/// which connection is idle longest is known).
const LIMIT: usize = 8;

async fn at_a_limit_of_eight(transport: Transport) -> Served {
    Served::start_with(transport, limit_of_eight).await
}

fn limit_of_eight(cfg: &mut Config) {
    cfg.serving.limits.workers = 1;
    cfg.serving.limits.max_connections = LIMIT;
    // Connections wait in the middle of a request on purpose; a loaded
    // machine must not time them out meanwhile.
    cfg.serving.limits.request_timeout = Duration::from_secs(120);
}

/// A kept-alive GET /healthz on `conn`, answered.
fn healthz(conn: &mut Conn, what: &str) {
    conn.send(&head("GET", "/healthz", &[]));
    let r = conn.response("GET").unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]), "{what}: {r:?}");
}

/// At the connection limit with every connection idle between requests,
/// a new client is served at once (not after the keep-alive timeout, 90 s),
/// and the connection idle longest is the one closed for it.
async fn idle_connections_make_room(transport: Transport) {
    let served = at_a_limit_of_eight(transport).await;
    served
        .talk(move |d| {
            let mut idle: Vec<Conn> = (0..LIMIT)
                .map(|i| {
                    let mut c = d.dial();
                    healthz(&mut c, &format!("idle connection {i}"));
                    c
                })
                .collect();
            for newcomer in 0..2 {
                // Answered within the read timeout (a liveness bound, far
                // below the keep-alive timeout it would wait for).
                let mut c = d.dial();
                healthz(&mut c, &format!("newcomer {newcomer}, at the limit"));
                // Its slot was freed by the connection idle longest.
                let ending = idle[newcomer].ending(Duration::from_secs(5));
                assert_eq!(ending, Ending::Eof, "{transport:?}: idle connection {newcomer}");
                idle.push(c);
            }
            // The others were left alone.
            for (i, c) in idle.iter_mut().enumerate().skip(2) {
                healthz(c, &format!("connection {i}, kept"));
            }
        })
        .await;
}

#[actix_web::test]
async fn idle_connections_make_room_at_the_limit_on_the_direct_writer() {
    idle_connections_make_room(Transport::Direct).await;
}

#[actix_web::test]
async fn idle_connections_make_room_at_the_limit_after_the_hand_over() {
    idle_connections_make_room(Transport::HandedOver).await;
}

#[actix_web::test]
async fn idle_connections_make_room_at_the_limit_on_actix_http_alone() {
    idle_connections_make_room(Transport::ActixOnly).await;
}

#[actix_web::test]
async fn idle_connections_make_room_at_the_limit_over_tls() {
    idle_connections_make_room(Transport::Tls).await;
}

/// At the limit with every connection in the middle of a request, none is
/// closed for a new client: it waits until one has been answered, and that
/// one, idle then, makes room.
async fn busy_connections_are_never_evicted(transport: Transport) {
    let served = at_a_limit_of_eight(transport).await;
    served
        .talk(move |d| {
            let mut busy: Vec<Conn> = (0..LIMIT)
                .map(|_| {
                    let mut c = d.dial();
                    c.send(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n");
                    c
                })
                .collect();
            let mut newcomer = d.connect();
            newcomer.send(&head("GET", "/healthz", &[]));
            // Not served while every slot is busy (a wait that can only
            // miss a wrong answer, never invent one).
            assert_eq!(newcomer.ending(Duration::from_millis(300)), Ending::Open);
            // One request completes; answered, that connection is idle and
            // makes room for the waiting one.
            busy[3].send(b"\r\n");
            let r = busy[3].response("GET").expect("the completed request is answered");
            assert_eq!(r.status, 200, "{r:?}");
            let r = newcomer.response("GET").expect("the newcomer is served");
            assert_eq!(r.status, 200, "{r:?}");
            assert_eq!(busy[3].ending(Duration::from_secs(5)), Ending::Eof);
            // The others were in the middle of a request all along, and
            // finish it.
            for (i, c) in busy.iter_mut().enumerate().filter(|(i, _)| *i != 3) {
                c.send(b"\r\n");
                let r = c.response("GET").unwrap_or_else(|e| panic!("busy connection {i}: {e}"));
                assert_eq!(r.status, 200, "busy connection {i}: {r:?}");
            }
        })
        .await;
}

#[actix_web::test]
async fn busy_connections_are_never_evicted_on_the_direct_writer() {
    busy_connections_are_never_evicted(Transport::Direct).await;
}

#[actix_web::test]
async fn busy_connections_are_never_evicted_after_the_hand_over() {
    busy_connections_are_never_evicted(Transport::HandedOver).await;
}

#[actix_web::test]
async fn busy_connections_are_never_evicted_on_actix_http_alone() {
    busy_connections_are_never_evicted(Transport::ActixOnly).await;
}

#[actix_web::test]
async fn busy_connections_are_never_evicted_over_tls() {
    busy_connections_are_never_evicted(Transport::Tls).await;
}

/// A document larger than the socket buffers between a client that does
/// not read and the proxy (Linux grows a send buffer to
/// `net.ipv4.tcp_wmem`'s maximum, 4 MiB by default; the client's receive
/// buffer is a few KiB).
const BIG: &str = "apis/big.example.com/v1";

fn big_document() -> Bytes {
    let padding = "x".repeat(8 << 20);
    Bytes::from(format!(
        r#"{{"openapi":"3.0.0","info":{{"title":"big","version":"v1"}},"paths":{{}},"x-padding":"{padding}"}}"#
    ))
}

/// A connection in the middle of writing an answer its client does not
/// read yet is not idle, however long ago its request came: at the limit,
/// a new client gets the place of a connection idle since later, and the
/// writing one is left to finish (and stays open). Run on actix-http's
/// transports, where idleness is inferred from the stream (the direct
/// writer is idle only inside its wait for a next request), with and
/// without TLS's own buffering.
async fn connections_writing_an_answer_are_never_evicted(transport: Transport) {
    let key = DocumentKey::parse(BIG).expect("key");
    let big = start_site(Routes::default()).expect("site");
    big.routes.replace(v3_routes(&BTreeMap::from([(key, big_document())])));
    let url = big.url();
    let served = Served::start_with(transport, |cfg| {
        limit_of_eight(cfg);
        cfg.downstreams.push(downstream("big", &url, 3));
    })
    .await;
    served.proxy.wait_for("the big document is published", |s| s.openapi.contains_key(BIG)).await;
    served
        .talk(move |d| {
            let mut reader = d.dial_small_window();
            reader.send(&head("GET", &format!("/openapi/v3/{BIG}"), &[]));
            // The answer has begun: its head is here, megabytes of body are
            // stuck behind the small window.
            let mut answer = reader.response_head().expect("the big answer's head");
            assert_eq!(answer.status, 200, "{answer:?}");
            let mut idle = d.dial();
            healthz(&mut idle, "the idle connection");
            let mut busy: Vec<Conn> = (2..LIMIT)
                .map(|_| {
                    let mut c = d.dial();
                    c.send(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n");
                    c
                })
                .collect();
            let mut newcomer = d.connect();
            healthz(&mut newcomer, "the newcomer, while the big answer is unread");
            assert_eq!(idle.ending(Duration::from_secs(5)), Ending::Eof, "the idle one made room");
            reader.response_body(&mut answer, "GET").expect("the big answer's body");
            assert_eq!(answer.body.len(), big_document().len());
            healthz(&mut reader, "the connection that wrote the big answer");
            for (i, c) in busy.iter_mut().enumerate() {
                c.send(b"\r\n");
                let r = c.response("GET").unwrap_or_else(|e| panic!("busy connection {i}: {e}"));
                assert_eq!(r.status, 200, "busy connection {i}: {r:?}");
            }
        })
        .await;
}

#[actix_web::test]
async fn connections_writing_an_answer_are_never_evicted_on_actix_http_alone() {
    connections_writing_an_answer_are_never_evicted(Transport::ActixOnly).await;
}

#[actix_web::test]
async fn connections_writing_an_answer_are_never_evicted_over_tls() {
    connections_writing_an_answer_are_never_evicted(Transport::Tls).await;
}
