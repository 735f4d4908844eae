//! The real kubectl, as a client in tests.
//!
//! Tests pin kubectl 1.32 so their output does not depend on what a
//! downstream claims to be, and find it by what it says it is: `$KUBECTL`
//! if set, else the first `kubectl.1.32` or `kubectl` on `PATH` (or beside
//! a `kubectl` on `PATH`) whose `version --client` is v1.32. The machine
//! image's `kubectl` is a dispatcher that reports v1.32 but picks a client
//! by the server's `/version`; it says `-dispatcher` in its version and is
//! passed over.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The minor version the tests' expectations were written against.
const MINOR: &str = "32";

/// The pinned kubectl binary.
///
/// # Panics
/// When none can be found (or `$KUBECTL` is not v1.32): a test that needs a
/// real client must not pass without one. `.ci/run` installs it on machines
/// that lack it.
pub fn pinned() -> PathBuf {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND.get_or_init(find).clone().unwrap_or_else(|why| panic!("{why}"))
}

fn find() -> Result<PathBuf, String> {
    if let Some(k) = std::env::var_os("KUBECTL") {
        let k = PathBuf::from(k);
        return match client_version(&k) {
            Some(v) if is_pinned(&v) => Ok(k),
            other => {
                Err(format!("KUBECTL={} reports {other:?}, not kubectl v1.{MINOR}.x", k.display()))
            }
        };
    }
    let mut tried = Vec::new();
    for dir in std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
    {
        let beside = std::fs::canonicalize(dir.join("kubectl"))
            .ok()
            .and_then(|k| k.parent().map(|p| p.join(format!("kubectl.1.{MINOR}"))));
        for candidate in
            [Some(dir.join(format!("kubectl.1.{MINOR}"))), Some(dir.join("kubectl")), beside]
                .into_iter()
                .flatten()
        {
            if !candidate.is_file() || tried.iter().any(|(t, _)| t == &candidate) {
                continue;
            }
            let version = client_version(&candidate);
            if version.as_deref().is_some_and(is_pinned) {
                return Ok(candidate);
            }
            tried.push((candidate, version));
        }
    }
    Err(format!(
        "no kubectl v1.{MINOR}.x found (set KUBECTL, or run .ci/run's install step); tried {tried:?}"
    ))
}

/// `clientVersion.gitVersion` of `kubectl version --client -o json`.
fn client_version(kubectl: &Path) -> Option<String> {
    let out = std::process::Command::new(kubectl)
        .args(["version", "--client", "-o", "json"])
        .env("KUBECONFIG", "/dev/null")
        .output()
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    v["clientVersion"]["gitVersion"].as_str().map(str::to_owned)
}

/// `v1.32.<patch>`, with an optional build suffix, but not the dispatcher.
fn is_pinned(git_version: &str) -> bool {
    let Some(rest) = git_version.strip_prefix(&format!("v1.{MINOR}.")) else { return false };
    let patch_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    patch_end > 0 && !rest.contains("dispatcher")
}

#[test]
fn only_a_real_1_32_client_is_pinned() {
    assert!(is_pinned("v1.32.4"));
    assert!(is_pinned("v1.32.0+k3s1"));
    assert!(!is_pinned("v1.32.4-dispatcher"));
    assert!(!is_pinned("v1.33.1"));
    assert!(!is_pinned("v1.3.2"));
    assert!(!is_pinned("v1.32."));
}

/// What one kubectl run printed.
pub struct Run {
    /// The command line after `--server` (for messages).
    pub args: String,
    /// Exit status 0.
    pub success: bool,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs the pinned kubectl against `server` with `args`, a fresh disk cache
/// (so no run answers from another's) and no kubeconfig, off the actix
/// system (which runs the proxy and the fake downstreams).
pub async fn run(server: &str, args: &[&str]) -> Run {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kubectl-cache").join(format!(
        "{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&cache);
    std::fs::create_dir_all(&cache).expect("kubectl cache dir");
    let mut cmd = std::process::Command::new(pinned());
    cmd.arg("--server")
        .arg(server)
        .arg("--cache-dir")
        .arg(&cache)
        .arg("--request-timeout=60s")
        .args(args)
        .env("KUBECONFIG", "/dev/null");
    let out = actix_web::rt::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .expect("kubectl runs");
    let _ = std::fs::remove_dir_all(&cache);
    Run {
        args: args.join(" "),
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
