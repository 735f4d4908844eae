//! A Kubernetes release's legacy discovery, derived from its Swagger 2.0
//! document, so a fake kube-apiserver can serve the discovery that goes
//! with the OpenAPI it serves.
//!
//! Kubernetes publishes its whole-cluster Swagger document per release but
//! no discovery dump per release (its `api/discovery/` files change one at
//! a time, commit by commit). The document has everything discovery is
//! made of except short names and categories: every path names its
//! resource (`…/namespaces/{namespace}/<plural>/{name}/<subresource>`),
//! every operation its verb (`x-kubernetes-action`) and its kind
//! (`x-kubernetes-group-version-kind`). Short names and categories come
//! from Kubernetes' own `api/discovery/` files where they list the
//! resource (the `overlay`). The unit test below holds the derivation to
//! those captured files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Value, json};

use crate::discovery::version::preference;

/// Kubernetes 1.27's whole-cluster Swagger 2.0 document, in the test data.
pub const SWAGGER_1_27: &str = "kube-openapi/pkg/schemaconv/testdata/swagger.json";

/// Kubernetes' own legacy discovery files (`api/discovery/`), in the test
/// data: the overlay for short names and categories.
pub const CAPTURED_DISCOVERY: &str = "discovery/kubernetes-api-discovery";

/// One resource or subresource, as the operations on its paths describe it.
#[derive(Debug, Default)]
struct Resource {
    namespaced: bool,
    group: String,
    version: String,
    kind: String,
    verbs: BTreeSet<&'static str>,
}

/// The discovery verb of an operation: `x-kubernetes-action`, and for
/// `connect` (exec, proxy, …) the HTTP method, as kube-apiserver's
/// installer registers them. `None` for what discovery does not list.
fn verb(method: &str, action: &str) -> Option<&'static str> {
    Some(match (action, method) {
        ("get", _) | ("connect", "get") => "get",
        ("list", _) => "list",
        ("watch" | "watchlist", _) => "watch",
        ("post", _) | ("connect", "post") => "create",
        ("put", _) | ("connect", "put") => "update",
        ("patch", _) | ("connect", "patch") => "patch",
        ("delete", _) | ("connect", "delete") => "delete",
        ("deletecollection", _) => "deletecollection",
        _ => return None,
    })
}

/// `(group-version path, namespaced, resource name)` of an API path:
/// `/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale` is
/// `("apis/apps/v1", true, "deployments/scale")`. `None` for paths that
/// are not a resource's (discovery documents, `/version`, …).
fn resource_of(path: &str) -> Option<(String, bool, String)> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (gv, rest) = match segments.as_slice() {
        ["api", v, rest @ ..] => (format!("api/{v}"), rest),
        ["apis", g, v, rest @ ..] => (format!("apis/{g}/{v}"), rest),
        _ => return None,
    };
    let rest = rest.strip_prefix(&["watch"]).unwrap_or(rest);
    let (namespaced, rest) = match rest {
        ["namespaces", "{namespace}", rest @ ..] if !rest.is_empty() => (true, rest),
        _ => (false, rest),
    };
    let name = match rest {
        [plural] | [plural, "{name}"] => (*plural).to_owned(),
        [plural, "{name}", sub, ..] => format!("{plural}/{sub}"),
        _ => return None,
    };
    Some((gv, namespaced, name))
}

/// Short names and categories per `(group, resource name)`, read from
/// Kubernetes' captured `api/discovery/` folder.
///
/// # Panics
/// When a file in `dir` cannot be read or is not an `APIResourceList`.
#[must_use]
pub fn overlay(dir: &Path) -> BTreeMap<(String, String), Value> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        let Some(stem) =
            path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".json"))
        else {
            continue;
        };
        let group = match stem.split("__").collect::<Vec<_>>().as_slice() {
            ["api", _] => String::new(),
            ["apis", g, _] => (*g).to_owned(),
            _ => continue,
        };
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let list: Value =
            serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for r in list["resources"].as_array().into_iter().flatten() {
            let name = r["name"].as_str().unwrap_or_default().to_owned();
            out.insert((group.clone(), name), r.clone());
        }
    }
    out
}

/// The legacy discovery documents of the release whose Swagger 2.0
/// document is `swagger`, by URL path: `/api` (`APIVersions`), `/apis`
/// (`APIGroupList`), and `/api/v1`, `/apis/<g>/<v>` (`APIResourceList`).
/// Resources are sorted by name, verbs alphabetically, as kube-apiserver
/// writes them; `overlay` (see [`overlay`]) adds short names and
/// categories.
#[must_use]
pub fn legacy_discovery(
    swagger: &Value,
    overlay: &BTreeMap<(String, String), Value>,
) -> BTreeMap<String, Value> {
    let mut lists: BTreeMap<String, BTreeMap<String, Resource>> = BTreeMap::new();
    for (path, item) in swagger["paths"].as_object().into_iter().flatten() {
        let Some((gv, namespaced, name)) = resource_of(path) else { continue };
        for (method, op) in item.as_object().into_iter().flatten() {
            let action = op["x-kubernetes-action"].as_str().unwrap_or_default();
            let Some(verb) = verb(method, action) else { continue };
            let gvk = &op["x-kubernetes-group-version-kind"];
            let r = lists.entry(gv.clone()).or_default().entry(name.clone()).or_default();
            r.namespaced |= namespaced;
            r.verbs.insert(verb);
            if r.kind.is_empty() {
                r.kind = gvk["kind"].as_str().unwrap_or_default().to_owned();
                r.group = gvk["group"].as_str().unwrap_or_default().to_owned();
                r.version = gvk["version"].as_str().unwrap_or_default().to_owned();
            }
        }
    }
    let mut out = BTreeMap::new();
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (gv, resources) in &lists {
        let (group, version) = match gv.split('/').collect::<Vec<_>>().as_slice() {
            ["api", v] => (String::new(), (*v).to_owned()),
            ["apis", g, v] => ((*g).to_owned(), (*v).to_owned()),
            _ => continue,
        };
        let group_version =
            if group.is_empty() { version.clone() } else { format!("{group}/{version}") };
        let items: Vec<Value> = resources
            .iter()
            .map(|(name, r)| resource_json(&group, &version, name, r, overlay))
            .collect();
        out.insert(
            format!("/{gv}"),
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
                   "resources": items}),
        );
        if !group.is_empty() {
            groups.entry(group).or_default().push(version);
        }
    }
    let core: Vec<&str> = lists.keys().filter_map(|gv| gv.strip_prefix("api/")).collect();
    out.insert("/api".to_owned(), json!({"kind": "APIVersions", "versions": core}));
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(name, mut versions)| {
            versions.sort_by(|a, b| preference(a, b));
            let versions: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
                .collect();
            json!({"name": name, "versions": versions, "preferredVersion": versions[0]})
        })
        .collect();
    out.insert(
        "/apis".to_owned(),
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
    );
    out
}

/// One entry of an `APIResourceList`, keys in kube-apiserver's order.
fn resource_json(
    group: &str,
    version: &str,
    name: &str,
    r: &Resource,
    overlay: &BTreeMap<(String, String), Value>,
) -> Value {
    let is_sub = name.contains('/');
    let mut entry = serde_json::Map::new();
    let captured = overlay.get(&(group.to_owned(), name.to_owned()));
    if let Some(categories) = captured.and_then(|c| c.get("categories")) {
        entry.insert("categories".into(), categories.clone());
    }
    if (r.group.as_str(), r.version.as_str()) != (group, version) {
        entry.insert("group".into(), r.group.clone().into());
    }
    entry.insert("kind".into(), r.kind.clone().into());
    entry.insert("name".into(), name.into());
    entry.insert("namespaced".into(), r.namespaced.into());
    if let Some(short) = captured.and_then(|c| c.get("shortNames")) {
        entry.insert("shortNames".into(), short.clone());
    }
    let singular = if is_sub { String::new() } else { r.kind.to_lowercase() };
    entry.insert("singularName".into(), singular.into());
    entry.insert("verbs".into(), r.verbs.iter().copied().collect::<Vec<_>>().into());
    if (r.group.as_str(), r.version.as_str()) != (group, version) {
        entry.insert("version".into(), r.version.clone().into());
    }
    Value::Object(entry)
}

/// Adds a `storageVersionHash` to every resource of `lists` (by path, as
/// [`legacy_discovery`] gives them) that can be watched, as kube-apiserver
/// lists them: the value Kubernetes' captured discovery files (`overlay`)
/// have for the resource, else the hash's definition for the served
/// version (the first 8 bytes of the SHA-256 of `group/version/kind`,
/// base64). Subresources and resources that cannot be watched get none.
pub fn add_storage_version_hashes(
    lists: &mut BTreeMap<String, Value>,
    overlay: &BTreeMap<(String, String), Value>,
) {
    use base64::Engine as _;
    use sha2::Digest as _;

    for list in lists.values_mut() {
        let group_version = list["groupVersion"].as_str().unwrap_or_default().to_owned();
        if group_version.is_empty() {
            continue;
        }
        let (group, version) = group_version.rsplit_once('/').unwrap_or(("", &group_version));
        for r in list["resources"].as_array_mut().into_iter().flatten() {
            let name = r["name"].as_str().unwrap_or_default().to_owned();
            let watch = r["verbs"].as_array().is_some_and(|v| v.iter().any(|v| v == "watch"));
            if name.contains('/') || !watch {
                continue;
            }
            let captured = overlay
                .get(&(group.to_owned(), name))
                .and_then(|c| c["storageVersionHash"].as_str())
                .map(str::to_owned);
            let hash = captured.unwrap_or_else(|| {
                let gvk = format!("{group}/{version}/{}", r["kind"].as_str().unwrap_or_default());
                base64::engine::general_purpose::STANDARD.encode(&sha2::Sha256::digest(gvk)[..8])
            });
            r["storageVersionHash"] = Value::from(hash);
        }
    }
}

/// Kubernetes 1.27's legacy discovery, derived from its Swagger 2.0
/// document in the test data (see the module's comment), by URL path.
///
/// # Panics
/// When the test data is missing and cannot be fetched, or is not JSON.
#[must_use]
pub fn discovery_1_27() -> BTreeMap<String, Value> {
    let swagger = super::testdata::path(SWAGGER_1_27);
    let bytes = std::fs::read(&swagger).unwrap_or_else(|e| panic!("{}: {e}", swagger.display()));
    let swagger: Value =
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", swagger.display()));
    legacy_discovery(&swagger, &overlay(&super::testdata::path(CAPTURED_DISCOVERY)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Watchable resources get the captured hash or the defined one;
    /// others get none.
    #[test]
    fn storage_version_hashes_go_to_resources_that_can_be_watched() {
        let mut lists = BTreeMap::from([(
            "/apis/example.com/v1".to_owned(),
            json!({"groupVersion": "example.com/v1", "resources": [
                {"name": "foos", "kind": "Foo", "verbs": ["get", "list", "watch"]},
                {"name": "foos/status", "kind": "Foo", "verbs": ["get"]},
                {"name": "reviews", "kind": "Review", "verbs": ["create"]},
                {"name": "bars", "kind": "Bar", "verbs": ["watch"]}]}),
        )]);
        let overlay = BTreeMap::from([(
            ("example.com".to_owned(), "bars".to_owned()),
            json!({"storageVersionHash": "captured"}),
        )]);
        add_storage_version_hashes(&mut lists, &overlay);
        let r = &lists["/apis/example.com/v1"]["resources"];
        // sha256("example.com/v1/Foo")[..8], base64.
        assert_eq!(r[0]["storageVersionHash"].as_str().map(str::len), Some(12));
        assert!(
            r[1].get("storageVersionHash").is_none() && r[2].get("storageVersionHash").is_none()
        );
        assert_eq!(r[3]["storageVersionHash"], "captured");
    }

    #[test]
    fn paths_name_their_resources() {
        let of = |p: &str| resource_of(p);
        let r = |gv: &str, ns: bool, name: &str| Some((gv.to_owned(), ns, name.to_owned()));
        assert_eq!(
            of("/api/v1/namespaces/{namespace}/pods/{name}/exec"),
            r("api/v1", true, "pods/exec")
        );
        assert_eq!(
            of("/api/v1/namespaces/{name}/finalize"),
            r("api/v1", false, "namespaces/finalize")
        );
        assert_eq!(of("/api/v1/namespaces"), r("api/v1", false, "namespaces"));
        assert_eq!(
            of("/apis/apps/v1/watch/namespaces/{namespace}/deployments"),
            r("apis/apps/v1", true, "deployments")
        );
        assert_eq!(of("/apis/apps/v1/deployments"), r("apis/apps/v1", false, "deployments"));
        assert_eq!(of("/api/v1/nodes/{name}/proxy/{path}"), r("api/v1", false, "nodes/proxy"));
        assert_eq!(of("/apis/apps/"), None);
        assert_eq!(of("/version/"), None);
    }

    /// Derived from 1.27's Swagger document, every resource Kubernetes'
    /// captured discovery also lists is the same in kind, scope, verbs,
    /// singular name and (for subresources of another group) group-version.
    /// The captured files are pinned at several commits
    /// (scripts/testdata.manifest); the two pinned at 7c66d0f8 lack `watch`
    /// everywhere, so `watch` is not compared there.
    #[test]
    fn derived_discovery_matches_what_kube_apiserver_wrote() {
        let derived = discovery_1_27();
        let captured_dir = super::super::testdata::path(CAPTURED_DISCOVERY);
        let without_watch = ["apis__networking.k8s.io__v1.json", "apis__storage.k8s.io__v1.json"];
        let mut compared = 0;
        let mut differ = Vec::new();
        for entry in std::fs::read_dir(&captured_dir).expect("captured discovery") {
            let path = entry.expect("entry").path();
            let file = path.file_name().and_then(|n| n.to_str()).expect("name").to_owned();
            let Some(stem) = file.strip_suffix(".json") else { continue };
            let route = format!("/{}", stem.replace("__", "/"));
            let captured: Value =
                serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("JSON");
            let Some(ours) = derived.get(&route) else { continue };
            let Some(theirs) = captured["resources"].as_array() else { continue };
            for want in theirs {
                let name = &want["name"];
                let Some(got) =
                    ours["resources"].as_array().into_iter().flatten().find(|r| &r["name"] == name)
                else {
                    continue;
                };
                compared += 1;
                for key in ["kind", "namespaced", "group", "version", "singularName"] {
                    if got.get(key) != want.get(key) {
                        differ.push(format!(
                            "{route} {name} {key}: {:?} ≠ {:?}",
                            got.get(key),
                            want.get(key)
                        ));
                    }
                }
                let verbs = |v: &Value| -> Vec<String> {
                    v["verbs"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .filter(|v| !(without_watch.contains(&file.as_str()) && *v == "watch"))
                        .map(str::to_owned)
                        .collect()
                };
                if verbs(got) != verbs(want) {
                    differ.push(format!(
                        "{route} {name} verbs: {:?} ≠ {:?}",
                        verbs(got),
                        verbs(want)
                    ));
                }
            }
        }
        assert!(differ.is_empty(), "derived ≠ captured:\n{}", differ.join("\n"));
        assert!(compared >= 90, "only {compared} resources compared");
        let apis = &derived["/apis"]["groups"];
        let apps =
            apis.as_array().expect("groups").iter().find(|g| g["name"] == "apps").expect("apps");
        assert_eq!(apps["preferredVersion"]["version"], "v1");
        assert_eq!(derived["/api"]["versions"], json!(["v1"]));
    }
}
