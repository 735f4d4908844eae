//! One standalone JSON Schema per kind, from a group-version's OpenAPI 3.0
//! document, for validators that read JSON Schema (kubeconform, editors
//! through yaml-language-server, Python's `jsonschema`).
//!
//! The output is JSON Schema draft-07 (`$schema` says so): every consumer
//! named above reads it, and it is the first draft where the keywords
//! below mean one thing. From the OpenAPI 3.0 schema:
//!
//! - every `$ref` is replaced by what it points at, so each file stands
//!   alone; a schema that refers to itself (`JSONSchemaProps`) is put once
//!   under `definitions` and referred to there;
//! - `nullable: true` becomes `type: [T, "null"]` (or an `anyOf` with
//!   `null` when there is no single type), and `null` joins an `enum`;
//! - an int-or-string (`x-kubernetes-int-or-string`, `format:
//!   int-or-string`) becomes `oneOf: [string, integer]`;
//! - `exclusiveMaximum: true` beside `maximum` (OpenAPI 3.0's boolean)
//!   becomes draft-07's number;
//! - an `x-kubernetes-embedded-resource` object accepts `apiVersion`,
//!   `kind` and `metadata` even when its properties do not list them;
//! - `apiVersion` and `kind` of the root accept only this kind's values;
//! - with [`Options::strict`], every object that lists `properties`
//!   refuses others (`additionalProperties: false`), at every depth,
//!   unless it says `x-kubernetes-preserve-unknown-fields: true` or has
//!   an `additionalProperties` of its own.
//!
//! Keywords are found by where they stand: the members of `properties`
//! are names, whatever they are called (`properties`, `default`, `$ref`),
//! and `default`, `enum` and `example` are values, never walked.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::json::pointer::escape_token;
use crate::wire::GroupVersion;

/// The draft the schemas are written in.
pub const DRAFT: &str = "http://json-schema.org/draft-07/schema#";

/// Schemas no larger than this many values each: inlining copies a shared
/// schema into every place that refers to it, and a document built to
/// multiply that must not take the machine. The largest Kubernetes kind
/// (a `Pod` template inside a `CronJob`) is far below it.
pub const MAX_VALUES: usize = 20_000_000;

const COMPONENTS: &str = "#/components/schemas/";

/// How the schemas are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Objects refuse properties their schema does not list.
    pub strict: bool,
}

/// One kind's standalone schema.
#[derive(Debug, Clone, PartialEq)]
pub struct KindSchema {
    /// Its group-version.
    pub group_version: GroupVersion,
    /// Its kind.
    pub kind: String,
    /// The JSON Schema.
    pub schema: Value,
}

/// Why a kind's schema was not written.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SchemaError {
    /// Inlining its references would pass [`MAX_VALUES`].
    #[error("{kind}: inlining its references gives more than {limit} values; refused")]
    TooLarge {
        /// The kind.
        kind: String,
        /// The limit.
        limit: usize,
    },
}

/// The standalone schema of every kind `document` declares for
/// `group_version` (a component with that group and version in its
/// `x-kubernetes-group-version-kind`), in component order.
///
/// # Errors
/// [`SchemaError`] for a kind whose schema would be too large.
pub fn kind_schemas(
    group_version: &GroupVersion,
    document: &Value,
    options: Options,
) -> Result<Vec<KindSchema>, SchemaError> {
    let empty = Map::new();
    let components =
        document.pointer("/components/schemas").and_then(Value::as_object).unwrap_or(&empty);
    let mut out = Vec::new();
    for (name, schema) in components {
        let gvks = schema.get("x-kubernetes-group-version-kind").and_then(Value::as_array);
        for gvk in gvks.into_iter().flatten() {
            let text = |n| gvk.get(n).and_then(Value::as_str);
            let (Some(group), Some(version), Some(kind)) =
                (text("group"), text("version"), text("kind"))
            else {
                continue;
            };
            if group != group_version.group || version != group_version.version {
                continue;
            }
            let schema = standalone(components, name, group_version, kind, options)?;
            out.push(KindSchema {
                group_version: group_version.clone(),
                kind: kind.to_owned(),
                schema,
            });
        }
    }
    Ok(out)
}

/// Component `name` with every reference inlined and the options applied.
fn standalone(
    components: &Map<String, Value>,
    name: &str,
    group_version: &GroupVersion,
    kind: &str,
    options: Options,
) -> Result<Value, SchemaError> {
    let too_large = || SchemaError::TooLarge { kind: kind.to_owned(), limit: MAX_VALUES };
    let mut inliner = Inliner {
        components,
        options,
        stack: vec![name.to_owned()],
        recursive: BTreeSet::new(),
        left: MAX_VALUES,
    };
    let root = components.get(name).cloned().unwrap_or_else(|| json!({}));
    let mut root = inliner.schema(&root).ok_or_else(too_large)?;
    let mut definitions = BTreeMap::new();
    loop {
        let next = inliner.recursive.iter().find(|n| !definitions.contains_key(*n)).cloned();
        let Some(next) = next else { break };
        let target = components.get(&next).cloned().unwrap_or_else(|| json!({}));
        inliner.stack = vec![next.clone()];
        let inlined = inliner.schema(&target).ok_or_else(too_large)?;
        definitions.insert(next, inlined);
    }
    let mut out = Map::new();
    out.insert("$schema".into(), json!(DRAFT));
    if let Value::Object(root) = &mut root {
        if let Some(Value::Object(properties)) = root.get_mut("properties") {
            properties.insert(
                "apiVersion".into(),
                json!({ "type": "string", "enum": [group_version.to_string()] }),
            );
            properties.insert("kind".into(), json!({ "type": "string", "enum": [kind] }));
        }
        for (k, v) in std::mem::take(root) {
            out.insert(k, v);
        }
    }
    if !definitions.is_empty() {
        out.insert("definitions".into(), Value::Object(definitions.into_iter().collect()));
    }
    Ok(Value::Object(out))
}

struct Inliner<'a> {
    components: &'a Map<String, Value>,
    options: Options,
    /// The components being inlined, outermost first: a reference to one
    /// of them is a cycle.
    stack: Vec<String>,
    /// The components met in a cycle; each becomes a definition.
    recursive: BTreeSet<String>,
    /// Values still allowed.
    left: usize,
}

impl Inliner<'_> {
    /// `node` as a JSON Schema; `None` past the value budget.
    fn schema(&mut self, node: &Value) -> Option<Value> {
        self.left = self.left.checked_sub(1)?;
        let Value::Object(obj) = node else { return Some(node.clone()) };
        if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
            // OpenAPI 3.0: members beside a `$ref` are ignored.
            let Some(name) = reference.strip_prefix(COMPONENTS) else {
                return Some(json!({}));
            };
            let name = crate::json::pointer::unescape_token(name).into_owned();
            if self.stack.contains(&name) {
                let pointer = format!("#/definitions/{}", escape_token(&name));
                self.recursive.insert(name);
                return Some(json!({ "$ref": pointer }));
            }
            let Some(target) = self.components.get(&name) else { return Some(json!({})) };
            self.stack.push(name);
            let inlined = self.schema(target);
            self.stack.pop();
            return inlined;
        }
        let mut out = Map::new();
        for (k, v) in obj {
            let walked = match (k.as_str(), v) {
                ("properties" | "patternProperties", Value::Object(members)) => {
                    let mut m = Map::new();
                    for (name, s) in members {
                        m.insert(name.clone(), self.schema(s)?);
                    }
                    Value::Object(m)
                }
                ("additionalProperties" | "not" | "items", Value::Object(_)) => self.schema(v)?,
                ("items" | "allOf" | "anyOf" | "oneOf", Value::Array(list)) => {
                    Value::Array(list.iter().map(|s| self.schema(s)).collect::<Option<_>>()?)
                }
                _ => v.clone(),
            };
            out.insert(k.clone(), walked);
        }
        Some(transform(out, self.options))
    }
}

fn is_true(obj: &Map<String, Value>, key: &str) -> bool {
    obj.get(key).and_then(Value::as_bool) == Some(true)
}

/// The OpenAPI 3.0 / Kubernetes keywords of one schema object in JSON
/// Schema draft-07's terms (see the module's list).
fn transform(mut obj: Map<String, Value>, options: Options) -> Value {
    for (exclusive, bound) in [("exclusiveMaximum", "maximum"), ("exclusiveMinimum", "minimum")] {
        if let Some(Value::Bool(on)) = obj.get(exclusive) {
            let on = *on;
            obj.remove(exclusive);
            if on && let Some(limit) = obj.remove(bound) {
                obj.insert(exclusive.into(), limit);
            }
        }
    }
    let int_or_string = is_true(&obj, "x-kubernetes-int-or-string")
        || obj.get("format").and_then(Value::as_str) == Some("int-or-string");
    if int_or_string {
        obj.remove("type");
        obj.remove("format");
        obj.remove("anyOf");
        obj.insert("oneOf".into(), json!([{ "type": "string" }, { "type": "integer" }]));
    }
    if is_true(&obj, "x-kubernetes-embedded-resource")
        && let Some(Value::Object(properties)) = obj.get_mut("properties")
    {
        for (name, schema) in [
            ("apiVersion", json!({ "type": "string" })),
            ("kind", json!({ "type": "string" })),
            ("metadata", json!({ "type": "object" })),
        ] {
            properties.entry(name).or_insert(schema);
        }
    }
    if options.strict
        && obj.contains_key("properties")
        && !obj.contains_key("additionalProperties")
        && !is_true(&obj, "x-kubernetes-preserve-unknown-fields")
    {
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
    if obj.remove("nullable") == Some(Value::Bool(true)) {
        if let Some(Value::Array(values)) = obj.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
        match obj.get("type").cloned() {
            Some(Value::String(t)) => {
                obj.insert("type".into(), json!([t, "null"]));
            }
            _ if int_or_string => {
                if let Some(Value::Array(one_of)) = obj.get_mut("oneOf") {
                    one_of.push(json!({ "type": "null" }));
                }
            }
            None if obj.keys().any(|k| matches!(k.as_str(), "allOf" | "anyOf" | "oneOf")) => {
                return json!({ "anyOf": [{ "type": "null" }, Value::Object(obj)] });
            }
            _ => {}
        }
    }
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gv() -> GroupVersion {
        GroupVersion::new("example.com", "v1")
    }

    fn doc(kind_schema: Value, others: Value) -> Value {
        let mut schemas = others.as_object().cloned().unwrap_or_default();
        let mut kind = kind_schema;
        kind["x-kubernetes-group-version-kind"] =
            json!([{ "group": "example.com", "kind": "Widget", "version": "v1" }]);
        schemas.insert("com.example.v1.Widget".into(), kind);
        json!({ "openapi": "3.0.0", "components": { "schemas": schemas } })
    }

    fn one(d: &Value, options: Options) -> Value {
        let mut all = kind_schemas(&gv(), d, options).unwrap();
        assert_eq!(all.len(), 1);
        all.remove(0).schema
    }

    #[test]
    fn references_are_inlined_and_api_version_and_kind_pinned() {
        let d = doc(
            json!({ "type": "object", "properties": {
                "apiVersion": { "type": "string" }, "kind": { "type": "string" },
                "spec": { "allOf": [{ "$ref": "#/components/schemas/Spec" }] } } }),
            json!({ "Spec": { "type": "object", "properties": { "size": { "type": "integer" } } } }),
        );
        let s = one(&d, Options::default());
        assert_eq!(s["$schema"], DRAFT);
        assert_eq!(s["properties"]["spec"]["allOf"][0]["properties"]["size"]["type"], "integer");
        assert_eq!(s["properties"]["apiVersion"]["enum"], json!(["example.com/v1"]));
        assert_eq!(s["properties"]["kind"]["enum"], json!(["Widget"]));
        assert!(!s.to_string().contains("$ref"));
    }

    #[test]
    fn a_schema_that_refers_to_itself_becomes_one_definition() {
        let d = doc(
            json!({ "type": "object", "properties": { "node": { "$ref": "#/components/schemas/Node" } } }),
            json!({ "Node": { "type": "object", "properties": { "children": { "type": "array", "items": { "$ref": "#/components/schemas/Node" } } } } }),
        );
        let s = one(&d, Options::default());
        assert_eq!(
            s["properties"]["node"]["properties"]["children"]["items"]["$ref"],
            "#/definitions/Node"
        );
        assert_eq!(
            s["definitions"]["Node"]["properties"]["children"]["items"]["$ref"],
            "#/definitions/Node"
        );
    }

    #[test]
    fn strict_closes_every_object_with_properties_but_preserved_ones() {
        let d = doc(
            json!({ "type": "object", "properties": {
                "spec": { "type": "object", "properties": {
                    "nested": { "type": "object", "properties": { "a": { "type": "string" } } },
                    "map": { "type": "object", "additionalProperties": { "type": "object", "properties": { "b": { "type": "string" } } } },
                    "free": { "type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": { "c": { "type": "string" } } } } } } }),
            json!({}),
        );
        let s = one(&d, Options { strict: true });
        let spec = &s["properties"]["spec"];
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(spec["additionalProperties"], false);
        assert_eq!(spec["properties"]["nested"]["additionalProperties"], false);
        assert_eq!(
            spec["properties"]["map"]["additionalProperties"]["additionalProperties"],
            false
        );
        assert!(spec["properties"]["free"].get("additionalProperties").is_none());
        let loose = one(&d, Options::default());
        assert!(loose["properties"]["spec"].get("additionalProperties").is_none());
    }

    #[test]
    fn properties_named_like_keywords_are_names() {
        let d = doc(
            json!({ "type": "object", "properties": {
                "properties": { "type": "object", "properties": { "$ref": { "type": "string" }, "default": { "type": "integer" } } },
                "withDefault": { "type": "object", "default": { "$ref": "#/components/schemas/Nothing" } } } }),
            json!({}),
        );
        let s = one(&d, Options { strict: true });
        let p = &s["properties"]["properties"];
        assert_eq!(p["properties"]["$ref"]["type"], "string");
        assert_eq!(p["properties"]["default"]["type"], "integer");
        assert_eq!(p["additionalProperties"], false);
        assert_eq!(
            s["properties"]["withDefault"]["default"]["$ref"],
            "#/components/schemas/Nothing"
        );
    }

    #[test]
    fn nullable_int_or_string_embedded_and_exclusive_bounds_are_draft_07() {
        let d = doc(
            json!({ "type": "object", "properties": {
                "name": { "type": "string", "nullable": true, "enum": ["a"] },
                "port": { "x-kubernetes-int-or-string": true, "anyOf": [{ "type": "integer" }, { "type": "string" }] },
                "target": { "type": "string", "format": "int-or-string", "nullable": true },
                "ref": { "nullable": true, "allOf": [{ "type": "object" }] },
                "embedded": { "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true, "properties": { "spec": { "type": "object" } } },
                "ratio": { "type": "number", "maximum": 1, "exclusiveMaximum": true, "minimum": 0, "exclusiveMinimum": false } } }),
            json!({}),
        );
        let s = one(&d, Options::default());
        let p = &s["properties"];
        assert_eq!(p["name"]["type"], json!(["string", "null"]));
        assert_eq!(p["name"]["enum"], json!(["a", null]));
        assert_eq!(
            p["port"],
            json!({ "x-kubernetes-int-or-string": true, "oneOf": [{ "type": "string" }, { "type": "integer" }] })
        );
        assert_eq!(
            p["target"]["oneOf"],
            json!([{ "type": "string" }, { "type": "integer" }, { "type": "null" }])
        );
        assert_eq!(p["ref"]["anyOf"][0], json!({ "type": "null" }));
        assert_eq!(p["embedded"]["properties"]["kind"], json!({ "type": "string" }));
        assert_eq!(p["ratio"]["exclusiveMaximum"], 1);
        assert!(p["ratio"].get("maximum").is_none());
        assert!(p["ratio"].get("exclusiveMinimum").is_none());
        assert_eq!(p["ratio"]["minimum"], 0);
    }

    #[test]
    fn kinds_of_other_group_versions_are_left_out() {
        let mut d = doc(json!({ "type": "object" }), json!({}));
        d["components"]["schemas"]["com.example.v1.Widget"]["x-kubernetes-group-version-kind"] =
            json!([{ "group": "example.com", "kind": "Widget", "version": "v2" }]);
        assert!(kind_schemas(&gv(), &d, Options::default()).unwrap().is_empty());
    }
}
