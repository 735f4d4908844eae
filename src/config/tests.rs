//! Unit tests of `config/mod.rs`.

use std::time::Duration;

use super::*;

fn config(yaml: &str) -> Result<Config, ConfigError> {
    Config::from_raw(RawConfig::from_yaml(yaml).expect("yaml"))
}

fn error(yaml: &str) -> String {
    config(yaml).expect_err("invalid").to_string()
}

#[test]
fn defaults_apply_to_an_empty_file() {
    let c = config("").unwrap();
    assert_eq!(c.listen, DEFAULT_LISTEN.parse().unwrap());
    assert!(c.downstreams.is_empty());
    assert_eq!(c.max_document_bytes, DEFAULT_MAX_DOCUMENT_BYTES);
}

#[test]
fn priorities_default_to_configuration_order() {
    let c = config(
        "downstreams:\n- {name: a, url: 'http://127.0.0.1:1'}\n- {name: b, url: 'http://127.0.0.1:2/', priority: 7}\n- {name: c, url: 'http://127.0.0.1:3'}\n",
    )
    .unwrap();
    let p: Vec<_> = c.downstreams.iter().map(|d| (d.name.as_str(), d.priority)).collect();
    assert_eq!(p, [("a", 3), ("b", 7), ("c", 1)]);
    assert_eq!(c.downstreams[1].url, "http://127.0.0.1:2");
}

#[test]
fn unknown_fields_are_refused_with_their_name() {
    let e =
        RawConfig::from_yaml("downstreams:\n- {name: a, url: 'http://x', tokn: f}\n").unwrap_err();
    assert!(e.to_string().contains("tokn"), "{e}");
}

/// Every duration of the file is bounded at load, naming its field: a
/// value too long for a timer used to be accepted and fail later, at
/// every use (`Instant` overflow).
#[test]
fn durations_longer_than_a_day_are_refused_naming_their_field() {
    let huge = "2562047788015215h";
    let message = |field: &str| format!("{field}: \"{huge}\" is longer than the maximum, 24h");
    assert_eq!(error(&format!("pollInterval: {huge}")), message("pollInterval"));
    for field in ["timeout", "pollInterval"] {
        assert_eq!(
            error(&format!("downstreams:\n- {{name: a, url: 'http://x', {field}: {huge}}}")),
            message(&format!("downstreams[0].{field}"))
        );
        assert_eq!(
            error(&format!("downstreams:\n- {{name: a, url: 'http://x', {field}: 25h}}")),
            format!("downstreams[0].{field}: \"25h\" is longer than the maximum, 24h")
        );
    }
    let c = config("pollInterval: 24h\ndownstreams:\n- {name: a, url: 'http://x', timeout: 24h}")
        .unwrap();
    assert_eq!(c.downstreams[0].poll_interval, duration::MAX_DURATION);
    assert_eq!(c.downstreams[0].timeout, duration::MAX_DURATION);
}

/// `url: http://user:pass@host` was refused with the password quoted in
/// the error; so was a URL that did not even parse.
#[test]
fn refused_urls_never_show_their_password() {
    for (url, shown) in [
        ("http://user:hunter2@host", "http://user:***@host"),
        ("https://admin:hunter2@10.0.0.1:6443/", "https://admin:***@10.0.0.1:6443/"),
        ("http://user:hun ter2@host", "http://user:***@host"),
        ("http://user:hunter2@host/?q=1", "http://user:***@host/?q=1"),
        ("ftp://user:hunter2@host", "ftp://user:***@host"),
        ("https://hunter2@host", "https://***@host"),
    ] {
        let e = error(&format!("downstreams:\n- {{name: a, url: '{url}'}}"));
        assert!(!e.contains("hunter2"), "{url}: {e}");
        assert!(e.starts_with(&format!("downstreams[0].url: {shown:?} ")), "{url}: {e}");
    }
    let e = parse_downstream_flag("http://user:hunter2@host").unwrap_err();
    assert_eq!(e, "\"http://user:***@host\" is not NAME=URL");
}

#[test]
fn listen_takes_a_host_name_that_resolves() {
    let c = Config::from_raw(RawConfig::from_yaml("listen: localhost:8081").unwrap()).unwrap();
    assert!(c.listen.ip().is_loopback(), "{}", c.listen);
    assert_eq!(c.listen.port(), 8081);
    assert!(error("listen: no-such-host.invalid:80").contains("does not resolve"));
}

#[test]
fn sizes_take_units_in_the_file() {
    let c = Config::from_raw(
        RawConfig::from_yaml("maxDocumentBytes: 32Mi\nmemoryBudgetBytes: 256MiB").unwrap(),
    )
    .unwrap();
    assert_eq!(c.max_document_bytes, 32 << 20);
    assert_eq!(c.memory_budget_bytes, 256 << 20);
    assert!(RawConfig::from_yaml("maxDocumentBytes: 64 furlongs").is_err());
}

#[test]
fn bad_values_name_their_field() {
    assert_eq!(
        error("listen: localhost"),
        "listen: \"localhost\" is not HOST:PORT (an IP address or a host name, and a port)"
    );
    assert_eq!(error("pollInterval: 0s"), "pollInterval: \"0s\" must be more than zero");
    assert_eq!(error("downstreams:\n- {url: 'http://x'}"), "downstreams[0].name: missing");
    assert_eq!(
        error("downstreams:\n- {name: a, url: 'ftp://x'}"),
        "downstreams[0].url: \"ftp://x\" must start with http:// or https://"
    );
    assert_eq!(
        error("downstreams:\n- {name: a, url: 'http://x'}\n- {name: a, url: 'http://y'}"),
        "downstreams[1].name: \"a\" is used twice"
    );
    assert_eq!(
        error("downstreams:\n- {name: a, url: 'http://x', timeout: 10}"),
        "downstreams[0].timeout: \"10\" needs a unit: ms, s, m or h"
    );
    assert_eq!(
        error("downstreams:\n- {name: a, url: 'https://x', tokenFile: /does/not/exist}"),
        "downstreams[0].tokenFile: /does/not/exist is not a readable file"
    );
    assert_eq!(
        error("downstreams:\n- {name: a, url: 'http://u:p@x'}"),
        "downstreams[0].url: \"http://u:***@x\" carries credentials; use tokenFile or a client certificate"
    );
    assert_eq!(
        error("downstreams:\n- {name: a, url: 'http://x', insecureSkipTlsVerify: true}"),
        "downstreams[0].url: TLS settings are given but the URL is not https://"
    );
}

/// The example in `deploy/` parses, and every field it shows is one
/// `RawConfig` knows (unknown fields are refused). Its files do not
/// exist here, so validation stops at the first of them — by name.
#[test]
fn the_example_config_in_deploy_parses() {
    let raw = RawConfig::from_yaml(include_str!("../../deploy/openapi-proxy.yaml"))
        .expect("example parses");
    assert_eq!(raw.downstreams.len(), 5);
    assert_eq!(raw.downstreams[1].priority, Some(0));
    let e = Config::from_raw(raw).expect_err("its files do not exist on a build machine");
    assert_eq!(
        e.to_string(),
        "downstreams[0].caFile: /etc/kubernetes/pki/ca.crt is not a readable file"
    );
}

/// A mounted service account in a fresh directory, and the environment
/// of a pod whose API service is `10.96.0.1:443`.
fn pod(name: &str) -> Environment {
    let dir = std::env::temp_dir().join(format!("openapi-proxy-cfg-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    for f in ["token", "ca.crt", "own-ca.crt"] {
        std::fs::write(dir.join(f), "x").expect("file");
    }
    Environment {
        service_account_dir: dir,
        service_host: Some("10.96.0.1".into()),
        service_port: Some("443".into()),
    }
}

fn in_pod(env: &Environment, yaml: &str) -> Result<Config, ConfigError> {
    Config::from_raw_in(RawConfig::from_yaml(yaml).expect("yaml"), env)
}

#[test]
fn in_cluster_uses_the_service_account_and_the_service_address() {
    let env = pod("incluster");
    let c = in_pod(&env, "downstreams:\n- {name: kube, inCluster: true}").expect("valid");
    let d = &c.downstreams[0];
    assert_eq!(d.url, "https://10.96.0.1:443");
    assert_eq!(d.token, Some(env.service_account_dir.join("token").into()));
    assert_eq!(d.tls.ca, Some(PemSource::File(env.service_account_dir.join("ca.crt"))));
}

#[test]
fn a_downstreams_own_fields_win_over_in_cluster_ones() {
    let env = pod("override");
    let own_ca = env.service_account_dir.join("own-ca.crt");
    let yaml = format!(
        "downstreams:\n- {{name: m, inCluster: true, url: 'https://metrics.kube-system.svc', caFile: {}}}",
        own_ca.display()
    );
    let d = in_pod(&env, &yaml).expect("valid").downstreams.remove(0);
    assert_eq!(d.url, "https://metrics.kube-system.svc");
    assert_eq!(d.tls.ca, Some(PemSource::File(own_ca)));
    assert_eq!(d.token, Some(env.service_account_dir.join("token").into()));
}

#[test]
fn credential_sources_are_checked_and_named() {
    let env = pod("errors");
    let error = |yaml: &str| in_pod(&env, yaml).expect_err("invalid").to_string();
    let outside = Environment { service_host: None, service_port: None, ..env.clone() };
    assert_eq!(
        in_pod(&outside, "downstreams:\n- {name: k, inCluster: true}")
            .expect_err("no address")
            .to_string(),
        "downstreams[0].url: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not running in a pod?); set url"
    );
    assert_eq!(
        error("downstreams:\n- {name: k, inCluster: true, kubeconfig: /x}"),
        "downstreams[0].kubeconfig: inCluster is set too; choose one"
    );
    assert_eq!(
        error("downstreams:\n- {name: k, url: 'https://k', context: admin}"),
        "downstreams[0].context: set without kubeconfig"
    );
    assert_eq!(
        error("downstreams:\n- {name: k, kubeconfig: /does/not/exist}"),
        "downstreams[0].kubeconfig: reading /does/not/exist: No such file or directory (os error 2)"
    );
    let no_sa = Environment { service_account_dir: "/does/not/exist".into(), ..env.clone() };
    assert_eq!(
        in_pod(&no_sa, "downstreams:\n- {name: k, inCluster: true}")
            .expect_err("no token")
            .to_string(),
        "downstreams[0].inCluster: /does/not/exist/token is not a readable file (not running in a pod, or automountServiceAccountToken is false)"
    );
}

#[test]
fn durations_take_a_unit() {
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
    assert!(parse_duration("-1s").is_err());
    assert!(parse_duration("s").is_err());
}

#[test]
fn downstream_flag_is_name_equals_url() {
    let d = parse_downstream_flag("kube=https://10.0.0.1:6443").unwrap();
    assert_eq!(
        (d.name.as_deref(), d.url.as_deref()),
        (Some("kube"), Some("https://10.0.0.1:6443"))
    );
    assert!(parse_downstream_flag("nope").is_err());
}

#[test]
fn the_default_memory_budget_follows_the_container_limit() {
    let three = "downstreams:\n- {name: a, url: 'http://127.0.0.1:1'}\n- {name: b, url: 'http://127.0.0.1:2'}\n- {name: c, url: 'http://127.0.0.1:3'}\n";
    let on = |machine: memory::MachineMemory, yaml: &str| {
        Config::from_raw_on(RawConfig::from_yaml(yaml).expect("yaml"), &pod("x"), &machine)
            .expect("valid")
    };
    let limited = memory::MachineMemory { container_limit: Some(1 << 30), physical: Some(8 << 30) };
    let c = on(limited, three);
    assert_eq!(c.memory_budget_bytes, 480 << 20);
    assert_eq!(c.memory_budget_source, memory::BudgetSource::ContainerLimit(1 << 30));
    // Without a share of their own, downstreams draw on one pool.
    let shares: Vec<_> = c.downstreams.iter().map(|d| d.memory_share).collect();
    assert_eq!(shares, [None; 3]);
    // Nothing readable: the manifests' limit is assumed.
    let c = on(memory::MachineMemory::default(), three);
    assert_eq!(c.memory_budget_bytes, DEFAULT_MEMORY_BUDGET_BYTES);
    assert_eq!(DEFAULT_MEMORY_BUDGET_BYTES, memory::budget_for_limit(memory::ASSUMED_LIMIT_BYTES));
    // An explicit budget wins, and explicit shares are kept as written.
    let c = on(
        limited,
        "memoryBudgetBytes: 100000000\ndownstreams:\n- {name: a, url: 'http://127.0.0.1:1', memoryShareBytes: 60000000}\n- {name: b, url: 'http://127.0.0.1:2'}\n- {name: c, url: 'http://127.0.0.1:3'}\n",
    );
    assert_eq!(c.memory_budget_bytes, 100_000_000);
    assert_eq!(c.memory_budget_source, memory::BudgetSource::Configured);
    let shares: Vec<_> = c.downstreams.iter().map(|d| d.memory_share).collect();
    assert_eq!(shares, [Some(60_000_000), None, None]);
}

#[test]
fn shares_that_do_not_fit_the_budget_are_refused() {
    let e = error(
        "memoryBudgetBytes: 10000000\ndownstreams:\n- {name: a, url: 'http://127.0.0.1:1', memoryShareBytes: 8000000}\n- {name: b, url: 'http://127.0.0.1:2', memoryShareBytes: 8000000}\n",
    );
    assert!(e.contains("memoryBudgetBytes") && e.contains("16000000"), "{e}");
    let e = error(
        "memoryBudgetBytes: 2000000\ndownstreams:\n- {name: a, url: 'http://127.0.0.1:1'}\n- {name: b, url: 'http://127.0.0.1:2'}\n- {name: c, url: 'http://127.0.0.1:3'}\n",
    );
    assert!(e.contains("less than 1048576"), "{e}");
    let e = error("memoryBudgetBytes: 1000\n");
    assert!(e.contains("memoryBudgetBytes"), "{e}");
    let e = error("downstreams:\n- {name: a, url: 'http://127.0.0.1:1', memoryShareBytes: 10}\n");
    assert!(e.contains("downstreams[0].memoryShareBytes"), "{e}");
}

/// The bounds on what stays open: read from the file, defaulted (Go's
/// 250 streams, 2,000 long-running passes), and never zero, which would
/// refuse every watch or stream.
#[test]
fn stream_and_long_running_bounds_are_read_defaulted_and_at_least_one() {
    let c = config("").unwrap();
    assert_eq!(c.serving.limits.max_streams_per_connection, 250);
    assert_eq!(c.serving.limits.max_long_running_requests, 2000);
    let c = config("limits: {maxStreamsPerConnection: 100, maxLongRunningRequests: 500}").unwrap();
    assert_eq!(c.serving.limits.max_streams_per_connection, 100);
    assert_eq!(c.serving.limits.max_long_running_requests, 500);
    assert!(
        error("limits: {maxStreamsPerConnection: 0}")
            .contains("limits.maxStreamsPerConnection (--max-streams-per-connection)")
    );
    assert!(
        error("limits: {maxLongRunningRequests: 0}")
            .contains("limits.maxLongRunningRequests (--max-long-running-requests)")
    );
}

/// A client's shares: a quarter of each total unless set (of the total
/// set, when only it is), never zero and never above the total.
#[test]
fn per_client_shares_default_to_a_quarter_of_the_totals() {
    let c = config("").unwrap();
    assert_eq!(c.serving.limits.max_requests_inflight_per_client, 150);
    assert_eq!(c.serving.limits.max_long_running_requests_per_client, 500);
    let c = config("limits: {maxRequestsInflight: 2, maxLongRunningRequests: 40}").unwrap();
    assert_eq!(c.serving.limits.max_requests_inflight_per_client, 1);
    assert_eq!(c.serving.limits.max_long_running_requests_per_client, 10);
    let c =
        config("limits: {maxRequestsInflightPerClient: 600, maxLongRunningRequestsPerClient: 7}")
            .unwrap();
    assert_eq!(c.serving.limits.max_requests_inflight_per_client, 600);
    assert_eq!(c.serving.limits.max_long_running_requests_per_client, 7);
    let e = error("limits: {maxRequestsInflightPerClient: 0}");
    assert!(e.contains("limits.maxRequestsInflightPerClient"), "{e}");
    let e = error("limits: {maxLongRunningRequests: 10, maxLongRunningRequestsPerClient: 11}");
    assert!(e.contains("limits.maxLongRunningRequestsPerClient") && e.contains("at most"), "{e}");
}

/// Metadata is open unless `delegated` is asked for; its cache has a
/// lifetime and a bound, each refused at zero naming its flag.
#[test]
fn metadata_authentication_is_none_unless_delegated() {
    let c = config("").unwrap();
    assert_eq!(c.metadata_authentication, MetadataAuthentication::None);
    assert_eq!(c.serving.limits.metadata_authentication_cache_ttl, Duration::from_secs(10));
    assert_eq!(c.serving.limits.metadata_authentication_cache_entries, 10_000);
    let c = config(
        "metadataAuthentication: delegated\nlimits:\n  metadataAuthenticationCacheTtl: 2s\n  \
         metadataAuthenticationCacheEntries: 5\n",
    )
    .unwrap();
    assert_eq!(c.metadata_authentication, MetadataAuthentication::Delegated);
    assert_eq!(c.serving.limits.metadata_authentication_cache_ttl, Duration::from_secs(2));
    assert_eq!(c.serving.limits.metadata_authentication_cache_entries, 5);
    let e = RawConfig::from_yaml("metadataAuthentication: tokenreview\n").unwrap_err();
    assert!(e.to_string().contains("none") && e.to_string().contains("delegated"), "{e}");
    assert_eq!(
        error("limits: {metadataAuthenticationCacheEntries: 0}"),
        "limits.metadataAuthenticationCacheEntries (--metadata-authentication-cache-entries): \
         must be at least 1"
    );
    assert!(error("limits: {metadataAuthenticationCacheTtl: 0s}").starts_with(
        "limits.metadataAuthenticationCacheTtl (--metadata-authentication-cache-ttl)"
    ));
    assert_eq!(MetadataAuthentication::parse("delegated"), Ok(MetadataAuthentication::Delegated));
    assert!(MetadataAuthentication::parse("yes").is_err());
}
