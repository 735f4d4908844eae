//! openapi-proxy publishes Kubernetes API metadata — OpenAPI v3 per
//! group-version and aggregated discovery — for one or several
//! Kubernetes-style API servers.
//!
//! Data flows one way:
//!
//! 1. A downstream document arrives as bytes and is parsed once, into a
//!    [`tree::Node`] that borrows its strings from those bytes
//!    ([`document::parse_tree`]); [`document::parse`] gives a
//!    `serde_json::Value` for callers that want one.
//! 2. Swagger 2.0 documents are converted to OpenAPI 3.0 ([`convert`]); the
//!    conversion is pure (no I/O, no clock), deterministic, and reports what
//!    it could not carry as structured notes instead of log lines.
//! 3. A whole document is split into one self-contained document per URL key
//!    Kubernetes publishes (`api/v1`, `apis/<group>/<version>`, …) by
//!    [`split`], each holding only the components it reaches.
//!
//! Converting and splitting work on trees and render bytes exactly as
//! `serde_json` would write the same documents; their `&Value` entry points
//! borrow a `Value` as a tree and give `Value`s back.
//!
//! Everything above is a pure function from values to values, which is what
//! lets the test suite run it on real Kubernetes documents, the benches time
//! it, and the fuzzers hammer it.

pub mod cache;
pub mod check;
pub mod cli;
pub mod config;
pub mod convert;
pub mod credentials;
pub mod demo;
pub mod digest;
pub mod discovery;
pub mod document;
pub mod downstream;
pub mod http;
pub mod key;
pub mod metrics;
pub mod negotiate;
pub mod pointer;
pub mod proxy;
pub mod refs;
pub mod rendered;
pub mod scale;
pub mod serving;
pub mod snapshot;
pub mod split;
pub mod tree;

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
