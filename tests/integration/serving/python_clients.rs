//! Real Python clients pointed at the proxy: the generated `kubernetes`
//! client's typed discovery calls (`/version/`, `/api/`, `/api/v1/`,
//! `/apis/`, `/apis/apps/`, `/apis/apps/v1/`: the discovery paths
//! kube-apiserver's own Swagger lists, trailing slash and all) and kr8s,
//! whose constructor asks for `/version/`. Both are pinned in
//! `tests/validators/requirements.txt` and driven by
//! `tests/clients/metadata_calls.py`. docs/wire.md#a-14.

use std::process::Command;

use openapi_proxy::demo::{Route, Site, version_body};
use serde_json::{Value, json};

use crate::common::proxy::{TestProxy, downstream, site};
use crate::common::validators;

/// An aggregated-discovery downstream: the core group (`v1`: pods,
/// configmaps) at `/api`, `apps/v1` (deployments) at `/apis`, `/version`,
/// and an empty OpenAPI v3 root.
fn kube() -> Site {
    let resource = |plural: &str, kind: &str, group: &str| {
        json!({"resource": plural, "responseKind": {"group": group, "version": "v1", "kind": kind},
               "scope": "Namespaced", "singularResource": plural.trim_end_matches('s'),
               "verbs": ["get", "list", "watch", "create", "delete"]})
    };
    let list = |items: Value| {
        let mut route = Route::json(
            json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
                   "metadata": {}, "items": items})
            .to_string(),
        );
        route.content_type = openapi_proxy::media::DISCOVERY_V2_CONTENT_TYPE;
        route
    };
    let s = site();
    s.routes.set("/openapi/v3", Route::json(&b"{\"paths\":{}}"[..]));
    s.routes.set("/version", Route::json(version_body(33)));
    s.routes.set(
        "/api",
        list(json!([{"metadata": {}, "versions": [{"version": "v1", "freshness": "Current",
            "resources": [resource("configmaps", "ConfigMap", ""), resource("pods", "Pod", "")]}]}])),
    );
    s.routes.set(
        "/apis",
        list(json!([{"metadata": {"name": "apps"}, "versions": [{"version": "v1",
            "freshness": "Current", "resources": [resource("deployments", "Deployment", "apps")]}]}])),
    );
    s
}

/// What `tests/clients/metadata_calls.py` printed for `url`.
fn calls(url: &str) -> Value {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/metadata_calls.py");
    let out = Command::new(validators::python())
        .arg(&script)
        .arg(url)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed ({}): {}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[actix_web::test]
async fn the_python_client_and_kr8s_read_discovery_through_the_proxy() {
    let downstream_site = kube();
    let proxy = TestProxy::start(vec![downstream("kube", &downstream_site.url(), 1)]);
    proxy
        .wait_for("discovery and /version published", |s| {
            s.version.is_some() && s.discovery.resources.contains_key("apis/apps/v1")
        })
        .await;
    let base = proxy.base.clone();
    let got = actix_web::rt::task::spawn_blocking(move || calls(&base)).await.expect("join");
    let expected = json!({
        "VersionApi.get_code": "v1.33.0",
        "CoreApi.get_api_versions": ["v1"],
        "CoreV1Api.get_api_resources": ["configmaps", "pods"],
        "ApisApi.get_api_versions": ["apps"],
        "AppsApi.get_api_group": "apps/v1",
        "AppsV1Api.get_api_resources": ["deployments"],
        "kr8s.api": "ok",
        "kr8s.version": "v1.33.0",
        "kr8s.api_resources": ["apps/deployments", "v1/configmaps", "v1/pods"],
    });
    for (call, want) in expected.as_object().expect("an object") {
        assert_eq!(&got[call], want, "{call}: {}", got[call]);
    }
}
