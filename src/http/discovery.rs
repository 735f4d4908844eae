//! `/api`, `/apis`, `/apis/`, `/apis/<group>`, `/apis/<group>/<version>`,
//! `/api/<version>`.
//!
//! Wire behaviour: docs/wire.md#a-7 to #a-9 and #a-12, B-4.1–4.4, B-5.
//! `/api` and `/apis` answer the aggregated list when `Accept` asks for it
//! (v2, and v2beta1 unless switched off), else the legacy document;
//! `/apis/` and the per-group paths are legacy only. Each in JSON, YAML or
//! protobuf, as negotiated, with the ETag of its JSON form.

use std::sync::LazyLock;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue, VARY};
use bytes::Bytes;

use super::reply::{Reply, Request};
use super::{ACCEPT, AppState, NO_CACHE, body_reply, status};
use crate::body::rendered::Rendered;
use crate::discovery::forms::FormError;
use crate::wire::media::DISCOVERY_NOT_ACCEPTABLE_MESSAGE;
use crate::wire::negotiate::{self, DiscoveryChoice};

/// The 404 `Status` of an unknown group or group-version.
const NOT_FOUND_STATUS: &str = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
\"message\":\"the server could not find the requested resource\",\"reason\":\"NotFound\",\"code\":404}\n";

/// The 406 `Status` body apiserver writes (two-space indented, no trailing
/// newline; B-4.3), serialized once: handlers do not serialize.
static NOT_ACCEPTABLE_STATUS: LazyLock<Bytes> = LazyLock::new(|| {
    let status = crate::discovery::types::Status {
        kind: "Status",
        api_version: "v1",
        metadata: crate::discovery::types::Empty {},
        status: "Failure",
        message: DISCOVERY_NOT_ACCEPTABLE_MESSAGE,
        reason: "NotAcceptable",
        code: 406,
    };
    Bytes::from(serde_json::to_vec_pretty(&status).expect("a Status always serializes"))
});

fn not_acceptable() -> Reply {
    Reply::new(StatusCode::NOT_ACCEPTABLE)
        .header(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .header(VARY, ACCEPT)
        .body(NOT_ACCEPTABLE_STATUS.clone())
}

fn not_found() -> Reply {
    Reply::new(StatusCode::NOT_FOUND)
        .header(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .header(header::CACHE_CONTROL, NO_CACHE)
        .body(NOT_FOUND_STATUS)
}

/// The aggregated form: `Cache-Control: public`, ETag compared exactly
/// (no weak form, no lists; B-4.4).
fn aggregated(req: &Request<'_>, state: &AppState, rendered: &Rendered) -> Reply {
    let not_modified =
        negotiate::discovery_etag_matches(req.if_none_match.as_deref(), rendered.etag_str());
    body_reply(
        req,
        state,
        rendered,
        not_modified,
        [(VARY, ACCEPT), (header::CACHE_CONTROL, HeaderValue::from_static("public"))],
    )
}

fn legacy(req: &Request<'_>, state: &AppState, rendered: &Rendered) -> Reply {
    let not_modified =
        negotiate::if_none_match_matches(req.if_none_match.as_deref(), rendered.etag_str());
    body_reply(
        req,
        state,
        rendered,
        not_modified,
        [(VARY, ACCEPT), (header::CACHE_CONTROL, NO_CACHE)],
    )
}

/// `/api` (`core`) and `/apis` (B-4.1: `/apis/` with a trailing slash is
/// always legacy, see [`legacy_only`]).
pub(super) fn root(req: &Request<'_>, state: &AppState, core: bool) -> Reply {
    let snap = state.store.load();
    let d = &snap.discovery;
    match negotiate::negotiate_discovery(req.accept.as_deref(), state.serve_v2beta1) {
        DiscoveryChoice::Aggregated(v, format) => match d.aggregated(core, v, format) {
            Ok(rendered) => aggregated(req, state, rendered),
            Err(e) => form_failed(req, e),
        },
        DiscoveryChoice::Legacy(format) => match d.legacy_root(core, format) {
            Ok(rendered) => legacy(req, state, rendered),
            Err(e) => form_failed(req, e),
        },
        DiscoveryChoice::NotAcceptable => not_acceptable(),
    }
}

/// Which legacy-only document a path names.
#[derive(Debug, Clone, Copy)]
pub(super) enum LegacyPath<'p> {
    /// `/apis/`: the `APIGroupList`.
    Groups,
    /// `/apis/<group>`.
    Group(&'p str),
    /// `/api/<v>`, `/apis/<g>/<v>`, by key (`api/v1`).
    Resources(&'p str),
}

/// A legacy-only document (`/apis/`, `/apis/<group>`, `/apis/<g>/<v>`,
/// `/api/<v>`) in the negotiated form; one not served is a 404 Status.
pub(super) fn legacy_only(req: &Request<'_>, state: &AppState, path: LegacyPath<'_>) -> Reply {
    let DiscoveryChoice::Legacy(format) =
        negotiate::negotiate_legacy_discovery(req.accept.as_deref())
    else {
        return not_acceptable();
    };
    let snap = state.store.load();
    let d = &snap.discovery;
    let forms = match path {
        LegacyPath::Groups => {
            return match d.legacy_root(false, format) {
                Ok(rendered) => legacy(req, state, rendered),
                Err(e) => form_failed(req, e),
            };
        }
        LegacyPath::Group(group) => d.group_forms(group),
        LegacyPath::Resources(key) => d.resource_forms(key),
    };
    let Some(forms) = forms else { return not_found() };
    match forms.get(format) {
        Ok(rendered) => legacy(req, state, rendered),
        Err(e) => form_failed(req, e),
    }
}

fn form_failed(req: &Request<'_>, e: &FormError) -> Reply {
    tracing::error!(path = req.path, error = %crate::error_chain(e), "discovery form failed");
    status::discovery_form_failed()
}
