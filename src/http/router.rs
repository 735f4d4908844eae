//! Which handler answers a request, for both transports.
//!
//! The path is decoded the way Go decodes `URL.Path` before kube-apiserver
//! routes it (`/openapi/v3/apis%2Fapps%2Fv1` names `apis/apps/v1`), then
//! matched segment by segment. Every route only reads: GET and HEAD are
//! answered, any other method on a known path is 405 with `Allow`, and an
//! unknown path is 404 whatever the method.

use std::borrow::Cow;
use std::time::Instant;

use percent_encoding::percent_decode_str;

use super::access::Access;
use super::discovery::LegacyPath;
use super::reply::{Reply, Request};
use super::{AppState, discovery, health, openapi, status};
use crate::metrics::RouteLabel;

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
    /// The `route` label of `openapi_proxy_http_request_duration_seconds`.
    fn label(&self) -> RouteLabel {
        match self {
            Self::Root => RouteLabel::Root,
            Self::OpenApiRoot => RouteLabel::OpenApiRoot,
            Self::OpenApiDocument(_) => RouteLabel::OpenApiDocument,
            Self::OpenApiV2 => RouteLabel::OpenApiV2,
            Self::Version => RouteLabel::Version,
            Self::Api => RouteLabel::DiscoveryApi,
            Self::Apis | Self::ApisSlash => RouteLabel::DiscoveryApis,
            Self::Group(_) => RouteLabel::DiscoveryGroup,
            Self::GroupVersion(_) | Self::CoreVersion(_) => RouteLabel::DiscoveryGroupVersion,
            Self::Healthz => RouteLabel::Healthz,
            Self::Readyz => RouteLabel::Readyz,
            Self::Metrics => RouteLabel::Metrics,
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
///
/// `/version/`, `/api/`, `/api/<v>/`, `/apis/<g>/` and `/apis/<g>/<v>/`
/// are their slash-less routes: kube-apiserver serves them with go-restful,
/// whose routes ignore a trailing slash, and clients ask for them (kr8s,
/// the generated Python client, whose paths come from kube-apiserver's own
/// Swagger). `/apis/` keeps its own, legacy-only route, and the paths
/// served by exact-match handlers upstream (`/openapi/v2/`, `/healthz/`,
/// `/metrics/` …) stay unknown.
pub(crate) fn route(path: &str) -> Option<Route<'_>> {
    let found = exact_route(path);
    if found.is_some() {
        return found;
    }
    let trimmed = path.strip_suffix('/')?;
    match exact_route(trimmed)? {
        r @ (Route::Version
        | Route::Api
        | Route::Group(_)
        | Route::GroupVersion(_)
        | Route::CoreVersion(_)) => Some(r),
        _ => None,
    }
}

/// The route of a path as written, slash for slash.
fn exact_route(path: &str) -> Option<Route<'_>> {
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

/// The answer to `req`, timed in `openapi_proxy_http_request_duration_seconds`
/// by route and status code. `access` is what the transport learned of the
/// request's credentials ([`access`](super::access::access)); with authentication on, a
/// route that needs them is served only when they were accepted.
///
/// Asynchronous for the one answer that may have to be made first, off the
/// worker: the merged `/openapi/v2` ([`openapi::v2`]).
pub(crate) async fn answer(state: &AppState, req: &Request<'_>, access: Access) -> Reply {
    let started = Instant::now();
    let (label, reply) = routed(state, req, access).await;
    state.metrics.request(label, reply.status.as_u16(), started.elapsed());
    reply
}

/// The answer to `req`, and the route it was answered as.
async fn routed(state: &AppState, req: &Request<'_>, access: Access) -> (RouteLabel, Reply) {
    let decoded = decode_path(req.path);
    let Some(route) = decoded.as_deref().and_then(route) else {
        return (RouteLabel::NotFound, status::not_found(req.path));
    };
    // Before anything else, as kube-apiserver authenticates before it
    // routes: a refused request learns nothing, not even the methods.
    if state.authentication.is_some() && route.needs_credentials() {
        match access {
            Access::Accepted => {}
            Access::Unavailable => return (route.label(), status::authentication_unavailable()),
            Access::Busy => return (route.label(), status::too_many_reviews()),
            Access::Open | Access::Refused => return (route.label(), status::unauthorized()),
        }
    }
    if !req.method.reads() {
        return (RouteLabel::MethodNotAllowed, status::method_not_allowed());
    }
    let reply = match route {
        Route::Root => status::root(state),
        Route::OpenApiRoot => openapi::root(req, state),
        Route::OpenApiDocument(key) => openapi::document(req, key, state),
        Route::OpenApiV2 => openapi::v2(req, state).await,
        Route::Version => openapi::version(req, state),
        Route::Api => discovery::root(req, state, true),
        Route::Apis => discovery::root(req, state, false),
        Route::ApisSlash => discovery::legacy_only(req, state, LegacyPath::Groups),
        Route::Group(group) => discovery::legacy_only(req, state, LegacyPath::Group(group)),
        Route::GroupVersion(key) | Route::CoreVersion(key) => {
            discovery::legacy_only(req, state, LegacyPath::Resources(key))
        }
        Route::Healthz => health::healthz(req),
        Route::Readyz => health::readyz(req, state),
        // Timed like any route, so a scrape shows in the next one.
        Route::Metrics => health::metrics(state),
    };
    (route.label(), reply)
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
        assert_eq!(route("/apis/apps/"), Some(Route::Group("apps")));
        assert_eq!(route("/apis/apps/v1/"), Some(Route::GroupVersion("apis/apps/v1")));
        assert_eq!(route("/apis/apps/v1//"), None);
        assert_eq!(route("/apis/apps//"), None);
        assert_eq!(route("/apis/apps/v1"), Some(Route::GroupVersion("apis/apps/v1")));
        assert_eq!(route("/apis/apps/v1/deployments"), None);
        assert_eq!(route("/apis//v1"), None);
        assert_eq!(route("/api"), Some(Route::Api));
        assert_eq!(route("/api/"), Some(Route::Api));
        assert_eq!(route("/api/v1/"), Some(Route::CoreVersion("api/v1")));
        assert_eq!(route("/api//"), None);
        assert_eq!(route("/version/"), Some(Route::Version));
        assert_eq!(route("/version//"), None);
        assert_eq!(route("/healthz/"), None);
        assert_eq!(route("/readyz/"), None);
        assert_eq!(
            route("/openapi/v3/apis/apps/v1/"),
            Some(Route::OpenApiDocument("apis/apps/v1/"))
        );
        assert_eq!(route("//"), None);
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
