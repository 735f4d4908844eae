//! The one family on the serving path:
//! `openapi_proxy_http_request_duration_seconds{route,code}`.
//!
//! Serving is measured against nginx, so recording a request must cost
//! next to nothing: the route is an enum (an array index, not a string to
//! hash), and the child for each route and common status code is looked up
//! in the family once, on its first request, then kept in a `OnceLock`.
//! A request then costs one `OnceLock` read and the histogram's own few
//! atomic adds; only an unusual status code goes through the family's
//! locked map.
//!
//! There is no separate request counter: with the same `route` and `code`
//! labels it would only repeat this histogram's `_count`, at the price of
//! one more atomic add per request. (kube-apiserver keeps
//! `apiserver_request_total` beside `apiserver_request_duration_seconds`
//! because their labels differ: only the counter has `code`.)

use std::sync::OnceLock;
use std::time::Duration;

use prometheus::{Histogram, HistogramVec, IntCounter, Registry};

use crate::body::identity::PlainOrigin;

use super::family;

/// Upper bounds (seconds) of the request buckets. The handlers only look
/// up prepared bytes, so most answers take microseconds; the top buckets
/// catch `/metrics` itself and a machine under pressure.
pub(super) const REQUEST_BUCKETS: [f64; 12] =
    [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1];

/// The `route` label: what a request was answered as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteLabel {
    /// `/`.
    Root,
    /// `/openapi/v3`.
    OpenApiRoot,
    /// `/openapi/v3/<key>`.
    OpenApiDocument,
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/version`.
    Version,
    /// `/api`.
    DiscoveryApi,
    /// `/apis` and `/apis/`.
    DiscoveryApis,
    /// `/apis/<group>`.
    DiscoveryGroup,
    /// `/apis/<group>/<version>` and `/api/<version>`.
    DiscoveryGroupVersion,
    /// `/healthz` and `/livez`.
    Healthz,
    /// `/readyz`.
    Readyz,
    /// `/metrics`.
    Metrics,
    /// A path nothing serves.
    NotFound,
    /// A known path with a method other than GET or HEAD.
    MethodNotAllowed,
}

impl RouteLabel {
    /// Every route, in declaration order (`self as usize` indexes it).
    const ALL: [Self; 14] = [
        Self::Root,
        Self::OpenApiRoot,
        Self::OpenApiDocument,
        Self::OpenApiV2,
        Self::Version,
        Self::DiscoveryApi,
        Self::DiscoveryApis,
        Self::DiscoveryGroup,
        Self::DiscoveryGroupVersion,
        Self::Healthz,
        Self::Readyz,
        Self::Metrics,
        Self::NotFound,
        Self::MethodNotAllowed,
    ];

    /// The label value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Root => "root",
            Self::OpenApiRoot => "openapi_v3_root",
            Self::OpenApiDocument => "openapi_v3_document",
            Self::OpenApiV2 => "openapi_v2",
            Self::Version => "version",
            Self::DiscoveryApi => "discovery_api",
            Self::DiscoveryApis => "discovery_apis",
            Self::DiscoveryGroup => "discovery_group",
            Self::DiscoveryGroupVersion => "discovery_group_version",
            Self::Healthz => "healthz",
            Self::Readyz => "readyz",
            Self::Metrics => "metrics",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
        }
    }
}

/// The status codes the router answers with, each with a kept child per
/// route; any other code is still recorded, through the family's map.
const COMMON_CODES: [(u16, &str); 8] = [
    (200, "200"),
    (301, "301"),
    (304, "304"),
    (404, "404"),
    (405, "405"),
    (406, "406"),
    (429, "429"),
    (503, "503"),
];

/// The request histogram and its kept children, and how plain answers
/// of documents kept gzipped only were made.
pub(super) struct Requests {
    duration: HistogramVec,
    children: [[OnceLock<Histogram>; COMMON_CODES.len()]; RouteLabel::ALL.len()],
    /// `openapi_proxy_identity_bodies_total{result}`: `kept`, `inflated`,
    /// `refused`, `streamed`, in that order.
    identity: [IntCounter; 4],
}

impl Requests {
    /// Registers the family in `registry`.
    pub(super) fn new(registry: &Registry) -> Self {
        Self {
            duration: family::histogram_vec(
                registry,
                "openapi_proxy_http_request_duration_seconds",
                "Time from routing a request to its answer being ready to write, by route and \
                 status code (the write itself, paced by the client, is not included).",
                &["route", "code"],
                &REQUEST_BUCKETS,
            ),
            children: Default::default(),
            identity: {
                let family = family::counter_vec(
                    registry,
                    "openapi_proxy_identity_bodies_total",
                    "Uncompressed answers of documents kept gzipped only, by result: kept (inflated \
                     earlier, reused), inflated (for this answer), streamed (inflated as written, \
                     a body too large to inflate whole) or refused (429: too many being written \
                     at once).",
                    &["result"],
                );
                ["kept", "inflated", "refused", "streamed"].map(|r| family.with_label_values(&[r]))
            },
        }
    }

    /// Counts an uncompressed answer of a document; one whose plain bytes
    /// are held is not counted (every small body is one).
    pub(super) fn identity(&self, origin: Option<PlainOrigin>) {
        let at = match origin {
            Some(PlainOrigin::Held) => return,
            Some(PlainOrigin::Kept) => 0,
            Some(PlainOrigin::Inflated) => 1,
            Some(PlainOrigin::Streamed) => 3,
            None => 2,
        };
        self.identity[at].inc();
    }

    /// Records one answered request.
    pub(super) fn observe(&self, route: RouteLabel, code: u16, took: Duration) {
        let seconds = took.as_secs_f64();
        // A route missing from `ALL` (a bug the tests look for) and an
        // unusual code both fall back to the family's map: slower, never
        // lost.
        let kept = COMMON_CODES.iter().position(|(c, _)| *c == code).and_then(|at| {
            let slot = self.children.get(route as usize)?.get(at)?;
            Some((slot, COMMON_CODES[at].1))
        });
        match kept {
            Some((slot, code)) => slot
                .get_or_init(|| self.duration.with_label_values(&[route.as_str(), code]))
                .observe(seconds),
            None => {
                let mut buf = itoa::Buffer::new();
                let code = buf.format(code);
                self.duration.with_label_values(&[route.as_str(), code]).observe(seconds);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_indexes_its_own_row() {
        for (i, route) in RouteLabel::ALL.iter().enumerate() {
            assert_eq!(*route as usize, i, "{route:?} is out of place in RouteLabel::ALL");
        }
    }

    #[test]
    fn buckets_increase() {
        assert!(REQUEST_BUCKETS.windows(2).all(|w| w[0] < w[1]));
    }
}
