//! Discovery through the proxy, black-box: a real proxy (started as `serve`
//! starts it) in front of fake downstreams that serve aggregated discovery
//! (KEP-3352) or only the legacy documents. Wire rules:
//! docs/wire.md#a-7 to #a-9, #b-4, #b-5, #b-11-8 to #b-11-14.

use actix_web::http::StatusCode;
use bytes::Bytes;
use openapi_proxy::demo::{Route, Site};
use openapi_proxy::media::{DISCOVERY_V2_CONTENT_TYPE, DISCOVERY_V2BETA1_CONTENT_TYPE};
use openapi_proxy::sha512_hex;
use openapi_proxy::{Config, DownstreamConfig};
use serde_json::{Value, json};

use crate::common::proxy::{TestProxy, downstream, site};
use crate::common::shared::shared_testdata;

/// What client-go 1.30+ sends to `/api` and `/apis` (B-6.1).
const CLIENT_GO_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
/// What newer client-go puts first (`AcceptV2NoPeer`, B-4.12).
const NOPEER_CLAUSE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer";
/// What clients 1.26–1.29 send: v2beta1 only, then plain JSON is absent.
const V2BETA1_ONLY: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
/// The 406 `Status` body of `/api` and `/apis`, byte for byte (B-4.3).
const NOT_ACCEPTABLE_BODY: &str = "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \
\"metadata\": {},\n  \"status\": \"Failure\",\n  \"message\": \"only the following media types are \
accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf\",\n  \
\"reason\": \"NotAcceptable\",\n  \"code\": 406\n}";
const KUBE_DISCOVERY: &str = "discovery/kubernetes-api-discovery";

// ---- documents ----------------------------------------------------------

/// An aggregated resource of the downstream's own group-version.
fn resource(name: &str, singular: &str, kind: &str) -> Value {
    json!({"resource": name, "responseKind": {"group": "", "version": "", "kind": kind},
           "scope": "Namespaced", "singularResource": singular, "verbs": ["get", "list", "watch"]})
}

/// An `APIGroupDiscovery` with `versions` in the order given.
fn group(name: &str, versions: &[(&str, Vec<Value>)]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|(v, resources)| json!({"version": v, "resources": resources, "freshness": "Current"}))
        .collect();
    let metadata = if name.is_empty() { json!({}) } else { json!({"name": name}) };
    json!({"metadata": metadata, "versions": versions})
}

/// A v2 `APIGroupDiscoveryList`, served with its aggregated Content-Type.
fn aggregated_route(items: Vec<Value>) -> Route {
    let body = json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
                      "metadata": {}, "items": items});
    let mut route = Route::json(serde_json::to_vec(&body).expect("JSON"));
    route.content_type = DISCOVERY_V2_CONTENT_TYPE;
    route
}

/// A legacy `APIResourceList` of one resource, with `storageVersionHash`.
fn legacy_list(group_version: &str, name: &str, kind: &str, hash: &str) -> Bytes {
    let mut list = json!({"kind": "APIResourceList", "groupVersion": group_version,
        "resources": [{"name": name, "singularName": "", "namespaced": true, "kind": kind,
                       "verbs": ["get", "list", "watch"], "storageVersionHash": hash}]});
    if group_version.contains('/') {
        list["apiVersion"] = json!("v1");
    }
    Bytes::from(serde_json::to_vec(&list).expect("JSON"))
}

/// A downstream with an empty OpenAPI v3 root (so its polls succeed and
/// are not backed off) and the given routes.
fn discovery_site(routes: Vec<(&str, Route)>) -> Site {
    let s = site();
    s.routes.set("/openapi/v3", Route::json(&b"{\"paths\":{}}"[..]));
    for (path, route) in routes {
        s.routes.set(path, route);
    }
    s
}

/// A downstream serving aggregated discovery: the core group (`v1`: pods)
/// at `/api`, `apps` (`v1`: deployments) and `batch` (`v1beta1`, `v1`:
/// jobs, in that order) at `/apis`, and legacy lists for `api/v1` and
/// `apps/v1` (not for batch: the proxy synthesizes those).
fn kube_site() -> Site {
    discovery_site(vec![
        (
            "/api",
            aggregated_route(vec![group("", &[("v1", vec![resource("pods", "pod", "Pod")])])]),
        ),
        (
            "/apis",
            aggregated_route(vec![
                group("apps", &[("v1", vec![resource("deployments", "deployment", "Deployment")])]),
                group(
                    "batch",
                    &[
                        ("v1beta1", vec![resource("jobs", "job", "Job")]),
                        ("v1", vec![resource("jobs", "job", "Job")]),
                    ],
                ),
            ]),
        ),
        ("/api/v1", Route::json(legacy_list("v1", "pods", "Pod", "xPOwRZ+Yhw8="))),
        (
            "/apis/apps/v1",
            Route::json(legacy_list("apps/v1", "deployments", "Deployment", "8aSe+NMegvE=")),
        ),
    ])
}

/// A downstream serving only legacy discovery, from Kubernetes' own
/// documents: `/api` (`APIVersions`), `/api/v1`, an `APIGroupList` with
/// `apps/v1`, and `/apis/apps/v1`.
fn legacy_site() -> (Site, Bytes) {
    let read = |file: &str| -> Bytes {
        let path = shared_testdata(&format!("{KUBE_DISCOVERY}/{file}"));
        Bytes::from(std::fs::read(path).expect("read"))
    };
    let apps_v1 = read("apis__apps__v1.json");
    let group_list = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [{
        "name": "apps",
        "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
        "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]});
    let s = discovery_site(vec![
        ("/api", Route::json(read("api.json"))),
        ("/api/v1", Route::json(read("api__v1.json"))),
        ("/apis", Route::json(serde_json::to_vec(&group_list).expect("JSON"))),
        ("/apis/apps/v1", Route::json(apps_v1.clone())),
    ]);
    (s, apps_v1)
}

// ---- helpers ------------------------------------------------------------

/// A proxy in front of `downstreams` whose discovery lists every group in
/// `groups` (aggregated `/apis`).
async fn started(downstreams: Vec<DownstreamConfig>, groups: &[&str]) -> TestProxy {
    let proxy = TestProxy::start(downstreams);
    wait_for_groups(&proxy, groups).await;
    proxy
}

async fn wait_for_groups(proxy: &TestProxy, groups: &[&str]) {
    proxy
        .wait_for("discovery lists every group", |s| {
            let names = group_names(&s.discovery.apis_v2.plain().expect("inflates"));
            groups.iter().all(|g| names.iter().any(|n| n == g))
        })
        .await;
}

/// The group names of an aggregated list.
fn group_names(body: &[u8]) -> Vec<String> {
    let list: Value = serde_json::from_slice(body).expect("aggregated list is JSON");
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|g| g["metadata"]["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The version entry `version` of `group` in an aggregated list.
fn version_entry(list: &Value, group: &str, version: &str) -> Value {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|g| g["metadata"]["name"] == group)
        .and_then(|g| g["versions"].as_array()?.iter().find(|v| v["version"] == version))
        .unwrap_or_else(|| panic!("{group}/{version} not listed: {list}"))
        .clone()
}

fn version_names(list: &Value, group: &str) -> Vec<String> {
    let g = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|g| g["metadata"]["name"] == group)
        .unwrap_or_else(|| panic!("{group} not listed"));
    g["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| v["version"].as_str().expect("version").to_owned())
        .collect()
}

fn is_quoted_sha512(etag: &str) -> bool {
    etag.strip_prefix('"').and_then(|e| e.strip_suffix('"')).is_some_and(|hex| {
        hex.len() == 128 && hex.bytes().all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
    })
}

// ---- aggregated discovery: negotiation and headers ----------------------

#[actix_web::test]
async fn client_go_accept_gets_aggregated_v2_with_the_exact_headers() {
    let ds = kube_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps", "batch"]).await;

    let r = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT)]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.header("content-type"),
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    assert!(r.header_all("vary").contains(&"Accept".to_owned()), "{:?}", r.header_all("vary"));
    assert_eq!(r.header("cache-control"), "public");
    let etag = r.header("etag");
    assert!(is_quoted_sha512(&etag), "{etag}");
    // A hash of the list's parts, not of its bytes (issue 16; upstream's is
    // not the body's hash either, docs/upstream.md#b-4-5): it follows the
    // content — the same content gives the same tag.
    let again = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT)]).await;
    assert_eq!(again.header("etag"), etag);
    assert_eq!(again.body, r.body);
    let body = r.json();
    assert_eq!(body["kind"], "APIGroupDiscoveryList");
    assert_eq!(body["apiVersion"], "apidiscovery.k8s.io/v2");
    assert_eq!(body["metadata"], json!({}));
    assert!(r.body.starts_with(
        b"{\"kind\":\"APIGroupDiscoveryList\",\"apiVersion\":\"apidiscovery.k8s.io/v2\",\"metadata\":{},\"items\":["
    ));
    assert!(r.body.ends_with(b"}\n"), "compact JSON and a newline");
}

#[actix_web::test]
async fn if_none_match_with_the_exact_etag_gives_304_and_the_weak_form_gives_200() {
    let ds = kube_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps"]).await;
    let first = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT)]).await;
    let etag = first.header("etag");

    let again = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT), ("If-None-Match", &etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert!(again.body.is_empty());
    assert!(again.header("content-type").is_empty(), "304 has no Content-Type");
    assert_eq!(again.header("etag"), etag);
    assert!(again.header_all("vary").contains(&"Accept".to_owned()));
    assert_eq!(again.header("cache-control"), "public");

    for inm in [format!("W/{etag}"), format!("\"other\", {etag}"), "*".to_owned()] {
        let r = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT), ("If-None-Match", &inm)]).await;
        assert_eq!(r.status, StatusCode::OK, "If-None-Match: {inm} must match exactly only");
        assert_eq!(r.body, first.body);
    }
}

#[actix_web::test]
async fn no_accept_or_plain_json_gets_the_legacy_group_list() {
    let ds = kube_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps", "batch"]).await;
    let expected = concat!(
        r#"{"kind":"APIGroupList","apiVersion":"v1","groups":["#,
        r#"{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"#,
        r#""preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},"#,
        r#"{"name":"batch","versions":[{"groupVersion":"batch/v1","version":"v1"},"#,
        r#"{"groupVersion":"batch/v1beta1","version":"v1beta1"}],"#,
        r#""preferredVersion":{"groupVersion":"batch/v1","version":"v1"}}]}"#,
        "\n"
    );
    for headers in [&[][..], &[("Accept", "application/json")][..]] {
        let r = proxy.get("/apis", headers).await;
        assert_eq!(r.status, StatusCode::OK, "{headers:?}");
        assert_eq!(r.header("content-type"), "application/json");
        assert_eq!(std::str::from_utf8(&r.body).expect("UTF-8"), expected, "{headers:?}");
    }
}

#[actix_web::test]
async fn apis_with_a_trailing_slash_is_legacy_even_for_the_aggregated_accept() {
    let ds = kube_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps"]).await;
    let legacy = proxy.get("/apis", &[]).await;

    let r = proxy.get("/apis/", &[("Accept", CLIENT_GO_ACCEPT)]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), "application/json");
    assert_eq!(r.json()["kind"], "APIGroupList");
    assert_eq!(r.body, legacy.body);
}

#[actix_web::test]
async fn v2beta1_only_accept_gets_v2beta1_when_enabled() {
    let ds = kube_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps"]).await;
    let v2 = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT)]).await;

    let r = proxy.get("/apis", &[("Accept", V2BETA1_ONLY)]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), DISCOVERY_V2BETA1_CONTENT_TYPE);
    assert_eq!(
        r.header("content-type"),
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
    );
    let body = r.json();
    assert_eq!(body["kind"], "APIGroupDiscoveryList");
    assert_eq!(body["apiVersion"], "apidiscovery.k8s.io/v2beta1");
    assert_eq!(body["items"], v2.json()["items"], "v2beta1 is field-for-field v2");
}

#[actix_web::test]
async fn v2beta1_only_accept_is_406_with_a_status_body_when_switched_off() {
    let ds = kube_site();
    let config = Config {
        discovery_v2beta1: false,
        ..crate::common::proxy::config(vec![downstream("kube", &ds.url(), 1)])
    };
    let running = openapi_proxy::start(&config).expect("proxy starts");
    let base = format!("http://{}", running.addr);
    let proxy = TestProxy { running, base };
    wait_for_groups(&proxy, &["apps"]).await;

    for path in ["/apis", "/api"] {
        let r = proxy.get(path, &[("Accept", V2BETA1_ONLY)]).await;
        assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE, "{path}");
        assert_eq!(r.header("content-type"), "application/json", "{path}");
        assert_eq!(std::str::from_utf8(&r.body).expect("UTF-8"), NOT_ACCEPTABLE_BODY, "{path}");
    }
    // The full client-go list still gets v2.
    let r = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT)]).await;
    assert_eq!(r.header("content-type"), DISCOVERY_V2_CONTENT_TYPE);
}

#[actix_web::test]
async fn an_aggregated_clause_wins_over_plain_json_whatever_its_q() {
    let ds = kube_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps"]).await;
    let accept = "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.1";
    let r = proxy.get("/apis", &[("Accept", accept)]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), DISCOVERY_V2_CONTENT_TYPE);
    assert_eq!(r.json()["kind"], "APIGroupDiscoveryList");
}

#[actix_web::test]
async fn a_profile_nopeer_clause_is_accepted() {
    let ds = kube_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps"]).await;
    for accept in [NOPEER_CLAUSE.to_owned(), format!("{NOPEER_CLAUSE},{CLIENT_GO_ACCEPT}")] {
        let r = proxy.get("/apis", &[("Accept", &accept)]).await;
        assert_eq!(r.status, StatusCode::OK, "{accept}");
        assert_eq!(r.header("content-type"), DISCOVERY_V2_CONTENT_TYPE, "{accept}");
    }
}

#[actix_web::test]
async fn yaml_and_protobuf_aggregated_clauses_are_served_as_upstream_serves_them() {
    let ds = kube_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps"]).await;
    let gva = "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let others = format!("application/yaml;{gva}, application/vnd.kubernetes.protobuf;{gva}");

    // The first acceptable aggregated clause wins, whatever its format.
    let yaml =
        proxy.get("/apis", &[("Accept", &format!("{others}, application/json;{gva};q=0.5"))]).await;
    assert_eq!(yaml.status, StatusCode::OK);
    assert_eq!(yaml.header("content-type"), format!("application/yaml;{gva}"));

    let protobuf = proxy
        .get(
            "/apis",
            &[("Accept", &format!("application/vnd.kubernetes.protobuf;{gva}, application/json"))],
        )
        .await;
    assert_eq!(protobuf.status, StatusCode::OK);
    assert_eq!(
        protobuf.header("content-type"),
        format!("application/vnd.kubernetes.protobuf;{gva}")
    );
    assert!(protobuf.body.starts_with(b"k8s\0"));

    // Plain YAML is the legacy list.
    let legacy = proxy.get("/apis", &[("Accept", "application/yaml")]).await;
    assert_eq!(legacy.status, StatusCode::OK);
    assert_eq!(legacy.header("content-type"), "application/yaml");
    assert!(legacy.body.starts_with(b"apiVersion: v1\ngroups:\n"));
}

// ---- /api versus /apis ---------------------------------------------------

#[actix_web::test]
async fn api_aggregated_holds_exactly_the_core_group() {
    let ds = kube_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps"]).await;
    let r = proxy.get("/api", &[("Accept", CLIENT_GO_ACCEPT)]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), DISCOVERY_V2_CONTENT_TYPE);
    let body = r.json();
    let items = body["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "{body}");
    assert_eq!(items[0]["metadata"], json!({}), "the core group's metadata has no name");
    let versions = items[0]["versions"].as_array().expect("versions");
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0]["version"], "v1");
    assert_eq!(versions[0]["freshness"], "Current");
    assert_eq!(versions[0]["resources"][0]["resource"], "pods");
}

#[actix_web::test]
async fn apis_aggregated_never_lists_the_core_group() {
    // A downstream that (wrongly) lists the core group under /apis too.
    let ds = kube_site();
    ds.routes.set(
        "/apis",
        aggregated_route(vec![
            group("", &[("v1", vec![resource("pods", "pod", "Pod")])]),
            group("apps", &[("v1", vec![resource("deployments", "deployment", "Deployment")])]),
        ]),
    );
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps"]).await;
    let r = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT)]).await;
    assert_eq!(group_names(&r.body), ["apps"]);
    let legacy = proxy.get("/apis", &[]).await.json();
    assert_eq!(legacy["groups"].as_array().expect("groups").len(), 1, "{legacy}");
}

#[actix_web::test]
async fn api_legacy_is_api_versions_without_api_version() {
    let (ds, _) = legacy_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps"]).await;
    let r = proxy.get("/api", &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), "application/json");
    assert_eq!(
        std::str::from_utf8(&r.body).expect("UTF-8"),
        "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],\"serverAddressByClientCIDRs\":\
[{\"clientCIDR\":\"0.0.0.0/0\",\"serverAddress\":\"10.10.10.10:8050\"}]}\n"
    );
}

// ---- merging downstreams ---------------------------------------------------

/// `high` (priority 10): zeta.example.com with versions in a scrambled
/// order, and beta.example.com; `low` (priority 1, configured first):
/// alpha.example.com, and zeta.example.com/v3.
fn ordering_sites() -> (Site, Site) {
    let versions: Vec<(&str, Vec<Value>)> =
        ["foo10", "v1alpha1", "v1", "foo1", "v1beta1", "v2", "v1beta2"]
            .into_iter()
            .map(|v| (v, vec![resource("things", "thing", "Thing")]))
            .collect();
    let high = discovery_site(vec![(
        "/apis",
        aggregated_route(vec![
            group("zeta.example.com", &versions),
            group("beta.example.com", &[("v1", vec![resource("bees", "bee", "Bee")])]),
        ]),
    )]);
    let low = discovery_site(vec![(
        "/apis",
        aggregated_route(vec![
            group("alpha.example.com", &[("v1", vec![resource("ants", "ant", "Ant")])]),
            group("zeta.example.com", &[("v3", vec![resource("things", "thing", "Thing")])]),
        ]),
    )]);
    (high, low)
}

#[actix_web::test]
async fn groups_order_by_priority_then_name_and_versions_by_priority_then_kube_order() {
    let (high, low) = ordering_sites();
    let groups = ["alpha.example.com", "beta.example.com", "zeta.example.com"];
    let proxy = started(
        vec![downstream("low", &low.url(), 1), downstream("high", &high.url(), 10)],
        &groups,
    )
    .await;

    let r = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT)]).await;
    assert_eq!(group_names(&r.body), ["beta.example.com", "zeta.example.com", "alpha.example.com"]);
    let body = r.json();
    assert_eq!(
        version_names(&body, "zeta.example.com"),
        ["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo1", "foo10", "v3"],
        "the higher priority's versions first, each downstream's in Kubernetes order"
    );

    let legacy = proxy.get("/apis", &[]).await.json();
    let legacy_names: Vec<&str> = legacy["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["name"].as_str().expect("name"))
        .collect();
    assert_eq!(legacy_names, ["beta.example.com", "zeta.example.com", "alpha.example.com"]);
    let zeta = proxy.get("/apis/zeta.example.com", &[]).await.json();
    assert_eq!(
        zeta["preferredVersion"],
        json!({"groupVersion": "zeta.example.com/v2", "version": "v2"})
    );
}

#[actix_web::test]
async fn apiregistration_group_is_listed_first_whatever_its_priority() {
    // B-4.8 / B-11.13: kube-aggregator forces apiregistration.k8s.io above
    // every priority, so it is always the first group when present.
    let (high, _low) = ordering_sites();
    let low = discovery_site(vec![(
        "/apis",
        aggregated_route(vec![group(
            "apiregistration.k8s.io",
            &[("v1", vec![resource("apiservices", "apiservice", "APIService")])],
        )]),
    )]);
    let groups = ["apiregistration.k8s.io", "beta.example.com", "zeta.example.com"];
    let proxy = started(
        vec![downstream("high", &high.url(), 10), downstream("low", &low.url(), 1)],
        &groups,
    )
    .await;
    let r = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT)]).await;
    assert_eq!(group_names(&r.body), groups);
}

#[actix_web::test]
async fn a_group_version_served_twice_comes_from_the_higher_priority_downstream() {
    let serving = |kind: &str, hash: &str| {
        discovery_site(vec![
            (
                "/apis",
                aggregated_route(vec![group(
                    "apps",
                    &[("v1", vec![resource(&format!("{}s", kind.to_lowercase()), "", kind)])],
                )]),
            ),
            ("/apis/apps/v1", Route::json(legacy_list("apps/v1", "x", kind, hash))),
        ])
    };
    let low = serving("Low", "bG93bG93bG8=");
    let high = serving("High", "aGlnaGhpZ2g=");
    // The low-priority one is configured first: priority decides, not order.
    let proxy = TestProxy::start(vec![
        downstream("low", &low.url(), 1),
        downstream("high", &high.url(), 5),
    ]);
    proxy
        .wait_for("both downstreams merged", |s| {
            s.discovery.apis_v2.plain().expect("inflates").windows(5).any(|w| w == b"highs")
        })
        .await;

    let body = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT)]).await.json();
    let v1 = version_entry(&body, "apps", "v1");
    assert_eq!(v1["resources"].as_array().expect("resources").len(), 1, "{v1}");
    assert_eq!(v1["resources"][0]["resource"], "highs");
    assert_eq!(version_names(&body, "apps"), ["v1"]);
    let legacy = proxy.get("/apis/apps/v1", &[]).await;
    assert_eq!(legacy.body, legacy_list("apps/v1", "x", "High", "aGlnaGhpZ2g="));
}

// ---- legacy-only downstreams ----------------------------------------------

#[actix_web::test]
async fn a_legacy_only_downstream_appears_in_aggregated_discovery_with_subresources_folded() {
    let (ds, _) = legacy_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps"]).await;

    let r = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT)]).await;
    assert_eq!(r.header("content-type"), DISCOVERY_V2_CONTENT_TYPE);
    let text = std::str::from_utf8(&r.body).expect("UTF-8");
    assert!(!text.contains("storageVersionHash"), "the aggregated form has no storageVersionHash");
    let body = r.json();
    let v1 = version_entry(&body, "apps", "v1");
    assert_eq!(v1["freshness"], "Current");
    let resources = v1["resources"].as_array().expect("resources");
    let names: Vec<&str> =
        resources.iter().map(|r| r["resource"].as_str().expect("name")).collect();
    assert_eq!(
        names,
        ["controllerrevisions", "daemonsets", "deployments", "replicasets", "statefulsets"],
        "subresources are not resources of their own"
    );
    let deployments =
        resources.iter().find(|r| r["resource"] == "deployments").expect("deployments");
    assert_eq!(
        *deployments,
        json!({
            "resource": "deployments",
            "responseKind": {"group": "", "version": "", "kind": "Deployment"},
            "scope": "Namespaced",
            "singularResource": "deployment",
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": ["deploy"],
            "categories": ["all"],
            "subresources": [
                {"subresource": "scale",
                 "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                 "verbs": ["get", "patch", "update"]},
                {"subresource": "status",
                 "responseKind": {"group": "", "version": "", "kind": "Deployment"},
                 "verbs": ["get", "patch", "update"]}
            ]
        })
    );

    let core = proxy.get("/api", &[("Accept", CLIENT_GO_ACCEPT)]).await.json();
    let core_v1 = &core["items"][0]["versions"][0];
    assert_eq!(core_v1["version"], "v1");
    let namespaces = core_v1["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["resource"] == "namespaces")
        .expect("namespaces")
        .clone();
    assert_eq!(namespaces["scope"], "Cluster", "scope comes from namespaced: false");
}

#[actix_web::test]
async fn a_legacy_group_version_is_served_as_the_downstreams_own_bytes() {
    let (ds, apps_v1) = legacy_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps"]).await;
    let r = proxy.get("/apis/apps/v1", &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), "application/json");
    assert!(r.body == apps_v1, "the downstream's bytes, unchanged");
    assert_eq!(r.json()["resources"][0]["storageVersionHash"], "85nkx63pcBU=");
}

// ---- legacy per-group paths ------------------------------------------------

#[actix_web::test]
async fn apis_group_is_an_api_group_with_its_preferred_version() {
    let ds = kube_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["batch"]).await;
    let r = proxy.get("/apis/batch", &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), "application/json");
    assert_eq!(
        std::str::from_utf8(&r.body).expect("UTF-8"),
        concat!(
            r#"{"kind":"APIGroup","apiVersion":"v1","name":"batch","versions":["#,
            r#"{"groupVersion":"batch/v1","version":"v1"},"#,
            r#"{"groupVersion":"batch/v1beta1","version":"v1beta1"}],"#,
            r#""preferredVersion":{"groupVersion":"batch/v1","version":"v1"}}"#,
            "\n"
        )
    );
}

#[actix_web::test]
async fn unknown_group_or_version_is_a_404_status() {
    let ds = kube_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps"]).await;
    for path in ["/apis/nope.example.com", "/apis/apps/v9", "/apis/nope.example.com/v1", "/api/v2"]
    {
        let r = proxy.get(path, &[]).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(r.header("content-type"), "application/json", "{path}");
        let status = r.json();
        assert_eq!(status["kind"], "Status", "{path}");
        assert_eq!(status["apiVersion"], "v1", "{path}");
        assert_eq!(status["status"], "Failure", "{path}");
        assert_eq!(status["reason"], "NotFound", "{path}");
        assert_eq!(status["code"], 404, "{path}");
    }
}

// ---- failures ----------------------------------------------------------------

#[actix_web::test]
async fn a_stopped_downstream_turns_stale_keeping_its_resources() {
    let kube = kube_site();
    let other = discovery_site(vec![(
        "/apis",
        aggregated_route(vec![group(
            "gadgets.example.com",
            &[("v1", vec![resource("gadgets", "gadget", "Gadget")])],
        )]),
    )]);
    let proxy = started(
        vec![downstream("kube", &kube.url(), 1), downstream("gadgets", &other.url(), 2)],
        &["apps", "gadgets.example.com"],
    )
    .await;

    other.handle.stop(false).await;
    proxy
        .wait_for("gadgets.example.com/v1 stale", |s| {
            let list: Value =
                serde_json::from_slice(&s.discovery.apis_v2.plain().expect("inflates"))
                    .expect("JSON");
            version_entry(&list, "gadgets.example.com", "v1")["freshness"] == "Stale"
        })
        .await;

    let body = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT)]).await.json();
    let gadgets = version_entry(&body, "gadgets.example.com", "v1");
    assert_eq!(gadgets["freshness"], "Stale");
    assert_eq!(gadgets["resources"][0]["resource"], "gadgets", "last resources kept (Part A 8)");
    for (g, v) in [("apps", "v1"), ("batch", "v1"), ("batch", "v1beta1")] {
        assert_eq!(version_entry(&body, g, v)["freshness"], "Current", "{g}/{v}");
    }
    let core = proxy.get("/api", &[("Accept", CLIENT_GO_ACCEPT)]).await.json();
    assert_eq!(core["items"][0]["versions"][0]["freshness"], "Current");
}

// ---- metrics -------------------------------------------------------------------

#[actix_web::test]
async fn metrics_count_discovery_rebuilds_and_fetches() {
    let ds = kube_site();
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps"]).await;
    let text = String::from_utf8(proxy.get("/metrics", &[]).await.body.to_vec()).expect("UTF-8");

    let aggregations: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("aggregator_discovery_aggregation_count_total "))
        .unwrap_or_else(|| panic!("no aggregation counter:\n{text}"))
        .parse()
        .expect("a count");
    assert!(aggregations > 0, "{text}");
    assert!(text.contains("openapi_proxy_rebuild_duration_seconds_bucket{le=\"+Inf\"} "), "{text}");
    assert!(
        text.contains(
            "openapi_proxy_downstream_fetches_total{document=\"discovery_apis\",downstream=\"kube\",result=\"ok\"} "
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "openapi_proxy_downstream_fetches_total{document=\"discovery_api\",downstream=\"kube\",result=\"ok\"} "
        ),
        "{text}"
    );
}

// ---- names Kubernetes would refuse -------------------------------------------

/// A group name written to reach another path of the downstream.
const HOSTILE_GROUP: &str = "../../api/v1/namespaces/kube-system/secrets?x=";
const REFUSED: &str = "discovery lists a name Kubernetes would refuse";

/// A small OpenAPI 3.0 document.
fn openapi_document(title: &str) -> Bytes {
    let doc = json!({"openapi": "3.0.0", "info": {"title": title, "version": "v1"}, "paths": {}});
    Bytes::from(serde_json::to_vec(&doc).expect("JSON"))
}

/// A downstream whose names are partly hostile: its `/openapi/v3` root
/// lists keys with `?`, `%`, `#` and a space beside a good one (all
/// served), its legacy `/apis` a group named like a path and one with an
/// upper-case letter beside a good one; and it has a secret at the path the
/// hostile group would reach.
fn hostile_legacy_site() -> Site {
    let doc = openapi_document("gadgets");
    let hash = sha512_hex(&doc);
    let keys = [
        "apis/gadgets.example.com/v1",
        "apis/a?b.example.com/v1",
        "apis/a%2Fb.example.com/v1",
        "apis/a b.example.com/v1",
        "version#x",
    ];
    let mut paths = serde_json::Map::new();
    let mut routes = Vec::new();
    for key in keys {
        let url = format!("/openapi/v3/{key}?hash={hash}");
        paths.insert(key.to_owned(), json!({"serverRelativeURL": url}));
        routes.push((format!("/openapi/v3/{key}"), Route::json(doc.clone())));
    }
    let s = site();
    s.routes.set(
        "/openapi/v3",
        Route::json(serde_json::to_vec(&json!({"paths": paths})).expect("JSON")),
    );
    for (path, route) in routes {
        s.routes.set(&path, route);
    }
    let group = |name: &str| {
        json!({"name": name, "versions": [{"groupVersion": format!("{name}/v1"), "version": "v1"}],
               "preferredVersion": {"groupVersion": format!("{name}/v1"), "version": "v1"}})
    };
    let list = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        group("gadgets.example.com"), group(HOSTILE_GROUP), group("Upper.example.com")]});
    s.routes.set("/apis", Route::json(serde_json::to_vec(&list).expect("JSON")));
    s.routes.set(
        "/apis/gadgets.example.com/v1",
        Route::json(legacy_list("gadgets.example.com/v1", "gadgets", "Gadget", "aGFzaA==")),
    );
    for path in [
        "/api/v1/namespaces/kube-system/secrets",
        &format!("/apis/{HOSTILE_GROUP}/v1"),
        "/apis/Upper.example.com/v1",
    ] {
        s.routes.set(path, Route::json(legacy_list("v1", "secrets", "Secret", "U0VDUkVU")));
    }
    s
}

/// Names a downstream wrote that Kubernetes would refuse — root keys with
/// `?`, `%`, `#` or a space, a discovery group named like a path, a group
/// or version with an upper-case letter — were requested as written (with
/// the proxy's token) and republished. Now they are never requested and
/// never served, one warning names each refused discovery name, and the
/// rest of both downstreams is served.
#[actix_web::test]
async fn names_kubernetes_would_refuse_are_never_requested_nor_served() {
    let (logs, _guard) = crate::common::logs::capture();
    let legacy = hostile_legacy_site();
    let aggregated = discovery_site(vec![(
        "/apis",
        aggregated_route(vec![
            group("widgets.example.com", &[("v1", vec![]), ("V2", vec![]), ("v3?x=", vec![])]),
            group(HOSTILE_GROUP, &[("v1", vec![])]),
        ]),
    )]);
    aggregated.routes.set(
        "/apis/widgets.example.com/v1",
        Route::json(legacy_list("widgets.example.com/v1", "widgets", "Widget", "d2lkZ2V0")),
    );
    let proxy = TestProxy::start(vec![
        downstream("legacy", &legacy.url(), 2),
        downstream("aggregated", &aggregated.url(), 1),
    ]);
    proxy
        .wait_for("the good document and both good groups", |s| {
            s.openapi.contains_key("apis/gadgets.example.com/v1")
                && s.discovery.resources.contains_key("apis/gadgets.example.com/v1")
                && s.discovery.resources.contains_key("apis/widgets.example.com/v1")
        })
        .await;
    // Several rounds, so that a name refused again is not warned about again.
    crate::common::proxy::eventually("three rounds of each downstream's discovery", || {
        [&legacy, &aggregated]
            .iter()
            .all(|s| s.routes.seen().iter().filter(|r| r.uri == "/apis").count() >= 3)
    })
    .await;

    let root = proxy.get("/openapi/v3", &[]).await.json();
    let keys: Vec<&String> = root["paths"].as_object().expect("paths").keys().collect();
    assert_eq!(keys, ["apis/gadgets.example.com/v1"]);
    let aggregated_list = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT)]).await;
    assert_eq!(group_names(&aggregated_list.body), ["gadgets.example.com", "widgets.example.com"]);
    assert_eq!(version_names(&aggregated_list.json(), "widgets.example.com"), ["v1"]);
    let legacy_list_served = proxy.get("/apis", &[("Accept", "application/json")]).await.json();
    let legacy_names: Vec<&str> = legacy_list_served["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["name"].as_str().expect("name"))
        .collect();
    assert_eq!(legacy_names, ["gadgets.example.com", "widgets.example.com"]);
    for served in [&aggregated_list.body, &proxy.get("/openapi/v3", &[]).await.body] {
        let text = String::from_utf8_lossy(served);
        assert!(!text.contains("secrets") && !text.contains("Upper"), "{text}");
    }

    for (name, s) in [("legacy", &legacy), ("aggregated", &aggregated)] {
        for r in s.routes.seen() {
            let uri = &r.uri;
            let allowed = !uri.contains("secrets")
                && !uri.contains("..")
                && !uri.contains("a%2Fb")
                && !uri.contains("a?b")
                && !uri.contains("Upper")
                && !uri.contains("V2")
                && !uri.contains("example.com/v3");
            assert!(allowed, "{name} was asked for {uri}");
        }
    }
    let mut legacy_refused = logs.names(tracing::Level::WARN, "legacy", REFUSED);
    legacy_refused.sort();
    assert_eq!(
        legacy_refused,
        [format!("group {HOSTILE_GROUP:?}"), "group \"Upper.example.com\"".to_owned()]
    );
    let mut aggregated_refused = logs.names(tracing::Level::WARN, "aggregated", REFUSED);
    aggregated_refused.sort();
    assert_eq!(
        aggregated_refused,
        [
            format!("group {HOSTILE_GROUP:?}"),
            "version \"V2\" of group \"widgets.example.com\"".to_owned(),
            "version \"v3?x=\" of group \"widgets.example.com\"".to_owned(),
        ]
    );
}

/// kr8s asks for `/version/`, the generated Python client for `/api/`,
/// `/api/v1/`, `/apis/apps/` and `/apis/apps/v1/` (the discovery paths
/// kube-apiserver's own Swagger lists); kube-apiserver's go-restful routes
/// take them as the slash-less paths, so the proxy answers them alike:
/// same status, headers and bytes, for every form asked. `/openapi/v2/`
/// stays unknown, as upstream, where an exact-match handler serves it.
#[actix_web::test]
async fn a_trailing_slash_on_a_discovery_path_is_the_path_without_it() {
    let ds = kube_site();
    ds.routes.set("/version", Route::json(openapi_proxy::demo::version_body(32)));
    let proxy = started(vec![downstream("kube", &ds.url(), 1)], &["apps"]).await;
    proxy.wait_for("/version published", |s| s.version.is_some()).await;
    let accepts: [&[(&str, &str)]; 3] =
        [&[], &[("Accept", CLIENT_GO_ACCEPT)], &[("Accept", "application/json")]];
    for path in ["/version", "/api", "/api/v1", "/apis/apps", "/apis/apps/v1"] {
        for headers in accepts {
            let plain = proxy.get(path, headers).await;
            let slashed = proxy.get(&format!("{path}/"), headers).await;
            assert_eq!(plain.status, StatusCode::OK, "{path} {headers:?}");
            assert_eq!(slashed.status, plain.status, "{path}/ {headers:?}");
            for name in ["content-type", "etag", "vary", "cache-control"] {
                assert_eq!(slashed.header(name), plain.header(name), "{path}/ {name} {headers:?}");
            }
            assert_eq!(slashed.body, plain.body, "{path}/ {headers:?}");
        }
    }
    // Aggregated at `/api/` too, as at `/api`.
    let api = proxy.get("/api/", &[("Accept", CLIENT_GO_ACCEPT)]).await;
    assert_eq!(api.header("content-type"), DISCOVERY_V2_CONTENT_TYPE);
    for unknown in ["/openapi/v2/", "/healthz/", "/api/v1//", "/apis/apps/v1//", "/version//"] {
        assert_eq!(proxy.get(unknown, &[]).await.status, StatusCode::NOT_FOUND, "{unknown}");
    }
}
