//! The proxy's OpenAPI surface, black-box: a real proxy (started as `serve`
//! starts it) in front of real fake downstreams serving real Kubernetes
//! documents. Wire rules: docs/wire.md#a-1 to #a-6, #b-1, #b-2, #b-9, #b-11.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use actix_web::http::StatusCode;
use bytes::Bytes;
use openapi_proxy::DocumentKey;
use openapi_proxy::demo::{Route, Site, v3_routes, version_body};
use openapi_proxy::sha512_hex;

use openapi_proxy::{Config, DownstreamConfig};

use crate::common::proxy::{
    TestProxy, WIDGETS, downstream, eventually, request, site, testdata, widgets_site,
};
use crate::common::shared::shared_testdata;

const K8S_1_24_V3: &str = "kube-openapi/pkg/util/proto/testdata/openapi_v3_0_0";
const K8S_1_27_V2: &str = "kube-openapi/pkg/schemaconv/testdata/swagger.json";

/// Kubernetes 1.24's own v3 documents, keyed as kube-apiserver keys them.
fn kube_1_24_v3() -> BTreeMap<DocumentKey, Bytes> {
    let mut docs = BTreeMap::new();
    for (key, file) in [
        ("api/v1", "v1.json"),
        ("apis/apps/v1", "apps/v1.json"),
        ("apis/batch/v1", "batch/v1.json"),
        ("apis/batch/v1beta1", "batch/v1beta1.json"),
        ("apis/apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1.json"),
    ] {
        let path = shared_testdata(&format!("{K8S_1_24_V3}/{file}"));
        docs.insert(
            DocumentKey::parse(key).expect("key"),
            Bytes::from(std::fs::read(path).expect("read")),
        );
    }
    docs
}

/// A downstream publishing `docs` as OpenAPI v3, plus `/version`.
fn v3_site(docs: &BTreeMap<DocumentKey, Bytes>) -> Site {
    let s = site();
    s.routes.replace(v3_routes(docs));
    s.routes.set("/version", Route::json(version_body(24)));
    s
}

async fn started(downstreams: Vec<openapi_proxy::DownstreamConfig>, keys: usize) -> TestProxy {
    let proxy = TestProxy::start(downstreams);
    proxy.wait_for("documents published", |s| s.openapi.len() >= keys).await;
    proxy
}

#[actix_web::test]
async fn root_lists_every_document_under_its_hash_and_each_hash_is_sha512_of_the_bytes_served() {
    let docs = kube_1_24_v3();
    let ds = v3_site(&docs);
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], docs.len()).await;

    let root = proxy.get("/openapi/v3", &[]).await;
    assert_eq!(root.status, StatusCode::OK);
    assert_eq!(root.header("content-type"), "application/json");
    assert_eq!(root.header("cache-control"), "no-cache, private");
    assert_eq!(root.header("etag"), format!("\"{}\"", sha512_hex(&root.body)));
    let paths = root.json()["paths"].as_object().expect("paths").clone();
    let keys: Vec<&str> = paths.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "api/v1",
            "apis/apiextensions.k8s.io/v1",
            "apis/apps/v1",
            "apis/batch/v1",
            "apis/batch/v1beta1"
        ]
    );
    for (key, entry) in &paths {
        assert_eq!(entry.as_object().expect("entry").len(), 1, "only serverRelativeURL");
        let url = entry["serverRelativeURL"].as_str().expect("url");
        let hash = url.strip_prefix(&format!("/openapi/v3/{key}?hash=")).expect("url shape");
        assert!(
            hash.len() == 128 && hash.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()),
            "{hash}"
        );
        let doc = proxy.get(url, &[("Accept", "application/json")]).await;
        assert_eq!(doc.status, StatusCode::OK, "{url}");
        assert_eq!(sha512_hex(&doc.body), hash, "{key}: hash is not SHA-512 of the served bytes");
        // Pass-through: the downstream's bytes, unchanged.
        assert!(doc.body == docs[&DocumentKey::parse(key).expect("key")], "{key} bytes changed");
        assert_eq!(doc.header("etag"), format!("\"{hash}\""));
        assert_eq!(doc.header("content-type"), "application/json");
        assert!(doc.header_all("vary").contains(&"Accept".to_owned()));
        assert_eq!(doc.header("cache-control"), "public, immutable");
        let expires =
            httpdate::parse_http_date(&doc.header("expires")).expect("Expires is an HTTP date");
        let ahead = expires.duration_since(SystemTime::now()).expect("in the future");
        assert!(
            ahead > Duration::from_secs(364 * 86400) && ahead < Duration::from_secs(366 * 86400),
            "{ahead:?}"
        );
    }
}

#[actix_web::test]
async fn stale_hash_redirects_to_the_current_url_and_no_hash_must_revalidate() {
    let docs = kube_1_24_v3();
    let ds = v3_site(&docs);
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], docs.len()).await;
    let current = proxy.running.state.store.load().openapi["apis/apps/v1"]
        .location
        .to_str()
        .unwrap()
        .to_owned();

    let moved = proxy.get("/openapi/v3/apis/apps/v1?hash=WRONG", &[]).await;
    assert_eq!(moved.status, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(moved.header("location"), current);
    assert!(moved.body.is_empty());

    // Paths and keys are lower case already; only the hash changes.
    let lower = current.to_lowercase();
    let lower = proxy.get(&lower, &[]).await;
    assert_eq!(lower.status, StatusCode::MOVED_PERMANENTLY, "hash comparison is case-sensitive");

    let plain = proxy.get("/openapi/v3/apis/apps/v1", &[]).await;
    assert_eq!(plain.status, StatusCode::OK);
    assert_eq!(plain.header("cache-control"), "no-cache, private");
    assert!(plain.header("expires").is_empty());

    let empty = proxy.get("/openapi/v3/apis/apps/v1?hash=", &[]).await;
    assert_eq!(empty.status, StatusCode::OK, "an empty hash counts as absent");
}

#[actix_web::test]
async fn if_none_match_gives_304_for_root_and_documents() {
    let docs = kube_1_24_v3();
    let ds = v3_site(&docs);
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], docs.len()).await;
    let root = proxy.get("/openapi/v3", &[]).await;
    let etag = root.header("etag");
    let again = proxy.get("/openapi/v3", &[("If-None-Match", &etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), etag);

    let doc = proxy.get("/openapi/v3/api/v1", &[]).await;
    let etag = doc.header("etag");
    for inm in [etag.clone(), format!("W/{etag}"), format!("\"nope\", {etag}"), "*".to_owned()] {
        let r = proxy.get("/openapi/v3/api/v1", &[("If-None-Match", &inm)]).await;
        assert_eq!(r.status, StatusCode::NOT_MODIFIED, "If-None-Match: {inm}");
        assert!(r.header("content-type").is_empty());
    }
    let r = proxy.get("/openapi/v3/api/v1", &[("If-None-Match", "\"other\"")]).await;
    assert_eq!(r.status, StatusCode::OK);
}

#[actix_web::test]
async fn accept_negotiation_unknown_keys_methods_and_head() {
    let docs = kube_1_24_v3();
    let ds = v3_site(&docs);
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], docs.len()).await;
    let path = "/openapi/v3/apis/batch/v1";
    for accept in ["text/html", "application/test"] {
        let r = proxy.get(path, &[("Accept", accept)]).await;
        assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE, "{accept}");
        assert!(r.body.is_empty());
        assert_eq!(r.header("vary"), "Accept");
    }
    for accept in [
        "application/com.github.proto-openapi.spec.v3@v1.0+protobuf;q=0.5, application/json",
        "*/*",
        "application/*",
        "application/json, */*",
    ] {
        let r = proxy.get(path, &[("Accept", accept)]).await;
        assert_eq!(r.status, StatusCode::OK, "{accept}");
        assert_eq!(r.header("content-type"), "application/json");
    }
    let unknown = proxy.get("/openapi/v3/apis/nope/v1", &[]).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let status = unknown.json();
    assert_eq!((&status["kind"], &status["code"]), (&"Status".into(), &404.into()));
    assert!(
        status["message"].as_str().is_some_and(|m| m.contains("GET /openapi/v3 lists")),
        "{status}"
    );
    let unknown_406 = proxy.get("/openapi/v3/apis/nope/v1", &[("Accept", "text/html")]).await;
    assert_eq!(
        unknown_406.status,
        StatusCode::NOT_ACCEPTABLE,
        "negotiation comes before the lookup"
    );
    // The key is percent-decoded as Go's URL.Path is.
    let encoded = proxy.get("/openapi/v3/apis%2Fbatch%2Fv1", &[]).await;
    assert_eq!(encoded.status, StatusCode::OK);
    assert_eq!(encoded.body, proxy.get(path, &[]).await.body);
    for odd in ["/openapi/v3/", "/openapi/v3x", "/openapi/v3/%FF", "/openapi/v3/apis/batch/v1/"] {
        assert_eq!(proxy.get(odd, &[]).await.status, StatusCode::NOT_FOUND, "{odd}");
    }

    let get = proxy.get(path, &[]).await;
    let head = request("HEAD", &format!("{}{path}", proxy.base), &[]).await;
    assert_eq!(head.status, StatusCode::OK);
    assert!(head.body.is_empty());
    assert_eq!(head.header("content-length"), get.body.len().to_string());
    assert_eq!(head.header("etag"), get.header("etag"));
    for method in ["POST", "PUT", "DELETE", "PATCH"] {
        let r = request(method, &format!("{}{path}", proxy.base), &[]).await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(r.header("allow"), "GET, HEAD");
    }
}

#[actix_web::test]
async fn gzip_is_served_to_clients_that_accept_it() {
    let docs = kube_1_24_v3();
    let ds = v3_site(&docs);
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], docs.len()).await;
    let plain = proxy.get("/openapi/v3/api/v1", &[]).await;
    let gz = proxy.get("/openapi/v3/api/v1", &[("Accept-Encoding", "gzip")]).await;
    assert_eq!(gz.header("content-encoding"), "gzip");
    assert!(gz.header_all("vary").contains(&"Accept-Encoding".to_owned()));
    assert!(gz.body.len() * 4 < plain.body.len(), "{} vs {}", gz.body.len(), plain.body.len());
    let mut inflated = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz.body[..]), &mut inflated)
        .expect("gzip");
    assert!(inflated == plain.body, "gzip body inflates to the plain body");
    assert_eq!(
        gz.header("etag"),
        plain.header("etag"),
        "the ETag names the content, not the encoding"
    );
    // The proxy keeps a document this large gzipped only (issue 16): the
    // plain answer is inflated, byte for byte what the downstream served,
    // the second one from what the first inflated.
    let key = DocumentKey::parse("api/v1").expect("a key");
    assert!(docs[&key].len() > 64 * 1024, "large enough to be kept gzipped only");
    assert!(plain.body == docs[&key], "the plain answer is the downstream's bytes");
    let again = proxy.get("/openapi/v3/api/v1", &[]).await;
    assert!(again.body == docs[&key]);
    let metrics = proxy.get("/metrics", &[]).await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(text.contains("openapi_proxy_identity_bodies_total{result=\"inflated\"} 1"), "{text}");
    assert!(text.contains("openapi_proxy_identity_bodies_total{result=\"kept\"} 1"), "{text}");
}

#[actix_web::test]
async fn v2_only_downstream_is_split_and_converted() {
    let v2 = shared_testdata(K8S_1_27_V2);
    let ds = site();
    ds.routes.set("/openapi/v2", Route::json(std::fs::read(v2).expect("read")));
    let proxy = started(vec![downstream("kube127", &ds.url(), 1)], 48).await;
    let root = proxy.get("/openapi/v3", &[]).await.json();
    assert_eq!(root["paths"].as_object().expect("paths").len(), 48);
    let url = root["paths"]["apis/apps/v1"]["serverRelativeURL"].as_str().expect("apps/v1");
    let doc = proxy.get(url, &[]).await;
    let doc = doc.json();
    assert_eq!(doc["openapi"], "3.0.0");
    assert!(doc.get("servers").is_none());
    let deploy = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]["post"];
    assert_eq!(
        deploy["requestBody"]["content"]["*/*"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.api.apps.v1.Deployment"
    );
    let spec = &doc["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentSpec"]["properties"];
    assert!(
        spec["template"]["allOf"][0]["$ref"].is_string(),
        "$ref with description wrapped in allOf"
    );
    let ios = &doc["components"]["schemas"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"];
    assert_eq!(ios["anyOf"], serde_json::json!([{"type": "integer"}, {"type": "string"}]));
    // And the original is passed through for v2 clients.
    let v2 = proxy.get("/openapi/v2", &[("Accept", "application/json")]).await;
    assert_eq!(v2.status, StatusCode::OK);
    assert_eq!(v2.json()["swagger"], "2.0");
}

#[actix_web::test]
async fn a_changed_spec_gets_a_new_hash_and_the_old_url_redirects_to_it() {
    let ds = widgets_site();
    let proxy = started(vec![downstream("widgets", &ds.url(), 1)], 4).await;
    let key = "apis/widgets.example.com/v1beta1";
    let old = proxy.running.state.store.load().openapi[key].location.to_str().unwrap().to_owned();
    let generation = proxy.generation();

    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(testdata("sample/widgets.v2.json")).unwrap())
            .unwrap();
    doc["definitions"]["com.example.widgets.v1beta1.WidgetSpec"]["properties"]["size"]["description"] =
        serde_json::json!("Size of the widget, in cogs.");
    ds.routes.set("/openapi/v2", Route::json(serde_json::to_vec(&doc).unwrap()));
    proxy.wait_for("new snapshot", |s| s.generation > generation).await;

    let new = proxy.running.state.store.load().openapi[key].location.to_str().unwrap().to_owned();
    assert_ne!(new, old);
    let r = proxy.get(&old, &[]).await;
    assert_eq!(r.status, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(r.header("location"), new);
    let r = proxy.get(&new, &[]).await;
    assert!(String::from_utf8_lossy(&r.body).contains("in cogs"));
    // Unchanged documents of the same downstream keep their hash.
    let root_key = proxy.running.state.store.load().openapi["version"].rendered.hash.clone();
    assert_eq!(root_key, sha512_hex(&proxy.get("/openapi/v3/version", &[]).await.body));
}

#[actix_web::test]
async fn a_downstream_going_down_keeps_its_documents_served_byte_identical() {
    let ds = widgets_site();
    let proxy = started(vec![downstream("widgets", &ds.url(), 1)], 4).await;
    let url = proxy.running.state.store.load().openapi["apis/widgets.example.com/v1beta1"]
        .location
        .to_str()
        .unwrap()
        .to_owned();
    let before = proxy.get(&url, &[]).await;

    ds.handle.stop(false).await;
    eventually("the failure shows in /metrics", || {
        proxy
            .running
            .state
            .metrics
            .render()
            .contains("openapi_proxy_downstream_up{downstream=\"widgets\"} 0")
    })
    .await;
    let during = proxy.get(&url, &[]).await;
    assert_eq!(during.status, StatusCode::OK);
    assert!(during.body == before.body, "served bytes changed while the downstream is down");
    let metrics = proxy.get("/metrics", &[]).await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains(
            "openapi_proxy_downstream_errors_total{downstream=\"widgets\",reason=\"connect\"}"
        ),
        "{text}"
    );
    assert_eq!(
        proxy.get("/readyz", &[]).await.status,
        StatusCode::OK,
        "a failing downstream does not make the proxy unready"
    );
}

#[actix_web::test]
async fn the_higher_priority_downstream_wins_a_conflict_and_it_is_counted() {
    let a = widgets_site();
    let b = site();
    b.routes.replace(v3_routes(&BTreeMap::from([(
        DocumentKey::parse("apis/widgets.example.com/v1beta1").unwrap(),
        Bytes::from_static(
            b"{\"openapi\":\"3.0.0\",\"info\":{\"title\":\"b\",\"version\":\"1\"},\"paths\":{}}",
        ),
    )])));
    let proxy =
        started(vec![downstream("low", &a.url(), 1), downstream("high", &b.url(), 5)], 4).await;
    eventually("both polled", || {
        proxy.running.state.metrics.render().contains("openapi_proxy_key_conflicts_total 1")
    })
    .await;
    let doc = proxy.get("/openapi/v3/apis/widgets.example.com/v1beta1", &[]).await;
    assert_eq!(doc.json()["info"]["title"], "b");
}

#[actix_web::test]
async fn two_proxies_serve_identical_root_bytes() {
    let ds = widgets_site();
    let one = started(vec![downstream("widgets", &ds.url(), 1)], 4).await;
    let two = started(vec![downstream("widgets", &ds.url(), 1)], 4).await;
    let a = one.get("/openapi/v3", &[]).await;
    let b = two.get("/openapi/v3", &[]).await;
    assert!(a.body == b.body);
    assert_eq!(a.header("etag"), b.header("etag"));
}

#[actix_web::test]
async fn downstreams_get_conditional_requests_and_never_the_clients_credentials() {
    let ds = widgets_site();
    let proxy = started(vec![downstream("widgets", &ds.url(), 1)], 4).await;
    let _ = proxy
        .get("/openapi/v3", &[("Authorization", "Bearer client-secret"), ("Cookie", "session=x")])
        .await;
    eventually("a second poll", || {
        ds.routes.seen().iter().filter(|r| r.uri == "/openapi/v2").count() >= 3
    })
    .await;
    let seen = ds.routes.seen();
    assert!(
        seen.iter().any(|r| r.uri == "/openapi/v2" && r.headers.contains_key("if-none-match")),
        "later polls are conditional"
    );
    for r in &seen {
        assert!(!r.headers.contains_key("authorization"), "{} carried Authorization", r.uri);
        assert!(!r.headers.contains_key("cookie"), "{} carried a cookie", r.uri);
    }
}

#[actix_web::test]
async fn version_and_openapi_v2_pass_through_from_the_highest_priority_downstream() {
    let docs = kube_1_24_v3();
    let ds = v3_site(&docs);
    let v2 = Bytes::from(std::fs::read(testdata("sample/widgets.v2.json")).unwrap());
    ds.routes.set("/openapi/v2", Route::json(v2.clone()));
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], docs.len()).await;
    eventually("v2 fetched", || proxy.running.state.store.load().openapi_v2.get().is_some()).await;
    let version = proxy.get("/version", &[]).await;
    assert!(version.body == version_body(24));
    let r = proxy.get("/openapi/v2", &[]).await;
    assert!(r.body == v2, "bytes unchanged");
    let pb = proxy
        .get(
            "/openapi/v2",
            &[("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")],
        )
        .await;
    // The proxy's own encoding, though this downstream has none
    // (tests/integration/serving/protobuf.rs decodes it).
    assert_eq!(pb.status, StatusCode::OK);
    assert_eq!(
        pb.header("content-type"),
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    assert_eq!(pb.header("etag"), r.header("etag"));
    // What no form meets is still explained, for the user whose client got it.
    let none = proxy.get("/openapi/v2", &[("Accept", "text/html")]).await;
    assert_eq!(none.status, StatusCode::NOT_ACCEPTABLE);
    let status: serde_json::Value = serde_json::from_slice(&none.body).expect("a Status body");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["code"], 406);
}

/// Readiness waits for data, not for a first try: a downstream whose first
/// answer is slow keeps the proxy unready until its documents are here.
#[actix_web::test]
async fn readiness_waits_for_the_documents_of_every_downstream() {
    let slow = widgets_site();
    // Long enough that the first answers below come before the first poll
    // ends, and within the 2 s timeout of each request.
    slow.routes.set(
        "/openapi/v3",
        Route::status(StatusCode::NOT_FOUND).delayed(Duration::from_millis(1500)),
    );
    let config = Config {
        readiness_grace_period: Duration::from_secs(3600),
        ..crate::common::proxy::config(vec![downstream("slow", &slow.url(), 1)])
    };
    let proxy = TestProxy::start_config(&config);
    let waiting = proxy.get("/readyz", &[]).await;
    assert_eq!(waiting.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        String::from_utf8_lossy(&waiting.body),
        "[+]ping ok\n[-]downstream/slow failed: no documents yet, and no downstream has delivered any\nreadyz check failed\n"
    );
    assert_eq!(proxy.get("/healthz", &[]).await.status, StatusCode::OK);
    assert_eq!(proxy.get("/livez", &[]).await.status, StatusCode::OK);
    eventually("ready", || proxy.running.state.store.load().ready).await;
    assert!(
        proxy.running.state.store.load().openapi.contains_key(WIDGETS),
        "ready only with the documents"
    );
    let ready = proxy.get("/readyz", &[]).await;
    assert_eq!((ready.status, &ready.body[..]), (StatusCode::OK, &b"ok"[..]));
    let verbose = proxy.get("/readyz?verbose", &[]).await;
    assert_eq!(
        String::from_utf8_lossy(&verbose.body),
        "[+]ping ok\n[+]downstream/slow ok\nreadyz check passed\n"
    );
    let livez = proxy.get("/livez?verbose=1", &[]).await;
    assert_eq!(String::from_utf8_lossy(&livez.body), "[+]ping ok\nlivez check passed\n");
}

/// A downstream that never delivers — a name that does not resolve — and
/// nothing else: never ready, however long it runs, and the log does not
/// speak of last good documents that never were.
#[actix_web::test]
async fn a_downstream_that_never_delivers_never_makes_the_proxy_ready() {
    let (logs, _guard) = crate::common::logs::capture();
    let config = Config {
        readiness_grace_period: Duration::ZERO,
        ..crate::common::proxy::config(vec![downstream(
            "kube",
            "https://no-such-host.invalid:6443",
            1,
        )])
    };
    let proxy = TestProxy::start_config(&config);
    proxy.wait_polled("kube").await;
    // Several more rounds, and a grace period long past.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let readyz = proxy.get("/readyz", &[]).await;
    assert_eq!(readyz.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(!proxy.running.state.store.load().ready);
    assert_eq!(
        logs.count(
            tracing::Level::WARN,
            "kube",
            "poll failed; no documents from this downstream yet"
        ),
        1,
        "{:?}",
        logs.about(tracing::Level::WARN, "kube")
    );
    assert_eq!(logs.count(tracing::Level::WARN, "kube", "poll failed; keeping last good"), 0);
}

/// Six documents, each answered after 8 s: the slow downstream's first
/// round takes 8 s and more, however many documents are fetched at once
/// (a round fetches several together since issue 16, so a slow round is
/// slow documents, not many). Next to a downstream that delivered, the
/// proxy is ready once the grace period (2 s) has passed, not when the
/// slow round ends; the slow documents appear when it does.
#[actix_web::test]
async fn readiness_stops_waiting_for_a_slow_downstream_after_the_grace_period() {
    let slow = site();
    let mut paths = serde_json::Map::new();
    for i in 0..6 {
        let key = format!("apis/g{i}.example.com/v1");
        let url = format!("/openapi/v3/{key}?hash={i:04}");
        paths.insert(key.clone(), serde_json::json!({ "serverRelativeURL": url }));
        let doc = format!(
            r#"{{"openapi":"3.0.0","info":{{"title":"g{i}","version":"v1"}},"paths":{{}}}}"#
        );
        slow.routes
            .set(&format!("/openapi/v3/{key}"), Route::json(doc).delayed(Duration::from_secs(8)));
    }
    let root = serde_json::to_vec(&serde_json::json!({ "paths": paths })).expect("root");
    slow.routes.set("/openapi/v3", Route::json(root));
    let fast = widgets_site();
    let grace = Duration::from_secs(2);
    let config = Config {
        readiness_grace_period: grace,
        ..crate::common::proxy::config(vec![
            downstream("fast", &fast.url(), 1),
            DownstreamConfig {
                timeout: Duration::from_secs(20),
                ..downstream("slow", &slow.url(), 1)
            },
        ])
    };
    let started = std::time::Instant::now();
    let proxy = TestProxy::start_config(&config);
    proxy.wait_for("the fast documents", |s| s.openapi.contains_key(WIDGETS)).await;
    let ready_after = started.elapsed();
    let snapshot = proxy.running.state.store.load();
    assert!(ready_after >= grace, "ready before the grace period ended: {ready_after:?}");
    assert!(ready_after < Duration::from_secs(6), "ready after {ready_after:?}");
    let slow_documents =
        |s: &openapi_proxy::Snapshot| s.openapi.keys().filter(|k| k.starts_with("apis/g")).count();
    assert!(slow_documents(&snapshot) < 6, "ready only once the slow round ended");
    let verbose = proxy.get("/readyz?verbose", &[]).await;
    let text = String::from_utf8_lossy(&verbose.body);
    assert!(text.contains("[+]downstream/fast ok\n"), "{text}");
    assert!(text.contains("[+]downstream/slow ok: no documents yet"), "{text}");
    // The round goes on and its documents appear when it ends.
    proxy.wait_for("the six documents", |s| slow_documents(s) == 6).await;
}

#[actix_web::test]
async fn kubectl_reads_the_root_through_the_proxy() {
    let kubectl = crate::common::kubectl::pinned();
    let ds = widgets_site();
    let proxy = started(vec![downstream("widgets", &ds.url(), 1)], 4).await;
    let base = proxy.base.clone();
    let out = actix_web::rt::task::spawn_blocking(move || {
        std::process::Command::new(kubectl)
            .args(["--server", &base, "get", "--raw", "/openapi/v3"])
            .output()
    })
    .await
    .expect("join")
    .expect("kubectl runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let served = proxy.get("/openapi/v3", &[]).await;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        String::from_utf8_lossy(&served.body).trim()
    );
}
