//! Legacy discovery (`APIResourceList`) ↔ aggregated discovery.
//!
//! [`to_aggregated`] is upstream's `ConvertGroupVersionIntoToDiscovery`
//! (docs/upstream.md#b-4-10), used for downstreams that only serve legacy
//! discovery. [`to_legacy`] goes the other way, for serving
//! `/apis/<group>/<version>` of a downstream whose legacy document we do
//! not have: subresources are unfolded into `parent/sub` entries. (The
//! aggregated form has no `storageVersionHash`, so a synthesized list has
//! none either; lists fetched from the downstream are served unchanged.)

use super::types::{
    APIResource, APIResourceDiscovery, APIResourceList, APISubresourceDiscovery, GroupVersionKind,
};

/// Why a legacy list cannot be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LegacyError {
    /// A subresource's `namespaced` differs from its parent's (upstream
    /// fails the whole group-version; it is then published Stale).
    #[error("subresource {name} is {sub} but its parent is {parent}")]
    ScopeMismatch {
        /// The `parent/sub` name.
        name: String,
        /// The subresource's scope.
        sub: &'static str,
        /// The parent's scope.
        parent: &'static str,
    },
}

fn scope(namespaced: bool) -> &'static str {
    if namespaced { "Namespaced" } else { "Cluster" }
}

/// Converts a legacy resource list into aggregated resources.
///
/// # Errors
/// [`LegacyError::ScopeMismatch`].
pub fn to_aggregated(list: &APIResourceList) -> Result<Vec<APIResourceDiscovery>, LegacyError> {
    let mut out: Vec<APIResourceDiscovery> = Vec::new();
    for r in list.resources.iter().filter(|r| !r.name.contains('/')) {
        out.push(APIResourceDiscovery {
            resource: r.name.clone(),
            response_kind: Some(GroupVersionKind {
                group: r.group.clone(),
                version: r.version.clone(),
                kind: r.kind.clone(),
            }),
            scope: scope(r.namespaced).to_owned(),
            singular_resource: r.singular_name.clone(),
            verbs: r.verbs.clone(),
            short_names: r.short_names.clone(),
            categories: r.categories.clone(),
            subresources: Vec::new(),
        });
    }
    for r in list.resources.iter().filter(|r| r.name.contains('/')) {
        let Some((parent, sub)) = r.name.split_once('/') else { continue };
        let index = match out.iter().position(|p| p.resource == parent) {
            Some(i) => i,
            None => {
                // Only subresources exist: the parent is listed with what
                // the subresource says of it.
                out.push(APIResourceDiscovery {
                    resource: parent.to_owned(),
                    response_kind: Some(GroupVersionKind::default()),
                    scope: scope(r.namespaced).to_owned(),
                    singular_resource: String::new(),
                    verbs: None,
                    ..APIResourceDiscovery::default()
                });
                out.len() - 1
            }
        };
        let Some(parent_entry) = out.get_mut(index) else { continue };
        if parent_entry.scope != scope(r.namespaced) {
            return Err(LegacyError::ScopeMismatch {
                name: r.name.clone(),
                sub: scope(r.namespaced),
                parent: if parent_entry.scope == "Namespaced" { "Namespaced" } else { "Cluster" },
            });
        }
        let response_kind = if r.kind.is_empty() {
            GroupVersionKind::default()
        } else {
            GroupVersionKind {
                group: r.group.clone(),
                version: r.version.clone(),
                kind: r.kind.clone(),
            }
        };
        parent_entry.subresources.push(APISubresourceDiscovery {
            subresource: sub.to_owned(),
            response_kind: Some(response_kind),
            accepted_types: Vec::new(),
            verbs: r.verbs.clone(),
        });
    }
    Ok(out)
}

/// Synthesizes the legacy list of a group-version from its aggregated
/// resources (`group` empty for the core group).
#[must_use]
pub fn to_legacy(
    group: &str,
    version: &str,
    resources: &[APIResourceDiscovery],
) -> APIResourceList {
    let mut out = Vec::new();
    for r in resources {
        let namespaced = r.scope == "Namespaced";
        let kind = r.response_kind.clone().unwrap_or_default();
        out.push(APIResource {
            name: r.resource.clone(),
            singular_name: r.singular_resource.clone(),
            namespaced,
            group: kind.group.clone(),
            version: kind.version.clone(),
            kind: kind.kind,
            verbs: r.verbs.clone(),
            short_names: r.short_names.clone(),
            categories: r.categories.clone(),
            storage_version_hash: String::new(),
        });
        for s in &r.subresources {
            let kind = s.response_kind.clone().unwrap_or_default();
            out.push(APIResource {
                name: format!("{}/{}", r.resource, s.subresource),
                singular_name: String::new(),
                namespaced,
                group: kind.group,
                version: kind.version,
                kind: kind.kind,
                verbs: s.verbs.clone(),
                ..APIResource::default()
            });
        }
    }
    let core = group.is_empty();
    APIResourceList {
        kind: "APIResourceList".into(),
        api_version: if core { String::new() } else { "v1".into() },
        group_version: if core { version.to_owned() } else { format!("{group}/{version}") },
        resources: out,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn list(resources: serde_json::Value) -> APIResourceList {
        serde_json::from_value(
            json!({"kind": "APIResourceList", "groupVersion": "apps/v1", "resources": resources}),
        )
        .unwrap()
    }

    #[test]
    fn subresources_fold_under_their_parent_with_their_own_kind() {
        let l = list(json!([
            {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment",
             "verbs": ["get", "list"], "shortNames": ["deploy"], "categories": ["all"], "storageVersionHash": "8aSe+NMegvE="},
            {"name": "deployments/scale", "singularName": "", "namespaced": true, "group": "autoscaling",
             "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]},
            {"name": "deployments/status", "singularName": "", "namespaced": true, "kind": "Deployment", "verbs": ["get"]}
        ]));
        let agg = to_aggregated(&l).unwrap();
        assert_eq!(
            serde_json::to_value(&agg).unwrap(),
            json!([{"resource": "deployments",
                    "responseKind": {"group": "", "version": "", "kind": "Deployment"},
                    "scope": "Namespaced", "singularResource": "deployment", "verbs": ["get", "list"],
                    "shortNames": ["deploy"], "categories": ["all"],
                    "subresources": [
                        {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                         "verbs": ["get", "patch", "update"]},
                        {"subresource": "status", "responseKind": {"group": "", "version": "", "kind": "Deployment"},
                         "verbs": ["get"]}]}])
        );
    }

    #[test]
    fn a_parent_known_only_by_its_subresources_is_appended() {
        let l = list(
            json!([{"name": "things/proxy", "namespaced": false, "kind": "", "verbs": ["get"]}]),
        );
        let agg = to_aggregated(&l).unwrap();
        assert_eq!(
            serde_json::to_value(&agg).unwrap(),
            json!([{"resource": "things", "responseKind": {"group": "", "version": "", "kind": ""}, "scope": "Cluster",
                    "singularResource": "", "verbs": null,
                    "subresources": [{"subresource": "proxy", "responseKind": {"group": "", "version": "", "kind": ""},
                                      "verbs": ["get"]}]}])
        );
    }

    #[test]
    fn scope_mismatch_fails_the_group_version() {
        let l = list(json!([
            {"name": "a", "namespaced": true, "kind": "A", "verbs": []},
            {"name": "a/status", "namespaced": false, "kind": "A", "verbs": []}
        ]));
        assert!(matches!(to_aggregated(&l), Err(LegacyError::ScopeMismatch { .. })));
    }

    #[test]
    fn legacy_is_synthesized_with_subresources_unfolded() {
        let l = list(json!([
            {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment", "verbs": ["get"]},
            {"name": "deployments/scale", "singularName": "", "namespaced": true, "group": "autoscaling",
             "version": "v1", "kind": "Scale", "verbs": ["get"]}
        ]));
        let back = to_legacy("apps", "v1", &to_aggregated(&l).unwrap());
        assert_eq!(back.group_version, "apps/v1");
        assert_eq!(back.api_version, "v1");
        assert_eq!(back.resources.len(), 2);
        assert_eq!(back.resources[1].name, "deployments/scale");
        assert_eq!(back.resources[1].group, "autoscaling");
        let core = to_legacy("", "v1", &[]);
        assert_eq!((core.group_version.as_str(), core.api_version.as_str()), ("v1", ""));
    }

    #[test]
    fn real_kubernetes_lists_convert_and_round_trip_their_resources() {
        let dir =
            std::fs::read_dir(crate::testkit::testdata::path("discovery/kubernetes-api-discovery"))
                .expect("the test data folder is readable");
        let mut seen = 0;
        for entry in dir {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !(name.starts_with("apis__") || name == "api__v1.json") {
                continue;
            }
            let l: APIResourceList =
                serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            let agg = to_aggregated(&l).unwrap_or_else(|e| panic!("{name}: {e}"));
            let gv = crate::wire::GroupVersion::from_api_version(&l.group_version);
            let back = to_legacy(&gv.group, &gv.version, &agg);
            let names = |l: &APIResourceList| {
                let mut n: Vec<String> = l.resources.iter().map(|r| r.name.clone()).collect();
                n.sort();
                n
            };
            assert_eq!(names(&back), names(&l), "{name}");
            seen += 1;
        }
        assert!(seen >= 20, "only {seen} lists read");
    }
}
