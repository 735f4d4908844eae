//! Where tests and benches find the real Kubernetes documents they read.
//!
//! Those documents come from other repositories under their own licenses
//! and are never committed here; `scripts/testdata.sh` downloads the pinned
//! files (and verifies them). One lookup for unit tests, integration tests
//! and benches, so they all agree on where the data is: the first lookup of
//! a missing file runs the script once, as the suite installs its own
//! validators, and a file still missing after that fails the test, with
//! the script's output: a test that returned early because its data is
//! missing would pass without testing.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The repository this crate was built from.
fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The folder the test data is read from: `$OPENAPI_PROXY_TESTDATA`, else
/// `../shared/testdata` beside the repository, else `target/testdata`
/// (where `scripts/testdata.sh` downloads it). The script resolves the
/// same folder the same way.
pub fn dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("OPENAPI_PROXY_TESTDATA") {
        return PathBuf::from(dir);
    }
    let crate_root = crate_root();
    let beside = crate_root.join("../shared/testdata");
    if beside.is_dir() { beside } else { crate_root.join("target/testdata") }
}

/// The path of `rel` in the test data folder, fetched first if missing.
///
/// # Panics
/// When it is missing and `scripts/testdata.sh` could not get it, with the
/// script's output.
pub fn path(rel: &str) -> PathBuf {
    let path = dir().join(rel);
    if path.exists() {
        return path;
    }
    let fetched = fetch();
    assert!(
        path.exists(),
        "test data {} is missing, and scripts/testdata.sh did not get it (set \
         OPENAPI_PROXY_TESTDATA to use another folder):\n{fetched}",
        path.display()
    );
    path
}

/// Runs `scripts/testdata.sh` once per process, and across processes one
/// at a time (a lock file beside the downloads), so test binaries running
/// side by side neither download the same files twice nor read half a
/// download. Returns what the script printed.
fn fetch() -> String {
    static RUN: OnceLock<String> = OnceLock::new();
    static IN_PROCESS: Mutex<()> = Mutex::new(());
    RUN.get_or_init(|| {
        let _one_thread = IN_PROCESS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let root = crate_root();
        match run_locked(&root.join("target/testdata.lock"), &root.join("scripts/testdata.sh")) {
            Ok(output) => output,
            Err(e) => format!("running scripts/testdata.sh: {e}"),
        }
    })
    .clone()
}

fn run_locked(lock: &Path, script: &Path) -> std::io::Result<String> {
    if let Some(parent) = lock.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(lock)?;
    lock.lock()?;
    let out = std::process::Command::new("bash").arg(script).output()?;
    let text = format!(
        "{}{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        if out.status.success() { String::new() } else { format!("({})\n", out.status) }
    );
    drop(lock);
    Ok(text)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// What names the test data or the source tree: none of it may reach
    /// the release binary.
    const TEST_ONLY: [&str; 4] =
        ["CARGO_MANIFEST_DIR", "shared/testdata", "target/testdata", "OPENAPI_PROXY_TESTDATA"];

    /// The lines of product code in `src/` (not `src/testkit/`, not unit
    /// tests, not comments) that hold one of [`TEST_ONLY`].
    fn test_only_lines_in_product(src: &Path) -> Vec<String> {
        let mut found = Vec::new();
        let mut stack = vec![src.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("read src/") {
                let path: PathBuf = entry.expect("entry").path();
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                if path.is_dir() {
                    if name != "testkit" && name != "tests" {
                        stack.push(path);
                    }
                    continue;
                }
                if !name.ends_with(".rs") || name == "tests.rs" {
                    continue;
                }
                let text = std::fs::read_to_string(&path).expect("read source");
                let code = text.split("#[cfg(test)]").next().unwrap_or_default();
                for (i, line) in code.lines().enumerate() {
                    let line = line.split("//").next().unwrap_or_default();
                    if TEST_ONLY.iter().any(|t| line.contains(t)) {
                        found.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                    }
                }
            }
        }
        found
    }

    #[test]
    fn no_product_source_names_the_test_data() {
        let src = super::crate_root().join("src");
        let found = test_only_lines_in_product(&src);
        assert!(
            found.is_empty(),
            "test-only paths in product code (move them to src/testkit/ or a unit test):\n{}",
            found.join("\n")
        );
    }

    /// The scan finds what it looks for: this folder (the test kit) holds
    /// them, and so would any other.
    #[test]
    fn the_scan_finds_a_test_data_path() {
        let testkit = super::crate_root().join("src/testkit");
        assert!(!test_only_lines_in_product(&testkit).is_empty());
    }
}
