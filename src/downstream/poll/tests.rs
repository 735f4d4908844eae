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
        memory_share: None,
    };
    let client =
        DownstreamClient::new("d", &site.url(), &TlsConfig::default(), None, timeout, 1 << 20)
            .expect("client");
    let hub = Arc::new(Hub::new(vec!["d".into()], Duration::ZERO));
    let ledger =
        Arc::new(Ledger::new(crate::config::DEFAULT_MEMORY_BUDGET_BYTES, &[("d".into(), None)]));
    Poller::new(&config, 0, client, hub, Arc::default(), Arc::default(), ledger)
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

/// The value of `openapi_proxy_downstream_fetches_total` for `document`
/// with `result`.
fn fetches(poller: &Poller, document: &str, result: &str) -> Option<u64> {
    poller.metrics.render().lines().find_map(|line| {
        let series = line.starts_with("openapi_proxy_downstream_fetches_total{")
            && line.contains(&format!(r#"document="{document}""#))
            && line.contains(&format!(r#"result="{result}""#));
        series.then(|| line.rsplit(' ').next().and_then(|n| n.parse().ok())).flatten()
    })
}

/// `/openapi/v2` is fetched as JSON only: its protobuf form is the
/// proxy's own encoding of the JSON it serves, so a downstream's would be
/// held for nothing (at 5,000 CRDs a real kube-apiserver's is megabytes).
#[actix_web::test]
async fn openapi_v2_is_fetched_as_json_only() {
    let site = start_site(Default::default()).expect("site");
    site.routes.set("/openapi/v2", Route::json(crate::demo::WIDGETS_V2));
    let mut poller = poller(&site);
    poller.round().await;
    assert_eq!(poller.failures, 0);
    assert!(poller.v2.is_some());
    assert_eq!(fetches(&poller, "openapi_v2", "ok"), Some(1));
    let asked: Vec<String> = site
        .routes
        .seen()
        .iter()
        .filter(|r| r.uri == "/openapi/v2")
        .map(|r| format!("{:?}", r.headers.get("accept")))
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(!asked[0].contains("protobuf"), "{asked:?}");
}

/// A downstream that delivered and then fails stays ready (its last good
/// documents are served) and `/readyz?verbose` says it is stale.
#[actix_web::test]
async fn readyz_shows_a_delivered_downstream_that_fails_as_stale() {
    let site = start_site(Default::default()).expect("site");
    let docs = documents(2);
    serve(&site, &docs, Duration::ZERO);
    let mut poller = poller(&site);
    poller.round().await;
    assert_eq!(poller.failures, 0);
    let (_, readiness) = poller.hub.current();
    assert!(readiness.verbose("readyz").contains("[+]downstream/d ok\n"));

    site.routes.set("/openapi/v3", Route::status(awc::http::StatusCode::INTERNAL_SERVER_ERROR));
    poller.round().await;
    assert_eq!(poller.failures, 1);
    let (_, readiness) = poller.hub.current();
    let text = readiness.verbose("readyz");
    assert!(readiness.ready(), "{text}");
    assert!(text.contains("[+]downstream/d ok (stale: last poll failed 0s ago)\n"), "{text}");

    serve(&site, &docs, Duration::ZERO);
    poller.round().await;
    assert!(poller.hub.current().1.verbose("readyz").contains("[+]downstream/d ok\n"));
}

/// The fields of each event logged on this thread while captured, by
/// message.
#[derive(Clone, Default)]
struct EventFields(Arc<std::sync::Mutex<Vec<BTreeMap<String, String>>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for EventFields {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().expect("events").push(fields);
    }
}

/// The warning of a failing downstream names what its count counts: the
/// parts of the round that failed (here all four), not "errors".
#[actix_web::test]
async fn the_poll_warning_counts_the_parts_that_failed() {
    use tracing_subscriber::layer::SubscriberExt as _;
    // As in the exec plugin's tests: a subscriber that always exists, so
    // that a test without one cannot turn the callsite off for this one.
    static ALWAYS: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
    ALWAYS.get_or_init(|| tracing::Dispatch::new(tracing_subscriber::registry()));
    let events = EventFields::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(events.clone()));
    let site = start_site(Default::default()).expect("site");
    for path in ["/openapi/v3", "/openapi/v2", "/version", "/api", "/apis"] {
        site.routes.set(path, Route::status(awc::http::StatusCode::INTERNAL_SERVER_ERROR));
    }
    let mut poller = poller(&site);
    poller.round().await;
    let events = events.0.lock().expect("events").clone();
    let warning = events
        .iter()
        .find(|e| e.get("message").is_some_and(|m| m.starts_with("poll failed")))
        .unwrap_or_else(|| panic!("no poll warning: {events:?}"));
    assert_eq!(warning.get("failed_parts").map(String::as_str), Some("4"), "{warning:?}");
    assert!(!warning.contains_key("errors"), "{warning:?}");
}
