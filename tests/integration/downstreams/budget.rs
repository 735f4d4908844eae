//! The memory budget with honest downstreams: a big one is served whole
//! when the budget has room, one that does not fit is refused whole and
//! says so in `/readyz`, and nothing is ever served by halves.
//!
//! Each test first measures what its CRD fleet holds
//! (`openapi_proxy_downstream_memory_bytes` behind a roomy budget), then
//! sizes the budget from it, so the tests follow the fleet's generator.

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use bytes::Bytes;
use openapi_proxy::demo::{Route, Routes, Site, start_site, v3_routes};
use openapi_proxy::testkit::crd::CrdFleet;
use openapi_proxy::testkit::fleet;
use openapi_proxy::{Config, DocumentKey, GroupVersion, Standing};
use serde_json::Value;

use crate::common::proxy::{TestProxy, config, downstream, eventually, widgets_site};

/// A small CRD fleet: 60 kinds in 20 group-versions, documents of a few
/// tens of KB each.
const FLEET: CrdFleet = CrdFleet { seed: 26, kinds: 60, group_versions: 20, kind_bytes: 12_000 };

/// The fleet's first `group_versions` group-versions, documents and
/// discovery together.
fn fleet_routes(group_versions: usize) -> Vec<(String, Route)> {
    let fleet = CrdFleet { group_versions, kinds: group_versions * 3, ..FLEET };
    let mut documents: BTreeMap<DocumentKey, Bytes> = BTreeMap::new();
    for index in 0..fleet.group_versions {
        let (group, version) = fleet.group_version(index);
        let key = DocumentKey::parse(&GroupVersion::key_of(&group, &version)).expect("a key");
        documents.insert(key, fleet.openapi_document(index, 0));
    }
    let mut routes = v3_routes(&documents);
    routes.extend(fleet::discovery_routes(&fleet.discovery(None)));
    routes
}

fn fleet_site(group_versions: usize) -> Site {
    let routes = Routes::default();
    routes.replace(fleet_routes(group_versions));
    start_site(routes).expect("the fleet starts")
}

fn gauge(proxy: &TestProxy, series: &str) -> Option<f64> {
    let text = proxy.running.state.metrics.render();
    text.lines().find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

fn held(proxy: &TestProxy, name: &str) -> Option<f64> {
    gauge(proxy, &format!("openapi_proxy_downstream_memory_bytes{{downstream=\"{name}\"}}"))
}

/// What the fleet of `group_versions` holds, measured behind a budget with
/// room for it.
async fn fleet_weight(group_versions: usize) -> usize {
    let site = fleet_site(group_versions);
    let proxy = TestProxy::start_config(&Config {
        memory_budget_bytes: 512 << 20,
        ..config(vec![downstream("fleet", &site.url(), 0)])
    });
    proxy.wait_for("the fleet delivered", |s| s.ready).await;
    eventually("the fleet's memory gauge", || held(&proxy, "fleet").is_some_and(|b| b > 0.0)).await;
    held(&proxy, "fleet").unwrap_or_default() as usize
}

/// Waits until the fleet's polls have failed `n` times for the budget.
async fn budget_failures(proxy: &TestProxy, n: f64) {
    let series = "openapi_proxy_downstream_errors_total{downstream=\"fleet\",reason=\"budget\"}";
    eventually("budget failures", || gauge(proxy, series).is_some_and(|failed| failed >= n)).await;
}

async fn readyz(proxy: &TestProxy) -> (StatusCode, String) {
    let r = proxy.get("/readyz?verbose", &[]).await;
    (r.status, String::from_utf8_lossy(&r.body).into_owned())
}

/// The fleet's groups in `/apis` and its documents in `/openapi/v3`.
async fn fleet_served(proxy: &TestProxy) -> (usize, usize) {
    let apis = proxy.get("/apis", &[]).await.json();
    let groups = apis["groups"]
        .as_array()
        .map_or(0, |g| g.iter().filter(|g| g["name"].as_str().is_some_and(is_crd)).count());
    let root = proxy.get("/openapi/v3", &[]).await.json();
    let documents = root["paths"].as_object().map_or(0, |p| p.keys().filter(|k| is_crd(k)).count());
    (groups, documents)
}

/// The fleet's groups are `WORD.crdN.example.com`.
fn is_crd(name: &str) -> bool {
    name.contains(".crd")
}

/// The case, small: a downstream whose documents fit the budget
/// and whose discovery does not. Before, its documents were served, its
/// groups were not, and `/readyz` said ready. Now nothing of it is
/// served, and readiness fails with the budget's words.
#[actix_web::test]
async fn a_downstream_refused_by_the_budget_fails_readiness_and_serves_nothing() {
    let weight = fleet_weight(FLEET.group_versions).await;
    let site = fleet_site(FLEET.group_versions);
    let proxy = TestProxy::start_config(&Config {
        // A little less than it needs: its last part, discovery, does not fit.
        memory_budget_bytes: weight - weight / 50,
        ..config(vec![downstream("fleet", &site.url(), 0)])
    });
    proxy.wait_polled("fleet").await;
    budget_failures(&proxy, 2.0).await;
    let (status, text) = readyz(&proxy).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{text}");
    assert!(text.contains("[-]downstream/fleet: budget: "), "{text}");
    assert!(text.contains("(raise memoryBudgetBytes or memoryShareBytes)"), "{text}");
    assert!(text.contains("needs ") && text.contains(" left "), "{text}");
    // Not half of it: neither its documents nor its groups.
    assert_eq!(fleet_served(&proxy).await, (0, 0));
    assert_eq!(gauge(&proxy, "openapi_proxy_downstream_up{downstream=\"fleet\"}"), Some(0.0));
}

/// Two downstreams: a big fleet and a small Swagger 2.0 server. Equal
/// halves of the budget would refuse the fleet; it takes what the small
/// one leaves, and both are whole.
#[actix_web::test]
async fn a_big_downstream_takes_what_a_small_neighbour_leaves() {
    let weight = fleet_weight(FLEET.group_versions).await;
    let site = fleet_site(FLEET.group_versions);
    let small = widgets_site();
    // Half of it is less than the fleet needs.
    let budget = weight * 3 / 2;
    let proxy = TestProxy::start_config(&Config {
        memory_budget_bytes: budget,
        ..config(vec![downstream("fleet", &site.url(), 1), downstream("small", &small.url(), 0)])
    });
    proxy
        .wait_for("both delivered", |s| {
            s.readiness.downstreams.iter().all(|(_, d)| *d == Standing::Delivered)
        })
        .await;
    let (status, text) = readyz(&proxy).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(text.contains("[+]downstream/fleet ok\n"), "{text}");
    assert!(text.contains("[+]downstream/small ok\n"), "{text}");
    assert_eq!(fleet_served(&proxy).await, (FLEET.group_versions / 2, FLEET.group_versions));
    let root = proxy.get("/openapi/v3", &[]).await.json();
    assert!(root["paths"].get("apis/widgets.example.com/v1beta1").is_some(), "{root}");
    let fleet_held = held(&proxy, "fleet").unwrap_or_default();
    assert!(fleet_held > (budget / 2) as f64, "{fleet_held} of {budget}");
    assert_eq!(gauge(&proxy, "openapi_proxy_memory_budget_bytes"), Some(budget as f64));
}

/// A downstream that delivered and then grows past the budget keeps its
/// last good documents and discovery together, is ready and stale, and
/// says why.
#[actix_web::test]
async fn a_delivered_downstream_that_outgrows_the_budget_keeps_its_last_good_round_whole() {
    let small = FLEET.group_versions / 2;
    let weight = fleet_weight(FLEET.group_versions).await;
    let site = fleet_site(small);
    let proxy = TestProxy::start_config(&Config {
        memory_budget_bytes: weight - weight / 50,
        ..config(vec![downstream("fleet", &site.url(), 0)])
    });
    proxy.wait_for("the small fleet delivered", |s| s.ready).await;
    let before = fleet_served(&proxy).await;
    assert_eq!(before, (small / 2, small));
    site.routes.replace(fleet_routes(FLEET.group_versions));
    budget_failures(&proxy, 2.0).await;
    let (status, text) = readyz(&proxy).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(text.contains("[+]downstream/fleet ok (stale: budget: "), "{text}");
    assert_eq!(fleet_served(&proxy).await, before, "the last good round, whole");
    let apis: Value = proxy.get("/apis", &[]).await.json();
    let listed: Vec<&str> = apis["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["name"].as_str())
        .filter(|n| is_crd(n))
        .collect();
    let root = proxy.get("/openapi/v3", &[]).await.json();
    for group in listed {
        assert!(
            root["paths"].as_object().is_some_and(|p| p.keys().any(|k| k.contains(group))),
            "{group} listed in /apis without its document"
        );
    }
}
