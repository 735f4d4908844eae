//! Built-in downstream servers: what `openapi-proxy demo` runs beside the
//! proxy, and what the integration tests script as fake downstreams.
//!
//! A [`Site`] is a real HTTP server on a loopback port serving a table of
//! [`Route`]s that can be changed while it runs (a downstream publishing a
//! new spec, failing, recovering). It answers conditional GETs with 304 and
//! records the requests it gets, so tests can check that the proxy sends
//! `If-None-Match` and never forwards client credentials.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use actix_web::dev::ServerHandle;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderMap};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use bytes::Bytes;

use crate::body::digest::{quoted, sha512_hex};
use crate::openapi::pipeline;
use crate::wire::key::DocumentKey;

/// One canned response.
#[derive(Debug, Clone)]
pub struct Route {
    /// Status code.
    pub status: StatusCode,
    /// Content-Type, when there is a body.
    pub content_type: &'static str,
    /// Body.
    pub body: Bytes,
    /// ETag sent with a 200 and compared with `If-None-Match`.
    pub etag: Option<String>,
    /// Wait this long before answering (a slow or hanging downstream).
    pub delay: Option<std::time::Duration>,
}

impl Route {
    /// A 200 JSON body with a content-hash ETag.
    #[must_use]
    pub fn json(body: impl Into<Bytes>) -> Self {
        let body = body.into();
        let etag = Some(quoted(&sha512_hex(&body)));
        Self { status: StatusCode::OK, content_type: "application/json", body, etag, delay: None }
    }

    /// An empty response with `status`.
    #[must_use]
    pub fn status(status: StatusCode) -> Self {
        Self { status, content_type: "text/plain", body: Bytes::new(), etag: None, delay: None }
    }

    /// The same route, answered after `delay`.
    #[must_use]
    pub fn delayed(mut self, delay: std::time::Duration) -> Self {
        self.delay = Some(delay);
        self
    }
}

/// What a site saw of one request.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    /// The path and query.
    pub uri: String,
    /// The request headers.
    pub headers: HeaderMap,
}

/// The routes of a site, shared with whoever changes them.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    table: Arc<RwLock<BTreeMap<String, Route>>>,
    seen: Arc<Mutex<Vec<SeenRequest>>>,
    /// The only `Authorization` value answered; others get 401.
    authorization: Arc<RwLock<Option<String>>>,
    /// Requests being answered now, and the most there ever were at once.
    in_flight: Arc<(AtomicUsize, AtomicUsize)>,
}

/// One request being answered, counted in [`Routes::most_in_flight`]
/// until it is dropped.
struct InFlight(Arc<(AtomicUsize, AtomicUsize)>);

impl InFlight {
    fn start(counts: &Arc<(AtomicUsize, AtomicUsize)>) -> Self {
        let now = counts.0.fetch_add(1, Ordering::SeqCst) + 1;
        counts.1.fetch_max(now, Ordering::SeqCst);
        Self(Arc::clone(counts))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How many requests a site remembers.
const SEEN_MAX: usize = 10_000;

impl Routes {
    /// Serves `route` at `path` (the query string is not part of the match).
    pub fn set(&self, path: &str, route: Route) {
        self.table
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(path.to_owned(), route);
    }

    /// Stops serving `path` (it answers 404).
    pub fn remove(&self, path: &str) {
        self.table.write().unwrap_or_else(std::sync::PoisonError::into_inner).remove(path);
    }

    /// Replaces every route.
    pub fn replace(&self, routes: impl IntoIterator<Item = (String, Route)>) {
        let mut t = self.table.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        t.clear();
        t.extend(routes);
    }

    /// Answers 401 to every request whose `Authorization` header is not
    /// `value` (a downstream requiring a bearer token); `None` accepts any.
    pub fn require_authorization(&self, value: Option<&str>) {
        *self.authorization.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
            value.map(str::to_owned);
    }

    fn authorized(&self, req: &HttpRequest) -> bool {
        let required = self.authorization.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        required.as_deref().is_none_or(|r| {
            req.headers().get(header::AUTHORIZATION).is_some_and(|v| v.as_bytes() == r.as_bytes())
        })
    }

    /// The most requests the site was answering at once (a test of a
    /// client's concurrency, with [`Route::delayed`] routes).
    #[must_use]
    pub fn most_in_flight(&self) -> usize {
        self.in_flight.1.load(Ordering::SeqCst)
    }

    /// The requests seen so far (the most recent ten thousand).
    #[must_use]
    pub fn seen(&self) -> Vec<SeenRequest> {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    fn lookup(&self, path: &str) -> Option<Route> {
        self.table.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(path).cloned()
    }

    fn record(&self, req: &HttpRequest) {
        let mut seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.len() >= SEEN_MAX {
            seen.remove(0);
        }
        seen.push(SeenRequest { uri: req.uri().to_string(), headers: req.headers().clone() });
    }
}

/// A running site.
#[derive(Debug)]
pub struct Site {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its routes.
    pub routes: Routes,
    /// Stops it.
    pub handle: ServerHandle,
}

impl Site {
    /// Its base URL.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

async fn answer(req: HttpRequest, routes: web::Data<Routes>) -> HttpResponse {
    routes.record(&req);
    let _in_flight = InFlight::start(&routes.in_flight);
    if !routes.authorized(&req) {
        return HttpResponse::Unauthorized().finish();
    }
    let Some(route) = routes.lookup(req.path()) else {
        return HttpResponse::NotFound().finish();
    };
    if let Some(delay) = route.delay {
        tokio::time::sleep(delay).await;
    }
    if let Some(etag) = &route.etag {
        let inm = req.headers().get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok());
        if route.status == StatusCode::OK && inm == Some(etag.as_str()) {
            return HttpResponse::NotModified()
                .insert_header((header::ETAG, etag.as_str()))
                .finish();
        }
    }
    let mut resp = HttpResponse::build(route.status);
    if let Some(etag) = &route.etag {
        resp.insert_header((header::ETAG, etag.as_str()));
    }
    if route.body.is_empty() {
        return resp.finish();
    }
    resp.insert_header((header::CONTENT_TYPE, route.content_type)).body(route.body)
}

/// Starts a site on `127.0.0.1:0` serving `routes`, on the current actix
/// system.
///
/// # Errors
/// When no loopback port can be bound.
pub fn start_site(routes: Routes) -> std::io::Result<Site> {
    let data = web::Data::new(routes.clone());
    let server =
        HttpServer::new(move || App::new().app_data(data.clone()).default_service(web::to(answer)))
            .workers(1)
            .disable_signals()
            .bind(("127.0.0.1", 0))?;
    let addr =
        server.addrs().first().copied().ok_or_else(|| std::io::Error::other("no address bound"))?;
    let server = server.run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    Ok(Site { addr, routes, handle })
}

/// The routes of a server publishing `documents` as OpenAPI v3: the root
/// index at `/openapi/v3` (with `?hash=` URLs) and each document at
/// `/openapi/v3/<key>`.
#[must_use]
pub fn v3_routes(documents: &BTreeMap<DocumentKey, Bytes>) -> Vec<(String, Route)> {
    let mut paths = serde_json::Map::new();
    let mut routes = Vec::new();
    for (key, body) in documents {
        let url = format!("/openapi/v3/{key}?hash={}", sha512_hex(body));
        let mut entry = serde_json::Map::new();
        entry.insert("serverRelativeURL".into(), serde_json::Value::String(url));
        paths.insert(key.to_string(), serde_json::Value::Object(entry));
        routes.push((format!("/openapi/v3/{key}"), Route::json(body.clone())));
    }
    let mut root = serde_json::Map::new();
    root.insert("paths".into(), serde_json::Value::Object(paths));
    let root = serde_json::to_vec(&root).expect("a map of strings always serializes");
    routes.push(("/openapi/v3".into(), Route::json(root)));
    routes
}

/// The per-key OpenAPI 3.0 documents of a Swagger 2.0 document shipped
/// with the binary, made as the proxy makes them for a v2-only downstream.
///
/// # Errors
/// When the document does not convert (a bug in a shipped fixture).
pub fn openapi_v3_documents(
    v2: &[u8],
) -> Result<BTreeMap<DocumentKey, Bytes>, Box<dyn std::error::Error>> {
    let converted =
        pipeline::swagger_to_openapi(v2, None, pipeline::Budget::UNLIMITED, Bytes::from)?;
    Ok(converted.documents.into_iter().map(|(k, v)| (k, Bytes::clone(&v))).collect())
}

/// A `/version` body like kube-apiserver's.
#[must_use]
pub fn version_body(minor: u32) -> Bytes {
    Bytes::from(format!(
        "{{\"major\":\"1\",\"minor\":\"{minor}\",\"gitVersion\":\"v1.{minor}.0\",\"gitCommit\":\"openapi-proxy-demo\",\
         \"gitTreeState\":\"clean\",\"buildDate\":\"2026-01-01T00:00:00Z\",\"goVersion\":\"go1.23\",\
         \"compiler\":\"gc\",\"platform\":\"linux/amd64\"}}"
    ))
}

/// The demo's v3-capable downstream content: gadgets.example.com/v1.
pub const GADGETS_V2: &[u8] = include_bytes!("../../testdata/demo/gadgets.v2.json");
/// The demo's v2-only downstream content: widgets.example.com/v1beta1,
/// with IntOrString, Quantity and described references to convert.
pub const WIDGETS_V2: &[u8] = include_bytes!("../../testdata/sample/widgets.v2.json");

/// gadgets' aggregated discovery.
pub const GADGETS_DISCOVERY: &[u8] = include_bytes!("../../testdata/demo/gadgets.discovery.json");
/// widgets' legacy `/apis`.
pub const WIDGETS_APIS: &[u8] = include_bytes!("../../testdata/demo/widgets.apis.json");
/// widgets' legacy `/apis/widgets.example.com/v1beta1`.
pub const WIDGETS_RESOURCES: &[u8] =
    include_bytes!("../../testdata/demo/widgets.v1beta1.discovery.json");

/// The two built-in downstreams of `openapi-proxy demo`, started.
#[derive(Debug)]
pub struct DemoSites {
    /// Publishes OpenAPI v3 (`gadgets.example.com/v1`).
    pub gadgets: Site,
    /// Publishes only Swagger 2.0 (`widgets.example.com/v1beta1`).
    pub widgets: Site,
}

/// Starts the demo's downstream servers.
///
/// # Errors
/// When a port cannot be bound or a shipped fixture does not convert.
pub fn start_demo_sites() -> Result<DemoSites, Box<dyn std::error::Error>> {
    let gadgets = Routes::default();
    gadgets.replace(v3_routes(&openapi_v3_documents(GADGETS_V2)?));
    gadgets.set("/openapi/v2", Route::json(Bytes::from_static(GADGETS_V2)));
    gadgets.set("/version", Route::json(version_body(32)));
    let mut aggregated = Route::json(Bytes::from_static(GADGETS_DISCOVERY));
    aggregated.content_type = crate::wire::media::DISCOVERY_V2_CONTENT_TYPE;
    gadgets.set("/apis", aggregated);
    let widgets = Routes::default();
    widgets.set("/openapi/v2", Route::json(Bytes::from_static(WIDGETS_V2)));
    widgets.set("/apis", Route::json(Bytes::from_static(WIDGETS_APIS)));
    widgets.set(
        "/apis/widgets.example.com/v1beta1",
        Route::json(Bytes::from_static(WIDGETS_RESOURCES)),
    );
    widgets.set("/version", Route::json(version_body(31)));
    Ok(DemoSites { gadgets: start_site(gadgets)?, widgets: start_site(widgets)? })
}
