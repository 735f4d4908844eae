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
