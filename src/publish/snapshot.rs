//! The immutable snapshot every request is answered from, how it is built
//! from what each downstream contributes, and the store that publishes it.
//!
//! One writer ([`crate::publish::hub`]) builds the whole next snapshot aside (root index
//! bytes, per-key documents, ETags, `Location` headers) and publishes it
//! with one `ArcSwap` store. A client therefore never sees a root index that
//! points at a document that is not there yet, and a request is a map lookup
//! and a write of shared bytes.
//!
//! Building is pure ([`build`]): contributions in, snapshot and conflicts
//! out. Conflicts (two downstreams publishing one key) are settled by
//! priority, then by configuration order, so the result does not depend on
//! which downstream answered first.

use std::collections::BTreeMap;
use std::sync::Arc;

use actix_web::http::header::HeaderValue;
use arc_swap::ArcSwap;
use serde::Serialize;

use crate::body::rendered::Rendered;
use crate::discovery::{self, DownstreamDiscovery, Rendering, Source};
use crate::publish::readiness::Readiness;
use crate::wire::key::DocumentKey;

/// What one downstream currently contributes: its last good documents.
#[derive(Debug, Clone, Default)]
pub struct Contribution {
    /// The downstream's name.
    pub name: String,
    /// Larger wins conflicts.
    pub priority: i64,
    /// Position in the configuration; earlier wins ties.
    pub order: usize,
    /// OpenAPI v3 documents by key.
    pub openapi: BTreeMap<DocumentKey, Arc<Rendered>>,
    /// `/openapi/v2` as the downstream serves it.
    pub openapi_v2: Option<OpenApiV2>,
    /// `/version` as the downstream serves it.
    pub version: Option<Arc<Rendered>>,
    /// Its discovery, last good (stale when its last poll failed).
    pub discovery: Option<Arc<DownstreamDiscovery>>,
}

impl Contribution {
    /// Whether it carries what clients act on: an OpenAPI v3 document or
    /// a discovery entry. What makes a downstream count as delivered —
    /// `/openapi/v2` or `/version` alone leave `kubectl get` with an empty
    /// cluster.
    #[must_use]
    pub fn holds_data(&self) -> bool {
        !self.openapi.is_empty()
            || self.discovery.as_ref().is_some_and(|d| !d.core.is_empty() || !d.groups.is_empty())
    }

    /// Whether `other` serves exactly what this one does (same documents by
    /// hash, same discovery): then publishing it would change nothing, and
    /// the builder is not woken. Pollers run every few seconds; with many
    /// downstreams, rebuilding on every unchanged poll would keep the
    /// builder busy for nothing.
    #[must_use]
    pub fn same_as(&self, other: &Self) -> bool {
        let hashes = |m: &BTreeMap<DocumentKey, Arc<Rendered>>| -> Vec<(DocumentKey, String)> {
            m.iter().map(|(k, r)| (k.clone(), r.hash.clone())).collect()
        };
        let v2 = |c: &Self| {
            c.openapi_v2
                .as_ref()
                .map(|v| (v.json.hash.clone(), v.protobuf.as_ref().map(|p| p.hash.clone())))
        };
        let discovery = |c: &Self| {
            c.discovery.as_ref().map(|d| {
                let legacy: Vec<(String, String)> =
                    d.legacy.iter().map(|(k, r)| (k.clone(), r.hash.clone())).collect();
                (d.core.clone(), d.groups.clone(), legacy, d.server_addresses.clone(), d.fresh)
            })
        };
        self.name == other.name
            && self.priority == other.priority
            && self.order == other.order
            && hashes(&self.openapi) == hashes(&other.openapi)
            && v2(self) == v2(other)
            && self.version.as_ref().map(|r| &r.hash) == other.version.as_ref().map(|r| &r.hash)
            && discovery(self) == discovery(other)
    }
}

/// The renditions of a downstream's `/openapi/v2`, passed through
/// unchanged.
#[derive(Debug, Clone)]
pub struct OpenApiV2 {
    /// `application/json`.
    pub json: Arc<Rendered>,
    /// The protobuf rendition, when the downstream serves one.
    pub protobuf: Option<Arc<Rendered>>,
}

/// One published OpenAPI v3 document.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Body, gzip body, hash, ETag.
    pub rendered: Arc<Rendered>,
    /// `/openapi/v3/<key>?hash=<hash>`: the root index's URL for it and the
    /// `Location` of a redirect from a stale hash.
    pub location: HeaderValue,
    /// The downstream it came from (for logs).
    pub downstream: Arc<str>,
}

/// Everything the HTTP handlers serve, as of one moment.
#[derive(Debug)]
pub struct Snapshot {
    /// Increases with every publish.
    pub generation: u64,
    /// The `/openapi/v3` root index.
    pub openapi_root: Rendered,
    /// Documents by key (`api/v1`, `apis/apps/v1`, …).
    pub openapi: BTreeMap<String, Entry>,
    /// `/openapi/v2` from the highest-priority downstream that serves it.
    pub openapi_v2: Option<OpenApiV2>,
    /// `/version` from the highest-priority downstream that serves it.
    pub version: Option<Arc<Rendered>>,
    /// Every discovery body.
    pub discovery: Rendering,
    /// Ready to be served to clients: data is here (see
    /// [`Readiness`]).
    pub ready: bool,
    /// Each downstream's standing, for `/readyz?verbose`.
    pub readiness: Readiness,
    /// `GET /`: `{"paths":[…]}`, the paths served, as kube-apiserver's
    /// root lists its own.
    pub paths: bytes::Bytes,
}

/// A key published by more than one downstream.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Conflict {
    /// The key.
    pub key: DocumentKey,
    /// The downstream whose document is served.
    pub winner: String,
    /// The downstream whose document is not.
    pub loser: String,
}

#[derive(Serialize)]
struct RootIndex<'a> {
    paths: BTreeMap<&'a str, RootEntry<'a>>,
}

#[derive(Serialize)]
struct RootEntry<'a> {
    #[serde(rename = "serverRelativeURL")]
    server_relative_url: &'a str,
}

/// Builds a snapshot from every downstream's contribution.
///
/// The root index is `{"paths":{KEY:{"serverRelativeURL":URL}}}` with keys
/// in byte order, compact, as Go's `encoding/json` writes it (docs/wire.md
/// B-1.1), so equal content gives equal bytes and equal ETags everywhere.
#[must_use]
pub fn build(
    generation: u64,
    contributions: &[Arc<Contribution>],
    readiness: Readiness,
) -> (Snapshot, Vec<Conflict>) {
    let mut ordered: Vec<&Arc<Contribution>> = contributions.iter().collect();
    ordered.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.order.cmp(&b.order)));

    let mut openapi: BTreeMap<String, Entry> = BTreeMap::new();
    let mut winners: BTreeMap<&DocumentKey, &str> = BTreeMap::new();
    let mut conflicts = Vec::new();
    for c in &ordered {
        let name: Arc<str> = Arc::from(c.name.as_str());
        for (key, rendered) in &c.openapi {
            if let Some(winner) = winners.get(key) {
                conflicts.push(Conflict {
                    key: key.clone(),
                    winner: (*winner).to_owned(),
                    loser: c.name.clone(),
                });
                continue;
            }
            winners.insert(key, &c.name);
            let location = format!("/openapi/v3/{key}?hash={}", rendered.hash);
            // Keys are URL path segments (DocumentKey refuses anything
            // else) and hashes are hex, so this is a valid header value.
            let Ok(location) = HeaderValue::from_str(&location) else { continue };
            openapi.insert(
                key.to_string(),
                Entry { rendered: Arc::clone(rendered), location, downstream: Arc::clone(&name) },
            );
        }
    }
    let root = RootIndex {
        paths: openapi
            .iter()
            .map(|(k, e)| {
                (
                    k.as_str(),
                    RootEntry { server_relative_url: e.location.to_str().unwrap_or_default() },
                )
            })
            .collect(),
    };
    let root_bytes = serde_json::to_vec(&root).expect("a map of strings always serializes");
    let sources: Vec<Source<'_>> = ordered
        .iter()
        .filter_map(|c| {
            c.discovery.as_deref().map(|d| Source {
                name: &c.name,
                priority: c.priority,
                order: c.order,
                discovery: d,
            })
        })
        .collect();
    let discovery = discovery::render(&discovery::merge(&sources));
    let openapi_v2 = ordered.iter().find_map(|c| c.openapi_v2.clone());
    let version = ordered.iter().find_map(|c| c.version.clone());
    let paths = served_paths(&discovery);
    let snapshot = Snapshot {
        paths,
        generation,
        openapi_root: Rendered::json(root_bytes),
        openapi,
        openapi_v2,
        version,
        discovery,
        ready: readiness.ready(),
        readiness,
    };
    (snapshot, conflicts)
}

/// The fixed paths and every group and group-version of `discovery`,
/// sorted, as pretty JSON (kube-apiserver's root is indented).
fn served_paths(discovery: &Rendering) -> bytes::Bytes {
    let mut paths: Vec<String> = [
        "/api",
        "/apis",
        "/healthz",
        "/livez",
        "/metrics",
        "/openapi/v2",
        "/openapi/v3",
        "/readyz",
        "/version",
    ]
    .iter()
    .map(|p| (*p).to_owned())
    .collect();
    paths.extend(discovery.groups.keys().map(|g| format!("/apis/{g}")));
    paths.extend(discovery.resources.keys().map(|k| format!("/{k}")));
    paths.sort();
    paths.dedup();
    let mut body =
        serde_json::to_vec_pretty(&serde_json::json!({ "paths": paths })).unwrap_or_default();
    body.push(b'\n');
    body.into()
}

/// The current snapshot, swapped whole.
#[derive(Debug)]
pub struct Store {
    current: ArcSwap<Snapshot>,
}

impl Store {
    /// A store serving an empty, not-ready snapshot.
    #[must_use]
    pub fn new() -> Self {
        Self::waiting(Readiness::default())
    }

    /// A store serving an empty snapshot with `readiness`: before the
    /// first build, `/readyz` already names every downstream it waits for.
    #[must_use]
    pub fn waiting(readiness: Readiness) -> Self {
        let (empty, _) = build(0, &[], readiness);
        Self { current: ArcSwap::from_pointee(empty) }
    }

    /// The snapshot to answer one request from.
    #[must_use]
    pub fn load(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Makes `snapshot` the one served.
    pub fn publish(&self, snapshot: Snapshot) {
        self.current.store(Arc::new(snapshot));
    }
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn contribution(
        name: &str,
        priority: i64,
        order: usize,
        docs: &[(&str, &str)],
    ) -> Arc<Contribution> {
        Arc::new(Contribution {
            name: name.into(),
            priority,
            order,
            openapi: docs
                .iter()
                .map(|(k, body)| {
                    (DocumentKey::parse(k).unwrap(), Arc::new(Rendered::json(body.to_string())))
                })
                .collect(),
            ..Contribution::default()
        })
    }

    #[test]
    fn empty_root_is_empty_paths() {
        let (s, _) = build(1, &[], Readiness::default());
        assert_eq!(&s.openapi_root.body[..], b"{\"paths\":{}}");
    }

    #[test]
    fn root_lists_every_key_in_byte_order_with_hash_urls() {
        let c = contribution("a", 1, 0, &[("apis/b/v1", "{\"x\":1}"), ("api/v1", "{}")]);
        let (s, conflicts) = build(1, &[c], Readiness::default());
        assert!(conflicts.is_empty());
        let root: serde_json::Value = serde_json::from_slice(&s.openapi_root.body).unwrap();
        let keys: Vec<_> = root["paths"].as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["api/v1", "apis/b/v1"]);
        let url = root["paths"]["api/v1"]["serverRelativeURL"].as_str().unwrap();
        assert_eq!(
            url,
            format!("/openapi/v3/api/v1?hash={}", crate::body::digest::sha512_hex(b"{}"))
        );
    }

    #[test]
    fn higher_priority_wins_a_conflict_whatever_the_order() {
        let low = contribution("low", 1, 0, &[("api/v1", "{\"low\":1}")]);
        let high = contribution("high", 2, 1, &[("api/v1", "{\"high\":1}")]);
        for input in [vec![low.clone(), high.clone()], vec![high.clone(), low.clone()]] {
            let (s, conflicts) = build(1, &input, Readiness::default());
            assert_eq!(&s.openapi["api/v1"].rendered.body[..], b"{\"high\":1}");
            assert_eq!(
                conflicts,
                [Conflict {
                    key: DocumentKey::parse("api/v1").unwrap(),
                    winner: "high".into(),
                    loser: "low".into()
                }]
            );
        }
    }

    #[test]
    fn equal_priority_goes_to_the_earlier_downstream() {
        let first = contribution("first", 1, 0, &[("api/v1", "{\"first\":1}")]);
        let second = contribution("second", 1, 1, &[("api/v1", "{\"second\":1}")]);
        let (s, _) = build(1, &[second, first], Readiness::default());
        assert_eq!(&*s.openapi["api/v1"].downstream, "first");
    }

    #[test]
    fn same_content_gives_same_root_bytes() {
        let a = contribution("a", 1, 0, &[("api/v1", "{}")]);
        let (s1, _) = build(1, std::slice::from_ref(&a), Readiness::default());
        let (s2, _) = build(7, &[a], Readiness::default());
        assert_eq!(s1.openapi_root.body, s2.openapi_root.body);
        assert_eq!(s1.openapi_root.etag, s2.openapi_root.etag);
    }
}
