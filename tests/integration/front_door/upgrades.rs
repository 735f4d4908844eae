//! Upgrades under attack (issue 30, items 1 and 2): bytes a client sent
//! after an upgrade's head reach the owner only after it answered `101`;
//! `CONNECT` and an upgrade head over the raw readers' limits are refused;
//! an `Upgrade:` other than WebSocket or SPDY is an ordinary request.

use std::io::{Read, Write};
use std::sync::mpsc;
use std::time::Duration;

use openapi_proxy::Config;

use super::requests::{discovery, front_door, raw_downstream, read_head, routed};
use crate::common::http1::{Conn, Ending};
use crate::common::proxy::{TestProxy, downstream, site};

/// A raw downstream owning the core group (`pods` at `/api`) that answers
/// a request under `/api/v1/` with `code` and a small body, then records
/// everything else it reads on that connection; at the connection's end
/// it sends all it read there (the request head first) on the channel.
fn recording_downstream(code: u16) -> (std::net::SocketAddr, mpsc::Receiver<String>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let tx = tx.clone();
            std::thread::spawn(move || {
                loop {
                    let Some(head) = read_head(&mut s) else { return };
                    let text = String::from_utf8_lossy(&head).into_owned();
                    let path = text.split(' ').nth(1).unwrap_or("").to_owned();
                    if path == "/api" || path == "/apis" {
                        let items = if path == "/api" {
                            r#"[{"metadata":{},"versions":[{"version":"v1","resources":[{"resource":"pods","responseKind":{"group":"","version":"v1","kind":"Pod"},"scope":"Namespaced","verbs":["get"]}],"freshness":"Current"}]}]"#
                        } else {
                            "[]"
                        };
                        let body = format!(
                            r#"{{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{{}},"items":{items}}}"#
                        );
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n{body}",
                            openapi_proxy::media::DISCOVERY_V2_CONTENT_TYPE,
                            body.len()
                        );
                        if s.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                        continue;
                    }
                    if !path.starts_with("/api/v1/") {
                        if s.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                            .is_err()
                        {
                            return;
                        }
                        continue;
                    }
                    let body = r#"{"kind":"Status","code":403}"#;
                    let _ = s.write_all(
                        format!(
                            "HTTP/1.1 {code} Answered\r\nContent-Type: application/json\r\n\
                             Content-Length: {}\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    );
                    let mut read = head;
                    let mut buf = [0u8; 4096];
                    s.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
                    while let Ok(n) = s.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        read.extend_from_slice(&buf[..n]);
                    }
                    let _ = tx.send(String::from_utf8_lossy(&read).into_owned());
                    return;
                }
            });
        }
    });
    (addr, rx)
}

/// A proxy in front of `b` (owning `apps/v1`, listed first) and `a` (the
/// recording downstream, owning `api/v1`), actix-http reading every request.
async fn two_owners(a: std::net::SocketAddr, b: &str) -> TestProxy {
    let proxy = TestProxy::start_config(&Config {
        direct_writes: false,
        ..front_door(vec![downstream("b", b, 10), downstream("a", &format!("http://{a}"), 10)])
    });
    routed(&proxy, "api/v1", "a").await;
    routed(&proxy, "apis/apps/v1", "b").await;
    proxy
}

const WEBSOCKET_EXEC: &str = "GET /api/v1/namespaces/default/pods/p/exec?command=sh HTTP/1.1\r\n\
     Host: proxy\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
     Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";

const SMUGGLED: &str = "POST /apis/apps/v1/namespaces/default/deployments HTTP/1.1\r\n\
     Host: proxy\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";

/// The issue's attack: on one connection `GET /version`, then a WebSocket
/// upgrade for a path A owns and, in the same write, a `POST` for a path B
/// owns. A answers the upgrade with something other than `101` (403, or
/// 200): its answer comes back, the connection closes, and the `POST`
/// reaches neither A (it was never asked to switch protocols, so the bytes
/// are not its) nor B (dropped with the connection: the client is told
/// `Connection: close` and sends it again on a new one).
#[actix_web::test]
async fn bytes_after_an_upgrade_are_not_relayed_before_a_101() {
    for code in [403u16, 200] {
        let (a, recorded) = recording_downstream(code);
        let b = site();
        discovery(&b.routes, false, &[("apps", "v1")]);
        let proxy = two_owners(a, &b.url()).await;
        let addr = proxy.running.addr;
        let answer = actix_web::rt::task::spawn_blocking(move || {
            let mut conn = Conn::plain(addr);
            conn.send(b"GET /version HTTP/1.1\r\nHost: proxy\r\n\r\n");
            conn.response("GET").expect("the version");
            conn.send(format!("{WEBSOCKET_EXEC}{SMUGGLED}").as_bytes());
            let answer = conn.response("GET").expect("the owner's answer");
            (answer, conn.ending(Duration::from_secs(5)))
        })
        .await
        .expect("join");
        let (response, ending) = answer;
        assert_eq!(response.status, code, "{response:?}");
        assert!(response.closes(), "{response:?}");
        assert!(matches!(ending, Ending::Eof), "the connection closes: {ending:?}");
        let read = recorded.recv_timeout(Duration::from_secs(10)).expect("A's connection ended");
        assert!(read.starts_with("GET /api/v1/namespaces/default/pods/p/exec"), "{read}");
        assert!(!read.contains("POST"), "A got the smuggled request ({code}): {read}");
        assert!(
            !b.routes.seen().iter().any(|s| s.uri.contains("deployments")),
            "B got a request the client sent on a closed connection"
        );
    }
}

/// `CONNECT` is refused with a 405 `Status`, on the raw first-request
/// reader and through actix-http alike, and never reaches an owner.
#[actix_web::test]
async fn connect_is_refused() {
    let (a, recorded) = recording_downstream(200);
    let b = site();
    discovery(&b.routes, false, &[("apps", "v1")]);
    let proxy = two_owners(a, &b.url()).await;
    let addr = proxy.running.addr;
    let connect = "CONNECT /api/v1/namespaces/default/pods/p/portforward HTTP/1.1\r\n\
                   Host: proxy\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n";
    for after_version in [false, true] {
        let response = actix_web::rt::task::spawn_blocking(move || {
            let mut conn = Conn::plain(addr);
            if after_version {
                conn.send(b"GET /version HTTP/1.1\r\nHost: proxy\r\n\r\n");
                conn.response("GET").expect("the version");
            }
            conn.send(connect.as_bytes());
            conn.response("CONNECT").expect("an answer")
        })
        .await
        .expect("join");
        assert_eq!(response.status, 405, "after /version {after_version}: {response:?}");
        let status: serde_json::Value = serde_json::from_slice(&response.body).expect("a Status");
        assert_eq!(status["kind"], "Status");
        assert!(response.closes(), "{response:?}");
    }
    assert!(recorded.try_recv().is_err(), "an owner was asked to CONNECT");
}

/// An upgrade whose head is over the raw readers' limits (8 KiB, or 64
/// header lines) is refused with 431, not handed to actix-http's upgrade
/// service to be relayed.
#[actix_web::test]
async fn an_upgrade_head_over_the_limits_is_refused() {
    let (a, recorded) = recording_downstream(200);
    let b = site();
    discovery(&b.routes, false, &[("apps", "v1")]);
    let proxy = two_owners(a, &b.url()).await;
    let addr = proxy.running.addr;
    let long = format!("X-Long: {}\r\n", "x".repeat(9 * 1024));
    let many: String = (0..70).map(|i| format!("X-Line-{i}: {i}\r\n")).collect();
    for extra in [long, many] {
        let head = WEBSOCKET_EXEC.replace("Host: proxy\r\n", &format!("Host: proxy\r\n{extra}"));
        let response = actix_web::rt::task::spawn_blocking(move || {
            let mut conn = Conn::plain(addr);
            conn.send(head.as_bytes());
            conn.response("GET").expect("an answer")
        })
        .await
        .expect("join");
        assert_eq!(response.status, 431, "{response:?}");
        assert!(response.closes(), "{response:?}");
    }
    assert!(recorded.try_recv().is_err(), "an oversized upgrade was relayed");
}

/// `Upgrade: x-anything` on a watch is no upgrade: it is passed on as an
/// ordinary request and streams as one (the owner's endless chunked body
/// keeps coming, nothing is buffered as a refusal), counted as a `watch`.
#[actix_web::test]
async fn an_unknown_upgrade_is_an_ordinary_streamed_request() {
    for direct_writes in [true, false] {
        let (tx, _heads) = mpsc::channel();
        let owner = raw_downstream(tx, std::sync::Arc::default());
        let proxy = TestProxy::start_config(&Config {
            direct_writes,
            ..front_door(vec![downstream("kube", &format!("http://{owner}"), 10)])
        });
        routed(&proxy, "api/v1", "kube").await;
        let addr = proxy.running.addr;
        let (head, streamed) = actix_web::rt::task::spawn_blocking(move || {
            let mut conn = Conn::plain(addr);
            conn.send(
                b"GET /api/v1/endless?watch=1 HTTP/1.1\r\nHost: proxy\r\n\
                  Connection: Upgrade\r\nUpgrade: x-anything\r\n\r\n",
            );
            let head = conn.response_head().expect("a head");
            let mut streamed = 0usize;
            let mut buf = [0u8; 64 * 1024];
            while streamed < 2 * 1024 * 1024 {
                let n = conn.stream().read(&mut buf).expect("the stream");
                assert!(n > 0, "closed after {streamed} bytes: {head:?}");
                streamed += n;
            }
            (head, streamed)
        })
        .await
        .expect("join");
        assert_eq!(head.status, 200, "direct writes {direct_writes}: {head:?}");
        assert_eq!(head.header("transfer-encoding"), Some("chunked"), "{head:?}");
        assert!(streamed >= 2 * 1024 * 1024);
        let metrics = proxy.get("/metrics", &[]).await;
        let text = String::from_utf8_lossy(&metrics.body);
        assert!(
            text.contains(
                r#"openapi_proxy_front_door_requests_total{code="200",downstream="kube",verb="watch"} 1"#
            ),
            "{text}"
        );
        assert!(!text.contains(r#"verb="connect""#), "{text}");
    }
}
