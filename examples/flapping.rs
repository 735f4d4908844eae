//! Two fake downstreams for `benches/load/faults.sh`: one steady, one that
//! flaps.
//!
//! - steady: `/openapi/v2` from a file (the 4 MB Kubernetes document in the
//!   script, so one converted document is large), synthetic aggregated
//!   discovery at `/apis`, `/version`.
//! - flapping: every `FLAP_MS` it moves to the next phase of
//!   up (content A) → down (503 everywhere) → up (content B: one version
//!   more, and A's documents changed) → garbage (200 with a body that is not
//!   JSON) → up (A) … so the proxy keeps last-good documents, rebuilds,
//!   and retires hash URLs while it is under load.
//!
//! Prints the steady URL, the flapping URL, then `ready`; serves until
//! killed. Loopback only.
//!
//! `cargo run --release --example flapping -- SWAGGER.json [FLAP_MS]`

use std::collections::BTreeMap;
use std::time::Duration;

use actix_web::http::StatusCode;
use bytes::Bytes;
use openapi_proxy::DocumentKey;
use openapi_proxy::GroupVersion;
use openapi_proxy::demo::{Route, Routes, start_site, v3_routes, version_body};
use openapi_proxy::testkit::fleet;

/// Aggregated discovery (and legacy lists) of a synthetic downstream.
fn discovery_routes(downstream: usize, groups: usize, versions: usize) -> Vec<(String, Route)> {
    fleet::discovery_routes(&fleet::discovery(downstream, groups, versions))
}

/// The flapping downstream's content: `b` adds a version to every group
/// and changes every document A also has.
fn content(b: bool) -> Vec<(String, Route)> {
    let (groups, versions) = (8, if b { 2 } else { 1 });
    let d = fleet::discovery(1, groups, versions);
    let mut docs = BTreeMap::new();
    for g in &d.groups {
        for v in &g.versions {
            let path = GroupVersion::key_of(&g.metadata.name, &v.version);
            if let Some(key) = DocumentKey::parse(&path) {
                let doc = fleet::openapi_document(&g.metadata.name, &v.version);
                let doc = if b {
                    let text = String::from_utf8_lossy(&doc).replacen(
                        "\"info\":{",
                        "\"info\":{\"description\":\"phase B\",",
                        1,
                    );
                    Bytes::from(text)
                } else {
                    doc
                };
                docs.insert(key, doc);
            }
        }
    }
    let mut out = discovery_routes(1, groups, versions);
    out.extend(v3_routes(&docs));
    out.push(("/version".to_owned(), Route::json(version_body(32))));
    out
}

/// Every path of `routes` answering `route`.
fn all(routes: &[(String, Route)], route: &Route) -> Vec<(String, Route)> {
    routes.iter().map(|(p, _)| (p.clone(), route.clone())).collect()
}

#[allow(clippy::print_stdout, reason = "the URLs are this program's output")]
fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(swagger) = args.first() else {
        eprintln!("usage: flapping SWAGGER.json [FLAP_MS]");
        std::process::exit(2);
    };
    let v2 = std::fs::read(swagger)?;
    let flap = Duration::from_millis(args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000));
    actix_web::rt::System::new().block_on(async move {
        let steady = Routes::default();
        let mut routes = discovery_routes(0, 20, 2);
        routes.push(("/openapi/v2".to_owned(), Route::json(v2)));
        routes.push(("/version".to_owned(), Route::json(version_body(32))));
        steady.replace(routes);
        let steady = start_site(steady)?;

        let a = content(false);
        let b = content(true);
        let down = all(&b, &Route::status(StatusCode::SERVICE_UNAVAILABLE));
        let garbage = all(&b, &Route::json(&b"{\"openapi\": not json"[..]));
        let phases = [a, down, b, garbage];
        let flapping = Routes::default();
        flapping.replace(phases[0].clone());
        let flapping_site = start_site(flapping.clone())?;

        println!("{}", steady.url());
        println!("{}", flapping_site.url());
        println!("ready");
        let mut phase = 0;
        loop {
            tokio::time::sleep(flap).await;
            phase = (phase + 1) % phases.len();
            flapping.replace(phases[phase].clone());
        }
    })
}
