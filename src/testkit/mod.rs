//! What tests, benches and examples build on and the product never uses:
//! synthetic fleets of many downstreams and group-versions ([`fleet`]), a
//! cluster of large CRD documents ([`crd`]), Kubernetes' own discovery
//! derived from its Swagger 2.0 document ([`kube`]), and where the real
//! Kubernetes test data is ([`testdata`]).
//!
//! Compiled only for the crate's unit tests and under the dev-only feature
//! `testkit`, which benches, examples and integration tests get from the
//! crate's dev-dependency on itself (Cargo.toml): nothing here, and no
//! test-data path, ends up in the release binary.

pub mod crd;
pub mod fleet;
pub mod kube;
pub mod testdata;
