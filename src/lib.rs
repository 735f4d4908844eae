//! openapi-proxy publishes Kubernetes API metadata — OpenAPI v3 per
//! group-version and aggregated discovery — for one or several
//! Kubernetes-style API servers.
//!
//! The modules are rooms by layer, and the arrows point one way (down this
//! list, never back up); `ARCHITECTURE.md` walks through the same picture:
//!
//! - [`cli`], `wiring` — the edges: commands, and starting the pollers,
//!   the writer and the server.
//! - `serve` — the connection stack: the actix server, the direct writer,
//!   the stall guard, the lockstep, connection slots, TLS serving. It hands
//!   every request to `http` or to `front_door`.
//! - `front_door` — requests no metadata route serves, passed on to the
//!   downstream that owns them.
//! - `http` — the router and its transport-neutral handlers. Handlers only
//!   look up.
//! - `downstream` — one poll loop per downstream server (I/O only), and
//!   `check` — the conformance rules as a command; both reach other servers
//!   through `outbound` (client, TLS, tokens, credentials, bounded bodies).
//! - `export` — the `export` command's library side: the documents of
//!   files and servers joined, laid out as offline validators read them
//!   (standalone JSON Schemas per kind among them).
//! - `publish` — the immutable snapshot, its store, and the single writer
//!   loop.
//! - `openapi` — Swagger 2.0 → OpenAPI 3.0 conversion, splitting per key,
//!   the one pipeline from v2 bytes to per-key v3 documents, and the
//!   protobuf renditions of both versions;
//!   `discovery` — its wire types, legacy ↔ aggregated, merging.
//! - `body` — response bodies prepared once (bytes, gzip, SHA-512, ETag).
//! - `json` — the borrowed tree, parsing, pointers, `$ref`s; `wire` — the
//!   Kubernetes vocabulary (keys, group-versions, media types, negotiation).
//! - Beside the layers: `config` (file + flags → validated configuration,
//!   read by the edges), `metrics` (the Prometheus exposition) and
//!   [`demo`] (the demo's built-in downstream servers, which the
//!   integration tests script as fakes too).
//! - `testkit` — synthetic fleets, CRD generators and where the test data
//!   is: compiled only for tests and under the dev-only feature `testkit`
//!   (which benches, examples and integration tests get through the
//!   crate's dev-dependency on itself), so none of it is in the binary.
//!
//! Converting, splitting, merging and negotiating are pure functions from
//! values to values, which is what lets the test suite run them on real
//! Kubernetes documents, the benches time them, and the fuzzers hammer
//! them. Every module is private; the list below is what tests, benches,
//! fuzz targets, examples and the binary use, and nothing more.

mod body;
pub mod check;
pub mod cli;
mod config;
pub mod demo;
mod discovery;
mod downstream;
mod export;
mod front_door;
mod http;
mod json;
mod metrics;
mod openapi;
mod outbound;
mod publish;
mod serve;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
mod wire;
mod wiring;

// What the binary, tests, benches, fuzz targets and examples use. Each
// group says who needs it; nothing else of the crate is public.

// Running the proxy: `serve`, `demo`, the integration tests.
pub use config::memory::{BudgetSource, MachineMemory, budget_for_limit, default_budget};
pub use config::serving::{Serving, ServingTls};
pub use config::{
    Config, ConfigError, DEFAULT_MAX_DOCUMENT_BYTES, DEFAULT_MEMORY_BUDGET_BYTES, DownstreamConfig,
    MetadataAuthentication, RawConfig, TlsConfig,
};
pub use outbound::client::DownstreamClient;
pub use outbound::credentials::Environment;
pub use outbound::error::{ClientError, FetchError};
pub use publish::readiness::{Readiness, Standing};
pub use publish::snapshot::{
    Contribution, OpenApiV2, OpenApiV2Slot, Snapshot, TooLarge, V2Protobuf,
    build as build_snapshot, rebuild as rebuild_snapshot,
};
pub use wiring::{Running, StartError, start};

// Converting: `convert`, the benches, the fuzz targets, the property and
// golden tests.
pub use json::document::{ParseError, parse as parse_document, parse_tree};
pub use json::pointer::fragment_pointer;
pub use json::refs::{all_refs, dangling_refs};
pub use json::tree::{Node, Shared};
pub use openapi::bundle;
pub use openapi::cache::ConversionCache;
pub use openapi::convert::{
    ConvertError, Converted, ConvertedTree, Note, NoteKind, convert, convert_tree,
};
pub use openapi::pipeline::{
    Budget, Documents, PipelineError, Summary, convert_each, swagger_to_openapi,
};
pub use openapi::proto;
pub use openapi::split::{
    RenderedSplit, Split, SplitError, split, split_rendered, split_rendered_tree, split_tree,
};

// The wire vocabulary, negotiation and digests: tests that speak the wire,
// and the negotiation fuzz target.
pub use body::digest::{quoted, sha512_hex};
pub use body::rendered::Rendered;
pub use wire::media;
pub use wire::negotiate;
pub use wire::{DocumentKey, GroupVersion};

// Discovery: the wire types, the legacy ↔ aggregated conversion, merging
// and ordering — the discovery fuzz target and the kubectl tests.
pub use discovery::legacy::{LegacyError, to_aggregated, to_legacy};
pub use discovery::types::{
    APIGroupDiscovery, APIGroupDiscoveryList, APIResourceDiscovery, APIResourceList,
    APIVersionDiscovery, CURRENT, ObjectMeta, STALE,
};
pub use discovery::version::preference;
pub use discovery::{
    DownstreamDiscovery, Merged, RankedDiscovery, merge, render as render_discovery,
    synthesized_legacy,
};

/// An error and its causes on one line (`a: b: c`), for log fields.
#[must_use]
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
