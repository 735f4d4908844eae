//! The HTTP surface: routes, and the one function that configures them,
//! used by `main`, the demo and the tests alike.
//!
//! Handlers do no work beyond a lookup: they load the current
//! [`Snapshot`](crate::publish::snapshot::Snapshot), compare a header or two and
//! write bytes prepared when the snapshot was built. They never contact a
//! downstream.

pub mod direct;
mod discovery;
mod health;
mod lockstep;
mod openapi;
mod reply;
mod router;
pub(crate) mod server;
mod slots;
pub mod stall;
mod status;
pub mod tls;

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};

use crate::body::rendered::Rendered;
use crate::metrics::Metrics;
use crate::publish::snapshot::Store;
use reply::{Reply, Request};

/// What the handlers share.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The published snapshot.
    pub store: Arc<Store>,
    /// Metrics, also served at `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Serve aggregated discovery `v2beta1` too (clients 1.26–1.29 ask only
    /// for it).
    pub serve_v2beta1: bool,
}

/// `Cache-Control` of responses that must be revalidated (docs/wire.md#b-9-1:
/// kube-apiserver's default for everything that sets nothing else).
pub(crate) const NO_CACHE: HeaderValue = HeaderValue::from_static("no-cache, private");

/// `Vary: Accept`, on everything whose form depends on `Accept`.
pub(crate) const ACCEPT: HeaderValue = HeaderValue::from_static("Accept");

/// Registers the app on `cfg`: one service for every path, which asks the
/// router (`http::router`) — the same one the direct transport asks — for
/// the answer.
pub fn configure(cfg: &mut web::ServiceConfig, state: AppState) {
    cfg.app_data(web::Data::new(state)).default_service(web::to(dispatch));
}

async fn dispatch(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    router::answer(&state, &Request::from_actix(&req)).into_actix()
}

/// A 200 (or 304) for a prepared body: ETag, the `extra` headers,
/// Content-Type, gzip when the client takes it (and `Vary:
/// Accept-Encoding` whenever a gzip rendition exists, so shared caches keep
/// both apart).
pub(crate) fn body_reply(
    req: &Request<'_>,
    rendered: &Rendered,
    not_modified: bool,
    extra: impl IntoIterator<Item = (HeaderName, HeaderValue)>,
) -> Reply {
    let status = if not_modified { StatusCode::NOT_MODIFIED } else { StatusCode::OK };
    let mut reply = Reply::new(status).header(header::ETAG, rendered.etag.clone());
    reply.headers.extend(extra);
    if rendered.gzip.is_some() {
        reply.headers.push((header::VARY, HeaderValue::from_static("Accept-Encoding")));
    }
    if not_modified {
        return reply;
    }
    reply.headers.push((header::CONTENT_TYPE, rendered.content_type.clone()));
    match &rendered.gzip {
        Some(gz) if req.gzip => {
            reply.headers.push((header::CONTENT_ENCODING, HeaderValue::from_static("gzip")));
            reply.body(gz.clone())
        }
        _ => reply.body(rendered.body.clone()),
    }
}
