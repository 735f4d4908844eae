//! `openapi-proxy check`: every rule passes against the demo's proxy and
//! against the proxy in front of real Kubernetes documents (1.27, and 1.35
//! under the kube-apiserver profile too), or is not applicable where its
//! profile rules it out; every rule fails against a server built to break
//! exactly it (the demo's proxy, or the proxy in front of 1.35, behind a
//! "tamper" server that changes one thing), and against a server that
//! answers nothing no rule passes; a correct aggregated API server passes
//! under the profile check picks for it; the command runs end to end with
//! its exit status; docs/commands.md lists exactly the rule ids.

use std::io::{Read as _, Write as _};
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use bytes::Bytes;
use openapi_proxy::check::rules::RULES;
use openapi_proxy::check::{self, Area, CheckOptions, FetchOptions, Outcome, Profile, Report};
use openapi_proxy::demo::{self, Route};
use openapi_proxy::testkit::kube;
use openapi_proxy::{quoted, sha512_hex};
use serde_json::Value;

use crate::common::proxy::{TestProxy, downstream, site};
use crate::common::shared::shared_testdata;

fn options(base: &str, profile: Profile) -> CheckOptions {
    CheckOptions {
        fetch: FetchOptions {
            base: base.to_owned(),
            ca_file: None,
            insecure: false,
            token_file: None,
            timeout: Duration::from_secs(10),
            deadline: Duration::from_secs(120),
            max_bytes: 64 * 1024 * 1024,
        },
        profile: Some(profile),
        only: None,
    }
}

async fn check_server(base: &str) -> Report {
    check::run(&options(base, Profile::OpenapiProxy)).await.expect("the server is reachable")
}

fn text(report: &Report) -> String {
    let mut out = Vec::new();
    report.write_text(&mut out).expect("writes");
    String::from_utf8(out).expect("utf-8")
}

/// The rules a profile rules out, not applicable whatever the server.
fn ruled_out(profile: Profile) -> &'static [&'static str] {
    match profile {
        Profile::OpenapiProxy => &["B-11.21/storage-version-hash", "B-11.26/built-ins"],
        Profile::KubeApiserver => &["A-1/root-headers"],
        Profile::AggregatedApiserver => &["B-11.21/storage-version-hash", "B-11.26/built-ins"],
    }
}

/// Every rule passes but those the report's profile rules out, which are
/// not applicable.
fn assert_all_pass(report: &Report) {
    let out = ruled_out(report.profile);
    for (rule, outcome) in &report.results {
        let expected_na = out.contains(&rule.id);
        let ok = if expected_na {
            matches!(outcome, Outcome::NotApplicable(_))
        } else {
            matches!(outcome, Outcome::Pass)
        };
        assert!(
            ok,
            "{} is not {}:\n{}",
            rule.id,
            if expected_na { "N/A" } else { "PASS" },
            text(report)
        );
    }
    assert_eq!(report.counts().passed, RULES.len() - out.len(), "{}", text(report));
}

/// The demo: its two downstreams and the proxy in front, as `demo` runs them.
async fn demo_proxy() -> (demo::DemoSites, TestProxy) {
    let sites = demo::start_demo_sites().expect("demo sites start");
    let proxy = TestProxy::start(vec![
        downstream("gadgets", &sites.gadgets.url(), 2),
        downstream("widgets", &sites.widgets.url(), 1),
    ]);
    proxy
        .wait_for("both demo group-versions published", |s| {
            s.openapi.contains_key("apis/gadgets.example.com/v1")
                && s.openapi.contains_key("apis/widgets.example.com/v1beta1")
                && s.discovery.resources.len() >= 2
        })
        .await;
    (sites, proxy)
}

#[actix_web::test]
async fn every_rule_passes_against_the_demo() {
    let (_sites, proxy) = demo_proxy().await;
    assert_all_pass(&check_server(&proxy.base).await);
}

#[actix_web::test]
async fn only_selects_one_area_and_leaves_cross_checks_out() {
    let (_sites, proxy) = demo_proxy().await;
    let mut o = options(&proxy.base, Profile::OpenapiProxy);
    o.only = Some(Area::Discovery);
    let report = check::run(&o).await.expect("reachable");
    assert!(report.results.iter().all(|(r, _)| r.area == Area::Discovery), "{}", text(&report));
    let out = ruled_out(Profile::OpenapiProxy);
    let discovery = RULES.iter().filter(|r| r.area == Area::Discovery && !out.contains(&r.id));
    assert_eq!(report.counts().passed, discovery.count());
}

#[actix_web::test]
async fn the_kube_apiserver_profile_expects_the_core_group() {
    // The demo serves no core group: Part B expects one. Protobuf is
    // served under both profiles.
    let (_sites, proxy) = demo_proxy().await;
    let report =
        check::run(&options(&proxy.base, Profile::KubeApiserver)).await.expect("reachable");
    let id = "B-11.12/core-group";
    assert!(matches!(report.outcome(id), Some(Outcome::Fail(_))), "{id}:\n{}", text(&report));
    let id = "B-11.6/protobuf-accept";
    assert!(matches!(report.outcome(id), Some(Outcome::Pass)), "{id}:\n{}", text(&report));
    assert!(matches!(report.outcome("A-1/root-headers"), Some(Outcome::NotApplicable(_))));
}

/// The proxy in front of a v2-only "kube-apiserver 1.27" (the whole
/// cluster's Swagger 2.0, converted by the proxy) with the legacy
/// discovery that goes with it (derived from the same document,
/// `openapi_proxy::testkit::kube`).
#[actix_web::test]
async fn every_rule_passes_against_the_proxy_in_front_of_kubernetes_1_27() {
    let swagger = shared_testdata(kube::SWAGGER_1_27);
    let lists = kube::discovery_1_27();
    let kube = site();
    kube.routes
        .set("/openapi/v2", Route::json(std::fs::read(&swagger).expect("reads swagger.json")));
    kube.routes.set("/version", Route::json(demo::version_body(27)));
    let mut group_versions = 0;
    for (route, body) in lists {
        if route.matches('/').count() >= 2 {
            group_versions += 1;
        }
        kube.routes.set(&route, Route::json(serde_json::to_vec(&body).expect("serializes")));
    }
    let proxy = TestProxy::start(vec![downstream("kube", &kube.url(), 1)]);
    proxy
        .wait_for("1.27 converted and its discovery merged", |s| {
            s.openapi.contains_key("apis/apps/v1") && s.discovery.resources.len() >= group_versions
        })
        .await;
    let report = check_server(&proxy.base).await;
    assert_all_pass(&report);
}

/// A fake Kubernetes 1.35: its whole-cluster Swagger 2.0 at
/// `/openapi/v2` (the proxy converts it), `/version`, and the legacy
/// discovery derived from the same document, with a `storageVersionHash`
/// on every resource that can be watched, as kube-apiserver lists them.
fn kube_1_35() -> openapi_proxy::demo::Site {
    let bytes = std::fs::read(shared_testdata("kubernetes-1.35/swagger.json")).expect("1.35");
    let swagger: Value = serde_json::from_slice(&bytes).expect("JSON");
    let overlay = kube::overlay(&shared_testdata(kube::CAPTURED_DISCOVERY));
    let mut lists = kube::legacy_discovery(&swagger, &overlay);
    kube::add_storage_version_hashes(&mut lists, &overlay);
    let s = site();
    for (path, list) in lists {
        s.routes.set(&path, Route::json(serde_json::to_vec(&list).expect("serializes")));
    }
    s.routes.set("/openapi/v2", Route::json(bytes));
    s.routes.set("/version", Route::json(demo::version_body(35)));
    s
}

/// The proxy in front of [`kube_1_35`], once converted and merged.
async fn kube_1_35_proxy() -> (openapi_proxy::demo::Site, TestProxy) {
    let kube = kube_1_35();
    let mut d = downstream("kube", &kube.url(), 1);
    // Converting 1.35 takes a while in a debug build.
    d.timeout = Duration::from_secs(60);
    let proxy = TestProxy::start(vec![d]);
    proxy
        .wait_for("1.35 converted and its discovery merged", |s| {
            s.openapi.contains_key("apis/storage.k8s.io/v1") && s.discovery.resources.len() >= 30
        })
        .await;
    (kube, proxy)
}

/// Through the proxy, Kubernetes 1.35 passes every rule, as a cluster
/// (built-in resources, storage version hashes) and as openapi-proxy; left
/// to pick, check says it is openapi-proxy (its root has an ETag).
#[actix_web::test]
async fn every_rule_passes_against_the_proxy_in_front_of_kubernetes_1_35() {
    let (_kube, proxy) = kube_1_35_proxy().await;
    assert_all_pass(&check::run(&options(&proxy.base, Profile::KubeApiserver)).await.expect("up"));
    let mut auto = options(&proxy.base, Profile::OpenapiProxy);
    auto.profile = None;
    let report = check::run(&auto).await.expect("reachable");
    assert_eq!(report.profile, Profile::OpenapiProxy, "{}", text(&report));
    assert!(report.picked.as_deref().is_some_and(|w| !w.is_empty()));
    assert_all_pass(&report);
}

/// Against a server that answers nothing (every path 404), no rule
/// passes: each either fails or says why it does not apply, under every
/// profile. B-11.7 used to pass there, on the unknown key's 404 alone.
#[actix_web::test]
async fn against_an_empty_server_nothing_passes() {
    let empty = site();
    for profile in [Profile::OpenapiProxy, Profile::KubeApiserver, Profile::AggregatedApiserver] {
        let report = check::run(&options(&empty.url(), profile)).await.expect("reachable");
        let passed: Vec<&str> = report
            .results
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Pass))
            .map(|(r, _)| r.id)
            .collect();
        assert!(passed.is_empty(), "{profile:?}: {passed:?} passed:\n{}", text(&report));
        let json = report.to_json();
        let na = json["rules"]
            .as_array()
            .expect("rules")
            .iter()
            .find(|r| r["id"] == "B-11.7/not-acceptable-and-unknown-key")
            .expect("B-11.7");
        assert_eq!(na["result"], "not-applicable", "{json:#}");
        assert!(na["reason"].as_str().is_some_and(|r| r.contains("/openapi/v3")), "{json:#}");
    }
}

/// What a correct aggregated API server shows that openapi-proxy's proxy
/// does not: an unknown OpenAPI key is 200 with an empty body (handler3
/// alone), legacy `/apis` has no `apiVersion` and carries
/// `serverAddressByClientCIDRs` (a generic apiserver's discovery), `/api`
/// is 404 (no core group).
fn as_aggregated_apiserver(q: &Asked, a: &mut Answer) {
    if q.path.contains("openapi-proxy-check.invalid") && q.path.starts_with("/openapi/v3/") {
        a.status = StatusCode::OK;
        a.body = Bytes::new();
    }
    if q.path == "/api" || q.path == "/api/" {
        a.status = StatusCode::NOT_FOUND;
        a.body = Bytes::new();
    }
    let legacy = a
        .header("content-type")
        .is_some_and(|c| c.starts_with("application/json") && !c.contains("g="));
    if (q.path == "/apis" || q.path == "/apis/") && legacy {
        a.edit_json(|v| {
            if let Some(o) = v.as_object_mut() {
                o.remove("apiVersion");
            }
            for g in v["groups"].as_array_mut().into_iter().flatten() {
                g["serverAddressByClientCIDRs"] =
                    serde_json::json!([{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:443"}]);
            }
        });
    }
}

/// Pointed at an aggregated API server, check picks the
/// aggregated-apiserver profile, says so, and every rule passes; under
/// openapi-proxy's profile the three expectations that differ fail.
#[actix_web::test]
async fn a_correct_aggregated_apiserver_passes_under_its_picked_profile() {
    let (_sites, proxy) = demo_proxy().await;
    let (base, handle) = tamper_server(&proxy.base, as_aggregated_apiserver);
    let mut auto = options(&base, Profile::OpenapiProxy);
    auto.profile = None;
    let report = check::run(&auto).await.expect("reachable");
    assert_eq!(report.profile, Profile::AggregatedApiserver, "{}", text(&report));
    assert!(text(&report).starts_with(&format!(
        "checking {base} (profile aggregated-apiserver, picked: legacy /apis has no apiVersion"
    )));
    assert_all_pass(&report);
    let strict = check::run(&options(&base, Profile::OpenapiProxy)).await.expect("reachable");
    handle.stop(false).await;
    let failed: Vec<&str> = strict
        .results
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Fail(_)))
        .map(|(r, _)| r.id)
        .collect();
    assert_eq!(
        failed,
        ["B-11.7/not-acceptable-and-unknown-key", "B-11.10/legacy-apis", "B-11.12/core-group"],
        "{}",
        text(&strict)
    );
}

/// A root without an ETag is kube-aggregator's: left to pick, check
/// takes such a server for a cluster and says why.
#[actix_web::test]
async fn a_root_without_an_etag_is_taken_for_a_cluster() {
    let (_sites, proxy) = demo_proxy().await;
    let (base, handle) = tamper_server(&proxy.base, |q, a| {
        if q.path == "/openapi/v3" {
            a.headers.retain(|(k, _)| k != "etag");
        }
    });
    let mut auto = options(&base, Profile::OpenapiProxy);
    auto.profile = None;
    let report = check::run(&auto).await.expect("reachable");
    handle.stop(false).await;
    assert_eq!(report.profile, Profile::KubeApiserver, "{}", text(&report));
    assert_eq!(
        report.to_json()["profilePicked"],
        "the OpenAPI v3 root has no ETag, as kube-aggregator serves it"
    );
}

// ---------------------------------------------------------------------------
// Breaking each rule

/// A response on its way back through the tamper server.
struct Answer {
    status: StatusCode,
    headers: Vec<(String, String)>,
    body: Bytes,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn set_header(&mut self, name: &str, value: &str) {
        self.headers.retain(|(k, _)| k != name);
        self.headers.push((name.to_owned(), value.to_owned()));
    }

    /// Rewrites a JSON body (only 200s with a JSON body: the protobuf
    /// form of the same URL passes unchanged).
    fn edit_json(&mut self, f: impl FnOnce(&mut Value)) {
        let json = self.header("content-type").is_some_and(|c| c.starts_with("application/json"));
        if self.status != StatusCode::OK || self.body.is_empty() || !json {
            return;
        }
        let mut v: Value = serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!("a JSON body to break, not {:?} ({e})", self.header("content-type"))
        });
        f(&mut v);
        self.body = Bytes::from(serde_json::to_vec(&v).expect("serializes"));
    }

    /// After changing the root, keep its ETag honest so that only the
    /// intended rule sees a difference.
    fn rehash(&mut self) {
        let etag = quoted(&sha512_hex(&self.body));
        self.set_header("etag", &etag);
    }
}

/// What the tamper server saw of the request.
struct Asked {
    path: String,
    query: String,
    accept: String,
    if_none_match: String,
}

type Breakage = fn(&Asked, &mut Answer);

/// The gadgets document, the one the checker probes (the first
/// group-version key of the root).
const GADGETS: &str = "/openapi/v3/apis/gadgets.example.com/v1";
const WIDGETS: &str = "/openapi/v3/apis/widgets.example.com/v1beta1";

/// For every rule, one change to a conformant server that breaks it.
const BREAKAGES: &[(&str, Breakage)] = &[
    ("B-11.1/root-shape", |q, a| {
        if q.path == "/openapi/v3" {
            a.edit_json(|v| v["extra"] = Value::Bool(true));
            a.rehash();
        }
    }),
    ("A-1/root-headers", |q, a| {
        if q.path == "/openapi/v3" {
            a.set_header("cache-control", "public");
        }
    }),
    ("B-11.2/document-headers", |q, a| {
        if q.path == WIDGETS {
            a.headers.retain(|(k, _)| k != "expires");
        }
    }),
    ("B-11.3/hash-matches-body", |q, a| {
        if q.path == WIDGETS && a.status == StatusCode::OK {
            let mut body = a.body.to_vec();
            body.push(b'\n');
            a.body = Bytes::from(body);
        }
    }),
    ("B-11.4/stale-hash-redirect", |q, a| {
        if q.query.contains("hash=WRONG") && q.accept == "application/json" {
            a.status = StatusCode::FOUND;
        }
    }),
    ("B-11.5/if-none-match", |q, a| {
        if q.path.starts_with("/openapi/v3/") && !q.if_none_match.is_empty() {
            a.status = StatusCode::OK;
        }
    }),
    ("B-11.6/protobuf-accept", |q, a| {
        if q.accept.contains("q=0.5") {
            a.set_header("content-type", check::evidence::PROTOBUF);
        }
    }),
    ("B-11.7/not-acceptable-and-unknown-key", |q, a| {
        if q.path.contains("openapi-proxy-check.invalid") {
            a.status = StatusCode::OK;
            a.body = Bytes::new();
        }
    }),
    ("B-11.8/aggregated-apis", |q, a| {
        if q.path == "/apis" && a.header("content-type").is_some_and(|c| c.contains(";v=v2;")) {
            a.set_header("cache-control", "no-cache, private");
        }
    }),
    ("B-11.9/aggregated-etag", |q, a| {
        if q.path == "/apis" && q.if_none_match.starts_with("W/") {
            a.status = StatusCode::NOT_MODIFIED;
            a.body = Bytes::new();
        }
    }),
    ("B-11.10/legacy-apis", |q, a| {
        if q.path == "/apis/" {
            a.edit_json(|v| v["apiVersion"] = Value::from("v2"));
        }
    }),
    ("B-11.11/v2beta1", |q, a| {
        if q.accept == check::evidence::V2BETA1_ONLY_ACCEPT {
            a.set_header("content-type", openapi_proxy::media::DISCOVERY_V2_CONTENT_TYPE);
        }
    }),
    ("B-11.12/core-group", |q, a| {
        if (q.path == "/api" || q.path == "/api/") && q.accept == "application/json" {
            a.edit_json(|v| v["apiVersion"] = Value::from("v1"));
        }
    }),
    ("B-11.13/ordering", |q, a| {
        if q.path == "/apis/widgets.example.com" {
            a.edit_json(|v| {
                if let Some(versions) = v["versions"].as_array_mut() {
                    versions.push(serde_json::json!(
                        {"groupVersion": "widgets.example.com/v1alpha1", "version": "v1alpha1"}));
                }
            });
        }
    }),
    ("B-11.14/aggregated-matches-legacy", |q, a| {
        if q.path == "/apis" && a.header("content-type").is_some_and(|c| c.contains(";v=v2;")) {
            a.edit_json(|v| {
                v["items"][0]["versions"][0]["resources"][0]["scope"] = "Cluster".into()
            });
        }
    }),
    ("B-11.15/openapi-3.0-shape", |q, a| {
        if q.path == WIDGETS {
            a.edit_json(|v| v["servers"] = serde_json::json!([{"url": "/"}]));
        }
    }),
    ("doc/urls-resolve", |q, a| {
        if q.path == WIDGETS {
            a.status = StatusCode::INTERNAL_SERVER_ERROR;
            a.body = Bytes::new();
        }
    }),
    ("doc/valid-openapi-3.0", |q, a| {
        if q.path == WIDGETS {
            a.edit_json(|v| v["info"] = Value::from("not an info object"));
        }
    }),
    ("doc/refs-closed", |q, a| {
        if q.path == WIDGETS {
            a.edit_json(|v| {
                v["components"]["schemas"]["Dangling"] =
                    serde_json::json!({"$ref": "#/components/schemas/Nowhere"});
            });
        }
    }),
    ("doc/discovery-openapi-coverage", |q, a| {
        if q.path == "/openapi/v3" {
            a.edit_json(|v| {
                if let Some(paths) = v["paths"].as_object_mut() {
                    paths.remove("apis/widgets.example.com/v1beta1");
                }
            });
            a.rehash();
        }
    }),
    ("doc/kinds-have-schemas", |q, a| {
        if q.path == GADGETS {
            a.edit_json(|v| {
                if let Some(schemas) = v["components"]["schemas"].as_object_mut() {
                    for s in schemas.values_mut() {
                        if let Some(s) = s.as_object_mut() {
                            s.remove("x-kubernetes-group-version-kind");
                        }
                    }
                }
            });
        }
    }),
    ("B-11.16/version", |q, a| {
        if q.path == "/version" {
            a.status = StatusCode::NOT_FOUND;
            a.body = Bytes::new();
        }
    }),
    ("B-11.17/openapi-v2", |q, a| {
        if q.path == "/openapi/v2" && !q.if_none_match.is_empty() {
            a.status = StatusCode::OK;
        }
    }),
    ("B-11.18/openapi-v2-protobuf", |q, a| {
        if q.path == "/openapi/v2" && q.accept.contains("protobuf") {
            a.status = StatusCode::NOT_ACCEPTABLE;
            a.body = Bytes::new();
        }
    }),
    ("B-11.19/openapi-v2-kinds", |q, a| {
        if q.path == "/openapi/v2" && a.header("content-type") == Some("application/json") {
            a.edit_json(|v| {
                for d in v["definitions"].as_object_mut().into_iter().flat_map(|d| d.values_mut()) {
                    if let Some(d) = d.as_object_mut() {
                        d.remove("x-kubernetes-group-version-kind");
                    }
                }
            });
        }
    }),
    ("B-11.20/group-version-paths", |q, a| {
        if q.path == openapi_proxy::check::more::UNKNOWN_GROUP_VERSION {
            a.status = StatusCode::OK;
            a.set_header("content-type", "application/json");
            a.body = Bytes::from_static(b"{}");
        }
    }),
    ("B-11.22/singular-names", |q, a| {
        if q.path == "/apis/widgets.example.com/v1beta1" && q.accept == "application/json" {
            a.edit_json(|v| v["resources"][0]["singularName"] = Value::from(""));
        }
    }),
    ("B-11.23/preferred-version", |q, a| {
        if q.path == "/apis/widgets.example.com" {
            a.edit_json(|v| {
                v["preferredVersion"] = serde_json::json!(
                    {"groupVersion": "widgets.example.com/v9", "version": "v9"});
            });
        }
    }),
    ("B-11.24/lists-agree", |q, a| {
        if q.path == "/apis" && q.accept == "application/json" {
            a.edit_json(|v| {
                if let Some(groups) = v["groups"].as_array_mut() {
                    groups.reverse();
                }
            });
        }
    }),
    ("B-11.25/freshness", |q, a| {
        if q.path == "/apis" && a.header("content-type").is_some_and(|c| c.contains(";v=v2;")) {
            a.edit_json(|v| v["items"][0]["versions"][0]["freshness"] = Value::from("Stale"));
        }
    }),
    ("B-11.27/document-accept-edges", |q, a| {
        if q.path == GADGETS && q.accept == "*/*" {
            a.set_header("content-type", "text/plain");
        }
    }),
    ("B-11.28/discovery-accept-edges", |q, a| {
        if q.accept.contains("profile=nopeer") {
            a.set_header("content-type", "application/json");
        }
    }),
    ("B-11.29/paths-and-slashes", |q, a| {
        if q.path == "/version/" {
            a.status = StatusCode::NOT_FOUND;
            a.body = Bytes::new();
        }
    }),
    ("B-11.30/discovery-forms", |q, a| {
        if q.path == "/apis" && q.accept.starts_with("application/yaml") {
            a.set_header("etag", "\"another\"");
        }
    }),
];

/// For the rules only a cluster's profile applies, one change to the
/// proxy in front of Kubernetes 1.35 that breaks it.
const KUBE_BREAKAGES: &[(&str, Breakage)] = &[
    ("B-11.21/storage-version-hash", |q, a| {
        if q.path == "/apis/apps/v1" && q.accept == "application/json" {
            a.edit_json(|v| {
                for r in v["resources"].as_array_mut().into_iter().flatten() {
                    if let Some(r) = r.as_object_mut() {
                        r.remove("storageVersionHash");
                    }
                }
            });
        }
    }),
    ("B-11.26/built-ins", |q, a| {
        let drop = |r: &Value, key: &str| {
            r[key].as_str().is_some_and(|n| n == "deployments" || n.starts_with("deployments/"))
        };
        if q.path == "/apis/apps/v1" && q.accept == "application/json" {
            a.edit_json(|v| {
                if let Some(rs) = v["resources"].as_array_mut() {
                    rs.retain(|r| !drop(r, "name"));
                }
            });
        }
        if q.path == "/apis" && a.header("content-type").is_some_and(|c| c.contains(";v=v2;")) {
            a.edit_json(|v| {
                for item in v["items"].as_array_mut().into_iter().flatten() {
                    if item["metadata"]["name"] != "apps" {
                        continue;
                    }
                    for ver in item["versions"].as_array_mut().into_iter().flatten() {
                        if let Some(rs) = ver["resources"].as_array_mut() {
                            rs.retain(|r| !drop(r, "resource"));
                        }
                    }
                }
            });
        }
    }),
];

struct Tamper {
    upstream: String,
    breakage: Breakage,
}

async fn tampered(req: HttpRequest, tamper: web::Data<Tamper>) -> HttpResponse {
    let header = |name: &str| {
        req.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
    };
    let asked = Asked {
        path: req.path().to_owned(),
        query: req.query_string().to_owned(),
        accept: header("accept"),
        if_none_match: header("if-none-match"),
    };
    let client = awc::Client::builder().disable_redirects().finish();
    let mut up = client.get(format!("{}{}", tamper.upstream, req.uri()));
    for name in ["accept", "if-none-match", "accept-encoding"] {
        if let Some(v) = req.headers().get(name) {
            up = up.insert_header((name, v.clone()));
        }
    }
    let mut resp = up.send().await.expect("the demo proxy answers");
    let body = resp.body().limit(64 * 1024 * 1024).await.expect("body");
    let mut answer = Answer {
        status: resp.status(),
        headers: resp
            .headers()
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "content-length" | "date" | "transfer-encoding"))
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
            .collect(),
        body,
    };
    // A gzipped answer is broken as its JSON, then gzipped again.
    let gzipped = answer.header("content-encoding") == Some("gzip");
    if gzipped {
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&answer.body[..]).read_to_end(&mut plain).expect("gzip");
        answer.body = Bytes::from(plain);
    }
    (tamper.breakage)(&asked, &mut answer);
    if gzipped && !answer.body.is_empty() {
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&answer.body).expect("gzip");
        answer.body = Bytes::from(z.finish().expect("gzip"));
    } else if gzipped {
        answer.headers.retain(|(k, _)| k != "content-encoding");
    }
    let mut out = HttpResponse::build(answer.status);
    for (k, v) in &answer.headers {
        out.append_header((k.as_str(), v.as_str()));
    }
    if answer.body.is_empty() { out.finish() } else { out.body(answer.body) }
}

/// Serves `upstream` through `breakage` on a free loopback port.
fn tamper_server(upstream: &str, breakage: Breakage) -> (String, actix_web::dev::ServerHandle) {
    let data = web::Data::new(Tamper { upstream: upstream.to_owned(), breakage });
    let server = HttpServer::new(move || {
        App::new().app_data(data.clone()).default_service(web::to(tampered))
    })
    .workers(1)
    .disable_signals()
    .bind(("127.0.0.1", 0))
    .expect("binds");
    let addr = server.addrs()[0];
    let server = server.run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    (format!("http://{addr}"), handle)
}

#[test]
fn every_rule_has_exactly_one_breaking_fixture() {
    let all = || BREAKAGES.iter().chain(KUBE_BREAKAGES);
    for rule in RULES {
        let n = all().filter(|(id, _)| *id == rule.id).count();
        assert_eq!(n, 1, "rule {} has {n} breaking fixtures", rule.id);
    }
    for (id, _) in all() {
        assert!(check::rules::rule(id).is_some(), "fixture for unknown rule {id}");
    }
}

#[actix_web::test]
async fn every_rule_fails_against_a_server_that_breaks_it() {
    let (_sites, proxy) = demo_proxy().await;
    // The untampered pass-through passes everything: the tamper server
    // itself changes nothing that matters.
    let (base, handle) = tamper_server(&proxy.base, |_, _| {});
    assert_all_pass(&check_server(&base).await);
    handle.stop(false).await;
    let mut others_failing = Vec::new();
    for (id, breakage) in BREAKAGES {
        let (base, handle) = tamper_server(&proxy.base, *breakage);
        let report = check_server(&base).await;
        handle.stop(false).await;
        assert!(
            matches!(report.outcome(id), Some(Outcome::Fail(_))),
            "{id} did not fail against a server breaking it:\n{}",
            text(&report)
        );
        let area = check::rules::rule(id).expect("known").area;
        for (rule, outcome) in &report.results {
            let ruled_out = ruled_out(Profile::OpenapiProxy).contains(&rule.id);
            if rule.id != *id
                && rule.area == area
                && !ruled_out
                && !matches!(outcome, Outcome::Pass)
            {
                others_failing.push(format!("{id} also fails {}", rule.id));
            }
        }
    }
    // Breaking one thing may legitimately break a neighbour (a changed
    // document also changes its hash); these are the known ones, and any
    // new one must be looked at.
    let expected = [
        "B-11.3/hash-matches-body also fails B-11.15/openapi-3.0-shape",
        "B-11.15/openapi-3.0-shape also fails B-11.3/hash-matches-body",
        "doc/urls-resolve also fails B-11.2/document-headers",
        "doc/valid-openapi-3.0 also fails B-11.3/hash-matches-body",
        "doc/refs-closed also fails B-11.3/hash-matches-body",
        // The root's new ETag is unknown upstream: revalidation gives 200.
        "B-11.1/root-shape also fails A-1/root-headers",
        // A group-version without a document has no schemas either.
        "doc/discovery-openapi-coverage also fails doc/kinds-have-schemas",
        // The aggregated singularResource is the legacy singularName.
        "B-11.22/singular-names also fails B-11.14/aggregated-matches-legacy",
        // Aggregated /apis changed in JSON only: its YAML is another document.
        "B-11.14/aggregated-matches-legacy also fails B-11.30/discovery-forms",
        "B-11.25/freshness also fails B-11.30/discovery-forms",
    ];
    let unexpected: Vec<&String> =
        others_failing.iter().filter(|s| !expected.contains(&s.as_str())).collect();
    assert!(unexpected.is_empty(), "collateral failures: {unexpected:#?}");
}

/// The rules only a cluster's profile applies fail against the proxy in
/// front of Kubernetes 1.35 broken in exactly their way, under the
/// kube-apiserver profile, and nothing else of their area does.
#[actix_web::test]
async fn every_cluster_rule_fails_against_a_cluster_that_breaks_it() {
    let (_kube, proxy) = kube_1_35_proxy().await;
    for (id, breakage) in KUBE_BREAKAGES {
        let (base, handle) = tamper_server(&proxy.base, *breakage);
        let report = check::run(&options(&base, Profile::KubeApiserver)).await.expect("up");
        handle.stop(false).await;
        assert!(
            matches!(report.outcome(id), Some(Outcome::Fail(_))),
            "{id} did not fail against a server breaking it:\n{}",
            text(&report)
        );
        // Aggregated /apis changed in JSON only: its YAML is another document.
        let expected: &[&str] =
            if *id == "B-11.26/built-ins" { &["B-11.30/discovery-forms"] } else { &[] };
        let others: Vec<&str> = report
            .results
            .iter()
            .filter(|(r, o)| r.id != *id && matches!(o, Outcome::Fail(_)))
            .map(|(r, _)| r.id)
            .collect();
        assert_eq!(others, expected, "{id} also fails:\n{}", text(&report));
    }
}

/// Each way a version or a resource can be unusable to client-go fails
/// B-11.25, naming the group-version: Stale, a freshness client-go does
/// not know, a null responseKind of a resource or of a subresource.
#[actix_web::test]
async fn freshness_fails_on_each_way_client_go_refuses_a_version() {
    let (_sites, proxy) = demo_proxy().await;
    let breakages: [(&str, Breakage); 4] = [
        ("\"Stale\"", |q, a| {
            if q.path == "/apis" && a.header("content-type").is_some_and(|c| c.contains(";v=v2;")) {
                a.edit_json(|v| v["items"][0]["versions"][0]["freshness"] = Value::from("Stale"));
            }
        }),
        ("\"Fresh\"", |q, a| {
            if q.path == "/apis" && a.header("content-type").is_some_and(|c| c.contains(";v=v2;")) {
                a.edit_json(|v| v["items"][0]["versions"][0]["freshness"] = Value::from("Fresh"));
            }
        }),
        ("null", |q, a| {
            if q.path == "/apis" && a.header("content-type").is_some_and(|c| c.contains(";v=v2;")) {
                a.edit_json(|v| {
                    v["items"][0]["versions"][0]["resources"][0]["responseKind"] = Value::Null;
                });
            }
        }),
        ("absent", |q, a| {
            if q.path == "/apis" && a.header("content-type").is_some_and(|c| c.contains(";v=v2;")) {
                a.edit_json(|v| {
                    let subs = &mut v["items"][0]["versions"][0]["resources"][0]["subresources"];
                    if let Some(sub) = subs.as_array_mut().and_then(|s| s.first_mut()) {
                        sub.as_object_mut().map(|o| o.remove("responseKind"));
                    } else {
                        *subs = serde_json::json!([{"subresource": "status", "verbs": ["get"]}]);
                    }
                });
            }
        }),
    ];
    for (found, breakage) in breakages {
        let (base, handle) = tamper_server(&proxy.base, breakage);
        let report = check_server(&base).await;
        handle.stop(false).await;
        let Some(Outcome::Fail(findings)) = report.outcome("B-11.25/freshness") else {
            panic!("freshness did not fail on {found}:\n{}", text(&report));
        };
        assert!(
            findings.iter().any(|f| f.found == found && f.expected.contains("example.com/v")),
            "{found}: {findings:#?}"
        );
    }
}

/// A v3 document's protobuf must hold what its JSON holds: against a
/// server whose JSON (asked without Accept) lists one more schema than its
/// protobuf, B-11.27 fails naming the schemas.
#[actix_web::test]
async fn a_protobuf_document_must_hold_the_json_document() {
    let (_sites, proxy) = demo_proxy().await;
    let (base, handle) = tamper_server(&proxy.base, |q, a| {
        if q.path == GADGETS && q.accept.is_empty() {
            a.edit_json(|v| v["components"]["schemas"]["Extra"] = serde_json::json!({}));
        }
    });
    let report = check_server(&base).await;
    handle.stop(false).await;
    let Some(Outcome::Fail(findings)) = report.outcome("B-11.27/document-accept-edges") else {
        panic!("B-11.27 did not fail:\n{}", text(&report));
    };
    assert!(
        findings.iter().any(|f| f.at == "body components.schemas"
            && f.request
                .as_ref()
                .is_some_and(|r| r.headers.iter().any(|(_, v)| v.contains("protobuf")))),
        "{findings:#?}"
    );
}

// ---------------------------------------------------------------------------
// The command

async fn run_binary(args: Vec<String>) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_openapi-proxy"));
    cmd.args(args);
    actix_web::rt::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .expect("the binary runs")
}

#[actix_web::test]
async fn the_command_prints_one_line_per_rule_and_exits_by_the_verdict() {
    let (_sites, proxy) = demo_proxy().await;
    let out = run_binary(vec!["check".into(), proxy.base.clone()]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.starts_with("checking "), "{stdout}");
    assert!(stdout.lines().next().is_some_and(|l| l.contains("(profile openapi-proxy, picked: ")));
    let out = ruled_out(Profile::OpenapiProxy);
    for rule in RULES {
        let tag = if out.contains(&rule.id) { "N/A   " } else { "PASS  " };
        assert!(
            stdout.lines().any(|l| l.starts_with(tag) && l.contains(rule.id)),
            "no {tag} line for {}:\n{stdout}",
            rule.id
        );
    }
    let summary =
        format!("{} passed, 0 failed, {} not applicable\n", RULES.len() - out.len(), out.len());
    assert!(stdout.ends_with(&summary), "{stdout}");

    let json =
        run_binary(vec!["check".into(), proxy.base.clone(), "--output".into(), "json".into()])
            .await;
    let v: Value = serde_json::from_slice(&json.stdout).expect("JSON output");
    assert_eq!(v["summary"]["passed"], RULES.len() - out.len());
    assert_eq!(v["rules"][0]["id"], RULES[0].id);
    for (rule, r) in RULES.iter().zip(v["rules"].as_array().expect("rules")) {
        assert_eq!(r["upstream"], rule.upstream, "{}", rule.id);
        assert!(
            r["upstream"].as_str().is_some_and(|u| u.contains("_test.go: ") || u.contains("e2e/"))
        );
    }
    assert!(v["profilePicked"].as_str().is_some(), "{v:#}");

    let (base, handle) = tamper_server(&proxy.base, BREAKAGES[0].1);
    let out = run_binary(vec!["check".into(), base]).await;
    handle.stop(false).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL  B-11.1/root-shape"), "{stdout}");
    assert!(
        stdout.contains("GET /openapi/v3 → 200: body /: expected exactly one member"),
        "{stdout}"
    );

    let out = run_binary(vec!["check".into(), "http://127.0.0.1:1".into()]).await;
    assert_eq!(out.status.code(), Some(2), "an unreachable server is a usage-level error");
}

#[test]
fn the_commands_page_lists_exactly_the_rule_ids() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/commands.md"))
        .expect("docs/commands.md");
    let section =
        page.split("\n### The rules\n").nth(1).expect("docs/commands.md has the rule table");
    let section = section.split("\n#").next().unwrap_or(section);
    let listed: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .filter(|id| id.contains('/'))
        .collect();
    let ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
    assert_eq!(listed, ids, "docs/commands.md's rule table must list the rule ids in table order");
}

/// `check` against a server listing names Kubernetes would refuse
/// (docs/wire.md#a-4, #a-7): the root key is a root-shape failure, and the
/// hostile group is never requested (its path would reach a secret).
#[actix_web::test]
async fn names_kubernetes_would_refuse_fail_root_shape_and_are_never_requested() {
    let hostile = "../../api/v1/namespaces/kube-system/secrets?x=";
    let s = site();
    let doc = Bytes::from_static(
        b"{\"openapi\":\"3.0.0\",\"info\":{\"title\":\"t\",\"version\":\"v\"},\"paths\":{}}",
    );
    let key = "apis/a%2Fb.example.com/v1";
    let root = serde_json::json!({"paths": {key: {
        "serverRelativeURL": format!("/openapi/v3/{key}?hash={}", sha512_hex(&doc))}}});
    s.routes.set("/openapi/v3", Route::json(serde_json::to_vec(&root).expect("JSON")));
    s.routes.set(&format!("/openapi/v3/{key}"), Route::json(doc));
    let list = serde_json::json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [{
        "name": hostile, "versions": [{"groupVersion": format!("{hostile}/v1"), "version": "v1"}],
        "preferredVersion": {"groupVersion": format!("{hostile}/v1"), "version": "v1"}}]});
    s.routes.set("/apis", Route::json(serde_json::to_vec(&list).expect("JSON")));
    s.routes.set("/api/v1/namespaces/kube-system/secrets", Route::json(&b"{}"[..]));

    let report = check_server(&s.url()).await;
    let Some(Outcome::Fail(findings)) = report.outcome("B-11.1/root-shape") else {
        panic!("root-shape did not fail:\n{}", text(&report));
    };
    assert!(
        findings.iter().any(|f| f.at == format!("body /paths/{}", key.replace('/', "~1"))
            && f.found == format!("{key:?}")),
        "{}",
        text(&report)
    );
    let asked: Vec<String> = s.routes.seen().into_iter().map(|r| r.uri).collect();
    assert!(asked.iter().all(|u| !u.contains("secrets")), "{asked:#?}");
}

// ---------------------------------------------------------------------------
// Memory

/// An OpenAPI 3.0 document of about `bytes` bytes, made cheaply: a few
/// schemas referring to each other, and one long description carrying the
/// size.
/// A valid OpenAPI 3.0 document of about `bytes` bytes whose bulk is one
/// long string: cheap to parse, so that many of them test the total.
fn long_string_document(bytes: usize) -> Bytes {
    let head = r##"{"openapi":"3.0.0","info":{"title":"large","version":"v1"},"paths":{},"components":{"schemas":{"A":{"type":"object","properties":{"b":{"$ref":"#/components/schemas/B"}}},"B":{"type":"object","description":""##;
    let tail = r#""}}}}"#;
    let mut out = Vec::with_capacity(bytes);
    out.extend_from_slice(head.as_bytes());
    out.resize(bytes.saturating_sub(tail.len()).max(out.len()), b'x');
    out.extend_from_slice(tail.as_bytes());
    Bytes::from(out)
}

/// A valid OpenAPI 3.0 document of about `bytes` bytes, token-dense as
/// Kubernetes' are (many small schemas): parsing such a document costs
/// many times its size.
fn token_dense_document(bytes: usize) -> Bytes {
    let mut out = Vec::with_capacity(bytes + 512);
    out.extend_from_slice(
        br##"{"openapi":"3.0.0","info":{"title":"large","version":"v1"},"paths":{},"components":{"schemas":{"A":{"type":"object","properties":{"b":{"$ref":"#/components/schemas/S0"}}}"##,
    );
    let mut i = 0;
    while out.len() < bytes {
        write!(
            out,
            r#","S{i}":{{"type":"object","required":["a"],"properties":{{"a":{{"type":"string"}},"b":{{"type":"integer","format":"int32"}},"c":{{"type":"array","items":{{"type":"boolean"}}}}}}}}"#
        )
        .expect("write to a Vec");
        i += 1;
    }
    out.extend_from_slice(b"}}}");
    Bytes::from(out)
}

/// Runs `check --only openapi` against a server listing `documents` keys,
/// each answering `body`, and returns the checker's peak resident set in
/// KiB. The checker is held at its last request (answered late) while its
/// peak is read; every document must have been read and judged valid.
async fn peak_checking(documents: usize, body: Bytes, name: &str) -> u64 {
    use crate::common::memory::peak_rss_kib;

    let hash = sha512_hex(&body);
    let s = site();
    let mut paths = serde_json::Map::new();
    for i in 0..documents {
        let key = format!("apis/g{i}.example.com/v1");
        paths.insert(
            key.clone(),
            serde_json::json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}")}),
        );
        let mut route = Route::status(StatusCode::OK);
        route.content_type = "application/json";
        route.body = body.clone();
        route.etag = Some(quoted(&hash));
        s.routes.set(&format!("/openapi/v3/{key}"), route);
    }
    let root = serde_json::json!({ "paths": paths });
    s.routes.set("/openapi/v3", Route::json(serde_json::to_vec(&root).expect("JSON")));
    let last = format!("/openapi/v3/{}", check::evidence::UNKNOWN_KEY);
    s.routes.set(&last, Route::status(StatusCode::NOT_FOUND).delayed(Duration::from_secs(2)));

    // Output to files: a pipe nobody reads while the test samples would
    // stall the command once the report outgrows the pipe's buffer.
    let dir = crate::common::validators::scratch_dir(name);
    let (stdout, stderr) = (dir.join("stdout"), dir.join("stderr"));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
        .args(["check", &s.url(), "--only", "openapi", "--output", "json", "--timeout", "60s"])
        .stdout(std::fs::File::create(&stdout).expect("stdout file"))
        .stderr(std::fs::File::create(&stderr).expect("stderr file"))
        .spawn()
        .expect("the binary runs");
    let pid = child.id();
    // VmHWM is the peak so far, and gone once the process has exited: it
    // is sampled until then, and at least once while the last request
    // waits (after every document was fetched and judged).
    let mut peak_kib = 0;
    let mut held = false;
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    while child.try_wait().expect("wait").is_none() {
        if let Some(kib) = peak_rss_kib(pid) {
            peak_kib = peak_kib.max(kib);
            held |= s.routes.seen().iter().any(|r| r.uri == last);
        }
        assert!(std::time::Instant::now() < deadline, "check did not finish");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(held, "no sample while check waited for its last request");
    let report: Value = serde_json::from_slice(&std::fs::read(&stdout).expect("report"))
        .unwrap_or_else(|e| {
            panic!("{e}: {}", std::fs::read_to_string(&stderr).unwrap_or_default())
        });
    let outcome = |id: &str| {
        report["rules"].as_array().expect("rules").iter().find(|r| r["id"] == id).expect(id)
            ["result"]
            .clone()
    };
    // Every document was read and judged, not skipped.
    assert_eq!(outcome("B-11.3/hash-matches-body"), "pass", "{report:#}");
    assert_eq!(outcome("doc/refs-closed"), "pass", "{report:#}");
    assert_eq!(outcome("doc/valid-openapi-3.0"), "pass", "{report:#}");
    eprintln!("check of {documents} × {} bytes: peak RSS {peak_kib} KiB", body.len());
    peak_kib
}

/// `check` against a server listing 100 documents of 30 MB grew to 6 GB:
/// each body was capped, the total was not (every body was kept, and every
/// document rule parsed all of them at once). Here 32 documents of 4 MB
/// (128 MB in all, more than the bound) must be checked in a small,
/// bounded amount of memory.
#[actix_web::test]
async fn check_memory_stays_bounded_whatever_the_documents_add_up_to() {
    const DOCUMENTS: usize = 32;
    const SIZE: usize = 4 * 1024 * 1024;
    let peak_kib = peak_checking(DOCUMENTS, long_string_document(SIZE), "check-memory").await;
    // The binary itself (about 20 MiB for a debug build), eight documents
    // read at once and one examined: 59 MiB measured; keeping every body
    // and parsing them all at once took 335 MiB here.
    let bound_kib = 112 * 1024;
    assert!(peak_kib < bound_kib, "peak RSS {peak_kib} KiB checking {DOCUMENTS} × {SIZE} bytes");
}

/// One token-dense document was judged valid OpenAPI by deserializing it
/// whole, which buffers it into serde's generic tree first: 665 MiB for one
/// document of 29 MB. Judged a part at a time, it costs a few times its
/// size.
#[actix_web::test]
async fn one_token_dense_document_is_judged_in_a_few_times_its_size() {
    const SIZE: usize = 8 * 1024 * 1024;
    let body = token_dense_document(SIZE);
    let peak_kib = peak_checking(1, body, "check-memory-dense").await;
    // 81 MiB measured (debug build); deserializing it whole took 298 MiB.
    let bound_kib = 160 * 1024;
    assert!(peak_kib < bound_kib, "peak RSS {peak_kib} KiB checking one document of {SIZE} bytes");
}
