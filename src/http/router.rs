//! Which handler answers a request, for both transports.
//!
//! The path is decoded the way Go decodes `URL.Path` before kube-apiserver
//! routes it (`/openapi/v3/apis%2Fapps%2Fv1` names `apis/apps/v1`), then
//! matched segment by segment. Every route only reads: GET and HEAD are
//! answered, any other method on a known path is 405 with `Allow`, and an
//! unknown path is 404 whatever the method.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

use super::reply::{Reply, Request};
use super::{AppState, discovery, health, openapi, status};

/// A known path, with what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route<'p> {
    /// `/`: the list of paths served.
    Root,
    /// `/openapi/v3`.
    OpenApiRoot,
    /// `/openapi/v3/<key>`; the key may be empty (`/openapi/v3/`).
    OpenApiDocument(&'p str),
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/version`.
    Version,
    /// `/api`.
    Api,
    /// `/apis`.
    Apis,
    /// `/apis/`.
    ApisSlash,
    /// `/apis/<group>`.
    Group(&'p str),
    /// `/apis/<group>/<version>`: the key `apis/<group>/<version>`.
    GroupVersion(&'p str),
    /// `/api/<version>`: the key `api/<version>`.
    CoreVersion(&'p str),
    /// `/healthz` and `/livez`.
    Healthz,
    /// `/readyz`.
    Readyz,
    /// `/metrics`.
    Metrics,
}

impl Route<'_> {
    /// The `route` label of `openapi_proxy_http_requests_total`.
    fn label(&self) -> &'static str {
        match self {
            Self::Root => "root",
            Self::OpenApiRoot => "openapi_v3_root",
            Self::OpenApiDocument(_) => "openapi_v3_document",
            Self::OpenApiV2 => "openapi_v2",
            Self::Version => "version",
            Self::Api => "discovery_api",
            Self::Apis | Self::ApisSlash => "discovery_apis",
            Self::Group(_) => "discovery_group",
            Self::GroupVersion(_) | Self::CoreVersion(_) => "discovery_group_version",
            Self::Healthz => "healthz",
            Self::Readyz => "readyz",
            Self::Metrics => "metrics",
        }
    }
}

/// The path as Go's `URL.Path` has it: percent-decoded. `None` when the
/// decoded bytes are not UTF-8 (no route has such a path).
pub(crate) fn decode_path(raw: &str) -> Option<Cow<'_, str>> {
    if !raw.contains('%') {
        return Some(Cow::Borrowed(raw));
    }
    percent_decode_str(raw).decode_utf8().ok()
}

/// The route of a decoded path; `None` for a path nothing serves.
pub(crate) fn route(path: &str) -> Option<Route<'_>> {
    if let Some(rest) = path.strip_prefix("/openapi/v3") {
        return match rest.strip_prefix('/') {
            None if rest.is_empty() => Some(Route::OpenApiRoot),
            None => None,
            Some(key) => Some(Route::OpenApiDocument(key)),
        };
    }
    let exact = match path {
        "/" => Some(Route::Root),
        "/openapi/v2" => Some(Route::OpenApiV2),
        "/version" => Some(Route::Version),
        "/api" => Some(Route::Api),
        "/apis" => Some(Route::Apis),
        "/apis/" => Some(Route::ApisSlash),
        "/healthz" | "/livez" => Some(Route::Healthz),
        "/readyz" => Some(Route::Readyz),
        "/metrics" => Some(Route::Metrics),
        _ => None,
    };
    if exact.is_some() {
        return exact;
    }
    if let Some(rest) = path.strip_prefix("/apis/") {
        let segments = rest.split('/').collect::<SmallList<'_>>();
        return match segments.as_slice() {
            [group] if !group.is_empty() => Some(Route::Group(group)),
            [group, version] if !group.is_empty() && !version.is_empty() => {
                Some(Route::GroupVersion(&path[1..]))
            }
            _ => None,
        };
    }
    if let Some(version) = path.strip_prefix("/api/") {
        return (!version.is_empty() && !version.contains('/'))
            .then_some(Route::CoreVersion(&path[1..]));
    }
    None
}

/// Up to three path segments without allocating; more mark the list full
/// (no route has more than two after `/apis/`).
#[derive(Default)]
struct SmallList<'a> {
    items: [&'a str; 3],
    len: usize,
}

impl<'a> SmallList<'a> {
    fn as_slice(&self) -> &[&'a str] {
        &self.items[..self.len]
    }
}

impl<'a> FromIterator<&'a str> for SmallList<'a> {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> Self {
        let mut list = Self::default();
        for item in iter.into_iter().take(3) {
            list.items[list.len] = item;
            list.len += 1;
        }
        list
    }
}

/// The answer to `req`, counted in `openapi_proxy_http_requests_total`.
pub(crate) fn answer(state: &AppState, req: &Request<'_>) -> Reply {
    let decoded = decode_path(req.path);
    let Some(route) = decoded.as_deref().and_then(route) else {
        state.metrics.request("not_found", 404);
        return status::not_found(req.path);
    };
    if !req.method.reads() {
        state.metrics.request("method_not_allowed", 405);
        return status::method_not_allowed();
    }
    if route == Route::Metrics {
        // Counted first, so that the exposition includes the scrape
        // reading it.
        state.metrics.request(route.label(), 200);
        return health::metrics(state);
    }
    let reply = match route {
        Route::Root => status::root(state),
        Route::OpenApiRoot => openapi::root(req, state),
        Route::OpenApiDocument(key) => openapi::document(req, key, state),
        Route::OpenApiV2 => openapi::v2(req, state),
        Route::Version => openapi::version(req, state),
        Route::Api => discovery::root(req, state, true),
        Route::Apis => discovery::root(req, state, false),
        Route::ApisSlash => discovery::legacy_only(req, state, |s| Some(&s.discovery.apis_legacy)),
        Route::Group(group) => {
            discovery::legacy_only(req, state, |s| s.discovery.groups.get(group))
        }
        Route::GroupVersion(key) | Route::CoreVersion(key) => {
            discovery::legacy_only(req, state, |s| s.discovery.resources.get(key).map(|r| &**r))
        }
        Route::Healthz => health::healthz(req),
        Route::Readyz => health::readyz(req, state),
        Route::Metrics => health::metrics(state),
    };
    state.metrics.request(route.label(), reply.status.as_u16());
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_routes() {
        assert_eq!(route("/openapi/v3"), Some(Route::OpenApiRoot));
        assert_eq!(route("/openapi/v3/"), Some(Route::OpenApiDocument("")));
        assert_eq!(route("/openapi/v3/apis/apps/v1"), Some(Route::OpenApiDocument("apis/apps/v1")));
        assert_eq!(route("/openapi/v3x"), None);
        assert_eq!(route("/openapi/v2"), Some(Route::OpenApiV2));
        assert_eq!(route("/openapi/v2/"), None);
        assert_eq!(route("/apis"), Some(Route::Apis));
        assert_eq!(route("/apis/"), Some(Route::ApisSlash));
        assert_eq!(route("/apis/apps"), Some(Route::Group("apps")));
        assert_eq!(route("/apis/apps/"), None);
        assert_eq!(route("/apis/apps/v1"), Some(Route::GroupVersion("apis/apps/v1")));
        assert_eq!(route("/apis/apps/v1/deployments"), None);
        assert_eq!(route("/apis//v1"), None);
        assert_eq!(route("/api"), Some(Route::Api));
        assert_eq!(route("/api/"), None);
        assert_eq!(route("/api/v1"), Some(Route::CoreVersion("api/v1")));
        assert_eq!(route("/api/v1/pods"), None);
        assert_eq!(route("/livez"), Some(Route::Healthz));
        assert_eq!(route("/metrics/"), None);
        assert_eq!(route(""), None);
    }

    #[test]
    fn paths_are_decoded_like_go() {
        assert_eq!(
            decode_path("/openapi/v3/apis%2Fapps%2Fv1").as_deref(),
            Some("/openapi/v3/apis/apps/v1")
        );
        assert_eq!(decode_path("/openapi/v3/api/v%31").as_deref(), Some("/openapi/v3/api/v1"));
        assert_eq!(decode_path("/openapi/v3/%FF"), None);
        assert_eq!(decode_path("/openapi/v3/%").as_deref(), Some("/openapi/v3/%"));
        assert!(matches!(decode_path("/apis"), Some(Cow::Borrowed("/apis"))));
    }
}
