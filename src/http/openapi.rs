//! `/openapi/v3`, `/openapi/v3/<key>`, `/openapi/v2` and `/version`.
//!
//! Wire behaviour: docs/wire.md#a-1 to #a-3, 6 and 10; B-1, B-2.1,
//! B-2.4, B-9.1.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue, VARY};

use super::reply::{DateCache, Reply, Request, http_date};
use super::{ACCEPT, AppState, NO_CACHE, body_reply};
use crate::body::rendered::Rendered;
use crate::publish::protobuf::{Protobuf, Unavailable};
use crate::publish::snapshot::{OpenApiV2Slot, TooLarge};
use crate::wire::negotiate::{self, OpenApiChoice, OpenApiV2Choice};

/// How long a document fetched by its current hash may be cached: the URL
/// names the content, so it never changes (KEP-2896).
const IMMUTABLE_FOR: Duration = Duration::from_secs(365 * 24 * 60 * 60);

thread_local! {
    /// The `Expires` value for the current second, per worker thread.
    static EXPIRES: DateCache = const { RefCell::new((u64::MAX, None)) };
}

/// `Expires` for a response served now: a year ahead, to the second.
fn expires() -> Option<HeaderValue> {
    http_date(&EXPIRES, IMMUTABLE_FOR)
}

/// `GET /openapi/v3`: the root index. Accept is not consulted (a root is
/// always JSON, and kube never answers 406 here).
pub(super) fn root(req: &Request<'_>, state: &AppState) -> Reply {
    let snap = state.store.load();
    let rendered = &snap.openapi_root;
    let not_modified =
        negotiate::if_none_match_matches(req.if_none_match.as_deref(), rendered.etag_str());
    body_reply(req, state, rendered, not_modified, [(header::CACHE_CONTROL, NO_CACHE)])
}

/// The first `hash` query parameter; an empty value counts as absent
/// (docs/upstream.md#b-2-1).
fn hash_param(query: &str) -> Option<&str> {
    query.split('&').find_map(|pair| pair.strip_prefix("hash=")).filter(|h| !h.is_empty())
}

/// `GET /openapi/v3/<key>`: one document. Negotiation comes first (an
/// unacceptable Accept is 406 even for an unknown key), then the lookup
/// (unknown → 404), then `?hash=` (current → cacheable for a year; stale →
/// 301 to the current URL), then `If-None-Match`. `key` is the rest of the
/// path, decoded as Go's `URL.Path` is (kube-apiserver serves
/// `apis%2Fapps%2Fv1` as `apis/apps/v1`).
pub(super) fn document(req: &Request<'_>, key: &str, state: &AppState) -> Reply {
    let accept = req.accept.as_deref();
    let choice = negotiate::negotiate_openapi_document(accept, true);
    if choice == OpenApiChoice::NotAcceptable {
        return Reply::new(StatusCode::NOT_ACCEPTABLE).header(VARY, ACCEPT);
    }
    let snap = state.store.load();
    let Some(entry) = snap.openapi.get(key) else {
        return super::status::openapi_v3_not_published().header(VARY, ACCEPT);
    };
    let protobuf = match choice {
        OpenApiChoice::Protobuf => match rendition(state, &entry.protobuf) {
            Some(protobuf) => Some(protobuf),
            // Negotiated again as if protobuf were not offered.
            None => match negotiate::negotiate_openapi_document(accept, false) {
                OpenApiChoice::NotAcceptable => {
                    return Reply::new(StatusCode::NOT_ACCEPTABLE).header(VARY, ACCEPT);
                }
                _ => None,
            },
        },
        _ => None,
    };
    let rendered = protobuf.as_deref().unwrap_or(&entry.rendered);
    let (cache_control, expires) = match hash_param(req.query) {
        Some(hash) if hash == rendered.hash => {
            (HeaderValue::from_static("public, immutable"), expires())
        }
        Some(_) => {
            return Reply::new(StatusCode::MOVED_PERMANENTLY)
                .header(header::LOCATION, entry.location.clone())
                .header(header::CONTENT_TYPE, rendered.content_type.clone())
                .header(header::ETAG, rendered.etag.clone())
                .header(VARY, ACCEPT);
        }
        None => (NO_CACHE, None),
    };
    let extra = [(VARY, ACCEPT), (header::CACHE_CONTROL, cache_control)]
        .into_iter()
        .chain(expires.map(|v| (header::EXPIRES, v)));
    let not_modified =
        negotiate::if_none_match_matches(req.if_none_match.as_deref(), rendered.etag_str());
    body_reply(req, state, rendered, not_modified, extra)
}

/// The protobuf rendition in `cell`, made now if this is the first
/// request for it; `None` when there is none to serve (logged and
/// counted when that is news).
fn rendition(state: &AppState, cell: &Protobuf) -> Option<Arc<Rendered>> {
    if cell.is_settled() {
        return cell.get(&state.protobuf).ok();
    }
    reported(state, cell.get(&state.protobuf))
}

/// The rendition this request made, or why there is none, logged and
/// counted. The gauge says what the documents' renditions hold; the
/// merged `/openapi/v2`'s is within that document's own bound.
fn reported(state: &AppState, made: Result<Arc<Rendered>, Unavailable>) -> Option<Arc<Rendered>> {
    let account = &state.protobuf;
    match made {
        Ok(rendered) => {
            state.metrics.protobuf_rendition("made", account.held());
            tracing::debug!(hash = %rendered.hash, bytes = rendered.len(), "protobuf rendition made");
            Some(rendered)
        }
        Err(e) => {
            match &e {
                Unavailable::Unencodable(_) => {
                    state.metrics.protobuf_rendition("unencodable", account.held());
                    tracing::warn!(error = %crate::error_chain(&e), "document served without a protobuf rendition");
                }
                Unavailable::OverLimit { first, needed, held, limit } => {
                    state.metrics.protobuf_rendition("over_limit", *held);
                    if *first {
                        tracing::warn!(
                            needed,
                            held,
                            limit,
                            "protobuf renditions at their memory limit; serving JSON only until one fits"
                        );
                    } else {
                        tracing::debug!(needed, held, limit, "protobuf rendition refused");
                    }
                }
                Unavailable::Unreadable(_) => {
                    tracing::error!(error = %crate::error_chain(&e), "protobuf rendition failed");
                }
            }
            None
        }
    }
}

/// Makes what this request needs of the merged `/openapi/v2` and is not
/// made yet — the document, and its protobuf rendition when `protobuf` —
/// on a blocking thread: behind thousands of CRDs that takes seconds, in
/// which the worker serves its other connections. Requests at the same
/// time wait for the one making it without a thread each. Nothing is made
/// past the bound ([`v2`] refuses and says so).
///
/// The outcome of the rendition when this request tried to make it, for
/// the request to report and serve.
async fn make_off_worker(
    state: &AppState,
    slot: &Arc<OpenApiV2Slot>,
    protobuf: bool,
) -> Option<Result<Arc<Rendered>, Unavailable>> {
    let pending = |s: &OpenApiV2Slot| !s.is_made() || (protobuf && !s.is_protobuf_settled());
    let limit = state.v2_merge_limit;
    if !pending(slot) || slot.making_cost() > limit {
        return None;
    }
    let _turn = slot.turn().await;
    if !pending(slot) {
        return None;
    }
    let slot = Arc::clone(slot);
    let made = tokio::task::spawn_blocking(move || {
        if !protobuf {
            let _ = slot.get_within(limit);
            return None;
        }
        let made = slot.protobuf_within(limit).ok().flatten()?;
        Some(made.cell.get(&made.account))
    })
    .await;
    made.unwrap_or_else(|e| {
        tracing::error!(error = %e, "making /openapi/v2 failed");
        None
    })
}

/// `GET /openapi/v2`: the Swagger 2.0 document of every downstream merged
/// (docs/wire.md, A-13), as JSON or as the proxy's protobuf encoding of
/// that JSON, as the client asks. The first request after a change makes
/// it (see `OpenApiV2Slot`).
pub(super) async fn v2(req: &Request<'_>, state: &AppState) -> Reply {
    let slot = Arc::clone(&state.store.load().openapi_v2);
    slot.mark_asked();
    let accept = req.accept.as_deref();
    let asks_protobuf = negotiate::negotiate_openapi_v2(accept, true) == OpenApiV2Choice::Protobuf;
    let made_now = make_off_worker(state, &slot, asks_protobuf).await;
    let made = slot
        .get_within(state.v2_merge_limit)
        .and_then(|v2| Ok((v2, slot.protobuf_within(state.v2_merge_limit)?)));
    let (v2, cell) = match made {
        Ok((Some(v2), Some(cell))) => (v2, cell),
        Ok(_) => return super::status::openapi_v2_not_published(),
        Err(TooLarge { needed, limit, first }) => {
            if first {
                tracing::warn!(
                    needed,
                    limit,
                    "/openapi/v2 not made: merging the downstreams' documents would hold more \
                     than three quarters of the memory budget; answering 503 until they or the \
                     budget change"
                );
            }
            return super::status::openapi_v2_too_large();
        }
    };
    let protobuf;
    let mut offered = true;
    let rendered = match negotiate::negotiate_openapi_v2(accept, true) {
        OpenApiV2Choice::Json => Some(&*v2.json),
        OpenApiV2Choice::Protobuf => {
            protobuf = match made_now {
                Some(outcome) => reported(state, outcome),
                // Made, or tried, off the worker (by this request or one
                // it waited for): never encoded here, on the worker.
                None => cell.cell.is_settled().then(|| cell.cell.get(&cell.account).ok()).flatten(),
            };
            match &protobuf {
                Some(r) => Some(&**r),
                None => {
                    offered = false;
                    match negotiate::negotiate_openapi_v2(accept, false) {
                        OpenApiV2Choice::Json => Some(&*v2.json),
                        _ => None,
                    }
                }
            }
        }
        OpenApiV2Choice::NotAcceptable => None,
    };
    match rendered {
        None => super::status::openapi_v2_not_acceptable(offered).header(VARY, ACCEPT),
        Some(r) => {
            let not_modified =
                negotiate::if_none_match_matches(req.if_none_match.as_deref(), r.etag_str());
            body_reply(
                req,
                state,
                r,
                not_modified,
                [(VARY, ACCEPT), (header::CACHE_CONTROL, NO_CACHE)],
            )
        }
    }
}

/// `GET /version`: the highest-priority downstream's, unchanged (kubectl's
/// version dispatcher reads it).
pub(super) fn version(req: &Request<'_>, state: &AppState) -> Reply {
    let snap = state.store.load();
    let Some(r) = &snap.version else {
        return super::status::version_not_published();
    };
    let not_modified = negotiate::if_none_match_matches(req.if_none_match.as_deref(), r.etag_str());
    body_reply(req, state, r, not_modified, [(header::CACHE_CONTROL, NO_CACHE)])
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

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
    fn expires_is_a_year_ahead() {
        let value = expires().expect("an HTTP date is a valid header value");
        let date = httpdate::parse_http_date(value.to_str().expect("ASCII")).expect("HTTP date");
        let ahead = date.duration_since(SystemTime::now()).expect("in the future");
        assert!(ahead > IMMUTABLE_FOR - Duration::from_secs(5) && ahead <= IMMUTABLE_FOR);
    }

    /// Past the renditions' memory bound a document is offered as JSON
    /// only: a protobuf-only client gets 406, one that also takes JSON
    /// gets JSON, and each refusal is counted.
    #[test]
    fn past_the_protobuf_limit_a_document_is_offered_as_json_only() {
        use crate::body::identity::IdentityCache;
        use crate::metrics::Metrics;
        use crate::publish::protobuf::Renditions;
        use crate::publish::readiness::Readiness;
        use crate::publish::snapshot::{Store, build, tests::contribution};
        use crate::wire::media::OPENAPI_V3_PROTOBUF_CONTENT_TYPE as PROTOBUF;

        let doc = r#"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{}}"#;
        let state = AppState {
            store: Arc::new(Store::new()),
            metrics: Arc::new(Metrics::default()),
            serve_v2beta1: true,
            identity: Arc::new(IdentityCache::new(1 << 20)),
            v2_merge_limit: u64::MAX,
            protobuf: Arc::new(Renditions::new(10)),
            authentication: None,
        };
        let (snapshot, _) =
            build(1, &[contribution("a", 1, 0, &[("apis/a/v1", doc)])], Readiness::default());
        state.store.publish(snapshot);
        let ask = |accept: &str| {
            let req = Request {
                method: super::super::reply::Method::Get,
                path: "/openapi/v3/apis/a/v1",
                query: "",
                accept: Some(accept.to_owned().into()),
                if_none_match: None,
                gzip: false,
                authorization: None,
            };
            document(&req, "apis/a/v1", &state)
        };
        assert_eq!(ask(PROTOBUF).status, StatusCode::NOT_ACCEPTABLE);
        let either = ask(&format!("{PROTOBUF}, application/json"));
        assert_eq!(either.status, StatusCode::OK);
        assert_eq!(either.body, doc.as_bytes());
        let metrics = state.metrics.render();
        assert!(
            metrics.contains("openapi_proxy_protobuf_renditions_total{result=\"over_limit\"} 2"),
            "{metrics}"
        );
    }
}
