//! The one `/openapi/v2` of all downstreams together (docs/wire.md, A-13):
//! [`merge`] joins Swagger 2.0 documents as kube-aggregator joins its
//! APIServices' specs, and [`down`] turns the OpenAPI 3.0 documents of a
//! downstream that publishes no v2 into Swagger 2.0 first, with the rules
//! kube-apiserver applies to CRD schemas it publishes in v2.
//!
//! Both work on [`Node`](crate::json::tree::Node) trees that borrow from the
//! downstreams' bytes: at thousands of CRDs the inputs are hundreds of
//! megabytes, and a tree of owned strings would cost several times that.

pub mod down;
pub mod merge;
mod refs;
