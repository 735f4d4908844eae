//! kubectl 1.32 through the front door does what it does against the
//! downstream directly: get (table and JSON, the same bytes), create,
//! server-side apply, delete, logs, logs -f, exec, get --watch, on two
//! downstreams each owning its group-version, with the client's token
//! only; and a thousand watches through the binary hold bounded memory.
//!
//! The downstreams are the fake cluster (`common/cluster.rs`), judged by
//! kubectl on its own in `cluster`. The proxy serves HTTPS: kubectl sends
//! a token only over HTTPS.

use std::time::Duration;

use actix_web::http::StatusCode;
use openapi_proxy::{Config, RawConfig, ServingTls};

use crate::common::cluster::{Cluster, Serves};
use crate::common::proxy::{POLL, TestProxy};
use crate::common::tls::Pki;
use crate::harness::fake_cluster::{TOKEN, TlsFront, logs_exec_and_watch, manifest, ok, run_as};

/// The proxy's own token for its polls: it must reach no resource request.
const PROXY_TOKEN: &str = "proxy-own-token-5d1c";

/// A front-door proxy serving HTTPS with `pki`, in front of the fake
/// clusters `core` (priority 10, with the proxy's own token) and `widgets`.
async fn proxy(pki: &Pki, core: &Cluster, widgets: &Cluster) -> TestProxy {
    let token = pki.dir.join("proxy-token");
    std::fs::write(&token, PROXY_TOKEN).expect("token file");
    let yaml = format!(
        "frontDoor: true\ndownstreams:\n- name: core\n  url: {}\n  priority: 10\n  tokenFile: {}\n\
         - name: widgets\n  url: {}\n  priority: 5\n",
        core.url(),
        token.display(),
        widgets.url()
    );
    let mut cfg = Config::from_raw(RawConfig::from_yaml(&yaml).expect("yaml")).expect("config");
    cfg.listen = "127.0.0.1:0".parse().expect("address");
    cfg.readiness_grace_period = Duration::ZERO;
    for d in &mut cfg.downstreams {
        d.poll_interval = POLL;
    }
    cfg.serving.tls =
        Some(ServingTls { cert_file: pki.server_cert.clone(), key_file: pki.server_key.clone() });
    let proxy = TestProxy::start_config(&cfg);
    for (key, owner) in [("api/v1", "core"), ("apis/example.com/v1", "widgets")] {
        proxy
            .wait_for(&format!("{key} owned by {owner}"), |s| {
                s.owners.owner(key).is_some_and(|o| &**o == owner)
            })
            .await;
    }
    proxy
}

/// The rows of a table as words, the AGE column (the last) left out: it
/// counts seconds, which may tick between two runs.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|l| {
            let mut words: Vec<String> = l.split_whitespace().map(str::to_owned).collect();
            words.pop();
            words
        })
        .collect()
}

#[actix_web::test]
async fn kubectl_through_the_front_door_does_what_it_does_directly() {
    let core = Cluster::start(TOKEN, Serves::Core);
    let widgets = Cluster::start(TOKEN, Serves::Widgets);
    let pki = Pki::generate("front-door-kubectl");
    let ca = pki.ca.to_str().expect("utf-8 path").to_owned();
    let ca = ca.as_str();
    let direct = TlsFront::start(&core.url(), &pki);
    let proxy = proxy(&pki, &core, &widgets).await;
    let url = proxy.base.clone();

    // get: the same table and the very same JSON as directly.
    let through = ok(&url, ca, &["get", "pods"]).await;
    let straight = ok(&direct.url, ca, &["get", "pods"]).await;
    assert_eq!(rows(&through.stdout), rows(&straight.stdout));
    assert_eq!(rows(&through.stdout)[1][..4], ["demo", "1/1", "Running", "0"]);
    let through = ok(&url, ca, &["get", "pods", "-o", "json"]).await;
    let straight = ok(&direct.url, ca, &["get", "pods", "-o", "json"]).await;
    assert_eq!(through.stdout, straight.stdout, "get -o json, byte for byte");

    // The other group-version goes to its owner.
    let run = ok(&url, ca, &["get", "widgets"]).await;
    assert!(run.stdout.lines().any(|l| l.starts_with("w1 ")), "{}", run.stdout);

    // create, server-side apply, delete.
    let made = manifest(
        "fd-made.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: made\ndata:\n  a: \"1\"\n",
    );
    let run = ok(&url, ca, &["create", "-f", &made, "--validate=false"]).await;
    assert_eq!(run.stdout.trim(), "configmap/made created");
    let again = run_as(&url, ca, TOKEN, &["create", "-f", &made, "--validate=false"]).await;
    assert!(!again.success && again.stderr.contains("AlreadyExists"), "{}", again.stderr);
    let applied = manifest(
        "fd-applied.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  b: two\n",
    );
    let run = ok(&url, ca, &["apply", "--server-side", "-f", &applied, "--validate=false"]).await;
    assert_eq!(run.stdout.trim(), "configmap/applied serverside-applied");
    let run =
        ok(&direct.url, ca, &["get", "configmap", "applied", "-o", "jsonpath={.data.b}"]).await;
    assert_eq!(run.stdout, "two", "written through the proxy, read directly");
    let run = ok(&url, ca, &["delete", "configmap", "made"]).await;
    assert_eq!(run.stdout.trim(), "configmap \"made\" deleted");

    // Logs, plain and followed; exec over WebSocket; a watch that sees a
    // pod created directly.
    let lines = logs_exec_and_watch(&url, ca, &direct.url, "fd-watched.yaml").await;
    assert!(lines.last().is_some_and(|l| l.starts_with("watched ")), "{lines:?}");

    // A wrong token: the downstream's 401, in kubectl's words.
    let run = run_as(&url, ca, "not-the-token", &["get", "pods"]).await;
    assert!(!run.success);
    assert!(run.stderr.contains("You must be logged in to the server"), "{}", run.stderr);
    // No credentials at all (kubectl would prompt): the downstream's 401
    // Status, passed back unchanged.
    let client = https_client(&pki);
    let mut answer = client
        .get(format!("{url}/api/v1/namespaces/default/pods"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    let body: serde_json::Value =
        serde_json::from_slice(&answer.body().await.expect("body")).expect("a Status");
    assert_eq!(body["reason"], "Unauthorized");

    // What the downstreams saw: every resource request carries the
    // client's token or none, never the proxy's; the proxy's polls carry
    // its own.
    let seen: Vec<_> = core.seen().into_iter().chain(widgets.seen()).collect();
    let resource = |p: &str| p.contains("/namespaces/");
    let passed: Vec<_> = seen.iter().filter(|s| resource(&s.path)).collect();
    assert!(passed.len() >= 12, "{passed:#?}");
    let proxy_bearer = format!("Bearer {PROXY_TOKEN}");
    assert!(passed.iter().all(|s| s.authorization.as_deref() != Some(proxy_bearer.as_str())));
    let client_bearer = format!("Bearer {TOKEN}");
    let with_client = passed
        .iter()
        .filter(|s| s.authorization.as_deref() == Some(client_bearer.as_str()))
        .count();
    assert!(with_client >= 10, "{passed:#?}");
    assert!(
        widgets
            .seen()
            .iter()
            .any(|s| s.path.starts_with("/apis/example.com/v1/namespaces/default/widgets"))
    );
    assert!(core.seen().iter().any(|s| s.path.contains("/pods/demo/exec?")));
    assert!(
        core.seen()
            .iter()
            .any(|s| s.path == "/api" && s.authorization.as_deref() == Some(proxy_bearer.as_str())),
        "the proxy polls with its own token"
    );
}

/// An HTTPS client trusting the test CA.
fn https_client(pki: &Pki) -> awc::Client {
    awc::Client::builder()
        .connector(awc::Connector::new().rustls_0_23(crate::common::http1::tls_client(&pki.ca)))
        .timeout(Duration::from_secs(10))
        .finish()
}

/// A thousand watches through the binary at once: each gets its events,
/// a change reaches every one, and the proxy's peak memory stays within
/// a bound per watch (BENCHMARKS.md#front-door has the figures).
#[actix_web::test]
async fn a_thousand_watches_hold_bounded_memory() {
    use std::io::{BufRead, BufReader, Write};

    use crate::common::memory::peak_rss_kib;

    const WATCHES: usize = 1000;
    let core = Cluster::start(TOKEN, Serves::Core);
    let served = serve_front_door("watches", &core.url());
    let base = served.base().await;
    let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().expect("address");
    crate::common::proxy::eventually("the core group is routed", || {
        std::net::TcpStream::connect(addr)
            .and_then(|mut s| {
                s.write_all(
                    format!(
                        "GET /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: p\r\n\
                         Authorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
                    )
                    .as_bytes(),
                )?;
                let mut line = String::new();
                BufReader::new(s).read_line(&mut line)?;
                Ok(line.starts_with("HTTP/1.1 200"))
            })
            .unwrap_or(false)
    })
    .await;
    let before = peak_rss_kib(served.pid()).expect("the proxy runs");

    let opened = actix_web::rt::task::spawn_blocking(move || {
        let mut readers = Vec::with_capacity(WATCHES);
        // From four clients (loopback addresses): one client may hold a
        // quarter of the long-running places.
        for i in 0..WATCHES {
            let from = std::net::Ipv4Addr::new(127, 0, 0, 1 + u8::try_from(i % 4).expect("small"));
            readers.push(watch_pods_from(from, addr, Duration::from_secs(30)));
        }
        // Each: a 200 head, then the existing pod's ADDED event.
        for r in &mut readers {
            let mut line = String::new();
            r.read_line(&mut line).expect("status line");
            assert!(line.starts_with("HTTP/1.1 200"), "{line}");
            until(r, "\"ADDED\"");
        }
        readers
    });
    let mut readers = opened.await.expect("join");
    let during = peak_rss_kib(served.pid()).expect("the proxy runs");

    // A change reaches every watch.
    let create = format!(
        "POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: p\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        POD.len(),
        POD
    );
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.write_all(create.as_bytes()).expect("create");
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).expect("answer");
    assert!(line.starts_with("HTTP/1.1 201"), "{line}");
    let readers = actix_web::rt::task::spawn_blocking(move || {
        for r in &mut readers {
            until(r, "crowd");
        }
        readers
    })
    .await
    .expect("join");
    let after = peak_rss_kib(served.pid()).expect("the proxy runs");
    drop(readers);
    let per_watch = (during.max(after) - before) * 1024 / WATCHES as u64;
    eprintln!(
        "{WATCHES} watches: peak RSS {before} KiB before, {during} KiB with them open, {after} KiB \
         after an event to each: {per_watch} bytes a watch"
    );
    assert!(per_watch <= 96 * 1024, "{per_watch} bytes a watch");
    assert!(after <= 256 * 1024, "peak {after} KiB");
    served.stop();
}

/// A pod whose creation every watch sees.
const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"crowd"},"spec":{"containers":[{"name":"main","image":"busybox"}]}}"#;

/// Reads lines (chunk sizes and events alike) until one contains `needle`.
fn until(r: &mut impl std::io::BufRead, needle: &str) {
    let mut line = String::new();
    loop {
        line.clear();
        let n = r.read_line(&mut line).expect("a line of the watch");
        assert!(n > 0, "the watch ended before {needle}");
        if line.contains(needle) {
            return;
        }
    }
}

/// A watch of the default namespace's pods through the proxy at `addr`,
/// with the fake cluster's token, its answer to be read line by line.
pub(crate) fn watch_pods(
    addr: std::net::SocketAddr,
    timeout: Duration,
) -> std::io::BufReader<std::net::TcpStream> {
    watch_pods_from(std::net::Ipv4Addr::LOCALHOST, addr, timeout)
}

/// [`watch_pods`] from the loopback address `from`.
pub(crate) fn watch_pods_from(
    from: std::net::Ipv4Addr,
    addr: std::net::SocketAddr,
    timeout: Duration,
) -> std::io::BufReader<std::net::TcpStream> {
    use std::io::Write;
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    socket.bind(&std::net::SocketAddr::from((from, 0)).into()).expect("bind");
    socket.connect(&addr.into()).expect("connect");
    let mut s: std::net::TcpStream = socket.into();
    s.set_read_timeout(Some(timeout)).expect("timeout");
    s.write_all(
        format!(
            "GET /api/v1/namespaces/default/pods?watch=true HTTP/1.1\r\nHost: p\r\n\
             Authorization: Bearer {TOKEN}\r\n\r\n"
        )
        .as_bytes(),
    )
    .expect("watch");
    std::io::BufReader::new(s)
}

/// The binary as a plain-HTTP front door in front of one downstream,
/// `core` at `url`; its configuration file is named after `test`.
pub(crate) fn serve_front_door(test: &str, url: &str) -> crate::common::serve::Served {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("front-door-serve");
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join(format!("{test}-{}.yaml", std::process::id()));
    std::fs::write(
        &config,
        format!(
            "listen: 127.0.0.1:0\nfrontDoor: true\nreadinessGracePeriod: 0s\n\
             downstreams:\n- name: core\n  url: {url}\n  pollInterval: 1s\n"
        ),
    )
    .expect("config");
    crate::common::serve::Served::start(&config, "warn,openapi_proxy::wiring=info")
}
