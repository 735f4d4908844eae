//! The clients that read `/openapi/v2` in protobuf, through the proxy in
//! front of a JSON-only Kubernetes 1.35 (Swagger 2.0 and OpenAPI v3 in
//! JSON, legacy discovery) and a downstream that publishes Swagger 2.0
//! only (`widgets.example.com/v1beta1`, converted by the proxy, whose
//! operations have no `fieldValidation` parameter):
//!
//! - kubectl 1.27 and 1.28 `explain`, `create --dry-run=client`: they ask
//!   for `/openapi/v2` in protobuf only;
//! - kubectl 1.27, 1.28 and 1.33 validating a widget on the client (no
//!   `fieldValidation` on its group's operations, so kubectl validates
//!   from `/openapi/v2` itself): accepted, and rejected with an unknown
//!   field, named — which proves the merged v2 was read;
//! - kubectl 1.33 `explain --output=plaintext-openapiv2`.
//!
//! Every kind of both downstreams is in the one merged `/openapi/v2`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use openapi_proxy::demo::{Route, Site, openapi_v3_documents, v3_routes, version_body};
use openapi_proxy::testkit::kube;

use crate::common::kubectl::{Minor, Run, run_minor};
use crate::common::proxy::{TestProxy, downstream, site, widgets_site};
use crate::common::shared::shared_testdata;

/// Kubernetes 1.35's whole-cluster Swagger 2.0 document.
const SWAGGER_1_35: &str = "kubernetes-1.35/swagger.json";

/// A fake Kubernetes 1.35 serving JSON only: its Swagger 2.0 at
/// `/openapi/v2`, OpenAPI v3 per group-version at `/openapi/v3`, legacy
/// discovery derived from the Swagger document, `/version`.
fn kube_1_35() -> Site {
    let bytes = std::fs::read(shared_testdata(SWAGGER_1_35)).expect("read 1.35");
    let swagger: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
    let overlay = kube::overlay(&shared_testdata(kube::CAPTURED_DISCOVERY));
    let mut routes: Vec<(String, Route)> = kube::legacy_discovery(&swagger, &overlay)
        .into_iter()
        .map(|(path, list)| (path, Route::json(serde_json::to_vec(&list).expect("serializes"))))
        .collect();
    routes.extend(v3_routes(&openapi_v3_documents(&bytes).expect("1.35 converts")));
    routes.push(("/openapi/v2".to_owned(), Route::json(bytes)));
    routes.push(("/version".to_owned(), Route::json(version_body(35))));
    let s = site();
    s.routes.replace(routes);
    s
}

/// The widgets downstream with its legacy discovery (the demo's).
fn widgets() -> Site {
    let s = widgets_site();
    s.routes.set("/apis", Route::json(openapi_proxy::demo::WIDGETS_APIS));
    s.routes.set(
        "/apis/widgets.example.com/v1beta1",
        Route::json(openapi_proxy::demo::WIDGETS_RESOURCES),
    );
    s
}

/// The proxy in front of both, once both are published.
async fn proxy(kube: &Site, widgets: &Site) -> TestProxy {
    let mut k = downstream("kube", &kube.url(), 10);
    // Converting 1.35 for the fake takes a while in a debug build.
    k.timeout = Duration::from_secs(60);
    let proxy = TestProxy::start(vec![k, downstream("widgets", &widgets.url(), 1)]);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let s = proxy.running.state.store.load();
        if s.ready
            && s.openapi.contains_key("apis/apps/v1")
            && s.openapi.contains_key("apis/widgets.example.com/v1beta1")
            && s.discovery.resources.contains_key("apis/widgets.example.com/v1beta1")
        {
            break;
        }
        assert!(Instant::now() < deadline, "both downstreams not published in 120 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    proxy
}

fn manifest(name: &str, text: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, text).expect("manifest");
    path
}

const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  \
    namespace: default\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    \
    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - {name: web, \
    image: nginx}\n";

const WIDGET: &str = "apiVersion: widgets.example.com/v1beta1\nkind: Widget\nmetadata:\n  \
    name: w\n  namespace: default\nspec:\n  size: 3\n  port: 8080\n";

const WIDGET_UNKNOWN_FIELD: &str = "apiVersion: widgets.example.com/v1beta1\nkind: Widget\n\
    metadata:\n  name: w\n  namespace: default\nspec:\n  size: 3\n  sprocketCount: 9\n";

fn assert_ok(run: &Run, minor: Minor, sanity: &str) {
    assert!(run.success, "kubectl {minor:?} {} failed:\n{}", run.args, run.stderr);
    assert!(run.stdout.contains(sanity), "kubectl {minor:?} {}:\n{}", run.args, run.stdout);
}

/// kubectl 1.27 and 1.28 read `/openapi/v2` in protobuf for `explain` and
/// for `create`'s client-side validation: both work through the proxy,
/// for the kinds of both downstreams (one merged document).
#[actix_web::test]
async fn kubectl_1_27_and_1_28_explain_and_create_through_the_proxy() {
    let (k, w) = (kube_1_35(), widgets());
    let proxy = proxy(&k, &w).await;
    let deployment = manifest("old-clients-deployment.yaml", DEPLOYMENT);
    let deployment = deployment.to_str().expect("UTF-8");
    for minor in [Minor::V27, Minor::V28] {
        let run = run_minor(minor, &proxy.base, &["explain", "deployment.spec.strategy"]).await;
        assert_ok(&run, minor, "FIELD: strategy <DeploymentStrategy>");
        for (resource, sanity) in
            [("deployment.spec.strategy", "rollingUpdate"), ("widgets.spec", "sprockets")]
        {
            let args = ["explain", "--output=plaintext-openapiv2", resource];
            assert_ok(&run_minor(minor, &proxy.base, &args).await, minor, sanity);
        }
        let run =
            run_minor(minor, &proxy.base, &["create", "--dry-run=client", "-f", deployment]).await;
        assert_ok(&run, minor, "deployment.apps/web created (dry run)");
    }
}

/// A kind of the converted group has no `fieldValidation` on its
/// operations, so kubectl validates it on the client, from `/openapi/v2`
/// in protobuf: a good widget is accepted and one with an unknown field
/// rejected, naming the field.
#[actix_web::test]
async fn kubectl_validates_a_converted_kind_from_the_merged_v2() {
    let (k, w) = (kube_1_35(), widgets());
    let proxy = proxy(&k, &w).await;
    let good = manifest("old-clients-widget.yaml", WIDGET);
    let bad = manifest("old-clients-widget-unknown.yaml", WIDGET_UNKNOWN_FIELD);
    let (good, bad) = (good.to_str().expect("UTF-8"), bad.to_str().expect("UTF-8"));
    for minor in [Minor::V27, Minor::V28, Minor::V33] {
        let run = run_minor(minor, &proxy.base, &["create", "--dry-run=client", "-f", good]).await;
        assert_ok(&run, minor, "widget.widgets.example.com/w created (dry run)");
        let run = run_minor(minor, &proxy.base, &["create", "--dry-run=client", "-f", bad]).await;
        assert!(!run.success, "kubectl {minor:?} accepted an unknown field:\n{}", run.stdout);
        assert!(
            run.stderr.contains("sprocketCount"),
            "kubectl {minor:?} failed for another reason:\n{}",
            run.stderr
        );
    }
    let run = run_minor(
        Minor::V33,
        &proxy.base,
        &["explain", "--output=plaintext-openapiv2", "widgets.spec.size"],
    )
    .await;
    assert_ok(&run, Minor::V33, "sprockets");
    let run = run_minor(
        Minor::V33,
        &proxy.base,
        &["explain", "--output=plaintext-openapiv2", "deployments.spec.replicas"],
    )
    .await;
    assert_ok(&run, Minor::V33, "replicas");
}
