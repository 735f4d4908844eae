//! Authenticated metadata (`metadataAuthentication: delegated`): discovery
//! and OpenAPI only for a bearer token the downstream authenticates, on
//! every path a request can take to them; the answers remembered for a
//! while, by token, and shared; a downstream that cannot say gives 503,
//! remembered by nobody; `none` (the default) unchanged.
//!
//! The downstream is a fake that answers a `SelfSubjectReview` 201 for the
//! token `good` and 401 for any other, and counts the reviews it got.

use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use bytes::Bytes;
use openapi_proxy::{Config, MetadataAuthentication, RawConfig, ServingTls};

use crate::common::cluster::{Cluster, Serves};
use crate::common::proxy::{POLL, TestProxy, config, downstream, testdata};
use crate::common::raw;
use crate::common::tls::Pki;
use crate::harness::fake_cluster::{TOKEN, run_as};

const REVIEWS: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
const REVIEWS_BETA: &str = "/apis/authentication.k8s.io/v1beta1/selfsubjectreviews";

/// One review's `Authorization` and body.
type Seen = (Option<String>, Bytes);

/// What the fake was asked, and how it answers.
#[derive(Clone, Default)]
struct Reviews {
    /// Reviews received.
    asked: Arc<AtomicUsize>,
    /// A status to answer every review with instead (0: by token).
    forced: Arc<AtomicU16>,
    /// Milliseconds to wait before answering a review.
    delay_ms: Arc<AtomicU64>,
    /// Serve `v1beta1` only, as Kubernetes 1.27 does (`v1` is a 404).
    beta_only: Arc<std::sync::atomic::AtomicBool>,
    /// Every review's `Authorization` and body.
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Reviews being answered now, and the most there were at once.
    in_flight: Arc<(AtomicUsize, AtomicUsize)>,
}

impl Reviews {
    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

async fn fake(req: HttpRequest, body: Bytes, reviews: web::Data<Reviews>) -> HttpResponse {
    let beta_only = reviews.beta_only.load(Ordering::SeqCst);
    let review = if beta_only { REVIEWS_BETA } else { REVIEWS };
    match (req.method().as_str(), req.path()) {
        ("POST", path) if path == review => {
            let authorization =
                req.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
            reviews.seen.lock().expect("not poisoned").push((authorization.clone(), body));
            reviews.asked.fetch_add(1, Ordering::SeqCst);
            let now = reviews.in_flight.0.fetch_add(1, Ordering::SeqCst) + 1;
            reviews.in_flight.1.fetch_max(now, Ordering::SeqCst);
            let delay = reviews.delay_ms.load(Ordering::SeqCst);
            if delay > 0 {
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
            reviews.in_flight.0.fetch_sub(1, Ordering::SeqCst);
            match reviews.forced.load(Ordering::SeqCst) {
                0 if authorization.as_deref() == Some("Bearer good") => HttpResponse::Created()
                    .content_type("application/json")
                    .body(r#"{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"username":"u"}}}"#),
                0 => HttpResponse::Unauthorized().content_type("application/json").body(
                    r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#,
                ),
                code => HttpResponse::build(StatusCode::from_u16(code).expect("a status")).finish(),
            }
        }
        ("GET", "/openapi/v2") => HttpResponse::Ok()
            .content_type("application/json")
            .body(std::fs::read(testdata("sample/widgets.v2.json")).expect("fixture")),
        _ => HttpResponse::NotFound().finish(),
    }
}

/// Starts the fake on a free loopback port; its URL.
fn start_fake(reviews: &Reviews) -> String {
    let data = web::Data::new(reviews.clone());
    let server =
        HttpServer::new(move || App::new().app_data(data.clone()).default_service(web::to(fake)))
            .workers(1)
            .disable_signals()
            .bind(("127.0.0.1", 0))
            .expect("bind");
    let addr = server.addrs()[0];
    actix_web::rt::spawn(server.run());
    format!("http://{addr}")
}

/// A proxy in front of `url` with `auth`, the given cache lifetime and
/// transport, once it serves the widgets documents.
async fn proxy(url: &str, auth: MetadataAuthentication, ttl: Duration, direct: bool) -> TestProxy {
    let mut cfg = config(vec![downstream("widgets", url, 0)]);
    cfg.metadata_authentication = auth;
    cfg.direct_writes = direct;
    cfg.serving.limits.metadata_authentication_cache_ttl = ttl;
    let proxy = TestProxy::start_config(&cfg);
    proxy
        .wait_for("the widgets documents", |s| {
            s.openapi.contains_key(crate::common::proxy::WIDGETS)
        })
        .await;
    proxy
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The 401 `Status`, as kube-apiserver writes it.
fn assert_unauthorized(status: StatusCode, body: &[u8], what: &str) {
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{what}");
    let v: serde_json::Value = serde_json::from_slice(body).expect("a Status");
    assert_eq!(v["kind"], "Status", "{what}");
    assert_eq!(v["apiVersion"], "v1");
    assert_eq!(v["status"], "Failure");
    assert_eq!(v["reason"], "Unauthorized");
    assert_eq!(v["code"], 401);
    assert_eq!(v["message"], "Unauthorized");
}

const GATED: [&str; 6] = [
    "/",
    "/api",
    "/apis",
    "/openapi/v2",
    "/openapi/v3",
    "/openapi/v3/apis/widgets.example.com/v1beta1",
];

/// What every transport must do: no token or a bad one, 401; the good
/// one, the very bytes a proxy without authentication serves; public
/// information open to all.
async fn gate_holds(proxy: &TestProxy, open: &TestProxy, reviews: &Reviews) {
    for path in GATED {
        let none = proxy.get(path, &[]).await;
        assert_unauthorized(none.status, &none.body, &format!("{path} without a token"));
        let bad = proxy.get(path, &[("Authorization", &bearer("bad"))]).await;
        assert_unauthorized(bad.status, &bad.body, &format!("{path} with a bad token"));
        let basic = proxy.get(path, &[("Authorization", "Basic Z29vZDpnb29k")]).await;
        assert_unauthorized(basic.status, &basic.body, &format!("{path} with basic credentials"));
        let good = proxy.get(path, &[("Authorization", &bearer("good"))]).await;
        let plain = open.get(path, &[]).await;
        assert_eq!(good.status, plain.status, "{path}");
        assert_eq!(good.body, plain.body, "{path}: the same bytes as without authentication");
    }
    for path in ["/version", "/healthz", "/livez", "/readyz", "/metrics"] {
        let status = proxy.get(path, &[]).await.status;
        assert_ne!(status, StatusCode::UNAUTHORIZED, "{path} is public");
    }
    // One review per token, whatever the number of requests and paths;
    // none for a request without a bearer token.
    assert_eq!(reviews.asked(), 2);
    let seen = reviews.seen.lock().expect("not poisoned").clone();
    for (authorization, body) in &seen {
        assert!(matches!(authorization.as_deref(), Some("Bearer good" | "Bearer bad")));
        let v: serde_json::Value = serde_json::from_slice(body).expect("JSON");
        assert_eq!(v["kind"], "SelfSubjectReview");
        assert_eq!(v["apiVersion"], "authentication.k8s.io/v1");
    }
}

#[actix_web::test]
async fn metadata_needs_a_token_the_downstream_accepts_direct_writer() {
    let reviews = Reviews::default();
    let url = start_fake(&reviews);
    let open = proxy(&url, MetadataAuthentication::None, Duration::from_secs(60), true).await;
    // `none`: as before, anyone reads, and nobody is asked.
    for path in GATED {
        assert_eq!(open.get(path, &[]).await.status, StatusCode::OK, "{path}");
    }
    assert_eq!(reviews.asked(), 0);
    let proxy = proxy(&url, MetadataAuthentication::Delegated, Duration::from_secs(60), true).await;
    gate_holds(&proxy, &open, &reviews).await;
    let metrics = proxy.get("/metrics", &[]).await;
    let text = String::from_utf8_lossy(&metrics.body);
    for series in [
        r#"openapi_proxy_metadata_authentications_total{cache="miss",result="accepted"} 1"#,
        r#"openapi_proxy_metadata_authentications_total{cache="miss",result="refused"} 1"#,
        r#"openapi_proxy_metadata_authentications_total{cache="none",result="refused"} 12"#,
    ] {
        assert!(text.contains(series), "{series}\n{text}");
    }
    // A request the direct writer hands to actix-http (HTTP/1.0) is held
    // to the same rule.
    let addr = proxy.running.addr;
    let get10 =
        |extra: &str| format!("GET /openapi/v3 HTTP/1.0\r\nHost: p\r\n{extra}\r\n").into_bytes();
    let refused = raw::send(addr, get10("Authorization: Bearer bad\r\n")).await;
    assert_unauthorized(StatusCode::from_u16(refused.status).unwrap(), refused.body(), "HTTP/1.0");
    let served = raw::send(addr, get10("Authorization: Bearer good\r\n")).await;
    assert_eq!(served.status, 200, "{}", served.head());
}

#[actix_web::test]
async fn metadata_needs_a_token_the_downstream_accepts_actix_http() {
    let reviews = Reviews::default();
    let url = start_fake(&reviews);
    let open = proxy(&url, MetadataAuthentication::None, Duration::from_secs(60), false).await;
    let proxy =
        proxy(&url, MetadataAuthentication::Delegated, Duration::from_secs(60), false).await;
    gate_holds(&proxy, &open, &reviews).await;
}

/// With the front door on, a WebSocket upgrade to a metadata path is
/// answered by the router through actix-http's upgrade service: no
/// credentials, no metadata there either.
#[actix_web::test]
async fn an_upgrade_to_metadata_is_held_to_the_rule_too() {
    let reviews = Reviews::default();
    let url = start_fake(&reviews);
    let mut cfg = config(vec![downstream("widgets", &url, 0)]);
    cfg.front_door = true;
    cfg.metadata_authentication = MetadataAuthentication::Delegated;
    let proxy = TestProxy::start_config(&cfg);
    proxy.wait_for("the widgets documents", |s| !s.openapi.is_empty()).await;
    let upgrade = |token: &str| {
        raw::get(
            "/openapi/v3",
            &[
                "Connection: Upgrade",
                "Upgrade: websocket",
                "Sec-WebSocket-Version: 13",
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                &format!("Authorization: Bearer {token}"),
            ],
        )
    };
    let refused = raw::send(proxy.running.addr, upgrade("bad")).await;
    assert_eq!(refused.status, 401, "{}", refused.head());
    let served = raw::send(proxy.running.addr, upgrade("good")).await;
    assert_eq!(served.status, 200, "{}", served.head());
}

#[actix_web::test]
async fn answers_are_remembered_for_the_ttl_then_asked_again() {
    let reviews = Reviews::default();
    let url = start_fake(&reviews);
    let proxy =
        proxy(&url, MetadataAuthentication::Delegated, Duration::from_millis(300), true).await;
    let good = [("Authorization", "Bearer good")];
    assert_eq!(proxy.get("/apis", &good).await.status, StatusCode::OK);
    assert_eq!(proxy.get("/openapi/v3", &good).await.status, StatusCode::OK);
    assert_eq!(reviews.asked(), 1, "the second request within the TTL makes no review");
    // Past the TTL, the next request asks again.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while reviews.asked() < 2 {
        assert!(std::time::Instant::now() < deadline, "no review after the TTL");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(proxy.get("/apis", &good).await.status, StatusCode::OK);
    }
    assert_eq!(proxy.get("/apis", &good).await.status, StatusCode::OK);
}

/// Past `metadataAuthenticationCacheEntries` the oldest answer is
/// forgotten: made-up tokens push a good one out, which is then asked
/// about again.
#[actix_web::test]
async fn past_the_bound_the_oldest_answer_is_forgotten() {
    let reviews = Reviews::default();
    let url = start_fake(&reviews);
    let mut cfg = config(vec![downstream("widgets", &url, 0)]);
    cfg.metadata_authentication = MetadataAuthentication::Delegated;
    cfg.serving.limits.metadata_authentication_cache_entries = 2;
    let proxy = TestProxy::start_config(&cfg);
    proxy.wait_for("the widgets documents", |s| !s.openapi.is_empty()).await;
    let ask = |token: &str| {
        let header = bearer(token);
        let proxy = &proxy;
        async move { proxy.get("/apis", &[("Authorization", header.as_str())]).await.status }
    };
    assert_eq!(ask("good").await, StatusCode::OK);
    assert_eq!(ask("good").await, StatusCode::OK);
    assert_eq!(reviews.asked(), 1);
    assert_eq!(ask("made-up-1").await, StatusCode::UNAUTHORIZED);
    assert_eq!(ask("good").await, StatusCode::OK);
    assert_eq!(reviews.asked(), 2, "two entries: good still kept");
    assert_eq!(ask("made-up-2").await, StatusCode::UNAUTHORIZED);
    assert_eq!(ask("good").await, StatusCode::OK);
    assert_eq!(reviews.asked(), 4, "the oldest, good, was forgotten and asked about again");
}

/// Kubernetes 1.27 has `SelfSubjectReview` in `v1beta1` only.
#[actix_web::test]
async fn a_cluster_without_v1_is_asked_in_v1beta1() {
    let reviews = Reviews::default();
    reviews.beta_only.store(true, std::sync::atomic::Ordering::SeqCst);
    let url = start_fake(&reviews);
    let proxy = proxy(&url, MetadataAuthentication::Delegated, Duration::from_secs(60), true).await;
    assert_eq!(
        proxy.get("/apis", &[("Authorization", "Bearer good")]).await.status,
        StatusCode::OK
    );
    assert_eq!(
        proxy.get("/apis", &[("Authorization", "Bearer bad")]).await.status,
        StatusCode::UNAUTHORIZED
    );
    let seen = reviews.seen.lock().expect("not poisoned").clone();
    assert_eq!(seen.len(), 2);
    for (_, body) in seen {
        let v: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(v["apiVersion"], "authentication.k8s.io/v1beta1");
    }
}

/// A flood of made-up tokens at once opens at most 200 reviews (each a
/// connection to the downstream); the rest get 429, and once the flood
/// is over a good token is served.
#[actix_web::test]
async fn a_flood_of_tokens_opens_a_bounded_number_of_reviews() {
    const FLOOD: usize = 230;
    let reviews = Reviews::default();
    reviews.delay_ms.store(1500, Ordering::SeqCst);
    let url = start_fake(&reviews);
    let proxy = proxy(&url, MetadataAuthentication::Delegated, Duration::from_secs(60), true).await;
    let headers: Vec<String> = (0..FLOOD).map(|n| bearer(&format!("made-up-{n}"))).collect();
    let answers = futures_util::future::join_all(
        headers
            .iter()
            .map(|h| async { proxy.get("/apis", &[("Authorization", h.as_str())]).await }),
    )
    .await;
    let busy: Vec<_> =
        answers.iter().filter(|a| a.status == StatusCode::TOO_MANY_REQUESTS).collect();
    let refused = answers.iter().filter(|a| a.status == StatusCode::UNAUTHORIZED).count();
    assert_eq!(busy.len() + refused, FLOOD, "only 401s and 429s");
    assert!(busy.len() >= FLOOD - 200, "{} busy", busy.len());
    assert!(busy.iter().all(|a| a.json()["reason"] == "TooManyRequests"));
    assert!(busy.iter().all(|a| a.header("retry-after") == "1"));
    assert!(reviews.in_flight.1.load(Ordering::SeqCst) <= 200);
    assert!(reviews.asked() <= 200, "{}", reviews.asked());
    reviews.delay_ms.store(0, Ordering::SeqCst);
    assert_eq!(
        proxy.get("/apis", &[("Authorization", "Bearer good")]).await.status,
        StatusCode::OK,
        "the places are given back"
    );
}

/// Requests with one token at once wait for one review.
#[actix_web::test]
async fn requests_at_once_share_one_review() {
    let reviews = Reviews::default();
    reviews.delay_ms.store(300, Ordering::SeqCst);
    let url = start_fake(&reviews);
    let proxy = proxy(&url, MetadataAuthentication::Delegated, Duration::from_secs(60), true).await;
    let answers = futures_util::future::join_all(
        (0..20).map(|_| proxy.get("/apis", &[("Authorization", "Bearer good")])),
    )
    .await;
    assert!(answers.iter().all(|a| a.status == StatusCode::OK));
    assert_eq!(reviews.asked(), 1);
}

/// A downstream that cannot say gets the client a 503 (not a 401, which
/// would tell it to drop a good token), and nothing is remembered: once
/// it answers again, so does the proxy.
#[actix_web::test]
async fn a_failing_review_is_a_503_and_not_remembered() {
    let reviews = Reviews::default();
    reviews.forced.store(500, Ordering::SeqCst);
    let url = start_fake(&reviews);
    let proxy = proxy(&url, MetadataAuthentication::Delegated, Duration::from_secs(60), true).await;
    let good = [("Authorization", "Bearer good")];
    let failed = proxy.get("/apis", &good).await;
    assert_eq!(failed.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(failed.json()["reason"], "ServiceUnavailable");
    assert_eq!(failed.header("retry-after"), "1");
    assert_eq!(proxy.get("/apis", &good).await.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(reviews.asked(), 2, "an error is not remembered");
    reviews.forced.store(0, Ordering::SeqCst);
    assert_eq!(proxy.get("/apis", &good).await.status, StatusCode::OK);
    let text = String::from_utf8_lossy(&proxy.get("/metrics", &[]).await.body).into_owned();
    assert!(
        text.contains(
            r#"openapi_proxy_metadata_authentications_total{cache="miss",result="error"} 2"#
        ),
        "{text}"
    );
}

/// Reviews go to the downstream serving `/api/v1`, else the first
/// configured; one that cannot be reached is a 503 as well.
#[actix_web::test]
async fn an_unreachable_reviewer_is_a_503() {
    let reviews = Reviews::default();
    let url = start_fake(&reviews);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let mut cfg = config(vec![
        downstream("gone", &format!("http://{closed}"), 0),
        downstream("widgets", &url, 0),
    ]);
    cfg.metadata_authentication = MetadataAuthentication::Delegated;
    let proxy = TestProxy::start_config(&cfg);
    proxy.wait_for("the widgets documents", |s| !s.openapi.is_empty()).await;
    let answer = proxy.get("/openapi/v3", &[("Authorization", "Bearer good")]).await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(reviews.asked(), 0, "the first configured downstream is asked");
}

/// kubectl with a good token reads discovery through a delegated front
/// door (HTTPS, HTTP/2); with a bad one it is told it is not logged in.
/// The review carries the client's token, never the proxy's.
#[actix_web::test]
async fn kubectl_reads_metadata_with_a_good_token_only() {
    const PROXY_TOKEN: &str = "proxy-own-token-77aa";
    let core = Cluster::start(TOKEN, Serves::Core);
    let pki = Pki::generate("metadata-authentication");
    let token = pki.dir.join("proxy-token");
    std::fs::write(&token, PROXY_TOKEN).expect("token file");
    let yaml = format!(
        "frontDoor: true\nmetadataAuthentication: delegated\n\
         downstreams:\n- name: core\n  url: {}\n  tokenFile: {}\n",
        core.url(),
        token.display()
    );
    let mut cfg = Config::from_raw(RawConfig::from_yaml(&yaml).expect("yaml")).expect("config");
    cfg.listen = "127.0.0.1:0".parse().expect("address");
    cfg.readiness_grace_period = Duration::ZERO;
    for d in &mut cfg.downstreams {
        d.poll_interval = POLL;
    }
    cfg.serving.tls =
        Some(ServingTls { cert_file: pki.server_cert.clone(), key_file: pki.server_key.clone() });
    let proxy = TestProxy::start_config(&cfg);
    proxy.wait_for("api/v1 owned", |s| s.owners.owner("api/v1").is_some()).await;
    let ca = pki.ca.to_str().expect("utf-8 path");

    let run = run_as(&proxy.base, ca, TOKEN, &["get", "--raw", "/apis"]).await;
    assert!(run.success, "{}", run.stderr);
    assert!(run.stdout.contains("\"APIGroupList\""), "{}", run.stdout);
    let run = run_as(&proxy.base, ca, TOKEN, &["api-resources"]).await;
    assert!(run.success, "{}", run.stderr);
    assert!(run.stdout.contains("configmaps"), "{}", run.stdout);

    let run = run_as(&proxy.base, ca, "bad", &["get", "--raw", "/apis"]).await;
    assert!(!run.success);
    assert!(run.stderr.contains("Unauthorized"), "{}", run.stderr);

    let reviews: Vec<_> = core.seen().into_iter().filter(|s| s.path == REVIEWS).collect();
    assert!(!reviews.is_empty());
    let client = format!("Bearer {TOKEN}");
    assert!(
        reviews.iter().all(|s| s.method == "POST"
            && matches!(s.authorization.as_deref(), Some(a) if a == client || a == "Bearer bad")),
        "{reviews:#?}"
    );
}
