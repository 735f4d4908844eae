//! Downstream credentials from the pod's service account (`inCluster`) and
//! from a kubeconfig, black-box: configuration text through the real
//! loader, then a real proxy in front of an HTTPS fake downstream with
//! certificates made at test time. Success is the widgets sample being
//! published and the downstream seeing the expected credentials. A
//! kubeconfig whose user is an exec plugin is run through the binary
//! itself, `openapi-proxy serve`, so the plugin is a real grandchild and
//! its stderr is read in the real log.

use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use actix_web::http::header::AUTHORIZATION;
use base64::Engine as _;
use openapi_proxy::Environment;
use openapi_proxy::demo::Routes;
use openapi_proxy::{Config, DownstreamConfig, RawConfig};

use crate::common::proxy::{TestProxy, WIDGETS, eventually, request, widgets_routes};
use crate::common::tls::{Pki, start_tls_site};

/// The downstreams of `yaml`, loaded by the real loader in `env`, with
/// test-friendly timings.
fn downstreams(yaml: &str, env: &Environment) -> Vec<DownstreamConfig> {
    let raw = RawConfig::from_yaml(yaml).expect("configuration parses");
    let mut config = Config::from_raw_in(raw, env)
        .unwrap_or_else(|e| panic!("configuration is valid: {}", openapi_proxy::error_chain(&e)));
    for d in &mut config.downstreams {
        d.poll_interval = crate::common::proxy::POLL;
        d.timeout = Duration::from_secs(2);
    }
    config.downstreams
}

async fn wait_for_widgets(proxy: &TestProxy) {
    proxy.wait_for("the widgets documents", |s| s.openapi.len() >= 4).await;
}

/// The kubelet's layout of a projected volume: `token` and `ca.crt` are
/// symlinks through `..data`, which is swapped atomically to a fresh
/// timestamped directory on every rotation.
struct ServiceAccountMount {
    dir: PathBuf,
    rotations: usize,
}

impl ServiceAccountMount {
    fn new(parent: &Path, token: &str, ca: &Path) -> Self {
        let dir = parent.join("serviceaccount");
        std::fs::create_dir_all(&dir).expect("mount dir");
        let mut mount = Self { dir, rotations: 0 };
        mount.rotate(token, ca);
        for f in ["token", "ca.crt"] {
            symlink(format!("..data/{f}"), mount.dir.join(f)).expect("symlink");
        }
        mount
    }

    /// Publishes a new token the way the kubelet's atomic writer does.
    fn rotate(&mut self, token: &str, ca: &Path) {
        self.rotations += 1;
        let version = format!("..2025_01_01_00_00_0{}", self.rotations);
        let target = self.dir.join(&version);
        std::fs::create_dir_all(&target).expect("version dir");
        std::fs::write(target.join("token"), token).expect("token");
        std::fs::copy(ca, target.join("ca.crt")).expect("ca");
        // Older files carry older times, whatever the file system's clock
        // resolution.
        let age = Duration::from_secs(3600 / self.rotations as u64);
        std::fs::File::options()
            .write(true)
            .open(target.join("token"))
            .and_then(|f| f.set_modified(SystemTime::now() - age))
            .expect("dating the token");
        let tmp = self.dir.join("..data_tmp");
        let _ = std::fs::remove_file(&tmp);
        symlink(&version, &tmp).expect("new ..data");
        std::fs::rename(&tmp, self.dir.join("..data")).expect("swap ..data");
    }
}

fn authorizations(routes: &Routes) -> Vec<Option<String>> {
    routes
        .seen()
        .iter()
        .map(|r| r.headers.get(AUTHORIZATION).map(|v| v.to_str().expect("ASCII").to_owned()))
        .collect()
}

#[actix_web::test]
async fn in_cluster_uses_the_service_account_and_follows_token_rotation() {
    let pki = Pki::generate("in-cluster");
    let ds = start_tls_site(widgets_routes(), &pki.server_cert, &pki.server_key, None)
        .expect("HTTPS site");
    let mut mount = ServiceAccountMount::new(&pki.dir, "sa-token-1\n", &pki.ca);
    let env = Environment {
        service_account_dir: mount.dir.clone(),
        service_host: Some("127.0.0.1".into()),
        service_port: Some(ds.addr.port().to_string()),
    };
    // No url: the service variables name the API server.
    let proxy =
        TestProxy::start(downstreams("downstreams:\n- name: kube\n  inCluster: true\n", &env));
    wait_for_widgets(&proxy).await;
    let first = authorizations(&ds.routes);
    assert!(!first.is_empty());
    assert!(
        first.iter().all(|a| a.as_deref() == Some("Bearer sa-token-1")),
        "every request carries the service-account token: {first:?}"
    );

    mount.rotate("sa-token-2\n", &pki.ca);
    eventually("the rotated token is sent", || {
        authorizations(&ds.routes).iter().any(|a| a.as_deref() == Some("Bearer sa-token-2"))
    })
    .await;
    let seen = authorizations(&ds.routes);
    let switch = seen.iter().position(|a| a.as_deref() == Some("Bearer sa-token-2")).expect("2");
    assert!(
        seen[switch..].iter().all(|a| a.as_deref() == Some("Bearer sa-token-2")),
        "the old token is not sent after the rotation: {seen:?}"
    );
}

#[actix_web::test]
async fn in_cluster_ca_is_what_verifies_the_server() {
    let pki = Pki::generate("in-cluster-wrong-ca");
    let ds = start_tls_site(widgets_routes(), &pki.server_cert, &pki.server_key, None)
        .expect("HTTPS site");
    // The mounted CA did not sign the server's certificate.
    let mount = ServiceAccountMount::new(&pki.dir, "t", &pki.unrelated_ca);
    let env = Environment {
        service_account_dir: mount.dir.clone(),
        service_host: Some("127.0.0.1".into()),
        service_port: Some(ds.addr.port().to_string()),
    };
    let proxy =
        TestProxy::start(downstreams("downstreams:\n- {name: kube, inCluster: true}\n", &env));
    proxy.wait_polled("kube").await;
    assert!(proxy.running.state.store.load().openapi.is_empty());
    assert!(!proxy.running.state.store.load().ready, "nothing delivered: not ready");
    assert!(ds.routes.seen().is_empty(), "nothing is sent to an unverified server");
}

/// An environment with no service account, as outside a pod.
fn outside_a_pod() -> Environment {
    Environment {
        service_account_dir: PathBuf::from("/nonexistent/serviceaccount"),
        service_host: None,
        service_port: None,
    }
}

fn base64(path: &Path) -> String {
    base64::engine::general_purpose::STANDARD.encode(std::fs::read(path).expect("PEM file"))
}

#[actix_web::test]
async fn kubeconfig_with_inline_certificates_reaches_a_mutual_tls_downstream() {
    let pki = Pki::generate("kubeconfig-inline");
    let ds =
        start_tls_site(widgets_routes(), &pki.server_cert, &pki.server_key, Some(&pki.client_ca))
            .expect("HTTPS site");
    let kubeconfig = pki.dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1
kind: Config
current-context: other
clusters:
- name: test
  cluster:
    server: {server}
    certificate-authority-data: {ca}
- name: other
  cluster: {{server: 'https://elsewhere.invalid'}}
contexts:
- name: test
  context: {{cluster: test, user: proxy}}
- name: other
  context: {{cluster: other, user: plugin}}
users:
- name: proxy
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
- name: plugin
  user:
    exec: {{command: never-run, apiVersion: client.authentication.k8s.io/v1}}
",
            server = ds.url(),
            ca = base64(&pki.ca),
            cert = base64(&pki.client_cert),
            key = base64(&pki.client_key),
        ),
    )
    .expect("kubeconfig");
    // The file's current context uses an exec plugin; the chosen one does
    // not, and only the chosen one matters.
    let yaml = format!(
        "downstreams:\n- {{name: kube, kubeconfig: {}, context: test}}\n",
        kubeconfig.display()
    );
    let proxy = TestProxy::start(downstreams(&yaml, &outside_a_pod()));
    wait_for_widgets(&proxy).await;
    assert!(authorizations(&ds.routes).iter().all(Option::is_none), "no token was configured");
}

#[actix_web::test]
async fn kubeconfig_files_are_relative_to_it_and_its_token_file_is_sent() {
    let pki = Pki::generate("kubeconfig-files");
    let ds = start_tls_site(widgets_routes(), &pki.server_cert, &pki.server_key, None)
        .expect("HTTPS site");
    std::fs::write(pki.dir.join("token"), "kubeconfig-token\n").expect("token");
    let kubeconfig = pki.dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "current-context: test
clusters: [{{name: test, cluster: {{server: '{}', certificate-authority: ca.crt}}}}]
contexts: [{{name: test, context: {{cluster: test, user: proxy}}}}]
users: [{{name: proxy, user: {{tokenFile: token}}}}]
",
            ds.url()
        ),
    )
    .expect("kubeconfig");
    let yaml = format!("downstreams:\n- {{name: kube, kubeconfig: {}}}\n", kubeconfig.display());
    let proxy = TestProxy::start(downstreams(&yaml, &outside_a_pod()));
    wait_for_widgets(&proxy).await;
    let seen = authorizations(&ds.routes);
    assert!(
        !seen.is_empty() && seen.iter().all(|a| a.as_deref() == Some("Bearer kubeconfig-token")),
        "{seen:?}"
    );
}

/// A token file rewritten in place whose modification time did not change
/// (rewritten within the clock's resolution, or copied with `cp -p`): the
/// old token was sent for every following poll. The rotated one must be.
#[actix_web::test]
async fn a_rotated_token_file_is_followed_even_when_its_mtime_is_unchanged() {
    let ds = crate::common::proxy::widgets_site();
    let dir = crate::common::validators::scratch_dir("token-same-mtime");
    let token_file = dir.join("token");
    std::fs::write(&token_file, "token-one\n").expect("write token");
    let mtime = std::fs::metadata(&token_file).and_then(|m| m.modified()).expect("mtime");
    let yaml = format!(
        "downstreams:\n- name: widgets\n  url: {}\n  tokenFile: {}\n",
        ds.url(),
        token_file.display()
    );
    let proxy = TestProxy::start(downstreams(&yaml, &outside_a_pod()));
    wait_for_widgets(&proxy).await;
    assert!(authorizations(&ds.routes).iter().all(|a| a.as_deref() == Some("Bearer token-one")));

    std::fs::write(&token_file, "token-two\n").expect("rotate token");
    std::fs::File::options()
        .write(true)
        .open(&token_file)
        .and_then(|f| f.set_modified(mtime))
        .expect("restore the mtime");
    eventually("the rotated token is sent", || {
        authorizations(&ds.routes).iter().any(|a| a.as_deref() == Some("Bearer token-two"))
    })
    .await;
}

/// A plugin that counts its runs, says something on stderr, and answers
/// a fixed token without expiry.
const PLUGIN: &str = r#"#!/bin/sh
echo run >> "$RUNS"
echo "plugin: issuing a token for $(printf '%s' "$KUBERNETES_EXEC_INFO" | tr -d '\n' | head -c 200)" >&2
printf '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"exec-SECRET-token-9f8e"}}'
"#;

#[actix_web::test]
async fn serve_polls_a_downstream_with_the_token_of_a_kubeconfig_exec_plugin() {
    let routes = widgets_routes();
    routes.require_authorization(Some("Bearer exec-SECRET-token-9f8e"));
    let ds = openapi_proxy::demo::start_site(routes).expect("site");
    let dir = crate::common::validators::scratch_dir("exec-plugin-serve");
    std::fs::create_dir_all(dir.join("plugins")).expect("plugins dir");
    let plugin = dir.join("plugins/get-token");
    std::fs::write(&plugin, PLUGIN).expect("plugin");
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let runs = dir.join("runs");
    std::fs::write(
        dir.join("kubeconfig"),
        format!(
            "apiVersion: v1
kind: Config
current-context: cloud
clusters:
- name: cloud
  cluster: {{server: '{server}'}}
contexts:
- name: cloud
  context: {{cluster: cloud, user: cloud-user}}
users:
- name: cloud-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: ./plugins/get-token
      env: [{{name: RUNS, value: '{runs}'}}]
      provideClusterInfo: true
",
            server = ds.url(),
            runs = runs.display(),
        ),
    )
    .expect("kubeconfig");
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: 127.0.0.1:0\npollInterval: 100ms\ndownstreams:\n- {{name: kube, kubeconfig: {}}}\n",
            dir.join("kubeconfig").display()
        ),
    )
    .expect("config");
    let served = crate::common::serve::Served::start(&config, "debug");
    let base = served.base().await;

    let mut root = serde_json::Value::Null;
    for _ in 0..3000 {
        root = request("GET", &format!("{base}/openapi/v3"), &[]).await.json();
        if root["paths"].get(WIDGETS).is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let url = root["paths"][WIDGETS]["serverRelativeURL"].as_str().unwrap_or_else(|| {
        panic!("the widgets document is not listed: {root}\nlogs: {}", served.text())
    });
    let doc = request("GET", &format!("{base}{url}"), &[]).await;
    assert_eq!(doc.status.as_u16(), 200);
    assert_eq!(doc.json()["openapi"], "3.0.0");

    // Several polls later, the plugin still ran once: its token is kept.
    eventually("a few more polls", || ds.routes.seen().len() >= 6).await;
    assert!(
        authorizations(&ds.routes)
            .iter()
            .all(|a| a.as_deref() == Some("Bearer exec-SECRET-token-9f8e")),
        "every request carries the plugin's token"
    );
    assert_eq!(std::fs::read_to_string(&runs).expect("runs").lines().count(), 1);
    let text = served.stop();
    let lines: Vec<serde_json::Value> =
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let said: Vec<&serde_json::Value> =
        lines.iter().filter(|v| v["msg"] == "exec credential plugin wrote to stderr").collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(said[0]["severity"], "warning", "{:?}", said[0]);
    assert_eq!(said[0]["downstream"], "kube");
    let line = said[0]["line"].as_str().expect("the line");
    assert!(
        line.starts_with(
            r#"plugin: issuing a token for {"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","spec":{"cluster":{"server":"http://127.0.0.1:"#
        ),
        "{line}"
    );
    assert!(!text.contains("exec-SECRET"), "the token reached the log");
}
