//! Starting the proxy under test — through the same `wiring::start` that
//! `serve` uses — in front of fake downstreams, and talking to it.

use std::path::PathBuf;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::http::header::HeaderMap;
use bytes::Bytes;
use openapi_proxy::Running;
use openapi_proxy::demo::{Route, Routes, Site, start_site};
use openapi_proxy::{Config, DownstreamConfig, TlsConfig};

/// Poll interval used by tests: short, so changes show quickly.
pub const POLL: Duration = Duration::from_millis(100);

/// A downstream entry for a test configuration.
pub fn downstream(name: &str, url: &str, priority: i64) -> DownstreamConfig {
    DownstreamConfig {
        name: name.into(),
        url: url.into(),
        priority,
        tls: TlsConfig::default(),
        token: None,
        timeout: Duration::from_secs(2),
        poll_interval: POLL,
        memory_share: None,
    }
}

/// The configuration tests start from: a free loopback port, the
/// defaults, `downstreams`.
pub fn config(downstreams: Vec<DownstreamConfig>) -> Config {
    Config {
        listen: "127.0.0.1:0".parse().expect("address"),
        max_document_bytes: openapi_proxy::DEFAULT_MAX_DOCUMENT_BYTES,
        memory_budget_bytes: openapi_proxy::DEFAULT_MEMORY_BUDGET_BYTES,
        discovery_v2beta1: true,
        direct_writes: true,
        front_door: false,
        metadata_authentication: openapi_proxy::MetadataAuthentication::None,
        downstreams,
        // One delivery is enough: tests with a downstream that never
        // delivers wait for the others, not for a grace period. The tests
        // of readiness itself set their own.
        readiness_grace_period: Duration::ZERO,
        serving: openapi_proxy::Serving::default(),
        memory_budget_source: openapi_proxy::BudgetSource::Assumed,
    }
}

/// A proxy on a free loopback port.
pub struct TestProxy {
    /// The running proxy.
    pub running: Running,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl TestProxy {
    /// Starts a proxy in front of `downstreams` on the current actix system.
    pub fn start(downstreams: Vec<DownstreamConfig>) -> Self {
        Self::start_config(&config(downstreams))
    }

    /// Starts a proxy refusing documents larger than `max_document_bytes`.
    pub fn start_with(downstreams: Vec<DownstreamConfig>, max_document_bytes: usize) -> Self {
        Self::start_config(&Config { max_document_bytes, ..config(downstreams) })
    }

    /// Starts a proxy with `config` (its `listen` should be port 0) on the
    /// current actix system; the base URL is `https://` when it serves TLS.
    pub fn start_config(config: &Config) -> Self {
        let running = openapi_proxy::start(config).expect("proxy starts");
        let scheme = if config.serving.tls.is_some() { "https" } else { "http" };
        let base = format!("{scheme}://{}", running.addr);
        Self { running, base }
    }

    /// GET `path` with `headers`.
    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Response {
        request("GET", &format!("{}{path}", self.base), headers).await
    }

    /// The current snapshot generation.
    pub fn generation(&self) -> u64 {
        self.running.state.store.load().generation
    }

    /// Waits until `downstream` has been polled once (its `up` gauge
    /// exists), whatever came of it.
    pub async fn wait_polled(&self, downstream: &str) {
        let up = format!("openapi_proxy_downstream_up{{downstream=\"{downstream}\"}}");
        eventually(&format!("{downstream} polled once"), || {
            self.running.state.metrics.render().contains(&up)
        })
        .await;
    }

    /// Waits until the snapshot is ready and `pred` holds for it.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&openapi_proxy::Snapshot) -> bool) {
        eventually(what, || {
            let s = self.running.state.store.load();
            s.ready && pred(&s)
        })
        .await;
    }
}

/// A response, read whole.
pub struct Response {
    /// Status.
    pub status: StatusCode,
    /// Headers.
    pub headers: HeaderMap,
    /// Body.
    pub body: Bytes,
}

impl Response {
    /// A header as text (`""` when absent).
    pub fn header(&self, name: &str) -> String {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
    }

    /// Every value of a header.
    pub fn header_all(&self, name: &str) -> Vec<String> {
        self.headers.get_all(name).filter_map(|v| v.to_str().ok()).map(str::to_owned).collect()
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {:?}", self.body))
    }
}

/// One request with a plain client (no redirects followed, no
/// compression negotiated unless a header asks for it).
pub async fn request(method: &str, url: &str, headers: &[(&str, &str)]) -> Response {
    let client =
        awc::Client::builder().disable_redirects().timeout(Duration::from_secs(10)).finish();
    let method = actix_web::http::Method::from_bytes(method.as_bytes()).expect("method");
    let mut req = client.request(method, url);
    for (k, v) in headers {
        req = req.insert_header((*k, *v));
    }
    let mut resp = req.send().await.unwrap_or_else(|e| panic!("{url}: {e}"));
    let body = resp.body().limit(256 * 1024 * 1024).await.expect("body");
    Response { status: resp.status(), headers: resp.headers().clone(), body }
}

/// Waits (up to 60 s, checking every 20 ms) for `cond`.
/// The deadline is generous: it only bounds a failing test, and a debug
/// build converting the whole 1.27 document on a loaded 2-core machine has
/// taken more than 15 s.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The document the widgets sample publishes, converted from Swagger 2.0.
pub const WIDGETS: &str = "apis/widgets.example.com/v1beta1";

/// Routes publishing only the widgets Swagger 2.0 sample (four documents
/// once converted).
pub fn widgets_routes() -> Routes {
    let routes = Routes::default();
    routes.set(
        "/openapi/v2",
        Route::json(std::fs::read(testdata("sample/widgets.v2.json")).expect("fixture")),
    );
    routes
}

/// A downstream publishing only the widgets Swagger 2.0 sample.
pub fn widgets_site() -> Site {
    start_site(widgets_routes()).expect("site starts")
}

/// A fake downstream with its routes.
pub fn site() -> Site {
    start_site(Routes::default()).expect("site starts")
}

/// The project's testdata directory.
pub fn testdata(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata").join(rel)
}
