//! What the proxy serves to clients, black-box, in front of fake downstreams.

/// Hostile and careless clients: odd headers and paths, other methods, slow and many clients.
mod clients;
/// Discovery (aggregated and legacy) through the proxy.
mod discovery;
/// Discovery's YAML and protobuf forms: every path, decoded independently, says what its JSON says.
mod discovery_forms;
/// HTTP/1.1 framing on every transport: pipelined HEADs and GETs, `Connection: close`, idle connections at the limit.
mod framing;
/// The real kubectl sees the same API through the proxy as against the downstream directly.
mod kubectl;
/// `/metrics` of the real binary: a valid text exposition, every family typed, requests timed by route and code.
mod metrics;
/// kubectl 1.27, 1.28 and 1.33, which read `/openapi/v2` in protobuf, through the proxy.
mod old_clients;
/// The one `/openapi/v2` of all downstreams: merged, a v3-only downstream converted down.
mod openapi_v2;
/// The proxy's OpenAPI v3 surface.
mod openapi_v3;
/// The protobuf renditions of the OpenAPI documents, decoded by protoc and compared with the JSON.
mod protobuf;
/// The generated Python client and kr8s through the proxy.
mod python_clients;
/// Serving HTTPS: trust, plain HTTP refused, kubectl, bad files, certificate rotation.
mod tls;
/// Plain HTTP's two transports, the direct writer and actix-http: same answers, HTTP/1.1 framing, hand-over.
mod transports;
