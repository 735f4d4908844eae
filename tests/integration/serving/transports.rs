//! The two transports of plain HTTP: the direct writer (ordinary HTTP/1.1
//! requests) and actix-http (everything else, and every request with
//! `directWrites: false`). Both must answer alike, byte for byte apart from
//! `Date` and the clock reading in `Expires`; the direct one must keep HTTP/1.1's framing (keep-alive,
//! pipelining, HEAD, 304) and hand a connection over with every byte it read.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use openapi_proxy::Config;
use openapi_proxy::Serving;
use openapi_proxy::demo::{DemoSites, start_demo_sites};

use crate::common::proxy::{TestProxy, config, downstream};
use crate::common::raw;

const GADGETS: &str = "apis/gadgets.example.com/v1";

/// Both demo downstreams, and a proxy in front of them with `direct_writes`.
async fn demo_proxy(sites: &DemoSites, direct_writes: bool) -> TestProxy {
    let downstreams = vec![
        downstream("gadgets", &sites.gadgets.url(), 2),
        downstream("widgets", &sites.widgets.url(), 1),
    ];
    let proxy = TestProxy::start_config(&Config { direct_writes, ..config(downstreams) });
    proxy
        .wait_for("both downstreams published", |s| {
            s.ready && s.openapi.contains_key(GADGETS) && s.discovery.groups.len() >= 2
        })
        .await;
    proxy
}

fn addr(proxy: &TestProxy) -> SocketAddr {
    proxy.running.addr
}

/// One response read off a connection.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status_line: String,
    /// Lower-case names, in order, without `date`; an `expires` value is
    /// replaced by its distance from `date` (see [`expires_after`]).
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// The first response in `bytes` to a `method` request, and its length,
/// framed by `content-length` as a client does (none on a 304, no body for
/// HEAD); `None` until it is all there.
fn answer(bytes: &[u8], method: &str) -> Option<(Answer, usize)> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&bytes[..end]).expect("ASCII head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line").to_owned();
    let mut headers = Vec::new();
    let mut length = 0;
    let mut date = None;
    for line in lines {
        let (name, value) = line.split_once(':').expect("name: value");
        let (name, value) = (name.to_ascii_lowercase(), value.trim().to_owned());
        if name == "content-length" {
            length = value.parse().expect("a length");
        }
        if name == "date" {
            date = Some(value);
        } else {
            headers.push((name, value));
        }
    }
    for (name, value) in &mut headers {
        if name == "expires" {
            *value = expires_after(date.as_deref().expect("a Date beside Expires"), value);
        }
    }
    let body_len = if method == "HEAD" || status_line.contains(" 304 ") { 0 } else { length };
    let body = bytes.get(end + 4..end + 4 + body_len)?.to_vec();
    Some((Answer { status_line, headers, body }, end + 4 + body_len))
}

/// `Expires` is a clock reading like `Date`: two servers asked a second apart
/// rightly differ. What both must agree on is the distance from the
/// response's own `Date`: a year, give or take the second boundary the two
/// readings may straddle.
fn expires_after(date: &str, expires: &str) -> String {
    const YEAR: u64 = 365 * 24 * 60 * 60;
    let date = httpdate::parse_http_date(date).expect("Date is an HTTP date");
    let expires = httpdate::parse_http_date(expires).expect("Expires is an HTTP date");
    let ahead = expires.duration_since(date).expect("Expires after Date").as_secs();
    assert!(ahead.abs_diff(YEAR) <= 1, "Expires is {ahead} s after Date, not a year");
    "a year after Date".to_owned()
}

/// Splits `bytes` into the responses to `methods`, in order.
fn answers(mut bytes: &[u8], methods: &[&str]) -> Vec<Answer> {
    let mut out = Vec::new();
    for method in methods {
        let (a, used) = answer(bytes, method).expect("a whole response");
        bytes = &bytes[used..];
        out.push(a);
    }
    assert!(bytes.is_empty(), "{} bytes after the last response", bytes.len());
    out
}

/// Sends `requests` on one connection, all at once (pipelined), and reads
/// until the server closes it (the last request says `Connection: close`).
fn pipelined(addr: SocketAddr, requests: &[Vec<u8>]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    stream.write_all(&requests.concat()).expect("write");
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).expect("read to the end");
    bytes
}

/// Sends each request on one kept-alive connection only once the previous
/// answer is in, as clients talk. (Pipelined requests are framed
/// correctly too, on every transport: `framing.rs`.)
fn one_by_one(addr: SocketAddr, requests: &[(Vec<u8>, &str)]) -> Vec<Answer> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut out = Vec::new();
    let mut bytes = Vec::new();
    for (request, method) in requests {
        stream.write_all(request).expect("write");
        loop {
            if let Some((a, used)) = answer(&bytes, method) {
                bytes.drain(..used);
                out.push(a);
                break;
            }
            let mut chunk = [0u8; 65536];
            let n = stream.read(&mut chunk).expect("read");
            assert!(
                n > 0,
                "closed before the answer to {method}, after {:?}",
                out.iter().map(|a| (&a.status_line, &a.headers)).collect::<Vec<_>>()
            );
            bytes.extend_from_slice(&chunk[..n]);
        }
    }
    out
}

async fn talk(addr: SocketAddr, requests: Vec<(Vec<u8>, &'static str)>) -> Vec<Answer> {
    actix_web::rt::task::spawn_blocking(move || one_by_one(addr, &requests))
        .await
        .expect("no panic")
}

/// A kept-alive request (no `Connection: close`).
fn keep(method: &str, target: &str, extra: &[&str]) -> Vec<u8> {
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for line in extra {
        head.push_str(line);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}

async fn exchange(addr: SocketAddr, requests: Vec<Vec<u8>>) -> Vec<u8> {
    actix_web::rt::task::spawn_blocking(move || pipelined(addr, &requests)).await.expect("no panic")
}

/// The requests of the comparison: every route, both methods, conditional,
/// compressed, negotiated and failing forms.
fn matrix(proxy: &TestProxy) -> Vec<(String, String, Vec<String>)> {
    let snap = proxy.running.state.store.load();
    let entry = snap.openapi.get(GADGETS).expect("published");
    let hash = entry.rendered.hash.clone();
    let etag = entry.rendered.etag_str().to_owned();
    let apis_etag = snap.discovery.apis_v2.etag_str().to_owned();
    let v2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let mut out = Vec::new();
    let headers: Vec<Vec<String>> = vec![
        vec![],
        vec!["Accept-Encoding: gzip".into()],
        vec![format!("If-None-Match: {etag}")],
        vec![format!("If-None-Match: {apis_etag}"), format!("Accept: {v2}")],
        vec![format!("Accept: {v2}"), "Accept-Encoding: gzip, br".into()],
        vec!["Accept: application/com.github.proto-openapi.spec.v3@v1.0+protobuf".into()],
        vec!["Accept: application/json".into(), "Accept: text/html".into()],
        vec![
            "Accept: application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
                .into(),
            "Accept-Encoding: gzip".into(),
        ],
        vec!["Accept: application/yaml".into(), format!("If-None-Match: {apis_etag}")],
    ];
    let targets = [
        "/openapi/v3".to_owned(),
        format!("/openapi/v3/{GADGETS}"),
        format!("/openapi/v3/{GADGETS}?hash={hash}"),
        format!("/openapi/v3/{GADGETS}?hash=0BAD"),
        "/openapi/v3/apis%2Fgadgets.example.com%2Fv1".to_owned(),
        "/openapi/v3/apis/nothing/v1".to_owned(),
        "/openapi/v3/".to_owned(),
        "/openapi/v2".to_owned(),
        "/version".to_owned(),
        "/api".to_owned(),
        "/apis".to_owned(),
        "/apis/".to_owned(),
        "/apis/gadgets.example.com".to_owned(),
        "/apis/gadgets.example.com/v1".to_owned(),
        "/apis/nothing/v1".to_owned(),
        "/api/v1".to_owned(),
        "/healthz".to_owned(),
        "/livez".to_owned(),
        "/readyz".to_owned(),
        "/nothing/here".to_owned(),
    ];
    for target in &targets {
        for method in ["GET", "HEAD"] {
            for h in &headers {
                out.push((method.to_owned(), target.clone(), h.clone()));
            }
        }
    }
    out
}

#[actix_web::test]
async fn the_direct_writer_and_actix_http_answer_alike() {
    let sites = start_demo_sites().expect("demo sites");
    let direct = demo_proxy(&sites, true).await;
    let actix = demo_proxy(&sites, false).await;
    assert_eq!(
        direct.running.state.store.load().openapi_root.hash,
        actix.running.state.store.load().openapi_root.hash,
        "both proxies serve the same snapshot"
    );
    let cases = matrix(&direct);
    let mut requests = Vec::new();
    for (method, target, headers) in &cases {
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        let method = if method == "HEAD" { "HEAD" } else { "GET" };
        requests.push((keep(method, target, &headers), method));
    }
    // Everything on one kept-alive connection, then a closing request.
    requests.push((raw::get("/version", &[]), "GET"));
    let a = talk(addr(&direct), requests.clone()).await;
    let b = talk(addr(&actix), requests).await;
    assert_eq!(a.len(), b.len());
    let mut statuses = std::collections::BTreeSet::new();
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let (method, target, headers) =
            cases.get(i).cloned().unwrap_or(("GET".into(), "/version".into(), vec![]));
        let mut xs = x.headers.clone();
        let mut ys = y.headers.clone();
        // Header order is each library's; the set must be the same.
        xs.sort();
        ys.sort();
        assert_eq!(
            (&x.status_line, &xs, x.body.len()),
            (&y.status_line, &ys, y.body.len()),
            "{method} {target} {headers:?}"
        );
        assert!(x.body == y.body, "{method} {target} {headers:?}: bodies differ");
        statuses.insert(x.status_line.clone());
    }
    // The matrix reaches every kind of answer.
    for status in ["200", "301", "304", "404", "406"] {
        assert!(
            statuses.iter().any(|s| s.contains(&format!(" {status} "))),
            "no {status}: {statuses:?}"
        );
    }
}

#[actix_web::test]
async fn other_methods_and_unusual_requests_hand_the_connection_to_actix() {
    let sites = start_demo_sites().expect("demo sites");
    let proxy = demo_proxy(&sites, true).await;
    let doc = format!("/openapi/v3/{GADGETS}");
    let long = format!("X-Padding: {}", "p".repeat(20 * 1024));
    let requests = vec![
        (keep("GET", &doc, &[]), "GET"),
        // Another method: actix-http answers 405 …
        (keep("DELETE", &doc, &[]), "DELETE"),
        // … and serves the connection from here on, still correctly.
        (keep("GET", &doc, &[]), "GET"),
        // A head longer than the direct writer reads.
        (keep("GET", &doc, &[&long]), "GET"),
        (keep("HEAD", "/apis/gadgets.example.com/v1", &[]), "HEAD"),
        (raw::get("/healthz", &[]), "GET"),
    ];
    let a = talk(addr(&proxy), requests).await;
    let statuses: Vec<&str> = a.iter().map(|r| r.status_line.as_str()).collect();
    assert_eq!(
        statuses,
        [
            "HTTP/1.1 200 OK",
            "HTTP/1.1 405 Method Not Allowed",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK"
        ]
    );
    assert!(a[1].headers.contains(&("allow".into(), "GET, HEAD".into())));
    assert_eq!(a[0].body, a[2].body);
    assert_eq!(a[0].body, a[3].body);
    assert!(a[4].body.is_empty(), "HEAD has no body");
    assert_eq!(a[5].body, b"ok");

    // A request with a body, after a direct answer: actix-http reads it
    // and answers 405.
    let post = [keep("POST", &doc, &["Content-Length: 5"]), b"hello".to_vec()].concat();
    let b = talk(addr(&proxy), vec![(keep("GET", "/version", &[]), "GET"), (post, "POST")]).await;
    assert_eq!(b[0].status_line, "HTTP/1.1 200 OK");
    assert_eq!(b[1].status_line, "HTTP/1.1 405 Method Not Allowed");

    // A long head first of all is handed over with every byte too.
    let first = talk(addr(&proxy), vec![(raw::get(&doc, &[&long]), "GET")]).await;
    assert_eq!(first[0].status_line, "HTTP/1.1 200 OK");
    assert_eq!(first[0].body, a[0].body);
}

#[actix_web::test]
async fn pipelined_requests_are_answered_in_order_and_head_has_no_body() {
    let sites = start_demo_sites().expect("demo sites");
    let proxy = demo_proxy(&sites, true).await;
    let doc = format!("/openapi/v3/{GADGETS}");
    let requests = vec![
        keep("GET", "/openapi/v3", &[]),
        keep("HEAD", &doc, &["Accept-Encoding: gzip"]),
        keep("GET", &doc, &["Accept-Encoding: gzip"]),
        keep("GET", "/nothing", &[]),
        raw::get("/version", &[]),
    ];
    let bytes = exchange(addr(&proxy), requests).await;
    let a = answers(&bytes, &["GET", "HEAD", "GET", "GET", "GET"]);
    assert_eq!(a[0].status_line, "HTTP/1.1 200 OK");
    assert!(serde_json::from_slice::<serde_json::Value>(&a[0].body).is_ok(), "the root index");
    let length =
        |r: &Answer| r.headers.iter().find(|(n, _)| n == "content-length").map(|(_, v)| v.clone());
    // HEAD says how long the GET's body is and sends none.
    assert_eq!(length(&a[1]), Some(a[2].body.len().to_string()));
    assert!(a[1].body.is_empty());
    assert!(a[2].headers.contains(&("content-encoding".into(), "gzip".into())));
    assert_eq!(a[3].status_line, "HTTP/1.1 404 Not Found");
    assert!(a[4].headers.contains(&("connection".into(), "close".into())), "{:?}", a[4]);
}

#[actix_web::test]
async fn a_head_that_does_not_arrive_in_time_is_answered_408() {
    let sites = start_demo_sites().expect("demo sites");
    let mut cfg = config(vec![downstream("gadgets", &sites.gadgets.url(), 1)]);
    let mut serving = Serving::default();
    serving.limits.request_timeout = Duration::from_millis(500);
    cfg.serving = serving;
    let proxy = TestProxy::start_config(&cfg);
    let a = addr(&proxy);
    let answer = actix_web::rt::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(a).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        stream.write_all(b"GET /openapi/v3 HTTP/1.1\r\nHost: x\r\n").expect("half a head");
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        bytes
    })
    .await
    .expect("no panic");
    assert_eq!(raw::status_of(&answer), 408, "{}", String::from_utf8_lossy(&answer));
}
