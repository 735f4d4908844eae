//! `deploy/`: the container image and the Kubernetes manifests, checked as
//! far as this machine can check them (no Docker daemon, no cluster).
//!
//! - Every manifest parses and is validated through openapi-proxy itself,
//!   in front of a fake kube-apiserver serving Kubernetes 1.27's own
//!   Swagger 2.0 document from the test data (`scripts/testdata.sh`),
//!   converted by the proxy, and the discovery derived from it: strictly
//!   against the schema of its kind in the OpenAPI v3 the proxy serves (openapi-schema-validator), and the real
//!   kubectl 1.32 resolves every kind through the proxy's discovery. A
//!   misspelt field and an unknown kind are refused, so neither check can
//!   pass vacuously.
//! - The configurations the image and the manifests carry load with the
//!   real loader, and the ports, paths and flags they mention agree.
//! - The Dockerfile's statically checkable facts: the baked configuration
//!   exists where the entrypoint reads it, the entrypoint's subcommand and
//!   flags exist, the user is not root, there is no HEALTHCHECK.

use std::path::{Path, PathBuf};

use openapi_proxy::Environment;
use openapi_proxy::demo::{Route, version_body};
use openapi_proxy::testkit::kube;
use openapi_proxy::{Config, RawConfig};
use serde_yaml_ng::Value;

use crate::common::kubectl::Run;
use crate::common::proxy::{TestProxy, downstream, site};
use crate::common::shared::shared_testdata;

fn deploy(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy").join(rel)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Every `*.yaml` under `deploy/kubernetes`, sorted.
fn manifests() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("manifest dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&deploy("kubernetes"), &mut out);
    out.sort();
    out
}

/// The YAML documents of a file (`---`-separated), each parsed.
fn documents(path: &Path) -> Vec<Value> {
    let text = read(path);
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| {
            serde::Deserialize::deserialize(d)
                .unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()))
        })
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// The one object of `kind` in `file` (under `deploy/kubernetes`).
fn object(file: &str, kind: &str) -> Value {
    let path = deploy(&format!("kubernetes/{file}"));
    let mut found: Vec<Value> =
        documents(&path).into_iter().filter(|d| d["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "one {kind} in {}", path.display());
    found.remove(0)
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v:?}"))
}

/// A pod's environment with a service account mounted in a fresh directory.
fn pod_environment(name: &str) -> Environment {
    let dir = crate::common::validators::scratch_dir(&format!("deploy-sa-{name}"));
    for f in ["token", "ca.crt"] {
        std::fs::write(dir.join(f), "x").expect("service account file");
    }
    Environment {
        service_account_dir: dir,
        service_host: Some("10.96.0.1".into()),
        service_port: Some("443".into()),
    }
}

/// Loads configuration text as `serve` would inside a pod.
fn load_in_pod(what: &str, yaml: &str) -> Config {
    let raw = RawConfig::from_yaml(yaml).unwrap_or_else(|e| panic!("{what} does not parse: {e}"));
    Config::from_raw_in(raw, &pod_environment(what))
        .unwrap_or_else(|e| panic!("{what} does not load: {}", openapi_proxy::error_chain(&e)))
}

// ---------------------------------------------------------------------------
// Manifests

/// The kinds the manifests use, each once at least: the fake kube below
/// must serve every one of them, or kubectl cannot validate them.
const KINDS: &[(&str, &str)] = &[
    ("v1", "Namespace"),
    ("v1", "ServiceAccount"),
    ("v1", "ConfigMap"),
    ("v1", "Service"),
    ("v1", "Pod"),
    ("apps/v1", "Deployment"),
    ("policy/v1", "PodDisruptionBudget"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
];

#[test]
fn every_manifest_parses_and_uses_only_the_validated_kinds() {
    let files = manifests();
    assert!(files.len() >= 7, "manifests found: {files:?}");
    let mut used = std::collections::BTreeSet::new();
    for file in &files {
        let docs = documents(file);
        assert!(!docs.is_empty(), "{} holds no object", file.display());
        for d in docs {
            let kind = (text(&d["apiVersion"]).to_owned(), text(&d["kind"]).to_owned());
            assert!(
                KINDS.iter().any(|(a, k)| (*a, *k) == (kind.0.as_str(), kind.1.as_str())),
                "{}: {kind:?} is not in KINDS, so the kubectl test may not cover it",
                file.display()
            );
            assert!(
                d["metadata"]["name"].is_string(),
                "{}: an object without a name",
                file.display()
            );
            used.insert(kind);
        }
    }
    assert_eq!(used.len(), KINDS.len(), "every kind in KINDS is used: {used:?}");
}

/// The discovery files at the paths a kube-apiserver serves them.
/// `kubectl create --dry-run=client --validate=strict -f FILE` against
/// `server`.
async fn kubectl_dry_run(server: &str, file: &Path) -> Run {
    let file = file.to_str().expect("a UTF-8 path");
    let args = ["create", "--dry-run=client", "--validate=strict", "-o", "name", "-f", file];
    crate::common::kubectl::run(server, &args).await
}

/// One object's result from `tests/validators/validate_manifests.py`.
#[derive(Debug, serde::Deserialize)]
struct Checked {
    file: String,
    object: String,
    errors: Vec<String>,
}

/// Strictly validates `files` against the OpenAPI v3 documents the proxy
/// at `base` serves (see the script for the rules).
async fn validate_through(base: &str, files: &[PathBuf]) -> Vec<Checked> {
    let mut cmd = std::process::Command::new(crate::common::validators::python());
    cmd.arg(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/validators/validate_manifests.py"),
    )
    .arg(base)
    .args(files);
    let out = actix_web::rt::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .expect("the validator runs");
    assert!(
        out.status.success(),
        "the validator failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

/// A fake Kubernetes 1.27 that publishes only Swagger 2.0 (converted by
/// the proxy) and legacy discovery, and the proxy in front of it once the
/// group-versions the manifests use are published.
async fn proxy_for_kubernetes_1_27() -> (TestProxy, openapi_proxy::demo::Site) {
    let v2 = shared_testdata(kube::SWAGGER_1_27);
    let mut routes: Vec<(String, Route)> = kube::discovery_1_27()
        .into_iter()
        .map(|(path, list)| (path, Route::json(serde_json::to_vec(&list).expect("serializes"))))
        .collect();
    let kube = site();
    routes.push(("/openapi/v2".to_owned(), Route::json(std::fs::read(&v2).expect("read"))));
    routes.push(("/version".to_owned(), Route::json(version_body(27))));
    kube.routes.replace(routes);
    let mut d = downstream("kube", &kube.url(), 1);
    // Converting 4 MB in a debug build on a busy machine takes a while.
    d.timeout = std::time::Duration::from_secs(60);
    let proxy = TestProxy::start(vec![d]);
    let keys = ["api/v1", "apis/apps/v1", "apis/policy/v1", "apis/rbac.authorization.k8s.io/v1"];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let s = proxy.running.state.store.load();
        if s.ready && keys.iter().all(|k| s.openapi.contains_key(*k)) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "Kubernetes 1.27 not published in 120 s");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    (proxy, kube)
}

/// The project validating its own manifests through itself: every object
/// is checked, strictly, against the schema of its kind in the OpenAPI v3
/// the proxy publishes for Kubernetes 1.27 (converted from its Swagger
/// 2.0). A copy with a misspelt field must fail, or the check proves
/// nothing. Then kubectl, through the same proxy.
#[actix_web::test]
async fn manifests_validate_through_the_proxy() {
    let (proxy, _kube) = proxy_for_kubernetes_1_27().await;
    let files = manifests();
    let checked = validate_through(&proxy.base, &files).await;
    let objects: usize = files.iter().map(|f| documents(f).len()).sum();
    assert_eq!(checked.len(), objects, "one result per object: {checked:#?}");
    let failed: Vec<String> = checked
        .iter()
        .filter(|c| !c.errors.is_empty())
        .map(|c| format!("{} {}: {:?}", c.file, c.object, c.errors))
        .collect();
    assert!(failed.is_empty(), "manifests that do not validate: {failed:#?}");

    let broken_dir = crate::common::validators::scratch_dir("deploy-broken");
    let broken = broken_dir.join("deployment.yaml");
    let original = read(&deploy("kubernetes/standalone/deployment.yaml"));
    let misspelt = original.replacen("readinessProbe:", "readynessProbe:", 1);
    assert_ne!(misspelt, original, "the deployment has a readinessProbe to misspell");
    std::fs::write(&broken, misspelt).expect("writing the broken copy");
    let checked = validate_through(&proxy.base, &[broken]).await;
    assert_eq!(checked.len(), 1);
    assert!(
        checked[0].errors.iter().any(|e| e.contains("readynessProbe")),
        "the misspelt field is reported: {checked:#?}"
    );

    kubectl_resolves_every_manifest_through(&proxy).await;
}

/// kubectl resolves every manifest's kind through the proxy's discovery
/// (part of the test above, which already paid for the conversion).
///
/// Not `--validate=strict`: kubectl validates on the client only from
/// `/openapi/v2` in protobuf, which the proxy passes through from a
/// downstream but does not make from JSON, and it skips client-side
/// validation altogether when the server advertises `fieldValidation`
/// (a client dry run then validates nothing). The schema check is the
/// test above.
async fn kubectl_resolves_every_manifest_through(proxy: &TestProxy) {
    for file in manifests() {
        let run = kubectl_dry_run(&proxy.base, &file).await;
        assert!(run.success, "kubectl refuses {}:\n{}", file.display(), run.stderr);
        let objects = documents(&file).len();
        assert_eq!(
            run.stdout.lines().count(),
            objects,
            "{}: kubectl printed {:?} for {objects} objects",
            file.display(),
            run.stdout
        );
    }
    // The control: a kind nobody serves is refused.
    let dir = crate::common::validators::scratch_dir("deploy-unknown-kind");
    let unknown = dir.join("unknown.yaml");
    let pdb = read(&deploy("kubernetes/standalone/pdb.yaml"));
    std::fs::write(
        &unknown,
        pdb.replace("kind: PodDisruptionBudget", "kind: PodDisruptionBudgett"),
    )
    .expect("writing");
    let run = kubectl_dry_run(&proxy.base, &unknown).await;
    // (kubectl's message varies: for a kind discovery does not map it
    // tries to download the OpenAPI it validates with, and says so.)
    assert!(!run.success, "kubectl accepted a kind nobody serves:\n{}", run.stdout);
}

// ---------------------------------------------------------------------------
// Configurations carried by the image and the manifests

/// The port of a `HOST:PORT`.
fn port(listen: std::net::SocketAddr) -> u64 {
    u64::from(listen.port())
}

#[test]
fn the_configmap_config_loads_and_matches_the_deployment() {
    let cm = object("standalone/configmap.yaml", "ConfigMap");
    let config = load_in_pod("the ConfigMap's config.yaml", text(&cm["data"]["config.yaml"]));
    assert!(config.listen.ip().is_unspecified(), "a pod must listen on every interface");
    assert_eq!(config.downstreams[0].url, "https://10.96.0.1:443", "the cluster, in-cluster");

    let deployment = object("standalone/deployment.yaml", "Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(container["ports"][0]["containerPort"].as_u64(), Some(port(config.listen)));
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/livez");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    // The ConfigMap is mounted where the image's entrypoint reads.
    let mount = &container["volumeMounts"][0];
    assert_eq!(text(&mount["mountPath"]), "/etc/openapi-proxy");
    assert_eq!(pod["volumes"][0]["configMap"]["name"], cm["metadata"]["name"]);
    assert_eq!(
        pod["serviceAccountName"],
        object("standalone/rbac.yaml", "ServiceAccount")["metadata"]["name"]
    );
    let selector = &deployment["spec"]["selector"]["matchLabels"];
    assert_eq!(&object("standalone/service.yaml", "Service")["spec"]["selector"], selector);
    assert_eq!(
        &object("standalone/pdb.yaml", "PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
        selector
    );
}

#[test]
fn the_sidecar_config_parses_and_matches_the_static_pod() {
    let yaml = read(&deploy("sidecar/config.yaml"));
    let raw = RawConfig::from_yaml(&yaml).expect("the sidecar config parses");
    assert_eq!(
        raw.downstreams[0].kubeconfig.as_deref(),
        Some(Path::new("/etc/kubernetes/openapi-proxy/kubeconfig"))
    );
    // Its kubeconfig is the operator's to make; the loader asks for it by name.
    let e = Config::from_raw_in(raw, &pod_environment("sidecar")).expect_err("no kubeconfig here");
    assert!(
        e.to_string().starts_with(
            "downstreams[0].kubeconfig: reading /etc/kubernetes/openapi-proxy/kubeconfig"
        ),
        "{e}"
    );
    let listen: std::net::SocketAddr =
        text(&serde_yaml_ng::from_str::<Value>(&yaml).expect("yaml")["listen"])
            .parse()
            .expect("listen");

    let pod = object("sidecar/kube-apiserver.yaml", "Pod");
    let proxy = pod["spec"]["containers"]
        .as_sequence()
        .expect("containers")
        .iter()
        .find(|c| c["name"] == "openapi-proxy")
        .expect("the sidecar container");
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(proxy[probe]["httpGet"]["port"].as_u64(), Some(port(listen)), "{probe}");
        assert_eq!(text(&proxy[probe]["httpGet"]["host"]), listen.ip().to_string(), "{probe}");
    }
    let args: Vec<&str> = proxy["args"].as_sequence().expect("args").iter().map(text).collect();
    let config_path = args.iter().skip_while(|a| **a != "--config").nth(1).expect("--config PATH");
    let mount = text(&proxy["volumeMounts"][0]["mountPath"]);
    assert_eq!(
        Path::new(config_path).parent(),
        Some(Path::new(mount)),
        "the config is in the mounted directory"
    );
}

// ---------------------------------------------------------------------------
// The Dockerfile

/// The Dockerfile's instructions (continuations joined), upper-cased
/// keyword first.
fn instructions() -> Vec<(String, String)> {
    let text = read(&deploy("Dockerfile"));
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(part) => current.push_str(part),
            None => {
                current.push_str(line);
                if let Some((keyword, rest)) = current.trim().split_once(char::is_whitespace) {
                    out.push((keyword.to_ascii_uppercase(), rest.trim().to_owned()));
                }
                current.clear();
            }
        }
    }
    out
}

#[test]
fn the_dockerfile_bakes_a_config_the_entrypoint_reads() {
    let ins = instructions();
    let last_stage = ins.iter().rposition(|(k, _)| k == "FROM").expect("a FROM");
    let final_stage = &ins[last_stage..];
    let entrypoint: Vec<String> = final_stage
        .iter()
        .find(|(k, _)| k == "ENTRYPOINT")
        .map(|(_, v)| serde_json::from_str(v).expect("ENTRYPOINT in exec (JSON) form"))
        .expect("an ENTRYPOINT");
    assert_eq!(entrypoint[0], "/openapi-proxy");
    let config_path =
        entrypoint.iter().skip_while(|a| *a != "--config").nth(1).expect("--config PATH");

    // COPY deploy/container.yaml <the path the entrypoint reads>.
    let (source, _) = final_stage
        .iter()
        .filter(|(k, _)| k == "COPY")
        .filter_map(|(_, v)| v.rsplit_once(' '))
        .find(|(_, dest)| dest == config_path)
        .unwrap_or_else(|| panic!("no COPY to {config_path}"));
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(source.trim());
    let config = load_in_pod("the image's config", &read(&source));
    assert!(config.listen.ip().is_unspecified(), "a container must listen on every interface");
    let exposed = final_stage.iter().find(|(k, _)| k == "EXPOSE").expect("EXPOSE").1.clone();
    assert_eq!(exposed, config.listen.port().to_string(), "EXPOSE matches listen");

    // The entrypoint's subcommand and flags exist: the binary accepts them
    // (with --help, so it prints its usage instead of starting).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
        .args(&entrypoint[1..])
        .arg("--help")
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "openapi-proxy refuses the ENTRYPOINT's arguments {:?}:\n{}",
        &entrypoint[1..],
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_image_runs_as_a_non_root_user_without_a_healthcheck() {
    let ins = instructions();
    let last_stage = ins.iter().rposition(|(k, _)| k == "FROM").expect("a FROM");
    let user = ins[last_stage..].iter().rfind(|(k, _)| k == "USER").expect("a USER").1.clone();
    let uid: u32 = user
        .split(':')
        .next()
        .and_then(|u| u.parse().ok())
        .expect("a numeric USER, which runAsNonRoot can check");
    assert_ne!(uid, 0, "USER {user} is root");
    assert!(ins.iter().all(|(k, _)| k != "HEALTHCHECK"), "Kubernetes probes replace HEALTHCHECK");
    let builder = &ins.iter().find(|(k, _)| k == "RUN").expect("a build step").1;
    assert!(builder.contains("cargo build --release --locked"), "{builder}");
    let ignore = read(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".dockerignore"));
    assert!(ignore.lines().any(|l| l.trim() == "target/"), ".dockerignore keeps target/ out");
}

// ---------------------------------------------------------------------------
// The configuration reference

/// The fields serde knows for the part of the configuration `yaml` puts an
/// unknown field into, from its own "expected one of" list — the
/// configuration type itself, not a copy of its field names.
fn serde_fields(yaml: &str) -> std::collections::BTreeSet<String> {
    let e = RawConfig::from_yaml(yaml).expect_err("an unknown field is refused").to_string();
    // serde says "expected one of `a`, `b`, …", or "expected `a` or `b`" for two.
    let list = e
        .split("expected one of ")
        .nth(1)
        .or_else(|| e.split("expected ").nth(1))
        .unwrap_or_else(|| panic!("{e}"));
    let list = list.split(" at line").next().unwrap_or(list);
    list.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// The first-column names of the table under `### heading` in the README's
/// "Configuration reference".
fn readme_fields(heading: &str) -> std::collections::BTreeSet<String> {
    let readme = read(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md"));
    let section = readme.split("\n## Configuration reference\n").nth(1).expect("the section");
    let section = section.split("\n## ").next().expect("its text");
    let sub = section
        .split("\n### ")
        .find(|s| s.starts_with(heading))
        .unwrap_or_else(|| panic!("no ### {heading}"));
    sub.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_readme_configuration_reference_lists_every_field() {
    let top = serde_fields("zzNotAField: 1");
    let downstream = serde_fields("downstreams: [{zzNotAField: 1}]");
    assert!(top.contains("listen") && downstream.contains("kubeconfig"), "{top:?} {downstream:?}");
    assert_eq!(readme_fields("Top level"), top, "README top-level table vs RawConfig");
    assert_eq!(
        readme_fields("Per downstream"),
        downstream,
        "README downstream table vs RawDownstream"
    );
    assert_eq!(readme_fields("`tls`"), serde_fields("tls: {zzNotAField: 1}"), "README tls table");
    assert_eq!(
        readme_fields("`limits`"),
        serde_fields("limits: {zzNotAField: 1}"),
        "README limits table"
    );
}

#[test]
fn the_example_configuration_shows_every_field() {
    let example: Value =
        serde_yaml_ng::from_str(&read(&deploy("openapi-proxy.yaml"))).expect("example parses");
    let keys = |m: &Value| -> std::collections::BTreeSet<String> {
        m.as_mapping().expect("a mapping").keys().map(|k| text(k).to_owned()).collect()
    };
    // A field may be shown commented out (`# tls:`) where a live value
    // would need files that do not exist.
    let commented: std::collections::BTreeSet<String> = read(&deploy("openapi-proxy.yaml"))
        .lines()
        .filter_map(|l| l.strip_prefix("# "))
        .filter_map(|l| l.strip_suffix(':'))
        .filter(|k| !k.contains(' '))
        .map(str::to_owned)
        .collect();
    let shown: std::collections::BTreeSet<String> =
        keys(&example).union(&commented).cloned().collect();
    assert_eq!(shown, serde_fields("zzNotAField: 1"));
    let limits = keys(&example["limits"]);
    assert_eq!(limits, serde_fields("limits: {zzNotAField: 1}"), "every limits field");
    let used: std::collections::BTreeSet<String> =
        example["downstreams"].as_sequence().expect("downstreams").iter().flat_map(keys).collect();
    assert_eq!(used, serde_fields("downstreams: [{zzNotAField: 1}]"));
}
