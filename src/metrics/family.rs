//! Creating a metric family and registering it, in one step.
//!
//! Names, help texts, label names and buckets are constants of this
//! module's siblings, so a failure here (an invalid or duplicate name,
//! buckets out of order) is a bug that every test building a
//! [`Metrics`](super::Metrics) trips over, never something a request or a
//! downstream can cause: hence `expect`, not a `Result` that every caller
//! would have to carry.

use prometheus::core::Collector;
use prometheus::{
    GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry,
};

/// Upper bounds (seconds) for work done once per poll or per change:
/// converting a downstream's Swagger 2.0 document, rebuilding the merged
/// model. From a millisecond (a small group) to ten seconds (well past the
/// 100 ms the rebuild is meant to stay under, so a regression shows).
pub(super) const WORK_BUCKETS: [f64; 13] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Registers `family` in `registry` and hands it back for updating.
pub(super) fn register<C: Collector + Clone + 'static>(registry: &Registry, family: C) -> C {
    registry
        .register(Box::new(family.clone()))
        .expect("metric family names are constants, registered once each");
    family
}

/// A counter without labels.
pub(super) fn counter(registry: &Registry, name: &str, help: &str) -> IntCounter {
    register(registry, IntCounter::new(name, help).expect("a valid counter name"))
}

/// A counter with `labels`.
pub(super) fn counter_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> IntCounterVec {
    register(registry, IntCounterVec::new(Opts::new(name, help), labels).expect("a valid counter"))
}

/// An integer gauge without labels.
pub(super) fn gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    register(registry, IntGauge::new(name, help).expect("a valid gauge name"))
}

/// An integer gauge with `labels`.
pub(super) fn gauge_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> IntGaugeVec {
    register(registry, IntGaugeVec::new(Opts::new(name, help), labels).expect("a valid gauge"))
}

/// A floating-point gauge with `labels` (Unix timestamps with fractions).
pub(super) fn float_gauge_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> GaugeVec {
    register(registry, GaugeVec::new(Opts::new(name, help), labels).expect("a valid gauge"))
}

/// A histogram without labels.
pub(super) fn histogram(registry: &Registry, name: &str, help: &str, buckets: &[f64]) -> Histogram {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    register(registry, Histogram::with_opts(opts).expect("a valid histogram"))
}

/// A histogram with `labels`.
pub(super) fn histogram_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: &[f64],
) -> HistogramVec {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    register(registry, HistogramVec::new(opts, labels).expect("a valid histogram"))
}

/// A non-negative count as a gauge value (saturating: a count past
/// `i64::MAX` cannot happen in memory, but is not worth a panic either).
pub(super) fn count(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}
