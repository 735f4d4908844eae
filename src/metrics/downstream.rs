//! The downstream families: what each poll asked, what failed, and what
//! each downstream contributes now.
//!
//! All of them are labelled by `downstream` (the configured name) and
//! change a few times per poll interval, never per served request.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prometheus::{GaugeVec, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Registry};

use super::family::{self, WORK_BUCKETS};

/// What a fetch from a downstream ended in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FetchResult {
    /// 200, new content.
    Ok,
    /// 304, unchanged.
    NotModified,
    /// 404 or 406: the downstream does not serve this document (no
    /// `/openapi/v3`, no aggregated discovery). A fact about the
    /// downstream, not a failure: an alert on `error` must mean errors.
    NotServed,
    /// Anything else: refused, timeout, bad status, bad body.
    Error,
}

impl FetchResult {
    /// The `result` label value.
    fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::NotModified => "not_modified",
            Self::NotServed => "not_served",
            Self::Error => "error",
        }
    }
}

/// The per-downstream families.
#[derive(Clone)]
pub(super) struct Downstreams {
    fetches: IntCounterVec,
    errors: IntCounterVec,
    up: IntGaugeVec,
    consecutive_failures: IntGaugeVec,
    last_success: GaugeVec,
    documents: IntGaugeVec,
    memory: IntGaugeVec,
    budget: IntGauge,
    conversion: HistogramVec,
}

impl Downstreams {
    /// Registers the families in `registry`.
    pub(super) fn new(registry: &Registry) -> Self {
        Self {
            fetches: family::counter_vec(
                registry,
                "openapi_proxy_downstream_fetches_total",
                "Requests made to downstream servers, by document and result.",
                &["downstream", "document", "result"],
            ),
            errors: family::counter_vec(
                registry,
                "openapi_proxy_downstream_errors_total",
                "Failed polls of downstream servers, by reason (a poll counts once per reason).",
                &["downstream", "reason"],
            ),
            up: family::gauge_vec(
                registry,
                "openapi_proxy_downstream_up",
                "1 when the last poll of the downstream succeeded.",
                &["downstream"],
            ),
            consecutive_failures: family::gauge_vec(
                registry,
                "openapi_proxy_downstream_consecutive_failures",
                "Failed polls since the last success.",
                &["downstream"],
            ),
            last_success: family::float_gauge_vec(
                registry,
                "openapi_proxy_downstream_last_success_timestamp_seconds",
                "Unix time of the last successful poll.",
                &["downstream"],
            ),
            documents: family::gauge_vec(
                registry,
                "openapi_proxy_downstream_documents",
                "OpenAPI v3 documents the downstream currently contributes (last good).",
                &["downstream"],
            ),
            memory: family::gauge_vec(
                registry,
                "openapi_proxy_downstream_memory_bytes",
                "Bytes of the memory budget the downstream's last accepted round holds.",
                &["downstream"],
            ),
            budget: family::gauge(
                registry,
                "openapi_proxy_memory_budget_bytes",
                "The memory budget the downstreams' documents and discovery share.",
            ),
            conversion: family::histogram_vec(
                registry,
                "openapi_proxy_conversion_seconds",
                "Time spent converting a downstream's Swagger 2.0 document to OpenAPI 3.0.",
                &["downstream"],
                &WORK_BUCKETS,
            ),
        }
    }

    pub(super) fn fetch(&self, downstream: &str, document: &str, result: FetchResult) {
        self.fetches.with_label_values(&[downstream, document, result.as_str()]).inc();
    }

    pub(super) fn error(&self, downstream: &str, reason: &str) {
        self.errors.with_label_values(&[downstream, reason]).inc();
    }

    pub(super) fn poll_outcome(&self, downstream: &str, ok: bool) {
        let labels = [downstream];
        self.up.with_label_values(&labels).set(i64::from(ok));
        let failures = self.consecutive_failures.with_label_values(&labels);
        if ok {
            failures.set(0);
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
            self.last_success.with_label_values(&labels).set(now.as_secs_f64());
        } else {
            failures.inc();
        }
        // Every polled downstream has a documents series, 0 until its
        // first good poll, so a dashboard shows a failing downstream's
        // empty contribution rather than no line at all.
        self.documents.with_label_values(&labels);
    }

    pub(super) fn budget(&self, bytes: usize) {
        self.budget.set(family::count(bytes));
    }

    pub(super) fn memory(&self, downstream: &str, bytes: usize) {
        self.memory.with_label_values(&[downstream]).set(family::count(bytes));
    }

    pub(super) fn documents(&self, downstream: &str, documents: usize) {
        self.documents.with_label_values(&[downstream]).set(family::count(documents));
    }

    pub(super) fn conversion(&self, downstream: &str, took: Duration) {
        self.conversion.with_label_values(&[downstream]).observe(took.as_secs_f64());
    }
}
