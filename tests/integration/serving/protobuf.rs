//! The protobuf renditions of the OpenAPI documents (issue 27), decoded by
//! an independent decoder (`protoc` with gnostic's upstream `.proto`
//! files) and compared with the JSON the proxy serves for the same URL.
//! Wire rules: docs/wire.md#a-10, docs/upstream.md#b-2-1, #b-2-4.

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use bytes::Bytes;
use openapi_proxy::DocumentKey;
use openapi_proxy::demo::{Route, Site, v3_routes};

use crate::common::protoc::{self, Message};
use crate::common::proxy::{TestProxy, WIDGETS, downstream, site, testdata, widgets_site};
use crate::common::shared::shared_testdata;

const V3_PB: &str = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf";
const V3_PB_AT: &str = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf";
const V2_PB: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
const V2_PB_AT: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// Kubernetes 1.24's own `apps/v1` v3 document, passed through.
fn apps_v1_site() -> (Site, Bytes) {
    let doc = Bytes::from(
        std::fs::read(shared_testdata(
            "kube-openapi/pkg/util/proto/testdata/openapi_v3_0_0/apps/v1.json",
        ))
        .expect("read"),
    );
    let mut docs = BTreeMap::new();
    docs.insert(DocumentKey::parse("apis/apps/v1").expect("key"), doc.clone());
    let s = site();
    s.routes.replace(v3_routes(&docs));
    (s, doc)
}

/// The quoted strings of protoc's text format, unescaped (C escapes and
/// octal bytes, which is how it writes non-ASCII UTF-8).
fn unquote(text: &str) -> String {
    let inner = text.trim().strip_prefix('"').and_then(|t| t.strip_suffix('"')).expect("quoted");
    let mut out = Vec::new();
    let mut bytes = inner.bytes();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match bytes.next().expect("an escape") {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            d @ b'0'..=b'7' => {
                let mut v = u32::from(d - b'0');
                for _ in 0..2 {
                    let next = bytes.clone().next();
                    if let Some(n @ b'0'..=b'7') = next {
                        v = v * 8 + u32::from(n - b'0');
                        bytes.next();
                    }
                }
                out.push(u8::try_from(v).expect("a byte"));
            }
            other => out.push(other),
        }
    }
    String::from_utf8(out).expect("UTF-8")
}

/// The values of the `field: "…"` lines directly inside the blocks
/// `path` (outermost first) of protoc's text format.
fn strings_at(text: &str, path: &[&str], field: &str) -> Vec<String> {
    let prefix = format!("{field}: ");
    let mut open: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(block) = line.strip_suffix(" {") {
            open.push(block);
        } else if line == "}" {
            open.pop();
        } else if let Some(value) = line.strip_prefix(&prefix)
            && open == path
        {
            out.push(unquote(value));
        }
    }
    out
}

/// Every non-empty string `description` of a JSON document's messages
/// (not inside extension, `default`, `example` or `enum` values, which
/// are YAML text in the protobuf).
fn descriptions(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                if k.starts_with("x-") || ["default", "example", "enum"].contains(&k.as_str()) {
                    continue;
                }
                match (k.as_str(), v) {
                    ("description", serde_json::Value::String(s)) if !s.is_empty() => {
                        out.push(s.clone());
                    }
                    _ => descriptions(v, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| descriptions(v, out)),
        _ => {}
    }
}

/// Every `x-kubernetes-group-version-kind` value of a JSON document.
fn gvks(value: &serde_json::Value, out: &mut Vec<serde_json::Value>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                if k == "x-kubernetes-group-version-kind" {
                    out.push(v.clone());
                } else if !k.starts_with("x-") && k != "default" && k != "example" {
                    gvks(v, out);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| gvks(v, out)),
        _ => {}
    }
}

/// The `x-kubernetes-group-version-kind` values of protoc's text, read as
/// YAML.
fn decoded_gvks(text: &str) -> Vec<serde_json::Value> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim() == "name: \"x-kubernetes-group-version-kind\"" {
            let yaml = lines[i + 1..]
                .iter()
                .find_map(|l| l.trim().strip_prefix("yaml: "))
                .expect("the Any's yaml");
            out.push(serde_yaml_ng::from_str(&unquote(yaml)).expect("YAML"));
        }
    }
    out
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

fn sorted_json(v: Vec<serde_json::Value>) -> Vec<String> {
    sorted(v.iter().map(ToString::to_string).collect())
}

/// What the decoded v3 document says, compared with its JSON: paths,
/// schema names, descriptions, GVKs.
fn assert_v3_same(pb: &[u8], json: &[u8]) {
    let text = protoc::decode(Message::OpenApiV3, pb);
    let value: serde_json::Value = serde_json::from_slice(json).expect("JSON");
    let paths: Vec<String> = value["paths"].as_object().expect("paths").keys().cloned().collect();
    assert_eq!(strings_at(&text, &["paths", "path"], "name"), paths);
    let schemas: Vec<String> =
        value["components"]["schemas"].as_object().expect("schemas").keys().cloned().collect();
    assert_eq!(
        strings_at(&text, &["components", "schemas", "additional_properties"], "name"),
        schemas
    );
    let mut expected = Vec::new();
    descriptions(&value, &mut expected);
    let decoded: Vec<String> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("description: "))
        .map(unquote)
        .collect();
    assert_eq!(sorted(decoded), sorted(expected));
    let mut expected_gvks = Vec::new();
    gvks(&value, &mut expected_gvks);
    assert!(!expected_gvks.is_empty());
    assert_eq!(sorted_json(decoded_gvks(&text)), sorted_json(expected_gvks));
}

#[actix_web::test]
async fn a_passed_through_v3_document_is_served_as_protobuf_in_both_spellings() {
    let (ds, doc) = apps_v1_site();
    let proxy = TestProxy::start(vec![downstream("kube", &ds.url(), 1)]);
    proxy.wait_for("documents", |s| !s.openapi.is_empty()).await;
    let json = proxy.get("/openapi/v3/apis/apps/v1", &[]).await;
    assert!(json.body == doc, "the JSON stays byte for byte the downstream's");
    for accept in [V3_PB, V3_PB_AT] {
        let pb = proxy.get("/openapi/v3/apis/apps/v1", &[("Accept", accept)]).await;
        assert_eq!(pb.status, StatusCode::OK, "{accept}");
        assert_eq!(pb.header("content-type"), V3_PB, "{accept}");
        assert_eq!(pb.header("etag"), json.header("etag"), "the JSON's hash");
        assert_eq!(pb.header("vary"), "Accept");
        assert_v3_same(&pb.body, &doc);
    }
}

#[actix_web::test]
async fn a_converted_v3_document_is_served_as_protobuf() {
    let ds = widgets_site();
    let proxy = TestProxy::start(vec![downstream("widgets", &ds.url(), 1)]);
    proxy.wait_for("documents", |s| s.openapi.contains_key(WIDGETS)).await;
    let path = format!("/openapi/v3/{WIDGETS}");
    let json = proxy.get(&path, &[]).await;
    let pb = proxy.get(&path, &[("Accept", V3_PB)]).await;
    assert_eq!(pb.status, StatusCode::OK);
    assert_eq!(pb.header("content-type"), V3_PB);
    assert_eq!(pb.header("etag"), json.header("etag"));
    assert_v3_same(&pb.body, &json.body);
}

#[actix_web::test]
async fn protobuf_answers_keep_the_hash_rules_304_and_301() {
    let (ds, _) = apps_v1_site();
    let proxy = TestProxy::start(vec![downstream("kube", &ds.url(), 1)]);
    proxy.wait_for("documents", |s| !s.openapi.is_empty()).await;
    let json = proxy.get("/openapi/v3/apis/apps/v1", &[]).await;
    let etag = json.header("etag");
    let hash = etag.trim_matches('"');
    let path = "/openapi/v3/apis/apps/v1";
    let not_modified = proxy.get(path, &[("Accept", V3_PB), ("If-None-Match", &etag)]).await;
    assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED);
    assert!(not_modified.body.is_empty());
    let current = proxy.get(&format!("{path}?hash={hash}"), &[("Accept", V3_PB)]).await;
    assert_eq!(current.status, StatusCode::OK);
    assert_eq!(current.header("cache-control"), "public, immutable");
    assert_eq!(current.header("content-type"), V3_PB);
    let stale = proxy.get(&format!("{path}?hash=00"), &[("Accept", V3_PB_AT)]).await;
    assert_eq!(stale.status, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(stale.header("location"), format!("{path}?hash={hash}"));
    assert_eq!(stale.header("content-type"), V3_PB);
    assert_eq!(stale.header("etag"), etag);
    let gzip = proxy.get(path, &[("Accept", V3_PB), ("Accept-Encoding", "gzip")]).await;
    assert_eq!(gzip.header("content-encoding"), "gzip");
    assert_eq!(gzip.header("content-type"), V3_PB);
    // q still orders: JSON preferred over protobuf gives JSON.
    let json_first = format!("{V3_PB};q=0.5, application/json");
    let r = proxy.get(path, &[("Accept", &json_first)]).await;
    assert_eq!(r.header("content-type"), "application/json");
}

#[actix_web::test]
async fn openapi_v2_is_served_as_the_proxys_protobuf_of_its_json() {
    let ds = widgets_site();
    let proxy = TestProxy::start(vec![downstream("widgets", &ds.url(), 1)]);
    proxy.wait_for("v2", |s| s.openapi_v2.get().is_some()).await;
    let json = proxy.get("/openapi/v2", &[]).await;
    let swagger = std::fs::read(testdata("sample/widgets.v2.json")).expect("fixture");
    assert!(json.body[..] == swagger[..], "the JSON stays byte for byte the downstream's");
    for accept in [V2_PB, V2_PB_AT] {
        let pb = proxy.get("/openapi/v2", &[("Accept", accept)]).await;
        assert_eq!(pb.status, StatusCode::OK, "{accept}");
        assert_eq!(pb.header("content-type"), V2_PB);
        assert_eq!(pb.header("etag"), json.header("etag"));
        assert_eq!(pb.header("vary"), "Accept");
        let text = protoc::decode(Message::OpenApiV2, &pb.body);
        let value: serde_json::Value = serde_json::from_slice(&swagger).expect("JSON");
        let paths: Vec<String> =
            value["paths"].as_object().expect("paths").keys().cloned().collect();
        assert_eq!(strings_at(&text, &["paths", "path"], "name"), paths);
        let definitions: Vec<String> =
            value["definitions"].as_object().expect("definitions").keys().cloned().collect();
        assert_eq!(
            strings_at(&text, &["definitions", "additional_properties"], "name"),
            definitions
        );
        let mut expected = Vec::new();
        gvks(&value, &mut expected);
        assert!(!expected.is_empty());
        assert_eq!(sorted_json(decoded_gvks(&text)), sorted_json(expected));
    }
    let etag = json.header("etag");
    let r = proxy.get("/openapi/v2", &[("Accept", V2_PB), ("If-None-Match", &etag)]).await;
    assert_eq!(r.status, StatusCode::NOT_MODIFIED);
}

#[actix_web::test]
async fn a_document_gnostic_refuses_is_offered_as_json_only() {
    let mut swagger: serde_json::Value = serde_json::from_slice(
        &std::fs::read(testdata("sample/widgets.v2.json")).expect("fixture"),
    )
    .expect("JSON");
    // `bogus` is no property of gnostic's v2 Document.
    swagger["bogus"] = 1.into();
    let s = site();
    s.routes.set("/openapi/v2", Route::json(serde_json::to_vec(&swagger).expect("JSON")));
    let proxy = TestProxy::start(vec![downstream("odd", &s.url(), 1)]);
    proxy.wait_for("v2", |s| s.openapi_v2.get().is_some()).await;
    let pb = proxy.get("/openapi/v2", &[("Accept", V2_PB)]).await;
    assert_eq!(pb.status, StatusCode::NOT_ACCEPTABLE);
    let either =
        proxy.get("/openapi/v2", &[("Accept", &format!("{V2_PB}, application/json"))]).await;
    assert_eq!(either.status, StatusCode::OK);
    assert_eq!(either.header("content-type"), "application/json");
    let metrics = proxy.running.state.metrics.render();
    assert!(
        metrics.contains("openapi_proxy_protobuf_renditions_total{result=\"unencodable\"} 1"),
        "{metrics}"
    );
}
