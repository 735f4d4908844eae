//! `/api`, `/apis`, `/apis/`, `/apis/<group>`, `/apis/<group>/<version>`,
//! `/api/<version>`.
//!
//! Wire behaviour: BEHAVIOR.md Part A items 7–9, B-4.1–4.4, B-5. `/api` and
//! `/apis` answer the aggregated list when `Accept` asks for it (v2, and
//! v2beta1 unless switched off), else the legacy document; `/apis/` and
//! the per-group paths are legacy only.

use std::sync::LazyLock;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;

use super::{AppState, NO_CACHE, body_response, joined};
use crate::negotiate::{self, DISCOVERY_NOT_ACCEPTABLE_MESSAGE, DiscoveryChoice, DiscoveryVersion};
use crate::rendered::Rendered;

/// The 404 `Status` of an unknown group or group-version.
const NOT_FOUND_STATUS: &str = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
\"message\":\"the server could not find the requested resource\",\"reason\":\"NotFound\",\"code\":404}\n";

fn vary_accept() -> (header::HeaderName, HeaderValue) {
    (header::VARY, HeaderValue::from_static("Accept"))
}

/// The 406 `Status` body apiserver writes (two-space indented, no trailing
/// newline; B-4.3), serialized once: handlers do not serialize.
static NOT_ACCEPTABLE_STATUS: LazyLock<Bytes> = LazyLock::new(|| {
    let status = crate::discovery::types::Status {
        kind: "Status",
        api_version: "v1",
        metadata: crate::discovery::types::Empty {},
        status: "Failure",
        message: DISCOVERY_NOT_ACCEPTABLE_MESSAGE,
        reason: "NotAcceptable",
        code: 406,
    };
    Bytes::from(serde_json::to_vec_pretty(&status).expect("a Status always serializes"))
});

fn not_acceptable() -> HttpResponse {
    HttpResponse::NotAcceptable()
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .insert_header(vary_accept())
        .body(NOT_ACCEPTABLE_STATUS.clone())
}

fn not_found() -> HttpResponse {
    HttpResponse::NotFound()
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .insert_header((header::CACHE_CONTROL, NO_CACHE))
        .body(NOT_FOUND_STATUS)
}

/// The aggregated form: `Cache-Control: public`, ETag compared exactly
/// (no weak form, no lists; B-4.4).
fn aggregated(req: &HttpRequest, rendered: &Rendered) -> HttpResponse {
    let inm = joined(req.headers(), header::IF_NONE_MATCH);
    let etag = rendered.etag_str();
    let not_modified = negotiate::discovery_etag_matches(inm.as_deref(), etag);
    body_response(
        req,
        rendered,
        not_modified,
        &[vary_accept(), (header::CACHE_CONTROL, HeaderValue::from_static("public"))],
    )
}

fn legacy(req: &HttpRequest, rendered: &Rendered) -> HttpResponse {
    let inm = joined(req.headers(), header::IF_NONE_MATCH);
    let etag = rendered.etag_str();
    let not_modified = negotiate::if_none_match_matches(inm.as_deref(), etag);
    body_response(req, rendered, not_modified, &[vary_accept(), (header::CACHE_CONTROL, NO_CACHE)])
}

/// `/api` and `/apis`.
fn root(req: &HttpRequest, state: &AppState, core: bool) -> HttpResponse {
    let accept = joined(req.headers(), header::ACCEPT);
    let snap = state.store.load();
    let d = &snap.discovery;
    match negotiate::negotiate_discovery(accept.as_deref(), state.serve_v2beta1) {
        DiscoveryChoice::Aggregated(v) => {
            let rendered = match (core, v) {
                (true, DiscoveryVersion::V2) => &d.api_v2,
                (true, DiscoveryVersion::V2beta1) => &d.api_v2beta1,
                (false, DiscoveryVersion::V2) => &d.apis_v2,
                (false, DiscoveryVersion::V2beta1) => &d.apis_v2beta1,
            };
            aggregated(req, rendered)
        }
        DiscoveryChoice::Legacy => legacy(req, if core { &d.api_legacy } else { &d.apis_legacy }),
        DiscoveryChoice::NotAcceptable => not_acceptable(),
    }
}

/// Legacy-only paths: negotiate, then serve what `pick` finds.
fn legacy_only(
    req: &HttpRequest,
    state: &AppState,
    pick: impl FnOnce(&crate::snapshot::Snapshot) -> Option<&Rendered>,
) -> HttpResponse {
    let accept = joined(req.headers(), header::ACCEPT);
    if negotiate::negotiate_legacy_discovery(accept.as_deref()) == DiscoveryChoice::NotAcceptable {
        return not_acceptable();
    }
    let snap = state.store.load();
    match pick(&snap) {
        Some(r) => legacy(req, r),
        None => not_found(),
    }
}

pub(super) async fn api(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let resp = root(&req, &state, true);
    state.metrics.request("discovery_api", resp.status().as_u16());
    resp
}

pub(super) async fn apis(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let resp = root(&req, &state, false);
    state.metrics.request("discovery_apis", resp.status().as_u16());
    resp
}

/// `/apis/` with a trailing slash: always legacy (B-4.1).
pub(super) async fn apis_slash(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let resp = legacy_only(&req, &state, |s| Some(&s.discovery.apis_legacy));
    state.metrics.request("discovery_apis", resp.status().as_u16());
    resp
}

pub(super) async fn group(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let resp = legacy_only(&req, &state, |s| s.discovery.groups.get(path.as_str()));
    state.metrics.request("discovery_group", resp.status().as_u16());
    resp
}

pub(super) async fn group_version(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let (group, version) = path.into_inner();
    resource_list(&req, &state, &format!("apis/{group}/{version}"))
}

pub(super) async fn core_version(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    resource_list(&req, &state, &format!("api/{}", path.as_str()))
}

/// `/apis/<g>/<v>` and `/api/<v>`: the `APIResourceList` at `key`.
fn resource_list(req: &HttpRequest, state: &AppState, key: &str) -> HttpResponse {
    let resp = legacy_only(req, state, |s| s.discovery.resources.get(key).map(|r| &**r));
    state.metrics.request("discovery_group_version", resp.status().as_u16());
    resp
}
