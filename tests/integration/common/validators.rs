//! Two independent OpenAPI 3.0 validators, run from the test suite.
//!
//! Documents we emit must pass both `openapi-spec-validator` (Python, PyPI)
//! and `@apidevtools/swagger-parser` (Node, npm). The versions are pinned in
//! `tests/validators/requirements.txt` and `tests/validators/package-lock.json`;
//! the scripts that drive them are `tests/validators/validate.py` and
//! `tests/validators/validate.mjs` (each prints one JSON line per file).
//!
//! On first use the validators are installed under `<target>/validators/`
//! (a venv in `venv/`, npm packages in `node/`) and reused afterwards. An
//! install goes into a temporary directory beside the final one and is moved
//! into place with one `rename`, so several test processes starting at once
//! (nextest runs one process per test) cannot see a half-installed
//! directory: the first rename wins and the losers use the winner's copy.
//! A lock file (`.install.lock`) makes concurrent processes wait for one
//! install instead of each doing its own; it saves work, the rename is what
//! keeps it correct.
//! Each installed directory carries a stamp (`.installed-from`: the pin files
//! it was installed from); when the pins change, it is installed again.
//!
//! If the install fails (typically: no network), every test that needs the
//! validators panics with the failing command, its output and the commands
//! to run by hand. It never skips: a validator that did not run must not
//! look like a document that passed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use serde::Deserialize;

/// What one validator said about one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// The file, as passed to the validator (or found in a passed directory).
    pub file: PathBuf,
    /// Human-readable findings; empty means the file passed.
    ///
    /// openapi-spec-validator findings read `#<json pointer>: <message>
    /// (<check> <schema path>)`; swagger-parser findings are its message.
    pub errors: Vec<String>,
    /// How many findings `--tolerate-zero-defaults` dropped (always 0 for
    /// swagger-parser and when the tolerance is off).
    pub tolerated: usize,
}

/// Validates `paths` (files, or directories searched for `*.json`) as
/// OpenAPI 3.0 with openapi-spec-validator, collecting every error per file.
///
/// With `tolerate_zero_defaults`, findings about a `default` whose value is
/// a zero value (`{}`, `[]`, `""`, `0`, `false`) that does not fit its
/// schema are dropped and counted in [`FileReport::tolerated`]: Kubernetes'
/// own v3 documents have many (`default: {}` beside an `allOf` `$ref`). The
/// exact rule is `is_tolerated_zero_default` in `tests/validators/validate.py`.
///
/// # Panics
///
/// If the validators cannot be installed, or the validator process fails or
/// does not report on every file it was given.
#[must_use]
pub fn openapi_spec_validator(paths: &[PathBuf], tolerate_zero_defaults: bool) -> Vec<FileReport> {
    if paths.is_empty() {
        return Vec::new();
    }
    let installed = installed();
    let mut command = Command::new(&installed.python);
    command.arg(validators_source_dir().join("validate.py"));
    if tolerate_zero_defaults {
        command.arg("--tolerate-zero-defaults");
    }
    command.args(paths);
    run_batch("openapi-spec-validator", command, paths, |line| {
        let report: PythonReport = serde_json::from_str(line)?;
        Ok(FileReport {
            file: report.file,
            errors: report
                .errors
                .into_iter()
                .map(|e| format!("#{}: {} ({} {})", e.path, e.message, e.check, e.schema_path))
                .collect(),
            tolerated: report.tolerated,
        })
    })
}

/// Validates `paths` (files, or directories searched for `*.json`) with
/// swagger-parser's `validate()`: structure against the OpenAPI 3.0 JSON
/// Schema, and every `$ref` must resolve. It stops at the first error, so a
/// failing file has exactly one (possibly multi-line) message.
///
/// # Panics
///
/// If the validators cannot be installed, or the validator process fails or
/// does not report on every file it was given.
#[must_use]
pub fn swagger_parser(paths: &[PathBuf]) -> Vec<FileReport> {
    if paths.is_empty() {
        return Vec::new();
    }
    let installed = installed();
    let mut command = Command::new("node");
    command
        .arg(validators_source_dir().join("validate.mjs"))
        .arg("--node-modules")
        .arg(&installed.node_modules)
        .args(paths);
    run_batch("swagger-parser", command, paths, |line| {
        let report: NodeReport = serde_json::from_str(line)?;
        Ok(FileReport { file: report.file, errors: report.errors, tolerated: 0 })
    })
}

/// Installs both validators under `<target>/validators/` unless a current
/// install is there already. Called by the validator functions; call it
/// directly to pay the install cost up front.
///
/// # Panics
///
/// If the install fails; the message names the command that failed, its
/// output, and what to run by hand.
pub fn ensure_installed() {
    let _ = installed();
}

/// The validators' Python (openapi-schema-validator, PyYAML), installed on
/// first use, for scripts of their own in `tests/validators/`.
///
/// # Panics
///
/// If the install fails.
#[must_use]
pub fn python() -> PathBuf {
    installed().python.clone()
}

/// A fresh, empty directory under `<target>/validators/scratch/` for test
/// documents, unique to this process and `name`.
///
/// # Panics
///
/// If the directory cannot be created.
#[must_use]
pub fn scratch_dir(name: &str) -> PathBuf {
    let scratch = validators_dir().join("scratch");
    remove_stale(&scratch, &[&format!("{name}-")]);
    let dir = scratch.join(format!("{name}-{}", std::process::id()));
    if dir.exists() {
        fs::remove_dir_all(&dir)
            .unwrap_or_else(|e| panic!("removing old scratch directory {}: {e}", dir.display()));
    }
    fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("creating scratch directory {}: {e}", dir.display()));
    dir
}

#[derive(Deserialize)]
struct PythonReport {
    file: PathBuf,
    errors: Vec<PythonError>,
    tolerated: usize,
}

#[derive(Deserialize)]
struct PythonError {
    path: String,
    schema_path: String,
    check: String,
    message: String,
}

#[derive(Deserialize)]
struct NodeReport {
    file: PathBuf,
    errors: Vec<String>,
}

/// Runs one validator process over a batch of paths and parses its JSON
/// lines. Exit status 0 (all valid) and 1 (some invalid) are normal.
fn run_batch(
    name: &str,
    mut command: Command,
    paths: &[PathBuf],
    parse: impl Fn(&str) -> serde_json::Result<FileReport>,
) -> Vec<FileReport> {
    let shown = format!("{command:?}");
    let output = command.output().unwrap_or_else(|e| panic!("{name}: cannot run {shown}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !matches!(output.status.code(), Some(0 | 1)) {
        panic!("{name} failed ({}): {shown}\nstdout:\n{stdout}\nstderr:\n{stderr}", output.status);
    }
    let reports: Vec<FileReport> = stdout
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            parse(line).unwrap_or_else(|e| {
                panic!("{name}: unexpected output line ({e}): {line}\nstderr:\n{stderr}")
            })
        })
        .collect();
    // A validator that silently skipped a file must not look like a pass.
    for path in paths.iter().filter(|p| !p.is_dir()) {
        assert!(
            reports.iter().any(|r| &r.file == path),
            "{name} did not report on {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            path.display()
        );
    }
    assert!(!reports.is_empty(), "{name} found no *.json files in {paths:?}\nstderr:\n{stderr}");
    reports
}

/// Where the installed validators are.
struct Installed {
    python: PathBuf,
    node_modules: PathBuf,
}

fn installed() -> &'static Installed {
    static INSTALLED: OnceLock<Result<Installed, String>> = OnceLock::new();
    match INSTALLED.get_or_init(install) {
        Ok(installed) => installed,
        Err(message) => panic!("{message}"),
    }
}

/// Installs (or finds) both validators, the two in parallel.
fn install() -> Result<Installed, String> {
    let root = validators_dir();
    fs::create_dir_all(&root).map_err(|e| format!("creating {}: {e}", root.display()))?;
    let venv = root.join("venv");
    let node = root.join("node");
    // Serialize installs across processes (nextest starts one per test) so
    // they do not all download and build the same thing. The lock only saves
    // work: correctness comes from the rename in `install_atomically`, so an
    // install goes ahead without it if it cannot be taken.
    let lock_path = root.join(".install.lock");
    let _lock = fs::File::create(&lock_path).and_then(|file| file.lock().map(|()| file));
    let (python, npm) = std::thread::scope(|scope| {
        let python = scope.spawn(|| install_python(&venv));
        let npm = scope.spawn(|| install_npm(&node));
        (join(python.join()), join(npm.join()))
    });
    match (python, npm) {
        (Ok(()), Ok(())) => Ok(Installed {
            python: venv.join("bin").join("python"),
            node_modules: node.join("node_modules"),
        }),
        (python, npm) => {
            let failures: Vec<String> = [python, npm].into_iter().filter_map(Result::err).collect();
            Err(format!(
                "could not install the OpenAPI validators these tests need.\n\n{}\n\n{}",
                failures.join("\n\n"),
                manual_install_instructions(&venv, &node)
            ))
        }
    }
}

fn join(result: std::thread::Result<Result<(), String>>) -> Result<(), String> {
    result.unwrap_or_else(|_| Err("an installer thread panicked".to_owned()))
}

fn install_python(venv: &Path) -> Result<(), String> {
    let requirements = validators_source_dir().join("requirements.txt");
    let stamp = read(&requirements)?;
    install_atomically(venv, &stamp, "bin/python", |tmp| {
        run(Command::new("python3").arg("-m").arg("venv").arg(tmp))?;
        run(Command::new(tmp.join("bin").join("python"))
            .args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-q"])
            .arg("-r")
            .arg(&requirements))?;
        run(Command::new(tmp.join("bin").join("python"))
            .args(["-c", "import openapi_spec_validator"]))
    })
}

fn install_npm(node: &Path) -> Result<(), String> {
    let source = validators_source_dir();
    let mut stamp = read(&source.join("package.json"))?;
    stamp.extend(read(&source.join("package-lock.json"))?);
    install_atomically(
        node,
        &stamp,
        "node_modules/@apidevtools/swagger-parser/package.json",
        |tmp| {
            // `npm ci --prefix DIR` installs what DIR/package-lock.json says.
            for file in ["package.json", "package-lock.json"] {
                fs::copy(source.join(file), tmp.join(file))
                    .map_err(|e| format!("copying {file} to {}: {e}", tmp.display()))?;
            }
            run(Command::new("npm").arg("ci").arg("--prefix").arg(tmp).args([
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
                "--loglevel=error",
            ]))
        },
    )
}

/// The name of the stamp file inside an installed directory.
const STAMP: &str = ".installed-from";

/// Makes `dir` an install made from `stamp` (the pin files' bytes).
///
/// `populate` fills a fresh temporary directory beside `dir`; the stamp is
/// written last, then the directory is renamed to `dir`. A rename onto an
/// existing, non-empty directory fails, so if another process got there
/// first its install is used (when current). A stale install (other pins)
/// is moved aside and removed first.
fn install_atomically(
    dir: &Path,
    stamp: &[u8],
    marker: &str,
    populate: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<(), String> {
    if is_current(dir, stamp, marker) {
        return Ok(());
    }
    let parent = dir.parent().expect("install directories live under <target>/validators");
    let name = dir.file_name().expect("install directories have a name").to_string_lossy();
    remove_stale(parent, &[&format!("{name}.tmp-"), &format!("{name}.old-")]);
    let tmp = RemoveOnDrop(parent.join(format!("{name}.tmp-{}", unique())));
    fs::create_dir(&tmp.0).map_err(|e| format!("creating {}: {e}", tmp.0.display()))?;
    let started = Instant::now();
    eprintln!("installing validators into {} (missing, or from other pins)", dir.display());
    populate(&tmp.0)?;
    fs::write(tmp.0.join(STAMP), stamp)
        .map_err(|e| format!("writing {}: {e}", tmp.0.join(STAMP).display()))?;
    let done = || {
        eprintln!("installed {} in {:.1?}", dir.display(), started.elapsed());
        Ok(())
    };
    match fs::rename(&tmp.0, dir) {
        Ok(()) => return done(),
        // Lost the race to a concurrent install of the same pins: use theirs.
        Err(_) if is_current(dir, stamp, marker) => return Ok(()),
        Err(e) if !dir.exists() => return Err(rename_error(&tmp.0, dir, &e)),
        // Installed from other pins (or broken): move it aside, then retry.
        Err(_) => {}
    }
    let old = RemoveOnDrop(parent.join(format!("{name}.old-{}", unique())));
    match fs::rename(dir, &old.0) {
        Ok(()) => {}
        Err(_) if is_current(dir, stamp, marker) => return Ok(()),
        Err(e) if dir.exists() => return Err(rename_error(dir, &old.0, &e)),
        Err(_) => {} // someone else moved it aside
    }
    match fs::rename(&tmp.0, dir) {
        Ok(()) => done(),
        Err(_) if is_current(dir, stamp, marker) => Ok(()),
        Err(e) => Err(rename_error(&tmp.0, dir, &e)),
    }
}

fn rename_error(from: &Path, to: &Path, error: &std::io::Error) -> String {
    format!("renaming {} to {}: {error}", from.display(), to.display())
}

fn is_current(dir: &Path, stamp: &[u8], marker: &str) -> bool {
    dir.join(marker).exists() && fs::read(dir.join(STAMP)).is_ok_and(|s| s == stamp)
}

/// Removes the entries of `parent` whose names start with one of
/// `prefixes` and that are older than an hour: left behind by killed test
/// runs (the age keeps a concurrent run's directories safe).
fn remove_stale(parent: &Path, prefixes: &[&str]) {
    let Ok(entries) = fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let leftover = prefixes.iter().any(|prefix| file_name.starts_with(prefix));
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(3600));
        if leftover && old {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// A directory removed when dropped (unless it was renamed away first).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn unique() -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{}-{nanos}", std::process::id())
}

fn run(command: &mut Command) -> Result<(), String> {
    let shown = format!("{command:?}");
    match command.output() {
        Ok(Output { status, .. }) if status.success() => Ok(()),
        Ok(Output { status, stdout, stderr }) => Err(format!(
            "`{shown}` failed ({status}):\n{}{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        )),
        Err(e) => Err(format!("cannot run `{shown}`: {e}")),
    }
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

fn manual_install_instructions(venv: &Path, node: &Path) -> String {
    let source = validators_source_dir();
    let (venv, node, source) = (venv.display(), node.display(), source.display());
    format!(
        "They are installed on first use from PyPI and the npm registry, which needs network \
         access (and python3 with venv, node >= 20.19 and npm on PATH). Fix the cause above and \
         run the tests again, or install by hand:\n\
         \n  python3 -m venv {venv}\
         \n  {venv}/bin/python -m pip install -r {source}/requirements.txt\
         \n  cp {source}/requirements.txt {venv}/{STAMP}\
         \n  mkdir -p {node} && cp {source}/package.json {source}/package-lock.json {node}/\
         \n  npm ci --prefix {node}\
         \n  cat {source}/package.json {source}/package-lock.json > {node}/{STAMP}"
    )
}

/// `tests/validators/` in this repository: pins and driver scripts.
fn validators_source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("validators")
}

/// `<target>/validators/`, where the validators are installed (`venv/`,
/// `node/`) and where [`scratch_dir`]s are made.
#[must_use]
pub fn validators_dir() -> PathBuf {
    target_dir().join("validators")
}

/// Cargo's target directory: `CARGO_TARGET_DIR` when set (at run time, else
/// at build time), relative to the crate root; otherwise `<crate>/target`.
pub fn target_dir() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| option_env!("CARGO_TARGET_DIR").map(PathBuf::from))
        .map_or_else(|| manifest_dir.join("target"), |dir| manifest_dir.join(dir))
}
