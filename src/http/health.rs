//! `/healthz`, `/livez`, `/readyz` and `/metrics`.
//!
//! Ready means data ([`crate::publish::readiness`]): every downstream has
//! delivered documents, or one has and the rest had the grace period. A
//! downstream that fails after that is represented by what it serves (last
//! good data, Stale in discovery), not by the proxy being unready — one
//! broken aggregated server must not take every replica out of its
//! Service.
//!
//! As kube-apiserver does, `?verbose` lists one `[+]`/`[-]` line per
//! check; a failing `/readyz` lists them whatever the query, so the probe's
//! event in `kubectl describe pod` says what is missing.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};

use super::reply::{Reply, Request};
use super::{AppState, NO_CACHE};

/// `/healthz` and `/livez`: the process answers.
pub(super) fn healthz(req: &Request<'_>) -> Reply {
    let body = if verbose(req.query) {
        let endpoint = req.path.trim_start_matches('/');
        format!("[+]ping ok\n{endpoint} check passed\n")
    } else {
        "ok".to_owned()
    };
    text(StatusCode::OK, body)
}

/// `/readyz`: data is here ([`crate::publish::readiness`]).
pub(super) fn readyz(req: &Request<'_>, state: &AppState) -> Reply {
    let snapshot = state.store.load();
    if snapshot.ready && !verbose(req.query) {
        return text(StatusCode::OK, "ok".to_owned());
    }
    let status = if snapshot.ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    text(status, snapshot.readiness.verbose("readyz"))
}

/// Whether the query asks for the check list: `verbose` present, with any
/// value or none, as kube-apiserver reads it.
fn verbose(query: &str) -> bool {
    query.split('&').any(|pair| pair.split('=').next() == Some("verbose"))
}

fn text(status: StatusCode, body: String) -> Reply {
    Reply::new(status)
        .header(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"))
        .header(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"))
        .header(header::CACHE_CONTROL, NO_CACHE)
        .body(body)
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
