//! The consistency checker of `benches/load/faults.sh`: while the proxy is
//! under load and a downstream flaps, fetch the root index again and again
//! and check every document it lists.
//!
//! One round: read the snapshot generation `g0` (`/metrics`), fetch
//! `/openapi/v3`, then every `serverRelativeURL` in it, without following
//! redirects. For each URL `U` (hash `h`):
//!
//! - 200: SHA-512 of the body must be `h`, else **wrong bytes** (violation).
//! - 301 to `L`, or 404: read the generation `g1`. If `g1 == g0`, no
//!   snapshot was published between the root fetch and this answer, so one
//!   snapshot both listed `U` and refused it: **torn snapshot**
//!   (violation). If `g1 > g0` the root was replaced in between and the
//!   301 is what docs/wire.md asks for; then the strict check: fetch the
//!   root again (bracketed by generations `g2`, `g3`); if `g2 == g3 == g1`
//!   (nothing published since the 301), `L` must be the URL that root lists
//!   for the same key, else **redirect to a URL no newer root lists**
//!   (violation); if the generation moved again, the check is inconclusive
//!   and counted as such.
//! - anything else (5xx, a connection error): violation.
//!
//! Generations come from `openapi_proxy_snapshot_generation`, which the
//! builder sets right after it publishes (same task, no await between):
//! the bracket reads it before the root and after the answer, so the only
//! blind spot is an answer served in the instant between the two.
//!
//! Prints one summary line (`rounds=… urls=… ok=… redirects_legit=…
//! inconclusive=… violations=…`) and each violation; exits 1 on any.
//!
//! `cargo run --release --example consistency -- http://127.0.0.1:PORT SECONDS`

use std::time::{Duration, Instant};

use awc::Client;
use openapi_proxy::sha512_hex;
use serde_json::Value;

#[derive(Debug, Default)]
struct Tally {
    rounds: u64,
    urls: u64,
    ok: u64,
    redirects_legit: u64,
    inconclusive: u64,
    violations: Vec<String>,
}

async fn generation(client: &Client, base: &str) -> Result<u64, String> {
    let mut resp = client.get(format!("{base}/metrics")).send().await.map_err(|e| e.to_string())?;
    let body = resp.body().limit(16 << 20).await.map_err(|e| e.to_string())?;
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|l| l.strip_prefix("openapi_proxy_snapshot_generation "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| "no openapi_proxy_snapshot_generation in /metrics".to_owned())
}

/// `key → serverRelativeURL` of the root index.
async fn root(client: &Client, base: &str) -> Result<Vec<(String, String)>, String> {
    let mut resp =
        client.get(format!("{base}/openapi/v3")).send().await.map_err(|e| e.to_string())?;
    if resp.status() != 200 {
        return Err(format!("/openapi/v3 answered {}", resp.status()));
    }
    let body = resp.body().limit(64 << 20).await.map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_slice(&body).map_err(|e| format!("root is not JSON: {e}"))?;
    let paths = v["paths"].as_object().ok_or("root has no paths")?;
    Ok(paths
        .iter()
        .filter_map(|(k, e)| Some((k.clone(), e["serverRelativeURL"].as_str()?.to_owned())))
        .collect())
}

fn hash_of(url: &str) -> &str {
    url.split_once("hash=").map_or("", |(_, h)| h.split('&').next().unwrap_or(""))
}

async fn round(client: &Client, base: &str, t: &mut Tally) -> Result<(), String> {
    let g0 = generation(client, base).await?;
    let listed = root(client, base).await?;
    for (key, url) in listed {
        t.urls += 1;
        let mut resp = match client.get(format!("{base}{url}")).send().await {
            Ok(r) => r,
            Err(e) => {
                t.violations.push(format!("{url}: request failed: {e}"));
                continue;
            }
        };
        let status = resp.status().as_u16();
        let body = resp.body().limit(256 << 20).await.map_err(|e| e.to_string())?;
        match status {
            200 => {
                if sha512_hex(&body) == hash_of(&url) {
                    t.ok += 1;
                } else {
                    t.violations.push(format!("{url}: 200 with bytes of another hash"));
                }
            }
            301 | 404 => {
                let location = resp
                    .headers()
                    .get("location")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                let g1 = generation(client, base).await?;
                if g1 == g0 {
                    t.violations.push(format!(
                        "{url}: {status} (to {location:?}) within generation {g0}, whose root lists it: torn snapshot"
                    ));
                    continue;
                }
                if status == 404 {
                    // The key left in a newer generation: legitimate.
                    t.redirects_legit += 1;
                    continue;
                }
                let g2 = generation(client, base).await?;
                let newer = root(client, base).await?;
                let g3 = generation(client, base).await?;
                if g2 != g1 || g3 != g2 {
                    t.inconclusive += 1;
                } else if newer.iter().any(|(k, u)| *k == key && *u == location) {
                    t.redirects_legit += 1;
                } else {
                    t.violations.push(format!(
                        "{url}: 301 to {location}, which the current root (generation {g3}) does not list for {key}"
                    ));
                }
            }
            other => t.violations.push(format!("{url}: status {other}")),
        }
    }
    t.rounds += 1;
    Ok(())
}

#[allow(clippy::print_stdout, reason = "the summary is this program's output")]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(base), Some(secs)) = (args.first(), args.get(1).and_then(|s| s.parse::<u64>().ok()))
    else {
        eprintln!("usage: consistency BASE_URL SECONDS");
        std::process::exit(2);
    };
    let base = base.trim_end_matches('/').to_owned();
    let tally = actix_web::rt::System::new().block_on(async move {
        let client =
            Client::builder().disable_redirects().timeout(Duration::from_secs(10)).finish();
        let deadline = Instant::now() + Duration::from_secs(secs);
        let mut t = Tally::default();
        while Instant::now() < deadline {
            if let Err(e) = round(&client, &base, &mut t).await {
                t.violations.push(format!("round failed: {e}"));
            }
        }
        t
    });
    println!(
        "rounds={} urls={} ok={} redirects_legit={} inconclusive={} violations={}",
        tally.rounds,
        tally.urls,
        tally.ok,
        tally.redirects_legit,
        tally.inconclusive,
        tally.violations.len()
    );
    for v in tally.violations.iter().take(50) {
        println!("violation: {v}");
    }
    if !tally.violations.is_empty() {
        std::process::exit(1);
    }
}
