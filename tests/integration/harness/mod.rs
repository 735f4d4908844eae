//! Tests of the test harness, not of the product: the fakes and validators
//! other tests rely on must be right, or those tests prove nothing.

/// The fake Kubernetes API server (common/cluster.rs) against the real kubectl, directly: get, create, apply, delete, watch, logs, exec.
pub mod fake_cluster;
/// The OpenAPI validator harness itself: it runs, and it cannot pass vacuously.
mod validators;
