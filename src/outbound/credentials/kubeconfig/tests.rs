//! Unit tests of `outbound/credentials/kubeconfig.rs`.

use super::*;

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
    assert!(matches!(c.token, Some(BearerToken::Inline { ref value, .. }) if value == "dev-token"));
}

#[test]
fn a_named_context_wins_and_relative_paths_follow_the_file() {
    let path = write("named", TWO_CONTEXTS);
    let dir = path.parent().expect("dir");
    let c = resolve(&path, Some("prod")).expect("resolves");
    assert_eq!(c.server.as_deref(), Some("https://prod.example:6443"));
    assert_eq!(c.ca, Some(PemSource::File(dir.join("ca.crt"))));
    assert_eq!(c.token, Some(BearerToken::File(dir.join("token"))));
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
    assert_eq!(c.token, Some(BearerToken::File(path.with_file_name("token"))));
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
            "{exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}}",
            "KC: users[u].user.exec is not supported: exec credential plugins are not run by the proxy; use a token, tokenFile or a client certificate",
        ),
        (
            "{auth-provider: {name: oidc}}",
            "KC: users[u].user.auth-provider is not supported: auth-provider plugins are not run by the proxy; use a token, tokenFile or a client certificate",
        ),
        (
            "{username: a, password: b}",
            "KC: users[u].user.username is not supported: use a token, tokenFile or a client certificate",
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
