use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::json::tree::Node;

fn owners(pairs: &[(&str, &str)]) -> BTreeMap<String, Arc<str>> {
    pairs.iter().map(|(k, o)| ((*k).to_owned(), Arc::from(*o))).collect()
}

fn run(docs: &[(&str, &Value)], owners: &BTreeMap<String, Arc<str>>) -> (Value, Merged<'static>) {
    let sources = docs
        .iter()
        .map(|(name, doc)| Source::new(*name, Node::from_owned_value((*doc).clone())).unwrap())
        .collect();
    let m = merge(sources, owners).unwrap();
    (m.doc.to_value(), m)
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "version": version, "kind": kind}])
}

fn op(reference: &str) -> Value {
    json!({"get": {"responses": {"200": {"description": "OK", "schema": {"$ref": reference}}}}})
}

/// Downstream `a` (higher priority) owns `a.io/v1`, `b` owns `b.io/v1`;
/// each also has a copy of something the other owns.
fn two_downstreams() -> (Value, Value) {
    let a = json!({
        "swagger": "2.0",
        "info": {"title": "A", "version": "1"},
        "paths": {
            "/apis/a.io/v1/things": op("#/definitions/io.a.v1.Thing"),
            "/apis/b.io/v1/widgets": op("#/definitions/io.b.v1.Widget"),
            "/apis/a.io/v1/oldwidgets": op("#/definitions/io.b.v1.Widget"),
            "/version/": op("#/definitions/io.version.Info"),
        },
        "definitions": {
            "io.shared.Meta": {"type": "object", "properties": {"x": {"type": "string"}}},
            "io.a.v1.Thing": {
                "properties": {"metadata": {"$ref": "#/definitions/io.shared.Meta"}},
                "x-kubernetes-group-version-kind": gvk("a.io", "v1", "Thing"),
            },
            "io.b.v1.Widget": {
                "description": "a's stale copy",
                "x-kubernetes-group-version-kind": gvk("b.io", "v1", "Widget"),
            },
            "io.version.Info": {"type": "object"},
            "io.a.unused": {"type": "string"},
        },
    });
    let b = json!({
        "swagger": "2.0",
        "info": {"title": "B", "version": "2"},
        "paths": {
            "/apis/b.io/v1/widgets": op("#/definitions/io.b.v1.Widget"),
            "/version/": op("#/definitions/io.version.Info"),
        },
        "definitions": {
            "io.shared.Meta": {"type": "object", "properties": {"y": {"type": "string"}}},
            "io.b.v1.Widget": {
                "properties": {"metadata": {"$ref": "#/definitions/io.shared.Meta"}},
                "x-kubernetes-group-version-kind": gvk("b.io", "v1", "Widget"),
            },
            "io.version.Info": {"type": "object"},
        },
    });
    (a, b)
}

#[test]
fn a_group_versions_paths_come_only_from_its_owner() {
    let (a, b) = two_downstreams();
    let owners = owners(&[("apis/a.io/v1", "a"), ("apis/b.io/v1", "b")]);
    let (doc, _) = run(&[("a", &a), ("b", &b)], &owners);
    // b's widgets (its owner's), not a's copy; /version/ from a, the
    // higher priority; paths sorted.
    let paths: Vec<&String> = doc["paths"].as_object().unwrap().keys().collect();
    assert_eq!(
        paths,
        ["/apis/a.io/v1/oldwidgets", "/apis/a.io/v1/things", "/apis/b.io/v1/widgets", "/version/"]
    );
    assert_eq!(doc["info"]["title"], "A");
}

#[test]
fn a_clashing_definition_is_renamed_and_its_references_follow() {
    let (a, b) = two_downstreams();
    let owners = owners(&[("apis/a.io/v1", "a"), ("apis/b.io/v1", "b")]);
    let (doc, m) = run(&[("a", &a), ("b", &b)], &owners);
    let defs = doc["definitions"].as_object().unwrap();
    // The higher priority keeps the name; the other is `_v2`, and b's
    // Widget refers to it.
    assert_eq!(defs["io.shared.Meta"]["properties"]["x"]["type"], "string");
    assert_eq!(defs["io.shared.Meta_v2"]["properties"]["y"]["type"], "string");
    assert_eq!(
        defs["io.b.v1.Widget"]["properties"]["metadata"]["$ref"],
        "#/definitions/io.shared.Meta_v2"
    );
    // The owner's Widget keeps the name although a is the higher priority;
    // a's copy, still reached from a's own path, is renamed and loses the kind.
    assert!(defs["io.b.v1.Widget"].get("description").is_none());
    assert_eq!(defs["io.b.v1.Widget_v2"]["description"], "a's stale copy");
    assert!(defs["io.b.v1.Widget_v2"].get("x-kubernetes-group-version-kind").is_none());
    assert_eq!(
        doc["paths"]["/apis/a.io/v1/oldwidgets"]["get"]["responses"]["200"]["schema"]["$ref"],
        "#/definitions/io.b.v1.Widget_v2"
    );
    assert_eq!(m.kinds_dropped, 1);
    let mut renamed: Vec<(String, String, String)> =
        m.renamed.iter().map(|r| (r.downstream.clone(), r.from.clone(), r.to.clone())).collect();
    renamed.sort();
    assert_eq!(
        renamed,
        [
            ("a".into(), "io.b.v1.Widget".into(), "io.b.v1.Widget_v2".into()),
            ("b".into(), "io.shared.Meta".into(), "io.shared.Meta_v2".into()),
        ]
    );
    // Identical definitions once, unrenamed.
    assert!(defs.contains_key("io.version.Info"));
    assert!(!defs.contains_key("io.version.Info_v2"));
    // a lost a path, so it brings only what its kept paths reach.
    assert!(!defs.contains_key("io.a.unused"));
}

#[test]
fn no_kind_is_listed_by_two_definitions() {
    let delete = |description: &str| {
        json!({
            "description": description,
            "x-kubernetes-group-version-kind": [
                {"group": "a.io", "version": "v1", "kind": "DeleteOptions"},
                {"group": "b.io", "version": "v1", "kind": "DeleteOptions"},
            ],
        })
    };
    let doc = |d: &str| {
        json!({
            "swagger": "2.0",
            "info": {},
            "paths": {},
            "definitions": {"meta.DeleteOptions": delete(d)},
        })
    };
    let owners = owners(&[("apis/a.io/v1", "a"), ("apis/b.io/v1", "b")]);
    let (merged, m) = run(&[("a", &doc("one")), ("b", &doc("two"))], &owners);
    let defs = &merged["definitions"];
    // Each kind stays with its owner's definition.
    assert_eq!(
        defs["meta.DeleteOptions"]["x-kubernetes-group-version-kind"],
        gvk("a.io", "v1", "DeleteOptions")
    );
    assert_eq!(
        defs["meta.DeleteOptions_v2"]["x-kubernetes-group-version-kind"],
        gvk("b.io", "v1", "DeleteOptions")
    );
    assert_eq!(m.kinds_dropped, 2);
}

#[test]
fn the_rename_suffix_skips_names_in_use() {
    let doc = |t: &str, extra: bool| {
        let mut defs = json!({"X": {"type": t}});
        if extra {
            defs["X_v2"] = json!({"type": "boolean"});
        }
        json!({"swagger": "2.0", "info": {}, "paths": {}, "definitions": defs})
    };
    let (merged, _) =
        run(&[("a", &doc("string", false)), ("b", &doc("integer", true))], &owners(&[]));
    let defs = merged["definitions"].as_object().unwrap();
    // b's own X_v2 is taken (it keeps the name), so b's X becomes X_v3.
    assert_eq!(defs.keys().collect::<Vec<_>>(), ["X", "X_v2", "X_v3"]);
    assert_eq!(defs["X_v2"]["type"], "boolean");
    assert_eq!(defs["X_v3"]["type"], "integer");
}

#[test]
fn shared_parameters_are_renamed_like_definitions() {
    let doc = |required: bool| {
        json!({
            "swagger": "2.0",
            "info": {},
            "paths": {"/apis/x.io/v1/things": {"parameters": [{"$ref": "#/parameters/body"}]}},
            "parameters": {"body": {"name": "body", "in": "body", "required": required, "schema": {}}},
        })
    };
    let owners = owners(&[("apis/x.io/v1", "b")]);
    let (merged, _) = run(&[("a", &doc(true)), ("b", &doc(false))], &owners);
    // a lost its only path and brings nothing; b's parameter keeps its name.
    assert_eq!(merged["parameters"].as_object().unwrap().len(), 1);
    assert_eq!(merged["parameters"]["body"]["required"], false);

    let paths = |p: &str| json!({p: {"parameters": [{"$ref": "#/parameters/body"}]}});
    let mut a = doc(true);
    a["paths"] = paths("/apis/y.io/v1/others");
    let (merged, _) = run(&[("a", &a), ("b", &doc(false))], &owners);
    assert_eq!(merged["parameters"]["body_v2"]["required"], false);
    assert_eq!(
        merged["paths"]["/apis/x.io/v1/things"]["parameters"][0]["$ref"],
        "#/parameters/body_v2"
    );
}

#[test]
fn a_document_that_is_not_swagger_2_is_refused() {
    let v3 = Node::from_owned_value(json!({"openapi": "3.0.0", "paths": {}}));
    assert!(matches!(Source::new("x", v3), Err(MergeError::NotSwagger2)));
    let bad = Node::from_owned_value(json!({"swagger": "2.0", "paths": []}));
    assert!(matches!(Source::new("x", bad), Err(MergeError::NotAMap("paths"))));
    assert!(matches!(Source::new("x", Node::Null), Err(MergeError::NotAnObject)));
}

/// Kubernetes 1.35's document split between two owners by group-version,
/// each half keeping every definition as a real server does, merges back
/// into the same document (member order aside).
#[test]
fn kubernetes_split_between_two_owners_merges_back_whole() {
    let bytes =
        std::fs::read(crate::testkit::testdata::path("kubernetes-1.35/swagger.json")).unwrap();
    let whole = crate::json::tree::parse(&bytes).unwrap();
    let original: Value = serde_json::from_slice(&bytes).unwrap();
    let to_b = |key: &str| key.starts_with("apis/") && key.as_bytes()[5] < b'f';
    let mut owner_pairs = Vec::new();
    let mut halves = [original.clone(), original.clone()];
    for half in &mut halves {
        half["paths"] = json!({});
    }
    for (path, item) in original["paths"].as_object().unwrap() {
        let key = DocumentKey::from_path(path);
        let gv = key.as_ref().filter(|k| k.is_group_version());
        let side = usize::from(gv.is_some_and(|k| to_b(k.as_str())));
        if let Some(k) = gv {
            owner_pairs.push((k.as_str().to_owned(), if side == 1 { "b" } else { "a" }));
        }
        halves[side]["paths"][path] = item.clone();
        // The non-owner also serves a copy of one group-version: dropped.
        if path.starts_with("/apis/apps/v1/") {
            halves[0]["paths"][path] = item.clone();
        }
    }
    owner_pairs.sort();
    owner_pairs.dedup();
    let pairs: Vec<(&str, &str)> = owner_pairs.iter().map(|(k, o)| (k.as_str(), *o)).collect();
    assert!(pairs.iter().any(|(_, o)| *o == "b") && pairs.iter().any(|(_, o)| *o == "a"));
    let (doc, m) = run(&[("a", &halves[0]), ("b", &halves[1])], &owners(&pairs));
    assert!(m.renamed.is_empty(), "{:?}", m.renamed);
    assert_eq!(m.kinds_dropped, 0);
    assert!(refs::same(&Node::from_value(&doc), &whole), "the merge differs from the original");
    // Sorted as Go writes its maps.
    let keys: Vec<&String> = doc["definitions"].as_object().unwrap().keys().collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
}
