//! Measures the file descriptors the proxy holds while one HTTP/2
//! connection tries to keep `STREAMS` watches open through the front door
//! (issue 30: two connections once held 16,947 watches and 16,979
//! descriptors), and whether another client is served meanwhile.
//!
//! Starts a fake downstream whose watches stay open for 120 s, the proxy
//! binary given (`serve`, HTTPS, front door, any extra flags after the
//! count) in front of it, opens one HTTP/2 connection and sends `STREAMS`
//! watches on it at once; then, once the downstream's count of open
//! watches has held still for two seconds, prints the proxy's descriptors
//! (`/proc/PID/fd`), the watches open at the downstream, and the status of
//! another client's metadata GET and short GET over a new connection.
//! Linux only (`/proc`).
//!
//! `cargo run --example h2_streams -- target/debug/openapi-proxy 3000 [FLAGS…]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use openapi_proxy::demo::{Route, Routes, start_site};

/// `/api` in aggregated discovery: `v1` with `pods`.
fn discovery() -> Route {
    let body = serde_json::json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": [{
            "metadata": {},
            "versions": [{"version": "v1", "freshness": "Current", "resources": [{
                "resource": "pods", "scope": "Namespaced", "singularResource": "pod",
                "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
                "verbs": ["get", "list", "watch"],
            }]}],
        }],
    });
    let mut route = Route::json(body.to_string());
    route.content_type = openapi_proxy::media::DISCOVERY_V2_CONTENT_TYPE;
    route
}

type Send = h2::client::SendRequest<Bytes>;

/// A new HTTP/2 connection to the proxy, its connection task spawned.
async fn connect(addr: &str, tls: &Arc<rustls::ClientConfig>) -> Send {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let io =
        tokio_rustls::TlsConnector::from(Arc::clone(tls)).connect(name, tcp).await.expect("TLS");
    let (send, connection) = h2::client::handshake(io).await.expect("HTTP/2 handshake");
    actix_web::rt::spawn(async move {
        let _ = connection.await;
    });
    send
}

/// The status of `GET path` on `send`'s connection, its body read.
async fn get(send: Send, path: &str) -> u16 {
    let Ok(mut send) = send.ready().await else { return 0 };
    let req = http::Request::get(format!("https://127.0.0.1{path}")).body(()).expect("request");
    let Ok((answer, _)) = send.send_request(req, true) else { return 0 };
    let Ok(answer) = answer.await else { return 0 };
    let status = answer.status().as_u16();
    let mut body = answer.into_body();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    status
}

fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

#[allow(clippy::print_stdout, reason = "the figures are this program's output")]
#[actix_web::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let binary = args.next().expect("the proxy binary");
    let streams: usize = args.next().and_then(|n| n.parse().ok()).expect("a stream count");
    let flags: Vec<String> = args.collect();

    let routes = Routes::default();
    routes.set("/api", discovery());
    routes.set("/api/v1/pods", Route::json("{}").delayed(Duration::from_secs(120)));
    routes.set("/api/v1/namespaces/default/pods", Route::json(r#"{"kind":"PodList"}"#));
    let site = start_site(routes.clone()).expect("downstream");

    let dir = std::env::temp_dir().join(format!("h2-streams-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).expect("cert");
    std::fs::write(dir.join("tls.crt"), cert.cert.pem()).expect("cert file");
    std::fs::write(dir.join("tls.key"), cert.signing_key.serialize_pem()).expect("key file");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let config = format!(
        "listen: {addr}\nfrontDoor: true\npollInterval: 1h\n\
         tls: {{certFile: {0}/tls.crt, keyFile: {0}/tls.key}}\n\
         downstreams:\n- {{name: kube, url: '{1}'}}\n",
        dir.display(),
        site.url()
    );
    std::fs::write(dir.join("config.yaml"), config).expect("config");
    let mut proxy = std::process::Command::new(&binary)
        .arg("serve")
        .arg("--config")
        .arg(dir.join("config.yaml"))
        .args(&flags)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the proxy starts");
    let pid = proxy.id();

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).expect("root");
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec()];
    let tls = Arc::new(tls);

    // Routed once the proxy serves `/api/v1` discovery.
    let started = Instant::now();
    loop {
        if std::net::TcpStream::connect(&addr).is_ok() {
            let send = connect(&addr, &tls).await;
            if get(send, "/api/v1").await == 200 {
                break;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the proxy did not get ready");
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    }
    let idle = descriptors(pid);

    let attacker = connect(&addr, &tls).await;
    for _ in 0..streams {
        let send = attacker.clone();
        actix_web::rt::spawn(async move {
            let _ = get(send, "/api/v1/pods?watch=1").await;
        });
    }
    // Until the downstream's count holds still for two seconds.
    let mut last = (usize::MAX, Instant::now());
    let open = loop {
        actix_web::rt::time::sleep(Duration::from_millis(250)).await;
        let now = routes.seen().iter().filter(|s| s.uri.contains("watch")).count();
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(2) {
            break now;
        }
    };
    let held = descriptors(pid);
    let other = connect(&addr, &tls).await;
    let metadata = get(other.clone(), "/api").await;
    let short = get(other, "/api/v1/namespaces/default/pods").await;
    println!(
        "streams attempted on one connection: {streams}\n\
         watches open at the downstream: {open}\n\
         proxy file descriptors: {idle} idle, {held} with the watches open\n\
         another client: metadata GET {metadata}, short GET {short}"
    );
    let _ = proxy.kill();
    let _ = proxy.wait();
    let _ = std::fs::remove_dir_all(&dir);
    std::process::exit(0);
}
