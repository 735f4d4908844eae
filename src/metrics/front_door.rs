//! The front door's families: what was passed on, to which downstream, and
//! how it went.
//!
//! - `openapi_proxy_front_door_requests_total{downstream,verb,code}`:
//!   every passed-on request once its downstream answered (or the proxy
//!   answered for it: `downstream=""` for a group-version no downstream
//!   owns, `code` 429 past `maxRequestsInflight`, 503 when the owner
//!   cannot be reached);
//! - `openapi_proxy_front_door_request_duration_seconds{downstream,verb}`:
//!   time to the downstream's response head (a watch's whole life would
//!   say nothing);
//! - `openapi_proxy_front_door_inflight{class}`: requests being passed on
//!   now, `short` (the ones `maxRequestsInflight` bounds) or
//!   `long_running` (watches, logs, upgraded connections);
//! - `openapi_proxy_front_door_refused_total{reason}`: requests refused
//!   with 429 by a bound, `max_requests_inflight`,
//!   `max_long_running_requests`, one client's share of either
//!   (`max_requests_inflight_per_client`,
//!   `max_long_running_requests_per_client`) or
//!   `max_streams_per_connection` (the requests family's 429 does not say
//!   which).

use std::time::Duration;

use prometheus::{HistogramVec, IntCounterVec, IntGaugeVec, Registry};

use super::family;

/// From a fast GET (a millisecond) to a large list (tens of seconds).
const PASS_BUCKETS: [f64; 14] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0];

/// The front door's families.
pub(super) struct FrontDoor {
    requests: IntCounterVec,
    duration: HistogramVec,
    inflight: IntGaugeVec,
    refused: IntCounterVec,
}

impl FrontDoor {
    pub(super) fn new(registry: &Registry) -> Self {
        Self {
            requests: family::counter_vec(
                registry,
                "openapi_proxy_front_door_requests_total",
                "Requests the front door passed on, by downstream, verb and status code",
                &["downstream", "verb", "code"],
            ),
            duration: family::histogram_vec(
                registry,
                "openapi_proxy_front_door_request_duration_seconds",
                "Time from a passed-on request to its downstream's response head",
                &["downstream", "verb"],
                &PASS_BUCKETS,
            ),
            inflight: family::gauge_vec(
                registry,
                "openapi_proxy_front_door_inflight",
                "Requests being passed on now: short ones (bounded by maxRequestsInflight) and long-running ones",
                &["class"],
            ),
            refused: family::counter_vec(
                registry,
                "openapi_proxy_front_door_refused_total",
                "Requests the front door refused with 429, by the bound that refused them",
                &["reason"],
            ),
        }
    }

    pub(super) fn answered(&self, downstream: &str, verb: &str, code: u16, took: Option<Duration>) {
        let mut buf = itoa::Buffer::new();
        self.requests.with_label_values(&[downstream, verb, buf.format(code)]).inc();
        if let Some(took) = took {
            self.duration.with_label_values(&[downstream, verb]).observe(took.as_secs_f64());
        }
    }

    pub(super) fn inflight(&self, long_running: bool, delta: i64) {
        let class = if long_running { "long_running" } else { "short" };
        self.inflight.with_label_values(&[class]).add(delta);
    }

    pub(super) fn refused(&self, reason: &'static str) {
        self.refused.with_label_values(&[reason]).inc();
    }
}
