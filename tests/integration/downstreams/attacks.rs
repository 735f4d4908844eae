//! A hostile downstream next to a healthy one, against the real binary:
//! each attack of docs/operations.md#attacks-and-the-budgets-that-stop-them
//! runs while the proxy, with the default budgets of the manifests' 512 MiB limit, also serves Kubernetes
//! 1.27's documents (converted from its Swagger 2.0) from a healthy
//! downstream. Each case asserts, while the attack runs:
//! - the proxy stays up and its peak resident size (`VmHWM`) stays under
//!   the deploy manifests' 512 MiB limit;
//! - every one of the healthy downstream's documents is served byte for
//!   byte as the library converts them, the whole time;
//! - `/metrics` counts the hostile downstream's failed polls with the
//!   reason that stopped it;
//! - SIGTERM then stops the process within the documented 25 s grace.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::http::StatusCode;
use bytes::Bytes;
use openapi_proxy::demo::{Route, Routes, start_site, version_body};
use openapi_proxy::{Budget, swagger_to_openapi};
use serde_json::Value;

use crate::common::proxy::request;
use crate::common::shared::shared_testdata;

/// The memory limit of the deploy manifests.
const LIMIT_KIB: u64 = 512 * 1024;
/// The graceful stop docs/operations.md promises.
const GRACE: Duration = Duration::from_secs(25);
/// Kubernetes 1.27's whole-cluster Swagger 2.0 document.
const KUBE_1_27_V2: &str = "kube-openapi/pkg/schemaconv/testdata/swagger.json";

/// The proxy binary, running, with its log lines collected.
struct Proxy {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    base: String,
}

impl Proxy {
    async fn start(downstreams: &[(&str, String)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_openapi-proxy"));
        command.args(["--log-format", "json", "serve", "--listen", "127.0.0.1:0"]);
        command.args(["--poll-interval", "200ms"]);
        // The budget the proxy chooses inside the manifests' limit: the
        // test machine has no such limit, and would give it more.
        let budget = openapi_proxy::budget_for_limit(LIMIT_KIB * 1024);
        command.args(["--memory-budget-bytes", &budget.to_string()]);
        for (name, url) in downstreams {
            command.args(["--downstream", &format!("{name}={url}")]);
        }
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let stderr = child.stderr.take().expect("stderr");
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().expect("log lines").push(line);
            }
        });
        let mut proxy = Self { child, lines, base: String::new() };
        let deadline = Instant::now() + Duration::from_secs(30);
        while proxy.base.is_empty() {
            assert!(Instant::now() < deadline, "the binary did not listen: {:#?}", proxy.logs());
            proxy.base = proxy
                .logs()
                .iter()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find_map(|l| l["addr"].as_str().map(|a| format!("http://{a}")))
                .unwrap_or_default();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        proxy
    }

    fn logs(&self) -> Vec<String> {
        self.lines.lock().expect("log lines").clone()
    }

    /// Peak resident size so far, KiB.
    fn peak_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the proxy's status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM")
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    async fn get(&self, path: &str) -> crate::common::proxy::Response {
        request("GET", &format!("{}{path}", self.base), &[]).await
    }

    async fn errors(&self, downstream: &str, reason: &str) -> f64 {
        let metrics = self.get("/metrics").await;
        let text = String::from_utf8_lossy(&metrics.body).into_owned();
        let series = format!(
            "openapi_proxy_downstream_errors_total{{downstream=\"{downstream}\",reason=\"{reason}\"}}"
        );
        text.lines()
            .find_map(|l| l.strip_prefix(&series))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    }

    /// SIGTERM, and how long the process took to exit.
    fn terminate(mut self) -> Duration {
        let started = Instant::now();
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs");
        assert!(sent.success());
        while started.elapsed() < GRACE + Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return started.elapsed();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        started.elapsed()
    }
}

/// The healthy downstream: Kubernetes 1.27, Swagger 2.0 only. Returns its
/// routes and the documents the proxy must serve for it, as the library
/// converts them.
fn kubernetes_1_27() -> (Routes, BTreeMap<String, Bytes>) {
    let v2 = std::fs::read(shared_testdata(KUBE_1_27_V2)).expect("reads the 1.27 Swagger");
    let expected = swagger_to_openapi(&v2, None, Budget::UNLIMITED, Bytes::from)
        .expect("1.27 converts")
        .documents
        .into_iter()
        .map(|(k, v)| (k.to_string(), (*v).clone()))
        .collect();
    let routes = Routes::default();
    routes.set("/openapi/v2", Route::json(v2));
    routes.set("/version", Route::json(version_body(27)));
    (routes, expected)
}

/// Every healthy document, by the URL the root gives it; `Err` names the
/// first that is missing or differs.
async fn healthy_served(proxy: &Proxy, expected: &BTreeMap<String, Bytes>) -> Result<(), String> {
    let root = proxy.get("/openapi/v3").await;
    if root.status != StatusCode::OK {
        return Err(format!("the root answered {}", root.status));
    }
    let root: Value = serde_json::from_slice(&root.body).map_err(|e| e.to_string())?;
    for (key, body) in expected {
        let Some(url) = root["paths"][key]["serverRelativeURL"].as_str() else {
            return Err(format!("{key} is not in the root"));
        };
        let served = proxy.get(url).await;
        if served.status != StatusCode::OK || served.body != *body {
            return Err(format!("{key}: {} with {} bytes", served.status, served.body.len()));
        }
    }
    Ok(())
}

/// Runs one attack: `hostile` routes served by the second downstream.
/// Waits until the proxy counted `polls` failed polls of it for `reason`,
/// checking the healthy documents and the peak RSS throughout.
fn attack(name: &str, hostile: Vec<(String, Route)>, reason: &str, polls: f64) {
    actix_web::rt::System::new().block_on(async {
        let (kube_routes, expected) = kubernetes_1_27();
        let kube = start_site(kube_routes).expect("the healthy site starts");
        let bad_routes = Routes::default();
        bad_routes.replace(hostile);
        let bad = start_site(bad_routes).expect("the hostile site starts");
        let mut proxy = Proxy::start(&[("kube", kube.url()), ("hostile", bad.url())]).await;

        let deadline = Instant::now() + Duration::from_secs(180);
        let mut peak = 0;
        let mut checks = 0;
        loop {
            assert!(proxy.alive(), "{name}: the proxy died: {:#?}", proxy.logs());
            peak = peak.max(proxy.peak_kib());
            let failed = proxy.errors("hostile", reason).await;
            match healthy_served(&proxy, &expected).await {
                Ok(()) => checks += 1,
                // Before the first snapshot, nothing is served yet.
                Err(e) if checks > 0 => panic!("{name}: a healthy document changed: {e}"),
                Err(_) => {}
            }
            if checks > 0 && failed >= polls {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{name}: {failed} failed polls for {reason:?} after 180 s: {:#?}",
                proxy.logs().iter().rev().take(20).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Once more, after the attack repeated.
        healthy_served(&proxy, &expected).await.unwrap_or_else(|e| panic!("{name}: {e}"));
        peak = peak.max(proxy.peak_kib());
        let warnings = proxy
            .logs()
            .iter()
            // "keeping last good documents", or "no documents from this
            // downstream yet" when the hostile one never delivered any.
            .filter(|l| l.contains("poll failed; "))
            .filter(|l| l.contains("\"hostile\""))
            .count();
        let stopped = proxy.terminate();
        eprintln!("{name}: peak RSS {peak} KiB, stopped {stopped:?} after SIGTERM");
        assert!(peak < LIMIT_KIB, "{name}: peak RSS {peak} KiB");
        assert_eq!(warnings, 1, "{name}: one warning when the downstream turned failing");
        assert!(stopped < GRACE, "{name}: SIGTERM took {stopped:?}");
    });
}

/// A Swagger 2.0 document with one path per group-version
/// `g<i>.example.com/v1`, each reaching definition `Big` of `big_bytes`.
fn one_definition_for_all(group_versions: usize, big_bytes: usize) -> Vec<u8> {
    let paths: Vec<String> = (0..group_versions)
        .map(|i| {
            format!(
                r##""/apis/g{i}.example.com/v1/things":{{"get":{{"responses":{{"200":{{"description":"ok","schema":{{"$ref":"#/definitions/Big"}}}}}}}}}}"##
            )
        })
        .collect();
    let big = "d".repeat(big_bytes);
    format!(
        r#"{{"swagger":"2.0","info":{{"title":"t","version":"1"}},"paths":{{{}}},"definitions":{{"Big":{{"type":"object","description":"{big}"}}}}}}"#,
        paths.join(",")
    )
    .into_bytes()
}

fn v2_only(body: Vec<u8>) -> Vec<(String, Route)> {
    vec![("/openapi/v2".to_owned(), Route::json(body))]
}

#[test]
fn split_amplification_300_group_versions() {
    // 1 MB reached from 300 group-versions: 300 MB of documents unbounded.
    attack("split-300", v2_only(one_definition_for_all(300, 1_000_000)), "budget", 3.0);
}

#[test]
fn split_amplification_3000_group_versions() {
    attack("split-3000", v2_only(one_definition_for_all(3_000, 1_000_000)), "budget", 3.0);
}

#[test]
fn truncated_token_dense_json_of_60_mb() {
    let mut body = br#"{"swagger":"2.0","paths":{},"x":["#.to_vec();
    while body.len() < 60_000_000 {
        body.extend_from_slice(&b"1,".repeat(1 << 20));
    }
    attack("truncated-60mb", v2_only(body), "budget", 3.0);
}

#[test]
fn yaml_alias_bomb_as_a_downstream_body() {
    let items = vec!["a"; 100_000].join(", ");
    let uses = vec!["*a"; 100_000].join(", ");
    let body = format!("swagger: '2.0'\nx-a: &a [{items}]\nx-b: [{uses}]\n").into_bytes();
    attack("yaml-alias-bomb", v2_only(body), "conversion", 3.0);
}

#[test]
fn json_nested_100_000_deep() {
    let body = format!(
        r#"{{"swagger":"2.0","paths":{{}},"x":{}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    attack("nested-100k", v2_only(body.into_bytes()), "conversion", 3.0);
}

#[test]
fn a_root_listing_many_large_v3_documents() {
    // 200 group-versions of 2 MB each: 400 MB. The proxy keeps a document
    // this size gzipped only, so the filler must not compress to nothing
    // (a run of one letter weighed 2 KB each, and all 200 fitted the
    // share): 64 symbols from xorshift, about 1.5 MB each gzipped.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let filler: String = (0..2_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let symbols = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
            char::from(symbols[usize::try_from(x % 64).unwrap_or(0)])
        })
        .collect();
    let document = Bytes::from(format!(
        r#"{{"openapi":"3.0.0","info":{{"title":"t","version":"1"}},"paths":{{}},"x-filler":"{filler}"}}"#
    ));
    let mut root = serde_json::Map::new();
    let mut routes = Vec::new();
    for i in 0..200 {
        let key = format!("apis/g{i}.example.com/v1");
        root.insert(
            key.clone(),
            serde_json::json!({ "serverRelativeURL": format!("/openapi/v3/{key}?hash={i:04}") }),
        );
        routes.push((format!("/openapi/v3/{key}"), Route::json(document.clone())));
    }
    let root = serde_json::to_vec(&serde_json::json!({ "paths": root })).expect("root");
    routes.push(("/openapi/v3".to_owned(), Route::json(root)));
    attack("v3-200x2mb", routes, "budget", 3.0);
}

#[test]
fn discovery_of_200_group_versions_of_2_mb_each() {
    // A legacy server: /apis lists 200 groups, each group-version's
    // APIResourceList is 2 MB (22,000 resources).
    let resources: Vec<Value> = (0..22_000)
        .map(|j| {
            serde_json::json!({
                "name": format!("r{j}"), "singularName": format!("r{j}"), "namespaced": true,
                "kind": format!("R{j}"), "verbs": ["get", "list"]
            })
        })
        .collect();
    let mut routes = vec![(
        "/openapi/v2".to_owned(),
        Route::json(&br#"{"swagger":"2.0","info":{"title":"t","version":"1"},"paths":{}}"#[..]),
    )];
    // Serialized once; each group's list differs only in its groupVersion.
    let resources = serde_json::to_string(&resources).expect("resources");
    let mut groups = Vec::new();
    for i in 0..200 {
        let group = format!("g{i}.example.com");
        let list = format!(
            r#"{{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"{group}/v1","resources":{resources}}}"#
        );
        routes.push((format!("/apis/{group}/v1"), Route::json(list)));
        let version = serde_json::json!({ "groupVersion": format!("{group}/v1"), "version": "v1" });
        groups.push(serde_json::json!({
            "name": group, "versions": [version], "preferredVersion": version,
        }));
    }
    let apis = serde_json::json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups });
    routes.push(("/apis".to_owned(), Route::json(serde_json::to_vec(&apis).expect("apis"))));
    attack("discovery-200x2mb", routes, "budget", 3.0);
}
