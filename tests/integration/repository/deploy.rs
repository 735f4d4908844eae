//! `deploy/`: the container image and the Kubernetes manifests, checked as
//! far as this machine can check them (no Docker daemon, no cluster).
//!
//! - The kustomize overlays (`deploy/standalone`, `deploy/front-door`,
//!   `deploy/sidecar`) render with kubectl's kustomize; every rendered
//!   object, and the sidecar's static pod, is validated through
//!   openapi-proxy itself, in front of a fake kube-apiserver serving
//!   Kubernetes 1.27's own Swagger 2.0 document from the test data
//!   (`scripts/testdata.sh`), converted by the proxy, and the discovery
//!   derived from it:
//!   strictly against the schema of its kind in the OpenAPI v3 the proxy
//!   serves (openapi-schema-validator), and the real kubectl 1.32 resolves
//!   every kind through the proxy's discovery. A misspelt field and an
//!   unknown kind are refused, so neither check can pass vacuously.
//! - The configurations the image and the overlays carry load with the
//!   real loader, and the ports, paths, schemes and flags they mention
//!   agree with the objects around them.
//! - The image: the Dockerfile's statically checkable facts (fully
//!   qualified image names, the baked configuration where the command
//!   reads it, the command's flags exist, a non-root user, no
//!   HEALTHCHECK), `deploy/build-image.sh` configuring the same image,
//!   and the default command starting outside a cluster.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use openapi_proxy::Environment;
use openapi_proxy::demo::{Route, version_body};
use openapi_proxy::testkit::kube;
use openapi_proxy::{Config, RawConfig};
use serde_yaml_ng::Value;

use crate::common::kubectl::Run;
use crate::common::proxy::{TestProxy, downstream, site};
use crate::common::shared::shared_testdata;

/// The kustomize overlays under `deploy/`, each rendered by the tests.
const OVERLAYS: &[&str] = &["sidecar", "standalone", "front-door"];
/// Manifests that are files on a node, not kustomize output.
const NODE_FILES: &[&str] = &["sidecar/kube-apiserver.yaml"];

fn deploy(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy").join(rel)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// `kubectl kustomize DIR` with the pinned kubectl (its kustomize is the
/// one `kubectl apply -k` uses).
fn kustomize(dir: &Path) -> String {
    let out = std::process::Command::new(crate::common::kubectl::pinned())
        .arg("kustomize")
        .arg(dir)
        .env("KUBECONFIG", "/dev/null")
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl kustomize {} fails:\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Each overlay rendered once per test process, into a file of its own.
fn rendered() -> &'static [(&'static str, PathBuf)] {
    static RENDERED: OnceLock<Vec<(&'static str, PathBuf)>> = OnceLock::new();
    RENDERED.get_or_init(|| {
        let dir = crate::common::validators::scratch_dir("deploy-rendered");
        OVERLAYS
            .iter()
            .map(|overlay| {
                let file = dir.join(format!("{overlay}.yaml"));
                std::fs::write(&file, kustomize(&deploy(overlay))).expect("writing the rendering");
                (*overlay, file)
            })
            .collect()
    })
}

/// The rendering of `overlay`.
fn rendering(overlay: &str) -> &'static Path {
    rendered().iter().find(|(o, _)| *o == overlay).map(|(_, f)| f.as_path()).expect("an overlay")
}

/// Every manifest: the overlays' renderings, then the node files.
fn manifests() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = rendered().iter().map(|(_, f)| f.clone()).collect();
    out.extend(NODE_FILES.iter().map(|f| deploy(f)));
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

/// The one object of `kind` in `path`.
fn object(path: &Path, kind: &str) -> Value {
    let mut found: Vec<Value> = documents(path).into_iter().filter(|d| d["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "one {kind} in {}", path.display());
    found.remove(0)
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v:?}"))
}

fn seq(v: &Value) -> &[Value] {
    v.as_sequence().map_or(&[], Vec::as_slice)
}

/// The item of a list of named things (containers, volumes, ports).
fn named<'a>(list: &'a Value, name: &str) -> &'a Value {
    seq(list).iter().find(|v| v["name"] == name).unwrap_or_else(|| panic!("no {name} in {list:?}"))
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
fn every_overlay_renders_and_uses_only_the_validated_kinds() {
    let files = manifests();
    assert_eq!(files.len(), OVERLAYS.len() + NODE_FILES.len(), "manifests: {files:?}");
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

/// Every container of every manifest: its name and spec.
fn containers() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for file in manifests() {
        for d in documents(&file) {
            let pod = match text(&d["kind"]) {
                "Pod" => &d["spec"],
                "Deployment" => &d["spec"]["template"]["spec"],
                _ => continue,
            };
            for c in seq(&pod["containers"]) {
                let name = format!("{}: {}", file.display(), text(&c["name"]));
                out.push((name, c.clone()));
            }
        }
    }
    out
}

/// `RUST_LOG` silently wins over `-v`, so no manifest sets it; and every
/// openapi-proxy container states its requests and limits.
#[test]
fn every_proxy_container_states_its_resources_and_sets_no_rust_log() {
    let proxies: Vec<(String, Value)> =
        containers().into_iter().filter(|(_, c)| c["name"] == "openapi-proxy").collect();
    assert_eq!(proxies.len(), manifests().len() - 1, "one per manifest but the sidecar's RBAC");
    for (name, c) in containers() {
        let env: Vec<&str> = seq(&c["env"]).iter().map(|e| text(&e["name"])).collect();
        assert!(!env.contains(&"RUST_LOG"), "{name} sets RUST_LOG");
    }
    for (name, c) in proxies {
        for (side, what) in
            [("requests", "cpu"), ("requests", "memory"), ("limits", "cpu"), ("limits", "memory")]
        {
            assert!(c["resources"][side][what].is_string(), "{name}: no resources.{side}.{what}");
        }
    }
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
/// every overlay renders, and the static pod, is checked, strictly,
/// against the schema of its kind in the OpenAPI v3 the proxy publishes
/// for Kubernetes 1.27 (converted from its Swagger 2.0). A copy with a
/// misspelt field must fail, or the check proves nothing. Then kubectl,
/// through the same proxy.
#[actix_web::test]
async fn manifests_validate_through_the_proxy() {
    let files = actix_web::rt::task::spawn_blocking(manifests).await.expect("rendering");
    let (proxy, _kube) = proxy_for_kubernetes_1_27().await;
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
    let broken = broken_dir.join("standalone.yaml");
    let original = read(rendering("standalone"));
    let misspelt = original.replacen("readinessProbe:", "readynessProbe:", 1);
    assert_ne!(misspelt, original, "the deployment has a readinessProbe to misspell");
    std::fs::write(&broken, misspelt).expect("writing the broken copy");
    let checked = validate_through(&proxy.base, &[broken]).await;
    assert!(
        checked.iter().any(|c| c.errors.iter().any(|e| e.contains("readynessProbe"))),
        "the misspelt field is reported: {checked:#?}"
    );

    kubectl_resolves_every_manifest_through(&proxy, &files).await;
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
async fn kubectl_resolves_every_manifest_through(proxy: &TestProxy, files: &[PathBuf]) {
    for file in files {
        let run = kubectl_dry_run(&proxy.base, file).await;
        assert!(run.success, "kubectl refuses {}:\n{}", file.display(), run.stderr);
        let objects = documents(file).len();
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
    let pdb = serde_yaml_ng::to_string(&object(rendering("standalone"), "PodDisruptionBudget"))
        .expect("YAML");
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

/// Every string in a YAML value, depth first.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Sequence(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Mapping(m) => m.values().for_each(|i| strings(i, out)),
        _ => {}
    }
}

/// The configuration an overlay's Deployment runs with, loaded as in its
/// pod: from the ConfigMap mounted where the container's `--config`
/// points, with every file it names under a Secret volume's mount made
/// present (the loader checks they exist).
fn overlay_config(overlay: &str) -> (Config, Value) {
    let file = rendering(overlay);
    let deployment = object(file, "Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = named(&pod["containers"], "openapi-proxy");
    let args: Vec<&str> = seq(&container["args"]).iter().map(text).collect();
    assert_eq!(args.first(), Some(&"serve"), "{overlay}: {args:?}");
    let config_path =
        Path::new(args.iter().skip_while(|a| **a != "--config").nth(1).expect("--config PATH"));
    let mount_of = |dir: &Path| {
        seq(&container["volumeMounts"])
            .iter()
            .find(|m| Path::new(text(&m["mountPath"])) == dir)
            .unwrap_or_else(|| panic!("{overlay}: nothing mounted at {}", dir.display()))
    };
    let config_mount = mount_of(config_path.parent().expect("a directory"));
    let volume = named(&pod["volumes"], text(&config_mount["name"]));
    let cm = object(file, "ConfigMap");
    assert_eq!(volume["configMap"]["name"], cm["metadata"]["name"], "{overlay}: the ConfigMap");
    let key = config_path.file_name().and_then(|n| n.to_str()).expect("a file name");
    let mut yaml = text(&cm["data"][key]).to_owned();

    let here = crate::common::validators::scratch_dir(&format!("deploy-mounts-{overlay}"));
    let mut named_files = Vec::new();
    strings(&serde_yaml_ng::from_str(&yaml).expect("YAML"), &mut named_files);
    for m in seq(&container["volumeMounts"]) {
        if !named(&pod["volumes"], text(&m["name"]))["secret"].is_mapping() {
            continue;
        }
        let (mount, local) = (text(&m["mountPath"]), here.join(text(&m["name"])));
        for f in named_files.iter().filter_map(|f| f.strip_prefix(mount)) {
            let f = local.join(f.trim_start_matches('/'));
            std::fs::create_dir_all(f.parent().expect("a directory")).expect("mount dir");
            std::fs::write(&f, "x").expect("a mounted file");
        }
        yaml = yaml.replace(mount, local.to_str().expect("UTF-8"));
    }
    (load_in_pod(&format!("{overlay}'s config"), &yaml), deployment)
}

/// The standalone and front-door overlays: the configuration loads in a
/// pod, and the Deployment, Service, PodDisruptionBudget and RBAC around
/// it agree with it and with each other.
#[test]
fn the_overlay_configs_load_and_match_their_objects() {
    for overlay in ["standalone", "front-door"] {
        let (config, deployment) = overlay_config(overlay);
        let file = rendering(overlay);
        assert!(config.listen.ip().is_unspecified(), "{overlay}: a pod listens on every interface");
        assert_eq!(config.downstreams[0].url, "https://10.96.0.1:443", "{overlay}: in-cluster");
        assert_eq!(config.front_door, overlay == "front-door", "{overlay}: frontDoor");
        // The front door serves metadata as kube-apiserver does, to
        // authenticated clients only.
        let authentication = if overlay == "front-door" {
            openapi_proxy::MetadataAuthentication::Delegated
        } else {
            openapi_proxy::MetadataAuthentication::None
        };
        assert_eq!(config.metadata_authentication, authentication, "{overlay}");
        let https = config.serving.tls.is_some();
        assert_eq!(https, overlay == "front-door", "{overlay}: HTTPS");

        let template = &deployment["spec"]["template"];
        let pod = &template["spec"];
        let container = named(&pod["containers"], "openapi-proxy");
        let ports = seq(&container["ports"]);
        assert_eq!(ports.len(), 1, "{overlay}: one port");
        assert_eq!(ports[0]["containerPort"].as_u64(), Some(port(config.listen)), "{overlay}");
        let port_name = &ports[0]["name"];
        for (probe, path) in [("livenessProbe", "/livez"), ("readinessProbe", "/readyz")] {
            let get = &container[probe]["httpGet"];
            assert_eq!(get["path"], path, "{overlay} {probe}");
            assert_eq!(&get["port"], port_name, "{overlay} {probe}");
            let scheme = get["scheme"].as_str().unwrap_or("HTTP");
            assert_eq!(scheme, if https { "HTTPS" } else { "HTTP" }, "{overlay} {probe}");
        }
        // Prometheus' annotation-based discovery scrapes where the proxy serves.
        let annotations = &template["metadata"]["annotations"];
        assert_eq!(annotations["prometheus.io/scrape"], "true", "{overlay}");
        assert_eq!(annotations["prometheus.io/path"], "/metrics", "{overlay}");
        assert_eq!(text(&annotations["prometheus.io/port"]), config.listen.port().to_string());
        let scheme = annotations["prometheus.io/scheme"].as_str().unwrap_or("http");
        assert_eq!(scheme, if https { "https" } else { "http" }, "{overlay}");

        let service = object(file, "Service");
        assert_eq!(&seq(&service["spec"]["ports"])[0]["targetPort"], port_name, "{overlay}");
        let selector = &deployment["spec"]["selector"]["matchLabels"];
        assert_eq!(&service["spec"]["selector"], selector, "{overlay}");
        let pdb = object(file, "PodDisruptionBudget");
        assert_eq!(&pdb["spec"]["selector"]["matchLabels"], selector, "{overlay}");
        for (k, v) in selector.as_mapping().expect("labels") {
            assert_eq!(&template["metadata"]["labels"][k], v, "{overlay}: the pods match");
        }

        let account = object(file, "ServiceAccount");
        assert_eq!(pod["serviceAccountName"], account["metadata"]["name"], "{overlay}");
        let binding = object(file, "ClusterRoleBinding");
        let subject = &seq(&binding["subjects"])[0];
        assert_eq!(subject["name"], account["metadata"]["name"], "{overlay}: bound");
        assert_eq!(subject["namespace"], deployment["metadata"]["namespace"], "{overlay}");
        assert_eq!(
            binding["roleRef"]["name"],
            object(file, "ClusterRole")["metadata"]["name"],
            "{overlay}"
        );
    }
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

    let pod = object(&deploy("sidecar/kube-apiserver.yaml"), "Pod");
    let proxy = named(&pod["spec"]["containers"], "openapi-proxy");
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(proxy[probe]["httpGet"]["port"].as_u64(), Some(port(listen)), "{probe}");
        assert_eq!(text(&proxy[probe]["httpGet"]["host"]), listen.ip().to_string(), "{probe}");
    }
    let args: Vec<&str> = seq(&proxy["args"]).iter().map(text).collect();
    let config_path = args.iter().skip_while(|a| **a != "--config").nth(1).expect("--config PATH");
    let mount = text(&proxy["volumeMounts"][0]["mountPath"]);
    assert_eq!(
        Path::new(config_path).parent(),
        Some(Path::new(mount)),
        "the config is in the mounted directory"
    );

    // What the overlay applies: the ClusterRole, bound to the user of the
    // sidecar's client certificate; and not the static pod.
    let rbac = rendering("sidecar");
    let binding = object(rbac, "ClusterRoleBinding");
    assert_eq!(binding["roleRef"]["name"], object(rbac, "ClusterRole")["metadata"]["name"]);
    let subject = &seq(&binding["subjects"])[0];
    assert_eq!((text(&subject["kind"]), text(&subject["name"])), ("User", "openapi-proxy"));
    assert!(documents(rbac).iter().all(|d| d["kind"] != "Pod"), "a second kube-apiserver");
}

/// A path to `to` relative to the directory `from` (kustomize refuses
/// absolute ones).
fn relative(from: &Path, to: &Path) -> PathBuf {
    let (from, to) = (from.canonicalize().expect("from"), to.canonicalize().expect("to"));
    let common = from.components().zip(to.components()).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in from.components().skip(common) {
        out.push("..");
    }
    to.components().skip(common).for_each(|c| out.push(c));
    out
}

/// The optional ServiceMonitor, added to the standalone overlay as its
/// comment says, scrapes the Service's port that reaches the proxy.
#[test]
fn the_service_monitor_component_scrapes_the_metrics_port() {
    let dir = crate::common::validators::scratch_dir("deploy-service-monitor");
    let yaml = format!(
        "namespace: openapi-proxy\nresources: [{}]\ncomponents: [{}]\n",
        relative(&dir, &deploy("standalone")).display(),
        relative(&dir, &deploy("components/service-monitor")).display()
    );
    std::fs::write(dir.join("kustomization.yaml"), yaml).expect("writing");
    let out = dir.join("rendered.yaml");
    std::fs::write(&out, kustomize(&dir)).expect("writing");
    let monitor = object(&out, "ServiceMonitor");
    let service = object(&out, "Service");
    assert_eq!(monitor["metadata"]["namespace"], service["metadata"]["namespace"]);
    for (k, v) in monitor["spec"]["selector"]["matchLabels"].as_mapping().expect("a selector") {
        assert_eq!(&service["metadata"]["labels"][k], v, "the Service is selected");
    }
    let endpoint = &seq(&monitor["spec"]["endpoints"])[0];
    assert_eq!(endpoint["path"], "/metrics");
    let port = named(&service["spec"]["ports"], text(&endpoint["port"]));
    let deployment = object(&out, "Deployment");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    named(&container["ports"], text(&port["targetPort"]));
}

// ---------------------------------------------------------------------------
// The image

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

/// The final stage's instructions.
fn final_stage() -> Vec<(String, String)> {
    let ins = instructions();
    let last = ins.iter().rposition(|(k, _)| k == "FROM").expect("a FROM");
    ins[last..].to_vec()
}

/// An instruction's exec (JSON) form.
fn exec_form(stage: &[(String, String)], keyword: &str) -> Vec<String> {
    stage
        .iter()
        .rfind(|(k, _)| k == keyword)
        .map(|(_, v)| serde_json::from_str(v).unwrap_or_else(|e| panic!("{keyword} {v}: {e}")))
        .unwrap_or_else(|| panic!("no {keyword}"))
}

/// What the image runs by default: ENTRYPOINT then CMD.
fn image_command() -> Vec<String> {
    let stage = final_stage();
    let mut command = exec_form(&stage, "ENTRYPOINT");
    command.extend(exec_form(&stage, "CMD"));
    command
}

/// The `--config` file of the image's command, and the repository file
/// the Dockerfile copies there.
fn baked_config() -> (String, PathBuf) {
    let command = image_command();
    let config_path =
        command.iter().skip_while(|a| *a != "--config").nth(1).expect("--config PATH").clone();
    let (source, _) = final_stage()
        .into_iter()
        .filter(|(k, _)| k == "COPY")
        .filter_map(|(_, v)| v.rsplit_once(' ').map(|(s, d)| (s.trim().to_owned(), d.to_owned())))
        .find(|(_, dest)| *dest == config_path)
        .unwrap_or_else(|| panic!("no COPY to {config_path}"));
    (config_path, PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(source))
}

#[test]
fn the_dockerfile_bakes_a_config_the_command_reads() {
    let command = image_command();
    assert_eq!(command[0], "/openapi-proxy", "the entrypoint is the binary alone");
    assert_eq!(exec_form(&final_stage(), "ENTRYPOINT"), ["/openapi-proxy"]);
    let (_, source) = baked_config();
    // Outside a cluster: no service account, no service variables.
    let outside = Environment {
        service_account_dir: PathBuf::from("/nonexistent/serviceaccount"),
        service_host: None,
        service_port: None,
    };
    let raw = RawConfig::from_yaml(&read(&source)).expect("the image's config parses");
    let config = Config::from_raw_in(raw, &outside).unwrap_or_else(|e| {
        panic!("the image's config needs a cluster: {}", openapi_proxy::error_chain(&e))
    });
    let exposed = final_stage().iter().find(|(k, _)| k == "EXPOSE").expect("EXPOSE").1.clone();
    assert_eq!(exposed, config.listen.port().to_string(), "EXPOSE matches listen");

    // The command's subcommand and flags exist: the binary accepts them
    // (with --help, so it prints its usage instead of starting).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
        .args(&command[1..])
        .arg("--help")
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "openapi-proxy refuses the image's arguments {:?}:\n{}",
        &command[1..],
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The image's default command, outside any cluster, starts, and says
/// what it waits for: /readyz names the downstream, the log its address.
/// (`--listen` as an operator would give it, on a free port. A
/// `kubectl proxy` left running on this machine's 127.0.0.1:8001 would
/// make it ready, and this test fail.)
#[actix_web::test]
async fn the_image_default_starts_outside_a_cluster_and_says_what_it_waits_for() {
    let (config_path, source) = baked_config();
    let mut args: Vec<std::ffi::OsString> = image_command()[1..]
        .iter()
        .map(|a| if *a == config_path { source.clone().into() } else { a.into() })
        .collect();
    args.extend(["--listen".into(), "127.0.0.1:0".into()]);
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsString::as_os_str).collect();
    let served = crate::common::serve::Served::start_with(&args, "info");
    let base = served.base().await;
    let raw: Value = serde_yaml_ng::from_str(&read(&source)).expect("YAML");
    let (name, url) = (text(&raw["downstreams"][0]["name"]), text(&raw["downstreams"][0]["url"]));
    let readyz = crate::common::proxy::request("GET", &format!("{base}/readyz"), &[]).await;
    let body = String::from_utf8_lossy(&readyz.body);
    assert_eq!(readyz.status, 503, "{body}");
    assert!(
        body.contains(&format!("[-]downstream/{name} failed: no documents yet")),
        "/readyz names what it waits for: {body}"
    );
    crate::common::proxy::eventually("a failed poll is logged", || {
        served
            .lines()
            .iter()
            .any(|l| l["severity"] == "warning" && l["downstream"] == name && l["url"] == url)
    })
    .await;
}

#[test]
fn every_image_the_dockerfile_names_is_fully_qualified() {
    let ins = instructions();
    let mut stages = Vec::new();
    for (_, from) in ins.iter().filter(|(k, _)| k == "FROM") {
        let mut words = from.split_whitespace();
        let image = words.next().expect("an image");
        let registry = image.split('/').next().unwrap_or_default();
        let qualified = image.contains('/') && (registry.contains('.') || registry.contains(':'));
        assert!(
            qualified || image == "scratch" || stages.iter().any(|s| s == image),
            "FROM {image}: name the registry (docker.io/library/…), Podman asks otherwise"
        );
        if let (Some(as_), Some(name)) = (words.next(), words.next()) {
            assert!(as_.eq_ignore_ascii_case("AS"), "FROM {from}");
            stages.push(name.to_owned());
        }
    }
    assert!(!stages.is_empty(), "a build stage");
}

#[test]
fn the_image_runs_as_a_non_root_user_without_a_healthcheck() {
    let ins = instructions();
    let user = final_stage().iter().rfind(|(k, _)| k == "USER").expect("a USER").1.clone();
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

/// `deploy/build-image.sh` makes the Dockerfile's image without pulling
/// it: the same user, port, entrypoint, command and baked configuration.
#[test]
fn the_image_script_configures_the_dockerfiles_image() {
    let script = read(&deploy("build-image.sh"));
    let option = |name: &str| -> String {
        let at = script.find(&format!("--{name} ")).unwrap_or_else(|| panic!("no --{name}"));
        let rest = script[at + name.len() + 3..].trim_start();
        match rest.strip_prefix('\'') {
            Some(quoted) => quoted.split('\'').next().expect("a closing quote").to_owned(),
            None => rest.split_whitespace().next().expect("a value").to_owned(),
        }
    };
    let stage = final_stage();
    let dockerfile = |keyword: &str| {
        stage.iter().rfind(|(k, _)| k == keyword).map(|(_, v)| v.clone()).expect(keyword)
    };
    assert_eq!(option("user"), dockerfile("USER"));
    assert_eq!(option("port"), dockerfile("EXPOSE"));
    let json = |v: &str| -> Vec<String> { serde_json::from_str(v).expect("JSON") };
    assert_eq!(json(&option("entrypoint")), exec_form(&stage, "ENTRYPOINT"));
    assert_eq!(json(&option("cmd")), exec_form(&stage, "CMD"));
    let (config_path, source) = baked_config();
    let rel = source.strip_prefix(env!("CARGO_MANIFEST_DIR")).expect("in the repository");
    let copy = format!("\"$ctr\" {} {config_path}", rel.display());
    assert!(script.contains(&copy), "the script copies {copy}");
    assert!(script.contains("buildah from --pull=never scratch"), "nothing pulled");
    assert!(script.contains("--version"), "the script runs --version in the image");
}

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

/// The first-column names of the table under `### heading` in
/// docs/configuration.md's "Configuration reference".
fn reference_fields(heading: &str) -> std::collections::BTreeSet<String> {
    let page = read(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md"));
    let section = page.split("\n## Configuration reference\n").nth(1).expect("the section");
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
fn the_configuration_reference_lists_every_field() {
    let top = serde_fields("zzNotAField: 1");
    let downstream = serde_fields("downstreams: [{zzNotAField: 1}]");
    assert!(top.contains("listen") && downstream.contains("kubeconfig"), "{top:?} {downstream:?}");
    assert_eq!(reference_fields("Top level"), top, "top-level table vs RawConfig");
    assert_eq!(reference_fields("Per downstream"), downstream, "downstream table vs RawDownstream");
    assert_eq!(reference_fields("`tls`"), serde_fields("tls: {zzNotAField: 1}"), "tls table");
    assert_eq!(
        reference_fields("`limits`"),
        serde_fields("limits: {zzNotAField: 1}"),
        "limits table"
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
