//! `/openapi/v3`, `/openapi/v3/<key>`, `/openapi/v2` and `/version`.
//!
//! Wire behaviour: BEHAVIOR.md Part A items 1–3, 6 and 10; B-1, B-2.1,
//! B-2.4, B-9.1.

use std::time::{Duration, SystemTime};

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};

use super::{AppState, NO_CACHE, body_response, joined};
use crate::negotiate::{self, OpenApiChoice, OpenApiV2Choice};

/// How long a document fetched by its current hash may be cached: the URL
/// names the content, so it never changes (KEP-2896).
const IMMUTABLE_FOR: Duration = Duration::from_secs(365 * 24 * 60 * 60);

fn vary_accept() -> (header::HeaderName, HeaderValue) {
    (header::VARY, HeaderValue::from_static("Accept"))
}

fn if_none_match(req: &HttpRequest) -> Option<String> {
    joined(req.headers(), header::IF_NONE_MATCH)
}

/// `GET /openapi/v3`: the root index. Accept is not consulted (a root is
/// always JSON, and kube never answers 406 here).
pub(super) async fn root(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let snap = state.store.load();
    let rendered = &snap.openapi_root;
    let etag = rendered.etag.to_str().unwrap_or_default();
    let not_modified = negotiate::if_none_match_matches(if_none_match(&req).as_deref(), etag);
    let resp = body_response(&req, rendered, not_modified, &[(header::CACHE_CONTROL, NO_CACHE)]);
    state.metrics.request("openapi_v3_root", resp.status().as_u16());
    resp
}

/// The first `hash` query parameter; an empty value counts as absent
/// (BEHAVIOR.md B-2.1).
fn hash_param(query: &str) -> Option<&str> {
    query.split('&').find_map(|pair| pair.strip_prefix("hash=")).filter(|h| !h.is_empty())
}

/// `GET /openapi/v3/<key>`: one document. Negotiation comes first (an
/// unacceptable Accept is 406 even for an unknown key), then the lookup
/// (unknown → 404), then `?hash=` (current → cacheable for a year; stale →
/// 301 to the current URL), then `If-None-Match`.
pub(super) async fn document(
    req: HttpRequest,
    key: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let resp = document_response(&req, &key, &state);
    state.metrics.request("openapi_v3_document", resp.status().as_u16());
    resp
}

fn document_response(req: &HttpRequest, key: &str, state: &AppState) -> HttpResponse {
    let accept = joined(req.headers(), header::ACCEPT);
    if negotiate::negotiate_openapi(accept.as_deref()) == OpenApiChoice::NotAcceptable {
        return HttpResponse::NotAcceptable().insert_header(vary_accept()).finish();
    }
    let snap = state.store.load();
    let Some(entry) = snap.openapi.get(key) else {
        return HttpResponse::NotFound().insert_header(vary_accept()).finish();
    };
    let rendered = &entry.rendered;
    let mut extra = vec![vary_accept()];
    match hash_param(req.query_string()) {
        Some(hash) if hash == rendered.hash => {
            extra.push((header::CACHE_CONTROL, HeaderValue::from_static("public, immutable")));
            let expires = httpdate::fmt_http_date(SystemTime::now() + IMMUTABLE_FOR);
            if let Ok(v) = HeaderValue::from_str(&expires) {
                extra.push((header::EXPIRES, v));
            }
        }
        Some(_) => {
            return HttpResponse::MovedPermanently()
                .insert_header((header::LOCATION, entry.location.clone()))
                .insert_header((header::CONTENT_TYPE, rendered.content_type.clone()))
                .insert_header((header::ETAG, rendered.etag.clone()))
                .insert_header(vary_accept())
                .finish();
        }
        None => extra.push((header::CACHE_CONTROL, NO_CACHE)),
    }
    let etag = rendered.etag.to_str().unwrap_or_default();
    let not_modified = negotiate::if_none_match_matches(if_none_match(req).as_deref(), etag);
    body_response(req, rendered, not_modified, &extra)
}

/// `GET /openapi/v2`: the highest-priority downstream's Swagger 2.0
/// document, JSON or protobuf as the client asks, bytes unchanged.
pub(super) async fn v2(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let snap = state.store.load();
    let resp = match &snap.openapi_v2 {
        None => HttpResponse::NotFound().finish(),
        Some(v2) => {
            let accept = joined(req.headers(), header::ACCEPT);
            let rendered =
                match negotiate::negotiate_openapi_v2(accept.as_deref(), v2.protobuf.is_some()) {
                    OpenApiV2Choice::Json => Some(&v2.json),
                    OpenApiV2Choice::Protobuf => v2.protobuf.as_ref(),
                    OpenApiV2Choice::NotAcceptable => None,
                };
            match rendered {
                None => HttpResponse::NotAcceptable().insert_header(vary_accept()).finish(),
                Some(r) => {
                    let etag = r.etag.to_str().unwrap_or_default();
                    let not_modified =
                        negotiate::if_none_match_matches(if_none_match(&req).as_deref(), etag);
                    body_response(
                        &req,
                        r,
                        not_modified,
                        &[vary_accept(), (header::CACHE_CONTROL, NO_CACHE)],
                    )
                }
            }
        }
    };
    state.metrics.request("openapi_v2", resp.status().as_u16());
    resp
}

/// `GET /version`: the highest-priority downstream's, unchanged (kubectl's
/// version dispatcher reads it).
pub(super) async fn version(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let snap = state.store.load();
    let resp = match &snap.version {
        None => HttpResponse::NotFound().finish(),
        Some(r) => {
            let etag = r.etag.to_str().unwrap_or_default();
            let not_modified =
                negotiate::if_none_match_matches(if_none_match(&req).as_deref(), etag);
            body_response(&req, r, not_modified, &[(header::CACHE_CONTROL, NO_CACHE)])
        }
    };
    state.metrics.request("version", resp.status().as_u16());
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_the_first_non_empty_hash_parameter() {
        assert_eq!(hash_param("hash=AB"), Some("AB"));
        assert_eq!(hash_param("x=1&hash=AB&hash=CD"), Some("AB"));
        assert_eq!(hash_param("hash="), None);
        assert_eq!(hash_param("hashes=AB"), None);
        assert_eq!(hash_param(""), None);
    }
}
