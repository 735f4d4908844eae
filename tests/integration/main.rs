//! The integration test binary: one binary for all integration tests
//! (faster to build and link than one per file), grouped by area. Each
//! area's `mod.rs` lists its modules with a line on what each tests; shared
//! support code lives in `common/`.
//!
//! Run one area or one module with a filter:
//! `cargo test --test integration serving::` or `… serving::framing::`.

/// `openapi-proxy convert` and `check` as a user runs them.
mod commands;
/// Test support: fake servers, helpers, the pinned kubectl, the OpenAPI validator harness.
mod common;
/// Swagger 2.0 → OpenAPI 3.0 on committed fixtures, generated documents and real Kubernetes documents.
mod conversion;
/// What downstreams can do to the proxy: faults, hostile servers, TLS, credentials.
mod downstreams;
/// The front door: requests that are not metadata reach their group-version's owner.
mod front_door;
/// The test harness itself, apart from the product: the fake cluster against kubectl, the validators.
mod harness;
/// The repository's shape and what it ships: source layout, Markdown names, `deploy/`.
mod repository;
/// What the proxy serves and how: OpenAPI v3, discovery, transports, TLS, metrics, clients.
mod serving;
