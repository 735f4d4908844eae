//! The downstream fault matrix (DESIGN.md "last good wins"): whatever a
//! downstream does, the proxy keeps serving the last good documents, never
//! panics, never grows without bound, and tells the operator what happened.
//!
//! Every fault runs on every path it applies to, each path with a proxy of
//! its own in front of two downstreams — `faulty` (behind a [`Gate`] that
//! injects the fault) and `bystander` (always healthy):
//! - `openapi-v3`: `faulty` publishes OpenAPI v3 (and aggregated discovery),
//!   the fault hits `/openapi/v3`;
//! - `openapi-v2`: `faulty` publishes only Swagger 2.0 (and legacy
//!   discovery), the fault hits `/openapi/v2`;
//! - `discovery-aggregated`: as `openapi-v3`, the fault hits `/api`, `/apis`;
//! - `discovery-legacy`: as `openapi-v2`, the fault hits `/api`, `/apis` and
//!   the per-group-version lists.
//!
//! Each case checks, naming the fault and the path when it fails: what was
//! served before is served byte for byte (same ETag) during the fault; the
//! right group-versions turn `Stale` and only those; `/metrics` shows the
//! failure with its reason; exactly one warning per good → failing
//! transition; and recovery (new content, `Current`, `up` 1, one line).

use std::time::Duration;

use actix_web::http::StatusCode;
use bytes::Bytes;
use openapi_proxy::config::DownstreamConfig;
use openapi_proxy::demo::{
    GADGETS_DISCOVERY, GADGETS_V2, Route, Routes, Site, WIDGETS_APIS, WIDGETS_RESOURCES,
    WIDGETS_V2, openapi_v3_documents, start_site, v3_routes,
};
use openapi_proxy::downstream::discovery::CLIENT_GO_ACCEPT;
use openapi_proxy::negotiate::DISCOVERY_V2_CONTENT_TYPE;
use serde_json::Value;
use tracing::Level;

use crate::common::fault::{Fault, Gate, Scope};
use crate::common::logs::{Captured, capture};
use crate::common::proxy::{TestProxy, downstream, eventually};

/// Per-request timeout of the faulty downstream: short, so that timeouts
/// show within a few polls.
const TIMEOUT: Duration = Duration::from_millis(300);
/// The proxy's `maxDocumentBytes` in these tests.
const MAX_BYTES: usize = 4 * 1024 * 1024;
/// The body a [`Fault::Huge`] downstream offers: 200 MB.
const HUGE: u64 = 200 * 1024 * 1024;
/// Failed polls to wait for before checking "during the fault".
const FAILED_POLLS: u64 = 3;

/// The warning logged when a downstream turns from good to failing.
const WARN_FAILING: &str = "poll failed; keeping last good documents";
/// The line logged when it recovers.
const INFO_RECOVERED: &str = "poll succeeded again";

// ---- the downstreams' content ----------------------------------------------

/// What a downstream publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// OpenAPI v3 (gadgets.example.com/v1) and aggregated discovery.
    V3Aggregated,
    /// Swagger 2.0 only (widgets.example.com/v1beta1) and legacy discovery.
    V2Legacy,
    /// The healthy neighbour: v3 and aggregated, bystander.example.com/v1.
    Bystander,
}

impl Kind {
    fn group_version(self) -> (&'static str, &'static str) {
        match self {
            Self::V3Aggregated => ("gadgets.example.com", "v1"),
            Self::V2Legacy => ("widgets.example.com", "v1beta1"),
            Self::Bystander => ("bystander.example.com", "v1"),
        }
    }

    /// The OpenAPI key of its group-version.
    fn key(self) -> String {
        let (g, v) = self.group_version();
        format!("apis/{g}/{v}")
    }

    /// Its routes at revision `rev`: every document says which revision it
    /// is, so a test can tell new content from old.
    fn routes(self, rev: u32) -> Vec<(String, Route)> {
        match self {
            Self::V3Aggregated | Self::Bystander => {
                let rename = |b: &[u8]| -> Vec<u8> {
                    let text = String::from_utf8(b.to_vec()).expect("fixture is UTF-8");
                    if self == Self::Bystander {
                        text.replace("gadgets.example.com", "bystander.example.com").into_bytes()
                    } else {
                        text.into_bytes()
                    }
                };
                let mut v2: Value = serde_json::from_slice(&rename(GADGETS_V2)).expect("fixture");
                v2["info"]["description"] = Value::String(format!("revision {rev}"));
                let docs = openapi_v3_documents(&serde_json::to_vec(&v2).expect("JSON"))
                    .expect("fixture converts");
                let mut routes = v3_routes(&docs);
                let mut disc: Value =
                    serde_json::from_slice(&rename(GADGETS_DISCOVERY)).expect("fixture");
                disc["items"][0]["versions"][0]["resources"][0]["shortNames"] =
                    serde_json::json!([format!("rev{rev}")]);
                routes.push(("/apis".into(), aggregated(&disc)));
                routes
            }
            Self::V2Legacy => {
                let mut v2: Value = serde_json::from_slice(WIDGETS_V2).expect("fixture");
                v2["info"]["description"] = Value::String(format!("revision {rev}"));
                let mut list: Value = serde_json::from_slice(WIDGETS_RESOURCES).expect("fixture");
                list["resources"][0]["shortNames"] = serde_json::json!([format!("rev{rev}")]);
                vec![
                    ("/openapi/v2".into(), Route::json(serde_json::to_vec(&v2).expect("JSON"))),
                    ("/apis".into(), Route::json(Bytes::from_static(WIDGETS_APIS))),
                    (
                        "/apis/widgets.example.com/v1beta1".into(),
                        Route::json(serde_json::to_vec(&list).expect("JSON")),
                    ),
                ]
            }
        }
    }
}

fn aggregated(doc: &Value) -> Route {
    let mut r = Route::json(serde_json::to_vec(doc).expect("JSON"));
    r.content_type = DISCOVERY_V2_CONTENT_TYPE;
    r
}

/// Where a fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    OpenApiV3,
    OpenApiV2,
    DiscoveryAggregated,
    DiscoveryLegacy,
}

const ALL_PATHS: [Path; 4] =
    [Path::OpenApiV3, Path::OpenApiV2, Path::DiscoveryAggregated, Path::DiscoveryLegacy];

impl Path {
    fn name(self) -> &'static str {
        match self {
            Self::OpenApiV3 => "openapi-v3",
            Self::OpenApiV2 => "openapi-v2",
            Self::DiscoveryAggregated => "discovery-aggregated",
            Self::DiscoveryLegacy => "discovery-legacy",
        }
    }

    fn kind(self) -> Kind {
        match self {
            Self::OpenApiV3 | Self::DiscoveryAggregated => Kind::V3Aggregated,
            Self::OpenApiV2 | Self::DiscoveryLegacy => Kind::V2Legacy,
        }
    }

    fn scope(self) -> Scope {
        match self {
            Self::OpenApiV3 => Scope::OpenApiV3,
            Self::OpenApiV2 => Scope::OpenApiV2,
            Self::DiscoveryAggregated | Self::DiscoveryLegacy => Scope::Discovery,
        }
    }

    fn is_discovery(self) -> bool {
        matches!(self, Self::DiscoveryAggregated | Self::DiscoveryLegacy)
    }
}

// ---- one proxy in front of a faulty and a healthy downstream -------------------

/// One case's world.
struct Bench {
    what: String,
    kind: Kind,
    site: Site,
    gate: Gate,
    _bystander: Site,
    proxy: TestProxy,
}

/// The faulty downstream's config: short timeout.
fn faulty_config(url: &str) -> DownstreamConfig {
    let mut d = downstream("faulty", url, 2);
    d.timeout = TIMEOUT;
    d
}

impl Bench {
    async fn start(what: String, kind: Kind) -> Self {
        let routes = Routes::default();
        routes.replace(kind.routes(1));
        let site = start_site(routes).expect("site starts");
        let gate = Gate::start(site.addr).await;
        let by_routes = Routes::default();
        by_routes.replace(Kind::Bystander.routes(1));
        let bystander = start_site(by_routes).expect("bystander starts");
        let proxy = TestProxy::start_with(
            vec![faulty_config(&gate.url()), downstream("bystander", &bystander.url(), 1)],
            MAX_BYTES,
        );
        let bench = Self { what, kind, site, gate, _bystander: bystander, proxy };
        let (g, v) = kind.group_version();
        let (bg, bv) = Kind::Bystander.group_version();
        let (key, bkey) = (kind.key(), Kind::Bystander.key());
        bench
            .proxy
            .wait_for(&format!("{}: both downstreams published", bench.what), |s| {
                let list: Value =
                    serde_json::from_slice(&s.discovery.apis_v2.body).expect("discovery is JSON");
                s.openapi.contains_key(&key)
                    && s.openapi.contains_key(&bkey)
                    && freshness(&list, g, v).as_deref() == Some("Current")
                    && freshness(&list, bg, bv).as_deref() == Some("Current")
            })
            .await;
        bench
    }

    /// Everything served about both downstreams that must survive a fault:
    /// the OpenAPI documents, the legacy per-group-version list, the root.
    fn watched(&self) -> Vec<String> {
        let (g, v) = self.kind.group_version();
        let (bg, bv) = Kind::Bystander.group_version();
        vec![
            format!("/openapi/v3/{}", self.kind.key()),
            format!("/openapi/v3/{}", Kind::Bystander.key()),
            format!("/apis/{g}/{v}"),
            format!("/apis/{bg}/{bv}"),
            "/openapi/v3".into(),
        ]
    }

    async fn served(&self) -> Vec<(String, StatusCode, String, Bytes)> {
        let mut out = Vec::new();
        for path in self.watched() {
            let r = self.proxy.get(&path, &[("Accept", "application/json")]).await;
            out.push((path, r.status, r.header("etag"), r.body));
        }
        out
    }

    async fn metrics(&self) -> String {
        String::from_utf8(self.proxy.get("/metrics", &[]).await.body.to_vec())
            .expect("metrics are UTF-8")
    }

    async fn gauge(&self, name: &str, downstream: &str) -> Option<f64> {
        metric(&self.metrics().await, &format!("{name}{{downstream=\"{downstream}\"}}"))
    }

    /// Waits until the faulty downstream has failed `n` polls in a row.
    async fn wait_failed_polls(&self, n: u64) {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let failed = self
                .gauge("openapi_proxy_downstream_consecutive_failures", "faulty")
                .await
                .unwrap_or(0.0);
            if failed >= n as f64 {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{}: the faulty downstream never failed {n} polls in a row\n{}",
                self.what,
                self.metrics().await
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    async fn wait_up(&self, up: bool) {
        let want = if up { 1.0 } else { 0.0 };
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while self.gauge("openapi_proxy_downstream_up", "faulty").await != Some(want) {
            assert!(
                std::time::Instant::now() < deadline,
                "{}: openapi_proxy_downstream_up never became {want}\n{}",
                self.what,
                self.metrics().await
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The aggregated `/apis`.
    async fn apis(&self) -> Value {
        self.proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT)]).await.json()
    }
}

/// The value of the sample `series` (name and labels, exactly).
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The freshness of `group`/`version` in an aggregated list.
fn freshness(list: &Value, group: &str, version: &str) -> Option<String> {
    version_entry(list, group, version)?["freshness"].as_str().map(str::to_owned)
}

fn version_entry<'a>(list: &'a Value, group: &str, version: &str) -> Option<&'a Value> {
    list["items"].as_array()?.iter().find(|g| g["metadata"]["name"] == group)?["versions"]
        .as_array()?
        .iter()
        .find(|v| v["version"] == version)
}

// ---- the fault table ------------------------------------------------------------

/// A fault that makes polls fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failing {
    ConnectionRefused,
    NoAnswer,
    HeadersThenStall,
    Status500,
    Status503,
    TruncatedJson,
    TruncatedBody,
    NotADocument,
    Huge,
    ListedThen404,
    Redirect,
}

impl Failing {
    fn name(self) -> &'static str {
        match self {
            Self::ConnectionRefused => "connection refused",
            Self::NoAnswer => "accepts then never answers",
            Self::HeadersThenStall => "headers then stall",
            Self::Status500 => "500",
            Self::Status503 => "503",
            Self::TruncatedJson => "truncated JSON",
            Self::TruncatedBody => "body cut short",
            Self::NotADocument => "valid JSON, not a document",
            Self::Huge => "200 MB body",
            Self::ListedThen404 => "listed, then 404",
            Self::Redirect => "redirect to another host",
        }
    }

    /// Whether the fault exists on `path`.
    fn applies(self, path: Path) -> bool {
        // Aggregated discovery lists no document it fetches afterwards.
        !(self == Self::ListedThen404 && path == Path::DiscoveryAggregated)
    }

    /// The `reason` label the failure must be counted under.
    fn reason(self, path: Path) -> &'static str {
        match (self, path) {
            (Self::ConnectionRefused, _) => "connect",
            (Self::NoAnswer | Self::HeadersThenStall, _) => "timeout",
            (Self::Status500 | Self::Status503 | Self::Redirect, _) => "status",
            (Self::TruncatedBody, _) => "body",
            (Self::Huge, _) => "too_large",
            (Self::TruncatedJson | Self::NotADocument, Path::OpenApiV3) => "bad_root",
            (Self::TruncatedJson | Self::NotADocument, Path::OpenApiV2) => "conversion",
            (Self::TruncatedJson | Self::NotADocument, _) => "bad_document",
            (Self::ListedThen404, Path::OpenApiV2) => "nothing_published",
            (Self::ListedThen404, _) => "status",
        }
    }

    /// Whether the faulty downstream's discovery is hit (then its
    /// group-version turns `Stale`).
    fn hits_discovery(self, path: Path) -> bool {
        self == Self::ConnectionRefused || path.is_discovery()
    }

    /// Starts the fault.
    fn inject(self, bench: &Bench, path: Path, other_host: &str) {
        let scope = path.scope();
        let respond = |status: u16, headers: Vec<(String, String)>, body: &[u8]| {
            bench.gate.fault(Fault::Respond { status, headers, body: body.to_vec() }, scope);
        };
        let json = || vec![("Content-Type".to_owned(), "application/json".to_owned())];
        match self {
            Self::ConnectionRefused => bench.gate.fault(Fault::Refuse, Scope::All),
            Self::NoAnswer => bench.gate.fault(Fault::Silent, scope),
            Self::HeadersThenStall => bench.gate.fault(Fault::Stall, scope),
            Self::Status500 => respond(500, Vec::new(), b"internal error"),
            Self::Status503 => respond(503, Vec::new(), b"unavailable"),
            Self::TruncatedJson => respond(200, json(), b"{\"openapi\":\"3.0.0\",\"paths\":{\"/a"),
            Self::TruncatedBody => bench.gate.fault(Fault::CutBody, scope),
            Self::NotADocument => respond(
                200,
                json(),
                br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nope","code":500}"#,
            ),
            Self::Huge => bench.gate.fault(Fault::Huge { bytes: HUGE }, scope),
            Self::Redirect => {
                let location = format!("{other_host}/elsewhere");
                respond(302, vec![("Location".into(), location)], b"");
            }
            Self::ListedThen404 => listed_then_404(bench, path),
        }
    }
}

/// The downstream still lists the document (under a new hash, or in its
/// group list) but serves 404 for it.
fn listed_then_404(bench: &Bench, path: Path) {
    let routes = &bench.site.routes;
    match path {
        Path::OpenApiV3 => {
            // Revision 2's root (new hashes) without revision 2's documents.
            let key = format!("/openapi/v3/{}", bench.kind.key());
            for (p, r) in bench.kind.routes(2) {
                if p == "/openapi/v3" {
                    routes.set(&p, r);
                }
            }
            routes.remove(&key);
        }
        Path::OpenApiV2 => routes.remove("/openapi/v2"),
        Path::DiscoveryLegacy => {
            let (g, v) = bench.kind.group_version();
            routes.remove(&format!("/apis/{g}/{v}"));
        }
        Path::DiscoveryAggregated => unreachable!("not applicable"),
    }
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// One failing fault on one path, from good through failing to recovered.
async fn failing_case(fault: Failing, path: Path, logs: Captured) {
    let what = format!("fault {:?} ({}) on {}", fault, fault.name(), path.name());
    let bench = Bench::start(what.clone(), path.kind()).await;
    let elsewhere = Routes::default();
    let other_host = start_site(elsewhere.clone()).expect("other host starts");
    let before = bench.served().await;
    for (p, status, _, _) in &before {
        assert_eq!(*status, StatusCode::OK, "{what}: {p} not served before the fault");
    }
    let rss_before = rss_kib();

    fault.inject(&bench, path, &other_host.url());
    bench.wait_failed_polls(FAILED_POLLS).await;

    // Last good wins: byte for byte, same ETag.
    let during = bench.served().await;
    for ((p, s0, e0, b0), (_, s1, e1, b1)) in before.iter().zip(&during) {
        assert_eq!(s1, s0, "{what}: {p} status changed during the fault");
        assert_eq!(e1, e0, "{what}: {p} ETag changed during the fault");
        assert!(b1 == b0, "{what}: {p} body changed during the fault");
    }
    // Only the faulty downstream's group-version is Stale, and only when
    // its discovery was hit; it keeps its resources.
    let apis = bench.apis().await;
    let (g, v) = bench.kind.group_version();
    let (bg, bv) = Kind::Bystander.group_version();
    let expected = if fault.hits_discovery(path) { "Stale" } else { "Current" };
    assert_eq!(freshness(&apis, g, v).as_deref(), Some(expected), "{what}: {g}/{v}\n{apis:#}");
    assert_eq!(freshness(&apis, bg, bv).as_deref(), Some("Current"), "{what}: bystander");
    let resources = &version_entry(&apis, g, v).expect("listed")["resources"];
    assert!(
        resources.as_array().is_some_and(|r| !r.is_empty()),
        "{what}: {g}/{v} lost its last known resources\n{apis:#}"
    );
    // Metrics name the downstream and the reason.
    let text = bench.metrics().await;
    let series = format!(
        "openapi_proxy_downstream_errors_total{{downstream=\"faulty\",reason=\"{}\"}}",
        fault.reason(path)
    );
    assert!(metric(&text, &series).is_some_and(|n| n >= 1.0), "{what}: no {series}\n{text}");
    assert_eq!(
        metric(&text, "openapi_proxy_downstream_up{downstream=\"faulty\"}"),
        Some(0.0),
        "{what}"
    );
    assert_eq!(
        metric(&text, "openapi_proxy_downstream_up{downstream=\"bystander\"}"),
        Some(1.0),
        "{what}"
    );
    assert!(
        !text.contains("openapi_proxy_downstream_errors_total{downstream=\"bystander\""),
        "{what}: the bystander failed too\n{text}"
    );
    // One warning for the transition, not one per failed poll.
    assert_eq!(
        logs.count(Level::WARN, "faulty", WARN_FAILING),
        1,
        "{what}: warnings: {:?}",
        logs.about(Level::WARN, "faulty")
    );
    if fault == Failing::Huge {
        let grew = rss_kib().saturating_sub(rss_before);
        assert!(grew < 100 * 1024, "{what}: RSS grew by {grew} KiB");
        let sent = bench.gate.huge_sent();
        assert!(sent < HUGE / 4, "{what}: the proxy read {sent} bytes of the 200 MB body");
    }
    if fault == Failing::Redirect {
        assert!(elsewhere.seen().is_empty(), "{what}: the redirect was followed");
    }

    // Recovery: new content on the next good poll.
    bench.gate.heal();
    bench.site.routes.replace(bench.kind.routes(2));
    let key = bench.kind.key();
    let gv_path = format!("apis/{g}/{v}");
    bench
        .proxy
        .wait_for(&format!("{what}: revision 2 served and Current"), |s| {
            let list: Value = serde_json::from_slice(&s.discovery.apis_v2.body).expect("JSON");
            let doc = s.openapi.get(&key).map(|e| e.rendered.body.clone()).unwrap_or_default();
            let legacy =
                s.discovery.resources.get(&gv_path).map(|r| r.body.clone()).unwrap_or_default();
            freshness(&list, g, v).as_deref() == Some("Current")
                && contains(&doc, b"revision 2")
                && contains(&legacy, b"rev2")
        })
        .await;
    bench.wait_up(true).await;
    assert_eq!(logs.count(Level::INFO, "faulty", INFO_RECOVERED), 1, "{what}: recovery lines");
    assert_eq!(logs.count(Level::WARN, "faulty", WARN_FAILING), 1, "{what}: warnings");
    other_host.handle.stop(false).await;
    bench.site.handle.stop(false).await;
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Runs `fault` on every path it applies to, concurrently, each path with
/// its own proxy and its own log capture scope (lines are told apart by
/// the proxy's downstream names, which are the same in every case, so each
/// case runs on a thread of its own).
fn run_failing(fault: Failing) {
    let cases: Vec<_> = ALL_PATHS
        .into_iter()
        .filter(|p| fault.applies(*p))
        .map(|path| {
            std::thread::spawn(move || {
                let (logs, _guard) = capture();
                actix_web::rt::System::new().block_on(failing_case(fault, path, logs));
            })
        })
        .collect();
    let mut failures = Vec::new();
    for case in cases {
        if let Err(panic) = case.join() {
            failures.push(
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default(),
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn connection_refused() {
    run_failing(Failing::ConnectionRefused);
}

#[test]
fn accepts_then_never_answers() {
    run_failing(Failing::NoAnswer);
}

#[test]
fn answers_headers_then_stalls() {
    run_failing(Failing::HeadersThenStall);
}

#[test]
fn status_500() {
    run_failing(Failing::Status500);
}

#[test]
fn status_503() {
    run_failing(Failing::Status503);
}

#[test]
fn truncated_json() {
    run_failing(Failing::TruncatedJson);
}

#[test]
fn body_cut_short() {
    run_failing(Failing::TruncatedBody);
}

#[test]
fn valid_json_that_is_not_a_document() {
    run_failing(Failing::NotADocument);
}

#[test]
fn a_200_mb_body_is_refused_while_streaming() {
    run_failing(Failing::Huge);
}

#[test]
fn a_listed_document_that_404s() {
    run_failing(Failing::ListedThen404);
}

#[test]
fn redirects_are_not_followed() {
    run_failing(Failing::Redirect);
}

// ---- faults that are not failures ---------------------------------------------

/// Regression: awc kept the connection of an HTTP/1.0 answer with a
/// `Content-Length` for reuse, the server closed it, and the next request
/// failed ("connector has been disconnected"). An HTTP/1.0 downstream, with
/// or without lengths (close-delimited bodies), must be read without a
/// single error.
#[test]
fn an_http_1_0_downstream_is_read_without_errors() {
    for (kind, content_length) in [
        (Kind::V3Aggregated, false),
        (Kind::V2Legacy, false),
        (Kind::V3Aggregated, true),
        (Kind::V2Legacy, true),
    ] {
        actix_web::rt::System::new().block_on(async move {
            let what = format!("HTTP/1.0 downstream ({kind:?}, Content-Length: {content_length})");
            let routes = Routes::default();
            routes.replace(kind.routes(1));
            let site = start_site(routes).expect("site starts");
            let gate = Gate::start(site.addr).await;
            gate.fault(Fault::Http10 { content_length }, Scope::All);
            let proxy = TestProxy::start_with(vec![faulty_config(&gate.url())], MAX_BYTES);
            let key = kind.key();
            proxy.wait_for(&what, |s| s.openapi.contains_key(&key)).await;
            let text =
                String::from_utf8(proxy.get("/metrics", &[]).await.body.to_vec()).expect("UTF-8");
            assert!(
                !text.contains("openapi_proxy_downstream_errors_total{downstream=\"faulty\""),
                "{what}: errors\n{text}"
            );
            assert!(gate.faulted() > 0, "{what}: the gate answered nothing in HTTP/1.0");
            let (g, v) = kind.group_version();
            let apis = proxy.get("/apis", &[("Accept", CLIENT_GO_ACCEPT)]).await.json();
            assert_eq!(freshness(&apis, g, v).as_deref(), Some("Current"), "{what}");
        });
    }
}
