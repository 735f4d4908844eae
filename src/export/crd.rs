//! CustomResourceDefinitions to the OpenAPI v3 documents kube-apiserver
//! publishes for them (apiextensions-apiserver's `controller/openapi/builder`):
//! one document per served version, holding
//!
//! - the kind's schema, named `<reversed group>.<version>.<Kind>`: the
//!   version's `openAPIV3Schema` with `apiVersion` and `kind` (strings)
//!   and `metadata` (a reference to `ObjectMeta`) set, and its
//!   `x-kubernetes-group-version-kind`;
//! - the list's schema, `<…>.<Kind>List`, whose `items` refer to the kind;
//! - the `meta/v1` schemas those refer to.
//!
//! No paths: the offline validators read schemas by group-version-kind,
//! and the kube-openapi CRD documents they are tested with have none
//! either. A version with no schema is not published (kube-apiserver
//! requires one in `apiextensions.k8s.io/v1`).

use serde_json::{Map, Value, json};

use crate::wire::GroupVersion;
use crate::wire::key::DocumentKey;
use crate::wire::name::{is_group_name, is_version_name};

/// `ObjectMeta` and the schemas it refers to, and `ListMeta`, as a CRD's
/// documents carry them.
const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DOC: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// Why a CustomResourceDefinition gave no documents.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CrdError {
    /// A field every CRD has is missing or of the wrong type.
    #[error("CustomResourceDefinition {name}: {field} is missing or not {expected}")]
    Field {
        /// `metadata.name`, or `?`.
        name: String,
        /// The field's path.
        field: &'static str,
        /// What it should be.
        expected: &'static str,
    },
    /// The group or a version is not a name Kubernetes accepts: it would
    /// become a file name.
    #[error("CustomResourceDefinition {name}: {what} {value:?} is not a valid name")]
    BadName {
        /// `metadata.name`.
        name: String,
        /// `group`, `version` or `kind`.
        what: &'static str,
        /// The value.
        value: String,
    },
}

/// One served version's document.
#[derive(Debug, Clone, PartialEq)]
pub struct CrdDocument {
    /// `apis/<group>/<version>`.
    pub key: DocumentKey,
    /// The OpenAPI 3.0 document.
    pub document: Value,
}

/// The documents of `crd`, a `CustomResourceDefinition` (`apiextensions.k8s.io`
/// `v1`, or `v1beta1` with its one top-level `validation` schema), one per
/// served version with a schema, in the CRD's version order.
///
/// # Errors
/// [`CrdError`] when the CRD lacks its group, kind or versions, or names
/// one that is not valid.
pub fn documents(crd: &Value) -> Result<Vec<CrdDocument>, CrdError> {
    let name = crd.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("?").to_owned();
    let field = |field, expected| CrdError::Field { name: name.clone(), field, expected };
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .ok_or(field("spec.group", "a string"))?;
    let kind = crd
        .pointer("/spec/names/kind")
        .and_then(Value::as_str)
        .ok_or(field("spec.names.kind", "a string"))?;
    let bad =
        |what, value: &str| CrdError::BadName { name: name.clone(), what, value: value.into() };
    if !is_group_name(group) || group.is_empty() {
        return Err(bad("group", group));
    }
    if !is_kind_name(kind) {
        return Err(bad("kind", kind));
    }
    // v1beta1: one schema for every version, unless a version has its own.
    let shared = crd.pointer("/spec/validation/openAPIV3Schema");
    let mut versions: Vec<(String, Option<&Value>)> = Vec::new();
    match crd.pointer("/spec/versions").and_then(Value::as_array) {
        Some(list) => {
            for v in list {
                if v.get("served").and_then(Value::as_bool) == Some(false) {
                    continue;
                }
                let version = v
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or(field("spec.versions[].name", "a string"))?;
                let schema = v.pointer("/schema/openAPIV3Schema").or(shared);
                versions.push((version.to_owned(), schema));
            }
        }
        None => {
            let version = crd
                .pointer("/spec/version")
                .and_then(Value::as_str)
                .ok_or(field("spec.versions", "a list"))?;
            versions.push((version.to_owned(), shared));
        }
    }
    let mut out = Vec::new();
    for (version, schema) in versions {
        if !is_version_name(&version) {
            return Err(bad("version", &version));
        }
        let Some(schema) = schema.filter(|s| s.is_object()) else { continue };
        let key = DocumentKey::parse(&GroupVersion::key_of(group, &version))
            .ok_or_else(|| bad("version", &version))?;
        out.push(CrdDocument { key, document: document(group, &version, kind, schema) });
    }
    Ok(out)
}

/// Whether `kind` can name a kind, and so a file: a letter, then letters
/// and digits, as Kubernetes' kinds are (CamelCase identifiers).
#[must_use]
pub fn is_kind_name(kind: &str) -> bool {
    kind.len() <= 253
        && kind.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && kind.chars().all(|c| c.is_ascii_alphanumeric())
}

/// `stable.example.com` → `com.example.stable`, the prefix of the schema
/// names kube-apiserver gives a CRD's kinds.
#[must_use]
pub fn reversed(group: &str) -> String {
    group.split('.').rev().collect::<Vec<_>>().join(".")
}

fn document(group: &str, version: &str, kind: &str, schema: &Value) -> Value {
    let name = format!("{}.{version}.{kind}", reversed(group));
    let gvk = |kind: &str| json!([{ "group": group, "kind": kind, "version": version }]);
    let mut kind_schema = schema.as_object().cloned().unwrap_or_default();
    let mut properties = match kind_schema.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    properties
        .insert("apiVersion".into(), json!({ "description": API_VERSION_DOC, "type": "string" }));
    properties.insert("kind".into(), json!({ "description": KIND_DOC, "type": "string" }));
    properties.insert(
        "metadata".into(),
        json!({ "allOf": [{ "$ref": format!("#/components/schemas/{META}.ObjectMeta") }], "description": METADATA_DOC }),
    );
    let mut ordered = Map::new();
    for (k, v) in kind_schema {
        ordered.insert(k, v);
    }
    ordered.insert("properties".into(), Value::Object(sorted(properties)));
    ordered.insert("x-kubernetes-group-version-kind".into(), gvk(kind));
    let list_kind = format!("{kind}List");
    let list = json!({
        "description": format!("{list_kind} is a list of {kind}"),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": { "description": API_VERSION_DOC, "type": "string" },
            "items": { "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", kind.to_lowercase()), "type": "array", "items": { "$ref": format!("#/components/schemas/{name}") } },
            "kind": { "description": KIND_DOC, "type": "string" },
            "metadata": { "allOf": [{ "$ref": format!("#/components/schemas/{META}.ListMeta") }], "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds" },
        },
        "x-kubernetes-group-version-kind": gvk(&list_kind),
    });
    let mut schemas = Map::new();
    schemas.insert(name.clone(), Value::Object(ordered));
    schemas.insert(format!("{name}List"), list);
    for (n, s) in meta_schemas() {
        schemas.insert(format!("{META}.{n}"), s);
    }
    json!({
        "openapi": "3.0.0",
        "info": { "title": "Kubernetes CRD Swagger", "version": "v0.1.0" },
        "paths": {},
        "components": { "schemas": Value::Object(sorted(schemas)) },
    })
}

fn sorted(map: Map<String, Value>) -> Map<String, Value> {
    let mut entries: Vec<(String, Value)> = map.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.into_iter().collect()
}

/// The `meta/v1` schemas a CRD's kind and list refer to, with the types
/// and shapes Kubernetes gives them (descriptions left out: they are long
/// and say nothing a validator reads).
fn meta_schemas() -> [(&'static str, Value); 6] {
    let r = |name: &str| json!({ "allOf": [{ "$ref": format!("#/components/schemas/{META}.{name}") }] });
    let strings =
        json!({ "type": "object", "additionalProperties": { "type": "string", "default": "" } });
    [
        ("FieldsV1", json!({ "type": "object" })),
        (
            "ListMeta",
            json!({ "type": "object", "properties": {
                "continue": { "type": "string" },
                "remainingItemCount": { "type": "integer", "format": "int64" },
                "resourceVersion": { "type": "string" },
                "selfLink": { "type": "string" },
            } }),
        ),
        (
            "ManagedFieldsEntry",
            json!({ "type": "object", "properties": {
                "apiVersion": { "type": "string" },
                "fieldsType": { "type": "string" },
                "fieldsV1": r("FieldsV1"),
                "manager": { "type": "string" },
                "operation": { "type": "string" },
                "subresource": { "type": "string" },
                "time": r("Time"),
            } }),
        ),
        (
            "ObjectMeta",
            json!({ "type": "object", "properties": {
                "annotations": strings,
                "creationTimestamp": r("Time"),
                "deletionGracePeriodSeconds": { "type": "integer", "format": "int64" },
                "deletionTimestamp": r("Time"),
                "finalizers": { "type": "array", "items": { "type": "string", "default": "" }, "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge" },
                "generateName": { "type": "string" },
                "generation": { "type": "integer", "format": "int64" },
                "labels": strings,
                "managedFields": { "type": "array", "items": { "allOf": [{ "$ref": format!("#/components/schemas/{META}.ManagedFieldsEntry") }], "default": {} }, "x-kubernetes-list-type": "atomic" },
                "name": { "type": "string" },
                "namespace": { "type": "string" },
                "ownerReferences": { "type": "array", "items": { "allOf": [{ "$ref": format!("#/components/schemas/{META}.OwnerReference") }], "default": {} }, "x-kubernetes-list-map-keys": ["uid"], "x-kubernetes-list-type": "map", "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge" },
                "resourceVersion": { "type": "string" },
                "selfLink": { "type": "string" },
                "uid": { "type": "string" },
            } }),
        ),
        (
            "OwnerReference",
            json!({ "type": "object", "required": ["apiVersion", "kind", "name", "uid"], "properties": {
                "apiVersion": { "type": "string", "default": "" },
                "blockOwnerDeletion": { "type": "boolean" },
                "controller": { "type": "boolean" },
                "kind": { "type": "string", "default": "" },
                "name": { "type": "string", "default": "" },
                "uid": { "type": "string", "default": "" },
            }, "x-kubernetes-map-type": "atomic" }),
        ),
        ("Time", json!({ "type": "string", "format": "date-time" })),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(versions: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": { "name": "crontabs.stable.example.com" },
            "spec": {
                "group": "stable.example.com",
                "names": { "kind": "CronTab", "plural": "crontabs" },
                "scope": "Namespaced",
                "versions": versions,
            }
        })
    }

    fn schema() -> Value {
        json!({ "type": "object", "properties": { "spec": { "type": "object", "properties": { "cronSpec": { "type": "string" } } } } })
    }

    #[test]
    fn each_served_version_is_a_document_with_the_kind_as_kube_apiserver_publishes_it() {
        let docs = documents(&crd(json!([
            { "name": "v1", "served": true, "storage": true, "schema": { "openAPIV3Schema": schema() } },
            { "name": "v1beta1", "served": false, "storage": false, "schema": { "openAPIV3Schema": schema() } },
        ])))
        .unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].key.as_str(), "apis/stable.example.com/v1");
        let kind = &docs[0].document["components"]["schemas"]["com.example.stable.v1.CronTab"];
        assert_eq!(
            kind["x-kubernetes-group-version-kind"],
            json!([{ "group": "stable.example.com", "kind": "CronTab", "version": "v1" }])
        );
        assert_eq!(kind["properties"]["apiVersion"]["type"], "string");
        assert_eq!(
            kind["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(kind["properties"]["spec"], schema()["properties"]["spec"]);
        let doc = serde_json::to_value(&docs[0].document).unwrap();
        assert!(crate::json::refs::dangling_refs(&doc).is_empty());
    }

    #[test]
    fn a_v1beta1_crd_uses_its_shared_validation_schema() {
        let mut c = crd(json!([{ "name": "v1beta1", "served": true, "storage": true }]));
        c["spec"]["validation"] = json!({ "openAPIV3Schema": schema() });
        let docs = documents(&c).unwrap();
        assert_eq!(docs[0].key.as_str(), "apis/stable.example.com/v1beta1");
    }

    #[test]
    fn a_kind_that_is_not_a_name_is_refused_before_it_becomes_a_file() {
        let mut c = crd(json!([]));
        c["spec"]["names"]["kind"] = json!("../../etc");
        assert!(matches!(documents(&c), Err(CrdError::BadName { what: "kind", .. })));
    }
}
