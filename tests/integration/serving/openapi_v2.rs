//! The one `/openapi/v2` of all downstreams (docs/wire.md, A-13): a
//! Swagger-2.0-only downstream and a v3-only one (Kubernetes' own
//! documents) merged, as client-go's `OpenAPISchema()` reads it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use actix_web::http::StatusCode;
use bytes::Bytes;
use openapi_proxy::demo::{Route, Site, v3_routes};
use openapi_proxy::testkit::crd::CrdFleet;
use openapi_proxy::{DocumentKey, DownstreamConfig};
use serde_json::{Value, json};

use crate::common::proxy::{TestProxy, downstream, site, testdata};
use crate::common::shared::shared_testdata;

const K8S_1_24: &str = "kube-openapi/pkg/openapiconv/testdata_generated_from_k8s";

/// A downstream publishing only Kubernetes 1.24's v3 documents of `api/v1`
/// and `apis/batch/v1` (its `/openapi/v2` is a 404).
fn kubernetes_v3_only() -> Site {
    let ds = site();
    ds.routes.replace(kubernetes_v3_routes());
    ds
}

/// The routes of [`kubernetes_v3_only`].
fn kubernetes_v3_routes() -> Vec<(String, Route)> {
    let dir = shared_testdata(K8S_1_24);
    let docs: BTreeMap<DocumentKey, Bytes> = [("api/v1", "api.v1"), ("apis/batch/v1", "batch.v1")]
        .iter()
        .map(|(key, file)| {
            let body = std::fs::read(dir.join(format!("v3_{file}.json"))).expect("test data");
            (DocumentKey::parse(key).expect("key"), Bytes::from(body))
        })
        .collect();
    v3_routes(&docs)
}

/// The widgets Swagger 2.0 sample (its own `ObjectMeta`, unlike
/// Kubernetes'), also serving a stale copy of batch/v1's jobs, which
/// the other downstream owns.
fn widgets_with_a_copy_of_batch() -> Site {
    let mut doc: Value = serde_json::from_slice(
        &std::fs::read(testdata("sample/widgets.v2.json")).expect("fixture"),
    )
    .expect("JSON");
    doc["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs"] = json!({"get": {
        "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/io.k8s.api.batch.v1.Job"}}}
    }});
    doc["definitions"]["io.k8s.api.batch.v1.Job"] = json!({
        "description": "a stale copy",
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": "batch", "version": "v1", "kind": "Job"}],
    });
    let ds = site();
    ds.routes.set("/openapi/v2", Route::json(serde_json::to_vec(&doc).expect("JSON")));
    ds
}

/// Kubernetes (priority 10) and the widgets' server (1), whose copy of
/// batch/v1 Kubernetes' own outranks.
fn kube_and_widgets(kube: &Site, widgets: &Site) -> Vec<DownstreamConfig> {
    vec![downstream("kube", &kube.url(), 10), downstream("widgets", &widgets.url(), 1)]
}

/// Every group-version-kind listed in `definitions`, with how often.
fn kinds(definitions: &serde_json::Map<String, Value>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for def in definitions.values() {
        for gvk in def["x-kubernetes-group-version-kind"].as_array().into_iter().flatten() {
            let key = format!("{}/{}/{}", gvk["group"], gvk["version"], gvk["kind"]);
            *out.entry(key).or_default() += 1;
        }
    }
    out
}

#[actix_web::test]
async fn openapi_v2_merges_a_swagger_only_and_a_v3_only_downstream() {
    let kube = kubernetes_v3_only();
    let widgets = widgets_with_a_copy_of_batch();
    let proxy = TestProxy::start(kube_and_widgets(&kube, &widgets));
    proxy
        .wait_for("both downstreams in /openapi/v2", |s| {
            s.openapi.contains_key("apis/widgets.example.com/v1beta1")
                && s.openapi.get("apis/batch/v1").is_some_and(|e| &*e.downstream == "kube")
                && s.openapi.contains_key("api/v1")
        })
        .await;
    let r = proxy.get("/openapi/v2", &[("Accept", "application/json")]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("vary"), "Accept");
    let doc = r.json();
    assert_eq!(doc["swagger"], "2.0");
    let paths = doc["paths"].as_object().expect("paths");
    let defs = doc["definitions"].as_object().expect("definitions");

    // Both downstreams' kinds and paths.
    assert!(paths.contains_key("/apis/widgets.example.com/v1beta1/namespaces/{namespace}/widgets"));
    assert!(paths.contains_key("/api/v1/namespaces/{namespace}/pods"));
    assert!(defs.contains_key("com.example.widgets.v1beta1.Widget"));
    assert!(defs.contains_key("io.k8s.api.core.v1.Pod"));
    // The v3-only downstream converted down: references and bodies in v2 form.
    let create = &doc["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs"]["post"];
    assert_eq!(create["parameters"][0]["in"], "body");
    assert_eq!(create["parameters"][0]["schema"]["$ref"], "#/definitions/io.k8s.api.batch.v1.Job");

    // batch/v1 is kube's: its jobs path is kube's (widgets' copy has only
    // a GET), and widgets' stale Job definition is not there.
    let jobs = &doc["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs"];
    assert!(jobs.get("post").is_some(), "the owner's path");
    assert_ne!(defs["io.k8s.api.batch.v1.Job"]["description"], "a stale copy");

    // Widgets' own ObjectMeta clashes with Kubernetes': the higher priority
    // keeps the name, widgets' is renamed and its Widget refers to it.
    let meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    assert!(defs.contains_key(&format!("{meta}_v2")));
    assert_eq!(
        defs["com.example.widgets.v1beta1.Widget"]["properties"]["metadata"]["$ref"],
        format!("#/definitions/{meta}_v2")
    );
    let refs = r.body.windows(meta.len() + 1).filter(|w| *w == format!("{meta}\"").as_bytes());
    assert!(refs.count() > 1, "kube's types refer to the unrenamed one");

    // Each kind once.
    let kinds = kinds(defs);
    let twice: Vec<_> = kinds.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "listed twice: {twice:?}");
    for kind in [
        "\"widgets.example.com\"/\"v1beta1\"/\"Widget\"",
        "\"batch\"/\"v1\"/\"Job\"",
        "\"\"/\"v1\"/\"Pod\"",
    ] {
        assert!(kinds.contains_key(kind), "{kind} in {kinds:?}");
    }

    // Prepared once: ETag and 304 as for any document.
    let etag = r.header("etag");
    let again = proxy.get("/openapi/v2", &[("If-None-Match", &etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
}

/// One downstream's own `/openapi/v2` is served without being made, so it
/// says nothing of clients reading it: when a second downstream arrives,
/// the merge (at 5,000 CRDs, seconds and a hundred MiB) is not made aside
/// until a client asks.
#[actix_web::test]
async fn the_merge_is_not_made_aside_when_no_client_asked() {
    let kube = site();
    let widgets = widgets_with_a_copy_of_batch();
    let proxy = TestProxy::start(kube_and_widgets(&kube, &widgets));
    proxy
        .wait_for("the widgets' own /openapi/v2", |s| {
            s.openapi.contains_key("apis/widgets.example.com/v1beta1") && s.openapi_v2.is_made()
        })
        .await;
    kube.routes.replace(kubernetes_v3_routes());
    proxy.wait_for("both downstreams", |s| s.openapi.contains_key("api/v1")).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let slot = std::sync::Arc::clone(&proxy.running.state.store.load().openapi_v2);
    assert!(!slot.is_made(), "made aside with no client asking");
    let asked = proxy.get("/openapi/v2", &[]).await;
    assert_eq!(asked.status, StatusCode::OK);
    assert!(slot.is_made() && slot.was_asked());
}

/// Made by the first request, not by the build; once clients read it,
/// the builder makes the next one aside after a change.
#[actix_web::test]
async fn once_read_the_merged_openapi_v2_is_made_again_after_a_change_without_a_request() {
    let kube = kubernetes_v3_only();
    let widgets = widgets_with_a_copy_of_batch();
    let proxy = TestProxy::start(kube_and_widgets(&kube, &widgets));
    proxy
        .wait_for("both downstreams", |s| {
            s.openapi.contains_key("apis/widgets.example.com/v1beta1")
                && s.openapi.contains_key("api/v1")
        })
        .await;
    assert!(!proxy.running.state.store.load().openapi_v2.is_made(), "not made by the build");
    let first = proxy.get("/openapi/v2", &[]).await;
    assert_eq!(first.status, StatusCode::OK);

    let before = std::sync::Arc::clone(&proxy.running.state.store.load().openapi_v2);
    let mut doc: Value = serde_json::from_slice(
        &std::fs::read(testdata("sample/widgets.v2.json")).expect("fixture"),
    )
    .expect("JSON");
    doc["definitions"]["com.example.widgets.v1beta1.Widget"]["description"] = json!("changed");
    widgets.routes.set("/openapi/v2", Route::json(serde_json::to_vec(&doc).expect("JSON")));
    crate::common::proxy::eventually("a new /openapi/v2 made aside", || {
        let now = &proxy.running.state.store.load().openapi_v2;
        !std::sync::Arc::ptr_eq(now, &before) && now.is_made()
    })
    .await;
    let second = proxy.get("/openapi/v2", &[]).await.json();
    assert_eq!(
        second["definitions"]["com.example.widgets.v1beta1.Widget"]["description"],
        "changed"
    );
}

/// Merging what the downstreams bring may hold at most half the memory
/// budget at its peak (estimated from the inputs, `MakingCost`): past
/// that, `/openapi/v2` is a 503 `Status` saying so, and nothing is made.
/// The rest is served as before.
#[actix_web::test]
async fn a_merge_larger_than_its_bound_is_refused_not_made() {
    let kube = kubernetes_v3_only();
    let widgets = widgets_with_a_copy_of_batch();
    let mut config = crate::common::proxy::config(kube_and_widgets(&kube, &widgets));
    const BUDGET: usize = 6 * 1024 * 1024;
    config.memory_budget_bytes = BUDGET;
    let proxy = TestProxy::start_config(&config);
    proxy
        .wait_for("both downstreams published", |s| {
            s.openapi.contains_key("apis/widgets.example.com/v1beta1")
                && s.openapi.contains_key("api/v1")
        })
        .await;
    let cost = proxy.running.state.store.load().openapi_v2.making_cost();
    assert!(cost > (BUDGET / 2) as u64, "the premise: making it costs {cost}, within the bound");
    for accept in ["application/json", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"]
    {
        let r = proxy.get("/openapi/v2", &[("Accept", accept)]).await;
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{accept}");
        let message = r.json()["message"].as_str().expect("a Status message").to_owned();
        assert!(
            message.contains("too large") && message.contains("memoryBudgetBytes"),
            "{message}"
        );
    }
    assert!(!proxy.running.state.store.load().openapi_v2.is_made(), "nothing was made");
    // Everything else is served.
    assert_eq!(proxy.get("/openapi/v3/api/v1", &[]).await.status, StatusCode::OK);
}

/// A downstream of CRDs publishing only OpenAPI v3 (40 group-versions,
/// 15 MB): merging it means converting every group-version down, which
/// takes a while.
fn crds_v3_only() -> Site {
    let fleet = CrdFleet { seed: 27, kinds: 200, group_versions: 40, kind_bytes: 40_000 };
    let docs: BTreeMap<DocumentKey, Bytes> = (0..fleet.group_versions)
        .map(|i| {
            let (group, version) = fleet.group_version(i);
            let key = DocumentKey::parse(&format!("apis/{group}/{version}")).expect("key");
            (key, fleet.openapi_document(i, 0))
        })
        .collect();
    let ds = site();
    ds.routes.replace(v3_routes(&docs));
    ds
}

/// The first request after a change makes the merged `/openapi/v2`, which
/// takes a while behind a big downstream: it is made off the worker that
/// took the request, so the other clients that worker serves are answered
/// meanwhile (one worker here, so every connection shares it).
#[actix_web::test]
async fn making_the_merged_openapi_v2_leaves_its_worker_free_for_other_clients() {
    let crds = crds_v3_only();
    let widgets = widgets_with_a_copy_of_batch();
    let mut config = crate::common::proxy::config(vec![
        downstream("crds", &crds.url(), 10),
        downstream("widgets", &widgets.url(), 1),
    ]);
    config.serving.limits.workers = 1;
    let proxy = TestProxy::start_config(&config);
    proxy
        .wait_for("both downstreams published", |s| {
            s.openapi.contains_key("apis/widgets.example.com/v1beta1") && s.openapi.len() > 40
        })
        .await;
    assert!(!proxy.running.state.store.load().openapi_v2.is_made(), "the premise: not made yet");

    let url = format!("{}/openapi/v2", proxy.base);
    let started = Instant::now();
    let merging = actix_web::rt::spawn(async move {
        let r = crate::common::proxy::request("HEAD", &url, &[]).await;
        (r.status, started.elapsed())
    });
    actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    let other = proxy.get("/openapi/v3", &[]).await;
    let other_done = started.elapsed();
    assert_eq!(other.status, StatusCode::OK);
    let (status, merged_done) = merging.await.expect("the merging request");
    assert_eq!(status, StatusCode::OK);
    assert!(
        merged_done >= Duration::from_millis(400),
        "the premise: the merge takes a while ({merged_done:?})"
    );
    assert!(
        other_done < merged_done,
        "another client waited for the merge: answered after {other_done:?}, the merge done after {merged_done:?}"
    );
}

/// The merged `/openapi/v2` is made one input document at a time and held
/// gzipped only when it is large: behind a downstream of 200 CRDs (40
/// group-versions, 15 MB of v3) it is made within a bound that holding
/// every input and the output at once (three times the inputs) would
/// pass. A client that takes gzip gets the held bytes; one that does not
/// gets them inflated as they are written, the same document, tag and
/// length; a 304 repeats the tag. Both transports: the direct writer and
/// actix-http (which HTTPS and HTTP/2 use).
#[actix_web::test]
async fn a_large_merged_openapi_v2_is_made_one_document_at_a_time_and_served_in_both_encodings() {
    for direct_writes in [true, false] {
        large_merged_openapi_v2_served(direct_writes).await;
    }
}

async fn large_merged_openapi_v2_served(direct_writes: bool) {
    let crds = crds_v3_only();
    let widgets = widgets_with_a_copy_of_batch();
    let mut config = crate::common::proxy::config(vec![
        downstream("crds", &crds.url(), 10),
        downstream("widgets", &widgets.url(), 1),
    ]);
    const BUDGET: usize = 24 * 1024 * 1024;
    config.memory_budget_bytes = BUDGET;
    config.direct_writes = direct_writes;
    // On, so that an upgrade asked of it is taken by the front door's
    // reader, which answers metadata as without one.
    config.front_door = true;
    let proxy = TestProxy::start_config(&config);
    proxy
        .wait_for("both downstreams published", |s| {
            s.openapi.contains_key("apis/widgets.example.com/v1beta1") && s.openapi.len() > 40
        })
        .await;
    let snap = proxy.running.state.store.load();
    let plain_inputs: usize = snap.openapi.values().map(|e| e.rendered.len()).sum();
    assert!(
        3 * plain_inputs > BUDGET / 2,
        "the premise: holding every input and the output ({plain_inputs} bytes read) would pass the bound"
    );
    let gz = proxy.get("/openapi/v2", &[("Accept-Encoding", "gzip")]).await;
    assert_eq!(gz.status, StatusCode::OK, "{}", String::from_utf8_lossy(&gz.body));
    assert_eq!(gz.header("content-encoding"), "gzip");
    let v2 = &snap.openapi_v2.get().expect("made").json;
    assert!(v2.held().is_none(), "held gzipped only ({} bytes)", v2.len());
    let mut inflated = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz.body[..]), &mut inflated)
        .expect("gzip");
    let plain = proxy.get("/openapi/v2", &[]).await;
    assert_eq!(plain.status, StatusCode::OK);
    assert_eq!(plain.header("content-encoding"), "");
    assert_eq!(plain.header("content-length"), v2.len().to_string());
    assert!(plain.body == inflated, "the plain answer is the gzip answer inflated");
    assert_eq!(plain.header("etag"), gz.header("etag"));
    let upgraded = upgrade_asked(proxy.running.addr, "/openapi/v2");
    assert!(upgraded.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&upgraded));
    assert!(upgraded.ends_with(&inflated), "asked with an upgrade, the same plain body whole");
    let doc: Value = serde_json::from_slice(&plain.body).expect("JSON");
    let definitions = doc["definitions"].as_object().expect("definitions");
    let kinds = kinds(definitions);
    assert!(kinds.keys().filter(|k| k.contains(".example.com")).count() >= 200, "every CRD kind");
    assert!(kinds.values().all(|n| *n == 1), "each kind listed once");
    let etag = gz.header("etag");
    let again = proxy.get("/openapi/v2", &[("If-None-Match", &etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert_eq!(again.header("etag"), etag);
    protobuf_of_the_large_merged_openapi_v2(&proxy, &plain.body, &etag, direct_writes).await;
}

/// Its protobuf, made a piece at a time from the gzip-only JSON: served
/// gzipped and plain, named by the JSON's ETag, and decoded by protoc as
/// the whole document's encoding decodes (`check_decoding`: once).
async fn protobuf_of_the_large_merged_openapi_v2(
    proxy: &TestProxy,
    json: &[u8],
    etag: &str,
    check_decoding: bool,
) {
    const V2_PB: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    let gz = proxy.get("/openapi/v2", &[("Accept", V2_PB), ("Accept-Encoding", "gzip")]).await;
    assert_eq!(gz.status, StatusCode::OK, "{}", String::from_utf8_lossy(&gz.body));
    assert_eq!(gz.header("content-type"), V2_PB.replace('@', "."));
    assert_eq!(gz.header("content-encoding"), "gzip");
    assert_eq!(gz.header("etag"), etag, "the JSON's ETag");
    let mut pb = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz.body[..]), &mut pb)
        .expect("gzip");
    let plain = proxy.get("/openapi/v2", &[("Accept", V2_PB)]).await;
    assert_eq!(plain.status, StatusCode::OK);
    assert_eq!(plain.header("content-encoding"), "");
    assert_eq!(plain.header("content-length"), pb.len().to_string());
    assert!(plain.body == pb, "the plain answer is the gzip answer inflated");
    let again = proxy.get("/openapi/v2", &[("Accept", V2_PB), ("If-None-Match", etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    if check_decoding {
        use crate::common::protoc::{self, Message};
        let whole = openapi_proxy::proto::openapi_v2(json).expect("encodable");
        assert!(whole != pb, "written in pieces, not as one message");
        let decoded = protoc::decode(Message::OpenApiV2, &pb);
        assert!(decoded == protoc::decode(Message::OpenApiV2, &whole), "decoded as the whole");
        let definitions = decoded.matches("additional_properties {").count();
        assert!(definitions > 200, "{definitions} definitions decoded");
    }
}

/// The whole answer to `GET path` asked with a WebSocket upgrade, read to
/// the connection's end (such an answer closes it).
fn upgrade_asked(addr: std::net::SocketAddr, path: &str) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: p\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
    );
    s.write_all(head.as_bytes()).expect("request");
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).expect("answer");
    answer
}
