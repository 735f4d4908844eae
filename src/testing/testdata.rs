//! Where tests and benches find the real Kubernetes documents they read.
//!
//! Those documents come from other repositories under their own licenses
//! and are never committed here; `scripts/testdata.sh` verifies them or
//! downloads the pinned files. One lookup for unit tests, integration tests
//! and benches, so they all agree on where the data is and all fail the
//! same way, naming the script, when it is not there: a test that returns
//! early because its data is missing would pass without testing.

use std::path::PathBuf;

/// The folder the test data is read from: `$OPENAPI_PROXY_TESTDATA`, else
/// `../shared/testdata` beside the repository, else `target/testdata`
/// (where `scripts/testdata.sh` downloads it).
pub fn dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("OPENAPI_PROXY_TESTDATA") {
        return PathBuf::from(dir);
    }
    let crate_root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let beside = crate_root.join("../shared/testdata");
    if beside.is_dir() { beside } else { crate_root.join("target/testdata") }
}

/// The path of `rel` in the test data folder.
///
/// # Panics
/// When it is missing, with a message saying how to get it.
pub fn path(rel: &str) -> PathBuf {
    let path = dir().join(rel);
    assert!(
        path.exists(),
        "test data {} is missing: run scripts/testdata.sh (it verifies ../shared/testdata, or \
         downloads the pinned files into target/testdata; set OPENAPI_PROXY_TESTDATA to use \
         another folder)",
        path.display()
    );
    path
}
