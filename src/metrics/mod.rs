//! Metrics in the Prometheus text exposition format (version 0.0.4).
//!
//! The families live in a registry of the `prometheus` crate owned by one
//! [`Metrics`] (not the crate's global registry, so that every test and
//! every proxy in a test process counts on its own), grouped by what they
//! describe: the downstreams (`downstream`), the snapshot and its writer
//! (`publish`), the requests answered (`requests`), and the process itself
//! (`process`: build information and the Linux process collector), and
//! the checks of metadata requests' credentials (`authentication`). The
//! registry renders families sorted by name, series sorted by label
//! values and labels by name, so the output is stable; a labelled family
//! appears once it has a series, as with every Prometheus client.
//!
//! Only the request histogram is on the serving path (see `requests` for
//! how it stays cheap); everything else changes a few times per poll.

mod authentication;
mod downstream;
mod family;
mod front_door;
mod process;
mod publish;
mod requests;

use std::time::Duration;

use prometheus::{Registry, TextEncoder};

pub use downstream::FetchResult;
pub use requests::RouteLabel;

use authentication::Authentication;
use downstream::Downstreams;
use front_door::FrontDoor;
use publish::Publishing;
use requests::Requests;

/// All metrics of one proxy.
pub struct Metrics {
    registry: Registry,
    downstreams: Downstreams,
    publishing: Publishing,
    requests: Requests,
    front_door: FrontDoor,
    authentication: Authentication,
}

impl Default for Metrics {
    fn default() -> Self {
        let registry = Registry::new();
        let downstreams = Downstreams::new(&registry);
        let publishing = Publishing::new(&registry);
        let requests = Requests::new(&registry);
        let front_door = FrontDoor::new(&registry);
        let authentication = Authentication::new(&registry);
        process::register(&registry);
        Self { registry, downstreams, publishing, requests, front_door, authentication }
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Counts one request the front door passed on (or answered for its
    /// downstream), with the time to the response head when it reached one.
    pub fn front_door(
        &self,
        downstream: &str,
        verb: &'static str,
        code: u16,
        took: Option<Duration>,
    ) {
        self.front_door.answered(downstream, verb, code, took);
    }

    /// One more (`delta` 1) or one fewer (-1) request being passed on.
    pub fn front_door_inflight(&self, long_running: bool, delta: i64) {
        self.front_door.inflight(long_running, delta);
    }

    /// Counts one request the front door refused (429) by the bound that
    /// refused it (`max_requests_inflight`, `max_long_running_requests`,
    /// their per-client shares `max_requests_inflight_per_client` and
    /// `max_long_running_requests_per_client`, `max_streams_per_connection`).
    pub fn front_door_refused(&self, reason: &'static str) {
        self.front_door.refused(reason);
    }

    /// Counts one metadata request whose bearer token was checked: its
    /// `result` (`accepted`, `refused`, `error`, `busy`) and `cache` (`hit`,
    /// `miss`, `none`).
    pub fn metadata_authentication(&self, result: &'static str, cache: &'static str) {
        self.authentication.outcome(result, cache);
    }

    /// Counts one fetch of `document` (`root`, `document`, `v2`, …).
    pub fn fetch(&self, downstream: &str, document: &'static str, result: FetchResult) {
        self.downstreams.fetch(downstream, document, result);
    }

    /// Counts one failure of a poll, by reason.
    pub fn error(&self, downstream: &str, reason: &'static str) {
        self.downstreams.error(downstream, reason);
    }

    /// Records the outcome of a whole poll.
    pub fn poll_outcome(&self, downstream: &str, ok: bool) {
        self.downstreams.poll_outcome(downstream, ok);
    }

    /// Records the documents a downstream currently contributes.
    pub fn downstream_documents(&self, downstream: &str, documents: usize) {
        self.downstreams.documents(downstream, documents);
    }

    /// Records the memory budget chosen at start.
    pub fn memory_budget(&self, bytes: usize) {
        self.downstreams.budget(bytes);
    }

    /// Records the bytes of the memory budget a downstream holds.
    pub fn downstream_memory(&self, downstream: &str, bytes: usize) {
        self.downstreams.memory(downstream, bytes);
    }

    /// Records time spent converting a downstream's Swagger 2.0 document.
    pub fn conversion(&self, downstream: &str, took: Duration) {
        self.downstreams.conversion(downstream, took);
    }

    /// Records how many conversions the shared cache holds after a prune:
    /// it must stay near the number of documents served, however often a
    /// downstream's content changes.
    pub fn conversion_cache(&self, entries: usize) {
        self.publishing.conversion_cache(entries);
    }

    /// Records a published snapshot. Its build time is in
    /// [`rebuild`](Self::rebuild), which times every rebuild, published or
    /// not.
    pub fn snapshot(&self, generation: u64, documents: usize) {
        self.publishing.snapshot(generation, documents);
    }

    /// Records a rebuild of the merged model (OpenAPI root and discovery):
    /// how long it took, and whether the aggregated discovery document
    /// changed (upstream's `aggregator_discovery_aggregation_count_total`
    /// counts regenerations of that document).
    pub fn rebuild(&self, took: Duration, discovery_changed: bool) {
        self.publishing.rebuild(took, discovery_changed);
    }

    /// Counts a document key published by two downstreams.
    pub fn conflict(&self) {
        self.publishing.conflict();
    }

    /// Counts a group-version document not served because another
    /// downstream owns the group-version in discovery (issue 30).
    pub fn owner_mismatch(&self) {
        self.publishing.mismatch();
    }

    /// Records one answered request: its route, status code, and the time
    /// its answer took to prepare.
    pub fn request(&self, route: RouteLabel, status: u16, took: Duration) {
        self.requests.observe(route, status, took);
    }

    /// Counts a protobuf rendition asked for and not held yet (`made`,
    /// `unencodable`, `over_limit`), with what the renditions now hold.
    pub fn protobuf_rendition(&self, result: &'static str, held: usize) {
        self.publishing.protobuf_rendition(result, held);
    }

    /// Counts an uncompressed answer of a document kept gzipped only.
    pub fn identity_body(&self, origin: crate::body::identity::PlainOrigin) {
        self.requests.identity(Some(origin));
    }

    /// Counts a refused uncompressed answer (a 429 or a 500).
    pub fn identity_refused(&self) {
        self.requests.identity(None);
    }

    /// The Prometheus text exposition of every metric.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        // The registry leaves out families without series, the only
        // thing the encoder refuses; an error would be a bug of the
        // crate, and what was written so far is still worth serving.
        if let Err(e) = TextEncoder::new().encode_utf8(&self.registry.gather(), &mut out) {
            tracing::error!(error = %e, "the metrics exposition is incomplete");
        }
        out
    }
}

#[cfg(test)]
mod tests;
