//! Unit tests of `openapi/split.rs`.

use proptest::prelude::*;
use serde_json::json;

use super::*;

/// True when every local `$ref` in `doc` resolves inside `doc` itself:
/// the invariant every output of [`split`] must hold.
fn closed_under_refs(doc: &Value) -> bool {
    fn refs_resolve(node: &Value, doc: &Value) -> bool {
        match node {
            Value::Object(map) => {
                let own = match map.get("$ref") {
                    Some(Value::String(r)) if r.starts_with("#/") => {
                        r.strip_prefix('#').and_then(|p| doc.pointer(p)).is_some()
                    }
                    _ => true,
                };
                own && map.values().all(|v| refs_resolve(v, doc))
            }
            Value::Array(items) => items.iter().all(|v| refs_resolve(v, doc)),
            _ => true,
        }
    }
    refs_resolve(doc, doc)
}

/// Splits `doc`, which must succeed, and checks that every output is
/// closed under `$ref`.
fn split_ok(doc: &Value) -> Split {
    let split = split(doc).expect("split");
    for (key, out) in &split.documents {
        assert!(closed_under_refs(out), "{key} is not closed under $ref: {out:#}");
    }
    assert_rendered_matches(doc, &split);
    split
}

/// `split_rendered` gives exactly the bytes of serializing `split`.
fn assert_rendered_matches(doc: &Value, split: &Split) {
    let rendered = split_rendered(doc).expect("split_rendered succeeds where split does");
    assert_eq!(rendered.unplaced, split.unplaced);
    let expected: BTreeMap<DocumentKey, Vec<u8>> = split
        .documents
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::to_vec(v).expect("serializes")))
        .collect();
    assert_eq!(rendered.documents.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());
    for (key, bytes) in &expected {
        let got = &rendered.documents[key];
        assert!(
            got == bytes,
            "{key}: rendered bytes differ\n  rendered: {}\n  expected: {}",
            String::from_utf8_lossy(got),
            String::from_utf8_lossy(bytes)
        );
    }
}

fn document<'s>(split: &'s Split, key: &str) -> &'s Value {
    let key = DocumentKey::parse(key).expect("valid key");
    split.documents.get(&key).unwrap_or_else(|| panic!("no document {key}"))
}

fn keys(split: &Split) -> Vec<&str> {
    split.documents.keys().map(DocumentKey::as_str).collect()
}

/// The member names of the object at `pointer` (empty when absent).
fn names<'v>(doc: &'v Value, pointer: &str) -> Vec<&'v str> {
    doc.pointer(pointer)
        .and_then(Value::as_object)
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/definitions/{name}") })
}

fn v2_op(name: &str) -> Value {
    json!({ "get": { "responses": { "200": { "schema": schema_ref(name) } } } })
}

#[test]
fn v2_paths_split_by_key_with_only_reachable_definitions() {
    let doc = json!({
        "swagger": "2.0",
        "paths": {
            "/api/v1/pods": v2_op("Pod"),
            "/apis/apps/v1/deployments": v2_op("Deployment"),
            "/api/v1/services": v2_op("Service"),
        },
        "definitions": {
            "Deployment": { "properties": { "metadata": schema_ref("ObjectMeta") } },
            "ObjectMeta": { "type": "object" },
            "Pod": { "properties": { "metadata": schema_ref("ObjectMeta") } },
            "Service": { "type": "object" },
            "Unused": { "type": "object" },
        },
    });
    let split = split_ok(&doc);
    assert_eq!(keys(&split), ["api/v1", "apis/apps/v1"]);
    let core = document(&split, "api/v1");
    assert_eq!(names(core, "/paths"), ["/api/v1/pods", "/api/v1/services"]);
    assert_eq!(names(core, "/definitions"), ["ObjectMeta", "Pod", "Service"]);
    let apps = document(&split, "apis/apps/v1");
    assert_eq!(names(apps, "/paths"), ["/apis/apps/v1/deployments"]);
    assert_eq!(names(apps, "/definitions"), ["Deployment", "ObjectMeta"]);
    assert_eq!(apps.pointer("/definitions/Deployment"), doc.pointer("/definitions/Deployment"));
}

#[test]
fn transitive_refs_are_followed() {
    let doc = json!({
        "swagger": "2.0",
        "paths": { "/api/v1/a": v2_op("A") },
        "definitions": {
            "A": { "items": schema_ref("B") },
            "B": { "additionalProperties": schema_ref("C") },
            "C": { "type": "string" },
            "D": { "type": "string" },
        },
    });
    let split = split_ok(&doc);
    assert_eq!(names(document(&split, "api/v1"), "/definitions"), ["A", "B", "C"]);
}

#[test]
fn v2_refs_through_parameters_and_responses_are_followed() {
    let doc = json!({
        "swagger": "2.0",
        "paths": {
            "/api/v1/a": {
                "parameters": [{ "$ref": "#/parameters/body" }],
                "get": { "responses": { "200": { "$ref": "#/responses/ok" } } },
            },
        },
        "parameters": {
            "body": { "in": "body", "name": "body", "schema": schema_ref("In") },
            "unused": { "in": "query", "name": "q", "type": "string" },
        },
        "responses": {
            "ok": { "description": "ok", "schema": schema_ref("Out") },
            "unused": { "description": "no" },
        },
        "definitions": { "In": {}, "Out": {}, "Other": {} },
    });
    let split = split_ok(&doc);
    let out = document(&split, "api/v1");
    assert_eq!(names(out, "/parameters"), ["body"]);
    assert_eq!(names(out, "/responses"), ["ok"]);
    assert_eq!(names(out, "/definitions"), ["In", "Out"]);
}

#[test]
fn v3_refs_through_request_bodies_responses_parameters_and_headers_are_followed() {
    let schema = |name: &str| json!({ "$ref": format!("#/components/schemas/{name}") });
    let doc = json!({
        "openapi": "3.0.0",
        "paths": {
            "/apis/apps/v1/x": {
                "post": {
                    "parameters": [{ "$ref": "#/components/parameters/dryRun" }],
                    "requestBody": { "$ref": "#/components/requestBodies/Body" },
                    "responses": { "200": { "$ref": "#/components/responses/Ok" } },
                },
            },
        },
        "components": {
            "schemas": { "InBody": {}, "InHeader": {}, "InParam": {}, "InResponse": {}, "Unused": {} },
            "parameters": {
                "dryRun": { "in": "query", "name": "dryRun", "schema": schema("InParam") },
            },
            "requestBodies": {
                "Body": { "content": { "application/json": { "schema": schema("InBody") } } },
            },
            "responses": {
                "Ok": {
                    "description": "ok",
                    "headers": { "X-Trace": { "$ref": "#/components/headers/Trace" } },
                    "content": { "application/json": { "schema": schema("InResponse") } },
                },
            },
            "headers": {
                "Trace": { "schema": schema("InHeader") },
                "Unused": { "schema": schema("Unused") },
            },
        },
    });
    let split = split_ok(&doc);
    let out = document(&split, "apis/apps/v1");
    assert_eq!(names(out, "/components/schemas"), ["InBody", "InHeader", "InParam", "InResponse"]);
    assert_eq!(names(out, "/components/parameters"), ["dryRun"]);
    assert_eq!(names(out, "/components/requestBodies"), ["Body"]);
    assert_eq!(names(out, "/components/responses"), ["Ok"]);
    assert_eq!(names(out, "/components/headers"), ["Trace"]);
}

#[test]
fn reference_cycle_terminates() {
    let doc = json!({
        "swagger": "2.0",
        "paths": { "/api/v1/a": v2_op("A") },
        "definitions": {
            "A": { "properties": { "b": schema_ref("B") } },
            "B": { "properties": { "a": schema_ref("A"), "self": schema_ref("B") } },
        },
    });
    let split = split_ok(&doc);
    assert_eq!(names(document(&split, "api/v1"), "/definitions"), ["A", "B"]);
}

#[test]
fn ref_deep_into_a_component_pulls_the_whole_component() {
    let doc = json!({
        "swagger": "2.0",
        "paths": {
            "/api/v1/a": { "get": { "responses": { "200": {
                "schema": { "$ref": "#/definitions/A/properties/b" },
            } } } },
        },
        "definitions": {
            "A": { "properties": { "b": { "type": "string" }, "c": schema_ref("C") } },
            "C": {},
            "D": {},
        },
    });
    let split = split_ok(&doc);
    let out = document(&split, "api/v1");
    assert_eq!(names(out, "/definitions"), ["A", "C"]);
    assert_eq!(out.pointer("/definitions/A"), doc.pointer("/definitions/A"));
}

#[test]
fn ref_deep_into_a_component_that_lacks_the_member_is_unresolved() {
    let v2 = json!({
        "swagger": "2.0",
        "paths": { "/api/v1/a": { "get": { "responses": { "200": {
            "schema": { "$ref": "#/definitions/A/properties/x" },
        } } } } },
        "definitions": { "A": {} },
    });
    let v3 = json!({
        "openapi": "3.0.0",
        "paths": { "/api/v1/a": { "get": { "responses": { "200": {
            "description": "",
            "content": { "application/json": {
                "schema": { "$ref": "#/components/schemas/A/properties/x" },
            } },
        } } } } },
        "components": { "schemas": { "A": {} } },
    });
    for (doc, expected) in
        [(v2, "#/definitions/A/properties/x"), (v3, "#/components/schemas/A/properties/x")]
    {
        match split(&doc) {
            Err(SplitError::UnresolvedRef { reference, .. }) => assert_eq!(reference, expected),
            other => panic!("expected UnresolvedRef for {expected}, got {other:?}"),
        }
    }
}

#[test]
fn escaped_tokens_in_refs_are_unescaped() {
    let doc = json!({
        "swagger": "2.0",
        "paths": { "/api/v1/a": {
            "get": { "responses": {
                "200": { "schema": { "$ref": "#/definitions/a~1b" } },
                "201": { "schema": { "$ref": "#/definitions/c~0d~01" } },
            } },
        } },
        "definitions": { "a/b": {}, "c~d~1": {}, "unused": {} },
    });
    let split = split_ok(&doc);
    assert_eq!(names(document(&split, "api/v1"), "/definitions"), ["a/b", "c~d~1"]);
}

#[test]
fn dangling_ref_is_reported_with_the_pointer_of_its_object() {
    let doc = json!({
        "swagger": "2.0",
        "paths": { "/api/v1/a": v2_op("A") },
        "definitions": { "A": { "properties": { "b": { "$ref": "#/definitions/Missing" } } } },
    });
    match split(&doc) {
        Err(SplitError::UnresolvedRef { reference, at }) => {
            assert_eq!(reference, "#/definitions/Missing");
            assert_eq!(at.as_str(), "/definitions/A/properties/b");
        }
        other => panic!("expected UnresolvedRef, got {other:?}"),
    }
}

#[test]
fn dangling_ref_in_a_path_points_at_the_path() {
    let doc = json!({
        "swagger": "2.0",
        "paths": { "/api/v1/a": { "get": { "parameters": [{ "$ref": "#/parameters/nope" }] } } },
    });
    match split(&doc) {
        Err(SplitError::UnresolvedRef { at, .. }) => {
            assert_eq!(at.as_str(), "/paths/~1api~1v1~1a/get/parameters/0");
        }
        other => panic!("expected UnresolvedRef, got {other:?}"),
    }
}

#[test]
fn dangling_ref_in_an_unreached_component_is_not_an_error() {
    let doc = json!({
        "swagger": "2.0",
        "paths": { "/api/v1/a": v2_op("A") },
        "definitions": { "A": {}, "Broken": schema_ref("Missing") },
    });
    let split = split_ok(&doc);
    assert_eq!(names(document(&split, "api/v1"), "/definitions"), ["A"]);
}

#[test]
fn non_local_refs_are_left_alone() {
    let op = json!({ "get": { "responses": {
        "200": { "schema": { "$ref": "other.json#/definitions/A" } },
        "201": { "schema": { "$ref": "https://example.com/s.json#/definitions/A" } },
        "202": { "schema": { "$ref": "#" } },
    } } });
    let doc = json!({ "swagger": "2.0", "paths": { "/api/v1/a": op }, "definitions": { "A": {} } });
    let split = split_ok(&doc);
    let out = document(&split, "api/v1");
    assert_eq!(out.pointer("/paths/~1api~1v1~1a"), Some(&op));
    assert_eq!(out.get("definitions"), None);
}

#[test]
fn ref_to_a_non_component_that_exists_adds_nothing() {
    let doc = json!({
        "swagger": "2.0",
        "info": { "title": "t" },
        "paths": { "/api/v1/a": { "get": { "responses": {
            "200": { "$ref": "#/info/title" },
            "201": { "$ref": "#/paths/~1api~1v1~1b/get" },
        } } }, "/api/v1/b": { "get": {} } },
        "definitions": { "A": {} },
    });
    let split = split_ok(&doc);
    assert_eq!(document(&split, "api/v1").get("definitions"), None);
}

#[test]
fn ref_to_a_path_of_another_document_is_unresolved() {
    let doc = json!({
        "swagger": "2.0",
        "paths": {
            "/api/v1/a": { "get": { "$ref": "#/paths/~1version~1/get" } },
            "/version/": { "get": {} },
        },
    });
    match split(&doc) {
        Err(SplitError::UnresolvedRef { reference, at }) => {
            assert_eq!(reference, "#/paths/~1version~1/get");
            assert_eq!(at.as_str(), "/paths/~1api~1v1~1a/get");
        }
        other => panic!("expected UnresolvedRef, got {other:?}"),
    }
}

#[test]
fn ref_to_a_missing_non_component_is_unresolved() {
    let doc = json!({
        "swagger": "2.0",
        "paths": { "/api/v1/a": { "get": { "$ref": "#/paths/~1api~1v1~1nope" } } },
    });
    assert!(matches!(split(&doc), Err(SplitError::UnresolvedRef { .. })));
}

#[test]
fn ref_to_a_whole_section_keeps_the_section_even_if_empty() {
    let doc = json!({
        "swagger": "2.0",
        "paths": { "/api/v1/a": { "get": { "x-all": { "$ref": "#/definitions" } } } },
        "definitions": {},
    });
    let split = split_ok(&doc);
    assert_eq!(document(&split, "api/v1").get("definitions"), Some(&json!({})));
}

#[test]
fn refs_in_members_every_document_keeps_are_followed() {
    let doc = json!({
        "swagger": "2.0",
        "x-shared": { "schema": schema_ref("Shared") },
        "paths": { "/api/v1/a": { "get": {} }, "/version/": { "get": {} } },
        "definitions": { "Shared": {}, "Unused": {} },
    });
    let split = split_ok(&doc);
    for out in split.documents.values() {
        assert_eq!(names(out, "/definitions"), ["Shared"]);
    }
}

#[test]
fn paths_without_a_key_are_reported_as_unplaced() {
    let doc = json!({
        "swagger": "2.0",
        "paths": { "/{id}": v2_op("A"), "/api/v1/a": { "get": {} }, "/": { "get": {} } },
        "definitions": { "A": {} },
    });
    let split = split_ok(&doc);
    assert_eq!(split.unplaced, ["/{id}", "/"]);
    assert_eq!(keys(&split), ["api/v1"]);
    assert_eq!(names(document(&split, "api/v1"), "/paths"), ["/api/v1/a"]);
}

#[test]
fn unknown_format_is_rejected() {
    for doc in [
        json!([]),
        json!("swagger"),
        json!({ "paths": {} }),
        json!({ "swagger": "1.2", "paths": {} }),
        json!({ "swagger": 2.0, "paths": {} }),
        json!({ "openapi": "3.1.0", "paths": {} }),
        json!({ "openapi": 3, "paths": {} }),
    ] {
        assert!(matches!(split(&doc), Err(SplitError::UnknownFormat)), "{doc}");
    }
}

#[test]
fn missing_paths_gives_no_documents() {
    let doc = json!({ "openapi": "3.0.3", "components": { "schemas": { "A": {} } } });
    assert_eq!(split_ok(&doc), Split::default());
}

#[test]
fn security_definitions_are_kept_whole() {
    let security = json!({
        "BearerToken": { "type": "apiKey", "name": "authorization", "in": "header" },
        "Basic": { "type": "basic" },
    });
    let doc = json!({
        "swagger": "2.0",
        "paths": { "/api/v1/a": { "get": { "security": [{ "BearerToken": [] }] } } },
        "securityDefinitions": security,
        "security": [{ "BearerToken": [] }],
    });
    let split = split_ok(&doc);
    assert_eq!(document(&split, "api/v1").get("securityDefinitions"), Some(&security));
}

#[test]
fn v3_security_schemes_and_other_component_members_are_kept_whole() {
    let schemes = json!({ "BearerToken": { "type": "http", "scheme": "bearer" } });
    let doc = json!({
        "openapi": "3.0.0",
        "paths": { "/api/v1/a": { "get": {} } },
        "components": {
            "schemas": { "Unused": {} },
            "securitySchemes": schemes,
            "x-kept": { "any": "thing" },
        },
    });
    let split = split_ok(&doc);
    let components = document(&split, "api/v1").get("components");
    assert_eq!(
        components,
        Some(&json!({ "securitySchemes": schemes, "x-kept": { "any": "thing" } }))
    );
}

#[test]
fn v3_components_is_kept_empty_when_nothing_is_reached() {
    let doc = json!({
        "openapi": "3.0.0",
        "paths": { "/version/": { "get": {} } },
        "components": { "schemas": { "A": {} } },
    });
    let split = split_ok(&doc);
    assert_eq!(document(&split, "version").get("components"), Some(&json!({})));
}

#[test]
fn top_level_members_are_kept_in_input_order() {
    let doc = json!({
        "x-first": 1,
        "swagger": "2.0",
        "info": { "title": "Kubernetes", "version": "v1.27.0" },
        "host": "example.com",
        "definitions": { "A": {} },
        "basePath": "/",
        "paths": { "/api/v1/a": v2_op("A") },
        "schemes": ["https"],
        "consumes": ["application/json"],
        "produces": ["application/json"],
        "tags": [{ "name": "core" }],
        "externalDocs": { "url": "https://kubernetes.io" },
        "x-last": true,
    });
    let split = split_ok(&doc);
    let out = document(&split, "api/v1");
    assert_eq!(
        names(out, ""),
        [
            "x-first",
            "swagger",
            "info",
            "host",
            "definitions",
            "basePath",
            "paths",
            "schemes",
            "consumes",
            "produces",
            "tags",
            "externalDocs",
            "x-last"
        ]
    );
    assert_eq!(out.get("info"), doc.get("info"));
    assert_eq!(out.get("tags"), doc.get("tags"));
}

/// Kubernetes 1.27's whole-cluster document: every key Kubernetes
/// itself publishes, each self-contained.
#[test]
fn kubernetes_1_27_splits_into_48_closed_documents() {
    let path = crate::testkit::testdata::path("kube-openapi/pkg/schemaconv/testdata/swagger.json");
    let bytes = std::fs::read(&path).expect("the test data is readable");
    let doc: Value = serde_json::from_slice(&bytes).expect("valid JSON");
    let split = split_ok(&doc);
    let (group_versions, others): (Vec<&DocumentKey>, Vec<&DocumentKey>) =
        split.documents.keys().partition(|k| k.is_group_version());
    assert_eq!(
        (split.documents.len(), group_versions.len(), others.len()),
        (48, 23, 25),
        "group-versions: {group_versions:?}; others: {others:?}"
    );
    assert!(split.unplaced.is_empty(), "unplaced: {:?}", split.unplaced);
    let placed: usize = split.documents.values().map(|d| names(d, "/paths").len()).sum();
    assert_eq!(placed, 374);
}

/// Names that generated references and maps share, so that generated
/// `$ref`s often resolve.
const NAMES: &[&str] = &["A", "B", "C", "a/b", "a~b"];

/// References that usually resolve in a generated Swagger 2.0 document.
const V2_REFS: &[&str] = &[
    "#/definitions/A",
    "#/definitions/B",
    "#/definitions/C",
    "#/definitions/a~1b",
    "#/definitions/a~0b",
    "#/definitions/A/properties/b",
    "#/definitions",
    "#/parameters/A",
    "#/responses/B",
    "#/securityDefinitions/A",
    "#/info",
    "#/paths",
    "#/paths/~1api~1v1~1pods",
    "#/paths/~1version~1",
];

/// References that usually resolve in a generated OpenAPI 3.0 document.
const V3_REFS: &[&str] = &[
    "#/components/schemas/A",
    "#/components/schemas/B/items",
    "#/components/schemas/C",
    "#/components/schemas/a~1b",
    "#/components/schemas",
    "#/components/parameters/A",
    "#/components/requestBodies/B",
    "#/components/headers/C",
    "#/components/securitySchemes/A",
    "#/components",
    "#/info",
    "#/paths",
    "#/paths/~1api~1v1~1pods",
    "#/paths/~1version~1",
];

/// References into generated extensions, to nothing, and non-local
/// ones: the awkward cases, mixed into both formats.
const ODD_REFS: &[&str] = &[
    "#/paths/~1apis~1apps~1v1~1x/get",
    "#/x-ext/0",
    "#/x-ext/b",
    "#/",
    "#/missing",
    "#",
    "other.json#/definitions/A",
    "https://example.com/s.json",
];

fn arb_ref(refs: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        6 => prop::sample::select(refs),
        1 => prop::sample::select(ODD_REFS),
    ]
    .prop_map(String::from)
}

fn arb_key() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        3 => prop::sample::select(vec![
            "$ref", "A", "B", "C", "a/b", "properties", "items", "get", "schema", "0",
        ])
        .prop_map(String::from),
        1 => "[a-z$/~]{0,4}",
    ]
}

fn arb_json(refs: &'static [&'static str]) -> impl Strategy<Value = Value> + Clone {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        arb_ref(refs).prop_map(Value::from),
        "[a-z#/~{}]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((arb_key(), inner.clone()), 0..5)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
            arb_ref(refs).prop_map(|r| json!({ "$ref": r })),
            (arb_ref(refs), inner)
                .prop_map(|(r, v)| json!({ "$ref": r, "properties": { "b": v } })),
        ]
    })
}

/// A map from some of [`NAMES`] (or `keys`) to arbitrary values.
fn arb_map(
    keys: &'static [&'static str],
    refs: &'static [&'static str],
) -> impl Strategy<Value = Value> {
    prop::collection::vec((prop::sample::select(keys), arb_json(refs)), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()))
}

const PATHS: &[&str] = &[
    "/api/v1/pods",
    "/api/v1/",
    "/apis/apps/v1/x",
    "/apis/apps/",
    "/version/",
    "/logs/{path}",
    "/",
    "/{id}",
];

/// Mostly v2- or v3-shaped documents with random contents (paths,
/// components, an `x-ext` member), sometimes anything at all.
fn arb_document() -> impl Strategy<Value = Value> {
    let named = || arb_map(NAMES, V2_REFS);
    let extra = prop::option::of(arb_json(V2_REFS));
    let v2 = (arb_map(PATHS, V2_REFS), named(), named(), named(), extra).prop_map(
        |(paths, definitions, parameters, responses, extra)| {
            let mut doc = json!({
                "swagger": "2.0",
                "info": { "title": "t" },
                "paths": paths,
                "definitions": definitions,
                "parameters": parameters,
                "responses": responses,
                "securityDefinitions": { "A": {} },
            });
            if let (Some(extra), Some(map)) = (extra, doc.as_object_mut()) {
                map.insert("x-ext".to_owned(), extra);
            }
            doc
        },
    );
    let named = || arb_map(NAMES, V3_REFS);
    let extra = prop::option::of(arb_json(V3_REFS));
    let v3 = (arb_map(PATHS, V3_REFS), named(), named(), named(), named(), extra).prop_map(
        |(paths, schemas, parameters, bodies, headers, extra)| {
            let mut doc = json!({
                "openapi": "3.0.0",
                "info": { "title": "t" },
                "paths": paths,
                "components": {
                    "schemas": schemas,
                    "parameters": parameters,
                    "requestBodies": bodies,
                    "headers": headers,
                    "securitySchemes": { "A": {} },
                },
            });
            if let (Some(extra), Some(map)) = (extra, doc.as_object_mut()) {
                map.insert("x-ext".to_owned(), extra);
            }
            doc
        },
    );
    prop_oneof![3 => v2, 3 => v3, 1 => arb_json(V2_REFS)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn split_never_panics_and_its_outputs_are_closed_under_refs(doc in arb_document()) {
        if let Ok(split) = split(&doc) {
            for (key, out) in &split.documents {
                prop_assert!(closed_under_refs(out), "{} is not closed: {}", key, out);
            }
            let rendered = split_rendered(&doc).expect("split_rendered succeeds where split does");
            for (key, out) in &split.documents {
                let bytes = serde_json::to_vec(out).expect("serializes");
                prop_assert_eq!(rendered.documents.get(key), Some(&bytes), "{} renders differently", key);
            }
            prop_assert_eq!(rendered.documents.len(), split.documents.len());
            prop_assert_eq!(super::split(&doc).ok(), Some(split), "not deterministic");
        }
    }
}

/// The split of `doc` with `hints`, each document's bytes by key.
fn split_hinted(
    doc: &Node<'_>,
    hints: Option<&RefHints<'_>>,
) -> Result<BTreeMap<String, Vec<u8>>, SplitError> {
    let mut out = BTreeMap::new();
    split_rendered_each_hinted(doc, hints, 0, usize::MAX, |key, bytes| {
        out.insert(key.to_string(), bytes.to_vec());
    })?;
    Ok(out)
}

#[test]
fn recorded_references_stand_for_a_walk_of_the_object() {
    let doc = json!({
        "openapi": "3.0.0",
        "paths": {"/apis/a/v1/x": {"get": {"responses": {}}}},
        "components": {"schemas": {"A": {"type": "string"}, "B": {"type": "string"}}}
    });
    let tree = Node::from_value(&doc);
    let item = tree.pointer("/paths/~1apis~1a~1v1~1x").unwrap();
    let plain = split_hinted(&tree, None).unwrap();
    assert!(!String::from_utf8_lossy(&plain["apis/a/v1"]).contains("\"A\""));
    // A record that says the path item refers to A is taken as it is:
    // the item is not walked again.
    let referring = json!({"$ref": "#/components/schemas/A"});
    let referring = Node::from_value(&referring);
    let mut hints = RefHints::default();
    hints.record(&referring);
    let mut told = RefHints::default();
    told.by_object
        .insert(item.as_object().unwrap().place(), hints.by_object.into_values().next().unwrap());
    let hinted = split_hinted(&tree, Some(&told)).unwrap();
    let v1 = String::from_utf8_lossy(&hinted["apis/a/v1"]).into_owned();
    assert!(v1.contains(r#""schemas":{"A":{"type":"string"}}"#), "{v1}");
}

#[test]
fn the_converter_s_records_give_the_documents_a_walk_gives() {
    for bytes in [
        &include_bytes!("../../../testdata/sample/widgets.v2.json")[..],
        br##"{"swagger":"2.0","paths":{
            "/apis/a/v1/x":{"get":{"responses":{"200":{"description":"","schema":{"$ref":"#/definitions/A"}}}}},
            "/apis/b/v1/y":{"x-ext":{"$ref":"#/definitions/B"},"get":{"responses":{"200":{"description":"",
                "schema":{"$ref":"#/paths/~1apis~1a~1v1~1x/get/responses/200/schema"}}}}}},
          "definitions":{"A":{"properties":{"b":{"$ref":"#/definitions/B"},"c":{"description":"d","$ref":"#/definitions/C"}}},
            "B":{"type":"string"},"C":{"items":{"$ref":"#/definitions/A"}}}}"##,
    ] {
        let v2 = crate::json::document::parse_tree(bytes).unwrap();
        let converted = crate::openapi::convert::convert_tree(&v2).unwrap();
        assert!(!converted.refs.by_object.is_empty());
        let walked = split_hinted(&converted.document, None);
        let hinted = split_hinted(&converted.document, Some(&converted.refs));
        match (walked, hinted) {
            (Ok(walked), Ok(hinted)) => assert_eq!(walked, hinted),
            (Err(walked), Err(hinted)) => assert_eq!(walked.to_string(), hinted.to_string()),
            (walked, hinted) => panic!("{walked:?} vs {hinted:?}"),
        }
    }
}

#[test]
fn references_the_converter_shares_are_looked_up_by_place() {
    // Three `$ref`s to one definition, one text in the converted tree:
    // its bytes are hashed once, not once per reference.
    let v2 = json!({"swagger": "2.0", "info": {"title": "t", "version": "1"},
        "paths": {"/apis/g/v1/x": {
            "get": {"responses": {"200": {"description": "", "schema": {"$ref": "#/definitions/A"}}}},
            "put": {"responses": {"200": {"description": "", "schema": {"$ref": "#/definitions/A"}}}}}},
        "definitions": {"A": {"type": "string"}, "B": {"properties": {"a": {"$ref": "#/definitions/A"}}}}});
    let tree = Node::from_value(&v2);
    let converted = crate::openapi::convert::convert_tree(&tree).unwrap();
    let root = converted.document.as_object().unwrap();
    let paths = root.get("paths").and_then(Node::as_object).unwrap();
    let index = Index::new(&converted.document, root, Format::OpenApi3, paths);
    let path_entries: Vec<(&Text<'_>, &Node<'_>)> = paths.iter().collect();
    for hints in [None, Some(&converted.refs)] {
        let graph = Graph::build(&index, hints, &path_entries, &[Some(0)]);
        assert_eq!(graph.text_lookups, 1, "hints: {}", hints.is_some());
    }
}

#[test]
fn a_reference_found_the_short_way_is_what_its_pointer_names() {
    // Names and references in every form the short way must either
    // answer as the pointer does or leave to it. The names written as
    // their own escapes (`a~1b`, `c~0d`, `p%25q`) catch a short way that
    // reads an escaped reference literally.
    let names = ["A", "a/b", "a~1b", "c~d", "c~0d", "p%q", "p%25q", "", "x y", "é"];
    let references = [
        "#/definitions/A",
        "#/definitions/a~1b",
        "#/definitions/c~0d",
        "#/definitions/p%25q",
        "#/definitions/",
        "#/definitions/x%20y",
        "#/definitions/é",
        "#/definitions/A/properties",
        "#/definitions/missing",
        "#/d%65finitions/A",
        "#/components/schemas/A",
        "#/components/schemas/a~1b",
        "#/components/schemas/",
        "#/components/schemas/é",
        "#/components/schemas/A/x",
        "#/components/schemas/missing",
        "#/comp%6Fnents/schemas/A",
        "#/components/sch%65mas/A",
        "#/parameters/A",
        "#/paths/A",
        "#A",
        "#",
        "other.json#/definitions/A",
    ];
    let section: serde_json::Map<String, Value> =
        names.iter().map(|n| ((*n).to_owned(), json!({"type": "object"}))).collect();
    let v2 = json!({"swagger": "2.0", "paths": {}, "definitions": section});
    let v3 = json!({"openapi": "3.0.0", "paths": {}, "components": {"schemas": section}});
    let mut short = 0;
    for (doc, format) in [(&v2, Format::Swagger2), (&v3, Format::OpenApi3)] {
        let tree = Node::from_value(doc);
        let root = tree.as_object().unwrap();
        let paths = root.get("paths").and_then(Node::as_object).unwrap();
        let index = Index::new(&tree, root, format, paths);
        for reference in references {
            if let Some(component) = index.plain_component(reference) {
                short += 1;
                assert!(
                    index.resolve_pointer(reference) == Target::Component(component),
                    "{reference}"
                );
            }
        }
    }
    // "A", "" and "é" in each format; the rest the long way.
    assert_eq!(short, 6);
}
