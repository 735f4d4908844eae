//! A synthetic cluster of CustomResourceDefinitions, for the 5,000-CRD
//! scale work (issue 16): `kinds` CRD kinds spread over `group_versions`
//! group-versions, all served by one downstream, as kube-apiserver serves
//! its CRDs.
//!
//! Unlike [`crate::testkit::fleet`] (many downstreams, tiny documents),
//! the documents here are sized like real CRD documents: structural
//! schemas inlined (no `$ref` between kinds), deep, with long
//! descriptions — sized by [`CrdFleet::kind_bytes`] per kind. Every
//! schema is drawn from a seeded generator, so a fleet is the same on
//! every run and every machine, and kinds differ from each other, so the
//! documents do not compress to nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::body::rendered::Rendered;
use crate::discovery::types::{
    APIGroupDiscovery, APIResourceDiscovery, APISubresourceDiscovery, APIVersionDiscovery, CURRENT,
    GroupVersionKind, ObjectMeta,
};
use crate::discovery::{DownstreamDiscovery, synthesized_legacy};
use crate::publish::snapshot::Contribution;
use crate::wire::{DocumentKey, GroupVersion};

/// A fleet of CRDs, described by its numbers alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrdFleet {
    /// Varies every name and schema.
    pub seed: u64,
    /// How many CRD kinds.
    pub kinds: usize,
    /// How many group-versions they are spread over (two versions per
    /// group, `v1` and `v1beta1`, as CRDs mid-migration have).
    pub group_versions: usize,
    /// About how many bytes of JSON each kind's `spec` schema takes. Its
    /// `status` schema (a quarter of that), list schema and paths come on
    /// top: a kind takes about 1.8 times this in its document (40,000 →
    /// 73 KB, 22,000 → 45 KB; BENCHMARKS.md#crds-under-load).
    pub kind_bytes: usize,
}

impl CrdFleet {
    /// The issue's scale: 5,000 kinds in 1,000 group-versions, with
    /// `kind_bytes` 40,000 (documents of about 73 KB per kind; pass 22,000
    /// for the issue's ~40 KB average).
    pub const ISSUE_16: Self =
        Self { seed: 16, kinds: 5_000, group_versions: 1_000, kind_bytes: 40_000 };

    /// Group and version of group-version `index`.
    #[must_use]
    pub fn group_version(&self, index: usize) -> (String, String) {
        let group = format!("{}.crd{}.example.com", WORDS[index / 2 % WORDS.len()], index / 2);
        let version = if index.is_multiple_of(2) { "v1" } else { "v1beta1" };
        (group, version.to_owned())
    }

    /// The kinds of group-version `index`: kind `k` lives in group-version
    /// `k % group_versions`.
    #[must_use]
    pub fn kinds_of(&self, index: usize) -> Vec<String> {
        (index..self.kinds)
            .step_by(self.group_versions.max(1))
            .map(|k| format!("{}{}", capitalized(WORDS[k % WORDS.len()]), k))
            .collect()
    }

    /// Discovery as the downstream serves it, with `revision` as a
    /// category of group-version `changed` (0 everywhere else): raising it
    /// is a change to that one group-version's discovery.
    #[must_use]
    pub fn discovery(&self, changed: Option<(usize, u64)>) -> DownstreamDiscovery {
        let mut out = DownstreamDiscovery { fresh: true, ..DownstreamDiscovery::default() };
        for index in 0..self.group_versions {
            let (group, version) = self.group_version(index);
            let revision = changed.filter(|(c, _)| *c == index).map_or(0, |(_, r)| r);
            let entry = APIVersionDiscovery {
                version: version.clone(),
                resources: self
                    .kinds_of(index)
                    .iter()
                    .map(|kind| resource(&group, &version, kind, revision))
                    .collect(),
                freshness: CURRENT.into(),
            };
            out.legacy.insert(
                GroupVersion::key_of(&group, &version),
                Arc::new(synthesized_legacy(&group, &entry)),
            );
            match out.groups.last_mut() {
                Some(g) if g.metadata.name == group => Arc::make_mut(g).versions.push(entry),
                _ => out.groups.push(Arc::new(APIGroupDiscovery {
                    metadata: ObjectMeta { name: group },
                    versions: vec![entry],
                })),
            }
        }
        out
    }

    /// The OpenAPI v3 document of group-version `index`, as kube-apiserver
    /// publishes a CRD group-version: CRD-style paths for every kind, each
    /// kind's structural schema inlined with its
    /// `x-kubernetes-group-version-kind`, and the shared `meta/v1` schemas
    /// by `$ref`. `revision` changes the document (a CRD update).
    #[must_use]
    pub fn openapi_document(&self, index: usize, revision: u64) -> Bytes {
        let (group, version) = self.group_version(index);
        let prefix = reversed(&group);
        let mut paths = Map::new();
        let mut schemas = Map::new();
        for kind in self.kinds_of(index) {
            let plural = format!("{}s", kind.to_lowercase());
            let name = format!("{prefix}.{version}.{kind}");
            let mut rng = Rng::new(self.seed ^ hash(&name) ^ revision);
            let gvk = json!([{ "group": group, "kind": kind, "version": version }]);
            let list_gvk =
                json!([{ "group": group, "kind": format!("{kind}List"), "version": version }]);
            let spec = rng.object(self.kind_bytes, 0);
            let schema = json!({
                "description": rng.sentence(12),
                "type": "object",
                "properties": {
                    "apiVersion": { "description": API_VERSION_DOC, "type": "string" },
                    "kind": { "description": KIND_DOC, "type": "string" },
                    "metadata": { "allOf": [{ "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" }], "default": {} },
                    "spec": spec,
                    "status": rng.object(self.kind_bytes / 4, 1),
                },
                "x-kubernetes-group-version-kind": gvk,
            });
            schemas.insert(name.clone(), schema);
            schemas.insert(
                format!("{name}List"),
                json!({
                    "description": format!("{kind}List is a list of {kind}"),
                    "type": "object",
                    "required": ["items"],
                    "properties": {
                        "apiVersion": { "description": API_VERSION_DOC, "type": "string" },
                        "items": { "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", plural), "type": "array", "items": { "$ref": format!("#/components/schemas/{name}") } },
                        "kind": { "description": KIND_DOC, "type": "string" },
                        "metadata": { "allOf": [{ "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta" }], "default": {} },
                    },
                    "x-kubernetes-group-version-kind": list_gvk,
                }),
            );
            let base = format!("/apis/{group}/{version}");
            let one = json!({ "$ref": format!("#/components/schemas/{name}") });
            let list = json!({ "$ref": format!("#/components/schemas/{name}List") });
            paths.insert(
                format!("{base}/{plural}"),
                json!({ "get": operation("list", &kind, &group, &version, &list) }),
            );
            paths.insert(
                format!("{base}/namespaces/{{namespace}}/{plural}"),
                json!({
                    "get": operation("listNamespaced", &kind, &group, &version, &list),
                    "post": operation("createNamespaced", &kind, &group, &version, &one),
                    "delete": operation("deleteCollectionNamespaced", &kind, &group, &version, &status_ref()),
                    "parameters": [namespace_parameter()],
                }),
            );
            paths.insert(
                format!("{base}/namespaces/{{namespace}}/{plural}/{{name}}"),
                json!({
                    "get": operation("readNamespaced", &kind, &group, &version, &one),
                    "put": operation("replaceNamespaced", &kind, &group, &version, &one),
                    "patch": operation("patchNamespaced", &kind, &group, &version, &one),
                    "delete": operation("deleteNamespaced", &kind, &group, &version, &status_ref()),
                    "parameters": [name_parameter(), namespace_parameter()],
                }),
            );
            paths.insert(
                format!("{base}/namespaces/{{namespace}}/{plural}/{{name}}/status"),
                json!({
                    "get": operation("readNamespacedStatus", &kind, &group, &version, &one),
                    "put": operation("replaceNamespacedStatus", &kind, &group, &version, &one),
                    "patch": operation("patchNamespacedStatus", &kind, &group, &version, &one),
                    "parameters": [name_parameter(), namespace_parameter()],
                }),
            );
        }
        for (name, schema) in meta_schemas() {
            schemas.insert(name.to_owned(), schema);
        }
        let doc = json!({
            "openapi": "3.0.0",
            "info": { "title": "Kubernetes CRD Swagger", "version": "v0.1.0" },
            "paths": paths,
            "components": { "schemas": schemas },
        });
        Bytes::from(serde_json::to_vec(&doc).expect("a JSON value always serializes"))
    }

    /// Every document and the discovery as the contribution of one
    /// downstream called `name`. `changed` names one group-version and a
    /// revision for it (its document and discovery differ from
    /// revision 0).
    #[must_use]
    pub fn contribution(&self, name: &str, changed: Option<(usize, u64)>) -> Contribution {
        let mut openapi = BTreeMap::new();
        for index in 0..self.group_versions {
            let (group, version) = self.group_version(index);
            let revision = changed.filter(|(c, _)| *c == index).map_or(0, |(_, r)| r);
            if let Some(key) = DocumentKey::parse(&GroupVersion::key_of(&group, &version)) {
                openapi
                    .insert(key, Arc::new(Rendered::json(self.openapi_document(index, revision))));
            }
        }
        Contribution {
            name: name.to_owned(),
            priority: 0,
            order: 0,
            openapi,
            discovery: Some(Arc::new(self.discovery(changed))),
            ..Contribution::default()
        }
    }

    /// [`CrdFleet::contribution`] as a poller hands it on after
    /// `previous`: every document, legacy list and discovery group that
    /// did not change is `previous`'s own `Arc`.
    #[must_use]
    pub fn contribution_after(
        &self,
        previous: &Contribution,
        name: &str,
        changed: Option<(usize, u64)>,
    ) -> Contribution {
        let mut next = self.contribution(name, changed);
        for (key, doc) in &mut next.openapi {
            if let Some(before) = previous.openapi.get(key).filter(|b| b.hash == doc.hash) {
                *doc = Arc::clone(before);
            }
        }
        if let (Some(before), Some(after)) = (&previous.discovery, &next.discovery) {
            let mut discovery = (**after).clone();
            let groups: BTreeMap<&str, &Arc<APIGroupDiscovery>> =
                before.groups.iter().map(|g| (g.metadata.name.as_str(), g)).collect();
            for g in &mut discovery.groups {
                if let Some(b) = groups.get(g.metadata.name.as_str()).filter(|b| **b == g) {
                    *g = Arc::clone(b);
                }
            }
            for (path, list) in &mut discovery.legacy {
                if let Some(b) = before.legacy.get(path).filter(|b| b.hash == list.hash) {
                    *list = Arc::clone(b);
                }
            }
            next.discovery = Some(Arc::new(discovery));
        }
        next
    }
}

fn resource(group: &str, version: &str, kind: &str, revision: u64) -> APIResourceDiscovery {
    let singular = kind.to_lowercase();
    let gvk = |kind: &str| GroupVersionKind {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: kind.to_owned(),
    };
    let verbs = |v: &[&str]| Some(v.iter().map(|s| (*s).to_owned()).collect());
    let mut categories = vec!["all".to_owned()];
    if revision > 0 {
        categories.push(format!("revision{revision}"));
    }
    APIResourceDiscovery {
        resource: format!("{singular}s"),
        response_kind: Some(gvk(kind)),
        scope: "Namespaced".into(),
        singular_resource: singular.clone(),
        verbs: verbs(&[
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch",
        ]),
        short_names: vec![singular.chars().take(3).collect()],
        categories,
        subresources: vec![APISubresourceDiscovery {
            subresource: "status".into(),
            response_kind: Some(gvk(kind)),
            accepted_types: Vec::new(),
            verbs: verbs(&["get", "patch", "update"]),
        }],
    }
}

const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

fn status_ref() -> Value {
    json!({ "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Status" })
}

fn name_parameter() -> Value {
    json!({ "name": "name", "in": "path", "description": "name of the resource", "required": true, "schema": { "type": "string", "uniqueItems": true } })
}

fn namespace_parameter() -> Value {
    json!({ "name": "namespace", "in": "path", "description": "object name and auth scope, such as for teams and projects", "required": true, "schema": { "type": "string", "uniqueItems": true } })
}

/// One operation as kube-apiserver writes it for a CRD.
fn operation(verb: &str, kind: &str, group: &str, version: &str, schema: &Value) -> Value {
    let action = match verb {
        v if v.starts_with("list") => "list",
        v if v.starts_with("create") => "post",
        v if v.starts_with("replace") => "put",
        v if v.starts_with("patch") => "patch",
        v if v.starts_with("delete") => "delete",
        _ => "get",
    };
    let content = json!({
        "application/json": { "schema": schema },
        "application/yaml": { "schema": schema },
    });
    json!({
        "tags": [format!("{}_{}", group.replace('.', "_"), version)],
        "description": format!("{verb} {kind}"),
        "operationId": format!("{verb}{}{kind}", capitalized(version)),
        "responses": { "200": { "description": "OK", "content": content }, "401": { "description": "Unauthorized" } },
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": { "group": group, "version": version, "kind": kind },
    })
}

/// The `meta/v1` schemas every CRD document carries (abridged: what the
/// CRD schemas and paths refer to).
fn meta_schemas() -> Vec<(&'static str, Value)> {
    vec![
        (
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            json!({ "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.", "type": "object", "properties": {
                "annotations": { "type": "object", "additionalProperties": { "type": "string", "default": "" } },
                "labels": { "type": "object", "additionalProperties": { "type": "string", "default": "" } },
                "name": { "type": "string" }, "namespace": { "type": "string" },
                "resourceVersion": { "type": "string" }, "uid": { "type": "string" },
                "generation": { "type": "integer", "format": "int64" },
                "creationTimestamp": { "type": "string", "format": "date-time" } } }),
        ),
        (
            "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
            json!({ "description": "ListMeta describes metadata that synthetic resources must have, including lists and various status objects.", "type": "object", "properties": {
                "continue": { "type": "string" }, "remainingItemCount": { "type": "integer", "format": "int64" },
                "resourceVersion": { "type": "string" } } }),
        ),
        (
            "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
            json!({ "description": "Status is a return value for calls that don't return other objects.", "type": "object", "properties": {
                "code": { "type": "integer", "format": "int32" }, "message": { "type": "string" },
                "reason": { "type": "string" }, "status": { "type": "string" } } }),
        ),
    ]
}

/// Words schema names and descriptions are drawn from: varied enough that
/// descriptions read like prose to a compressor, not like one repeated
/// phrase.
const WORDS: [&str; 64] = [
    "backup",
    "cluster",
    "policy",
    "gateway",
    "route",
    "certificate",
    "issuer",
    "secret",
    "volume",
    "snapshot",
    "monitor",
    "alert",
    "rule",
    "probe",
    "scrape",
    "tenant",
    "bucket",
    "queue",
    "topic",
    "stream",
    "pipeline",
    "task",
    "run",
    "trigger",
    "binding",
    "claim",
    "class",
    "profile",
    "quota",
    "limit",
    "network",
    "endpoint",
    "service",
    "mesh",
    "sidecar",
    "proxy",
    "listener",
    "filter",
    "budget",
    "schedule",
    "template",
    "release",
    "chart",
    "repository",
    "image",
    "registry",
    "mirror",
    "node",
    "pool",
    "machine",
    "provider",
    "zone",
    "region",
    "database",
    "replica",
    "shard",
    "index",
    "cache",
    "session",
    "token",
    "identity",
    "role",
    "grant",
    "audit",
];

fn capitalized(word: &str) -> String {
    let mut c = word.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// `a.b.example.com` → `com.example.b.a`, as kube-apiserver names CRD
/// schemas.
fn reversed(group: &str) -> String {
    group.split('.').rev().collect::<Vec<_>>().join(".")
}

/// FNV-1a: a stable seed per schema name (std's hasher is not stable
/// across releases).
fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// SplitMix64: small, seeded, the same everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n.max(1)).unwrap_or(1)).unwrap_or(0)
    }

    fn word(&mut self) -> &'static str {
        WORDS[self.below(WORDS.len())]
    }

    fn sentence(&mut self, words: usize) -> String {
        let mut out = capitalized(self.word());
        for _ in 1..words {
            out.push(' ');
            out.push_str(self.word());
        }
        out.push('.');
        out
    }

    /// A structural object schema of about `budget` bytes: properties
    /// with descriptions, nested objects and arrays of objects down to a
    /// few levels, as controller-gen writes them.
    fn object(&mut self, budget: usize, depth: usize) -> Value {
        let mut properties = Map::new();
        let mut used = 0;
        while used < budget {
            let name = format!("{}{}", self.word(), capitalized(self.word()));
            let words = 6 + self.below(30);
            let description = self.sentence(words);
            used += name.len() + description.len() + 40;
            let left = budget - used.min(budget);
            let nested = depth < 4 && left > 800 && self.below(4) == 0;
            let value = if nested {
                let parts = 2 + self.below(3);
                let share = left / parts;
                used += share;
                let inner = self.object(share, depth + 1);
                if self.below(3) == 0 {
                    json!({ "description": description, "type": "array", "items": inner })
                } else {
                    let mut inner = inner;
                    if let Some(o) = inner.as_object_mut() {
                        o.insert("description".into(), Value::String(description));
                    }
                    inner
                }
            } else {
                match self.below(5) {
                    0 => {
                        json!({ "description": description, "type": "integer", "format": "int32", "minimum": 0 })
                    }
                    1 => json!({ "description": description, "type": "boolean" }),
                    2 => {
                        json!({ "description": description, "type": "string", "enum": [self.word(), self.word(), self.word()] })
                    }
                    3 => {
                        json!({ "description": description, "type": "object", "additionalProperties": { "type": "string" } })
                    }
                    _ => {
                        json!({ "description": description, "type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63 })
                    }
                }
            };
            properties.insert(name, value);
        }
        let required: Vec<&String> = properties.keys().take(2).collect();
        json!({ "type": "object", "required": required, "properties": properties })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: CrdFleet = CrdFleet { seed: 1, kinds: 12, group_versions: 4, kind_bytes: 8_000 };

    #[test]
    fn the_same_seed_gives_the_same_documents() {
        assert_eq!(SMALL.openapi_document(1, 0), SMALL.openapi_document(1, 0));
        let other = CrdFleet { seed: 2, ..SMALL };
        assert_ne!(SMALL.openapi_document(1, 0), other.openapi_document(1, 0));
    }

    #[test]
    fn kinds_are_spread_over_every_group_version() {
        let counts: Vec<usize> = (0..4).map(|i| SMALL.kinds_of(i).len()).collect();
        assert_eq!(counts, [3, 3, 3, 3]);
        let d = SMALL.discovery(None);
        assert_eq!(d.groups.len(), 2, "two versions per group");
        assert_eq!(d.legacy.len(), 4);
    }

    #[test]
    fn documents_are_about_kind_bytes_per_kind_and_do_not_compress_to_nothing() {
        let fleet = CrdFleet { kind_bytes: 40_000, ..SMALL };
        let doc = fleet.openapi_document(0, 0);
        let per_kind = doc.len() / 3;
        assert!((30_000..80_000).contains(&per_kind), "{per_kind} bytes per kind");
        let gz = Rendered::json(doc.clone()).gzip.expect("compressible").len();
        assert!(gz * 12 > doc.len(), "gzip {gz} of {} bytes: too repetitive", doc.len());
    }

    #[test]
    fn documents_carry_crd_paths_and_group_version_kinds() {
        let doc: Value = serde_json::from_slice(&SMALL.openapi_document(0, 0)).unwrap();
        let (group, version) = SMALL.group_version(0);
        let kind = &SMALL.kinds_of(0)[0];
        let plural = format!("{}s", kind.to_lowercase());
        assert!(
            doc["paths"]
                .get(format!("/apis/{group}/{version}/namespaces/{{namespace}}/{plural}/{{name}}"))
                .is_some()
        );
        let name = format!("{}.{version}.{kind}", reversed(&group));
        let gvk = &doc["components"]["schemas"][&name]["x-kubernetes-group-version-kind"][0];
        assert_eq!(gvk["kind"], kind.as_str());
        assert_eq!(gvk["group"], group.as_str());
        assert!(crate::json::refs::dangling_refs(&doc).is_empty());
    }

    #[test]
    fn a_revision_changes_one_group_version_only() {
        let before = SMALL.discovery(None);
        let after = SMALL.discovery(Some((1, 1)));
        let changed: Vec<&String> = before
            .legacy
            .keys()
            .filter(|k| before.legacy[*k].hash != after.legacy[*k].hash)
            .collect();
        assert_eq!(changed.len(), 1);
        assert_ne!(SMALL.openapi_document(1, 1), SMALL.openapi_document(1, 0));
        assert_eq!(SMALL.openapi_document(2, 0), SMALL.openapi_document(2, 0));
    }
}
