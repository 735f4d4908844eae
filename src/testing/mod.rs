//! Downstream servers to run against: the demo's built-in sites, which the
//! integration tests script as fake downstreams ([`demo`]), and synthetic
//! fleets of many downstreams and group-versions for benches and scale
//! tests ([`fleet`]), a cluster of large CRD documents ([`crd`]), and where the real Kubernetes test data is
//! ([`testdata`]). Part of the library (not `#[cfg(test)]`) because
//! `demo`, the benches and the examples use them too.

pub mod crd;
pub mod demo;
pub mod fleet;
pub mod testdata;
