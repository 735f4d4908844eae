use serde_json::{Value, json};

use super::*;
use crate::json::tree::parse;

fn down(v3: &Value) -> Value {
    let bytes = serde_json::to_vec(v3).unwrap();
    let tree = parse(&bytes).unwrap();
    down_convert(tree).unwrap().to_value()
}

/// Every place `a` and `b` differ, as JSON pointers with both values.
fn differences(a: &Value, b: &Value, at: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                match y.get(k) {
                    Some(w) => differences(v, w, &here, out),
                    None => out.push(format!("{here}: only converted")),
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                out.push(format!(
                    "{at}/{}: only published",
                    k.replace('~', "~0").replace('/', "~1")
                ));
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                differences(v, w, &format!("{at}/{i}"), out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{at}: {a} != {b}")),
    }
}

const K8S_1_24: &str = "kube-openapi/pkg/openapiconv/testdata_generated_from_k8s";
const CRDS: &str = "kube-openapi/pkg/schemaconv/testdata/crds";

fn read(path: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// What v3 cannot carry, taken out of the published v2 so the rest can be
/// compared (docs/wire.md, A-13): `schemes` and the top-level `security`;
/// `consumes` of an operation without a body; the order of `consumes`
/// and `produces` (v3 keeps media types in a map, sorted); and a body
/// parameter's `required`, which Kubernetes' v3 does not state.
fn without_what_v3_loses(doc: &mut Value, converted: &Value) {
    let obj = doc.as_object_mut().unwrap();
    obj.remove("security");
    for (path, item) in obj["paths"].as_object_mut().unwrap() {
        for (method, op) in item.as_object_mut().unwrap() {
            let Some(op) = op.as_object_mut() else { continue };
            op.remove("schemes");
            if converted["paths"][path][method].get("consumes").is_none() {
                op.remove("consumes");
            }
            for list in ["consumes", "produces"] {
                if let Some(Value::Array(l)) = op.get_mut(list) {
                    l.sort_by_key(|v| v.to_string());
                }
            }
            if let Some(Value::Array(params)) = op.get_mut("parameters") {
                for p in params.iter_mut().filter(|p| p["in"] == "body") {
                    p.as_object_mut().unwrap().remove("required");
                }
            }
        }
    }
}

fn sorted_lists(doc: &mut Value) {
    for item in doc["paths"].as_object_mut().unwrap().values_mut() {
        for op in item.as_object_mut().unwrap().values_mut() {
            for list in ["consumes", "produces"] {
                if let Some(Value::Array(l)) = op.get_mut(list) {
                    l.sort_by_key(|v| v.to_string());
                }
            }
        }
    }
}

/// Kubernetes 1.24's v3 documents converted down equal the v2 Kubernetes
/// published for the same group-versions, but for what v3 cannot carry.
#[test]
fn kubernetes_v3_converts_down_to_the_v2_kubernetes_published() {
    let dir = crate::testkit::testdata::path(K8S_1_24);
    for gv in ["api.v1", "batch.v1", "apiextensions.k8s.io.v1"] {
        let mut converted = down(&read(&dir.join(format!("v3_{gv}.json"))));
        let mut published = read(&dir.join(format!("v2_{gv}.json")));
        without_what_v3_loses(&mut published, &converted);
        sorted_lists(&mut converted);
        let mut out = Vec::new();
        differences(&converted, &published, "", &mut out);
        assert!(
            out.is_empty(),
            "{gv}: {} differences, first: {:?}",
            out.len(),
            &out[..out.len().min(5)]
        );
    }
}

/// The test data was built with `SkipFilterSchemaForKubectlOpenAPIV2Validation`,
/// which skips the one rule kube-apiserver's CRD controller applies on top
/// when it serves v2: `type: object` goes beside
/// `x-kubernetes-preserve-unknown-fields: true`. Applied here to compare.
fn as_served(schema: &mut Value) {
    match schema {
        Value::Object(o) => {
            if o.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true))
                && o.get("type") == Some(&json!("object"))
            {
                o.remove("type");
            }
            o.values_mut().for_each(as_served);
        }
        Value::Array(items) => items.iter_mut().for_each(as_served),
        _ => {}
    }
}

/// CRD schemas converted down equal what kube-apiserver publishes for the
/// same CRDs in v2 — but for the `…List` definition, which its builder
/// writes itself (with `required: [items]` and no `type`).
#[test]
fn crd_schemas_convert_down_as_kube_apiserver_publishes_them() {
    let dir = crate::testkit::testdata::path(CRDS);
    let mut files = 0;
    for f in std::fs::read_dir(dir.join("openapiv3")).unwrap() {
        let f = f.unwrap().file_name();
        let converted = down(&read(&dir.join("openapiv3").join(&f)));
        let mut published = read(&dir.join("openapiv2").join(&f));
        as_served(&mut published);
        let mut out = Vec::new();
        for (name, def) in converted["definitions"].as_object().unwrap() {
            if !name.ends_with("List") {
                differences(def, &published["definitions"][name], name, &mut out);
            }
        }
        assert!(out.is_empty(), "{f:?}: {:?}", &out[..out.len().min(5)]);
        files += 1;
    }
    assert_eq!(files, 10);
}

#[test]
fn crd_rules_drop_what_v2_cannot_say() {
    let v2 = down(&json!({
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "paths": {},
        "components": {"schemas": {"x.Thing": {
            "type": "object",
            "required": ["a"],
            "properties": {
                "a": {"type": "string", "nullable": true, "enum": ["p", "q"]},
                "b": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "c": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "d": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"e": {}}},
                "f": {"type": "array", "x-kubernetes-preserve-unknown-fields": true, "items": {}},
                "g": {"oneOf": [{"type": "string"}], "not": {"type": "integer"}, "description": "g"},
                "h": {"allOf": [{"$ref": "#/components/schemas/x.Other"}], "default": {}},
            },
        }}},
    }));
    assert_eq!(
        v2["definitions"]["x.Thing"],
        json!({
            "type": "object",
            "properties": {
                "a": {},
                "b": {"x-kubernetes-int-or-string": true},
                "c": {"type": "string", "format": "int-or-string"},
                "d": {"x-kubernetes-preserve-unknown-fields": true},
                "f": {"x-kubernetes-preserve-unknown-fields": true},
                "g": {"description": "g"},
                "h": {"default": {}, "$ref": "#/definitions/x.Other"},
            },
        })
    );
    assert_eq!(v2["swagger"], "2.0");
}

#[test]
fn request_bodies_become_body_parameters_and_content_becomes_schema() {
    let v2 = down(&json!({
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "paths": {"/apis/x.io/v1/things": {"post": {
            "description": "create",
            "parameters": [{"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}}],
            "requestBody": {"content": {"*/*": {"schema": {"$ref": "#/components/schemas/x.Thing"}}}, "required": true},
            "responses": {"200": {"description": "OK", "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/x.Thing"}},
                "application/yaml": {"schema": {"$ref": "#/components/schemas/x.Thing"}},
            }}},
        }}},
    }));
    assert_eq!(
        v2["paths"]["/apis/x.io/v1/things"]["post"],
        json!({
            "description": "create",
            "consumes": ["*/*"],
            "produces": ["application/json", "application/yaml"],
            "parameters": [
                {"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/x.Thing"}},
                {"name": "dryRun", "in": "query", "type": "string", "uniqueItems": true},
            ],
            "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/x.Thing"}}},
        })
    );
}

#[test]
fn a_document_that_is_not_openapi_3_0_is_refused() {
    let tree = |v: Value| Node::from_owned_value(v);
    assert!(matches!(down_convert(tree(json!({"swagger": "2.0"}))), Err(DownError::NotOpenApi3)));
    assert!(matches!(down_convert(tree(json!({"openapi": "3.1.0"}))), Err(DownError::NotOpenApi3)));
    assert!(matches!(down_convert(tree(json!([]))), Err(DownError::NotAnObject)));
}
