//! Delegated authentication of metadata requests
//! (`metadataAuthentication: delegated`):
//! `openapi_proxy_metadata_authentications_total{result,cache}`, one per
//! metadata request that needed credentials. `result`: `accepted`,
//! `refused` (401) or `error` (the downstream could not say: 503);
//! `cache`: `hit` (an answer remembered, or shared with a request already
//! asking), `miss` (this request's review) or `none` (no bearer token:
//! refused without asking).

use prometheus::{IntCounterVec, Registry};

use super::family;

/// The authentication family.
pub(super) struct Authentication {
    outcomes: IntCounterVec,
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
        }
    }

    pub(super) fn outcome(&self, result: &'static str, cache: &'static str) {
        self.outcomes.with_label_values(&[result, cache]).inc();
    }
}
