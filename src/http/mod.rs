//! The HTTP surface: the router and its handlers, transport-neutral — a
//! [`Request`] in, a [`Reply`] out — so that both transports of the
//! connection stack (`serve`) ask the same router for every answer.
//!
//! Handlers do no work beyond a lookup: they load the current
//! [`Snapshot`](crate::publish::snapshot::Snapshot), compare a header or two and
//! write bytes prepared when the snapshot was built. They never contact a
//! downstream.

pub(crate) mod access;
pub(crate) mod connection;
mod discovery;
pub(crate) mod head;
mod health;
mod openapi;
pub(crate) mod reply;
pub(crate) mod router;
pub(crate) mod status;

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};

use crate::body::identity::{IdentityCache, IdentityError, PlainOrigin};
use crate::body::rendered::Rendered;
use crate::metrics::Metrics;
use crate::publish::protobuf::Renditions;
use crate::publish::snapshot::Store;
use access::Authenticator;
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
    /// Plain answers of documents kept gzipped only, bounded.
    pub identity: Arc<IdentityCache>,
    /// What the protobuf renditions of OpenAPI documents hold, bounded.
    pub protobuf: Arc<Renditions>,
    /// What making the merged `/openapi/v2` may hold at its peak.
    pub v2_merge_limit: u64,
    /// With `metadataAuthentication: delegated`, who decides whether a
    /// request's token may read the metadata; `None`: anyone may.
    pub(crate) authentication: Option<Arc<dyn Authenticator>>,
}

/// `Cache-Control` of responses that must be revalidated (docs/upstream.md#b-9-1:
/// kube-apiserver's default for everything that sets nothing else).
pub(crate) const NO_CACHE: HeaderValue = HeaderValue::from_static("no-cache, private");

/// `Vary: Accept`, on everything whose form depends on `Accept`.
pub(crate) const ACCEPT: HeaderValue = HeaderValue::from_static("Accept");

/// actix-web's handler for every path: the router's answer to `req`,
/// once its credentials are checked where the metadata needs them.
pub(crate) async fn dispatch(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let req = Request::from_actix(&req);
    let access = access::access(&state, &req).await;
    router::answer(&state, &req, access).await.into_actix()
}

/// A 200 (or 304) for a prepared body: ETag, the `extra` headers,
/// Content-Type, gzip when the client takes it (and `Vary:
/// Accept-Encoding` whenever a gzip rendition exists, so shared caches keep
/// both apart).
///
/// A document kept gzipped only is inflated for a client that does not
/// take gzip ([`IdentityCache`]); when that would pass its limit the
/// answer is a 429 with `Retry-After` instead. A body larger than that
/// limit could ever hold (the merged `/openapi/v2` at thousands of CRDs)
/// is inflated as it is written instead, a chunk at a time.
pub(crate) fn body_reply(
    req: &Request<'_>,
    state: &AppState,
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
        _ if rendered.inflates_while_written() => match rendered.to_inflate() {
            Some(plain) => {
                state.metrics.identity_body(PlainOrigin::Streamed);
                reply.inflated(plain)
            }
            None => status::identity_corrupt(),
        },
        _ => match state.identity.plain(rendered) {
            Ok((plain, source)) => {
                state.metrics.identity_body(source);
                reply.body(plain)
            }
            Err(e) => {
                state.metrics.identity_refused();
                match e {
                    IdentityError::Busy { .. } => {
                        tracing::debug!(error = %e, "uncompressed answer refused");
                        status::identity_busy()
                    }
                    IdentityError::Corrupt(_) => {
                        tracing::error!(error = %e, hash = %rendered.hash, "uncompressed answer failed");
                        status::identity_corrupt()
                    }
                }
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reply::Method;

    fn request(gzip: bool) -> Request<'static> {
        Request {
            method: Method::Get,
            path: "/openapi/v3/apis/a/v1",
            query: "",
            accept: None,
            if_none_match: None,
            gzip,
            authorization: None,
        }
    }

    fn state(limit: usize) -> AppState {
        AppState {
            store: Arc::new(Store::new()),
            metrics: Arc::new(Metrics::default()),
            serve_v2beta1: true,
            identity: Arc::new(IdentityCache::new(limit)),
            protobuf: Arc::new(Renditions::new(usize::MAX)),
            v2_merge_limit: u64::MAX,
            authentication: None,
        }
    }

    /// A document of `n` bytes that deflate shortens but cannot erase.
    fn document(seed: u64, n: usize) -> Rendered {
        let mut x = seed | 1;
        let text: String = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'a' + u8::try_from(x % 6).unwrap_or(0))
            })
            .collect();
        let r = Rendered::document(format!("\"{text}\""));
        assert!(r.held().is_none(), "kept gzipped only");
        r
    }

    fn header<'a>(reply: &'a Reply, name: &HeaderName) -> Option<&'a HeaderValue> {
        reply.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    #[test]
    fn a_gzip_only_document_is_inflated_for_a_client_without_gzip() {
        let state = state(1 << 20);
        let doc = document(1, 200_000);
        let gz = body_reply(&request(true), &state, &doc, false, []);
        assert_eq!(gz.body, doc.gzip.clone().unwrap());
        assert_eq!(header(&gz, &header::CONTENT_ENCODING).unwrap(), "gzip");
        let plain = body_reply(&request(false), &state, &doc, false, []);
        assert_eq!(plain.status, StatusCode::OK);
        assert_eq!(plain.body, doc.plain().unwrap());
        assert!(header(&plain, &header::CONTENT_ENCODING).is_none());
        assert_eq!(header(&plain, &header::ETAG), Some(&doc.etag), "one ETag for both");
        let metrics = state.metrics.render();
        assert!(metrics.contains("openapi_proxy_identity_bodies_total{result=\"inflated\"} 1"));
    }

    /// Slow clients that do not take gzip hold their inflated bodies: past
    /// the limit the next one is told to come back, and gzip clients are
    /// served all along.
    #[test]
    fn past_the_identity_limit_a_plain_answer_is_a_429() {
        let state = state(300_000);
        let (a, b) = (document(1, 200_000), document(2, 200_000));
        let held = body_reply(&request(false), &state, &a, false, []);
        assert_eq!(held.status, StatusCode::OK);
        let refused = body_reply(&request(false), &state, &b, false, []);
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(header(&refused, &header::RETRY_AFTER).unwrap(), "1");
        let status: serde_json::Value = serde_json::from_slice(&refused.body).unwrap();
        assert_eq!(status["reason"], "TooManyRequests");
        assert!(status["message"].as_str().unwrap().contains("Accept-Encoding: gzip"));
        assert_eq!(body_reply(&request(true), &state, &b, false, []).status, StatusCode::OK);
        drop(held);
        let again = body_reply(&request(false), &state, &b, false, []);
        assert_eq!(again.status, StatusCode::OK);
        assert_eq!(again.body, b.plain().unwrap());
        let metrics = state.metrics.render();
        assert!(metrics.contains("openapi_proxy_identity_bodies_total{result=\"refused\"} 1"));
    }
}
