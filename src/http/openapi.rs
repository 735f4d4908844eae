//! `/openapi/v3`, `/openapi/v3/<key>`, `/openapi/v2` and `/version`.
//!
//! Wire behaviour: BEHAVIOR.md Part A items 1–3, 6 and 10; B-1, B-2.1,
//! B-2.4, B-9.1.

use std::borrow::Cow;
use std::cell::RefCell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix_web::http::Method;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use percent_encoding::percent_decode_str;

use super::{AppState, NO_CACHE, body_response, joined};
use crate::negotiate::{self, OpenApiChoice, OpenApiV2Choice};

/// How long a document fetched by its current hash may be cached: the URL
/// names the content, so it never changes (KEP-2896).
const IMMUTABLE_FOR: Duration = Duration::from_secs(365 * 24 * 60 * 60);

fn vary_accept() -> (header::HeaderName, HeaderValue) {
    (header::VARY, HeaderValue::from_static("Accept"))
}

thread_local! {
    /// The `Expires` value for the current second, per worker thread:
    /// formatting an HTTP date costs more than the rest of a 304.
    static EXPIRES: RefCell<(u64, Option<HeaderValue>)> = const { RefCell::new((u64::MAX, None)) };
}

/// `Expires` for a response served now: a year ahead, to the second.
fn expires() -> Option<HeaderValue> {
    let now = SystemTime::now();
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    EXPIRES.with_borrow_mut(|(cached_second, value)| {
        if *cached_second != second {
            let date = httpdate::fmt_http_date(now + IMMUTABLE_FOR);
            *value = HeaderValue::from_str(&date).ok();
            *cached_second = second;
        }
        value.clone()
    })
}

fn if_none_match(req: &HttpRequest) -> Option<Cow<'_, str>> {
    joined(req.headers(), header::IF_NONE_MATCH)
}

/// `GET /openapi/v3`: the root index. Accept is not consulted (a root is
/// always JSON, and kube never answers 406 here).
pub(super) async fn root(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let snap = state.store.load();
    let rendered = &snap.openapi_root;
    let etag = rendered.etag_str();
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
///
/// This is the scope's default service, so it sees every method and every
/// path under `/openapi/v3/`; the key is the rest of the path,
/// percent-decoded as Go's `URL.Path` is (kube-apiserver serves
/// `apis%2Fapps%2Fv1` as `apis/apps/v1`).
pub(super) async fn document(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if !matches!(*req.method(), Method::GET | Method::HEAD) {
        state.metrics.request("method_not_allowed", 405);
        return HttpResponse::MethodNotAllowed()
            .insert_header((header::ALLOW, "GET, HEAD"))
            .finish();
    }
    let key = document_key(req.path()).unwrap_or_default();
    let resp = document_response(&req, &key, &state);
    state.metrics.request("openapi_v3_document", resp.status().as_u16());
    resp
}

/// The document key of a request path under `/openapi/v3/`, decoded; `None`
/// for the scope's own path with a trailing slash, or a key that is not
/// UTF-8 once decoded (no document has such a key).
fn document_key(path: &str) -> Option<Cow<'_, str>> {
    let raw = path.strip_prefix("/openapi/v3/").filter(|k| !k.is_empty())?;
    if !raw.contains('%') {
        return Some(Cow::Borrowed(raw));
    }
    percent_decode_str(raw).decode_utf8().ok().filter(|k| !k.is_empty())
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
            if let Some(v) = expires() {
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
    let etag = rendered.etag_str();
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
                    let etag = r.etag_str();
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
            let etag = r.etag_str();
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

    #[test]
    fn the_key_is_the_rest_of_the_path_decoded_like_go() {
        assert_eq!(document_key("/openapi/v3/apis/apps/v1").as_deref(), Some("apis/apps/v1"));
        assert_eq!(document_key("/openapi/v3/apis%2Fapps%2Fv1").as_deref(), Some("apis/apps/v1"));
        assert_eq!(document_key("/openapi/v3/api/v%31").as_deref(), Some("api/v1"));
        assert_eq!(document_key("/openapi/v3/"), None);
        assert_eq!(document_key("/openapi/v3/%FF"), None);
        assert_eq!(document_key("/openapi/v3/%"), Some(Cow::Borrowed("%")));
    }

    #[test]
    fn expires_is_a_year_ahead() {
        let value = expires().expect("an HTTP date is a valid header value");
        let date = httpdate::parse_http_date(value.to_str().expect("ASCII")).expect("HTTP date");
        let ahead = date.duration_since(SystemTime::now()).expect("in the future");
        assert!(ahead > IMMUTABLE_FOR - Duration::from_secs(5) && ahead <= IMMUTABLE_FOR);
    }
}
