//! Fetching one downstream's discovery (BEHAVIOR.md B-4.9, B-6.1).
//!
//! `/api` and `/apis` are asked for with client-go's Accept list
//! (aggregated v2, v2beta1, then plain JSON) and the answer is classified by
//! its Content-Type parameters, as client-go classifies it. An aggregated
//! answer is taken as it is (freshness overwritten with `Current`, a null
//! `responseKind` replaced by an empty one, as kube-aggregator does for old
//! clients); a legacy answer is completed by fetching every
//! `/apis/<g>/<v>` and converting it (B-4.10). Either way each
//! group-version's legacy `APIResourceList` is kept — the downstream's own
//! bytes when it serves them — because it carries `storageVersionHash`,
//! which the aggregated form drops.

use std::collections::BTreeMap;
use std::sync::Arc;

use awc::http::header::HeaderValue;
use bytes::Bytes;

use super::client::{DownstreamClient, FetchError, Fetched};
use super::poll::PollError;
use crate::discovery::types::{
    APIGroupDiscovery, APIGroupDiscoveryList, APIGroupList, APIResourceList, APIVersionDiscovery,
    APIVersions, CURRENT, GroupVersionKind, ObjectMeta, STALE, ServerAddressByClientCIDR,
};
use crate::discovery::{DownstreamDiscovery, legacy, legacy_path, synthesized_legacy};
use crate::metrics::Metrics;
use crate::negotiate;
use crate::rendered::Rendered;

/// client-go's Accept for `/api` and `/apis` (B-6.1).
pub const CLIENT_GO_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// What one of `/api`, `/apis` last said.
#[derive(Debug, Clone, Default)]
struct PathState {
    /// ETag of an aggregated answer (legacy answers have none).
    etag: Option<HeaderValue>,
    groups: Vec<APIGroupDiscovery>,
    legacy: BTreeMap<String, Arc<Rendered>>,
    server_addresses: Vec<ServerAddressByClientCIDR>,
}

/// One downstream's discovery state across polls.
#[derive(Debug, Default)]
pub struct DiscoveryFetcher {
    api: Option<PathState>,
    apis: Option<PathState>,
    fresh: bool,
}

/// Whether a Content-Type names aggregated discovery (v2 or v2beta1):
/// base `application/json` and `g`, `v`, `as` as expected, in any order,
/// extra parameters tolerated — client-go's `mime.ParseMediaType` test.
fn is_aggregated(content_type: Option<&HeaderValue>) -> bool {
    let Some(ct) = content_type.and_then(|c| c.to_str().ok()) else { return false };
    let clauses = negotiate::parse_accept(ct);
    let Some(c) = clauses.first() else { return false };
    c.type_.eq_ignore_ascii_case("application")
        && c.subtype.eq_ignore_ascii_case("json")
        && c.param("g") == Some("apidiscovery.k8s.io")
        && c.param("as") == Some("APIGroupDiscoveryList")
        && matches!(c.param("v"), Some("v2" | "v2beta1"))
}

impl DiscoveryFetcher {
    /// The discovery to contribute: the last good answers, marked stale
    /// when this round failed. `None` before any answer.
    #[must_use]
    pub fn current(&self) -> Option<DownstreamDiscovery> {
        if self.api.is_none() && self.apis.is_none() {
            return None;
        }
        let api = self.api.clone().unwrap_or_default();
        let apis = self.apis.clone().unwrap_or_default();
        let mut legacy = api.legacy;
        legacy.extend(apis.legacy);
        Some(DownstreamDiscovery {
            core: api.groups.into_iter().flat_map(|g| g.versions).collect(),
            groups: apis.groups,
            legacy,
            server_addresses: api.server_addresses,
            fresh: self.fresh,
        })
    }

    /// One round: `/api`, then `/apis`.
    ///
    /// # Errors
    /// The first failure; what failed keeps its last good state.
    pub async fn fetch(
        &mut self,
        client: &mut DownstreamClient,
        metrics: &Metrics,
        name: &str,
    ) -> Result<(), PollError> {
        let api = fetch_path(client, metrics, name, "/api", self.api.as_ref()).await;
        let apis = fetch_path(client, metrics, name, "/apis", self.apis.as_ref()).await;
        let mut first_error = None;
        match api {
            Ok(Some(state)) => self.api = Some(state),
            Ok(None) => {}
            Err(e) => first_error = Some(e),
        }
        match apis {
            Ok(Some(state)) => self.apis = Some(state),
            Ok(None) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
        self.fresh = first_error.is_none();
        first_error.map_or(Ok(()), Err)
    }
}

/// Fetches `/api` or `/apis`; `Ok(None)` when unchanged.
async fn fetch_path(
    client: &mut DownstreamClient,
    metrics: &Metrics,
    name: &str,
    path: &'static str,
    previous: Option<&PathState>,
) -> Result<Option<PathState>, PollError> {
    let document = if path == "/api" { "discovery_api" } else { "discovery_apis" };
    let etag = previous.and_then(|p| p.etag.clone());
    let result = client.get(path, CLIENT_GO_ACCEPT, etag.as_ref()).await;
    count(metrics, name, document, &result);
    match result? {
        Fetched::NotModified => Ok(None),
        // A server without the core group (or without named groups).
        Fetched::NotFound => Ok(Some(PathState::default())),
        Fetched::NotAcceptable => Err(PollError::NotAcceptable { path: path.into() }),
        Fetched::Body { body, etag, content_type } => {
            if is_aggregated(content_type.as_ref()) {
                aggregated(client, metrics, name, path, &body, etag).await.map(Some)
            } else {
                legacy_only(client, metrics, name, path, &body).await.map(Some)
            }
        }
    }
}

fn count(
    metrics: &Metrics,
    name: &str,
    document: &'static str,
    result: &Result<Fetched, FetchError>,
) {
    metrics.fetch(name, document, Fetched::result(result));
}

fn bad(path: &str, source: serde_json::Error) -> PollError {
    PollError::BadDocument { path: path.to_owned(), source }
}

async fn aggregated(
    client: &mut DownstreamClient,
    metrics: &Metrics,
    name: &str,
    path: &str,
    body: &Bytes,
    etag: Option<HeaderValue>,
) -> Result<PathState, PollError> {
    let list: APIGroupDiscoveryList = serde_json::from_slice(body).map_err(|e| bad(path, e))?;
    let mut groups = list.items;
    let core = path == "/api";
    // /api holds the core group only, /apis named groups only (B-4.7).
    groups.retain(|g| g.metadata.name.is_empty() == core);
    for g in &mut groups {
        for v in &mut g.versions {
            v.freshness = CURRENT.to_owned();
            for r in &mut v.resources {
                r.response_kind.get_or_insert_with(GroupVersionKind::default);
                for s in &mut r.subresources {
                    s.response_kind.get_or_insert_with(GroupVersionKind::default);
                }
            }
        }
    }
    let mut legacy = BTreeMap::new();
    for g in &groups {
        for v in &g.versions {
            let lpath = legacy_path(&g.metadata.name, &v.version);
            let rendered = match fetch_legacy_list(client, metrics, name, &lpath).await {
                Ok(Some((rendered, _))) => rendered,
                // Not served (or broken): synthesize from the aggregated form.
                Ok(None) | Err(_) => Arc::new(synthesized_legacy(&g.metadata.name, v)),
            };
            legacy.insert(lpath, rendered);
        }
    }
    Ok(PathState { etag, groups, legacy, server_addresses: Vec::new() })
}

/// `GET /<lpath>` as a legacy `APIResourceList`: its bytes prepared for
/// serving as they are, and the parsed list. `None` on 404.
async fn fetch_legacy_list(
    client: &mut DownstreamClient,
    metrics: &Metrics,
    name: &str,
    lpath: &str,
) -> Result<Option<(Arc<Rendered>, APIResourceList)>, PollError> {
    let path = format!("/{lpath}");
    let result = client.get(&path, "application/json", None).await;
    count(metrics, name, "discovery_group_version", &result);
    match result? {
        Fetched::Body { body, .. } => {
            let list: APIResourceList = serde_json::from_slice(&body).map_err(|e| bad(&path, e))?;
            Ok(Some((Arc::new(Rendered::json(body)), list)))
        }
        Fetched::NotFound | Fetched::NotModified => Ok(None),
        Fetched::NotAcceptable => Err(PollError::NotAcceptable { path }),
    }
}

/// A version that could not be fetched or converted: listed, stale, empty
/// (upstream publishes exactly this, B-4.9).
fn stale(version: &str) -> APIVersionDiscovery {
    APIVersionDiscovery {
        version: version.to_owned(),
        resources: Vec::new(),
        freshness: STALE.to_owned(),
    }
}

async fn legacy_only(
    client: &mut DownstreamClient,
    metrics: &Metrics,
    name: &str,
    path: &str,
    body: &Bytes,
) -> Result<PathState, PollError> {
    // (group, versions) to fetch, preferred first.
    let (targets, server_addresses): (Vec<(String, Vec<String>)>, _) = if path == "/api" {
        let v: APIVersions = serde_json::from_slice(body).map_err(|e| bad(path, e))?;
        (vec![(String::new(), v.versions)], v.server_address_by_client_cidrs)
    } else {
        let l: APIGroupList = serde_json::from_slice(body).map_err(|e| bad(path, e))?;
        let targets = l
            .groups
            .into_iter()
            .filter(|g| !g.name.is_empty())
            .map(|g| {
                // The preferred version first, then the others in order.
                let mut versions: Vec<String> = vec![g.preferred_version.version.clone()];
                versions.extend(g.versions.into_iter().map(|v| v.version));
                versions.retain(|v| !v.is_empty());
                let mut seen = Vec::new();
                versions.retain(|v| {
                    if seen.contains(v) {
                        false
                    } else {
                        seen.push(v.clone());
                        true
                    }
                });
                (g.name, versions)
            })
            .collect();
        (targets, Vec::new())
    };
    let mut groups = Vec::new();
    let mut legacy = BTreeMap::new();
    let mut first_error = None;
    for (group, versions) in targets {
        let mut entry = APIGroupDiscovery {
            metadata: ObjectMeta { name: group.clone() },
            versions: Vec::new(),
        };
        for version in versions {
            let lpath = legacy_path(&group, &version);
            match fetch_legacy_list(client, metrics, name, &lpath).await {
                Ok(Some((rendered, list))) => match legacy::to_aggregated(&list) {
                    Ok(resources) => {
                        entry.versions.push(APIVersionDiscovery {
                            version,
                            resources,
                            freshness: CURRENT.into(),
                        });
                        legacy.insert(lpath, rendered);
                    }
                    Err(e) => {
                        tracing::debug!(downstream = %name, group_version = %lpath, error = %e, "legacy discovery does not convert");
                        entry.versions.push(stale(&version));
                    }
                },
                Ok(None) => entry.versions.push(stale(&version)),
                Err(e) => {
                    entry.versions.push(stale(&version));
                    first_error.get_or_insert(e);
                }
            }
        }
        groups.push(entry);
    }
    if let Some(e) = first_error {
        // The listed versions are still published (stale); the round
        // counts as failed so the operator sees it.
        tracing::debug!(downstream = %name, error = %crate::error_chain(&e), "some group-versions failed");
    }
    Ok(PathState { etag: None, groups, legacy, server_addresses })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_content_type_is_recognised_as_client_go_does() {
        let ct = |s: &'static str| Some(HeaderValue::from_static(s));
        assert!(is_aggregated(
            ct("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").as_ref()
        ));
        assert!(is_aggregated(
            ct("application/json;as=APIGroupDiscoveryList;v=v2beta1;g=apidiscovery.k8s.io")
                .as_ref()
        ));
        assert!(is_aggregated(
            ct(
                "application/json;charset=utf-8;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            )
            .as_ref()
        ));
        assert!(!is_aggregated(ct("application/json").as_ref()));
        assert!(!is_aggregated(
            ct("application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").as_ref()
        ));
        assert!(!is_aggregated(
            ct("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList").as_ref()
        ));
        assert!(!is_aggregated(None));
    }
}
