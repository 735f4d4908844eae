//! Discovery's YAML and protobuf forms through the proxy (issue 27, item
//! 4; docs/wire.md#a-12): every discovery path, asked for in each form as
//! kube-apiserver serves it, says what its JSON answer says. Protobuf is
//! read by an independent decoder (protoc with the upstream `.proto`
//! files, [`protoc`]), YAML by a YAML parser; both carry the JSON answer's
//! ETag and answer 304 to it.

use actix_web::http::StatusCode;
use bytes::Bytes;
use openapi_proxy::demo::{Route, Site};
use openapi_proxy::media::DISCOVERY_V2_CONTENT_TYPE;
use serde_json::{Value, json};

use crate::common::protoc::{self, Message};
use crate::common::proxy::{TestProxy, downstream, site};
use crate::common::shared::shared_testdata;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const YAML: &str = "application/yaml";

/// `;g=…;v=<v>;as=APIGroupDiscoveryList`.
fn gva(version: &str) -> String {
    format!(";g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList")
}

// ---- downstreams ----------------------------------------------------------

fn resource(name: &str, singular: &str, kind: &str, short: &[&str]) -> Value {
    let mut r = json!({"resource": name, "responseKind": {"group": "", "version": "", "kind": kind},
        "scope": "Namespaced", "singularResource": singular, "verbs": ["get", "list", "watch"]});
    if !short.is_empty() {
        r["shortNames"] = json!(short);
    }
    r
}

fn aggregated_route(items: &Value) -> Route {
    let body = json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
                      "metadata": {}, "items": items});
    let mut route = Route::json(serde_json::to_vec(&body).expect("JSON"));
    route.content_type = DISCOVERY_V2_CONTENT_TYPE;
    route
}

fn serve(s: &Site, routes: Vec<(&str, Route)>) {
    s.routes.set("/openapi/v3", Route::json(&b"{\"paths\":{}}"[..]));
    for (path, route) in routes {
        s.routes.set(path, route);
    }
}

/// Aggregated discovery: the core group, `apps` (with a scale
/// subresource of another group and categories), `batch` in two versions
/// (one Stale-free, no legacy list: the proxy synthesizes it), and the
/// legacy list of `apps/v1` with `storageVersionHash`.
fn aggregated_site() -> Site {
    let s = site();
    let mut deployments = resource("deployments", "deployment", "Deployment", &["deploy"]);
    deployments["categories"] = json!(["all"]);
    deployments["subresources"] = json!([
        {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
         "verbs": ["get", "patch", "update"]},
        {"subresource": "status", "responseKind": {"group": "", "version": "", "kind": "Deployment"},
         "verbs": ["get"]}]);
    let apps_v1 = json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
        "resources": [
            {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment",
             "verbs": ["get", "list", "watch"], "shortNames": ["deploy"], "categories": ["all"],
             "storageVersionHash": "8aSe+NMegvE="},
            {"name": "deployments/scale", "singularName": "", "namespaced": true, "group": "autoscaling",
             "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}]});
    serve(
        &s,
        vec![
            (
                "/api",
                aggregated_route(&json!([{"metadata": {}, "versions": [{"version": "v1",
                    "resources": [resource("pods", "pod", "Pod", &["po"])], "freshness": "Current"}]}])),
            ),
            (
                "/apis",
                aggregated_route(&json!([
                    {"metadata": {"name": "apps"}, "versions": [{"version": "v1",
                        "resources": [deployments], "freshness": "Current"}]},
                    {"metadata": {"name": "batch"}, "versions": [
                        {"version": "v1", "resources": [resource("jobs", "job", "Job", &[])], "freshness": "Current"},
                        {"version": "v1beta1", "resources": [resource("cronjobs", "cronjob", "CronJob", &["cj"])],
                         "freshness": "Current"}]}])),
            ),
            ("/apis/apps/v1", Route::json(serde_json::to_vec(&apps_v1).expect("JSON"))),
        ],
    );
    s
}

/// Legacy discovery only, from Kubernetes' own documents: `APIVersions`
/// with its `serverAddressByClientCIDRs`, the core `APIResourceList` (no
/// `apiVersion`, every resource with its hash), and `apps/v1`.
fn legacy_site() -> Site {
    let read = |file: &str| -> Bytes {
        let path = shared_testdata(&format!("discovery/kubernetes-api-discovery/{file}"));
        Bytes::from(std::fs::read(path).expect("read"))
    };
    let s = site();
    let groups = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [{
        "name": "apps",
        "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
        "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]});
    serve(
        &s,
        vec![
            ("/api", Route::json(read("api.json"))),
            ("/api/v1", Route::json(read("api__v1.json"))),
            ("/apis", Route::json(serde_json::to_vec(&groups).expect("JSON"))),
            ("/apis/apps/v1", Route::json(read("apis__apps__v1.json"))),
        ],
    );
    s
}

async fn started(
    s: &Site,
    name: &str,
    ready: impl Fn(&openapi_proxy::Snapshot) -> bool,
) -> TestProxy {
    let proxy = TestProxy::start(vec![downstream(name, &s.url(), 1)]);
    proxy.wait_for("discovery served", ready).await;
    proxy
}

async fn aggregated_proxy(s: &Site) -> TestProxy {
    started(s, "kube", |snap| {
        snap.discovery.groups.contains_key("batch")
            && snap.discovery.resources.contains_key("apis/apps/v1")
    })
    .await
}

// ---- reading protoc's text format -------------------------------------------

/// Undoes protoc's C escaping of a string or bytes field.
fn unescape(quoted: &str) -> Vec<u8> {
    let inner = quoted.strip_prefix('"').and_then(|s| s.strip_suffix('"')).expect("a quoted value");
    let bytes = inner.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        i += 1;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let c = bytes[i];
        i += 1;
        match c {
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                for _ in 0..2 {
                    match bytes.get(i) {
                        Some(d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(u8::try_from(v).expect("an octal byte"));
            }
            b'x' => {
                let hex = std::str::from_utf8(&bytes[i..i + 2]).expect("hex");
                out.push(u8::from_str_radix(hex, 16).expect("a hex byte"));
                i += 2;
            }
            other => out.push(other),
        }
    }
    out
}

/// protoc's text format as (path with indices, value) leaves, sorted: a
/// repeated field's occurrences are numbered under their parent, empty
/// strings are left out (Kubernetes' code writes the strings JSON omits
/// as empty), and `verbs { items: … }` (meta/v1's `Verbs` message) reads
/// as the list it is in JSON.
fn text_leaves(text: &str) -> Vec<(String, String)> {
    let mut stack: Vec<(String, std::collections::BTreeMap<String, usize>)> =
        vec![(String::new(), std::collections::BTreeMap::new())];
    let mut out = Vec::new();
    let indexed = |stack: &mut Vec<(String, std::collections::BTreeMap<String, usize>)>,
                   name: &str| {
        let (path, counts) = stack.last_mut().expect("a parent");
        let n = counts.entry(name.to_owned()).or_insert(0);
        let at = format!("{path}/{name}[{n}]");
        *n += 1;
        at
    };
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line == "}" {
            stack.pop();
        } else if let Some(name) = line.strip_suffix(" {") {
            let at = indexed(&mut stack, name);
            stack.push((at, std::collections::BTreeMap::new()));
        } else {
            let (name, value) = line.split_once(": ").expect("name: value");
            if value == "\"\"" {
                continue;
            }
            let at = indexed(&mut stack, name);
            let value = if value.starts_with('"') {
                String::from_utf8(unescape(value)).expect("UTF-8")
            } else {
                value.to_owned()
            };
            out.push((at.replace("/verbs[0]/items[", "/verbs["), value));
        }
    }
    out.sort();
    out
}

/// A JSON value as the same leaves: every array element numbered, nulls,
/// empty strings and empty lists left out.
fn json_leaves(value: &Value) -> Vec<(String, String)> {
    fn walk(at: &str, v: &Value, out: &mut Vec<(String, String)>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    match v {
                        Value::Array(items) => {
                            for (i, item) in items.iter().enumerate() {
                                walk(&format!("{at}/{k}[{i}]"), item, out);
                            }
                        }
                        _ => walk(&format!("{at}/{k}[0]"), v, out),
                    }
                }
            }
            Value::Null => {}
            Value::String(s) if s.is_empty() => {}
            Value::String(s) => out.push((at.to_owned(), s.clone())),
            other => out.push((at.to_owned(), other.to_string())),
        }
    }
    let mut out = Vec::new();
    walk("", value, &mut out);
    out.sort();
    out
}

/// A protobuf discovery answer decoded by protoc: its envelope's
/// `apiVersion` and `kind`, and the leaves of the message in it.
fn decode(
    body: &[u8],
    message: impl Fn(&str) -> Message,
) -> (String, String, Vec<(String, String)>) {
    let rest = body.strip_prefix(b"k8s\0").expect("the k8s\\0 magic");
    let envelope = protoc::decode(Message::Unknown, rest);
    let field = |prefix: &str| {
        envelope
            .lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(prefix))
            .map(|v| String::from_utf8(unescape(v)).expect("UTF-8"))
            .unwrap_or_default()
    };
    let (api_version, kind) = (field("apiVersion: "), field("kind: "));
    assert_eq!(field("contentEncoding: "), "", "{envelope}");
    assert_eq!(field("contentType: "), "", "{envelope}");
    let raw = envelope
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("raw: "))
        .map(unescape)
        .expect("raw");
    let text = protoc::decode(message(&kind), &raw);
    (api_version, kind, text_leaves(&text))
}

/// The message a kind is, for `api_version`.
fn message_of(api_version: &str) -> impl Fn(&str) -> Message + '_ {
    move |kind| match (api_version, kind) {
        ("apidiscovery.k8s.io/v2", _) => Message::DiscoveryV2,
        ("apidiscovery.k8s.io/v2beta1", _) => Message::DiscoveryV2beta1,
        (_, "APIVersions") => Message::MetaV1("APIVersions"),
        (_, "APIGroupList") => Message::MetaV1("APIGroupList"),
        (_, "APIGroup") => Message::MetaV1("APIGroup"),
        (_, "APIResourceList") => Message::MetaV1("APIResourceList"),
        (_, other) => panic!("no message for kind {other}"),
    }
}

// ---- the checks ----------------------------------------------------------

/// Asks for `path` in JSON (`json_accept`) and in `accept`, and checks
/// the second: `content_type`, the JSON answer's ETag, `Vary: Accept`, a
/// 304 to that ETag; returns both bodies.
async fn both(
    proxy: &TestProxy,
    path: &str,
    json_accept: &str,
    accept: &str,
    content_type: &str,
) -> (Value, Bytes) {
    let j = proxy.get(path, &[("Accept", json_accept)]).await;
    assert_eq!(j.status, StatusCode::OK, "{path} as JSON");
    let other = proxy.get(path, &[("Accept", accept)]).await;
    assert_eq!(other.status, StatusCode::OK, "{path} as {accept}: {:?}", other.body);
    assert_eq!(other.header("content-type"), content_type, "{path} as {accept}");
    let etag = j.header("etag");
    assert!(!etag.is_empty(), "{path} has an ETag");
    assert_eq!(other.header("etag"), etag, "{path} as {accept}: the JSON form's ETag");
    assert!(
        other.header_all("vary").iter().any(|v| v.contains("Accept")),
        "{path} varies by Accept"
    );
    let again = proxy.get(path, &[("Accept", accept), ("If-None-Match", &etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED, "{path} as {accept}, If-None-Match");
    assert!(again.body.is_empty());
    (j.json(), other.body)
}

/// Every path of a downstream, with the Accept of its JSON form, the
/// suffix of its aggregated Content-Type (empty for legacy), and the
/// aggregated version asked for.
fn paths(aggregated: bool) -> Vec<(&'static str, String, String)> {
    let mut out = Vec::new();
    if aggregated {
        for path in ["/api", "/apis"] {
            for v in ["v2", "v2beta1"] {
                out.push((path, format!("application/json{}", gva(v)), gva(v)));
            }
        }
        for path in [
            "/apis/",
            "/apis/apps",
            "/apis/batch",
            "/apis/apps/v1",
            "/apis/batch/v1",
            "/apis/batch/v1beta1",
            "/api/v1",
        ] {
            out.push((path, "application/json".to_owned(), String::new()));
        }
    } else {
        for path in ["/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1"] {
            out.push((path, "application/json".to_owned(), String::new()));
        }
    }
    out
}

async fn protobuf_says_what_json_says(proxy: &TestProxy, aggregated: bool) {
    for (path, json_accept, params) in paths(aggregated) {
        let accept = format!("{PROTOBUF}{params}");
        let (j, body) = both(proxy, path, &json_accept, &accept, &accept).await;
        let api_version = j["apiVersion"].as_str().unwrap_or_default().to_owned();
        let (v, kind, leaves) = decode(&body, message_of(&api_version));
        assert_eq!(
            (v.as_str(), kind.as_str()),
            (api_version.as_str(), j["kind"].as_str().expect("a kind")),
            "{path}"
        );
        assert_eq!(leaves, json_leaves(&j_without_type(&j)), "{path} as {accept}");
        assert!(!leaves.is_empty(), "{path}");
    }
}

fn j_without_type(j: &Value) -> Value {
    let mut j = j.clone();
    if let Some(m) = j.as_object_mut() {
        m.remove("kind");
        m.remove("apiVersion");
    }
    j
}

async fn yaml_says_what_json_says(proxy: &TestProxy, aggregated: bool) {
    for (path, json_accept, params) in paths(aggregated) {
        let accept = format!("{YAML}{params}");
        let (j, body) = both(proxy, path, &json_accept, &accept, &accept).await;
        let yaml: Value = serde_yaml_ng::from_slice(&body)
            .unwrap_or_else(|e| panic!("{path} as YAML ({e}): {}", String::from_utf8_lossy(&body)));
        assert_eq!(yaml, j, "{path} as {accept}");
        let text = std::str::from_utf8(&body).expect("UTF-8");
        let top: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with([' ', '-']))
            .filter_map(|l| l.split(':').next())
            .collect();
        assert!(top.is_sorted() && top.len() > 1, "top-level keys sorted: {top:?}");
    }
}

#[actix_web::test]
async fn every_aggregated_and_legacy_path_in_protobuf_decodes_to_the_json_answer() {
    let s = aggregated_site();
    let proxy = aggregated_proxy(&s).await;
    protobuf_says_what_json_says(&proxy, true).await;
}

#[actix_web::test]
async fn a_legacy_downstream_in_protobuf_decodes_to_the_json_answer() {
    let s = legacy_site();
    let proxy = started(&s, "legacy", |snap| {
        snap.discovery.resources.contains_key("api/v1")
            && snap.discovery.resources.contains_key("apis/apps/v1")
    })
    .await;
    protobuf_says_what_json_says(&proxy, false).await;
    yaml_says_what_json_says(&proxy, false).await;
}

#[actix_web::test]
async fn every_aggregated_and_legacy_path_in_yaml_parses_to_the_json_answer() {
    let s = aggregated_site();
    let proxy = aggregated_proxy(&s).await;
    yaml_says_what_json_says(&proxy, true).await;
}

#[actix_web::test]
async fn negotiation_picks_the_form_as_kube_apiserver_does() {
    let s = aggregated_site();
    let proxy = aggregated_proxy(&s).await;
    let cases = [
        // client-go configured for protobuf: legacy protobuf, JSON fallback.
        (format!("{PROTOBUF}, application/json"), PROTOBUF.to_owned()),
        // Aggregated protobuf before client-go's JSON list.
        (
            format!("{PROTOBUF}{},application/json{},application/json", gva("v2"), gva("v2")),
            format!("{PROTOBUF}{}", gva("v2")),
        ),
        // q ranks aggregated clauses among themselves.
        (
            format!("{YAML}{};q=0.5,application/json{}", gva("v2"), gva("v2beta1")),
            format!("application/json{}", gva("v2beta1")),
        ),
        // Wildcards give JSON.
        (format!("*/*{}", gva("v2")), DISCOVERY_V2_CONTENT_TYPE.to_owned()),
        // YAML cannot stream; protobuf can.
        (format!("{YAML};stream=watch, {PROTOBUF};stream=watch"), PROTOBUF.to_owned()),
    ];
    for (accept, content_type) in cases {
        let r = proxy.get("/apis", &[("Accept", &accept)]).await;
        assert_eq!(r.status, StatusCode::OK, "{accept}");
        assert_eq!(r.header("content-type"), content_type, "{accept}");
    }
    let refused = proxy.get("/apis", &[("Accept", &format!("{YAML};stream=watch"))]).await;
    assert_eq!(refused.status, StatusCode::NOT_ACCEPTABLE);
    // A legacy-only path never answers aggregated, in any form.
    let r = proxy.get("/apis/", &[("Accept", &format!("{PROTOBUF}{}", gva("v2")))]).await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    let missing = proxy.get("/apis/nope", &[("Accept", PROTOBUF)]).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}
