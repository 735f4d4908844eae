//! Synthetic fleets of downstream servers, for the scale benchmark and its
//! load test: many downstreams, each publishing CRD-like group-versions
//! (KEP-3352 names 3,000 CRDs as the far end).
//!
//! Everything is generated from the numbers alone, deterministically, so
//! the same fleet can be built by a bench, a test and a load script.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use crate::body::rendered::Rendered;
use crate::discovery::types::{
    APIGroupDiscovery, APIResourceDiscovery, APISubresourceDiscovery, APIVersionDiscovery, CURRENT,
    GroupVersionKind, ObjectMeta,
};
use crate::discovery::{DownstreamDiscovery, synthesized_legacy};
use crate::publish::snapshot::Contribution;
use crate::wire::{DocumentKey, GroupVersion};

const VERBS: [&str; 8] =
    ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// The discovery one synthetic downstream publishes: `groups` groups of
/// `versions` versions, one namespaced resource each with `status` and
/// `scale` subresources.
#[must_use]
pub fn discovery(downstream: usize, groups: usize, versions: usize) -> DownstreamDiscovery {
    let mut out = DownstreamDiscovery { fresh: true, ..DownstreamDiscovery::default() };
    for g in 0..groups {
        let name = format!("group{g:03}.downstream{downstream:03}.example.com");
        let mut group =
            APIGroupDiscovery { metadata: ObjectMeta { name: name.clone() }, versions: Vec::new() };
        for v in 0..versions {
            let version = if v == 0 { "v1".to_owned() } else { format!("v1beta{v}") };
            let kind = format!("Thing{g}");
            let plural = format!("things{g}");
            let resource = APIResourceDiscovery {
                resource: plural.clone(),
                response_kind: Some(GroupVersionKind {
                    group: String::new(),
                    version: String::new(),
                    kind: kind.clone(),
                }),
                scope: "Namespaced".into(),
                singular_resource: format!("thing{g}"),
                verbs: Some(VERBS.iter().map(|v| (*v).to_owned()).collect()),
                short_names: vec![format!("t{g}")],
                categories: vec!["all".into()],
                subresources: vec![
                    APISubresourceDiscovery {
                        subresource: "status".into(),
                        response_kind: Some(GroupVersionKind {
                            kind,
                            ..GroupVersionKind::default()
                        }),
                        accepted_types: Vec::new(),
                        verbs: Some(vec!["get".into(), "patch".into(), "update".into()]),
                    },
                    APISubresourceDiscovery {
                        subresource: "scale".into(),
                        response_kind: Some(GroupVersionKind {
                            group: "autoscaling".into(),
                            version: "v1".into(),
                            kind: "Scale".into(),
                        }),
                        accepted_types: Vec::new(),
                        verbs: Some(vec!["get".into(), "patch".into(), "update".into()]),
                    },
                ],
            };
            let entry = APIVersionDiscovery {
                version: version.clone(),
                resources: vec![resource],
                freshness: CURRENT.into(),
            };
            out.legacy.insert(
                GroupVersion::key_of(&name, &version),
                Arc::new(synthesized_legacy(&name, &entry)),
            );
            group.versions.push(entry);
        }
        out.groups.push(Arc::new(group));
    }
    out
}

/// What a synthetic downstream serves for its discovery, as routes of a
/// fake site (`demo::start_site`): aggregated `/apis` (v2) and every
/// legacy group-version list. The load scripts' downstreams serve these.
#[must_use]
pub fn discovery_routes(d: &DownstreamDiscovery) -> Vec<(String, crate::demo::Route)> {
    use crate::demo::Route;
    let groups: Vec<&APIGroupDiscovery> = d.groups.iter().map(|g| &**g).collect();
    let items = serde_json::to_vec(&groups).expect("discovery types always serialize");
    let mut list = br#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":"#.to_vec();
    list.extend_from_slice(&items);
    list.extend_from_slice(b"}\n");
    let mut apis = Route::json(list);
    apis.content_type = crate::wire::media::DISCOVERY_V2_CONTENT_TYPE;
    let mut out = vec![("/apis".to_owned(), apis)];
    for (path, l) in &d.legacy {
        out.push((
            format!("/{path}"),
            Route::json(l.plain().expect("discovery bodies are held plain")),
        ));
    }
    out
}

/// A small OpenAPI v3 document for one synthetic group-version.
#[must_use]
pub fn openapi_document(group: &str, version: &str) -> Bytes {
    Bytes::from(format!(
        "{{\"openapi\":\"3.0.0\",\"info\":{{\"title\":\"{group}\",\"version\":\"{version}\"}},\"paths\":{{\
\"/apis/{group}/{version}/namespaces/{{namespace}}/things\":{{\"get\":{{\"responses\":{{\"200\":{{\"description\":\"OK\"}}}}}}}}}},\
\"components\":{{\"schemas\":{{}}}}}}"
    ))
}

/// A whole synthetic fleet as snapshot contributions: `downstreams`
/// downstreams of `groups` groups of `versions` versions.
#[must_use]
pub fn contributions(downstreams: usize, groups: usize, versions: usize) -> Vec<Arc<Contribution>> {
    (0..downstreams)
        .map(|d| {
            let discovery = discovery(d, groups, versions);
            let mut openapi = BTreeMap::new();
            for g in &discovery.groups {
                for v in &g.versions {
                    if let Some(key) =
                        DocumentKey::parse(&GroupVersion::key_of(&g.metadata.name, &v.version))
                    {
                        openapi.insert(
                            key,
                            Arc::new(Rendered::json(openapi_document(
                                &g.metadata.name,
                                &v.version,
                            ))),
                        );
                    }
                }
            }
            Arc::new(Contribution {
                name: format!("downstream{d:03}"),
                priority: i64::try_from(downstreams - d).unwrap_or(0),
                order: d,
                openapi,
                discovery: Some(Arc::new(discovery)),
                ..Contribution::default()
            })
        })
        .collect()
}
