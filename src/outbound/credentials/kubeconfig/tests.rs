//! Unit tests of `outbound/credentials/kubeconfig.rs`.

use super::*;
use crate::outbound::credentials::exec::ExecPlugin;

/// A fresh directory holding `kubeconfig` (and `ca.crt`, `token`).
fn write(name: &str, kubeconfig: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("openapi-proxy-kc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("ca.crt"), "ca").expect("ca");
    std::fs::write(dir.join("token"), "t").expect("token");
    let path = dir.join("kubeconfig");
    std::fs::write(&path, kubeconfig).expect("kubeconfig");
    path
}

fn error(name: &str, kubeconfig: &str, context: Option<&str>) -> String {
    let path = write(name, kubeconfig);
    let e = resolve(&path, context).expect_err("refused");
    crate::error_chain(&e).replace(&path.display().to_string(), "KC")
}

const TWO_CONTEXTS: &str = "
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: prod
  cluster:
    server: https://prod.example:6443
    certificate-authority: ca.crt
- name: dev
  cluster:
    server: https://dev.example:6443
    insecure-skip-tls-verify: true
contexts:
- name: prod
  context: {cluster: prod, user: prod-admin, namespace: kube-system}
- name: dev
  context: {cluster: dev, user: dev}
users:
- name: prod-admin
  user:
    tokenFile: token
- name: dev
  user:
    token: dev-token
    exec: null
- name: unused
  user:
    exec: {command: aws}
";

#[test]
fn current_context_chooses_cluster_and_user() {
    let path = write("current", TWO_CONTEXTS);
    let c = resolve(&path, None).expect("resolves");
    assert_eq!(c.server.as_deref(), Some("https://dev.example:6443"));
    assert!(c.insecure_skip_verify);
    assert_eq!(c.ca, None);
    assert!(matches!(
        c.token,
        Some(TokenSource::Bearer(BearerToken::Inline { ref value, .. })) if value == "dev-token"
    ));
}

#[test]
fn a_named_context_wins_and_relative_paths_follow_the_file() {
    let path = write("named", TWO_CONTEXTS);
    let dir = path.parent().expect("dir");
    let c = resolve(&path, Some("prod")).expect("resolves");
    assert_eq!(c.server.as_deref(), Some("https://prod.example:6443"));
    assert_eq!(c.ca, Some(PemSource::File(dir.join("ca.crt"))));
    assert_eq!(c.token, Some(dir.join("token").into()));
    assert!(!c.insecure_skip_verify && c.client_cert.is_none());
}

#[test]
fn inline_data_is_decoded_even_when_wrapped() {
    let kc = "
current-context: c
clusters: [{name: k, cluster: {server: 'https://k:6443', certificate-authority-data: \"Q0EtUEVN\\nCg==\"}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {client-certificate-data: Q0VSVA==, client-key-data: S0VZ}}]
";
    let c = resolve(&write("inline", kc), None).expect("resolves");
    let bytes = |p: Option<&PemSource>| match p {
        Some(PemSource::Inline { value, .. }) => value.to_vec(),
        other => panic!("not inline: {other:?}"),
    };
    assert_eq!(bytes(c.ca.as_ref()), b"CA-PEM\n");
    let (cert, key) = c.client_cert.expect("client certificate");
    assert_eq!((bytes(Some(&cert)), bytes(Some(&key))), (b"CERT".to_vec(), b"KEY".to_vec()));
    assert!(key.to_string().ends_with("users[u].user.client-key-data"), "{key}");
}

#[test]
fn token_file_wins_over_token_as_in_client_go() {
    let kc = "
current-context: c
clusters: [{name: k, cluster: {server: 'https://k'}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {token: inline, tokenFile: token}}]
";
    let path = write("both-tokens", kc);
    let c = resolve(&path, None).expect("resolves");
    assert_eq!(c.token, Some(path.with_file_name("token").into()));
}

#[test]
fn plugins_and_other_identities_are_refused_by_name() {
    let user = |body: &str| {
        format!(
            "current-context: c\nclusters: [{{name: k, cluster: {{server: 'https://k'}}}}]\ncontexts: [{{name: c, context: {{cluster: k, user: u}}}}]\nusers: [{{name: u, user: {body}}}]\n"
        )
    };
    let cases = [
        (
            "{auth-provider: {name: oidc}}",
            "KC: users[u].user.auth-provider is not supported: auth-provider plugins are not run by the proxy; use a token, tokenFile, an exec plugin or a client certificate",
        ),
        (
            "{username: a, password: b}",
            "KC: users[u].user.username is not supported: use a token, tokenFile, an exec plugin or a client certificate",
        ),
        (
            "{token: t, as: admin}",
            "KC: users[u].user.as is not supported: the proxy reads with its own identity; grant it the RBAC instead",
        ),
        (
            "{as-groups: [system:masters]}",
            "KC: users[u].user.as-groups is not supported: the proxy reads with its own identity; grant it the RBAC instead",
        ),
        (
            "{client-certificate-data: Q0VSVA==}",
            "KC: users[u].user.client-certificate is not supported: it needs client-key or client-key-data",
        ),
        (
            "{client-key: ca.crt, client-key-data: S0VZ}",
            "KC: users[u].user.client-key and users[u].user.client-key-data are both set; keep one",
        ),
        (
            "{client-certificate-data: 'not base64!', client-key-data: S0VZ}",
            "KC: users[u].user.client-certificate-data is not base64: Invalid symbol 33, offset 9.",
        ),
        (
            "{tokenFile: /nonexistent/token}",
            "KC: users[u].user.tokenFile: /nonexistent/token is not a readable file",
        ),
    ];
    for (i, (body, expected)) in cases.iter().enumerate() {
        assert_eq!(error(&format!("user{i}"), &user(body), None), *expected, "{body}");
    }
}

#[test]
fn cluster_settings_the_proxy_cannot_honour_are_refused() {
    let cluster = |body: &str| {
        format!(
            "current-context: c\nclusters: [{{name: k, cluster: {body}}}]\ncontexts: [{{name: c, context: {{cluster: k}}}}]\n"
        )
    };
    assert_eq!(
        error("tsn", &cluster("{server: 'https://k', tls-server-name: kubernetes}"), None),
        "KC: clusters[k].cluster.tls-server-name is not supported: use a URL whose host the server certificate names"
    );
    assert_eq!(
        error("proxyurl", &cluster("{server: 'https://k', proxy-url: 'socks5://p:1080'}"), None),
        "KC: clusters[k].cluster.proxy-url is not supported: the proxy connects to downstreams directly"
    );
    assert_eq!(
        error(
            "insecure-ca",
            &cluster(
                "{server: 'https://k', insecure-skip-tls-verify: true, certificate-authority: ca.crt}"
            ),
            None
        ),
        "KC: clusters[k].cluster.insecure-skip-tls-verify and clusters[k].cluster.certificate-authority are both set; keep one"
    );
}

#[test]
fn contexts_clusters_and_users_must_exist() {
    assert_eq!(
        error("noctx", "clusters: []\n", None),
        "KC: no context chosen: set `context` on the downstream, or current-context in the file"
    );
    assert_eq!(
        error("missing-ctx", TWO_CONTEXTS, Some("staging")),
        "KC: context (downstream): context \"staging\" is not defined in the file"
    );
    assert_eq!(
        error(
            "missing-cluster",
            "current-context: c\ncontexts: [{name: c, context: {cluster: gone}}]\n",
            None
        ),
        "KC: contexts[c].context.cluster: cluster \"gone\" is not defined in the file"
    );
    assert_eq!(
        error(
            "missing-user",
            "current-context: c\nclusters: [{name: k, cluster: {server: 'https://k'}}]\ncontexts: [{name: c, context: {cluster: k, user: nobody}}]\n",
            None
        ),
        "KC: contexts[c].context.user: user \"nobody\" is not defined in the file"
    );
}

#[test]
fn a_file_that_is_not_a_kubeconfig_is_a_parse_error() {
    let e = error("garbage", "clusters: 7\n", None);
    assert!(e.starts_with("parsing KC: clusters: invalid type"), "{e}");
}

/// A kubeconfig whose user `u` has `exec: {stanza}`, on cluster `k`
/// (`cluster` its body).
fn with_exec(cluster: &str, stanza: &str) -> String {
    format!(
        "current-context: c\nclusters: [{{name: k, cluster: {cluster}}}]\ncontexts: [{{name: c, context: {{cluster: k, user: u}}}}]\nusers: [{{name: u, user: {{exec: {stanza}}}}}]\n"
    )
}

const SERVER: &str = "{server: 'https://k:6443'}";

fn plugin(name: &str, kubeconfig: &str) -> (PathBuf, Arc<ExecPlugin>) {
    let path = write(name, kubeconfig);
    match resolve(&path, None).expect("resolves").token {
        Some(TokenSource::Exec(plugin)) => (path, plugin),
        other => panic!("not an exec plugin: {other:?}"),
    }
}

#[test]
fn an_exec_plugin_in_v1_is_resolved_and_its_relative_command_follows_the_file() {
    let (path, p) = plugin(
        "exec-v1",
        &with_exec(
            SERVER,
            "{apiVersion: client.authentication.k8s.io/v1, command: ./bin/get-token, args: [--x], env: [{name: A, value: secret-value}], interactiveMode: Never}",
        ),
    );
    assert_eq!(p.program(), path.with_file_name("./bin/get-token"));
    assert_eq!(p.command(), "./bin/get-token");
    assert!(p.user().ends_with("kubeconfig users[u]"), "{}", p.user());
    assert_eq!(
        p.exec_info(),
        r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}"#
    );
    let debug = format!("{p:?}");
    assert!(debug.contains("\"A\"") && !debug.contains("secret-value"), "{debug}");
}

#[test]
fn v1beta1_needs_no_interactive_mode_and_if_available_is_accepted() {
    let (_, p) = plugin(
        "exec-v1beta1",
        &with_exec(SERVER, "{apiVersion: client.authentication.k8s.io/v1beta1, command: aws}"),
    );
    assert_eq!(
        p.exec_info(),
        r#"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","spec":{"interactive":false}}"#
    );
    plugin(
        "exec-ifavailable",
        &with_exec(
            SERVER,
            "{apiVersion: client.authentication.k8s.io/v1, command: aws, interactiveMode: IfAvailable}",
        ),
    );
}

#[test]
fn a_bare_command_is_left_to_path_and_an_absolute_one_is_kept() {
    let (_, bare) = plugin(
        "exec-bare",
        &with_exec(
            SERVER,
            "{apiVersion: client.authentication.k8s.io/v1beta1, command: gke-gcloud-auth-plugin}",
        ),
    );
    assert_eq!(bare.program(), Path::new("gke-gcloud-auth-plugin"));
    let (_, absolute) = plugin(
        "exec-absolute",
        &with_exec(
            SERVER,
            "{apiVersion: client.authentication.k8s.io/v1beta1, command: /usr/bin/aws}",
        ),
    );
    assert_eq!(absolute.program(), Path::new("/usr/bin/aws"));
}

#[test]
fn exec_stanzas_the_proxy_cannot_run_are_refused_by_field() {
    let cases = [
        ("{command: aws, interactiveMode: Never}", "KC: users[u].user.exec.apiVersion: required"),
        (
            "{apiVersion: client.authentication.k8s.io/v1alpha1, command: aws}",
            "KC: users[u].user.exec.apiVersion: \"client.authentication.k8s.io/v1alpha1\" is not supported; use client.authentication.k8s.io/v1 or client.authentication.k8s.io/v1beta1",
        ),
        (
            "{apiVersion: client.authentication.k8s.io/v1, command: aws}",
            "KC: users[u].user.exec.interactiveMode: required with client.authentication.k8s.io/v1 (Never or IfAvailable)",
        ),
        (
            "{apiVersion: client.authentication.k8s.io/v1, command: aws, interactiveMode: Always}",
            "KC: users[u].user.exec.interactiveMode: Always is not supported: it needs a terminal and the proxy never has one; use Never, or IfAvailable with a plugin that can do without input",
        ),
        (
            "{apiVersion: client.authentication.k8s.io/v1beta1, command: aws, interactiveMode: Sometimes}",
            "KC: users[u].user.exec.interactiveMode: \"Sometimes\" is not one of Never, IfAvailable, Always",
        ),
        (
            "{apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}",
            "KC: users[u].user.exec.command: required",
        ),
    ];
    for (i, (stanza, expected)) in cases.iter().enumerate() {
        assert_eq!(error(&format!("exec{i}"), &with_exec(SERVER, stanza), None), *expected);
    }
    let e = error("exec-shape", &with_exec(SERVER, "{command: [a, b]}"), None);
    assert!(e.starts_with("KC: users[u].user.exec: not an exec stanza: "), "{e}");
}

#[test]
fn an_exec_plugin_beside_a_token_is_a_conflict() {
    let kc = "current-context: c\nclusters: [{name: k, cluster: {server: 'https://k'}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nusers: [{name: u, user: {tokenFile: token, exec: {command: aws, apiVersion: client.authentication.k8s.io/v1beta1}}}]\n";
    assert_eq!(
        error("exec-and-token", kc, None),
        "KC: users[u].user.exec and users[u].user.tokenFile are both set; keep one"
    );
}

#[test]
fn the_cluster_is_described_to_the_plugin_only_when_it_asks() {
    let cluster = "{server: 'https://k:6443', certificate-authority: ca.crt, disable-compression: true, extensions: [{name: other, extension: {a: 1}}, {name: client.authentication.k8s.io/exec, extension: {audience: aud-1, nested: [1, two]}}]}";
    let (_, p) = plugin(
        "exec-cluster",
        &with_exec(
            cluster,
            "{apiVersion: client.authentication.k8s.io/v1, command: aws, interactiveMode: Never, provideClusterInfo: true}",
        ),
    );
    let info: serde_json::Value = serde_json::from_str(p.exec_info()).expect("JSON");
    assert_eq!(
        info,
        serde_json::json!({
            "apiVersion": "client.authentication.k8s.io/v1",
            "kind": "ExecCredential",
            "spec": {
                "cluster": {
                    "server": "https://k:6443",
                    // `ca.crt` holds "ca".
                    "certificate-authority-data": "Y2E=",
                    "disable-compression": true,
                    "config": {"audience": "aud-1", "nested": [1, "two"]},
                },
                "interactive": false,
            },
        })
    );
    let (_, insecure) = plugin(
        "exec-cluster-insecure",
        &with_exec(
            "{server: 'https://k:6443', insecure-skip-tls-verify: true}",
            "{apiVersion: client.authentication.k8s.io/v1beta1, command: aws, provideClusterInfo: true}",
        ),
    );
    let info: serde_json::Value = serde_json::from_str(insecure.exec_info()).expect("JSON");
    assert_eq!(
        info["spec"]["cluster"],
        serde_json::json!({"server": "https://k:6443", "insecure-skip-tls-verify": true})
    );
}
