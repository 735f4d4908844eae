//! The bounds on what stays open: the HTTP/2 streams of one connection
//! (`maxStreamsPerConnection`, advertised in SETTINGS) and the
//! long-running passes of all connections together
//! (`maxLongRunningRequests`, 429 past it), and one client address's share
//! of the in-flight places (`maxRequestsInflightPerClient`,
//! `maxLongRunningRequestsPerClient`). Two HTTP/2 connections once held
//! 16,947 watches and the proxy ran out of file descriptors; 600 slow
//! uploads from one client once took every short place.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::StatusCode;
use openapi_proxy::ServingTls;
use openapi_proxy::demo::Route;

use super::requests::{discovery, front_door, routed};
use crate::common::http1::tls_client;
use crate::common::proxy::{TestProxy, downstream, eventually, request, site};
use crate::common::tls::Pki;

/// Past `maxLongRunningRequests` a new watch is refused with 429 and
/// `Retry-After: 1`, counted by its reason, while the watches already
/// open go on and another client's metadata and short requests are
/// served.
#[actix_web::test]
async fn past_the_long_running_bound_a_watch_gets_429_and_others_are_served() {
    const BOUND: usize = 3;
    const WATCHES: usize = 6;
    let kube = site();
    discovery(&kube.routes, true, &[]);
    kube.routes.set("/api/v1/pods", Route::json("{}").delayed(Duration::from_secs(3)));
    kube.routes.set("/api/v1/namespaces/default/pods", Route::json(r#"{"kind":"PodList"}"#));
    let mut cfg = front_door(vec![downstream("kube", &kube.url(), 10)]);
    cfg.serving.limits.max_long_running_requests = BOUND;
    let proxy = TestProxy::start_config(&cfg);
    routed(&proxy, "api/v1", "kube").await;
    let watch = format!("{}/api/v1/pods?watch=1", proxy.base);
    let watches = futures_util::future::join_all((0..WATCHES).map(|_| request("GET", &watch, &[])));
    let others = async {
        eventually("the bound's watches open at the downstream", || {
            kube.routes.most_in_flight() >= BOUND
        })
        .await;
        let metadata = proxy.get("/api", &[]).await.status;
        let short = proxy.get("/api/v1/namespaces/default/pods", &[]).await.status;
        (metadata, short)
    };
    let (watches, (metadata, short)) = futures_util::future::join(watches, others).await;
    assert_eq!((metadata, short), (StatusCode::OK, StatusCode::OK), "another client is served");
    let ok = watches.iter().filter(|a| a.status == StatusCode::OK).count();
    let refused: Vec<_> =
        watches.iter().filter(|a| a.status == StatusCode::TOO_MANY_REQUESTS).collect();
    assert_eq!(
        (ok, refused.len()),
        (BOUND, WATCHES - BOUND),
        "{:?}",
        watches.iter().map(|a| a.status).collect::<Vec<_>>()
    );
    assert_eq!(refused[0].header("retry-after"), "1");
    assert_eq!(refused[0].json()["reason"], "TooManyRequests");
    assert!(
        refused[0].json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("limits.maxLongRunningRequests")),
        "{}",
        refused[0].json()
    );
    let metrics = proxy.running.state.metrics.render();
    assert!(
        metrics.contains(&format!(
            r#"openapi_proxy_front_door_refused_total{{reason="max_long_running_requests"}} {}"#,
            WATCHES - BOUND
        )),
        "{metrics}"
    );
    assert_eq!(request("GET", &watch, &[]).await.status, StatusCode::OK, "the places came back");
}

/// A front door over HTTPS with `limit` streams per connection, in front
/// of a downstream whose pod list answers after `delay`, and a TLS
/// connection to it that negotiated HTTP/2.
async fn h2_front_door(
    pki_name: &str,
    limit: u32,
    delay: Duration,
) -> (TestProxy, openapi_proxy::demo::Site, tokio_rustls::client::TlsStream<tokio::net::TcpStream>)
{
    let pki = Pki::generate(pki_name);
    let kube = site();
    discovery(&kube.routes, true, &[]);
    kube.routes.set("/api/v1/pods", Route::json("{}").delayed(delay));
    let mut cfg = over_https(front_door(vec![downstream("kube", &kube.url(), 10)]), &pki);
    cfg.serving.limits.max_streams_per_connection = limit;
    let proxy = TestProxy::start_config(&cfg);
    routed(&proxy, "api/v1", "kube").await;
    let io = h2_connection(&pki, proxy.running.addr).await;
    (proxy, kube, io)
}

/// A front door over HTTPS in front of the raw downstream
/// (`requests::raw_downstream`: quiet and bursty watches), what the
/// downstream reports, and a TLS connection to the proxy that negotiated
/// HTTP/2.
async fn h2_front_door_to_raw(
    pki_name: &str,
) -> (
    TestProxy,
    std::sync::mpsc::Receiver<String>,
    tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
) {
    let (tx, heads) = std::sync::mpsc::channel();
    let owner = super::requests::raw_downstream(tx, Arc::default());
    let pki = Pki::generate(pki_name);
    let cfg = over_https(front_door(vec![downstream("raw", &format!("http://{owner}"), 0)]), &pki);
    let proxy = TestProxy::start_config(&cfg);
    routed(&proxy, "api/v1", "raw").await;
    let io = h2_connection(&pki, proxy.running.addr).await;
    (proxy, heads, io)
}

/// `cfg` serving HTTPS with `pki`'s server certificate.
fn over_https(mut cfg: openapi_proxy::Config, pki: &Pki) -> openapi_proxy::Config {
    cfg.serving.tls =
        Some(ServingTls { cert_file: pki.server_cert.clone(), key_file: pki.server_key.clone() });
    cfg
}

/// A TLS connection to `addr` that offers only `h2`.
async fn h2_connection(
    pki: &Pki,
    addr: std::net::SocketAddr,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let mut tls = (*tls_client(&pki.ca)).clone();
    tls.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    tokio_rustls::TlsConnector::from(Arc::new(tls)).connect(name, tcp).await.expect("TLS")
}

/// An HTTP/2 client opening more watches than `maxStreamsPerConnection`
/// on one connection has at most that many open at once: the server's
/// SETTINGS say so, and the client (the `h2` crate, as Go's does) waits
/// for a stream to end before it opens the next. Every watch is answered
/// in the end.
#[actix_web::test]
async fn one_http2_connection_has_at_most_its_stream_limit_open() {
    const LIMIT: u32 = 3;
    const WATCHES: usize = 12;
    let (_proxy, kube, io) = h2_front_door("h2-streams", LIMIT, Duration::from_millis(1500)).await;
    assert_eq!(io.get_ref().1.alpn_protocol(), Some(b"h2".as_slice()));
    let (send, mut connection) = h2::client::handshake(io).await.expect("HTTP/2 handshake");
    // What the server advertised, as the client's connection applied it.
    let advertised = std::rc::Rc::new(std::cell::Cell::new(0usize));
    let seen = std::rc::Rc::clone(&advertised);
    actix_web::rt::spawn(std::future::poll_fn(move |cx| {
        let polled = std::pin::Pin::new(&mut connection).poll(cx);
        seen.set(connection.max_concurrent_send_streams());
        polled.map(|_| ())
    }));
    let get = |path: &'static str| {
        let send = send.clone();
        async move {
            let mut send = send.ready().await.expect("ready");
            let req =
                http::Request::get(format!("https://127.0.0.1{path}")).body(()).expect("request");
            let (answer, _) = send.send_request(req, true).expect("send");
            let answer = answer.await.expect("an answer");
            let status = answer.status().as_u16();
            let mut body = answer.into_body();
            while let Some(chunk) = body.data().await {
                let chunk = chunk.expect("body");
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            status
        }
    };
    // A first answer: the server's SETTINGS came before it.
    assert_eq!(get("/api").await, 200);
    assert_eq!(advertised.get(), LIMIT as usize, "SETTINGS_MAX_CONCURRENT_STREAMS");
    let answers =
        futures_util::future::join_all((0..WATCHES).map(|_| get("/api/v1/pods?watch=1"))).await;
    assert!(answers.iter().all(|s| *s == 200), "{answers:?}");
    // The downstream counts a request until its handler is dropped, a
    // moment after the answer's end reached the client, which may have
    // opened the next streams by then: one wave may overlap the next, but
    // never all the watches at once as without the limit.
    let most = kube.routes.most_in_flight();
    assert!(
        (1..=2 * LIMIT as usize).contains(&most),
        "{most} watches of one connection were open at once, with a limit of {LIMIT}"
    );
}

/// A client that ignores the SETTINGS' stream limit (it sends its
/// requests without waiting for them) gets no more long-running passes
/// on one connection than the limit: the rest are refused with 429,
/// counted by reason, and never reach the downstream.
#[actix_web::test]
async fn a_client_ignoring_the_stream_limit_gets_no_more_watches_than_it() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const LIMIT: u32 = 3;
    const WATCHES: u32 = 8;
    let (proxy, kube, io) = h2_front_door("h2-ignored", LIMIT, Duration::from_secs(3)).await;
    let (mut read, mut write) = tokio::io::split(io);
    // The preface, empty SETTINGS, an acknowledgement of the server's, and
    // every request at once: HEADERS frames (END_STREAM | END_HEADERS)
    // with a literal HPACK block (GET, https, the path, the authority).
    let mut frames = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    frames.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    frames.extend_from_slice(&[0, 0, 0, 4, 1, 0, 0, 0, 0]);
    let path = b"/api/v1/pods?watch=1";
    let authority = b"127.0.0.1";
    let mut block = vec![0x82, 0x87, 0x04, u8::try_from(path.len()).expect("short")];
    block.extend_from_slice(path);
    block.extend_from_slice(&[0x01, u8::try_from(authority.len()).expect("short")]);
    block.extend_from_slice(authority);
    for i in 0..WATCHES {
        let stream = 2 * i + 1;
        frames.extend_from_slice(&[0, 0, u8::try_from(block.len()).expect("short"), 1, 0x5]);
        frames.extend_from_slice(&stream.to_be_bytes());
        frames.extend_from_slice(&block);
    }
    write.write_all(&frames).await.expect("frames");
    write.flush().await.expect("flush");
    actix_web::rt::spawn(async move {
        let mut buf = [0u8; 4096];
        while read.read(&mut buf).await.is_ok_and(|n| n > 0) {}
        drop(write);
    });
    let refused = format!(
        r#"openapi_proxy_front_door_refused_total{{reason="max_streams_per_connection"}} {}"#,
        WATCHES - LIMIT
    );
    eventually("the streams past the limit refused", || {
        proxy.running.state.metrics.render().contains(&refused)
    })
    .await;
    eventually("the limit's watches at the downstream", || {
        kube.routes.seen().iter().filter(|s| s.uri.contains("watch")).count() >= LIMIT as usize
    })
    .await;
    let passed = kube.routes.seen().iter().filter(|s| s.uri.contains("watch")).count();
    assert_eq!(passed, LIMIT as usize, "watches of one connection at the downstream");
}

/// A request head sent from `source` (a loopback address: another client
/// to the proxy) on a connection of its own, kept open for the caller.
async fn send_from(source: &str, proxy: &TestProxy, head: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt as _;
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind(format!("{source}:0").parse().expect("source")).expect("bind the source");
    let mut stream = socket.connect(proxy.running.addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("send");
    stream
}

/// The status and the whole answer to a `GET path` from `source`, on a
/// connection that closes after it.
async fn get_from(source: &str, proxy: &TestProxy, path: &str) -> (u16, String) {
    use tokio::io::AsyncReadExt as _;
    let head = format!("GET {path} HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n");
    let mut stream = send_from(source, proxy, &head).await;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .expect("an answer in time")
        .expect("read");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let code = answer.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, answer)
}

/// The value of the metrics line starting with `series`, 0 when absent.
fn metric(proxy: &TestProxy, series: &str) -> u64 {
    let metrics = proxy.running.state.metrics.render();
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok()))
        .unwrap_or(0)
}

/// Slow uploads (a byte, then nothing) from one client address take at
/// most `maxRequestsInflightPerClient` of the in-flight places: past it
/// that client's requests get 429 with `Retry-After: 1`, counted as
/// `max_requests_inflight_per_client`, while another client (127.0.0.2)
/// is served from the places left; once the uploads end the places come
/// back. Without the share the uploads took every place and the other
/// client got 429.
#[actix_web::test]
async fn slow_uploads_from_one_client_take_its_share_and_another_is_served() {
    const TOTAL: usize = 4;
    const SHARE: usize = 2;
    let kube = site();
    discovery(&kube.routes, true, &[]);
    kube.routes.set("/api/v1/namespaces/default/pods", Route::json(r#"{"kind":"PodList"}"#));
    let mut cfg = front_door(vec![downstream("kube", &kube.url(), 10)]);
    cfg.serving.limits.max_requests_inflight = TOTAL;
    cfg.serving.limits.max_requests_inflight_per_client = SHARE;
    let proxy = TestProxy::start_config(&cfg);
    routed(&proxy, "api/v1", "kube").await;
    let upload = "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: proxy\r\n\
                  Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{";
    let mut uploads = Vec::new();
    for _ in 0..TOTAL {
        uploads.push(send_from("127.0.0.1", &proxy, upload).await);
    }
    let short = r#"openapi_proxy_front_door_inflight{class="short"}"#;
    let by_share =
        r#"openapi_proxy_front_door_refused_total{reason="max_requests_inflight_per_client"}"#;
    eventually("the uploads hold their places or are refused", || {
        metric(&proxy, short) + metric(&proxy, by_share) == TOTAL as u64
    })
    .await;
    assert_eq!(metric(&proxy, short), SHARE as u64, "the uploads hold the share, no more");
    let pods = "/api/v1/namespaces/default/pods";
    let (other, answer) = get_from("127.0.0.2", &proxy, pods).await;
    assert_eq!(other, 200, "another client is served: {answer}");
    let (same, answer) = get_from("127.0.0.1", &proxy, pods).await;
    assert_eq!(same, 429, "{answer}");
    let lower = answer.to_ascii_lowercase();
    assert!(lower.contains("\r\nretry-after: 1\r\n"), "{answer}");
    assert!(answer.contains("limits.maxRequestsInflightPerClient"), "{answer}");
    assert!(answer.contains(r#""reason":"TooManyRequests""#), "{answer}");
    assert_eq!(metric(&proxy, by_share), (TOTAL - SHARE + 1) as u64);
    drop(uploads);
    eventually("the uploads' places come back", || metric(&proxy, short) == 0).await;
    assert_eq!(get_from("127.0.0.1", &proxy, pods).await.0, 200, "the share came back");
}

/// Watches from one client address hold at most
/// `maxLongRunningRequestsPerClient` places; past it its watch gets 429,
/// counted as `max_long_running_requests_per_client`, while another
/// client's watch is passed on.
#[actix_web::test]
async fn watches_from_one_client_take_its_share_and_another_is_served() {
    const SHARE: usize = 2;
    let kube = site();
    discovery(&kube.routes, true, &[]);
    kube.routes.set("/api/v1/pods", Route::json("{}").delayed(Duration::from_secs(3)));
    let mut cfg = front_door(vec![downstream("kube", &kube.url(), 10)]);
    cfg.serving.limits.max_long_running_requests = 10;
    cfg.serving.limits.max_long_running_requests_per_client = SHARE;
    let proxy = TestProxy::start_config(&cfg);
    routed(&proxy, "api/v1", "kube").await;
    let watch = "/api/v1/pods?watch=1";
    let held =
        futures_util::future::join_all((0..SHARE).map(|_| get_from("127.0.0.1", &proxy, watch)));
    let others = async {
        eventually("the share's watches open at the downstream", || {
            kube.routes.most_in_flight() >= SHARE
        })
        .await;
        let (same, other) = futures_util::future::join(
            get_from("127.0.0.1", &proxy, watch),
            get_from("127.0.0.2", &proxy, watch),
        )
        .await;
        (same, other)
    };
    let (held, ((same, answer), (other, _))) = futures_util::future::join(held, others).await;
    assert!(held.iter().all(|(code, _)| *code == 200), "{held:?}");
    assert_eq!((same, other), (429, 200), "{answer}");
    assert!(answer.contains("limits.maxLongRunningRequestsPerClient"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("\r\nretry-after: 1\r\n"), "{answer}");
    let by_share =
        r#"openapi_proxy_front_door_refused_total{reason="max_long_running_requests_per_client"}"#;
    assert_eq!(metric(&proxy, by_share), 1);
}

/// A quiet watch open over one HTTP/2 connection to a front door in front
/// of the raw downstream, its first event read.
struct QuietH2Watch {
    proxy: TestProxy,
    heads: std::sync::mpsc::Receiver<String>,
    send: h2::client::SendRequest<bytes::Bytes>,
    /// Drives the connection; aborted, the connection closes.
    driving: actix_web::rt::task::JoinHandle<()>,
    body: h2::RecvStream,
}

impl QuietH2Watch {
    async fn open(name: &str) -> Self {
        let (proxy, heads, io) = h2_front_door_to_raw(name).await;
        let (send, connection) = h2::client::handshake(io).await.expect("HTTP/2 handshake");
        let driving = actix_web::rt::spawn(async move {
            let _ = connection.await;
        });
        let mut send = send.ready().await.expect("ready");
        let req =
            http::Request::get("https://127.0.0.1/api/v1/quiet?watch=1").body(()).expect("req");
        let (answer, _) = send.send_request(req, true).expect("send");
        let answer = answer.await.expect("an answer");
        assert_eq!(answer.status().as_u16(), 200);
        let mut body = answer.into_body();
        let mut seen = Vec::new();
        while !seen.windows(5).any(|w| w == b"ADDED") {
            let chunk = tokio::time::timeout(Duration::from_secs(10), body.data())
                .await
                .expect("the event in time")
                .expect("the watch ended early")
                .expect("body");
            seen.extend_from_slice(&chunk);
        }
        assert_eq!(long_running(&proxy), Some(1.0));
        Self { proxy, heads, send, driving, body }
    }
}

/// The long-running passes in flight at `proxy`.
fn long_running(proxy: &TestProxy) -> Option<f64> {
    let long = r#"openapi_proxy_front_door_inflight{class="long_running"}"#;
    let text = proxy.running.state.metrics.render();
    text.lines().find_map(|l| l.strip_prefix(long)?.trim().parse::<f64>().ok())
}

/// An HTTP/2 client whose connection closes during a quiet watch ends the
/// exchange as an HTTP/1 client does: the downstream's connection is
/// closed and the watch's place in flight is free within a second or two,
/// not when the downstream next sends an event.
#[actix_web::test]
async fn an_http2_client_closing_during_a_quiet_watch_ends_the_downstream_exchange() {
    let QuietH2Watch { proxy, heads, send, driving, body } =
        QuietH2Watch::open("h2-quiet-close").await;
    // The client goes: its connection (and with it every stream) closes.
    driving.abort();
    drop((body, send));
    assert!(
        super::requests::seen_within(heads, "closed /api/v1/quiet", Duration::from_secs(2)).await,
        "the downstream's connection stayed open after the HTTP/2 client left"
    );
    eventually("the watch's place is free", || long_running(&proxy) == Some(0.0)).await;
}

/// An HTTP/2 client that resets one quiet watch's stream (what client-go
/// does when a watch's context is cancelled), keeping its connection for
/// others, ends that exchange too: the downstream's connection is closed
/// and the place freed within a second or two, while the connection
/// still carries another request.
#[actix_web::test]
async fn an_http2_client_resetting_a_quiet_watch_ends_the_downstream_exchange() {
    let QuietH2Watch { proxy, heads, send, driving, body } =
        QuietH2Watch::open("h2-quiet-reset").await;
    // The watch's stream alone goes: h2 resets a stream (CANCEL) whose
    // last handle is dropped before its end.
    drop(body);
    assert!(
        super::requests::seen_within(heads, "closed /api/v1/quiet", Duration::from_secs(3)).await,
        "the downstream's connection stayed open after the client reset the stream"
    );
    eventually("the watch's place is free", || long_running(&proxy) == Some(0.0)).await;
    let mut send = send.ready().await.expect("the connection still takes requests");
    let req = http::Request::get("https://127.0.0.1/api/v1").body(()).expect("req");
    let (answer, _) = send.send_request(req, true).expect("send");
    let answer = answer.await.expect("an answer on the same connection");
    assert_eq!(answer.status().as_u16(), 200);
    driving.abort();
}

/// A stream that stops reading once told to, as a client that does not
/// read its connection any more.
struct Pausable<T> {
    inner: T,
    paused: Arc<std::sync::atomic::AtomicBool>,
    /// The reader parked while paused.
    parked: Arc<std::sync::Mutex<Option<std::task::Waker>>>,
}

impl<T: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Pausable<T> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.paused.load(std::sync::atomic::Ordering::SeqCst) {
            *self.parked.lock().expect("parked") = Some(cx.waker().clone());
            return std::task::Poll::Pending;
        }
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Pausable<T> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Bursty watches on one HTTP/2 connection whose client opened its
/// flow-control windows wide and then stopped reading: the proxy holds a
/// bounded amount per connection, not each stream's send buffer full
/// (h2 buffers up to 400 KiB a stream for a window that allows it).
#[actix_web::test]
async fn bursts_on_an_http2_connection_that_is_not_read_hold_little() {
    use crate::common::memory::peak_rss_kib;

    const WATCHES: u64 = 40;
    let (tx, _heads) = std::sync::mpsc::channel();
    let owner = super::requests::raw_downstream(tx, Arc::default());
    let pki = Pki::generate("h2-bursts");
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("front-door-serve");
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join(format!("h2-bursts-{}.yaml", std::process::id()));
    std::fs::write(
        &config,
        format!(
            "listen: 127.0.0.1:0\nfrontDoor: true\nreadinessGracePeriod: 0s\n\
             tls:\n  certFile: {}\n  keyFile: {}\n\
             downstreams:\n- name: core\n  url: http://{owner}\n  pollInterval: 1s\n",
            pki.server_cert.display(),
            pki.server_key.display()
        ),
    )
    .expect("config");
    let served = crate::common::serve::Served::start(&config, "warn,openapi_proxy::wiring=info");
    let addr: std::net::SocketAddr =
        served.base().await.trim_start_matches("http://").parse().expect("address");
    let connect = || async {
        let io = h2_connection(&pki, addr).await;
        let paused = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let parked = Arc::new(std::sync::Mutex::new(None));
        let io = Pausable { inner: io, paused: Arc::clone(&paused), parked: Arc::clone(&parked) };
        let (send, connection) = h2::client::Builder::new()
            .initial_window_size(1 << 30)
            .initial_connection_window_size(1 << 30)
            .handshake::<_, bytes::Bytes>(io)
            .await
            .expect("HTTP/2 handshake");
        let driving = actix_web::rt::spawn(async move {
            let _ = connection.await;
        });
        (send, (paused, parked), driving)
    };
    // Routed, and one burst read whole, so that what every connection
    // shares is in `before`.
    let (send, _paused, _driving) = connect().await;
    let mut status = 0;
    for _ in 0..100 {
        let answer = burst_watch(send.clone()).await;
        status = answer.status().as_u16();
        if status == 200 {
            read_burst(answer.into_body(), Duration::from_secs(20), "the burst").await;
            break;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200, "the core group was never routed");
    actix_web::rt::time::sleep(Duration::from_millis(500)).await;
    let before = peak_rss_kib(served.pid()).expect("runs");

    let (send, paused, _driving) = connect().await;
    let answers =
        futures_util::future::join_all((0..WATCHES).map(|_| burst_watch(send.clone()))).await;
    assert!(answers.iter().all(|a| a.status() == 200));
    // The client reads nothing more: the proxy takes what it will.
    paused.0.store(true, std::sync::atomic::Ordering::SeqCst);
    actix_web::rt::time::sleep(Duration::from_secs(3)).await;
    let peak = peak_rss_kib(served.pid()).expect("runs");
    let each = peak.saturating_sub(before) / WATCHES;
    eprintln!("{WATCHES} HTTP/2 bursts not read: peak RSS {before} -> {peak} KiB, {each} KiB each");
    assert!(each <= H2_BURST_BOUND_KIB, "{each} KiB held per stream, bound {H2_BURST_BOUND_KIB}");
    // Read again, each burst arrives whole.
    paused.0.store(false, std::sync::atomic::Ordering::SeqCst);
    if let Some(reader) = paused.1.lock().expect("parked").take() {
        reader.wake();
    }
    for answer in answers {
        read_burst(answer.into_body(), Duration::from_secs(20), "the burst goes on").await;
    }
    served.stop();
}

/// A watch of the raw downstream's 900 KB burst on `send`'s connection.
async fn burst_watch(
    send: h2::client::SendRequest<bytes::Bytes>,
) -> http::Response<h2::RecvStream> {
    let mut send = send.ready().await.expect("ready");
    let req = http::Request::get("https://127.0.0.1/api/v1/burst?watch=1").body(()).expect("req");
    let (answer, _) = send.send_request(req, true).expect("send");
    answer.await.expect("an answer")
}

/// Reads a 900 KB burst whole from `body`, each piece within `within`,
/// giving the window back as it goes.
async fn read_burst(mut body: h2::RecvStream, within: Duration, what: &str) {
    let mut got = 0;
    while got < 900 * 1024 {
        let chunk = tokio::time::timeout(within, body.data())
            .await
            .unwrap_or_else(|_| panic!("{what}: nothing in {within:?}"))
            .unwrap_or_else(|| panic!("{what}: the stream ended after {got} bytes"))
            .expect("body");
        got += chunk.len();
        let _ = body.flow_control().release_capacity(chunk.len());
    }
}

/// The memory per HTTP/2 stream whose client does not read, whatever the
/// burst and the windows (docs/operations.md, "Streaming").
const H2_BURST_BOUND_KIB: u64 = 160;

/// Streams whose client does not take their data (their flow-control
/// windows spent) do not hold back another stream of the same HTTP/2
/// connection: only the connection's writes pace the answers, not what
/// one stream keeps unsent.
#[actix_web::test]
async fn streams_held_by_their_own_windows_do_not_hold_back_the_others() {
    let (_proxy, _heads, io) = h2_front_door_to_raw("h2-windows").await;
    // Each stream's window the default 64 KiB; the connection's wide, so
    // that the stalled streams do not spend it.
    let (send, connection) = h2::client::Builder::new()
        .initial_connection_window_size(1 << 30)
        .handshake::<_, bytes::Bytes>(io)
        .await
        .expect("HTTP/2 handshake");
    actix_web::rt::spawn(async move {
        let _ = connection.await;
    });
    // Forty bursts never taken: their windows fill, the rest stays unsent.
    let stalled = futures_util::future::join_all((0..40).map(|_| burst_watch(send.clone()))).await;
    assert!(stalled.iter().all(|a| a.status() == 200));
    actix_web::rt::time::sleep(Duration::from_millis(500)).await;
    // Another burst on the same connection, taken as it comes, arrives whole.
    let body = burst_watch(send.clone()).await.into_body();
    read_burst(body, Duration::from_secs(10), "the burst flows beside the stalled streams").await;
    drop(stalled);
}
