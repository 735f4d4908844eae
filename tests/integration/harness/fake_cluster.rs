//! The fake Kubernetes API server (`common/cluster.rs`) judged by the real
//! kubectl (1.32, pinned), directly — no proxy in between. The fake is
//! meant to stand behind the proxy's front door, where a wrong
//! answer would be blamed on the proxy; so it must first be right on its
//! own: kubectl lists, creates, applies server-side, deletes, follows logs,
//! execs over WebSocket and watches against it, a request without the
//! token is refused the way kube-apiserver refuses it, and the fake records
//! the token on the requests that carried it.
//!
//! kubectl runs with `--validate=false` where it would otherwise fetch the
//! OpenAPI documents, which the fake does not serve.
//!
//! kubectl sends `--token` only over HTTPS (client-go's clientcmd drops all
//! user credentials for a plain `http://` server), so the test puts a
//! byte-for-byte TLS terminator ([`TlsFront`]) in front of the fake, which
//! itself speaks plain HTTP as the proxy's front door talks to it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::common::cluster::{Cluster, Seen, Serves};
use crate::common::http1::{Conn, Response, head};
use crate::common::kubectl::{self, Run};
use crate::common::tls::{Pki, server_config};

pub(crate) const TOKEN: &str = "t0ken-for-the-fake";

/// HTTPS in front of a plain HTTP server: each TLS connection is decrypted
/// and its bytes copied both ways to a fresh connection to the backend, so
/// streams and upgrades pass untouched. Runs on its own thread; stops when
/// dropped.
pub(crate) struct TlsFront {
    pub(crate) url: String,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TlsFront {
    pub(crate) fn start(backend: &str, pki: &Pki) -> TlsFront {
        let backend = backend.strip_prefix("http://").expect("an http:// backend").to_owned();
        let config = std::sync::Arc::new(server_config(&pki.server_cert, &pki.server_key, None));
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("TLS front binds");
        listener.set_nonblocking(true).expect("non-blocking");
        let url = format!("https://{}", listener.local_addr().expect("bound address"));
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("TLS front runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                let acceptor = tokio_rustls::TlsAcceptor::from(config);
                let serve = async {
                    while let Ok((tcp, _)) = listener.accept().await {
                        let (acceptor, backend) = (acceptor.clone(), backend.clone());
                        tokio::spawn(async move {
                            let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                            let Ok(mut back) = tokio::net::TcpStream::connect(&backend).await
                            else {
                                return;
                            };
                            let _ = tokio::io::copy_bidirectional(&mut tls, &mut back).await;
                        });
                    }
                };
                tokio::select! {
                    _ = stopped => {}
                    () = serve => {}
                }
            });
        });
        TlsFront { url, stop: Some(stop), thread: Some(thread) }
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs kubectl over HTTPS trusting `ca`, with `token`.
pub(crate) async fn run_as(server: &str, ca: &str, token: &str, args: &[&str]) -> Run {
    let mut all = vec!["--token", token, "--certificate-authority", ca];
    all.extend_from_slice(args);
    kubectl::run(server, &all).await
}

/// Runs kubectl with the token and asserts it succeeded.
pub(crate) async fn ok(server: &str, ca: &str, args: &[&str]) -> Run {
    let run = run_as(server, ca, TOKEN, args).await;
    assert!(
        run.success,
        "kubectl {} failed:\nstdout: {}\nstderr: {}",
        run.args, run.stdout, run.stderr
    );
    run
}

/// A manifest written under the target's temporary directory.
pub(crate) fn manifest(name: &str, body: &str) -> String {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("cluster-manifests")
        .join(std::process::id().to_string());
    std::fs::create_dir_all(&dir).expect("manifest dir");
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write manifest");
    path.to_str().expect("utf-8 path").to_owned()
}

/// A kubectl that does not exit by itself (`logs -f`, `get --watch`): its
/// standard output line by line; killed when dropped.
pub(crate) struct Streaming {
    child: Child,
    lines: Receiver<String>,
    cache: std::path::PathBuf,
}

impl Streaming {
    pub(crate) fn spawn(server: &str, ca: &str, args: &[&str]) -> Streaming {
        let cache = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("kubectl-cache")
            .join(format!("stream-{}-{}", std::process::id(), args.join("-").replace('/', "_")));
        let _ = std::fs::remove_dir_all(&cache);
        let mut child = Command::new(kubectl::pinned())
            .arg("--server")
            .arg(server)
            .arg("--cache-dir")
            .arg(&cache)
            .args(["--token", TOKEN, "--certificate-authority", ca])
            .args(args)
            .env("KUBECONFIG", "/dev/null")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Streaming { child, lines, cache }
    }

    /// The next line, failing the test after `within`.
    pub(crate) fn line(&self, within: Duration, what: &str) -> String {
        self.lines
            .recv_timeout(within)
            .unwrap_or_else(|e| panic!("no line from kubectl ({what}): {e}"))
    }

    /// Lines until one contains `needle`, failing the test after `within`.
    pub(crate) fn until(&self, needle: &str, within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(needle);
                    seen.push(line);
                    if found {
                        return seen;
                    }
                }
                Err(e) => panic!("kubectl never printed {needle:?} ({e}); printed {seen:?}"),
            }
        }
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.cache);
    }
}

/// kubectl at `url` (trusting `ca`) reads `demo`'s logs (`line 1` to `3`),
/// follows them to `line 4`, runs `exec demo -- echo hi` over WebSocket,
/// and watches pods until `watched`, created meanwhile at `create_at`
/// from the manifest file `manifest_name`, appears: the watch's lines,
/// that one last.
pub(crate) async fn logs_exec_and_watch(
    url: &str,
    ca: &str,
    create_at: &str,
    manifest_name: &str,
) -> Vec<String> {
    let wait = Duration::from_secs(10);
    let run = ok(url, ca, &["logs", "demo"]).await;
    assert_eq!(run.stdout, "line 1\nline 2\nline 3\n");
    {
        let follow = Streaming::spawn(url, ca, &["logs", "-f", "demo"]);
        let lines: Vec<String> = (0..4).map(|_| follow.line(wait, "logs -f")).collect();
        assert_eq!(lines, ["line 1", "line 2", "line 3", "line 4"]);
    }
    let run = ok(url, ca, &["exec", "demo", "--", "echo", "hi"]).await;
    assert_eq!(run.stdout, "exec: echo hi\n");
    let watch = Streaming::spawn(url, ca, &["get", "pods", "--watch"]);
    watch.until("demo", wait);
    let pod = manifest(
        manifest_name,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: watched\nspec:\n  containers:\n  - name: main\n    image: busybox\n",
    );
    ok(create_at, ca, &["create", "-f", &pod, "--validate=false"]).await;
    watch.until("watched", wait)
}

#[actix_web::test]
async fn kubectl_works_against_the_fake_cluster() {
    let cluster = Cluster::start(TOKEN, Serves::Both);
    let pki = Pki::generate("cluster");
    let front = TlsFront::start(&cluster.url(), &pki);
    let url = front.url.clone();
    let ca = pki.ca.to_str().expect("utf-8 path").to_owned();
    let ca = ca.as_str();

    // get, as a table and as JSON.
    let run = ok(&url, ca, &["get", "pods"]).await;
    // A server-side Table (kubectl asks for one): kube's columns.
    let words: Vec<Vec<&str>> =
        run.stdout.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        words,
        [
            vec!["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
            vec![
                "demo",
                "1/1",
                "Running",
                "0",
                words.get(1).and_then(|w| w.get(4)).copied().unwrap_or("?")
            ]
        ],
        "get pods:\n{}",
        run.stdout
    );
    let run = ok(&url, ca, &["get", "pods", "-o", "json"]).await;
    let list: serde_json::Value =
        serde_json::from_str(&run.stdout).expect("get -o json prints JSON");
    assert_eq!(list["items"][0]["metadata"]["name"], "demo", "{list}");
    assert_eq!(list["items"][0]["spec"]["containers"][0]["image"], "busybox", "{list}");

    // create, apply --server-side, delete.
    let made = manifest(
        "made.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: made\ndata:\n  a: \"1\"\n",
    );
    let run = ok(&url, ca, &["create", "-f", &made, "--validate=false"]).await;
    assert_eq!(run.stdout.trim(), "configmap/made created");
    let again = run_as(&url, ca, TOKEN, &["create", "-f", &made, "--validate=false"]).await;
    assert!(
        !again.success && again.stderr.contains("AlreadyExists"),
        "second create: {}",
        again.stderr
    );
    let applied = manifest(
        "applied.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  b: two\n",
    );
    let run = ok(&url, ca, &["apply", "--server-side", "-f", &applied, "--validate=false"]).await;
    assert_eq!(run.stdout.trim(), "configmap/applied serverside-applied");
    let run = ok(&url, ca, &["get", "configmap", "applied", "-o", "jsonpath={.data.b}"]).await;
    assert_eq!(run.stdout, "two");
    // Client-side apply on an existing object: a strategic merge patch.
    let changed = manifest(
        "made-changed.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: made\ndata:\n  a: \"2\"\n",
    );
    let run = ok(&url, ca, &["apply", "-f", &changed, "--validate=false"]).await;
    assert_eq!(run.stdout.trim(), "configmap/made configured", "{}", run.stderr);
    let run = ok(&url, ca, &["get", "configmap", "made", "-o", "jsonpath={.data.a}"]).await;
    assert_eq!(run.stdout, "2");
    let run = ok(&url, ca, &["delete", "configmap", "made"]).await;
    assert_eq!(run.stdout.trim(), "configmap \"made\" deleted");
    let run = ok(&url, ca, &["get", "configmaps", "-o", "name"]).await;
    assert_eq!(run.stdout.trim(), "configmap/applied");

    // The other group.
    let run = ok(&url, ca, &["get", "widgets"]).await;
    assert!(run.stdout.lines().any(|l| l.starts_with("w1 ")), "get widgets:\n{}", run.stdout);

    // Logs, plain and followed; exec; a watch that sees a new pod.
    let lines = logs_exec_and_watch(&url, ca, &url, "watched.yaml").await;
    let last = lines.last().map(|l| l.split_whitespace().collect::<Vec<_>>()).unwrap_or_default();
    assert_eq!(last[..4], ["watched", "0/1", "Pending", "0"], "{lines:?}");

    // No token: kube's wording for a 401. Plain HTTP straight to the fake:
    // over HTTPS without credentials, kubectl would prompt for a username on
    // standard input (and fail with `EOF`) before sending anything.
    let run = kubectl::run(&cluster.url(), &["get", "pods"]).await;
    assert!(!run.success, "get pods without a token succeeded:\n{}", run.stdout);
    assert!(
        run.stderr.contains("You must be logged in to the server")
            && run.stderr.contains("Unauthorized"),
        "without a token:\n{}",
        run.stderr
    );

    // What the fake saw: the token on every resource request that carried
    // it, none on the one that did not.
    let seen = cluster.seen();
    let bearer = format!("Bearer {TOKEN}");
    let resource = |path: &str| {
        path.starts_with("/api/v1/namespaces/")
            || path.starts_with("/apis/example.com/v1/namespaces/")
    };
    let with_token = seen
        .iter()
        .filter(|s| resource(&s.path) && s.authorization.as_deref() == Some(bearer.as_str()))
        .count();
    let without = seen.iter().filter(|s| resource(&s.path) && s.authorization.is_none()).count();
    assert!(with_token >= 10, "too few resource requests with the token: {seen:#?}");
    assert_eq!(without, 1, "exactly the tokenless get carries no token: {seen:#?}");
    assert!(
        seen.iter().any(|s| s.method == "PATCH"
            && s.path.starts_with("/api/v1/namespaces/default/configmaps/applied")),
        "{seen:#?}"
    );
    assert!(seen.iter().any(|s| s.path.contains("/pods/demo/exec?")), "{seen:#?}");
    assert!(seen.iter().any(|s| s.path.contains("watch=true")), "{seen:#?}");
}

/// Discovery needs no token (kubectl sends none over plain HTTP) and shows
/// only what the fake serves: the core group, or `example.com` alone.
#[actix_web::test]
async fn discovery_shows_only_what_is_served() {
    for (serves, present, absent) in [
        (Serves::Core, ["pods", "configmaps"], "widgets"),
        (Serves::Widgets, ["widgets", "widgets"], "pods"),
    ] {
        let cluster = Cluster::start(TOKEN, serves);
        let run =
            kubectl::run(&cluster.url(), &["api-resources", "--no-headers", "-o", "name"]).await;
        assert!(run.success, "api-resources against {serves:?}: {}", run.stderr);
        let names: Vec<&str> =
            run.stdout.lines().map(|l| l.split('.').next().unwrap_or(l)).collect();
        for name in present {
            assert!(names.contains(&name), "{serves:?}: {name} missing from {names:?}");
        }
        assert!(!names.contains(&absent), "{serves:?}: {absent} listed in {names:?}");
        assert!(cluster.seen().iter().all(|s| s.authorization.is_none()), "{:?}", cluster.seen());
    }
}

/// The fake's answers byte-level, on one kept-alive connection: Status
/// bodies as kube-apiserver writes them, a chunked request body, merge
/// patch, replace, delete, aggregated discovery's media type, a watch that
/// honours `timeoutSeconds`, and a 400 that closes the connection.
#[actix_web::test]
async fn wire_answers_match_kube_apiserver() {
    let cluster = Cluster::start(TOKEN, Serves::Both);
    let addr = cluster.url().strip_prefix("http://").expect("http URL").parse().expect("address");
    let auth = format!("Authorization: Bearer {TOKEN}");
    let auth = auth.as_str();
    let json = |r: &Response| -> serde_json::Value {
        serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}: {r:?}"))
    };
    let mut conn = Conn::plain(addr);
    let mut ask = |method: &str, target: &str, extra: &[&str], body: &[u8]| -> Response {
        let mut bytes = head(method, target, extra);
        bytes.extend_from_slice(body);
        conn.send(&bytes);
        conn.response(method).unwrap_or_else(|e| panic!("{method} {target}: {e}"))
    };

    let r = ask("GET", "/api/v1/namespaces/default/pods/x", &[auth], b"");
    assert_eq!(r.status, 404);
    assert_eq!(
        json(&r),
        serde_json::json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"pods \"x\" not found","reason":"NotFound",
            "details":{"name":"x","kind":"pods"},"code":404})
    );
    let r = ask("GET", "/api/v1/pods", &[], b"");
    assert_eq!(
        (r.status, json(&r)["reason"].as_str(), json(&r)["code"].as_u64()),
        (401, Some("Unauthorized"), Some(401))
    );

    let cm =
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"chunky"},"data":{"a":"1"}}"#;
    let mut chunked = format!("{:x}\r\n", 10).into_bytes();
    chunked.extend_from_slice(&cm[..10]);
    chunked.extend_from_slice(format!("\r\n{:x}\r\n", cm.len() - 10).as_bytes());
    chunked.extend_from_slice(&cm[10..]);
    chunked.extend_from_slice(b"\r\n0\r\n\r\n");
    let target = "/api/v1/namespaces/default/configmaps";
    let r = ask(
        "POST",
        target,
        &[auth, "Transfer-Encoding: chunked", "Content-Type: application/json"],
        &chunked,
    );
    assert_eq!(r.status, 201, "{r:?}");
    let created = json(&r);
    assert_eq!(created["metadata"]["namespace"], "default");
    assert!(created["metadata"]["uid"].as_str().is_some_and(|u| !u.is_empty()), "{created}");
    let length = format!("Content-Length: {}", cm.len());
    let r = ask("POST", target, &[auth, &length], cm);
    assert_eq!((r.status, json(&r)["reason"].as_str()), (409, Some("AlreadyExists")), "{r:?}");

    let item = "/api/v1/namespaces/default/configmaps/chunky";
    let patch = br#"{"data":{"b":"2"}}"#;
    let length = format!("Content-Length: {}", patch.len());
    let r =
        ask("PATCH", item, &[auth, "Content-Type: application/merge-patch+json", &length], patch);
    assert_eq!(
        (r.status, json(&r)["data"].clone()),
        (200, serde_json::json!({"a":"1","b":"2"})),
        "{r:?}"
    );
    let rv = |r: &Response| json(r)["metadata"]["resourceVersion"].as_str().map(str::to_owned);
    assert_ne!(rv(&r), created["metadata"]["resourceVersion"].as_str().map(str::to_owned));
    let put =
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"chunky"},"data":{"c":"3"}}"#;
    let length = format!("Content-Length: {}", put.len());
    let r = ask("PUT", item, &[auth, &length], put);
    assert_eq!((r.status, json(&r)["data"].clone()), (200, serde_json::json!({"c":"3"})), "{r:?}");
    assert_eq!(json(&r)["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(ask("DELETE", item, &[auth], b"").status, 200);
    assert_eq!(ask("DELETE", item, &[auth], b"").status, 404);

    let aggregated = "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let r = ask("GET", "/api", &[aggregated], b"");
    assert_eq!(
        r.header("content-type"),
        Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    );
    let pods = &json(&r)["items"][0]["versions"][0]["resources"][0];
    assert_eq!(pods["resource"], "pods");
    assert_eq!(pods["subresources"][1]["responseKind"]["kind"], "PodExecOptions");
    let r = ask("GET", "/api", &[], b"");
    assert_eq!(
        (r.header("content-type"), json(&r)["versions"].clone()),
        (Some("application/json"), serde_json::json!(["v1"]))
    );
    let r = ask(
        "GET",
        "/api/v1/namespaces/default/pods/demo/exec?command=ls&stdout=true",
        &[auth],
        b"",
    );
    assert_eq!(r.status, 400, "exec without an upgrade: {r:?}");

    let started = Instant::now();
    let r = ask("GET", "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1", &[auth], b"");
    assert!(started.elapsed() >= Duration::from_millis(900), "the watch ended early");
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    let events: Vec<serde_json::Value> = r
        .body
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("one JSON event a line"))
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (events[0]["type"].as_str(), events[0]["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("demo"))
    );
    // The same connection, after the watch: the old watch path, filtered by
    // name (nothing matches), answers chunked too.
    let r = ask(
        "GET",
        "/api/v1/watch/namespaces/default/pods?fieldSelector=metadata.name%3Dnope&timeoutSeconds=1",
        &[auth],
        b"",
    );
    assert_eq!(
        (r.status, r.header("transfer-encoding"), r.body.len()),
        (200, Some("chunked"), 0),
        "{r:?}"
    );

    let mut bad = Conn::plain(addr);
    bad.send(b"NOT HTTP AT ALL\r\n\r\n");
    let r = bad.response("GET").expect("an answer to garbage");
    assert!(r.status == 400 && r.closes(), "{r:?}");

    let mut huge = Conn::plain(addr);
    let mut bytes = head("POST", target, &[auth, "Transfer-Encoding: chunked"]);
    bytes.extend_from_slice(b"ffffffffffffffff\r\n");
    huge.send(&bytes);
    let r = huge.response("POST").expect("an answer to an absurd chunk size");
    assert!(r.status == 400 && r.closes(), "{r:?}");

    let seen = cluster.seen();
    assert_eq!(
        seen[1],
        Seen { method: "GET".into(), path: "/api/v1/pods".into(), authorization: None }
    );
    assert_eq!(seen[0].authorization.as_deref(), Some(format!("Bearer {TOKEN}").as_str()));

    // Only widgets: no core group, in either discovery.
    let widgets = Cluster::start(TOKEN, Serves::Widgets);
    let mut conn = Conn::plain(
        widgets.url().strip_prefix("http://").expect("http URL").parse().expect("address"),
    );
    conn.send(&head("GET", "/api", &[aggregated]));
    let r = conn.response("GET").expect("aggregated /api");
    assert_eq!(json(&r)["items"], serde_json::json!([]));
    conn.send(&head("GET", "/api", &[]));
    assert_eq!(conn.response("GET").expect("legacy /api").status, 404);
    conn.send(&head("GET", "/apis/example.com/v1", &[]));
    let r = conn.response("GET").expect("/apis/example.com/v1");
    assert_eq!(json(&r)["resources"][0]["kind"], "Widget");
}

/// Exec's WebSocket by hand: RFC 6455's sample key gets RFC 6455's sample
/// accept, the first Kubernetes subprotocol the client offers is chosen,
/// stdout then the status arrive as binary frames tagged with their stream,
/// then a close. Dropping the fake closes its port.
#[actix_web::test]
async fn exec_speaks_the_remotecommand_websocket_protocol() {
    use std::io::{Read, Write};
    let cluster = Cluster::start(TOKEN, Serves::Core);
    let addr: std::net::SocketAddr =
        cluster.url().strip_prefix("http://").expect("http URL").parse().expect("address");
    let mut tcp = std::net::TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(5))).expect("read timeout");
    let request = head(
        "GET",
        "/api/v1/namespaces/default/pods/demo/exec?command=ls&command=-l&stdout=true&stderr=true",
        &[
            &format!("Authorization: Bearer {TOKEN}"),
            "Connection: Upgrade",
            "Upgrade: websocket",
            "Sec-WebSocket-Version: 13",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Protocol: channel.k8s.io, v4.channel.k8s.io, v5.channel.k8s.io",
        ],
    );
    tcp.write_all(&request).expect("send the upgrade");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    // Everything up to the server's close frame (code 1000)...
    let close = [0x88u8, 0x02, 0x03, 0xe8];
    while !got.ends_with(&close) {
        let n = tcp.read(&mut buf).expect("the exec answer");
        assert!(n > 0, "closed before the close frame: {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    // ... then our masked close frame; the server hangs up.
    let mask = [0x11u8, 0x22, 0x33, 0x44];
    let mut ours = vec![0x88u8, 0x82];
    ours.extend_from_slice(&mask);
    ours.extend(1000u16.to_be_bytes().iter().zip(mask).map(|(b, m)| b ^ m));
    tcp.write_all(&ours).expect("send our close");
    let started = Instant::now();
    assert_eq!(tcp.read(&mut buf).expect("the end of the connection"), 0);
    assert!(started.elapsed() < Duration::from_secs(1), "the server waited out its timeout");
    let end = got.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head") + 4;
    let response = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
    assert!(response.starts_with("http/1.1 101 "), "{response}");
    assert!(
        response.contains(
            "sec-websocket-accept: s3ppLMBiTxaQ9kYGzzhZRbK+xOo=".to_ascii_lowercase().as_str()
        ),
        "{response}"
    );
    assert!(response.contains("sec-websocket-protocol: v4.channel.k8s.io\r\n"), "{response}");
    let mut frames = Vec::new();
    let mut rest = &got[end..];
    while rest.len() >= 2 {
        let (opcode, len) = (rest[0] & 0x0f, usize::from(rest[1] & 0x7f));
        assert!(
            rest[0] & 0x80 != 0 && rest[1] & 0x80 == 0 && len < 126,
            "a small, final, unmasked frame"
        );
        frames.push((opcode, rest[2..2 + len].to_vec()));
        rest = &rest[2 + len..];
    }
    let mut stdout = vec![1u8];
    stdout.extend_from_slice(b"exec: ls -l\n");
    let mut status = vec![3u8];
    status.extend_from_slice(br#"{"metadata":{},"status":"Success"}"#);
    assert_eq!(frames, [(2, stdout), (2, status), (8, 1000u16.to_be_bytes().to_vec())]);

    drop(cluster);
    assert!(std::net::TcpStream::connect(addr).is_err(), "the port still answers after drop");
}
