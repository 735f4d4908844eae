//! The real kubectl, as a client in tests.
//!
//! The `kubectl` on the machine image is a dispatcher that picks a bundled
//! client by the server's `/version`; tests pin `kubectl.1.32`, found beside
//! it, so their output does not depend on what a downstream claims to be.

use std::path::PathBuf;

/// The pinned kubectl binary.
///
/// # Panics
/// When it cannot be found: a test that needs a real client must not pass
/// without one. `.ci/run` installs it on machines that lack it.
pub fn pinned() -> PathBuf {
    let candidates = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .flat_map(|dir| {
            let direct = dir.join("kubectl.1.32");
            let beside = std::fs::canonicalize(dir.join("kubectl"))
                .ok()
                .and_then(|k| k.parent().map(|p| p.join("kubectl.1.32")));
            [Some(direct), beside]
        })
        .flatten();
    for c in candidates {
        if c.is_file() {
            return c;
        }
    }
    panic!("kubectl.1.32 not found on PATH or beside kubectl; run .ci/run's install step");
}
