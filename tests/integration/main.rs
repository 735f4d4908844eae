//! The integration test binary: one binary for all integration tests
//! (faster to build and link than one per file). Each module below is one
//! topic; shared support code lives in `common/`.

/// A hostile downstream next to a healthy one, against the binary: peak memory, healthy documents, SIGTERM.
mod attacks;
/// `openapi-proxy check`: passes on conformant servers, each rule fails on a server breaking it.
mod check;
/// The `convert` command as a user runs it.
mod cli;
/// Hostile and careless clients: odd headers and paths, other methods, slow and many clients.
mod clients;
/// The fake Kubernetes API server (common/cluster.rs) against the real kubectl, directly: get, create, apply, delete, watch, logs, exec.
mod cluster;
/// Test support: fake servers, helpers, the OpenAPI validator harness.
mod common;
/// Downstream credentials from the pod's service account and from kubeconfigs (exec plugins too).
mod credentials;
/// deploy/: manifests validated by kubectl through the proxy, the image's and manifests' configurations.
mod deploy;
/// Discovery (aggregated and legacy) through the proxy, black-box, in front of fake downstreams.
mod discovery;
/// The downstream fault matrix: every fault, on the OpenAPI and discovery paths, leaves the last good documents served.
mod faults;
/// HTTP/1.1 framing on every transport: pipelined HEADs and GETs, `Connection: close`, idle connections at the limit.
mod framing;
/// The front door: requests that are not metadata reach their group-version's owner, with the client's credentials.
mod front_door;
/// kubectl 1.32 through the front door, against two fake clusters, as directly; a thousand watches in bounded memory.
mod front_door_kubectl;
/// Committed fixtures and their expected conversions, byte for byte.
mod golden;
/// The real kubectl sees the same API through the proxy as against the downstream directly.
mod kubectl;
/// The repository's shape: rooms by layer without import cycles, Markdown names that resolve.
mod layout;
/// `/metrics` of the real binary: a valid text exposition, every family typed, requests timed by route and code.
mod metrics;
/// Generated Swagger 2.0 documents: every node reaches the output or is reported by a note.
mod no_silent_drop;
/// The proxy's OpenAPI v3 surface, black-box, in front of fake downstreams.
mod openapi_v3;
/// Generated documents: no panics, determinism, `$ref` closure.
mod properties;
/// Serving HTTPS: trust, plain HTTP refused, kubectl, bad files, certificate rotation.
mod serving_tls;
/// The converter and splitter on real Kubernetes documents (`scripts/testdata.sh`).
mod shared_data;
/// swagger2openapi's conversion suite: each case valid per swagger-parser, or refused by name.
mod swagger2openapi;
/// TLS to downstreams (CA bundles, mutual TLS, skipping verification) and bearer tokens.
mod tls;
/// Plain HTTP's two transports, the direct writer and actix-http: same answers, HTTP/1.1 framing, hand-over.
mod transports;
/// The OpenAPI validator harness itself: it runs, and it cannot pass vacuously.
mod validators;
