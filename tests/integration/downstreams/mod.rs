//! The proxy in front of downstreams that fail, attack, or need credentials.

/// A hostile downstream next to a healthy one, against the binary: peak memory, healthy documents, SIGTERM.
mod attacks;
/// The memory budget with honest downstreams: big ones whole, refused ones refused whole and named in `/readyz`.
mod budget;
/// Downstream credentials from the pod's service account and from kubeconfigs (exec plugins too).
mod credentials;
/// The downstream fault matrix: every fault, on the OpenAPI and discovery paths, leaves the last good documents served.
mod faults;
/// TLS to downstreams (CA bundles, mutual TLS, skipping verification) and bearer tokens.
mod tls;
