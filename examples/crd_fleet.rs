//! One downstream serving a cluster of CRDs beside the Kubernetes
//! built-ins, for issue 16's scale measurements (`benches/load/crds.sh`):
//! `KINDS` CRD kinds in `GVS` group-versions with about `KIND_BYTES` of
//! OpenAPI schema per kind (`openapi_proxy::testkit::crd`), plus the
//! Kubernetes 1.27 built-ins read from the test data at run time (its
//! Swagger 2.0 document converted by the proxy's own pipeline, and the
//! legacy discovery derived from it, `openapi_proxy::testkit::kube`,
//! turned into aggregated discovery).
//!
//! Serves OpenAPI v3 (root and documents), aggregated `/api` and `/apis`,
//! and every legacy group-version list. Prints its base URL, then `ready`,
//! and serves until killed. `--churn SECS` changes one CRD group-version
//! (its document and discovery) every SECS seconds, alternating between
//! two revisions, so the proxy's one-change rebuild can be measured.
//!
//! `cargo run --release --example crd_fleet -- [KINDS GVS KIND_BYTES SEED] [--churn SECS]`
//! (defaults: 5000 1000 40000 16).

use std::collections::BTreeMap;

use bytes::Bytes;
use openapi_proxy::demo::{
    Route, Routes, openapi_v3_documents, start_site, v3_routes, version_body,
};
use openapi_proxy::testkit::crd::CrdFleet;
use openapi_proxy::testkit::{fleet, kube, testdata};
use openapi_proxy::{
    APIGroupDiscovery, APIResourceList, APIVersionDiscovery, CURRENT, DocumentKey,
    DownstreamDiscovery, GroupVersion, ObjectMeta, media, to_aggregated,
};

type Error = Box<dyn std::error::Error>;

fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> T {
    args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

/// One built-in group-version's resources, from its legacy list.
fn builtin_version(
    lists: &BTreeMap<String, serde_json::Value>,
    path: &str,
    version: &str,
) -> Result<APIVersionDiscovery, Error> {
    let list: APIResourceList =
        serde_json::from_value(lists.get(path).cloned().ok_or(format!("no {path}"))?)?;
    Ok(APIVersionDiscovery {
        version: version.to_owned(),
        resources: to_aggregated(&list)?,
        freshness: CURRENT.into(),
    })
}

/// The built-ins' core version and groups, aggregated.
fn builtin_discovery(
    lists: &BTreeMap<String, serde_json::Value>,
) -> Result<(APIVersionDiscovery, Vec<APIGroupDiscovery>), Error> {
    let core = builtin_version(lists, "/api/v1", "v1")?;
    let apis = lists.get("/apis").ok_or("no /apis")?;
    let mut groups = Vec::new();
    for g in apis["groups"].as_array().into_iter().flatten() {
        let name = g["name"].as_str().unwrap_or_default().to_owned();
        let preferred = g["preferredVersion"]["version"].as_str().unwrap_or_default();
        let mut versions: Vec<&str> = g["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["version"].as_str())
            .collect();
        versions.sort_by_key(|v| *v != preferred);
        let mut entry =
            APIGroupDiscovery { metadata: ObjectMeta { name: name.clone() }, versions: Vec::new() };
        for v in versions {
            entry.versions.push(builtin_version(lists, &format!("/apis/{name}/{v}"), v)?);
        }
        groups.push(entry);
    }
    Ok((core, groups))
}

fn aggregated_route(items: &[APIGroupDiscovery]) -> Route {
    let mut body = br#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":"#.to_vec();
    body.extend(serde_json::to_vec(items).unwrap_or_default());
    body.extend_from_slice(b"}\n");
    let mut route = Route::json(body);
    route.content_type = media::DISCOVERY_V2_CONTENT_TYPE;
    route
}

/// Everything the downstream serves with group-version `changed` at a
/// revision.
fn routes(fleet: &CrdFleet, changed: Option<(usize, u64)>) -> Result<Vec<(String, Route)>, Error> {
    let mut documents: BTreeMap<DocumentKey, Bytes> =
        openapi_v3_documents(&std::fs::read(testdata::path(kube::SWAGGER_1_27))?)?;
    for index in 0..fleet.group_versions {
        let (group, version) = fleet.group_version(index);
        if let Some(key) = DocumentKey::parse(&GroupVersion::key_of(&group, &version)) {
            let revision = changed.filter(|(c, _)| *c == index).map_or(0, |(_, r)| r);
            documents.insert(key, fleet.openapi_document(index, revision));
        }
    }
    let lists = kube::discovery_1_27();
    let (core, builtins) = builtin_discovery(&lists)?;
    let mut out = Vec::new();
    for g in &builtins {
        for v in &g.versions {
            let path = format!("/{}", GroupVersion::key_of(&g.metadata.name, &v.version));
            let list = lists.get(&path).ok_or(format!("no {path}"))?;
            out.push((path, Route::json(serde_json::to_vec(list)?)));
        }
    }
    let crds = fleet.discovery(changed);
    let mut groups: Vec<std::sync::Arc<APIGroupDiscovery>> =
        builtins.into_iter().map(std::sync::Arc::new).collect();
    groups.extend(crds.groups);
    out.extend(fleet::discovery_routes(&DownstreamDiscovery { groups, ..crds }));
    out.push((
        "/api".to_owned(),
        aggregated_route(&[APIGroupDiscovery {
            metadata: ObjectMeta::default(),
            versions: vec![core],
        }]),
    ));
    let core_list = lists.get("/api/v1").ok_or("no /api/v1")?;
    out.push(("/api/v1".to_owned(), Route::json(serde_json::to_vec(core_list)?)));
    let total: usize = documents.values().map(Bytes::len).sum();
    eprintln!("crd_fleet: {} OpenAPI documents, {total} bytes", documents.len());
    out.extend(v3_routes(&documents));
    out.push(("/version".to_owned(), Route::json(version_body(27))));
    Ok(out)
}

#[allow(clippy::print_stdout, reason = "the URL is this program's output")]
fn main() -> Result<(), Error> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let churn = args.iter().position(|a| a == "--churn").map(|i| {
        let secs = args.get(i + 1).and_then(|s| s.parse::<u64>().ok()).unwrap_or(5);
        args.drain(i..(i + 2).min(args.len()));
        secs
    });
    let d = CrdFleet::ISSUE_16;
    let fleet = CrdFleet {
        kinds: arg(&args, 0, d.kinds),
        group_versions: arg(&args, 1, d.group_versions),
        kind_bytes: arg(&args, 2, d.kind_bytes),
        seed: arg(&args, 3, d.seed),
    };
    let first = routes(&fleet, None)?;
    let table = Routes::default();
    table.replace(first.clone());
    // Both revisions prepared up front: a change is then one swap of the
    // route table, not seconds of generating.
    let other = match churn {
        Some(_) => Some(routes(&fleet, Some((fleet.group_versions / 2, 1)))?),
        None => None,
    };
    actix_web::rt::System::new().block_on(async move {
        let site = start_site(table)?;
        println!("{}", site.url());
        println!("ready");
        let (Some(secs), Some(other)) = (churn, other) else {
            std::future::pending::<()>().await;
            return Ok(());
        };
        let mut flip = false;
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(secs)).await;
            flip = !flip;
            site.routes.replace(if flip { other.clone() } else { first.clone() });
        }
    })
}
