//! Property tests over generated documents: the converter and the splitter
//! never panic, are deterministic, and what they produce is closed under
//! `$ref`; the tree path (bytes parsed into borrowed trees, rendered back
//! to bytes) gives exactly the bytes of the `&Value` path. The same
//! invariants run longer under cargo-fuzz (`fuzz/`).

use crate::common::refs::dangling_refs;
use openapi_proxy::{convert, convert_tree};
use openapi_proxy::{parse_document, parse_tree};
use openapi_proxy::{split, split_rendered, split_rendered_tree, split_tree};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Any JSON value, with strings biased towards the ones the converter
/// looks at (`$ref` targets, types, locations).
fn any_json() -> impl Strategy<Value = Value> {
    let word = prop_oneof![
        Just("#/definitions/A".to_owned()),
        Just("#/definitions/B".to_owned()),
        Just("#/parameters/p".to_owned()),
        Just("#/responses/r".to_owned()),
        Just("body".to_owned()),
        Just("formData".to_owned()),
        Just("query".to_owned()),
        Just("file".to_owned()),
        Just("int-or-string".to_owned()),
        "[a-z$/#~{}.]{0,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
        word.prop_map(Value::String),
        // Text that must be escaped on output.
        "[a-z\"\\\\\u{0}-\u{1f}é\u{1F600}]{0,6}".prop_map(Value::String),
    ];
    let key = prop_oneof![
        Just("$ref".to_owned()),
        Just("type".to_owned()),
        Just("in".to_owned()),
        Just("name".to_owned()),
        Just("schema".to_owned()),
        Just("items".to_owned()),
        Just("properties".to_owned()),
        Just("allOf".to_owned()),
        Just("parameters".to_owned()),
        Just("responses".to_owned()),
        Just("format".to_owned()),
        Just("x-nullable".to_owned()),
        Just("collectionFormat".to_owned()),
        "[a-z]{1,6}",
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A document shaped like Swagger 2.0 whose insides are arbitrary.
fn swaggerish() -> impl Strategy<Value = Value> {
    let path = prop_oneof![
        Just("/api/v1/pods".to_owned()),
        Just("/apis/apps/v1/deployments".to_owned()),
        Just("/apis/g/v1/x/{name}".to_owned()),
        Just("/version/".to_owned()),
        Just("/{id}".to_owned()),
        "/[a-z]{1,4}(/[a-z{}]{1,4}){0,3}",
    ];
    let method = prop_oneof![Just("get"), Just("post"), Just("parameters"), Just("x-ext")];
    let op = (method, any_json());
    let item = prop::collection::vec(op, 0..3).prop_map(|ops| {
        Value::Object(ops.into_iter().map(|(m, v)| (m.to_owned(), v)).collect::<Map<_, _>>())
    });
    let paths = prop::collection::vec((path, item), 0..4);
    let defs =
        prop::collection::vec((prop_oneof![Just("A"), Just("B"), Just("C")], any_json()), 0..4);
    (paths, defs, any_json()).prop_map(|(paths, defs, params)| {
        let paths: Map<_, _> = paths.into_iter().collect();
        let defs: Map<_, _> = defs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        json!({"swagger": "2.0", "info": {"title": "t", "version": "1"}, "paths": paths,
               "definitions": defs, "parameters": {"p": params}})
    })
}

fn check(input: &Value) -> Result<(), TestCaseError> {
    let first = convert(input);
    let second = convert(input);
    prop_assert_eq!(&first, &second, "conversion is not deterministic");
    let Ok(converted) = first else { return Ok(()) };
    let a = serde_json::to_vec(&converted.document).expect("serializes");
    let b = serde_json::to_vec(&second.expect("same as first").document).expect("serializes");
    prop_assert!(a == b, "serialized conversions differ");
    prop_assert_eq!(
        dangling_refs(&converted.document),
        Vec::<String>::new(),
        "converted document dangles"
    );
    if let Ok(parts) = split(&converted.document) {
        for (key, doc) in &parts.documents {
            prop_assert_eq!(
                dangling_refs(doc),
                Vec::<String>::new(),
                "split document {} dangles",
                key
            );
        }
    }
    Ok(())
}

/// The tree path (what `convert --out` and the proxy run: `parse_tree`,
/// `split_tree`, `convert_tree`, `split_rendered_tree`, rendering) gives
/// the very bytes, notes and errors of the `&Value` path, from compact and
/// from indented text.
fn same_bytes_both_ways(input: &Value) -> Result<(), TestCaseError> {
    let texts = [serde_json::to_vec(input), serde_json::to_vec_pretty(input)];
    for text in texts {
        let text = text.expect("serializes");
        let value = parse_document(&text).expect("serde_json's output parses");
        let tree = parse_tree(&text).expect("serde_json's output parses as a tree");
        prop_assert_eq!(&tree.to_value(), &value);
        prop_assert!(tree.to_vec() == serde_json::to_vec(&value).expect("serializes"));

        // The proxy splits the Swagger 2.0 input before converting.
        match (split(&value), split_tree(&tree)) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(&a.unplaced, &b.unplaced);
                prop_assert!(a.documents.keys().eq(b.documents.keys()));
                for ((key, a), b) in a.documents.iter().zip(b.documents.values()) {
                    let a = serde_json::to_vec(a).expect("serializes");
                    prop_assert!(a == b.to_vec(), "split part {} differs", key);
                }
            }
            (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
            (a, b) => prop_assert!(false, "split: {:?} vs {:?}", a.err(), b.err()),
        }

        match (convert(&value), convert_tree(&tree)) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(&a.notes, &b.notes);
                let a_bytes = serde_json::to_vec(&a.document).expect("serializes");
                prop_assert!(a_bytes == b.document.to_vec(), "converted documents differ");
                match (split_rendered(&a.document), split_rendered_tree(&b.document)) {
                    (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
                    (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                    (a, b) => prop_assert!(false, "split_rendered: {:?} vs {:?}", a.err(), b.err()),
                }
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "convert: {:?} vs {:?}", a.err(), b.err()),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn tree_path_gives_the_value_path_bytes_on_any_json(v in any_json()) {
        same_bytes_both_ways(&v)?;
    }

    #[test]
    fn tree_path_gives_the_value_path_bytes_on_swagger_shaped_documents(v in swaggerish()) {
        same_bytes_both_ways(&v)?;
    }

    #[test]
    fn any_json_converts_or_fails_cleanly(v in any_json()) {
        check(&v)?;
    }

    #[test]
    fn swagger_shaped_documents_convert_deterministically_and_split_closed(v in swaggerish()) {
        check(&v)?;
    }
}
