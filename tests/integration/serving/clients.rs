//! Hostile and careless clients: whatever a client sends, the proxy answers
//! with a 4xx (or serves what it has), never a 5xx, never panics, keeps
//! serving everyone else, and never contacts anything but its configured
//! downstreams. The limits involved are in docs/operations.md#limits.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use actix_web::http::StatusCode;
use openapi_proxy::demo::{Route, Site};
use openapi_proxy::{Config, DownstreamConfig};

use crate::common::proxy::{TestProxy, WIDGETS, config, downstream, request, site, widgets_site};
use crate::common::raw;

async fn ready(config: &Config) -> TestProxy {
    let proxy = TestProxy::start_config(config);
    proxy.wait_for("the widgets document is published", |s| s.openapi.contains_key(WIDGETS)).await;
    proxy
}

/// A proxy in front of the widgets site, with default limits.
async fn widgets_proxy() -> (Site, TestProxy) {
    let ds = widgets_site();
    let proxy = ready(&config(vec![downstream("widgets", &ds.url(), 1)])).await;
    (ds, proxy)
}

/// The document's URL with its current hash, from the root index.
async fn hash_url(proxy: &TestProxy) -> String {
    let root = proxy.get("/openapi/v3", &[]).await.json();
    root["paths"][WIDGETS]["serverRelativeURL"].as_str().expect("listed").to_owned()
}

fn addr(proxy: &TestProxy) -> SocketAddr {
    proxy.running.addr
}

/// Every route the proxy serves, with a path that exists.
const ROUTES: &[&str] = &[
    "/openapi/v3",
    "/openapi/v3/apis/widgets.example.com/v1beta1",
    "/openapi/v2",
    "/version",
    "/api",
    "/apis",
    "/apis/",
    "/apis/widgets.example.com",
    "/apis/widgets.example.com/v1beta1",
    "/api/v1",
    "/healthz",
    "/livez",
    "/readyz",
    "/metrics",
];

#[actix_web::test]
async fn an_enormous_accept_header_is_431_and_the_next_request_is_served() {
    let (_ds, proxy) = widgets_proxy().await;
    // Above actix's 128 KiB request-head limit.
    let huge = format!("Accept: {}", "application/json;q=0.5, ".repeat(8 * 1024));
    for path in ["/openapi/v3", "/openapi/v3/apis/widgets.example.com/v1beta1", "/apis"] {
        let r = raw::send(addr(&proxy), raw::get(path, &[&huge])).await;
        assert_eq!(r.status, 431, "{path}: {}", r.head());
    }
    let huge_inm = format!("If-None-Match: {}", "\"x\", ".repeat(40 * 1024));
    let r = raw::send(addr(&proxy), raw::get("/openapi/v3", &[&huge_inm])).await;
    assert_eq!(r.status, 431, "{}", r.head());
    assert_eq!(proxy.get("/openapi/v3", &[]).await.status, StatusCode::OK);
}

#[actix_web::test]
async fn more_than_96_header_lines_is_431() {
    let (_ds, proxy) = widgets_proxy().await;
    let lines: Vec<String> = (0..100).map(|i| format!("X-Filler-{i}: x")).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let r = raw::send(addr(&proxy), raw::get("/openapi/v3", &lines)).await;
    assert_eq!(r.status, 431, "{}", r.head());
}

#[actix_web::test]
async fn large_accept_and_if_none_match_within_the_limit_are_negotiated_not_refused() {
    let (_ds, proxy) = widgets_proxy().await;
    let url = hash_url(&proxy).await;
    // 100 KiB of clauses nobody serves, then one that matches: parsing is
    // bounded (negotiate::MAX_CLAUSES), so the answer is 406 or 200 —
    // either is a decision, neither is an error.
    let accept = format!("{}application/json", "text/x-nothing;q=0.9, ".repeat(4 * 1024));
    let r = proxy.get(&url, &[("Accept", &accept)]).await;
    assert!(matches!(r.status.as_u16(), 200 | 406), "{}", r.status);
    let inm = "\"not-it\", ".repeat(10 * 1024);
    let r = proxy.get(&url, &[("If-None-Match", &inm)]).await;
    assert_eq!(r.status, StatusCode::OK);
}

#[actix_web::test]
async fn malformed_accept_and_if_none_match_values_get_4xx_or_a_document_never_5xx() {
    let (_ds, proxy) = widgets_proxy().await;
    let hostile: &[&[u8]] = &[
        b"",
        b";;;;,,,,",
        b"*/*;q=NaN",
        b"*/*;q=1e999",
        b"application/json;q=-1",
        b"application/json;g=;v=;as=",
        b"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.",
        b"\xff\xfe\x00garbage",
        b"application/\xc3\xa9json",
        b"\"",
        b"W/",
        b"*, *, *, *",
    ];
    for path in ROUTES {
        for value in hostile {
            for name in ["Accept", "If-None-Match", "Accept-Encoding"] {
                let mut req =
                    format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{name}: ")
                        .into_bytes();
                req.extend_from_slice(value);
                req.extend_from_slice(b"\r\n\r\n");
                let r = raw::send(addr(&proxy), req).await;
                assert!(
                    (200..500).contains(&r.status),
                    "{path} {name}: {:?} → {}",
                    String::from_utf8_lossy(value),
                    r.head()
                );
            }
        }
    }
}

#[actix_web::test]
async fn dot_dot_and_encoded_traversal_paths_are_404_with_nothing_from_disk() {
    let (_ds, proxy) = widgets_proxy().await;
    for target in [
        "/openapi/v3/../../etc/passwd",
        "/openapi/v3/../../etc",
        "/openapi/v3/..%2F..%2Fetc%2Fpasswd",
        "/openapi/v3/%2e%2e/%2e%2e/etc/passwd",
        "/openapi/v3/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
        "/openapi/v3/apis/../../../../etc/passwd",
        "/openapi/v3//etc/passwd",
        "/openapi/v3/%00",
        "/../../etc/passwd",
        "/apis/../../etc/passwd",
        "/apis/%2e%2e/%2e%2e",
    ] {
        let r = raw::send(addr(&proxy), raw::get(target, &[])).await;
        assert!(matches!(r.status, 400 | 404), "{target}: {}", r.head());
        let body = String::from_utf8_lossy(r.body());
        assert!(!body.contains("root:"), "{target} served a file: {body}");
    }
}

#[actix_web::test]
async fn percent_encoded_slashes_name_the_same_document() {
    let (_ds, proxy) = widgets_proxy().await;
    let plain = proxy.get("/openapi/v3/apis/widgets.example.com/v1beta1", &[]).await;
    let encoded = proxy.get("/openapi/v3/apis%2Fwidgets.example.com%2Fv1beta1", &[]).await;
    assert_eq!(plain.status, StatusCode::OK);
    assert_eq!(encoded.status, StatusCode::OK);
    assert_eq!(plain.body, encoded.body);
}

#[actix_web::test]
async fn very_long_keys_are_404_over_64_kib_400_and_over_the_head_limit_431() {
    let (_ds, proxy) = widgets_proxy().await;
    let long = format!("/openapi/v3/apis/{}/v1", "g".repeat(60 * 1024));
    let r = raw::send(addr(&proxy), raw::get(&long, &[])).await;
    assert_eq!(r.status, 404, "{}", r.head());
    let encoded = format!("/openapi/v3/{}", "%2F".repeat(20 * 1024));
    let r = raw::send(addr(&proxy), raw::get(&encoded, &[])).await;
    assert_eq!(r.status, 404, "{}", r.head());
    let long_group = format!("/apis/{}/v1", "g".repeat(60 * 1024));
    let r = raw::send(addr(&proxy), raw::get(&long_group, &[])).await;
    assert_eq!(r.status, 404, "{}", r.head());
    // The `http` crate refuses request targets of 64 KiB and more.
    let longer = format!("/openapi/v3/apis/{}/v1", "g".repeat(70 * 1024));
    let r = raw::send(addr(&proxy), raw::get(&longer, &[])).await;
    assert_eq!(r.status, 400, "{}", r.head());
    let too_long = format!("/openapi/v3/apis/{}/v1", "g".repeat(200 * 1024));
    let r = raw::send(addr(&proxy), raw::get(&too_long, &[])).await;
    assert_eq!(r.status, 431, "{}", r.head());
}

#[actix_web::test]
async fn unknown_query_parameters_are_ignored_as_kube_ignores_them() {
    let (_ds, proxy) = widgets_proxy().await;
    let url = hash_url(&proxy).await;
    let pinned = proxy.get(&url, &[]).await;
    let with_extra = proxy.get(&format!("{url}&timeout=32s&x=%ZZ&&=&hash2=1"), &[]).await;
    assert_eq!(with_extra.status, StatusCode::OK);
    assert_eq!(with_extra.header("cache-control"), "public, immutable");
    assert_eq!(with_extra.body, pinned.body);
    for path in ["/openapi/v3", "/apis", "/api", "/version", "/apis/widgets.example.com"] {
        let plain = proxy.get(path, &[]).await;
        let extra = proxy.get(&format!("{path}?timeout=32s&watch=true&%FF=%00"), &[]).await;
        assert_eq!(extra.status, plain.status, "{path}");
        assert_eq!(extra.body, plain.body, "{path}");
    }
}

#[actix_web::test]
async fn every_route_answers_other_methods_with_405_and_allow() {
    let (_ds, proxy) = widgets_proxy().await;
    for path in ROUTES {
        for method in ["POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"] {
            let r = request(method, &format!("{}{path}", proxy.base), &[]).await;
            assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
            assert_eq!(r.header("allow"), "GET, HEAD", "{method} {path}");
        }
        let head = request("HEAD", &format!("{}{path}", proxy.base), &[]).await;
        let get = proxy.get(path, &[]).await;
        assert_eq!(head.status, get.status, "HEAD {path}");
    }
}

/// A proxy whose request-head timeout is short, for the slow-client tests.
async fn impatient_proxy(request_timeout: Duration) -> (Site, TestProxy) {
    let ds = widgets_site();
    let mut c = config(vec![downstream("widgets", &ds.url(), 1)]);
    c.serving.limits.request_timeout = request_timeout;
    (ds, ready(&c).await)
}

/// Opens `n` connections that send part of a request head and then one
/// byte every 100 ms, for at most `max`; returns, per connection, how long
/// until the proxy closed it and what it answered.
fn slowloris(addr: SocketAddr, n: usize, max: Duration) -> Vec<(Duration, Vec<u8>)> {
    let started = Instant::now();
    let mut conns: Vec<Option<TcpStream>> = (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(addr).expect("connect");
            s.set_nonblocking(true).expect("non-blocking");
            let _ = s.write_all(b"GET /openapi/v3 HTTP/1.1\r\nHost: x\r\nX-Slow: ");
            Some(s)
        })
        .collect();
    let mut results = vec![(max, Vec::new()); n];
    while started.elapsed() < max && conns.iter().any(Option::is_some) {
        for (i, slot) in conns.iter_mut().enumerate() {
            let Some(s) = slot else { continue };
            let mut buf = [0u8; 512];
            let closed = match s.read(&mut buf) {
                Ok(0) => true,
                Ok(k) => {
                    results[i].1.extend_from_slice(&buf[..k]);
                    false
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    s.write(b"a").is_err_and(|e| e.kind() != std::io::ErrorKind::WouldBlock)
                }
                Err(_) => true,
            };
            if closed {
                results[i].0 = started.elapsed();
                *slot = None;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    results
}

#[actix_web::test]
async fn slowloris_clients_are_cut_off_after_the_request_timeout_and_others_are_served() {
    let timeout = Duration::from_secs(1);
    let (_ds, proxy) = impatient_proxy(timeout).await;
    let a = addr(&proxy);
    let slow =
        actix_web::rt::task::spawn_blocking(move || slowloris(a, 64, Duration::from_secs(8)));
    // While they dribble, normal clients are answered promptly.
    actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    for _ in 0..20 {
        let started = Instant::now();
        let r = raw::send(a, raw::get("/openapi/v3", &[])).await;
        assert_eq!(r.status, 200);
        assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    }
    let results = slow.await.expect("slowloris thread");
    for (took, answer) in results {
        // Cut off after the timeout (with room for a loaded machine), and
        // told why when the proxy could still write.
        assert!(took >= timeout && took < timeout * 4, "closed after {took:?}");
        let status = raw::status_of(&answer);
        assert!(status == 408 || answer.is_empty(), "{:?}", String::from_utf8_lossy(&answer));
    }
}

/// On a kept-alive connection, after one answered request, sends the start
/// of a second head, then one more byte every 100 ms while `dribble`
/// (else nothing); returns how long until the proxy closed the connection
/// (15 s: it did not).
fn second_request_stalls(a: SocketAddr, dribble: bool) -> Duration {
    let mut s = TcpStream::connect(a).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").expect("first request");
    let mut buf = [0u8; 4096];
    let k = s.read(&mut buf).expect("first answer");
    assert_eq!(raw::status_of(&buf[..k]), 200);
    let started = Instant::now();
    let _ = s.write_all(b"GET /openapi/v3 HTTP/1.1\r\nX-Slow: ");
    s.set_nonblocking(true).expect("non-blocking");
    while started.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(100));
        if dribble && s.write_all(b"a").is_err_and(|e| e.kind() != std::io::ErrorKind::WouldBlock) {
            break;
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => break,
            _ => {}
        }
    }
    started.elapsed()
}

/// actix-http 3.20 arms its request-head timer once per connection: on a
/// kept-alive connection the second head could arrive as slowly as the
/// client liked, or stop half-way, and hold the connection for good. The
/// proxy's stall guard (`serve::stall`) closes it after the request timeout.
#[actix_web::test]
async fn a_kept_alive_connection_dribbling_its_second_request_is_cut_off_too() {
    let timeout = Duration::from_secs(1);
    let (_ds, proxy) = impatient_proxy(timeout).await;
    let a = addr(&proxy);
    for dribble in [true, false] {
        let took = actix_web::rt::task::spawn_blocking(move || second_request_stalls(a, dribble))
            .await
            .expect("client thread");
        assert!(
            took >= timeout && took < timeout * 4,
            "a stalled second request (dribbling: {dribble}) was closed after {took:?}"
        );
    }
}

#[actix_web::test]
async fn a_client_that_stops_reading_its_responses_is_cut_off() {
    let timeout = Duration::from_secs(1);
    let (_ds, proxy) = impatient_proxy(timeout).await;
    let a = addr(&proxy);
    let (stalled_after, closed_after) = actix_web::rt::task::spawn_blocking(move || {
        // Pipelined requests, never a response read: the socket buffers
        // fill, the proxy's writes stop progressing and it stops reading;
        // from then on the client's writes would block.
        let mut s = TcpStream::connect(a).expect("connect");
        s.set_nonblocking(true).expect("non-blocking");
        let started = Instant::now();
        let batch = b"GET /openapi/v2 HTTP/1.1\r\nHost: x\r\n\r\n".repeat(64);
        let mut stalled = None;
        loop {
            if started.elapsed() > Duration::from_secs(20) {
                break;
            }
            match s.write(&batch) {
                Ok(_) => stalled = None,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    stalled.get_or_insert_with(Instant::now);
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(_) => break,
            }
        }
        (stalled.map(|t| t.duration_since(started)), started.elapsed())
    })
    .await
    .expect("client thread");
    let stalled_after = stalled_after.expect("the proxy stopped reading at some point");
    assert!(
        closed_after - stalled_after < timeout * 4,
        "a client that never reads was closed {:?} after its connection stalled",
        closed_after - stalled_after
    );
}

#[actix_web::test]
async fn five_hundred_concurrent_connections_all_get_answers() {
    let (_ds, proxy) = widgets_proxy().await;
    let a = addr(&proxy);
    let url = hash_url(&proxy).await;
    let statuses = actix_web::rt::task::spawn_blocking(move || {
        // All open at once, all requests written, then all read.
        let mut conns: Vec<TcpStream> = (0..500)
            .map(|i| {
                let mut s = TcpStream::connect(a).expect("connect");
                s.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
                let target = if i % 2 == 0 { "/openapi/v3" } else { url.as_str() };
                s.write_all(&raw::get(target, &[])).expect("write");
                s
            })
            .collect();
        conns
            .iter_mut()
            .map(|s| {
                let mut bytes = Vec::new();
                let _ = s.read_to_end(&mut bytes);
                raw::status_of(&bytes)
            })
            .collect::<Vec<_>>()
    })
    .await
    .expect("client thread");
    let ok = statuses.iter().filter(|s| **s == 200).count();
    assert_eq!(
        ok,
        500,
        "statuses other than 200: {:?}",
        statuses.iter().filter(|s| **s != 200).collect::<Vec<_>>()
    );
}

/// A downstream polled once an hour: after the first poll, any request it
/// sees was caused by something else.
fn quiet(name: &str, url: &str) -> DownstreamConfig {
    DownstreamConfig { poll_interval: Duration::from_secs(3600), ..downstream(name, url, 1) }
}

#[actix_web::test]
async fn nothing_a_client_sends_makes_the_proxy_contact_another_host() {
    let ds = widgets_site();
    let elsewhere = site();
    elsewhere.routes.set("/openapi/v3", Route::json(&b"{\"paths\":{}}"[..]));
    let proxy = ready(&config(vec![quiet("widgets", &ds.url())])).await;
    // Let the first round of polls (OpenAPI and discovery) finish: the
    // downstream has seen nothing new for half a second.
    let mut polls = ds.routes.seen().len();
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_millis(500) {
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
        let seen = ds.routes.seen().len();
        if seen != polls {
            (polls, quiet_since) = (seen, Instant::now());
        }
    }
    let other = elsewhere.addr.to_string();
    let other_url = elsewhere.url();

    let a = addr(&proxy);
    let hostile: Vec<Vec<u8>> = vec![
        format!("GET {other_url}/openapi/v3 HTTP/1.1\r\nHost: {other}\r\nConnection: close\r\n\r\n")
            .into_bytes(),
        format!("GET {other_url}/openapi/v3/{WIDGETS} HTTP/1.1\r\nHost: {other}\r\nConnection: close\r\n\r\n")
            .into_bytes(),
        format!("CONNECT {other} HTTP/1.1\r\nHost: {other}\r\nConnection: close\r\n\r\n").into_bytes(),
        raw::get("/openapi/v3", &[&format!("Host: {other}")]),
        raw::get(
            "/openapi/v3",
            &[
                &format!("X-Forwarded-Host: {other}"),
                "X-Forwarded-Proto: http",
                &format!("X-Forwarded-For: {other}"),
                &format!("Forwarded: host={other};proto=http"),
                &format!("X-Original-URL: {other_url}/openapi/v3"),
                &format!("X-Rewrite-URL: {other_url}/openapi/v3"),
            ],
        ),
        raw::get(&format!("/openapi/v3/{WIDGETS}?hash={other_url}/openapi/v3"), &[]),
        raw::get(&format!("/openapi/v3/{WIDGETS}?hash=stale&redirect={other_url}"), &[]),
        raw::get(&format!("/openapi/v3/{other_url}/openapi/v3"), &[]),
        raw::get(&format!("/openapi/v3/{}", other_url.replace(':', "%3A").replace('/', "%2F")), &[]),
        raw::get(&format!("//{other}/openapi/v3"), &[]),
        raw::get(&format!("/apis/{other}/v1"), &[]),
        raw::get("/openapi/v2", &[&format!("Referer: {other_url}")]),
    ];
    for req in hostile {
        let r = raw::send(a, req.clone()).await;
        assert!(
            (200..500).contains(&r.status),
            "{:?} → {}",
            String::from_utf8_lossy(&req),
            r.head()
        );
        // A redirect only ever points at this proxy's own paths.
        if let Some(location) = r.header("location") {
            assert!(location.starts_with("/openapi/v3/"), "redirected to {location}");
        }
    }
    // Give any request the proxy might have sent time to arrive.
    actix_web::rt::time::sleep(Duration::from_millis(500)).await;
    assert!(
        elsewhere.routes.seen().is_empty(),
        "the other host was contacted: {:?}",
        elsewhere.routes.seen()
    );
    let after: Vec<String> = ds.routes.seen().iter().skip(polls).map(|s| s.uri.clone()).collect();
    assert!(after.is_empty(), "client traffic reached the downstream: {after:?}");
}

/// The real binary, killed when dropped (a failing test leaves nothing
/// running).
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether a request the downstream saw carried `Authorization: Bearer token`.
fn saw_token(ds: &Site, token: &str) -> bool {
    let expected = format!("Bearer {token}");
    ds.routes.seen().iter().any(|r| {
        r.headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(expected.as_str())
    })
}

/// Runs `openapi-proxy serve` at log level `level` with a token file in
/// front of the widgets site, rotates the token, sends client requests
/// with their own credentials, and returns everything it logged.
async fn logs_of_a_run_with_a_token(level: &str, tokens: [&str; 2], client_secret: &str) -> String {
    let ds = widgets_site();
    let dir = crate::common::validators::scratch_dir(&format!("token-logs-{level}"));
    let token_file = dir.join("token");
    std::fs::write(&token_file, format!("{}\n", tokens[0])).expect("write token");
    let config_file = dir.join("config.yaml");
    std::fs::write(
        &config_file,
        format!(
            "listen: 127.0.0.1:0\npollInterval: 100ms\ndownstreams:\n- name: widgets\n  url: {}\n  tokenFile: {}\n",
            ds.url(),
            token_file.display()
        ),
    )
    .expect("write config");
    let served = crate::common::serve::Served::start(&config_file, level);
    let text = || served.text();
    let base = served.base().await;
    crate::common::proxy::eventually("a snapshot is published", || {
        text().contains("snapshot published")
    })
    .await;
    crate::common::proxy::eventually("the first token is sent", || saw_token(&ds, tokens[0])).await;
    let auth = format!("Bearer {client_secret}");
    let cookie = format!("session={client_secret}");
    for path in ["/openapi/v3", "/apis", &format!("/openapi/v3/{WIDGETS}?hash=x"), "/nope"] {
        let r = request(
            "GET",
            &format!("{base}{path}"),
            &[("Authorization", &auth), ("Cookie", &cookie), ("Proxy-Authorization", &auth)],
        )
        .await;
        assert!(r.status.as_u16() < 500, "{path}: {}", r.status);
    }
    std::fs::write(&token_file, format!("{}\n", tokens[1])).expect("rotate token");
    crate::common::proxy::eventually("the rotated token is sent", || saw_token(&ds, tokens[1]))
        .await;
    let logs = served.stop();
    for r in ds.routes.seen() {
        let headers = format!("{:?}", r.headers);
        assert!(!headers.contains(client_secret), "a client credential reached the downstream");
    }
    logs
}

#[actix_web::test]
async fn tokens_and_client_credentials_never_reach_the_logs_even_at_trace_level() {
    let tokens = ["first-SECRET-token-1a2b3c", "second-SECRET-token-4d5e6f"];
    let client_secret = "client-SECRET-credential-7a8b9c";
    let logs = logs_of_a_run_with_a_token("trace", tokens, client_secret).await;
    // The capture works: the run's own lines are there, debug and trace
    // ones too (trace is everything debug logs, and more).
    assert!(logs.contains("snapshot published"), "no log lines captured: {logs}");
    assert!(logs.contains("\"v\":4"), "no debug lines captured");
    assert!(logs.contains("\"v\":6"), "no trace lines captured");
    for secret in tokens.iter().chain([&client_secret]) {
        assert!(!logs.contains(secret), "{secret} appears in the logs");
    }
    assert!(!logs.contains("SECRET"), "part of a credential appears in the logs");
}

#[actix_web::test]
async fn a_graceful_stop_closes_idle_kept_alive_connections_at_once() {
    let (_ds, proxy) = widgets_proxy().await;
    let a = addr(&proxy);
    // An idle kept-alive connection (keep-alive is 90 s by default).
    let idle = actix_web::rt::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(a).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").expect("request");
        let mut buf = [0u8; 4096];
        let k = s.read(&mut buf).expect("answer");
        assert_eq!(raw::status_of(&buf[..k]), 200);
        s
    })
    .await
    .expect("client thread");
    let started = Instant::now();
    proxy.running.server.stop(true).await;
    // Without the shutdown signal the idle connection would hold the stop
    // for the whole shutdown timeout (25 s).
    assert!(started.elapsed() < Duration::from_secs(5), "stopping took {:?}", started.elapsed());
    drop(idle);
}

/// A `--keep-alive` or `--request-timeout` too long for a timer
/// (2562047788015215h fits a `Duration` but not `Instant::now() + d`) was
/// accepted: the proxy started, and then every client connection panicked
/// while the process stayed up. It must be refused before anything
/// listens, naming the flag.
#[test]
fn serving_timeouts_too_long_for_a_timer_are_refused_at_startup() {
    for (flag, field) in [
        ("--keep-alive", "'--keep-alive <DURATION>'"),
        ("--request-timeout", "'--request-timeout <DURATION>'"),
    ] {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
            .args(["serve", "--listen", "127.0.0.1:0", flag, "2562047788015215h"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let mut child = Child(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.0.try_wait().expect("wait") {
                break status;
            }
            assert!(Instant::now() < deadline, "{flag}: the proxy started serving");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        child.0.stderr.take().expect("piped").read_to_string(&mut stderr).expect("stderr");
        assert_eq!(status.code(), Some(2), "{flag}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{field}: \"2562047788015215h\" is longer than the maximum, 24h"
            )),
            "{flag}: {stderr}"
        );
    }
}

/// `serve` with no downstream would be an empty cluster that never gets
/// ready: refused at once, saying how to name one.
#[test]
fn serve_without_a_downstream_is_a_configuration_error() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("downstreams: none configured: give --downstream NAME=URL"),
        "{stderr}"
    );
}

/// A port in use says so, and what to do, for `serve` as for `demo`.
#[test]
fn a_listen_address_in_use_is_named_with_what_to_do() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    for command in ["serve", "demo"] {
        let downstream: &[&str] =
            if command == "serve" { &["--downstream", "kube=http://127.0.0.1:1"] } else { &[] };
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
            .args([command, "--listen", &addr])
            .args(downstream)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{command}: {stderr}");
        assert!(
            stderr.contains(&format!("listening on {addr}: the address is in use"))
                && stderr.contains("port 0 picks a free one"),
            "{command}: {stderr}"
        );
    }
}

/// SIGINT (Ctrl-C) stops the proxy as gracefully as SIGTERM, as docs/operations.md
/// promises; actix-server's own handling forced the stop on SIGINT.
#[test]
fn sigint_stops_gracefully_like_sigterm() {
    for signal in ["INT", "TERM"] {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
            .args(["demo", "--listen", "127.0.0.1:0"])
            .env_remove("RUST_LOG")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let mut child = Child(child);
        // The demo prints its URLs once it serves.
        let mut stdout = std::io::BufReader::new(child.0.stdout.take().expect("piped"));
        let mut line = String::new();
        while std::io::BufRead::read_line(&mut stdout, &mut line).expect("stdout") > 0 {
            if line.contains("the proxy serves") {
                break;
            }
            line.clear();
        }
        assert!(line.contains("the proxy serves"), "{signal}: the demo did not start");
        let pid = child.0.id().to_string();
        let sent = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .expect("kill runs");
        assert!(sent.success());
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.0.try_wait().expect("wait") {
                break status;
            }
            assert!(started.elapsed() < Duration::from_secs(20), "SIG{signal}: still running");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        child.0.stderr.take().expect("piped").read_to_string(&mut stderr).expect("stderr");
        assert!(status.success(), "SIG{signal}: {status:?}: {stderr}");
        assert!(
            stderr.contains("stopping gracefully") && stderr.contains(&format!("SIG{signal}")),
            "SIG{signal}: {stderr}"
        );
        assert!(!stderr.contains("forced shutdown"), "SIG{signal}: {stderr}");
        // actix-server's start-up chatter is filtered by default.
        assert!(!stderr.contains("starting 1 workers"), "{stderr}");
    }
}

/// The demo's examples work when pasted, also when it listens on every
/// interface: URLs a client can reach, and no example that floods the
/// terminal.
#[test]
fn the_demo_examples_work_when_pasted() {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
        .args(["demo", "--listen", "0.0.0.0:0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the binary starts");
    let mut child = Child(child);
    let mut stdout = std::io::BufReader::new(child.0.stdout.take().expect("piped"));
    let mut banner = Vec::new();
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut stdout, &mut line).expect("stdout") > 0 {
        if line.starts_with("Ctrl-C") {
            break;
        }
        banner.push(std::mem::take(&mut line));
    }
    let banner = banner.concat();
    assert!(banner.contains("the proxy serves http://127.0.0.1:"), "{banner}");
    assert!(!banner.contains("http://0.0.0.0"), "{banner}");
    let examples: Vec<&str> =
        banner.lines().map(str::trim).filter(|l| l.starts_with("curl ")).collect();
    assert!(examples.len() >= 5, "{banner}");
    for example in examples {
        let o = std::process::Command::new("bash")
            .args(["-o", "pipefail", "-c", example])
            .output()
            .expect("bash runs");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{example}: {out} {}", String::from_utf8_lossy(&o.stderr));
        assert!(!out.trim().is_empty(), "{example}: no output");
        // What a terminal shows comfortably: no 17 KB line.
        let longest = out.lines().map(str::len).max().unwrap_or(0);
        assert!(longest <= 4096, "{example}: a line of {longest} bytes");
    }
}

/// A healthy demo counted `result="error"` for the 404s of a downstream
/// without `/openapi/v3` or without aggregated discovery: facts, not
/// failures. They are `not_served`; `error` stays for errors.
#[actix_web::test]
async fn documents_a_downstream_does_not_offer_are_not_counted_as_errors() {
    use crate::common::proxy::{TestProxy, downstream};
    let sites = openapi_proxy::demo::start_demo_sites().expect("demo sites");
    let proxy = TestProxy::start(vec![
        downstream("gadgets", &sites.gadgets.url(), 2),
        downstream("widgets", &sites.widgets.url(), 1),
    ]);
    proxy.wait_for("both downstreams published", |s| s.ready && s.openapi.len() >= 6).await;
    let metrics = proxy.get("/metrics", &[]).await;
    let text = String::from_utf8_lossy(&metrics.body).into_owned();
    let fetches: Vec<&str> =
        text.lines().filter(|l| l.starts_with("openapi_proxy_downstream_fetches_total{")).collect();
    // widgets has no /openapi/v3 and no aggregated discovery.
    assert!(
        fetches.iter().any(|l| l
            .contains("document=\"openapi_v3_root\",downstream=\"widgets\",result=\"not_served\"")),
        "{fetches:#?}"
    );
    assert!(!fetches.iter().any(|l| l.contains("result=\"error\"")), "{fetches:#?}");
}
