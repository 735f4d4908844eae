//! The downstream fault matrix (ARCHITECTURE.md, "last good wins"): whatever a
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
use openapi_proxy::DownstreamConfig;
use openapi_proxy::demo::{
    GADGETS_DISCOVERY, GADGETS_V2, Route, Routes, Site, WIDGETS_APIS, WIDGETS_RESOURCES,
    WIDGETS_V2, openapi_v3_documents, start_site, v3_routes,
};
use openapi_proxy::media::CLIENT_GO_DISCOVERY_ACCEPT as CLIENT_GO_ACCEPT;
use openapi_proxy::media::DISCOVERY_V2_CONTENT_TYPE;
use serde_json::Value;
use tracing::Level;

use crate::common::fault::{Fault, Gate, Scope};
use crate::common::logs::{Captured, capture};
use crate::common::proxy::{TestProxy, downstream, eventually};

/// Per-request timeout of the faulty downstream: short, so that timeouts
/// show within a few polls, yet long enough for a loaded 2-core machine
/// running many proxies in debug builds.
const TIMEOUT: Duration = Duration::from_secs(1);
/// Per-request timeout of the healthy bystander: it must never fail.
const BYSTANDER_TIMEOUT: Duration = Duration::from_secs(5);
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
                if self == Self::V3Aggregated {
                    let core = serde_json::json!({
                        "kind": "APIGroupDiscoveryList",
                        "apiVersion": "apidiscovery.k8s.io/v2",
                        "metadata": {},
                        "items": [{"metadata": {}, "versions": [{
                            "version": "v1",
                            "resources": [{
                                "resource": "pods",
                                "responseKind": {"group": "", "version": "", "kind": "Pod"},
                                "scope": "Namespaced",
                                "singularResource": "pod",
                                "verbs": ["get", "list", "watch"],
                            }],
                            "freshness": "Current",
                        }]}],
                    });
                    routes.push(("/api".into(), aggregated(&core)));
                }
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
                    (
                        "/api".into(),
                        Route::json(&br#"{"kind":"APIVersions","versions":["v1"]}"#[..]),
                    ),
                    (
                        "/api/v1".into(),
                        Route::json(
                            &br#"{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get","list","watch"],"storageVersionHash":"xPOwRZ+Yhw8="}]}"#[..],
                        ),
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
        let mut by_config = downstream("bystander", &bystander.url(), 1);
        by_config.timeout = BYSTANDER_TIMEOUT;
        let proxy = TestProxy::start_with(vec![faulty_config(&gate.url()), by_config], MAX_BYTES);
        let bench = Self { what, kind, site, gate, _bystander: bystander, proxy };
        let (g, v) = kind.group_version();
        let (bg, bv) = Kind::Bystander.group_version();
        let (key, bkey) = (kind.key(), Kind::Bystander.key());
        bench
            .proxy
            .wait_for(&format!("{}: both downstreams published", bench.what), |s| {
                let list: Value =
                    serde_json::from_slice(&s.discovery.apis_v2.plain().expect("inflates"))
                        .expect("discovery is JSON");
                s.openapi.contains_key(&key)
                    && s.openapi.contains_key(&bkey)
                    && freshness(&list, g, v).as_deref() == Some("Current")
                    && freshness(&list, bg, bv).as_deref() == Some("Current")
            })
            .await;
        // A first round that failed in part (a loaded machine) is completed
        // by a later one: wait for a whole good round of each.
        for name in ["faulty", "bystander"] {
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while bench.gauge("openapi_proxy_downstream_up", name).await != Some(1.0) {
                assert!(std::time::Instant::now() < deadline, "{}: {name} never up", bench.what);
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        }
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
            "/api/v1".into(),
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
    YamlAliasBomb,
    DeepNesting,
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
            Self::YamlAliasBomb => "YAML alias bomb",
            Self::DeepNesting => "JSON nested 100,000 deep",
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
            (Self::TruncatedJson | Self::NotADocument | Self::YamlAliasBomb, Path::OpenApiV3)
            | (Self::DeepNesting, Path::OpenApiV3) => "bad_root",
            (Self::TruncatedJson | Self::NotADocument | Self::YamlAliasBomb, Path::OpenApiV2)
            | (Self::DeepNesting, Path::OpenApiV2) => "conversion",
            (Self::TruncatedJson | Self::NotADocument | Self::YamlAliasBomb, _)
            | (Self::DeepNesting, _) => "bad_document",
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
            // 500 KB that YAML would expand to ten billion values; a
            // downstream's body is JSON or nothing, so it is refused
            // outright, at no cost.
            Self::YamlAliasBomb => {
                let items = vec!["a"; 100_000].join(", ");
                let uses = vec!["*a"; 100_000].join(", ");
                let body = format!("swagger: '2.0'\nx-a: &a [{items}]\nx-b: [{uses}]\n");
                respond(200, json(), body.as_bytes());
            }
            // Refused at the depth limit, in time linear in what was read.
            Self::DeepNesting => {
                let body = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
                respond(200, json(), body.as_bytes());
            }
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

    fault.inject(&bench, path, &other_host.url());
    bench.wait_failed_polls(FAILED_POLLS).await;

    // Last good wins: byte for byte, same ETag.
    let during = bench.served().await;
    for ((p, s0, e0, b0), (_, s1, e1, b1)) in before.iter().zip(&during) {
        assert_eq!(s1, s0, "{what}: {p} status changed during the fault");
        assert_eq!(
            e1,
            e0,
            "{what}: {p} ETag changed during the fault\nbefore: {}\nduring: {}",
            String::from_utf8_lossy(b0),
            String::from_utf8_lossy(b1)
        );
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
    // The core group comes from the faulty downstream too (/api).
    let api = bench.proxy.get("/api", &[("Accept", CLIENT_GO_ACCEPT)]).await.json();
    let core = &api["items"][0]["versions"][0];
    assert_eq!(core["version"], "v1", "{what}: core group\n{api:#}");
    // A listed group-version that 404s leaves the rest of discovery Current.
    let core_expected =
        if fault == Failing::ListedThen404 && path.is_discovery() { "Current" } else { expected };
    assert_eq!(core["freshness"], core_expected, "{what}: core v1\n{api:#}");
    assert!(
        core["resources"].as_array().is_some_and(|r| !r.is_empty()),
        "{what}: core v1 lost its last known resources\n{api:#}"
    );
    // Metrics name the downstream and the reason.
    let text = bench.metrics().await;
    let series = format!(
        "openapi_proxy_downstream_errors_total{{downstream=\"faulty\",reason=\"{}\"}}",
        fault.reason(path)
    );
    assert!(metric(&text, &series).is_some_and(|n| n >= 1.0), "{what}: no {series}\n{text}");
    // A poll counts once per reason, however many of its requests failed.
    let failed_polls =
        metric(&text, "openapi_proxy_downstream_consecutive_failures{downstream=\"faulty\"}");
    assert!(
        metric(&text, &series) <= failed_polls,
        "{what}: {series} counts more than the {failed_polls:?} failed polls\n{text}"
    );
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
    assert_eq!(logs.count(Level::WARN, "bystander", WARN_FAILING), 0, "{what}: bystander");
    // One warning for the transition, not one per failed poll.
    assert_eq!(
        logs.count(Level::WARN, "faulty", WARN_FAILING),
        1,
        "{what}: warnings: {:?}",
        logs.about(Level::WARN, "faulty")
    );
    // The line names the same reason as the metric (the first failure of
    // the round; refused connections fail every request alike).
    assert_eq!(
        logs.reasons(Level::WARN, "faulty"),
        [fault.reason(path)],
        "{what}: the warning's reason"
    );
    if fault == Failing::Huge {
        // Memory is measured on the real binary, alone in its process
        // (a_200_mb_body_leaves_the_proxy_process_small).
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
            let list: Value =
                serde_json::from_slice(&s.discovery.apis_v2.plain().expect("inflates"))
                    .expect("JSON");
            let (doc, legacy) = served(s, &key, &gv_path);
            freshness(&list, g, v).as_deref() == Some("Current")
                && contains(&doc, b"revision 2")
                && contains(&legacy, b"rev2")
        })
        .await;
    bench.wait_up(true).await;
    bench
        .proxy
        .wait_for(&format!("{what}: core v1 Current again"), |s| {
            let api: Value = serde_json::from_slice(&s.discovery.api_v2.plain().expect("inflates"))
                .expect("JSON");
            api["items"][0]["versions"][0]["freshness"] == "Current"
        })
        .await;
    assert_eq!(logs.count(Level::INFO, "faulty", INFO_RECOVERED), 1, "{what}: recovery lines");
    assert_eq!(logs.count(Level::WARN, "faulty", WARN_FAILING), 1, "{what}: warnings");
    other_host.handle.stop(false).await;
    bench.site.handle.stop(false).await;
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Runs `case` for each item concurrently, each on a thread of its own
/// with its own actix system and log capture scope (lines are told apart
/// by the proxy's downstream names, which are the same in every case), and
/// fails with every failed case's message.
fn each_on_its_own_thread<T, Fut>(items: impl IntoIterator<Item = T>, case: fn(T, Captured) -> Fut)
where
    T: Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let threads: Vec<_> = items
        .into_iter()
        .map(|item| {
            std::thread::spawn(move || {
                let (logs, _guard) = capture();
                actix_web::rt::System::new().block_on(case(item, logs));
            })
        })
        .collect();
    let mut failures = Vec::new();
    for thread in threads {
        if let Err(panic) = thread.join() {
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

/// Runs `fault` on every path it applies to, concurrently.
fn run_failing(fault: Failing) {
    let paths = ALL_PATHS.into_iter().filter(|p| fault.applies(*p)).map(move |p| (fault, p));
    each_on_its_own_thread(paths, |(fault, path), logs| failing_case(fault, path, logs));
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
fn a_yaml_alias_bomb() {
    run_failing(Failing::YamlAliasBomb);
}

#[test]
fn json_nested_100_000_deep() {
    run_failing(Failing::DeepNesting);
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

/// A root whose hashes do not match the documents it serves: the hash in
/// a downstream's root is only its validator (the proxy fetches again when
/// it changes). What is served carries the proxy's own hash of the bytes
/// served, so clients never see a URL, hash and ETag that disagree.
#[test]
fn a_root_hash_that_does_not_match_its_document() {
    actix_web::rt::System::new().block_on(async {
        let what = "hash mismatch on openapi-v3";
        let kind = Kind::V3Aggregated;
        let lying = |rev: u32, fake: char| -> Vec<(String, Route)> {
            let mut routes = kind.routes(rev);
            for (path, route) in &mut routes {
                if path == "/openapi/v3" {
                    let mut root: Value = serde_json::from_slice(&route.body).expect("root");
                    for entry in root["paths"].as_object_mut().expect("paths").values_mut() {
                        let url = entry["serverRelativeURL"].as_str().expect("url");
                        let (base, _) = url.split_once("?hash=").expect("hash");
                        let fake_hash: String = std::iter::repeat_n(fake, 128).collect();
                        entry["serverRelativeURL"] =
                            Value::String(format!("{base}?hash={fake_hash}"));
                    }
                    *route = Route::json(serde_json::to_vec(&root).expect("JSON"));
                }
            }
            routes
        };
        let (logs, _guard) = capture();
        let routes = Routes::default();
        routes.replace(lying(1, '0'));
        let site = start_site(routes).expect("site starts");
        let proxy = TestProxy::start_with(vec![faulty_config(&site.url())], MAX_BYTES);
        let key = kind.key();
        let check = |rev: u32| {
            let proxy = &proxy;
            let key = key.clone();
            async move {
                let root = proxy.get("/openapi/v3", &[]).await.json();
                let url =
                    root["paths"][&key]["serverRelativeURL"].as_str().expect("url").to_owned();
                let doc = proxy.get(&url, &[]).await;
                assert_eq!(doc.status, StatusCode::OK, "{what}: {url}");
                let hash = openapi_proxy::sha512_hex(&doc.body);
                assert!(
                    url.ends_with(&format!("?hash={hash}")),
                    "{what}: root URL {url} is not the served bytes' hash"
                );
                assert_eq!(doc.header("etag"), format!("\"{hash}\""), "{what}");
                assert!(
                    contains(&doc.body, format!("revision {rev}").as_bytes()),
                    "{what}: revision {rev}"
                );
            }
        };
        proxy.wait_for(what, |s| s.openapi.contains_key(&key)).await;
        check(1).await;
        // New documents under new (still wrong) hashes are fetched.
        site.routes.replace(lying(2, '1'));
        proxy
            .wait_for(&format!("{what}: revision 2"), |s| {
                s.openapi.get(&key).is_some_and(|e| {
                    contains(&e.rendered.plain().expect("inflates"), b"revision 2")
                })
            })
            .await;
        check(2).await;
        let text =
            String::from_utf8(proxy.get("/metrics", &[]).await.body.to_vec()).expect("UTF-8");
        assert!(
            !text.contains("openapi_proxy_downstream_errors_total{downstream=\"faulty\""),
            "{what}\n{text}"
        );
        assert_eq!(logs.count(Level::WARN, "faulty", WARN_FAILING), 0, "{what}");
    });
}

/// Content that changes on every poll is served as it comes, without a
/// failure, and neither the conversion cache nor the snapshot grows.
#[test]
fn content_that_changes_on_every_poll() {
    each_on_its_own_thread([Kind::V3Aggregated, Kind::V2Legacy], changing);
}

async fn changing(kind: Kind, logs: Captured) {
    let what = format!("content changing on every poll ({kind:?})");
    let bench = Bench::start(what.clone(), kind).await;
    let documents = metric(&bench.metrics().await, "openapi_proxy_snapshot_documents");
    let mut largest_cache = 0.0f64;
    for rev in 2..=40u32 {
        bench.site.routes.replace(kind.routes(rev));
        tokio::time::sleep(Duration::from_millis(40)).await;
        let text = bench.metrics().await;
        assert_eq!(
            metric(&text, "openapi_proxy_snapshot_documents"),
            documents,
            "{what}: the snapshot grew"
        );
        largest_cache = largest_cache
            .max(metric(&text, "openapi_proxy_conversion_cache_entries").unwrap_or(0.0));
    }
    // The last revision is served, documents and discovery alike.
    let key = kind.key();
    let (g, v) = kind.group_version();
    let gv_path = format!("apis/{g}/{v}");
    bench
        .proxy
        .wait_for(&format!("{what}: revision 40 served"), |s| {
            let (doc, legacy) = served(s, &key, &gv_path);
            contains(&doc, b"revision 40") && contains(&legacy, b"rev40")
        })
        .await;
    let text = bench.metrics().await;
    let per_downstream = metric(&text, "openapi_proxy_downstream_documents{downstream=\"faulty\"}")
        .expect("documents gauge");
    // The poller's current conversion, the one being replaced, and the one
    // the served snapshot still holds: never more.
    assert!(
        largest_cache <= 3.0 * per_downstream,
        "{what}: conversion cache reached {largest_cache} entries for {per_downstream} documents"
    );
    if kind == Kind::V2Legacy {
        assert!(largest_cache > 0.0, "{what}: the cache gauge never moved");
    }
    assert!(
        !text.contains("openapi_proxy_downstream_errors_total{downstream=\"faulty\""),
        "{what}: changing content counted as a failure\n{text}"
    );
    assert_eq!(logs.count(Level::WARN, "faulty", WARN_FAILING), 0, "{what}");
}

/// A downstream that goes down and comes back three times: one warning and
/// one recovery line per transition, documents identical throughout, Stale
/// exactly while it is down.
#[test]
fn a_downstream_that_flaps() {
    each_on_its_own_thread([Kind::V3Aggregated, Kind::V2Legacy], flapping);
}

async fn flapping(kind: Kind, logs: Captured) {
    let what = format!("flapping downstream ({kind:?})");
    let bench = Bench::start(what.clone(), kind).await;
    let before = bench.served().await;
    let (g, v) = kind.group_version();
    let fresh_is = |want: &'static str| {
        move |s: &openapi_proxy::Snapshot| {
            let list: Value =
                serde_json::from_slice(&s.discovery.apis_v2.plain().expect("inflates"))
                    .expect("JSON");
            freshness(&list, g, v).as_deref() == Some(want)
        }
    };
    for cycle in 1..=3 {
        bench.gate.fault(Fault::Refuse, Scope::All);
        bench.wait_up(false).await;
        bench.proxy.wait_for(&format!("{what}: Stale in cycle {cycle}"), fresh_is("Stale")).await;
        let during = bench.served().await;
        for ((p, s0, e0, b0), (_, s1, e1, b1)) in before.iter().zip(&during) {
            assert!(s0 == s1 && e0 == e1 && b0 == b1, "{what}: {p} changed in cycle {cycle}");
        }
        bench.gate.heal();
        bench.wait_up(true).await;
        bench
            .proxy
            .wait_for(&format!("{what}: Current in cycle {cycle}"), fresh_is("Current"))
            .await;
        assert_eq!(logs.count(Level::WARN, "faulty", WARN_FAILING), cycle, "{what}: warnings");
        assert_eq!(logs.count(Level::INFO, "faulty", INFO_RECOVERED), cycle, "{what}: recoveries");
    }
}

/// The 200 MB body against the real binary, alone in its process: its
/// peak RSS stays far below the body's size, the fetch fails as too large
/// on every poll, and one warning is logged for it.
#[test]
fn a_200_mb_body_leaves_the_proxy_process_small() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};

    actix_web::rt::System::new().block_on(async {
        let kind = Kind::V2Legacy;
        let routes = Routes::default();
        routes.replace(kind.routes(1));
        let site = start_site(routes).expect("site starts");
        let gate = Gate::start(site.addr).await;
        let mut child = Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
            .args(["--log-format", "json", "serve", "--listen", "127.0.0.1:0"])
            .args(["--downstream", &format!("faulty={}", gate.url())])
            .args(["--poll-interval", "100ms", "--max-document-bytes", &MAX_BYTES.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let pid = child.id();
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let stderr = child.stderr.take().expect("stderr");
        let sink = std::sync::Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().expect("log lines").push(line);
            }
        });
        let logged = || lines.lock().expect("log lines").clone();
        let mut addr = String::new();
        eventually("the binary listens", || {
            addr = logged()
                .iter()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find_map(|l| l["addr"].as_str().map(str::to_owned))
                .unwrap_or_default();
            !addr.is_empty()
        })
        .await;
        let base = format!("http://{addr}");
        let get = |path: &'static str| {
            let url = format!("{base}{path}");
            async move { crate::common::proxy::request("GET", &url, &[]).await }
        };
        let doc_path = "/openapi/v3/apis/widgets.example.com/v1beta1";
        let mut before = None;
        for _ in 0..500 {
            let r = get(doc_path).await;
            if r.status == StatusCode::OK {
                before = Some(r);
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let before = before.expect("the binary served the document before the fault");

        gate.fault(Fault::Huge { bytes: HUGE }, Scope::All);
        let series =
            "openapi_proxy_downstream_errors_total{downstream=\"faulty\",reason=\"too_large\"}";
        let mut too_large = 0.0;
        for _ in 0..1000 {
            let text = String::from_utf8(get("/metrics").await.body.to_vec()).expect("UTF-8");
            too_large = metric(&text, series).unwrap_or(0.0);
            if too_large >= 5.0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("child status");
        let peak_kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM");
        let during = get(doc_path).await;
        let warnings = logged()
            .iter()
            .filter(|l| l.contains("poll failed; keeping last good documents"))
            .count();
        let sent = gate.huge_sent();
        child.kill().expect("the binary stops");
        let _ = child.wait();

        assert!(peak_kib < 64 * 1024, "peak RSS {peak_kib} KiB for a 200 MB body");
        assert!(too_large >= 5.0, "only {too_large} polls failed as too large");
        assert!(sent < HUGE / 4, "the proxy read {sent} bytes of a 200 MB body");
        assert_eq!(during.status, StatusCode::OK);
        assert_eq!(during.header("etag"), before.header("etag"));
        assert!(during.body == before.body, "the document changed");
        assert_eq!(warnings, 1, "{:#?}", logged());
    });
}

/// A legacy downstream serving two groups, one of whose group-version
/// lists fails: only that group-version turns Stale (keeping its resources
/// and its legacy list), the other stays Current, and the failure is
/// counted and logged once all the same.
#[test]
fn one_failing_legacy_group_version_is_the_only_stale_one() {
    actix_web::rt::System::new().block_on(async {
        let (logs, _guard) = capture();
        let what = "503 on one legacy group-version";
        let bench = Bench::start(what.into(), Kind::V2Legacy).await;
        let mut apis: Value = serde_json::from_slice(WIDGETS_APIS).expect("fixture");
        let mut second = apis["groups"][0].clone();
        let text = serde_json::to_string(&second).expect("JSON").replace("widgets", "sprockets");
        second = serde_json::from_str(&text).expect("JSON");
        apis["groups"].as_array_mut().expect("groups").push(second);
        let list = String::from_utf8(WIDGETS_RESOURCES.to_vec())
            .expect("UTF-8")
            .replace("widgets", "sprockets");
        let set_routes = |rev: u32| {
            let mut routes = Kind::V2Legacy.routes(rev);
            routes.retain(|(p, _)| p != "/apis");
            routes.push(("/apis".into(), Route::json(serde_json::to_vec(&apis).expect("JSON"))));
            routes.push(("/apis/sprockets.example.com/v1beta1".into(), Route::json(list.clone())));
            bench.site.routes.replace(routes);
        };
        set_routes(1);
        let fresh = |s: &openapi_proxy::Snapshot, g: &str| {
            let list: Value =
                serde_json::from_slice(&s.discovery.apis_v2.plain().expect("inflates"))
                    .expect("JSON");
            freshness(&list, g, "v1beta1")
        };
        bench
            .proxy
            .wait_for("sprockets listed", |s| {
                fresh(s, "sprockets.example.com").as_deref() == Some("Current")
            })
            .await;
        let before = bench.proxy.get("/apis/widgets.example.com/v1beta1", &[]).await;
        assert_eq!(before.status, StatusCode::OK, "{what}");

        bench.gate.fault(
            Fault::Respond { status: 503, headers: Vec::new(), body: b"busy".to_vec() },
            Scope::Path("/apis/widgets.example.com/v1beta1"),
        );
        bench.wait_failed_polls(FAILED_POLLS).await;
        let apis = bench.apis().await;
        assert_eq!(
            freshness(&apis, "widgets.example.com", "v1beta1").as_deref(),
            Some("Stale"),
            "{what}\n{apis:#}"
        );
        assert_eq!(
            freshness(&apis, "sprockets.example.com", "v1beta1").as_deref(),
            Some("Current"),
            "{what}\n{apis:#}"
        );
        let kept =
            &version_entry(&apis, "widgets.example.com", "v1beta1").expect("listed")["resources"];
        assert!(kept.as_array().is_some_and(|r| !r.is_empty()), "{what}: resources lost\n{apis:#}");
        let during = bench.proxy.get("/apis/widgets.example.com/v1beta1", &[]).await;
        assert_eq!(during.status, StatusCode::OK, "{what}: legacy list no longer served");
        assert!(during.body == before.body, "{what}: legacy list changed");
        let text = bench.metrics().await;
        let series =
            "openapi_proxy_downstream_errors_total{downstream=\"faulty\",reason=\"status\"}";
        assert!(metric(&text, series).is_some_and(|n| n >= 1.0), "{what}\n{text}");
        assert_eq!(logs.count(Level::WARN, "faulty", WARN_FAILING), 1, "{what}");

        bench.gate.heal();
        set_routes(2);
        bench
            .proxy
            .wait_for(&format!("{what}: recovered"), |s| {
                let legacy = s
                    .discovery
                    .resources
                    .get("apis/widgets.example.com/v1beta1")
                    .map(|r| r.plain().expect("inflates"))
                    .unwrap_or_default();
                fresh(s, "widgets.example.com").as_deref() == Some("Current")
                    && contains(&legacy, b"rev2")
            })
            .await;
        bench.wait_up(true).await;
        assert_eq!(logs.count(Level::INFO, "faulty", INFO_RECOVERED), 1, "{what}");
    });
}

/// The document at `key` and the legacy list at `gv_path` as the snapshot
/// serves them (empty when absent).
fn served(s: &openapi_proxy::Snapshot, key: &str, gv_path: &str) -> (bytes::Bytes, bytes::Bytes) {
    let doc = s.openapi.get(key).map(|e| e.rendered.plain().expect("inflates")).unwrap_or_default();
    let legacy = s
        .discovery
        .resources
        .get(gv_path)
        .map(|r| r.plain().expect("inflates"))
        .unwrap_or_default();
    (doc, legacy)
}
