//! Request heads under attack (issue 30, item 6): a head actix-http's
//! parser refuses — two `Content-Length`s, `Content-Length` with
//! `Transfer-Encoding`, a transfer coding other than `chunked`, two
//! `Host`s — is refused with 400 on the paths that read heads before
//! actix-http does too (the TLS first-request reader, the direct writer),
//! and never reaches a downstream.

use std::sync::mpsc;
use std::time::Duration;

use openapi_proxy::{Config, ServingTls};

use super::requests::{front_door, raw_downstream, routed};
use crate::common::http1::{Conn, tls_client};
use crate::common::proxy::{TestProxy, downstream};
use crate::common::tls::Pki;

/// An exec upgrade (SPDY, as kubectl sends it, which only the raw readers
/// take) with `extra` header lines.
fn exec_with(extra: &str) -> String {
    format!(
        "POST /api/v1/namespaces/default/pods/p/exec?command=sh HTTP/1.1\r\n{extra}\
         Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\
         X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n"
    )
}

/// The smuggling shapes, each on an upgrade the owner would switch.
fn shapes() -> Vec<(&'static str, String)> {
    vec![
        (
            "two Content-Lengths",
            exec_with("Host: proxy\r\nContent-Length: 0\r\nContent-Length: 5\r\n"),
        ),
        (
            "Content-Length with Transfer-Encoding",
            exec_with("Host: proxy\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n"),
        ),
        (
            "a transfer coding other than chunked",
            exec_with("Host: proxy\r\nTransfer-Encoding: gzip\r\n"),
        ),
        ("two Hosts", exec_with("Host: proxy\r\nHost: other\r\n")),
    ]
}

/// Sends `head` as the first request of a new connection to `addr` (over
/// TLS with `tls`) and returns the status answered.
async fn first_request(
    addr: std::net::SocketAddr,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    head: String,
) -> u16 {
    actix_web::rt::task::spawn_blocking(move || {
        let mut conn = match &tls {
            Some(client) => Conn::tls(addr, client),
            None => Conn::plain(addr),
        };
        conn.send(head.as_bytes());
        conn.response_head().expect("an answer").status
    })
    .await
    .expect("join")
}

/// Each shape, as the first request of an HTTPS connection (read by the
/// first-request reader before actix-http) and on plain HTTP with the
/// direct writer: 400, and the owner, which would switch protocols for a
/// well-formed one, gets nothing. A well-formed exec still goes through.
#[actix_web::test]
async fn heads_actix_http_refuses_are_refused_on_every_raw_path() {
    let pki = Pki::generate("front-door-heads");
    // Every shape on every path is tried before the verdict, which lists
    // each one let through.
    let mut let_through = Vec::new();
    for over_tls in [true, false] {
        let (tx, heads) = mpsc::channel();
        let owner = raw_downstream(tx, std::sync::Arc::default());
        let mut cfg = Config {
            direct_writes: true,
            ..front_door(vec![downstream("kube", &format!("http://{owner}"), 10)])
        };
        if over_tls {
            cfg.serving.tls = Some(ServingTls {
                cert_file: pki.server_cert.clone(),
                key_file: pki.server_key.clone(),
            });
        }
        let proxy = TestProxy::start_config(&cfg);
        routed(&proxy, "api/v1", "kube").await;
        let addr = proxy.running.addr;
        let tls = over_tls.then(|| tls_client(&pki.ca));
        for (shape, head) in shapes() {
            let status = first_request(addr, tls.clone(), head).await;
            let reached = heads.try_recv().is_ok();
            if status != 400 || reached {
                let_through.push(format!(
                    "{shape} over TLS {over_tls}: {status}, reached the owner: {reached}"
                ));
            }
        }
        let ok = first_request(addr, tls.clone(), exec_with("Host: proxy\r\n")).await;
        assert_eq!(ok, 101, "a well-formed exec, over TLS {over_tls}");
        assert!(heads.recv_timeout(Duration::from_secs(5)).is_ok(), "the owner saw it");
    }
    assert!(let_through.is_empty(), "{let_through:#?}");
}

/// The direct writer answers metadata itself; a head actix-http refuses is
/// not one it answers: two `Host`s on `GET /api` get 400, as they do
/// from actix-http, not the discovery document.
#[actix_web::test]
async fn the_direct_writer_answers_no_head_actix_http_refuses() {
    let (tx, _heads) = mpsc::channel();
    let owner = raw_downstream(tx, std::sync::Arc::default());
    for direct_writes in [true, false] {
        let proxy = TestProxy::start_config(&Config {
            direct_writes,
            ..front_door(vec![downstream("kube", &format!("http://{owner}"), 10)])
        });
        routed(&proxy, "api/v1", "kube").await;
        let addr = proxy.running.addr;
        for head in [
            "GET /api HTTP/1.1\r\nHost: proxy\r\nHost: other\r\n\r\n",
            "GET /api HTTP/1.1\r\nHost: proxy\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
        ] {
            let status = first_request(addr, None, head.to_owned()).await;
            assert_eq!(status, 400, "direct writes {direct_writes}: {head}");
        }
    }
}
