//! Reading the real Kubernetes documents the tests use (found by
//! `openapi_proxy::testkit::testdata`; a missing file fails the test,
//! naming `scripts/testdata.sh`).

use std::path::PathBuf;

/// The path of `rel` in the test data folder.
///
/// # Panics
/// When it is missing, naming the script that gets it.
pub fn shared_testdata(rel: &str) -> PathBuf {
    openapi_proxy::testkit::testdata::path(rel)
}

/// Reads and parses a JSON document from the test data folder.
///
/// # Panics
/// When it is missing or not JSON.
pub fn shared_json(rel: &str) -> serde_json::Value {
    let path = shared_testdata(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}
