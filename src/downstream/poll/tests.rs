//! The poll loop's checks of root entries and documents, and its fetching
//! of a root's documents: several at once, within the bound, with the
//! result of fetching them one after another.

use std::time::Duration;

use super::*;
use crate::config::DownstreamConfig;
use crate::demo::{Route, Site, start_site, v3_routes};
use crate::outbound::tls::TlsConfig;

#[test]
fn root_entries_must_point_under_openapi_v3_at_their_own_key() {
    assert_eq!(document_hash("apis/a/v1", "/openapi/v3/apis/a/v1?hash=AB12"), Some("AB12".into()));
    assert_eq!(document_hash("api/v1", "/openapi/v3/api/v1"), Some(String::new()));
    assert_eq!(document_hash("api/v1", "http://evil.example/openapi/v3/api/v1?hash=A"), None);
    assert_eq!(document_hash("api/v1", "//evil.example/openapi/v3/api/v1"), None);
    assert_eq!(document_hash("api/v1", "/openapi/v3/apis/other/v1?hash=A"), None);
    assert_eq!(document_hash("api/v1", "/openapi/v3/api/v1?hash=A%2F"), None);
}

#[test]
fn v3_documents_must_say_openapi_3() {
    assert!(validate_v3("/x", Bytes::from_static(b"{\"openapi\":\"3.0.0\",\"paths\":{}}")).is_ok());
    assert!(validate_v3("/x", Bytes::from_static(b"{\"swagger\":\"2.0\"}")).is_err());
    assert!(validate_v3("/x", Bytes::from_static(b"{\"openapi\":\"2.0\"}")).is_err());
    assert!(validate_v3("/x", Bytes::from_static(b"{\"openapi\":")).is_err());
}

/// `n` small OpenAPI 3 documents, `apis/g<i>.example.com/v1`.
fn documents(n: usize) -> BTreeMap<DocumentKey, Bytes> {
    (0..n)
        .map(|i| {
            let key = DocumentKey::parse(&format!("apis/g{i}.example.com/v1")).expect("a key");
            let body = format!(r#"{{"openapi":"3.0.0","info":{{"title":"g{i}"}},"paths":{{}}}}"#);
            (key, Bytes::from(body))
        })
        .collect()
}

fn path_of(key: &DocumentKey) -> String {
    format!("/openapi/v3/{key}")
}

/// A downstream serving `documents`, each answered after `delay`.
fn serve(site: &Site, documents: &BTreeMap<DocumentKey, Bytes>, delay: Duration) {
    site.routes.replace(v3_routes(documents).into_iter().map(|(path, route)| {
        let route = if path == "/openapi/v3" { route } else { route.delayed(delay) };
        (path, route)
    }));
}

fn poller(site: &Site) -> Poller {
    let timeout = Duration::from_secs(5);
    let config = DownstreamConfig {
        name: "d".into(),
        url: site.url(),
        priority: 0,
        tls: TlsConfig::default(),
        token: None,
        timeout,
        poll_interval: Duration::from_secs(3600),
        memory_share: crate::config::DEFAULT_MEMORY_BUDGET_BYTES,
    };
    let client =
        DownstreamClient::new("d", &site.url(), &TlsConfig::default(), None, timeout, 1 << 20)
            .expect("client");
    let hub = Arc::new(Hub::new(vec!["d".into()], Duration::ZERO));
    Poller::new(&config, 0, client, hub, Arc::default(), Arc::default())
}

/// The value of `openapi_proxy_downstream_fetches_total` for the v3
/// documents with `result`.
fn document_fetches(poller: &Poller, result: &str) -> Option<u64> {
    poller.metrics.render().lines().find_map(|line| {
        let series = line.starts_with("openapi_proxy_downstream_fetches_total{")
            && line.contains(r#"document="openapi_v3_document""#)
            && line.contains(&format!(r#"result="{result}""#));
        series.then(|| line.rsplit(' ').next().and_then(|n| n.parse().ok())).flatten()
    })
}

/// Issue 16: a thousand documents fetched one after another made a cold
/// start take more than twenty seconds.
#[actix_web::test]
async fn documents_are_fetched_several_at_once_within_the_bound() {
    let site = start_site(Default::default()).expect("site");
    let docs = documents(40);
    serve(&site, &docs, Duration::from_millis(30));
    let mut poller = poller(&site);
    poller.round().await;
    assert_eq!(poller.failures, 0);
    assert_eq!(poller.v3.len(), 40);
    assert!(poller.v3.keys().eq(docs.keys()));
    let most = site.routes.most_in_flight();
    assert!(most > 1 && most <= CONCURRENT_FETCHES, "{most} requests at once");
    assert_eq!(document_fetches(&poller, "ok"), Some(40));
}

/// Bodies read together are bounded as one alone would be: each of the
/// eight may hold an eighth of `maxDocumentBytes` (1 MiB here), and a
/// larger document is read again alone with the whole limit. A hostile
/// root listing eight documents of the full limit would otherwise have
/// eight times it in memory before the share is checked.
#[actix_web::test]
async fn a_document_over_its_part_of_the_limit_is_read_again_alone() {
    let site = start_site(Default::default()).expect("site");
    let mut docs = documents(12);
    let filler = "x".repeat(300_000);
    let large: Vec<DocumentKey> = docs.keys().take(3).cloned().collect();
    for key in &large {
        let body = format!(r#"{{"openapi":"3.0.0","paths":{{}},"x-filler":"{filler}"}}"#);
        docs.insert(key.clone(), Bytes::from(body));
    }
    let over = DocumentKey::parse("apis/over.example.com/v1").expect("a key");
    docs.insert(
        over.clone(),
        Bytes::from(format!(r#"{{"openapi":"3.0.0","x":"{}"}}"#, "y".repeat(2 << 20))),
    );
    serve(&site, &docs, Duration::from_millis(5));
    let mut poller = poller(&site);
    poller.round().await;
    for key in docs.keys().filter(|k| **k != over) {
        let held = poller.v3.get(key).map(|(_, r)| r.plain().expect("inflates"));
        assert_eq!(held.as_ref(), docs.get(key), "{key}");
    }
    assert!(!poller.v3.contains_key(&over), "over the whole limit: refused");
    let asked = |key: &DocumentKey| {
        site.routes.seen().iter().filter(|r| r.uri.starts_with(&path_of(key))).count()
    };
    for key in &large {
        assert_eq!(asked(key), 2, "{key}: over 128 KiB, read again with the whole limit");
    }
    assert_eq!(asked(docs.keys().nth(5).expect("a small one")), 1, "small ones are read once");
    assert_eq!(asked(&over), 2, "refused with the whole limit too");
    assert_eq!(document_fetches(&poller, "ok"), Some(12), "each counted once");
}

/// One failing document among many: the others are kept, the round fails
/// with the first failure in the root's order, the root's validator is not
/// kept (the next round asks again) and a document that fails keeps its
/// last good version.
#[actix_web::test]
async fn a_failing_document_among_many_keeps_the_others() {
    let site = start_site(Default::default()).expect("site");
    let docs = documents(30);
    serve(&site, &docs, Duration::from_millis(5));
    let keys: Vec<DocumentKey> = docs.keys().cloned().collect();
    site.routes.set(&path_of(&keys[20]), Route::status(awc::http::StatusCode::BAD_GATEWAY));
    site.routes.set(&path_of(&keys[7]), Route::status(awc::http::StatusCode::SERVICE_UNAVAILABLE));
    let mut poller = poller(&site);
    let e = poller.fetch_v3().await.expect_err("two documents fail");
    let chain = crate::error_chain(&e);
    assert!(chain.contains(&path_of(&keys[7])) && chain.contains("503"), "{chain}");
    assert_eq!(poller.v3.len(), 28);
    assert!(!poller.v3.contains_key(&keys[7]) && !poller.v3.contains_key(&keys[20]));
    assert!(poller.root_etag.is_none());
    assert_eq!(document_fetches(&poller, "ok"), Some(28));
    assert_eq!(document_fetches(&poller, "error"), Some(2));

    // Healed: only the two are fetched again.
    serve(&site, &docs, Duration::ZERO);
    let seen = site.routes.seen().len();
    poller.fetch_v3().await.expect("all fetched");
    assert_eq!(poller.v3.len(), 30);
    assert!(poller.root_etag.is_some());
    assert_eq!(site.routes.seen().len() - seen, 3, "the root and the two documents");

    // A changed document that fails keeps its last good version.
    let kept = poller.v3.get(&keys[3]).cloned().expect("fetched");
    let mut changed = docs.clone();
    changed.insert(keys[3].clone(), Bytes::from_static(br#"{"openapi":"3.0.1","paths":{}}"#));
    serve(&site, &changed, Duration::ZERO);
    site.routes
        .set(&path_of(&keys[3]), Route::status(awc::http::StatusCode::INTERNAL_SERVER_ERROR));
    poller.fetch_v3().await.expect_err("one document fails");
    let now = poller.v3.get(&keys[3]).expect("kept");
    assert!(now.0 == kept.0 && Arc::ptr_eq(&now.1, &kept.1));
    assert_eq!(poller.v3.len(), 30);
}
