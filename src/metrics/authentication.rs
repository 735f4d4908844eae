//! Delegated authentication of metadata requests
//! (`metadataAuthentication: delegated`):
//! `openapi_proxy_metadata_authentications_total{result,cache}`, one per
//! metadata request that needed credentials. `result`: `accepted`,
//! `refused` (401), `error` (the downstream could not say: 503) or `busy`
//! (too many reviews in flight: 429);
//! `cache`: `hit` (an answer remembered, or shared with a request already
//! asking), `miss` (this request's review) or `none` (no bearer token:
//! refused without asking).

use std::sync::OnceLock;

use prometheus::{IntCounter, IntCounterVec, Registry};

use super::family;

const RESULTS: [&str; 4] = ["accepted", "refused", "error", "busy"];
const CACHES: [&str; 3] = ["hit", "miss", "none"];

/// The authentication family.
pub(super) struct Authentication {
    outcomes: IntCounterVec,
    /// Each series, looked up in the family on its first count and kept
    /// (every metadata request counts one, as the request histogram does).
    children: [[OnceLock<IntCounter>; CACHES.len()]; RESULTS.len()],
}

impl Authentication {
    pub(super) fn new(registry: &Registry) -> Self {
        Self {
            outcomes: family::counter_vec(
                registry,
                "openapi_proxy_metadata_authentications_total",
                "Metadata requests whose bearer token was checked, by result and by whether a review was made for it",
                &["result", "cache"],
            ),
            children: Default::default(),
        }
    }

    /// Counts one; a `result` or `cache` not of the lists is counted under
    /// its own label through the family.
    pub(super) fn outcome(&self, result: &'static str, cache: &'static str) {
        let r = RESULTS.iter().position(|x| *x == result);
        let c = CACHES.iter().position(|x| *x == cache);
        match r.zip(c).and_then(|(r, c)| self.children.get(r)?.get(c)) {
            Some(child) => {
                child.get_or_init(|| self.outcomes.with_label_values(&[result, cache])).inc()
            }
            None => self.outcomes.with_label_values(&[result, cache]).inc(),
        }
    }
}
