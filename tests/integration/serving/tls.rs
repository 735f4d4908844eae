//! Serving HTTPS (`--tls-cert`, `--tls-key`): clients that trust the CA
//! get the documents, plain HTTP to the TLS port gets nothing and breaks
//! nothing, kubectl works with `--certificate-authority`, files that do not
//! load stop the start naming the flag, and a rotated certificate is served
//! without a restart while a broken rotation keeps the previous one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::StatusCode;
use openapi_proxy::ServingTls;
use openapi_proxy::demo::Site;
use openapi_proxy::error_chain;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::common::kubectl;
use crate::common::proxy::{TestProxy, WIDGETS, config, downstream, widgets_site};
use crate::common::raw;
use crate::common::tls::Pki;

fn tls_config(ds: &Site, cert: &Path, key: &Path) -> openapi_proxy::Config {
    let mut c = config(vec![downstream("widgets", &ds.url(), 1)]);
    c.serving.tls = Some(ServingTls { cert_file: cert.to_owned(), key_file: key.to_owned() });
    c
}

async fn tls_proxy(ds: &Site, cert: &Path, key: &Path) -> TestProxy {
    let proxy = TestProxy::start_config(&tls_config(ds, cert, key));
    proxy.wait_for("the widgets document is published", |s| s.openapi.contains_key(WIDGETS)).await;
    proxy
}

/// An HTTPS client trusting only `ca`, one connection per request (so each
/// request makes a fresh handshake and sees the current certificate).
fn client(ca: &Path) -> awc::Client {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).expect("CA file").map(|c| c.expect("CA PEM")) {
        roots.add(c).expect("CA certificate");
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("protocol versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    awc::Client::builder()
        .connector(awc::Connector::new().rustls_0_23(Arc::new(tls)).conn_keep_alive(Duration::ZERO))
        .timeout(Duration::from_secs(10))
        .finish()
}

async fn status(client: &awc::Client, url: &str) -> Result<StatusCode, String> {
    client.get(url).send().await.map(|r| r.status()).map_err(|e| e.to_string())
}

#[actix_web::test]
async fn https_clients_that_trust_the_ca_get_the_documents_and_others_are_refused() {
    let pki = Pki::generate("serving-https");
    let ds = widgets_site();
    let proxy = tls_proxy(&ds, &pki.server_cert, &pki.server_key).await;
    assert!(proxy.base.starts_with("https://"));
    let trusting = client(&pki.ca);
    let mut resp =
        trusting.get(format!("{}/openapi/v3", proxy.base)).send().await.expect("HTTPS GET");
    assert_eq!(resp.status(), StatusCode::OK);
    let root: serde_json::Value =
        serde_json::from_slice(&resp.body().await.expect("body")).expect("JSON root");
    assert!(root["paths"][WIDGETS]["serverRelativeURL"].is_string(), "{root}");
    let e = status(&client(&pki.unrelated_ca), &format!("{}/openapi/v3", proxy.base))
        .await
        .expect_err("a client trusting another CA refuses the proxy");
    assert!(e.to_lowercase().contains("certificate") || e.contains("tls"), "{e}");
}

#[actix_web::test]
async fn plain_http_to_the_tls_port_gets_no_answer_and_breaks_nothing() {
    let pki = Pki::generate("serving-plain");
    let ds = widgets_site();
    let proxy = tls_proxy(&ds, &pki.server_cert, &pki.server_key).await;
    for _ in 0..5 {
        let r = raw::send(proxy.running.addr, raw::get("/openapi/v3", &[])).await;
        assert_eq!(r.status, 0, "plain HTTP was answered: {:?}", String::from_utf8_lossy(&r.bytes));
    }
    let ok = status(&client(&pki.ca), &format!("{}/openapi/v3", proxy.base)).await;
    assert_eq!(ok, Ok(StatusCode::OK));
}

#[actix_web::test]
async fn kubectl_with_certificate_authority_reads_through_the_tls_proxy() {
    let pki = Pki::generate("serving-kubectl");
    let ds = widgets_site();
    let proxy = tls_proxy(&ds, &pki.server_cert, &pki.server_key).await;
    let kubectl = kubectl::pinned();
    let base = proxy.base.clone();
    let ca = pki.ca.clone();
    let out = actix_web::rt::task::spawn_blocking(move || {
        std::process::Command::new(kubectl)
            .args(["--server", &base, "--certificate-authority"])
            .arg(&ca)
            // Without credentials kubectl asks for a user name on stdin
            // for an https server; the proxy ignores the token.
            .args(["--token", "unused", "get", "--raw", "/openapi/v3"])
            .env("KUBECONFIG", "/dev/null")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("kubectl runs")
    })
    .await
    .expect("kubectl thread");
    assert!(out.status.success(), "kubectl: {}", String::from_utf8_lossy(&out.stderr));
    let root: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON root");
    assert!(root["paths"][WIDGETS].is_object(), "{root}");
}

#[actix_web::test]
async fn serving_files_that_do_not_load_stop_the_start_naming_the_flag() {
    let pki = Pki::generate("serving-bad");
    let ds = widgets_site();
    let garbage = pki.dir.join("garbage.pem");
    std::fs::write(&garbage, "not PEM at all\n").expect("write");
    for (cert, key, expected) in [
        (&pki.server_cert, &pki.stranger_key, "does not go with the certificate"),
        (&garbage, &pki.server_key, "(--tls-cert, tls.certFile)"),
        (&pki.server_cert, &garbage, "(--tls-key, tls.keyFile)"),
    ] {
        let e = openapi_proxy::start(&tls_config(&ds, cert, key)).expect_err("refused");
        let message = error_chain(&e);
        assert!(message.starts_with("serving TLS: "), "{message}");
        assert!(message.contains(expected), "{message}");
    }
}

/// Copies `cert` and `key` over the files the proxy serves, in place.
fn install(dir: &Path, cert: &Path, key: &Path) -> (PathBuf, PathBuf) {
    let (c, k) = (dir.join("serving.crt"), dir.join("serving.key"));
    std::fs::copy(key, &k).expect("copy key");
    std::fs::copy(cert, &c).expect("copy certificate");
    (c, k)
}

#[actix_web::test]
async fn a_rotated_certificate_is_served_without_a_restart_and_a_broken_one_is_not() {
    let old = Pki::generate("serving-rotate-old");
    let new = Pki::generate("serving-rotate-new");
    let (cert, key) = install(&old.dir, &old.server_cert, &old.server_key);
    let ds = widgets_site();
    let proxy = tls_proxy(&ds, &cert, &key).await;
    let url = format!("{}/openapi/v3", proxy.base);
    assert_eq!(status(&client(&old.ca), &url).await, Ok(StatusCode::OK));

    // A half-done rotation (certificate written, key still the old one)
    // does not load: the old pair keeps being served.
    std::fs::copy(&new.server_cert, &cert).expect("copy certificate");
    actix_web::rt::time::sleep(Duration::from_millis(1500)).await;
    for _ in 0..3 {
        assert_eq!(status(&client(&old.ca), &url).await, Ok(StatusCode::OK));
    }

    // The key arrives: the new certificate is served from then on.
    install(&old.dir, &new.server_cert, &new.server_key);
    let mut served_new = false;
    for _ in 0..50 {
        if status(&client(&new.ca), &url).await == Ok(StatusCode::OK) {
            served_new = true;
            break;
        }
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(served_new, "the rotated certificate was not served within 10 s");
    assert!(status(&client(&old.ca), &url).await.is_err(), "the old certificate is still served");
}

#[actix_web::test]
async fn over_tls_a_stalled_second_request_is_cut_off_too() {
    let pki = Pki::generate("serving-stall");
    let ds = widgets_site();
    let mut c = tls_config(&ds, &pki.server_cert, &pki.server_key);
    c.serving.limits.request_timeout = Duration::from_secs(1);
    let proxy = TestProxy::start_config(&c);
    proxy.wait_for("the widgets document is published", |s| s.openapi.contains_key(WIDGETS)).await;
    let (addr, ca) = (proxy.running.addr, pki.ca.clone());
    let took = actix_web::rt::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_file_iter(&ca).expect("CA file").map(|c| c.expect("PEM")) {
            roots.add(c).expect("CA certificate");
        }
        // No ALPN: HTTP/1.1, as curl or an old client speaks it.
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
        let conn = rustls::ClientConnection::new(Arc::new(config), name).expect("TLS client");
        let sock = std::net::TcpStream::connect(addr).expect("connect");
        sock.set_read_timeout(Some(Duration::from_secs(15))).expect("timeout");
        let mut tls = rustls::StreamOwned::new(conn, sock);
        tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").expect("first request");
        let mut buf = [0u8; 4096];
        let k = tls.read(&mut buf).expect("first answer");
        assert_eq!(raw::status_of(&buf[..k]), 200);
        let started = std::time::Instant::now();
        tls.write_all(b"GET /openapi/v3 HTTP/1.1\r\nX-Slow: ").expect("half a head");
        // Then nothing: the read returns when the proxy closes (or after 15 s).
        let _ = tls.read(&mut buf);
        started.elapsed()
    })
    .await
    .expect("client thread");
    assert!(took < Duration::from_secs(4), "a stalled request over TLS held on for {took:?}");
}
