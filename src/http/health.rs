//! `/healthz`, `/livez`, `/readyz` and `/metrics`.
//!
//! Ready means every downstream has been polled once (docs/wire.md#b-7-2):
//! a downstream that failed then is represented by what it serves (nothing,
//! or last good data later), not by the proxy being unready — one broken
//! aggregated server must not take every replica out of its Service.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};

use super::reply::Reply;
use super::{AppState, NO_CACHE};

/// `/healthz` and `/livez`: the process answers.
pub(super) fn healthz() -> Reply {
    Reply::new(StatusCode::OK).header(header::CACHE_CONTROL, NO_CACHE).body("ok")
}

/// `/readyz`: every downstream has been tried once.
pub(super) fn readyz(state: &AppState) -> Reply {
    if state.store.load().ready {
        Reply::new(StatusCode::OK).header(header::CACHE_CONTROL, NO_CACHE).body("ok")
    } else {
        Reply::new(StatusCode::SERVICE_UNAVAILABLE)
            .header(header::CACHE_CONTROL, NO_CACHE)
            .body("not ready: waiting for the first poll of every downstream")
    }
}

/// `/metrics`: the Prometheus text exposition, rendered on request.
pub(super) fn metrics(state: &AppState) -> Reply {
    Reply::new(StatusCode::OK)
        .header(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )
        .header(header::CACHE_CONTROL, NO_CACHE)
        .body(state.metrics.render())
}
