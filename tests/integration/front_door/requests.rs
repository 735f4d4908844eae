//! The front door (`frontDoor: true`), black-box: requests that are not
//! metadata reach the downstream that owns their group-version, with the
//! client's credentials only, within the in-flight bound; upgrades are
//! piped; off, nothing is passed on. The kubectl tests, against a fake
//! cluster, are in `front_door::kubectl`.

use std::io::{Read, Write};
use std::time::Duration;

use actix_web::http::StatusCode;
use openapi_proxy::demo::{Route, Routes};
use openapi_proxy::{Config, RawConfig};

use crate::common::proxy::{POLL, TestProxy, config, downstream, eventually, request, site};

/// `/api` and `/apis` in aggregated discovery v2: the core group's `pods`
/// when `core`, and one resource in each of `groups` (`group/version`).
pub(super) fn discovery(routes: &Routes, core: bool, groups: &[(&str, &str)]) {
    let resource = |plural: &str, kind: &str, group: &str, version: &str| {
        serde_json::json!({
            "resource": plural,
            "responseKind": {"group": group, "version": version, "kind": kind},
            "scope": "Namespaced",
            "singularResource": plural.trim_end_matches('s'),
            "verbs": ["get", "list", "watch", "create", "delete"],
        })
    };
    let list = |items: Vec<serde_json::Value>| {
        let mut route = Route::json(
            serde_json::json!({
                "kind": "APIGroupDiscoveryList",
                "apiVersion": "apidiscovery.k8s.io/v2",
                "metadata": {},
                "items": items,
            })
            .to_string(),
        );
        route.content_type = openapi_proxy::media::DISCOVERY_V2_CONTENT_TYPE;
        route
    };
    let core_items = if core {
        vec![serde_json::json!({
            "metadata": {},
            "versions": [{"version": "v1", "resources": [resource("pods", "Pod", "", "v1")], "freshness": "Current"}],
        })]
    } else {
        vec![]
    };
    let group_items = groups
        .iter()
        .map(|(g, v)| {
            serde_json::json!({
                "metadata": {"name": g},
                "versions": [{"version": v, "resources": [resource("widgets", "Widget", g, v)], "freshness": "Current"}],
            })
        })
        .collect();
    routes.set("/api", list(core_items));
    routes.set("/apis", list(group_items));
}

/// A proxy with the front door in front of `downstreams`.
pub(super) fn front_door(downstreams: Vec<openapi_proxy::DownstreamConfig>) -> Config {
    Config { front_door: true, ..config(downstreams) }
}

/// Waits until the proxy routes `key` to `owner`.
pub(super) async fn routed(proxy: &TestProxy, key: &str, owner: &str) {
    proxy
        .wait_for(&format!("{key} owned by {owner}"), |s| {
            s.owners.owner(key).is_some_and(|o| &**o == owner)
        })
        .await;
}

/// Each group-version's requests reach its owner — the priority winner
/// where two serve it, as discovery shows it — with the client's
/// `Authorization`; the proxy's own token is on its polls and on no
/// passed-on request; what nobody owns is a 404 `Status`.
#[actix_web::test]
async fn requests_reach_the_owner_with_the_clients_credentials_only() {
    let (kube, extra) = (site(), site());
    discovery(&kube.routes, true, &[("apps", "v1"), ("example.com", "v1")]);
    discovery(&extra.routes, false, &[("example.com", "v1")]);
    kube.routes
        .set("/api/v1/namespaces/default/pods", Route::json(r#"{"kind":"PodList","from":"kube"}"#));
    kube.routes.set("/apis/apps/v1/deployments", Route::json(r#"{"from":"kube"}"#));
    kube.routes.set("/apis/example.com/v1/widgets", Route::json(r#"{"from":"kube"}"#));
    extra.routes.set("/apis/example.com/v1/widgets", Route::json(r#"{"from":"extra"}"#));
    let token = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("front-door-proxy-token");
    std::fs::write(&token, "PROXY-SECRET\n").expect("token file");
    let yaml = format!(
        "frontDoor: true\ndownstreams:\n- name: kube\n  url: {}\n  priority: 10\n  tokenFile: {}\n- name: extra\n  url: {}\n  priority: 20\n",
        kube.url(),
        token.display(),
        extra.url()
    );
    let mut cfg = Config::from_raw(RawConfig::from_yaml(&yaml).expect("yaml")).expect("config");
    cfg.listen = "127.0.0.1:0".parse().expect("address");
    for d in &mut cfg.downstreams {
        d.poll_interval = POLL;
    }
    cfg.readiness_grace_period = Duration::ZERO;
    let proxy = TestProxy::start_config(&cfg);
    routed(&proxy, "apis/example.com/v1", "extra").await;
    routed(&proxy, "api/v1", "kube").await;

    // The request-header authentication headers a downstream trusting them
    // (kube-aggregator's way) would take as the caller's identity.
    let client = [
        ("Authorization", "Bearer CLIENT"),
        ("X-Forwarded-For", "192.0.2.1"),
        ("X-Remote-User", "admin"),
        ("x-remote-group", "system:masters"),
        ("X-Remote-Uid", "0"),
        ("X-REMOTE-EXTRA-Scopes", "all"),
    ];
    let pods = proxy.get("/api/v1/namespaces/default/pods?limit=5", &client).await;
    assert_eq!(pods.status, StatusCode::OK);
    assert_eq!(pods.json()["from"], "kube");
    assert_eq!(proxy.get("/apis/apps/v1/deployments", &client).await.json()["from"], "kube");
    let widgets = proxy.get("/apis/example.com/v1/widgets", &client).await;
    assert_eq!(widgets.json()["from"], "extra", "the higher priority owns example.com/v1");

    let nobody = proxy.get("/apis/batch/v1/jobs", &client).await;
    assert_eq!(nobody.status, StatusCode::NOT_FOUND);
    assert_eq!(nobody.json()["kind"], "Status");
    assert!(nobody.json()["message"].as_str().expect("message").contains("no downstream serves"));

    let seen: Vec<_> = kube.routes.seen().into_iter().chain(extra.routes.seen()).collect();
    let auth = |s: &openapi_proxy::demo::SeenRequest| {
        s.headers.get("authorization").map(|v| v.to_str().expect("text").to_owned())
    };
    let passed: Vec<_> = seen
        .iter()
        .filter(|s| {
            s.uri.contains("pods") || s.uri.contains("widgets") || s.uri.contains("deployments")
        })
        .collect();
    assert_eq!(passed.len(), 3, "{passed:?}");
    for s in &passed {
        assert_eq!(auth(s).as_deref(), Some("Bearer CLIENT"), "{}", s.uri);
        let xff =
            s.headers.get("x-forwarded-for").expect("x-forwarded-for").to_str().expect("text");
        assert_eq!(xff, "192.0.2.1, 127.0.0.1", "the client appended");
        let claims: Vec<_> =
            s.headers.keys().filter(|n| n.as_str().starts_with("x-remote-")).collect();
        assert!(claims.is_empty(), "{}: {claims:?}", s.uri);
    }
    assert_eq!(passed[0].uri, "/api/v1/namespaces/default/pods?limit=5", "the query crosses");
    let polls = kube.routes.seen().into_iter().filter(|s| s.uri.starts_with("/api")).count();
    assert!(polls > 0);
    assert!(
        kube.routes.seen().iter().filter(|s| !passed.iter().any(|p| p.uri == s.uri)).all(|s| auth(
            s
        )
        .as_deref()
            == Some("Bearer PROXY-SECRET")),
        "the proxy's polls carry its token"
    );
    assert!(
        seen.iter()
            .filter(|s| auth(s).as_deref() == Some("Bearer PROXY-SECRET"))
            .all(|s| !passed.iter().any(|p| std::ptr::eq(*p, s)))
    );

    let metrics = proxy.get("/metrics", &[]).await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains(
            r#"openapi_proxy_front_door_requests_total{code="200",downstream="extra",verb="get"} 1"#
        ),
        "{text}"
    );
    assert!(text.contains(
        r#"openapi_proxy_front_door_requests_total{code="404",downstream="",verb="get"} 1"#
    ));
}

/// Bodies cross both ways as they are: a create's body and type, the
/// downstream's status and `Status` body, `Content-Encoding` untouched.
#[actix_web::test]
async fn bodies_statuses_and_encodings_cross_unchanged() {
    let kube = site();
    discovery(&kube.routes, true, &[]);
    kube.routes.require_authorization(None);
    let mut denied = Route::json(r#"{"kind":"Status","reason":"Forbidden","code":403}"#);
    denied.status = StatusCode::FORBIDDEN;
    kube.routes.set("/api/v1/namespaces/default/secrets", denied);
    let proxy = TestProxy::start_config(&front_door(vec![downstream("kube", &kube.url(), 10)]));
    routed(&proxy, "api/v1", "kube").await;
    let forbidden = proxy.get("/api/v1/namespaces/default/secrets", &[]).await;
    assert_eq!(forbidden.status, StatusCode::FORBIDDEN);
    assert_eq!(forbidden.json()["reason"], "Forbidden");
    let created = request(
        "POST",
        &format!("{}/api/v1/namespaces/default/pods", proxy.base),
        &[("Content-Type", "application/yaml")],
    )
    .await;
    // The demo site answers only GET routes; a POST to no route is its 404,
    // passed back as it came (empty).
    assert_eq!(created.status, StatusCode::NOT_FOUND);
    assert!(created.body.is_empty());
}

/// Past `maxRequestsInflight` short requests wait for nobody: 429 with
/// `Retry-After`; long-running ones are not counted; and the places come
/// back.
#[actix_web::test]
async fn past_the_in_flight_bound_a_request_gets_429() {
    let kube = site();
    discovery(&kube.routes, true, &[]);
    kube.routes.set("/api/v1/pods", Route::json("{}").delayed(Duration::from_millis(800)));
    let mut cfg = front_door(vec![downstream("kube", &kube.url(), 10)]);
    cfg.serving.limits.max_requests_inflight = 2;
    let proxy = TestProxy::start_config(&cfg);
    routed(&proxy, "api/v1", "kube").await;
    let url = format!("{}/api/v1/pods", proxy.base);
    let answers = futures_util::future::join_all((0..5).map(|_| request("GET", &url, &[]))).await;
    let ok = answers.iter().filter(|a| a.status == StatusCode::OK).count();
    let refused: Vec<_> =
        answers.iter().filter(|a| a.status == StatusCode::TOO_MANY_REQUESTS).collect();
    assert_eq!(
        (ok, refused.len()),
        (2, 3),
        "{:?}",
        answers.iter().map(|a| a.status).collect::<Vec<_>>()
    );
    assert_eq!(refused[0].header("retry-after"), "1");
    assert_eq!(refused[0].json()["reason"], "TooManyRequests");
    // A watch is long-running: not counted against the bound.
    let watch = format!("{url}?watch=true");
    let watches = futures_util::future::join_all((0..3).map(|_| request("GET", &watch, &[]))).await;
    assert!(watches.iter().all(|a| a.status == StatusCode::OK));
    assert_eq!(request("GET", &url, &[]).await.status, StatusCode::OK, "the places came back");
}

/// A watch is long-running however its query is spelled (`?%77atch=1`
/// is `?watch=1` to the downstream): forty of them, held open by the
/// downstream, take none of the two in-flight places, and another
/// client's GET is served meanwhile.
#[actix_web::test]
async fn an_encoded_watch_takes_no_in_flight_place() {
    const WATCHES: usize = 40;
    let kube = site();
    discovery(&kube.routes, true, &[]);
    kube.routes.set("/api/v1/pods", Route::json("{}").delayed(Duration::from_secs(4)));
    kube.routes.set("/api/v1/namespaces/default/pods", Route::json(r#"{"kind":"PodList"}"#));
    let mut cfg = front_door(vec![downstream("kube", &kube.url(), 10)]);
    cfg.serving.limits.max_requests_inflight = 2;
    let proxy = TestProxy::start_config(&cfg);
    routed(&proxy, "api/v1", "kube").await;
    let spellings = ["?%77atch=1", "?watch=%31", "?%77atch=%74rue", "?watch", "?watch=yes"];
    let done = std::cell::Cell::new(0usize);
    let watches = futures_util::future::join_all((0..WATCHES).map(|i| {
        let url = format!("{}/api/v1/pods{}", proxy.base, spellings[i % spellings.len()]);
        let done = &done;
        async move {
            let answer = request("GET", &url, &[]).await;
            done.set(done.get() + 1);
            answer.status
        }
    }));
    let other = async {
        // Every watch open at the downstream, or one already answered
        // (refused).
        crate::common::proxy::eventually("the watches open or refused", || {
            kube.routes.most_in_flight() >= WATCHES || done.get() > 0
        })
        .await;
        let metrics = proxy.running.state.metrics.render();
        let get = proxy.get("/api/v1/namespaces/default/pods", &[]).await;
        (get.status, metrics)
    };
    let (watches, (other, metrics)) = futures_util::future::join(watches, other).await;
    assert_eq!(other, StatusCode::OK, "another client's GET while the watches are open");
    assert!(watches.iter().all(|s| *s == StatusCode::OK), "{watches:?}");
    assert!(
        metrics.contains(&format!(
            r#"openapi_proxy_front_door_inflight{{class="long_running"}} {WATCHES}"#
        )),
        "{metrics}"
    );
    let short = r#"openapi_proxy_front_door_inflight{class="short"}"#;
    assert!(metrics.lines().all(|l| !l.starts_with(short) || l.ends_with(" 0")), "{metrics}");
    let passed: Vec<_> =
        kube.routes.seen().into_iter().filter(|s| s.uri.starts_with("/api/v1/pods?")).collect();
    assert_eq!(passed.len(), WATCHES, "each passed on once");
    assert!(passed.iter().any(|s| s.uri == "/api/v1/pods?%77atch=1"), "the query crosses as sent");
}

/// A downstream reached over plain `http://` gets the clients' bearer
/// tokens in clear text: the front door warns at start, once for each
/// such downstream; off, nothing is passed on and nothing is said.
#[actix_web::test]
async fn a_clear_text_downstream_is_warned_about_at_start() {
    let (plain, other) = (site(), site());
    discovery(&plain.routes, true, &[]);
    discovery(&other.routes, false, &[("apps", "v1")]);
    let (logs, _guard) = crate::common::logs::capture();
    let _proxy = TestProxy::start_config(&front_door(vec![
        downstream("plain", &plain.url(), 10),
        downstream("other", &other.url(), 20),
    ]));
    let warned = |d: &str| logs.count(tracing::Level::WARN, d, "front door: passed-on requests");
    assert_eq!(
        (warned("plain"), warned("other")),
        (1, 1),
        "{:?}",
        logs.about(tracing::Level::WARN, "plain")
    );
    let off = crate::common::logs::capture();
    let _quiet = TestProxy::start(vec![downstream("plain", &plain.url(), 10)]);
    assert_eq!(off.0.count(tracing::Level::WARN, "plain", "front door: passed-on requests"), 0);
}

/// An owner that cannot be reached is a 503 `Status`, and the metadata
/// already published is still served.
#[actix_web::test]
async fn an_unreachable_owner_is_a_503() {
    let kube = site();
    discovery(&kube.routes, true, &[]);
    let proxy = TestProxy::start_config(&front_door(vec![downstream("kube", &kube.url(), 10)]));
    routed(&proxy, "api/v1", "kube").await;
    kube.handle.stop(false).await;
    let answer = proxy.get("/api/v1/pods", &[]).await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.json()["reason"], "ServiceUnavailable");
    assert_eq!(proxy.get("/api", &[]).await.status, StatusCode::OK);
}

/// Off (the default), nothing is passed on: a resource request is the
/// proxy's own 501 (not a 404, which clients read as "no such object"),
/// and the downstream never sees it.
#[actix_web::test]
async fn off_nothing_is_passed_on() {
    let kube = site();
    discovery(&kube.routes, true, &[]);
    kube.routes.set("/api/v1/pods", Route::json("{}"));
    let proxy = TestProxy::start(vec![downstream("kube", &kube.url(), 10)]);
    proxy.wait_polled("kube").await;
    let answer = proxy.get("/api/v1/pods", &[]).await;
    assert_eq!(answer.status, StatusCode::NOT_IMPLEMENTED);
    assert!(answer.json()["message"].as_str().expect("message").contains("is a resource request"));
    assert!(kube.routes.seen().iter().all(|s| s.uri != "/api/v1/pods"));
}

/// A raw HTTP/1.1 downstream: aggregated discovery with the core group's
/// `pods` at `/api` (and none at `/apis`); at `/api/v1/silent` nothing until
/// the proxy closes (then `closed /api/v1/silent` on `heads`); at
/// `/api/v1/quiet` one chunk of a
/// watch, then nothing until the proxy closes (`closed /api/v1/quiet` is
/// sent on `heads` then); at `/api/v1/endless` (any query) a chunked
/// body that never ends, as fast as it is read (its bytes counted in
/// `written`); and for an upgrade a `101` that greets with `hello ` and
/// echoes what it gets until the client closes. Each upgrade's request
/// head is sent on `heads`.
fn upgrading_downstream(heads: std::sync::mpsc::Sender<String>) -> std::net::SocketAddr {
    raw_downstream(heads, std::sync::Arc::default())
}

/// Whether the raw downstream reports `what` within `within`.
pub(super) async fn seen_within(
    heads: std::sync::mpsc::Receiver<String>,
    what: &'static str,
    within: Duration,
) -> bool {
    tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + within;
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match heads.recv_timeout(left) {
                Ok(h) if h == what => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    })
    .await
    .expect("join")
}

pub(super) fn raw_downstream(
    heads: std::sync::mpsc::Sender<String>,
    written: std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let heads = heads.clone();
            let written = std::sync::Arc::clone(&written);
            std::thread::spawn(move || {
                loop {
                    let Some(head) = read_head(&mut s) else { return };
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let target = head.split(' ').nth(1).unwrap_or("");
                    let path = target.split_once('?').map_or(target, |(p, _)| p).to_owned();
                    if let Some(answer) = core_discovery(&path) {
                        if s.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                        continue;
                    }
                    if path == "/api/v1/echo" {
                        let lower = head.to_ascii_lowercase();
                        let chunked = lower.contains("transfer-encoding: chunked");
                        let length = if chunked {
                            read_chunked(&mut s)
                        } else {
                            let n: usize = lower
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse().ok())
                                .unwrap_or(0);
                            let mut body = vec![0u8; n];
                            if s.read_exact(&mut body).is_err() {
                                return;
                            }
                            n
                        };
                        let body = format!(r#"{{"length":{length},"chunked":{chunked}}}"#);
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if s.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                        continue;
                    }
                    if path == "/api/v1/silent" {
                        // No answer at all until the proxy closes.
                        let mut byte = [0u8; 1];
                        while matches!(s.read(&mut byte), Ok(n) if n > 0) {}
                        let _ = heads.send("closed /api/v1/silent".to_owned());
                        return;
                    }
                    if path == "/api/v1/quiet" {
                        // One event, then quiet until the proxy closes.
                        let event = r#"{"type":"ADDED","object":{"kind":"Pod"}}"#;
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
                            event.len()
                        );
                        if s.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                        let mut byte = [0u8; 1];
                        while matches!(s.read(&mut byte), Ok(n) if n > 0) {}
                        let _ = heads.send("closed /api/v1/quiet".to_owned());
                        return;
                    }
                    if path == "/api/v1/ambiguous" {
                        // Both framings at once, the shape of a smuggled
                        // answer: which one ends the body is a guess.
                        let answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                                      Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n\
                                      5\r\nhello\r\n0\r\n\r\n";
                        let _ = s.write_all(answer.as_bytes());
                        return;
                    }
                    if path == "/api/v1/burst" {
                        // A watch's 900 KB burst at once, then quiet until
                        // the proxy closes.
                        let event = "x".repeat(60 * 1024);
                        let mut answer = String::from(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
                        );
                        for _ in 0..15 {
                            answer.push_str(&format!("{:x}\r\n{event}\r\n", event.len()));
                        }
                        if s.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                        let mut byte = [0u8; 1];
                        while matches!(s.read(&mut byte), Ok(n) if n > 0) {}
                        return;
                    }
                    if path == "/api/v1/endless" {
                        let _ = s.write_all(
                            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
                        );
                        let chunk = format!("{:x}\r\n{}\r\n", 64 * 1024, "x".repeat(64 * 1024));
                        while s.write_all(chunk.as_bytes()).is_ok() {
                            written
                                .fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::SeqCst);
                        }
                        return;
                    }
                    if !head.to_ascii_lowercase().contains("upgrade: spdy/3.1") {
                        let _ = s.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
                        continue;
                    }
                    let _ = heads.send(head);
                    let _ = s.write_all(
                        b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\nhello ",
                    );
                    let mut buf = [0u8; 1024];
                    loop {
                        match s.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => {
                                if s.write_all(&buf[..n]).is_err() {
                                    return;
                                }
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

/// A raw downstream's whole answer to `path` when it is `/api` (aggregated
/// discovery v2 with the core group's `pods`) or `/apis` (no groups).
fn core_discovery(path: &str) -> Option<String> {
    let items = match path {
        "/api" => {
            r#"[{"metadata":{},"versions":[{"version":"v1","resources":[{"resource":"pods","responseKind":{"group":"","version":"v1","kind":"Pod"},"scope":"Namespaced","verbs":["get"]}],"freshness":"Current"}]}]"#
        }
        "/apis" => "[]",
        _ => return None,
    };
    let body = format!(
        r#"{{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{{}},"items":{items}}}"#
    );
    Some(format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n{body}",
        openapi_proxy::media::DISCOVERY_V2_CONTENT_TYPE,
        body.len()
    ))
}

/// A raw downstream owning the core group whose kept-alive connections
/// die under requests: it answers a connection's first request under
/// `/api/v1/` with 200 and `Connection: keep-alive`, and when the next one
/// arrives it closes the connection without answering — what an owner
/// closing an idle connection while a request is on its way over it
/// looks like. Each such request line is recorded in `seen`.
fn closing_downstream(seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let seen = std::sync::Arc::clone(&seen);
            std::thread::spawn(move || {
                let mut answered = false;
                loop {
                    let Some(head) = read_head(&mut s) else { return };
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let line = head.lines().next().unwrap_or("").to_owned();
                    let path = line.split(' ').nth(1).unwrap_or("").to_owned();
                    if let Some(answer) = core_discovery(&path) {
                        if s.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                        continue;
                    }
                    seen.lock().expect("seen").push(line);
                    if answered {
                        // Closed under the request: no answer.
                        return;
                    }
                    answered = true;
                    let body = r#"{"kind":"PodList","apiVersion":"v1","items":[]}"#;
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\
                         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if s.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// An owner that closes a kept-alive connection as a request arrives on it
/// (issue 30, item 6: 503 "connector has been disconnected"): a GET is
/// sent again on a new connection and answered, as Go's `Transport` does;
/// a POST is not (the owner may have acted on it): it reaches the owner
/// once and its client gets 503.
#[actix_web::test]
async fn a_get_on_a_connection_the_owner_closed_is_retried_and_a_post_is_not() {
    let seen = std::sync::Arc::default();
    let owner = closing_downstream(std::sync::Arc::clone(&seen));
    let proxy = TestProxy::start_config(&front_door(vec![downstream(
        "kube",
        &format!("http://{owner}"),
        10,
    )]));
    routed(&proxy, "api/v1", "kube").await;
    let addr = proxy.running.addr;
    // One client connection: the same worker, so the same pool of
    // connections to the owner.
    let statuses = actix_web::rt::task::spawn_blocking(move || {
        let mut conn = crate::common::http1::Conn::plain(addr);
        let mut ask = |method: &str| {
            conn.send(
                format!(
                    "{method} /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: proxy\r\n\
                     Content-Length: 0\r\n\r\n"
                )
                .as_bytes(),
            );
            conn.response(method).expect("an answer").status
        };
        // The first GET opens a connection and leaves it kept alive; the
        // second is sent over it and the owner closes it; the third opens
        // another one, over which the POST goes.
        let gets = [ask("GET"), ask("GET"), ask("GET")];
        (gets, ask("POST"))
    })
    .await
    .expect("join");
    assert_eq!(statuses.0, [200, 200, 200], "every GET answered");
    assert_eq!(statuses.1, 503, "the POST is not sent again");
    let seen = seen.lock().expect("seen").clone();
    let posts = seen.iter().filter(|l| l.starts_with("POST ")).count();
    assert_eq!(posts, 1, "the owner saw the POST once: {seen:?}");
}

/// Reads a chunked body off `s` (no trailers), returning its length.
fn read_chunked(s: &mut std::net::TcpStream) -> usize {
    fn line(s: &mut std::net::TcpStream) -> String {
        let mut out = Vec::new();
        let mut byte = [0u8; 1];
        while !out.ends_with(b"\r\n") {
            if s.read(&mut byte).unwrap_or(0) == 0 {
                break;
            }
            out.push(byte[0]);
        }
        String::from_utf8_lossy(&out).trim().to_owned()
    }
    let mut total = 0;
    loop {
        let size = usize::from_str_radix(&line(s), 16).unwrap_or(0);
        if size == 0 {
            let _ = line(s);
            return total;
        }
        let mut chunk = vec![0u8; size + 2];
        if s.read_exact(&mut chunk).is_err() {
            return total;
        }
        total += size;
    }
}

/// An upgrade is piped once the owner switched protocols: bytes cross both
/// ways, in order, until the client closes; the owner gets the client's
/// token, the upgrade it asked for and no proxy credentials. On plain HTTP
/// with the direct writer (which takes it) and without (the first head is
/// read before actix-http).
#[actix_web::test]
async fn an_upgrade_is_piped_both_ways() {
    for direct_writes in [true, false] {
        upgrade_piped(direct_writes).await;
    }
}

async fn upgrade_piped(direct_writes: bool) {
    let (tx, heads) = std::sync::mpsc::channel();
    let owner = upgrading_downstream(tx);
    let proxy = TestProxy::start_config(&Config {
        direct_writes,
        ..front_door(vec![downstream("kube", &format!("http://{owner}"), 10)])
    });
    routed(&proxy, "api/v1", "kube").await;
    let addr = proxy.running.addr;
    let talk = actix_web::rt::task::spawn_blocking(move || {
        let mut c = std::net::TcpStream::connect(addr).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        c.write_all(
            b"POST /api/v1/namespaces/default/pods/p/exec?command=sh HTTP/1.1\r\nHost: proxy\r\n\
              Authorization: Bearer CLIENT\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\
              X-Stream-Protocol-Version: v4.channel.k8s.io\r\nX-Remote-User: admin\r\n\
              X-Remote-Group: system:masters\r\nX-Remote-Extra-Scopes: all\r\nContent-Length: 0\r\n\r\n",
        )
        .expect("request");
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !got.ends_with(b"hello ") {
            let n = c.read(&mut buf).expect("read");
            assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        let head = String::from_utf8_lossy(&got).into_owned();
        for round in 0..50 {
            let line = format!("line {round}\n");
            c.write_all(line.as_bytes()).expect("write");
            let mut back = vec![0u8; line.len()];
            c.read_exact(&mut back).expect("echo");
            assert_eq!(back, line.as_bytes());
        }
        head
    });
    let head = talk.await.expect("join");
    assert!(head.starts_with("HTTP/1.1 101 Switching Protocols\r\n"), "{head}");
    let sent = heads.recv_timeout(Duration::from_secs(5)).expect("the owner saw the upgrade");
    let lower = sent.to_ascii_lowercase();
    assert!(
        sent.starts_with("POST /api/v1/namespaces/default/pods/p/exec?command=sh HTTP/1.1\r\n"),
        "{sent}"
    );
    assert!(lower.contains("authorization: bearer client"), "{sent}");
    assert!(lower.contains("connection: upgrade") && lower.contains("upgrade: spdy/3.1"), "{sent}");
    assert!(lower.contains("x-stream-protocol-version: v4.channel.k8s.io"), "{sent}");
    assert!(lower.contains(&format!("host: {owner}")), "{sent}");
    assert!(!lower.contains("x-remote-"), "identity claims stay behind: {sent}");
    let metrics = proxy.get("/metrics", &[]).await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains(r#"openapi_proxy_front_door_requests_total{code="101",downstream="kube",verb="connect"} 1"#),
        "{text}"
    );
}

/// Over HTTPS: an HTTP/2 client's request is passed on, an upgrade (the
/// first request of its connection, as clients open them) is piped, and
/// the proxy's client certificate — its identity for its own polls — is
/// never presented for a passed-on request: a downstream that requires
/// one refuses the front door, which answers 503.
#[actix_web::test]
async fn over_https_upgrades_are_piped_and_the_proxys_certificate_stays_home() {
    use crate::common::http1::{Conn, tls_client};
    use crate::common::tls::{Pki, start_tls_site};
    use openapi_proxy::ServingTls;

    let pki = Pki::generate("front-door");
    let routes = Routes::default();
    let watched = routes.clone();
    discovery(&routes, false, &[("example.com", "v1")]);
    routes.set("/apis/example.com/v1/widgets", Route::json("{}"));
    let secure = start_tls_site(routes, &pki.server_cert, &pki.server_key, Some(&pki.client_ca))
        .expect("site");
    let (tx, heads) = std::sync::mpsc::channel();
    let owner = upgrading_downstream(tx);

    let mut identified = downstream("secure", &secure.url(), 10);
    identified.tls.ca = Some(pki.ca.clone().into());
    identified.tls.client_cert =
        Some((pki.client_cert.clone().into(), pki.client_key.clone().into()));
    let mut cfg = front_door(vec![identified, downstream("kube", &format!("http://{owner}"), 5)]);
    cfg.serving.tls =
        Some(ServingTls { cert_file: pki.server_cert.clone(), key_file: pki.server_key.clone() });
    let proxy = TestProxy::start_config(&cfg);
    routed(&proxy, "apis/example.com/v1", "secure").await;
    routed(&proxy, "api/v1", "kube").await;

    // HTTP/2, as client-go speaks it: passed on, and refused by the
    // downstream that wants a client certificate the front door never
    // presents.
    let mut h2 = (*tls_client(&pki.ca)).clone();
    h2.alpn_protocols = vec![b"h2".to_vec()];
    let client = awc::Client::builder()
        .connector(awc::Connector::new().rustls_0_23(std::sync::Arc::new(h2)))
        .timeout(Duration::from_secs(10))
        .finish();
    let refused = client
        .get(format!("{}/apis/example.com/v1/widgets", proxy.base))
        .send()
        .await
        .expect("an answer");
    assert_eq!(refused.version(), actix_web::http::Version::HTTP_2);
    // TLS 1.3 refuses a missing client certificate after the client's
    // side of the handshake: the exchange breaks (502) rather than the
    // connection (503). Either way the request never reached the site.
    assert!(
        [StatusCode::BAD_GATEWAY, StatusCode::SERVICE_UNAVAILABLE].contains(&refused.status()),
        "{}",
        refused.status()
    );
    assert!(
        watched.seen().iter().all(|s| !s.uri.contains("widgets")),
        "no client certificate crossed, so no request did"
    );

    // An HTTP/2 upload of unknown length (no Content-Length): streamed on,
    // chunked to the HTTP/1.1 owner, every byte there.
    let chunks = futures_util::stream::iter(
        (0..3).map(|i| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b'a' + i; 10_000]))),
    );
    let mut echoed = client
        .post(format!("{}/api/v1/echo", proxy.base))
        .send_stream(chunks)
        .await
        .expect("an answer");
    assert_eq!(echoed.status(), StatusCode::OK);
    let seen: serde_json::Value =
        serde_json::from_slice(&echoed.body().await.expect("body")).expect("JSON");
    assert_eq!(seen["length"], 30_000, "{seen}");
    assert_eq!(seen["chunked"], true, "{seen}");

    // An exec-like upgrade over TLS, piped.
    let addr = proxy.running.addr;
    let ca = pki.ca.clone();
    let head = actix_web::rt::task::spawn_blocking(move || {
        let mut conn = Conn::tls(addr, &tls_client(&ca));
        conn.send(
            b"GET /api/v1/namespaces/default/pods/p/attach HTTP/1.1\r\nHost: proxy\r\n\
              Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n",
        );
        let head = conn.response_head().expect("a response head");
        let stream = conn.stream();
        let mut hello = [0u8; 6];
        stream.read_exact(&mut hello).expect("greeting");
        assert_eq!(&hello, b"hello ");
        stream.get_mut().write_all(b"over tls\n").expect("write");
        stream.get_mut().flush().expect("flush");
        let mut back = [0u8; 9];
        stream.read_exact(&mut back).expect("echo");
        assert_eq!(&back, b"over tls\n");
        head
    })
    .await
    .expect("join");
    assert_eq!(head.status, 101, "{head:?}");
    assert!(heads.recv_timeout(Duration::from_secs(5)).expect("seen").contains("/pods/p/attach"));
}

/// A client that closes during a quiet watch ends the exchange at once,
/// as Go's server cancels the request: the downstream's connection is
/// closed and the watch's place in flight is free within a second or two,
/// not when the downstream next sends an event.
#[actix_web::test]
async fn a_client_closing_during_a_quiet_watch_ends_the_downstream_exchange() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let (tx, heads) = std::sync::mpsc::channel();
    let owner = raw_downstream(tx, std::sync::Arc::default());
    let proxy = TestProxy::start_config(&front_door(vec![downstream(
        "raw",
        &format!("http://{owner}"),
        0,
    )]));
    routed(&proxy, "api/v1", "raw").await;
    let long = r#"openapi_proxy_front_door_inflight{class="long_running"}"#;
    let inflight = || {
        let text = proxy.running.state.metrics.render();
        text.lines().find_map(|l| l.strip_prefix(long)?.trim().parse::<f64>().ok())
    };
    let mut client = tokio::net::TcpStream::connect(proxy.running.addr).await.expect("connect");
    client
        .write_all(b"GET /api/v1/quiet?watch=1 HTTP/1.1\r\nHost: p\r\n\r\n")
        .await
        .expect("request");
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while !seen.windows(5).any(|w| w == b"ADDED") {
        let n = tokio::time::timeout(Duration::from_secs(10), client.read(&mut buf))
            .await
            .expect("the event in time")
            .expect("read");
        assert!(n > 0, "the watch ended early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    assert_eq!(inflight(), Some(1.0));
    // Watching for the client's end costs nothing while the watch is
    // quiet (no task woken over and over).
    let cpu = || {
        let stat = std::fs::read_to_string("/proc/self/stat").expect("stat");
        let fields: Vec<&str> = stat.rsplit_once(')').expect("comm").1.split_whitespace().collect();
        // utime and stime, fields 14 and 15 of stat(5), in clock ticks.
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
    };
    let before = cpu();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let spent = cpu() - before;
    assert!(spent < 30, "{spent} ticks of CPU in one quiet second");
    drop(client);
    assert!(
        seen_within(heads, "closed /api/v1/quiet", Duration::from_secs(2)).await,
        "the downstream's connection stayed open after the client left"
    );
    eventually("the watch's place is free", || inflight() == Some(0.0)).await;

    // Before the owner's answer has begun, too.
    let (tx, heads) = std::sync::mpsc::channel();
    let owner = raw_downstream(tx, std::sync::Arc::default());
    let proxy = TestProxy::start_config(&front_door(vec![downstream(
        "raw",
        &format!("http://{owner}"),
        0,
    )]));
    routed(&proxy, "api/v1", "raw").await;
    let mut client = tokio::net::TcpStream::connect(proxy.running.addr).await.expect("connect");
    client
        .write_all(b"GET /api/v1/silent?watch=1 HTTP/1.1\r\nHost: p\r\n\r\n")
        .await
        .expect("request");
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(client);
    let closed = tokio::task::spawn_blocking(move || {
        heads.recv_timeout(Duration::from_secs(2)).is_ok_and(|h| h == "closed /api/v1/silent")
    })
    .await
    .expect("join");
    assert!(closed, "the request stayed with the owner after the client left");
}

/// A client that stops reading cannot make the proxy buffer: an endless
/// body is relayed only as fast as the client takes it, so the downstream
/// is held back too, and the proxy's memory stays flat.
#[actix_web::test]
async fn a_client_that_stops_reading_holds_the_downstream_back() {
    use crate::common::memory::peak_rss_kib;

    let written = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (tx, _heads) = std::sync::mpsc::channel();
    let owner = raw_downstream(tx, std::sync::Arc::clone(&written));
    let served = crate::front_door::kubectl::serve_front_door("slow", &format!("http://{owner}"));
    let base = served.base().await;
    let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().expect("address");
    raw_downstream_routed(addr).await;
    let before = peak_rss_kib(served.pid()).expect("runs");
    let mut slow = std::net::TcpStream::connect(addr).expect("connect");
    slow.write_all(b"GET /api/v1/endless HTTP/1.1\r\nHost: p\r\n\r\n").expect("request");
    let mut head = [0u8; 12];
    slow.read_exact(&mut head).expect("the answer begins");
    assert_eq!(&head, b"HTTP/1.1 200");
    // Not read any further for two seconds: the downstream could write
    // gigabytes in that time.
    actix_web::rt::time::sleep(Duration::from_secs(2)).await;
    let held = written.load(std::sync::atomic::Ordering::SeqCst);
    let peak = peak_rss_kib(served.pid()).expect("runs");
    eprintln!("not reading: the downstream wrote {held} bytes; peak RSS {before} -> {peak} KiB");
    assert!(held < 32 << 20, "the downstream was not held back: {held} bytes");
    assert!(peak - before < 16 * 1024, "the proxy buffered: {before} -> {peak} KiB");
    // Reading again, the stream goes on.
    let mut more = vec![0u8; 1 << 20];
    slow.read_exact(&mut more).expect("more of the body");
    drop(slow);
    served.stop();
}

/// An answer its owner frames both ways (`Content-Length` and
/// `Transfer-Encoding`) is the owner's failure, never a body cut where one
/// of the two says: for a watch (read by the front door itself) and for
/// a short request (read by the pooled client) alike.
#[actix_web::test]
async fn an_answer_with_two_framings_is_the_owners_failure() {
    let (tx, _heads) = std::sync::mpsc::channel();
    let owner = raw_downstream(tx, std::sync::Arc::default());
    let served =
        crate::front_door::kubectl::serve_front_door("framing", &format!("http://{owner}"));
    let base = served.base().await;
    let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().expect("address");
    raw_downstream_routed(addr).await;
    for target in ["/api/v1/ambiguous?watch=1", "/api/v1/ambiguous"] {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        let head = format!("GET {target} HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n");
        s.write_all(head.as_bytes()).expect("request");
        let mut answer = String::new();
        s.read_to_string(&mut answer).expect("answer");
        assert!(answer.starts_with("HTTP/1.1 502"), "{target}: {answer}");
        assert!(answer.contains(r#""kind":"Status""#) && !answer.contains("hello"), "{answer}");
    }
    served.stop();
}

/// A watch that bursts 900 KB at once to clients that do not read holds
/// at most [`BURST_BOUND_KIB`] of the proxy's memory per connection: the
/// answer is handed to the connection only as fast as it is written, the
/// rest waits at the downstream (TCP back-pressure), whatever the burst.
#[actix_web::test]
async fn a_burst_to_clients_that_do_not_read_holds_little_per_connection() {
    use crate::common::memory::peak_rss_kib;

    const WATCHES: u64 = 50;
    let (tx, _heads) = std::sync::mpsc::channel();
    let owner = raw_downstream(tx, std::sync::Arc::default());
    let served = crate::front_door::kubectl::serve_front_door("burst", &format!("http://{owner}"));
    let base = served.base().await;
    let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().expect("address");
    raw_downstream_routed(addr).await;
    // One watch first, so that what every connection shares (the worker's
    // pools, the client's first buffers) is in `before`.
    let mut warm = std::net::TcpStream::connect(addr).expect("connect");
    warm.write_all(b"GET /api/v1/burst?watch=1 HTTP/1.1\r\nHost: p\r\n\r\n").expect("request");
    let mut body = vec![0u8; 900 * 1024];
    warm.read_exact(&mut body).expect("the burst, read");
    drop(warm);
    actix_web::rt::time::sleep(Duration::from_millis(500)).await;
    let before = peak_rss_kib(served.pid()).expect("runs");
    let mut idle = Vec::new();
    for _ in 0..WATCHES {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        s.write_all(b"GET /api/v1/burst?watch=1 HTTP/1.1\r\nHost: p\r\n\r\n").expect("request");
        let mut head = [0u8; 12];
        s.read_exact(&mut head).expect("the answer begins");
        assert_eq!(&head, b"HTTP/1.1 200");
        idle.push(s);
    }
    // Not read any further: the proxy takes what it will of the bursts.
    actix_web::rt::time::sleep(Duration::from_secs(2)).await;
    let peak = peak_rss_kib(served.pid()).expect("runs");
    let each = peak.saturating_sub(before) / WATCHES;
    eprintln!("{WATCHES} bursts not read: peak RSS {before} -> {peak} KiB, {each} KiB each");
    assert!(each <= BURST_BOUND_KIB, "{each} KiB held per connection, bound {BURST_BOUND_KIB}");
    // Read again, each burst arrives whole.
    for s in &mut idle {
        s.read_exact(&mut body[..256 * 1024]).expect("the burst goes on");
    }
    drop(idle);
    served.stop();
}

/// The memory per watch whose client does not read, whatever the burst
/// (docs/operations.md, "Streaming").
const BURST_BOUND_KIB: u64 = 56;

/// A passed-on request is not cut by the request timeout, which is for
/// clients sending their heads: a downstream that takes longer than it to
/// answer, and a watch quiet for longer than it, both go on; over HTTP/1,
/// where the stall guard and the lockstep apply.
#[actix_web::test]
async fn the_request_timeout_does_not_cut_a_slow_answer_or_a_quiet_watch() {
    use std::io::BufRead;

    use crate::common::cluster::{Cluster, Serves};
    use crate::harness::fake_cluster::TOKEN;

    let kube = site();
    discovery(&kube.routes, true, &[]);
    kube.routes
        .set("/api/v1/pods", Route::json(r#"{"slow":true}"#).delayed(Duration::from_millis(2500)));
    let mut cfg = front_door(vec![downstream("kube", &kube.url(), 10)]);
    cfg.serving.limits.request_timeout = Duration::from_secs(1);
    let proxy = TestProxy::start_config(&cfg);
    routed(&proxy, "api/v1", "kube").await;
    let slow = proxy.get("/api/v1/pods", &[]).await;
    assert_eq!(slow.status, StatusCode::OK);
    assert_eq!(slow.json()["slow"], true);

    let cluster = Cluster::start(TOKEN, Serves::Core);
    let mut cfg = front_door(vec![downstream("core", &cluster.url(), 10)]);
    cfg.serving.limits.request_timeout = Duration::from_secs(1);
    let proxy = TestProxy::start_config(&cfg);
    routed(&proxy, "api/v1", "core").await;
    let addr = proxy.running.addr;
    let watching = actix_web::rt::task::spawn_blocking(move || {
        let mut r = crate::front_door::kubectl::watch_pods(addr, Duration::from_secs(15));
        let mut seen = Vec::new();
        let mut line = String::new();
        while !seen.iter().any(|l: &String| l.contains("\"late\"")) {
            line.clear();
            assert!(r.read_line(&mut line).expect("the watch goes on") > 0, "ended: {seen:?}");
            seen.push(line.clone());
        }
        seen
    });
    // Quiet for three request timeouts, then an event.
    actix_web::rt::time::sleep(Duration::from_secs(3)).await;
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"late"},"spec":{"containers":[{"name":"c","image":"i"}]}}"#;
    let mut s =
        std::net::TcpStream::connect(cluster.url().trim_start_matches("http://")).expect("fake");
    s.write_all(
        format!(
            "POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: f\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{pod}",
            pod.len()
        )
        .as_bytes(),
    )
    .expect("create");
    let mut answer = String::new();
    std::io::BufReader::new(s).read_line(&mut answer).expect("answer");
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    let seen = watching.await.expect("join");
    assert!(seen[0].starts_with("HTTP/1.1 200"), "{seen:?}");
}

/// An upgrade the owner refuses (here: no token) comes back as the owner
/// answered it, status and `Status` body, with its length, and the
/// connection closes.
#[actix_web::test]
async fn a_refused_upgrade_is_passed_back_whole() {
    use crate::common::cluster::{Cluster, Serves};
    use crate::common::http1::Conn;
    use crate::harness::fake_cluster::TOKEN;

    let cluster = Cluster::start(TOKEN, Serves::Core);
    let proxy = TestProxy::start_config(&front_door(vec![downstream("core", &cluster.url(), 10)]));
    routed(&proxy, "api/v1", "core").await;
    let addr = proxy.running.addr;
    let response = actix_web::rt::task::spawn_blocking(move || {
        let mut conn = Conn::plain(addr);
        conn.send(
            b"GET /api/v1/namespaces/default/pods/demo/exec?command=ls&stdout=true HTTP/1.1\r\n\
              Host: p\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
              Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
              Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n",
        );
        conn.response("GET").expect("a whole response")
    })
    .await
    .expect("join");
    assert_eq!(response.status, 401, "{response:?}");
    assert!(response.closes(), "{response:?}");
    let status: serde_json::Value = serde_json::from_slice(&response.body).expect("a Status");
    assert_eq!(status["reason"], "Unauthorized");
    let length: usize = response.header("content-length").expect("length").parse().expect("n");
    assert_eq!(length, response.body.len());
}

/// Waits until the proxy at `addr` passes the core group on to the raw
/// fake downstream, which answers 404 for `/api/v1/pods` (unrouted is the
/// proxy's own 404 `Status`).
async fn raw_downstream_routed(addr: std::net::SocketAddr) {
    crate::common::proxy::eventually("the core group is routed", || {
        std::net::TcpStream::connect(addr)
            .and_then(|mut s| {
                s.write_all(b"GET /api/v1/pods HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n")?;
                let mut text = String::new();
                s.read_to_string(&mut text)?;
                Ok(text.starts_with("HTTP/1.1 404") && !text.contains("Status"))
            })
            .unwrap_or(false)
    })
    .await;
}

/// One request head read byte by byte from a raw fake downstream's
/// connection, through its blank line; `None` at end of stream.
pub(super) fn read_head(s: &mut impl std::io::Read) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    Some(head)
}

/// With the front door on, a discovery path with a trailing slash is still
/// metadata: the proxy answers it from its merged discovery, and the owner
/// never sees it, as it never sees the slash-less path.
#[actix_web::test]
async fn a_trailing_slash_discovery_path_is_metadata_not_passed_on() {
    let kube = site();
    discovery(&kube.routes, true, &[("apps", "v1")]);
    kube.routes.set("/api/v1/", Route::json(r#"{"from":"kube"}"#));
    kube.routes.set("/apis/apps/v1/", Route::json(r#"{"from":"kube"}"#));
    let proxy = TestProxy::start_config(&front_door(vec![downstream("kube", &kube.url(), 10)]));
    routed(&proxy, "apis/apps/v1", "kube").await;
    for path in ["/api/v1/", "/apis/apps/v1/", "/apis/apps/"] {
        let slashed = proxy.get(path, &[]).await;
        let plain = proxy.get(path.trim_end_matches('/'), &[]).await;
        assert_eq!(slashed.status, StatusCode::OK, "{path}");
        assert_eq!(slashed.body, plain.body, "{path}");
    }
    assert!(
        kube.routes.seen().iter().all(|s| !s.uri.ends_with('/')),
        "passed on: {:?}",
        kube.routes.seen()
    );
}
