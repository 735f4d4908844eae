//! `/healthz`, `/livez`, `/readyz` and `/metrics`.
//!
//! Ready means every downstream has been polled once (BEHAVIOR.md B-7.2):
//! a downstream that failed then is represented by what it serves (nothing,
//! or last good data later), not by the proxy being unready — one broken
//! aggregated server must not take every replica out of its Service.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, web};

use super::{AppState, NO_CACHE};

/// Liveness: the process answers.
pub(super) async fn healthz(state: web::Data<AppState>) -> HttpResponse {
    state.metrics.request("healthz", 200);
    HttpResponse::Ok().insert_header((header::CACHE_CONTROL, NO_CACHE)).body("ok")
}

/// Readiness: every downstream was tried once.
pub(super) async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let ready = state.store.load().ready;
    let resp = if ready {
        HttpResponse::Ok().insert_header((header::CACHE_CONTROL, NO_CACHE)).body("ok")
    } else {
        HttpResponse::ServiceUnavailable()
            .insert_header((header::CACHE_CONTROL, NO_CACHE))
            .body("not ready: waiting for the first poll of every downstream")
    };
    state.metrics.request("readyz", resp.status().as_u16());
    resp
}

/// Prometheus text exposition.
pub(super) async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    state.metrics.request("metrics", 200);
    HttpResponse::Ok()
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        ))
        .insert_header((header::CACHE_CONTROL, NO_CACHE))
        .body(state.metrics.render())
}
