//! Finding the real Kubernetes documents in `../shared/testdata`.
//!
//! They are read from there and never copied into the repository. When the
//! folder is missing, a test fails under CI (`CI=true`) — a skipped test is
//! not a passing one — and prints a notice and returns when run locally.

use std::path::PathBuf;

/// `../shared/testdata/<rel>` relative to the crate root, or `None` (after
/// a notice) when it is missing outside CI.
///
/// # Panics
/// When the file is missing and `CI=true`.
pub fn shared_testdata(rel: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata").join(rel);
    if path.exists() {
        return Some(path);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{} is missing: CI must run with ../shared beside the repository", path.display());
    }
    eprintln!("NOTICE: {} is missing; test not run (it fails under CI=true)", path.display());
    None
}

/// Reads and parses a JSON document from `../shared/testdata`.
pub fn shared_json(rel: &str) -> Option<serde_json::Value> {
    let path = shared_testdata(rel)?;
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    Some(
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("parsing {}: {e}", path.display())),
    )
}
