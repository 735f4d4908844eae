//! The HTTP surface: routes, and the one function that configures them,
//! used by `main`, the demo and the tests alike.
//!
//! Handlers do no work beyond a lookup: they load the current
//! [`Snapshot`](crate::snapshot::Snapshot), compare a header or two and
//! write bytes prepared when the snapshot was built. They never contact a
//! downstream.

mod discovery;
mod health;
mod openapi;
pub mod stall;
pub mod tls;

use std::borrow::Cow;
use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, guard, web};

use crate::metrics::Metrics;
use crate::rendered::Rendered;
use crate::snapshot::Store;

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

/// `Cache-Control` of responses that must be revalidated (BEHAVIOR.md B-9.1:
/// kube-apiserver's default for everything that sets nothing else).
pub(crate) const NO_CACHE: HeaderValue = HeaderValue::from_static("no-cache, private");

/// Registers every route on `cfg`.
pub fn configure(cfg: &mut web::ServiceConfig, state: AppState) {
    cfg.app_data(web::Data::new(state))
        .service(
            // A scope, not a `{key:.+}` pattern: the key is the rest of the
            // path, and matching a regex on every document request cost a
            // quarter of the instructions of a 304.
            web::scope("/openapi/v3")
                .service(read_only("", openapi::root))
                .default_service(web::to(openapi::document)),
        )
        .service(read_only("/openapi/v2", openapi::v2))
        .service(read_only("/version", openapi::version))
        .service(read_only("/api", discovery::api))
        .service(read_only("/apis", discovery::apis))
        .service(read_only("/apis/", discovery::apis_slash))
        .service(read_only("/apis/{group}", discovery::group))
        .service(read_only("/apis/{group}/{version}", discovery::group_version))
        .service(read_only("/api/{version}", discovery::core_version))
        .service(read_only("/healthz", health::healthz))
        .service(read_only("/livez", health::healthz))
        .service(read_only("/readyz", health::readyz))
        .service(read_only("/metrics", health::metrics))
        .default_service(web::to(not_found));
}

/// A resource answering GET and HEAD with `handler`, and 405 to anything
/// else: nothing here changes state.
fn read_only<F, Args>(path: &str, handler: F) -> actix_web::Resource
where
    F: actix_web::Handler<Args>,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    web::resource(path)
        .route(web::route().guard(guard::Any(guard::Get()).or(guard::Head())).to(handler))
        .default_service(web::to(method_not_allowed))
}

async fn method_not_allowed(state: web::Data<AppState>) -> HttpResponse {
    state.metrics.request("method_not_allowed", 405);
    HttpResponse::MethodNotAllowed().insert_header((header::ALLOW, "GET, HEAD")).finish()
}

async fn not_found(state: web::Data<AppState>) -> HttpResponse {
    state.metrics.request("not_found", 404);
    HttpResponse::NotFound().finish()
}

/// All values of a header joined with `,`, as one list (several `Accept`
/// lines mean the same as one line with commas). `None` when absent or not
/// UTF-8 (Go passes any bytes on; a value that is not text matches nothing
/// here, so it is dropped). Borrowed in the usual case of one line, so the
/// hot paths (a 304 is a header lookup and a compare) allocate nothing for
/// it; `from_utf8` rather than `HeaderValue::to_str`, which checks byte by
/// byte and cost a tenth of a 304.
pub(crate) fn joined(headers: &HeaderMap, name: header::HeaderName) -> Option<Cow<'_, str>> {
    let mut values = headers.get_all(name).filter_map(|v| std::str::from_utf8(v.as_bytes()).ok());
    let first = values.next()?;
    match values.next() {
        None => Some(Cow::Borrowed(first)),
        Some(second) => {
            let mut all = format!("{first},{second}");
            for v in values {
                all.push(',');
                all.push_str(v);
            }
            Some(Cow::Owned(all))
        }
    }
}

/// Whether the client accepts gzip: a `gzip` (or `*`) coding in
/// `Accept-Encoding` whose q-value is not zero.
pub(crate) fn accepts_gzip(headers: &HeaderMap) -> bool {
    let Some(value) = joined(headers, header::ACCEPT_ENCODING) else { return false };
    value.split(',').any(|coding| {
        let mut parts = coding.split(';');
        let name = parts.next().unwrap_or("").trim();
        let q_zero = parts.any(|p| {
            let p = p.trim();
            p.strip_prefix("q=")
                .or_else(|| p.strip_prefix("Q="))
                .is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0))
        });
        (name.eq_ignore_ascii_case("gzip") || name == "*") && !q_zero
    })
}

/// A 200 (or 304) for a prepared body: Content-Type, ETag, gzip when the
/// client takes it (and `Vary: Accept-Encoding` whenever a gzip rendition
/// exists, so shared caches keep both apart).
pub(crate) fn body_response(
    req: &HttpRequest,
    rendered: &Rendered,
    not_modified: bool,
    extra: &[(header::HeaderName, HeaderValue)],
) -> HttpResponse {
    let status = if not_modified { StatusCode::NOT_MODIFIED } else { StatusCode::OK };
    let mut resp = HttpResponse::build(status);
    resp.insert_header((header::ETAG, rendered.etag.clone()));
    for (name, value) in extra {
        resp.append_header((name.clone(), value.clone()));
    }
    if rendered.gzip.is_some() {
        resp.append_header((header::VARY, HeaderValue::from_static("Accept-Encoding")));
    }
    if not_modified {
        return resp.finish();
    }
    resp.insert_header((header::CONTENT_TYPE, rendered.content_type.clone()));
    let body = match &rendered.gzip {
        Some(gz) if accepts_gzip(req.headers()) => {
            resp.insert_header((header::CONTENT_ENCODING, HeaderValue::from_static("gzip")));
            gz.clone()
        }
        _ => rendered.body.clone(),
    };
    // For HEAD, actix sends the headers (with this body's length) and
    // no body.
    resp.body(body)
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    fn gzip_ok(value: &str) -> bool {
        accepts_gzip(
            TestRequest::default()
                .insert_header((header::ACCEPT_ENCODING, value))
                .to_http_request()
                .headers(),
        )
    }

    #[test]
    fn gzip_is_taken_when_listed_without_q_zero() {
        assert!(gzip_ok("gzip"));
        assert!(gzip_ok("br, GZIP;q=0.5"));
        assert!(gzip_ok("*"));
        assert!(!gzip_ok("gzip;q=0"));
        assert!(!gzip_ok("identity"));
        assert!(!gzip_ok("deflate, br"));
    }
}
