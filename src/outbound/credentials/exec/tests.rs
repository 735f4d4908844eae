//! Running real plugins: small shell scripts written at test time, resolved
//! through the kubeconfig loader, run by the cache and by the downstream
//! client against a fake downstream that wants a bearer token.
//!
//! The standard plugin counts its runs in `runs`, writes the
//! `KUBERNETES_EXEC_INFO` it got to `exec-info.json` and its arguments to
//! `args`, says two things on stderr (one of them its token), and answers
//! `token-N` for its N-th run, with whatever `EXPIRY` adds to its status.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

use super::cache::ExecTokenCache;
use super::run::ExecError;
use super::*;
use crate::demo::{Route, Routes, start_site};
use crate::outbound::client::{DownstreamClient, Fetched};
use crate::outbound::credentials::TokenSource;
use crate::outbound::credentials::kubeconfig::resolve;
use crate::outbound::tls::TlsConfig;

const STANDARD: &str = r#"#!/bin/sh
echo run >> "$PLUGIN_DIR/runs"
n=$(wc -l < "$PLUGIN_DIR/runs" | tr -d ' ')
printf '%s' "$KUBERNETES_EXEC_INFO" > "$PLUGIN_DIR/exec-info.json"
for a in "$@"; do printf '%s\n' "$a"; done > "$PLUGIN_DIR/args"
echo "$GREETING from the plugin, run $n" >&2
echo "issued token-$n" >&2
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"token-%s"%s}}\n' "$n" "$EXPIRY"
"#;

/// A plugin script in a fresh directory, with the kubeconfig naming it.
struct Fixture {
    dir: PathBuf,
    plugin: Arc<ExecPlugin>,
}

impl Fixture {
    /// `script` as `plugin.sh`; `expiry` is what the standard script adds
    /// to its status.
    fn new(name: &str, script: &str, expiry: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("openapi-proxy-exec-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).expect("temp dir");
        let script_path = dir.join("bin/plugin.sh");
        std::fs::write(&script_path, script).expect("script");
        std::fs::set_permissions(&script_path, std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let kubeconfig = dir.join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                r#"current-context: c
clusters:
- name: k
  cluster:
    server: https://k.example:6443
    certificate-authority-data: Q0EtUEVN
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {{audience: aud-1}}
contexts: [{{name: c, context: {{cluster: k, user: u}}}}]
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/plugin.sh
      args: [--cluster, k, two words]
      env:
      - {{name: PLUGIN_DIR, value: '{dir}'}}
      - {{name: GREETING, value: hello}}
      - {{name: EXPIRY, value: '{expiry}'}}
      interactiveMode: Never
      provideClusterInfo: true
      installHint: not shown
"#,
                dir = dir.display(),
            ),
        )
        .expect("kubeconfig");
        let plugin = match resolve(&kubeconfig, None).expect("resolves").token {
            Some(TokenSource::Exec(plugin)) => plugin,
            other => panic!("not an exec plugin: {other:?}"),
        };
        Self { dir, plugin }
    }

    fn standard(name: &str, expiry: &str) -> Self {
        Self::new(name, STANDARD, expiry)
    }

    fn cache(&self, limits: ExecLimits) -> ExecTokenCache {
        ExecTokenCache::new(Arc::clone(&self.plugin), limits, "kube")
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(self.dir.join("runs")).map_or(0, |t| t.lines().count())
    }

    fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).expect("the plugin wrote it")
    }
}

/// Every field of every event, as text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<BTreeMap<String, String>>>>);

impl Captured {
    fn events(&self) -> Vec<BTreeMap<String, String>> {
        self.0.lock().expect("log lines").clone()
    }

    /// The `line` fields of the stderr events about downstream `kube`.
    fn stderr_lines(&self) -> Vec<String> {
        self.events()
            .iter()
            .filter(|e| {
                e.get("message").map(String::as_str)
                    == Some("exec credential plugin wrote to stderr")
                    && e.get("downstream").map(String::as_str) == Some("kube")
                    && e.get("level").map(String::as_str) == Some("WARN")
            })
            .filter_map(|e| e.get("line").cloned())
            .collect()
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: tracing::Subscriber> Layer<S> for Captured {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        fields.insert("level".to_owned(), event.metadata().level().to_string());
        event.record(&mut Fields(&mut fields));
        self.0.lock().expect("log lines").push(fields);
    }
}

/// A subscriber that lives as long as the test process. tracing-core
/// decides whether a callsite is enabled from every live subscriber, but
/// when only one is registered it asks the default of whichever thread
/// hits the callsite first: a test without a subscriber would then turn a
/// callsite off for the capturing test too. With this one always there,
/// the capturing subscriber is always asked.
static ALWAYS: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();

/// Captures this thread's events, at every level, until the guard drops.
fn capture() -> (Captured, tracing::subscriber::DefaultGuard) {
    ALWAYS.get_or_init(|| tracing::Dispatch::new(tracing_subscriber::registry()));
    let captured = Captured::default();
    let guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(captured.clone()));
    (captured, guard)
}

const FAR_FUTURE: &str = r#","expirationTimestamp":"2999-01-01T00:00:00Z""#;
const PAST: &str = r#","expirationTimestamp":"2000-01-01T00:00:00Z""#;

#[actix_web::test]
async fn a_token_is_cached_until_it_expires() {
    let f = Fixture::standard("cached", FAR_FUTURE);
    let mut cache = f.cache(ExecLimits::default());
    for _ in 0..3 {
        let header = cache.header().await.expect("a token");
        assert_eq!(header, "Bearer token-1");
        assert!(header.is_sensitive());
    }
    assert_eq!(f.runs(), 1);
    assert!(!format!("{cache:?}").contains("token-1"), "{cache:?}");
}

#[actix_web::test]
async fn an_expired_token_is_issued_again() {
    let f = Fixture::standard("expired", PAST);
    let mut cache = f.cache(ExecLimits::default());
    for n in 1..=3 {
        assert_eq!(cache.header().await.expect("a token"), format!("Bearer token-{n}").as_str());
    }
    assert_eq!(f.runs(), 3);
}

#[actix_web::test]
async fn a_token_without_expiry_is_kept_until_rejected() {
    let f = Fixture::standard("no-expiry", "");
    let mut cache = f.cache(ExecLimits::default());
    assert_eq!(cache.header().await.expect("a token"), "Bearer token-1");
    assert_eq!(cache.header().await.expect("a token"), "Bearer token-1");
    assert_eq!(f.runs(), 1);
    let first = cache.header().await.expect("a token");
    assert!(cache.rejected(&first));
    assert!(!cache.rejected(&first), "nothing left to reject");
    let second = cache.header().await.expect("a token");
    assert_eq!(second, "Bearer token-2");
    assert_eq!(f.runs(), 2);
    // A late 401 to the first token keeps the second: asking again with
    // it may help, and the plugin does not run again for it.
    assert!(cache.rejected(&first));
    assert_eq!(cache.header().await.expect("a token"), "Bearer token-2");
    assert_eq!(f.runs(), 2);
}

#[actix_web::test]
async fn the_plugin_gets_its_args_env_and_exec_info() {
    let f = Fixture::standard("inputs", "");
    f.cache(ExecLimits::default()).header().await.expect("a token");
    assert_eq!(f.file("args"), "--cluster\nk\ntwo words\n");
    let info: serde_json::Value =
        serde_json::from_str(&f.file("exec-info.json")).expect("KUBERNETES_EXEC_INFO is JSON");
    assert_eq!(
        info,
        serde_json::json!({
            "apiVersion": "client.authentication.k8s.io/v1",
            "kind": "ExecCredential",
            "spec": {
                "cluster": {
                    "server": "https://k.example:6443",
                    "certificate-authority-data": "Q0EtUEVN",
                    "config": {"audience": "aud-1"},
                },
                "interactive": false,
            },
        })
    );
}

#[actix_web::test]
async fn stderr_is_logged_line_by_line_and_the_token_never() {
    let (logs, _guard) = capture();
    let f = Fixture::standard("stderr", "");
    let mut cache = f.cache(ExecLimits::default());
    let header = cache.header().await.expect("a token");
    assert_eq!(header, "Bearer token-1");
    assert_eq!(logs.stderr_lines(), ["hello from the plugin, run 1", "issued ***"]);
    let events = logs.events();
    assert!(
        events.iter().flat_map(|e| e.values()).all(|v| !v.contains("token-1")),
        "the token reached the log: {events:?}"
    );
    let line = events.iter().find(|e| e.contains_key("line")).expect("a stderr line");
    assert!(line["user"].ends_with("kubeconfig users[u]"), "{line:?}");
    assert_eq!(line["command"], "./bin/plugin.sh");
}

#[actix_web::test]
async fn a_plugin_past_its_deadline_is_killed_and_the_run_fails() {
    let script = "#!/bin/sh\necho $$ > \"$PLUGIN_DIR/pid\"\necho waiting >&2\nexec sleep 30\n";
    let f = Fixture::new("timeout", script, "");
    let limits = ExecLimits { timeout: Duration::from_secs(1), ..ExecLimits::default() };
    let started = Instant::now();
    let e = f.cache(limits).header().await.expect_err("times out");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert!(matches!(e, super::cache::ExecTokenError::Run(ExecError::Timeout(_))), "{e:?}");
    assert_eq!(crate::error_chain(&e), "it did not finish within 1s and was killed");
    let pid = f.file("pid").trim().to_owned();
    // Killed: gone, or a zombie until it is reaped.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.chars().next()))
            .flatten();
        if matches!(state, None | Some('Z' | 'X')) {
            break;
        }
        assert!(Instant::now() < deadline, "process {pid} still runs ({state:?})");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[actix_web::test]
async fn more_stdout_than_the_cap_is_an_error() {
    let script = "#!/bin/sh\nhead -c 3000 /dev/zero | tr '\\0' x\n";
    let f = Fixture::new("large", script, "");
    let limits = ExecLimits { max_stdout: 1000, ..ExecLimits::default() };
    let e = f.cache(limits).header().await.expect_err("too large");
    assert_eq!(crate::error_chain(&e), "it wrote more than 1000 bytes to stdout");
}

#[actix_web::test]
async fn a_failing_plugin_is_an_error_naming_the_user_and_the_command() {
    let (logs, _guard) = capture();
    let script = "#!/bin/sh\necho 'error: you must log in first' >&2\nexit 3\n";
    let f = Fixture::new("exit", script, "");
    let client = DownstreamClient::new(
        "kube",
        "http://127.0.0.1:1",
        &TlsConfig::default(),
        Some(&TokenSource::Exec(Arc::clone(&f.plugin))),
        Duration::from_secs(2),
        1024,
    )
    .expect("client");
    let e = client.get("/openapi/v2", "application/json", None).await.expect_err("no token");
    assert_eq!(e.reason(), "credentials");
    let chain = crate::error_chain(&e);
    assert!(
        chain.starts_with("exec credential plugin ./bin/plugin.sh of ")
            && chain.ends_with(
                "kubeconfig users[u]: it exited with exit status: 3 (its stderr is logged)"
            ),
        "{chain}"
    );
    assert_eq!(logs.stderr_lines(), ["error: you must log in first"], "{:?}", logs.events());
}

#[actix_web::test]
async fn a_missing_command_shows_the_install_hint() {
    let dir = std::env::temp_dir().join(format!("openapi-proxy-exec-hint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "current-context: c\nclusters: [{name: k, cluster: {server: 'https://k'}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nusers: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: openapi-proxy-no-such-plugin, installHint: 'install it with: apt-get install the-plugin'}}}]\n",
    )
    .expect("kubeconfig");
    let Some(TokenSource::Exec(plugin)) = resolve(&kubeconfig, None).expect("resolves").token
    else {
        panic!("not an exec plugin");
    };
    let e = ExecTokenCache::new(plugin, ExecLimits::default(), "kube")
        .header()
        .await
        .expect_err("not found");
    assert_eq!(
        crate::error_chain(&e),
        "command not found; install it with: apt-get install the-plugin"
    );
}

/// A downstream that takes only the plugin's second token.
fn site_accepting(authorization: &str) -> crate::demo::Site {
    let routes = Routes::default();
    routes.set("/openapi/v2", Route::json(&b"{}"[..]));
    routes.require_authorization(Some(authorization));
    start_site(routes).expect("site")
}

fn client_for(site: &crate::demo::Site, f: &Fixture) -> DownstreamClient {
    DownstreamClient::new(
        "kube",
        &site.url(),
        &TlsConfig::default(),
        Some(&TokenSource::Exec(Arc::clone(&f.plugin))),
        Duration::from_secs(5),
        1024,
    )
    .expect("client")
}

fn authorizations(site: &crate::demo::Site) -> Vec<String> {
    site.routes
        .seen()
        .iter()
        .map(|r| {
            r.headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[actix_web::test]
async fn a_401_runs_the_plugin_again_and_retries_the_request_once() {
    let f = Fixture::standard("unauthorized", "");
    let site = site_accepting("Bearer token-2");
    let client = client_for(&site, &f);
    let fetched = client.get("/openapi/v2", "application/json", None).await.expect("retried");
    assert!(matches!(fetched, Fetched::Body { .. }), "{fetched:?}");
    assert_eq!(f.runs(), 2);
    assert_eq!(authorizations(&site), ["Bearer token-1", "Bearer token-2"]);
    // The new token is kept.
    client.get("/openapi/v2", "application/json", None).await.expect("cached token");
    assert_eq!(f.runs(), 2);
    assert_eq!(authorizations(&site).last().map(String::as_str), Some("Bearer token-2"));
}

#[actix_web::test]
async fn a_second_401_is_a_failed_fetch_and_not_retried_again() {
    let f = Fixture::standard("unauthorized-twice", FAR_FUTURE);
    let site = site_accepting("Bearer never");
    let client = client_for(&site, &f);
    let e = client.get("/openapi/v2", "application/json", None).await.expect_err("401");
    assert_eq!(e.reason(), "status");
    assert_eq!(authorizations(&site), ["Bearer token-1", "Bearer token-2"]);
    // The refused token is not sent again, though it has not expired.
    client.get("/openapi/v2", "application/json", None).await.expect_err("401");
    assert_eq!(f.runs(), 4);
    assert_eq!(authorizations(&site)[2], "Bearer token-3");
}

/// Requests in flight together, all answered 401 to the same token: the
/// plugin runs once more for all of them, not once each, and each is
/// retried with the new token.
#[actix_web::test]
async fn concurrent_401s_to_one_token_run_the_plugin_once() {
    let f = Fixture::standard("unauthorized-together", "");
    let site = site_accepting("Bearer token-2");
    site.routes.set("/openapi/v2", Route::json(&b"{}"[..]).delayed(Duration::from_millis(50)));
    let client = client_for(&site, &f);
    let gets = (0..6).map(|_| client.get("/openapi/v2", "application/json", None));
    let results = futures_util::future::join_all(gets).await;
    assert!(results.iter().all(|r| matches!(r, Ok(Fetched::Body { .. }))), "{results:?}");
    assert_eq!(f.runs(), 2);
    let mut sent = authorizations(&site);
    sent.sort();
    assert_eq!(sent, [["Bearer token-1"; 6], ["Bearer token-2"; 6]].concat());
    assert!(site.routes.most_in_flight() > 1);
}
