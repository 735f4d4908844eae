//! The publishing families: the snapshot being served, how long the single
//! writer takes to rebuild it, and what it had to resolve on the way.
//!
//! One histogram times a rebuild. There used to be two timers over the
//! same work (a summary for published snapshots and a histogram for every
//! rebuild) that disagreed only by the rebuilds whose result equalled the
//! snapshot already served; the published ones are counted by
//! `openapi_proxy_snapshot_generation` anyway.

use std::time::Duration;

use prometheus::{Histogram, IntCounter, IntCounterVec, IntGauge, Registry};

use super::family::{self, WORK_BUCKETS};

/// The families of the snapshot and its writer.
#[derive(Clone)]
pub(super) struct Publishing {
    generation: IntGauge,
    documents: IntGauge,
    rebuild: Histogram,
    discovery_aggregations: IntCounter,
    conflicts: IntCounter,
    mismatches: IntCounter,
    cache_entries: IntGauge,
    protobuf_bytes: IntGauge,
    protobuf_renditions: IntCounterVec,
}

impl Publishing {
    /// Registers the families in `registry`.
    pub(super) fn new(registry: &Registry) -> Self {
        Self {
            generation: family::gauge(
                registry,
                "openapi_proxy_snapshot_generation",
                "Generation of the snapshot being served.",
            ),
            documents: family::gauge(
                registry,
                "openapi_proxy_snapshot_documents",
                "OpenAPI v3 documents in the snapshot being served.",
            ),
            rebuild: family::histogram(
                registry,
                "openapi_proxy_rebuild_duration_seconds",
                "Time to rebuild the merged OpenAPI and discovery model after a downstream \
                 changed (taking the contributions, building the next snapshot, deciding \
                 whether it differs from the one served), whether or not it differed. \
                 Excludes waiting for a blocking thread to run the build and for the \
                 builder task to be scheduled again after it.",
                &WORK_BUCKETS,
            ),
            discovery_aggregations: family::counter(
                registry,
                "aggregator_discovery_aggregation_count_total",
                "Times the aggregated discovery document was regenerated (kube-apiserver's name).",
            ),
            conflicts: family::counter(
                registry,
                "openapi_proxy_key_conflicts_total",
                "Document keys published by more than one downstream (the higher priority wins).",
            ),
            mismatches: family::counter(
                registry,
                "openapi_proxy_owner_mismatches_total",
                "Group-version OpenAPI documents not served because discovery takes the \
                 group-version from another downstream (counted each time one appears).",
            ),
            cache_entries: family::gauge(
                registry,
                "openapi_proxy_conversion_cache_entries",
                "Converted documents kept for reuse (pruned to what is still served).",
            ),
            protobuf_bytes: family::gauge(
                registry,
                "openapi_proxy_protobuf_rendition_bytes",
                "Bytes held by the protobuf renditions of OpenAPI documents (at most an \
                 eighth of the memory budget), as of the last rendition made or refused.",
            ),
            protobuf_renditions: {
                let family = family::counter_vec(
                    registry,
                    "openapi_proxy_protobuf_renditions_total",
                    "Protobuf renditions of OpenAPI documents asked for and not yet held: \
                     made, unencodable (the JSON holds what gnostic refuses), over_limit \
                     (their memory bound is reached; protobuf is not offered for the \
                     document until it fits).",
                    &["result"],
                );
                for result in ["made", "unencodable", "over_limit"] {
                    family.with_label_values(&[result]);
                }
                family
            },
        }
    }

    pub(super) fn snapshot(&self, generation: u64, documents: usize) {
        self.generation.set(family::count(generation));
        self.documents.set(family::count(documents));
    }

    pub(super) fn rebuild(&self, took: Duration, discovery_changed: bool) {
        self.rebuild.observe(took.as_secs_f64());
        if discovery_changed {
            self.discovery_aggregations.inc();
        }
    }

    pub(super) fn conflict(&self) {
        self.conflicts.inc();
    }

    pub(super) fn mismatch(&self) {
        self.mismatches.inc();
    }

    pub(super) fn protobuf_rendition(&self, result: &'static str, held: usize) {
        self.protobuf_renditions.with_label_values(&[result]).inc();
        self.protobuf_bytes.set(family::count(held));
    }

    pub(super) fn conversion_cache(&self, entries: usize) {
        self.cache_entries.set(family::count(entries));
    }
}
