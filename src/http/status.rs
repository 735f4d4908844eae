//! Error answers that say what went wrong, as Kubernetes `Status` objects,
//! and the root listing of what is served.
//!
//! An empty 404 reached `kubectl get pods` (pointed at the proxy) as "the
//! server could not find the requested resource" while `api-resources`
//! listed pods: nothing said that the proxy serves discovery and OpenAPI,
//! not resources. kubectl prints a `Status`'s message after
//! `Error from server (<reason>)`, so the message is where to say it.

use std::sync::LazyLock;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use bytes::Bytes;

use super::reply::Reply;
use super::{AppState, NO_CACHE};
use crate::discovery::types::{Empty, Status};

/// A `Status` body: compact JSON and a newline, as kube-apiserver writes
/// it. Every message here is fixed, so each body is serialized once, on
/// first use: a handler writes prepared bytes, whatever it is asked.
fn status_body(code: StatusCode, reason: &str, message: &str) -> Bytes {
    let status = Status {
        kind: "Status",
        api_version: "v1",
        metadata: Empty {},
        status: "Failure",
        message,
        reason,
        code: code.as_u16(),
    };
    let mut body = serde_json::to_vec(&status).unwrap_or_default();
    body.push(b'\n');
    Bytes::from(body)
}

/// A `Status` answer with a prepared body, revalidated every time.
fn status(code: StatusCode, body: &Bytes) -> Reply {
    Reply::new(code)
        .header(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .header(header::CACHE_CONTROL, NO_CACHE)
        .body(body.clone())
}

/// Not a 404: clients read a `NotFound` as "no such object", and
/// `kubectl apply --dry-run=client` of a new object then printed
/// `created (dry run)` through a proxy that never looked. A 501 is no
/// answer about the object, and no client retries it.
static RESOURCE_REQUEST: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::NOT_IMPLEMENTED,
        "NotImplemented",
        "openapi-proxy serves discovery (/api, /apis) and OpenAPI (/openapi/v2, /openapi/v3) \
         only; this is a resource request: send it to the API server that owns it",
    )
});

static UNKNOWN_PATH: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::NOT_FOUND,
        "NotFound",
        "the server could not find the requested resource (GET / lists the paths openapi-proxy \
         serves)",
    )
});

static METHOD_NOT_ALLOWED: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        "openapi-proxy only reads: GET and HEAD are answered",
    )
});

static V2_JSON_AND_PROTOBUF: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::NOT_ACCEPTABLE,
        "NotAcceptable",
        "/openapi/v2 is served as application/json and \
         application/com.github.proto-openapi.spec.v2.v1.0+protobuf only",
    )
});

static V2_JSON_ONLY: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::NOT_ACCEPTABLE,
        "NotAcceptable",
        "/openapi/v2 is served as application/json only for now: it holds what gnostic's \
         OpenAPI v2 message cannot, or the protobuf renditions are at their memory limit (see \
         the proxy's log). kubectl 1.27 and 1.28 explain ask for protobuf; kubectl 1.29 and \
         later read /openapi/v3",
    )
});

static V2_NOT_PUBLISHED: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::NOT_FOUND,
        "NotFound",
        "no downstream publishes OpenAPI; openapi-proxy serves at /openapi/v2 every \
         downstream's Swagger 2.0 (or OpenAPI v3, converted down) merged into one",
    )
});

static VERSION_NOT_PUBLISHED: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::NOT_FOUND,
        "NotFound",
        "no downstream serves /version; openapi-proxy passes it through from the \
         highest-priority downstream that does",
    )
});

static V3_KEY_NOT_PUBLISHED: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::NOT_FOUND,
        "NotFound",
        "no downstream publishes an OpenAPI v3 document for this group-version \
         (GET /openapi/v3 lists those served)",
    )
});

/// The 404 of an OpenAPI v3 key no downstream publishes. Only the 406 of
/// a document stays empty, as kube-apiserver's is (docs/upstream.md#b-11-7).
pub(super) fn openapi_v3_not_published() -> Reply {
    status(StatusCode::NOT_FOUND, &V3_KEY_NOT_PUBLISHED)
}

/// The answer to a path nothing serves: 404, but 501 for a path under
/// `/api/` or `/apis/` deeper than a group-version, a resource request
/// (`kubectl get pods` through the proxy), whose message says where it
/// belongs. The path is not repeated: the body stays the same few prepared
/// bytes whatever is asked.
pub(super) fn not_found(path: &str) -> Reply {
    if is_resource_request(path) {
        status(StatusCode::NOT_IMPLEMENTED, &RESOURCE_REQUEST)
    } else {
        status(StatusCode::NOT_FOUND, &UNKNOWN_PATH)
    }
}

/// The 406 of `/openapi/v2` for an `Accept` it cannot meet. kubectl 1.27
/// and 1.28 `explain` ask for protobuf only; when the document has no
/// protobuf rendition to serve, the message says why and which clients
/// read what, instead of an empty body.
pub(super) fn openapi_v2_not_acceptable(protobuf_served: bool) -> Reply {
    let body = if protobuf_served { &V2_JSON_AND_PROTOBUF } else { &V2_JSON_ONLY };
    status(StatusCode::NOT_ACCEPTABLE, body)
}

static V2_TOO_LARGE: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::SERVICE_UNAVAILABLE,
        "ServiceUnavailable",
        "the merged /openapi/v2 of these downstreams is too large to make within the memory \
         budget (see the proxy's log; raise memoryBudgetBytes to serve it). kubectl 1.29 and \
         later read /openapi/v3, which is served for every downstream",
    )
});

/// The 503 of `/openapi/v2` when merging the downstreams' documents would
/// take more memory than it may: no retry helps until the downstreams or
/// the budget change, so no `Retry-After`.
pub(super) fn openapi_v2_too_large() -> Reply {
    status(StatusCode::SERVICE_UNAVAILABLE, &V2_TOO_LARGE)
}

/// The 404 of `/openapi/v2` when no downstream serves it.
pub(super) fn openapi_v2_not_published() -> Reply {
    status(StatusCode::NOT_FOUND, &V2_NOT_PUBLISHED)
}

/// The 404 of `/version` when no downstream serves it.
pub(super) fn version_not_published() -> Reply {
    status(StatusCode::NOT_FOUND, &VERSION_NOT_PUBLISHED)
}

static IDENTITY_BUSY: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::TOO_MANY_REQUESTS,
        "TooManyRequests",
        "too many uncompressed answers of large documents are being written; retry, or ask \
         with Accept-Encoding: gzip (every Kubernetes client does), which is always answered",
    )
});

static IDENTITY_CORRUPT: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
        "this document's uncompressed rendition could not be made; ask with \
         Accept-Encoding: gzip",
    )
});

/// The answer to a client that does not take gzip when a document kept
/// gzipped only cannot be inflated for it now (`body::identity`): 429
/// with `Retry-After`, as kube-apiserver's in-flight limit answers.
pub(super) fn identity_busy() -> Reply {
    status(StatusCode::TOO_MANY_REQUESTS, &IDENTITY_BUSY)
        .header(header::RETRY_AFTER, HeaderValue::from_static("1"))
}

/// The answer when a document's gzip rendition does not inflate: memory
/// corrupted, a defect; the gzip answer may still be good.
pub(super) fn identity_corrupt() -> Reply {
    status(StatusCode::INTERNAL_SERVER_ERROR, &IDENTITY_CORRUPT)
}

static FORM_FAILED: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
        "this discovery document could not be written in the media type asked for; ask \
         for application/json",
    )
});

/// The 500 of a discovery document whose YAML or protobuf form could not
/// be made from its JSON (docs/wire.md#a-12).
pub(super) fn discovery_form_failed() -> Reply {
    status(StatusCode::INTERNAL_SERVER_ERROR, &FORM_FAILED)
}

/// The 405 of a method other than GET or HEAD on a served path.
pub(super) fn method_not_allowed() -> Reply {
    status(StatusCode::METHOD_NOT_ALLOWED, &METHOD_NOT_ALLOWED)
        .header(header::ALLOW, HeaderValue::from_static("GET, HEAD"))
}

static NOT_OWNED: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::NOT_FOUND,
        "NotFound",
        "the server could not find the requested resource: no downstream serves this \
         group-version (GET /api and /apis list those served)",
    )
});

static TOO_MANY_IN_FLIGHT: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::TOO_MANY_REQUESTS,
        "TooManyRequests",
        "too many requests are being passed on (limits.maxRequestsInflight); please try again \
         later",
    )
});

static TOO_MANY_LONG_RUNNING: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::TOO_MANY_REQUESTS,
        "TooManyRequests",
        "too many long-running requests (watch, logs, exec, attach, port-forward, proxy) are \
         being passed on (limits.maxLongRunningRequests); please try again later",
    )
});

static TOO_MANY_IN_FLIGHT_OF_CLIENT: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::TOO_MANY_REQUESTS,
        "TooManyRequests",
        "too many requests from this client address are being passed on \
         (limits.maxRequestsInflightPerClient); please try again later",
    )
});

static TOO_MANY_LONG_RUNNING_OF_CLIENT: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::TOO_MANY_REQUESTS,
        "TooManyRequests",
        "too many long-running requests (watch, logs, exec, attach, port-forward, proxy) from \
         this client address are being passed on (limits.maxLongRunningRequestsPerClient); \
         please try again later",
    )
});

static TOO_MANY_STREAMS: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::TOO_MANY_REQUESTS,
        "TooManyRequests",
        "too many long-running requests on this HTTP/2 connection, more streams than its \
         SETTINGS allow (limits.maxStreamsPerConnection); please try again later",
    )
});

static OWNER_UNREACHABLE: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::SERVICE_UNAVAILABLE,
        "ServiceUnavailable",
        "the downstream that serves this group-version cannot be reached (its state: \
         /readyz?verbose)",
    )
});

static OWNER_TIMEOUT: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::GATEWAY_TIMEOUT,
        "Timeout",
        "the downstream that serves this group-version sent no answer within 60s",
    )
});

static OWNER_FAILED: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::BAD_GATEWAY,
        "InternalError",
        "the request could not be passed on to the downstream that serves this group-version \
         (the request's body failed, or the downstream broke the exchange)",
    )
});

static UNAUTHORIZED: LazyLock<Bytes> =
    LazyLock::new(|| status_body(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized"));

static AUTHENTICATION_UNAVAILABLE: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::SERVICE_UNAVAILABLE,
        "ServiceUnavailable",
        "the credentials cannot be checked now: the downstream that authenticates them did not \
         answer (its state: /readyz?verbose); please try again later",
    )
});

static TOO_MANY_REVIEWS: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::TOO_MANY_REQUESTS,
        "TooManyRequests",
        "too many credentials are being checked at once; please try again later",
    )
});

/// The 429 when too many tokens are being reviewed at once to ask about
/// another, with `Retry-After` as the in-flight limits answer.
pub(super) fn too_many_reviews() -> Reply {
    status(StatusCode::TOO_MANY_REQUESTS, &TOO_MANY_REVIEWS)
        .header(header::RETRY_AFTER, HeaderValue::from_static("1"))
}

/// The 401 of metadata read without credentials a downstream accepts
/// (`metadataAuthentication: delegated`): kube-apiserver's own body for an
/// unauthenticated request, word for word.
pub(super) fn unauthorized() -> Reply {
    status(StatusCode::UNAUTHORIZED, &UNAUTHORIZED)
}

/// The 503 when the downstream that authenticates tokens could not answer:
/// not a 401, which would tell a client with a good token to drop it.
pub(super) fn authentication_unavailable() -> Reply {
    status(StatusCode::SERVICE_UNAVAILABLE, &AUTHENTICATION_UNAVAILABLE)
        .header(header::RETRY_AFTER, HeaderValue::from_static("1"))
}

static CONNECT_REFUSED: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        "CONNECT is not passed on: the front door tunnels only WebSocket and SPDY upgrades \
         (exec, attach, port-forward)",
    )
});

static UPGRADE_HEAD_TOO_LARGE: LazyLock<Bytes> = LazyLock::new(|| {
    status_body(
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        "RequestHeaderFieldsTooLarge",
        "an upgrade's request head is limited to 8 KiB and 64 header lines",
    )
});

/// The front door's 405 for `CONNECT`: a tunnel to anywhere is nobody's to
/// pass on. `Allow` names the methods it does pass on.
pub(crate) fn connect_refused() -> Reply {
    status(StatusCode::METHOD_NOT_ALLOWED, &CONNECT_REFUSED).header(
        header::ALLOW,
        HeaderValue::from_static("GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"),
    )
}

/// The front door's 431 for an upgrade whose head is over the limits the
/// raw first-request readers apply, so every path takes the same heads.
pub(crate) fn upgrade_head_too_large() -> Reply {
    status(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, &UPGRADE_HEAD_TOO_LARGE)
}

/// The front door's 404: a path under no group-version any downstream
/// serves.
pub(crate) fn not_owned() -> Reply {
    status(StatusCode::NOT_FOUND, &NOT_OWNED)
}

/// The front door's 429 past `maxRequestsInflight`, with `Retry-After` as
/// kube-apiserver's in-flight limit answers.
pub(crate) fn too_many_in_flight() -> Reply {
    status(StatusCode::TOO_MANY_REQUESTS, &TOO_MANY_IN_FLIGHT)
        .header(header::RETRY_AFTER, HeaderValue::from_static("1"))
}

/// The front door's 429 past `maxLongRunningRequests`, with `Retry-After`
/// as for short requests.
pub(crate) fn too_many_long_running() -> Reply {
    status(StatusCode::TOO_MANY_REQUESTS, &TOO_MANY_LONG_RUNNING)
        .header(header::RETRY_AFTER, HeaderValue::from_static("1"))
}

/// The front door's 429 past one client's `maxRequestsInflightPerClient`,
/// with `Retry-After` as for the total.
pub(crate) fn too_many_in_flight_of_client() -> Reply {
    status(StatusCode::TOO_MANY_REQUESTS, &TOO_MANY_IN_FLIGHT_OF_CLIENT)
        .header(header::RETRY_AFTER, HeaderValue::from_static("1"))
}

/// The front door's 429 past one client's
/// `maxLongRunningRequestsPerClient`, with `Retry-After` as for the total.
pub(crate) fn too_many_long_running_of_client() -> Reply {
    status(StatusCode::TOO_MANY_REQUESTS, &TOO_MANY_LONG_RUNNING_OF_CLIENT)
        .header(header::RETRY_AFTER, HeaderValue::from_static("1"))
}

/// The front door's 429 for a long-running request on an HTTP/2
/// connection past `maxStreamsPerConnection` (its client ignored SETTINGS).
pub(crate) fn too_many_streams() -> Reply {
    status(StatusCode::TOO_MANY_REQUESTS, &TOO_MANY_STREAMS)
        .header(header::RETRY_AFTER, HeaderValue::from_static("1"))
}

/// The front door's 503: the owner refused or could not be connected to.
pub(crate) fn owner_unreachable() -> Reply {
    status(StatusCode::SERVICE_UNAVAILABLE, &OWNER_UNREACHABLE)
}

/// The front door's 504: the owner sent no response head in time.
pub(crate) fn owner_timeout() -> Reply {
    status(StatusCode::GATEWAY_TIMEOUT, &OWNER_TIMEOUT)
}

/// The front door's 502: the exchange broke before an answer.
pub(crate) fn owner_failed() -> Reply {
    status(StatusCode::BAD_GATEWAY, &OWNER_FAILED)
}

/// `GET /`: the paths served, as kube-apiserver's root lists its own,
/// prepared with the snapshot.
pub(super) fn root(state: &AppState) -> Reply {
    Reply::new(StatusCode::OK)
        .header(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .header(header::CACHE_CONTROL, NO_CACHE)
        .body(state.store.load().paths.clone())
}

/// `/api/<v>/…` or `/apis/<g>/<v>/…`: a path kube-apiserver would route
/// to a resource handler.
fn is_resource_request(path: &str) -> bool {
    // A `.` or `..` segment, spelt plainly or percent-encoded, names no
    // resource: such a path is a traversal attempt, an unknown path (404).
    let dot_segment = |s: &str| {
        let decoded = percent_encoding::percent_decode_str(s).decode_utf8_lossy();
        decoded == "." || decoded == ".."
    };
    if path.split('/').any(dot_segment) {
        return false;
    }
    let segments = |rest: &str| rest.split('/').filter(|s| !s.is_empty()).count();
    if let Some(rest) = path.strip_prefix("/apis/") {
        segments(rest) > 2
    } else if let Some(rest) = path.strip_prefix("/api/") {
        segments(rest) > 1
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(reply: &Reply) -> String {
        let v: serde_json::Value = serde_json::from_slice(&reply.body).expect("a Status");
        assert_eq!(v["kind"], "Status");
        assert_eq!(v["code"], reply.status.as_u16());
        v["message"].as_str().expect("message").to_owned()
    }

    #[test]
    fn a_resource_request_is_told_where_it_belongs() {
        for path in ["/api/v1/namespaces/default/pods", "/apis/apps/v1/deployments"] {
            let reply = not_found(path);
            // Not "no such object": clients must not take it for an answer.
            assert_eq!(reply.status, StatusCode::NOT_IMPLEMENTED, "{path}");
            let m = message(&reply);
            assert!(m.contains("is a resource request"), "{path}: {m}");
            assert!(m.contains("serves discovery"), "{path}: {m}");
        }
        for path in
            ["/nothing", "/apis/apps/v1/", "/api/v1x", "/apis/../../etc/passwd", "/api/v1/%2E%2e/x"]
        {
            assert_eq!(not_found(path).status, StatusCode::NOT_FOUND, "{path}");
        }
        let m = message(&not_found("/nothing"));
        assert!(m.starts_with("the server could not find the requested resource"), "{m}");
    }

    #[test]
    fn a_long_path_is_not_echoed_whole() {
        let path = format!("/api/v1/{}", "x".repeat(100_000));
        let reply = not_found(&path);
        assert!(reply.body.len() < 1024, "{} bytes", reply.body.len());
    }

    #[test]
    fn method_not_allowed_says_which_methods_are() {
        let reply = method_not_allowed();
        assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
        assert!(message(&reply).contains("GET and HEAD"));
        assert!(reply.headers.iter().any(|(n, v)| n == header::ALLOW && v == "GET, HEAD"));
    }
}
