//! Support code shared by the integration tests.

/// A fake Kubernetes API server on raw TCP: discovery, an in-memory store, watch, logs, exec.
pub mod cluster;
/// A downstream that misbehaves below HTTP (refuses, stalls, streams forever, HTTP/1.0).
pub mod fault;
/// HTTP/1.1 responses read strictly off a plain or TLS connection.
pub mod http1;
/// Structural JSON comparison with allow-lists.
pub mod json_diff;
/// The pinned kubectl.
pub mod kubectl;
/// Capturing the proxy's log lines per test.
pub mod logs;
/// A child process's peak memory and bytes read, from `/proc`.
pub mod memory;
/// `protoc --decode` with the upstream `.proto` files: the independent decoder.
pub mod protoc;
/// The proxy under test and fake downstreams.
pub mod proxy;
/// HTTP/1.1 by hand over plain sockets.
pub mod raw;
/// `$ref` closure checks.
pub mod refs;
/// `serve` as a process, its JSON log captured.
pub mod serve;
/// Reading the real Kubernetes test data (`scripts/testdata.sh`).
pub mod shared;
/// Certificates made at test time and HTTPS fake downstreams.
pub mod tls;
/// openapi-spec-validator and swagger-parser, installed on first use.
pub mod validators;
