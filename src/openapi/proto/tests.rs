use prost::Message as _;

use super::*;
use crate::openapi::pipeline::{Budget, swagger_to_openapi};

/// One field of a message: its number and, for a length-delimited field,
/// its bytes; for a varint its value; for a double its bits.
#[derive(Debug, PartialEq)]
enum F {
    Bytes(u32, Vec<u8>),
    Varint(u32, u64),
    Fixed64(u32, u64),
}

/// The fields of `bytes`, in order: a decoder independent of the tables.
fn fields(mut bytes: &[u8]) -> Vec<F> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let key = prost::encoding::decode_varint(&mut bytes).unwrap();
        let number = u32::try_from(key >> 3).unwrap();
        match key & 7 {
            0 => out.push(F::Varint(number, prost::encoding::decode_varint(&mut bytes).unwrap())),
            1 => {
                let (v, rest) = bytes.split_at(8);
                out.push(F::Fixed64(number, u64::from_le_bytes(v.try_into().unwrap())));
                bytes = rest;
            }
            2 => {
                let len =
                    usize::try_from(prost::encoding::decode_varint(&mut bytes).unwrap()).unwrap();
                let (v, rest) = bytes.split_at(len);
                out.push(F::Bytes(number, v.to_vec()));
                bytes = rest;
            }
            other => panic!("wire type {other}"),
        }
    }
    out
}

fn bytes_of(f: &F) -> &[u8] {
    match f {
        F::Bytes(_, b) => b,
        other => panic!("not length-delimited: {other:?}"),
    }
}

fn string(n: u32, s: &str) -> F {
    F::Bytes(n, s.as_bytes().to_vec())
}

#[test]
fn a_minimal_v2_document_is_its_swagger_field() {
    assert_eq!(openapi_v2(br#"{"swagger":"2.0"}"#).unwrap(), b"\x0a\x032.0");
}

#[test]
fn fields_come_in_number_order_whatever_the_json_order() {
    let pb =
        openapi_v2(br#"{"host":"h","info":{"version":"v","title":"t"},"swagger":"2.0"}"#).unwrap();
    let f = fields(&pb);
    assert_eq!(f[0], string(1, "2.0"));
    assert_eq!(fields(bytes_of(&f[1])), [string(1, "t"), string(2, "v")]);
    assert_eq!(f[2], string(3, "h"));
}

#[test]
fn proto3_defaults_are_left_out_but_a_oneof_false_is_written() {
    let schema = br#"{"swagger":"2.0","definitions":{"A":{"description":"","readOnly":false,
        "maxLength":0,"additionalProperties":false}}}"#;
    let f = fields(&openapi_v2(schema).unwrap());
    let definitions = fields(bytes_of(&f[1]));
    let named = fields(bytes_of(&definitions[0]));
    assert_eq!(named[0], string(1, "A"));
    let schema = fields(bytes_of(&named[1]));
    // Only additionalProperties (21), holding its boolean (2) = false.
    assert_eq!(schema, [F::Bytes(21, vec![0x10, 0x00])]);
}

#[test]
fn extensions_are_named_any_holding_yaml_in_json_order() {
    let pb = openapi_v2(br#"{"swagger":"2.0","x-b":[{"k":"v"}],"x-a":"s"}"#).unwrap();
    let f = fields(&pb);
    let first = fields(bytes_of(&f[1]));
    assert_eq!(first[0], string(1, "x-b"));
    assert_eq!(fields(bytes_of(&first[1])), [string(2, "[{\"k\":\"v\"}]\n")]);
    let second = fields(bytes_of(&f[2]));
    assert_eq!(second[0], string(1, "x-a"));
    assert!(f.iter().all(|x| matches!(x, F::Bytes(1 | 16, _))));
}

#[test]
fn the_yaml_of_an_any_reads_back_as_the_json_value() {
    let value = serde_json::json!({"a": [1, 2.5, "x\ny", null, true], "b": {"": "é\u{1}"}});
    let json = serde_json::to_vec(&serde_json::json!({"swagger": "2.0", "x-v": value})).unwrap();
    let f = fields(&openapi_v2(&json).unwrap());
    let any = fields(bytes_of(&fields(bytes_of(&f[1]))[1]));
    let yaml = std::str::from_utf8(bytes_of(&any[0])).unwrap();
    let back: serde_json::Value = serde_yaml_ng::from_str(yaml).unwrap();
    assert_eq!(back, value);
}

#[test]
fn a_length_past_127_takes_two_bytes() {
    let long = "d".repeat(300);
    let json = format!(r#"{{"swagger":"2.0","info":{{"description":"{long}"}}}}"#);
    let f = fields(&openapi_v2(json.as_bytes()).unwrap());
    assert_eq!(fields(bytes_of(&f[1])), [string(3, &long)]);
}

#[test]
fn v2_oneofs_follow_what_the_object_says() {
    let json = br##"{"swagger":"2.0","paths":{"/a":{"parameters":[
        {"$ref":"#/parameters/p"},
        {"in":"body","name":"b","schema":{"type":"object"}},
        {"in":"query","name":"q","type":"string"}]}}}"##;
    let f = fields(&openapi_v2(json).unwrap());
    let paths = fields(bytes_of(&f[1]));
    let item = fields(bytes_of(&fields(bytes_of(&paths[0]))[1]));
    // The field numbers of the first `depth` single-field wrappers.
    let chain = |p: &F, depth: usize| {
        let mut numbers = Vec::new();
        let mut inner = fields(bytes_of(p));
        for _ in 0..depth {
            let [F::Bytes(n, b)] = &inner[..] else { panic!("one field: {inner:?}") };
            numbers.push(*n);
            inner = fields(b);
        }
        numbers
    };
    let kinds = [chain(&item[0], 1), chain(&item[1], 2), chain(&item[2], 3)];
    // JsonReference; Parameter → BodyParameter; Parameter → NonBody → Query.
    assert_eq!(kinds, [vec![2], vec![1, 1], vec![1, 2, 3]]);
}

#[test]
fn v3_references_and_schemas_are_told_apart_by_ref() {
    let json = br##"{"openapi":"3.0.0","components":{"schemas":{
        "A":{"$ref":"#/components/schemas/B"},"B":{"type":"object","default":{}}}}}"##;
    let f = fields(&openapi_v3(json).unwrap());
    let schemas = fields(bytes_of(&fields(bytes_of(&f[1]))[0]));
    let a = fields(bytes_of(&fields(bytes_of(&schemas[0]))[1]));
    assert!(matches!(a[..], [F::Bytes(2, _)]), "A is a Reference: {a:?}");
    let b = fields(bytes_of(&fields(bytes_of(&schemas[1]))[1]));
    let schema = fields(bytes_of(&b[0]));
    // type (25), then an empty DefaultType (33) for `{}`, as gnostic.
    assert_eq!(schema, [string(25, "object"), F::Bytes(33, vec![])]);
}

#[test]
fn a_references_siblings_are_left_out() {
    let json = br##"{"openapi":"3.0.0","components":{"schemas":{"A":{"properties":{"m":
        {"$ref":"#/components/schemas/B","description":"d","default":{}}}}}}}"##;
    let pb = openapi_v3(json).unwrap();
    // The only field at each step, then the value of a Named pair.
    let only = |b: &[u8]| fields(b).into_iter().next().unwrap();
    let value = |b: &[u8]| fields(b).into_iter().nth(1).unwrap();
    let components = fields(&pb).into_iter().nth(1).unwrap(); // after `openapi`
    let schemas = only(bytes_of(&components)); // → schemas
    let a = value(bytes_of(&only(bytes_of(&schemas)))); // → A's SchemaOrReference
    let properties = only(bytes_of(&only(bytes_of(&a)))); // → Schema → properties
    let m = value(bytes_of(&only(bytes_of(&properties)))); // → m's SchemaOrReference
    let at = fields(bytes_of(&m));
    assert!(matches!(at[..], [F::Bytes(2, _)]), "a Reference: {at:?}");
    assert_eq!(
        fields(bytes_of(&at[0])),
        [string(1, "#/components/schemas/B"), string(3, "d")],
        "a Reference of $ref and description"
    );
}

#[test]
fn v3_default_scalars_fill_the_default_type_oneof() {
    let json = br#"{"openapi":"3.0.0","components":{"schemas":{"A":{"default":0}}}}"#;
    let pb = openapi_v3(json).unwrap();
    // …DefaultType{number = 0.0}: written although it is the default.
    assert!(pb.windows(11).any(|w| w == [0x8a, 0x02, 0x09, 0x09, 0, 0, 0, 0, 0, 0, 0]));
}

#[test]
fn an_unknown_property_is_refused_with_where_it_is() {
    let err = openapi_v2(br#"{"swagger":"2.0","definitions":{"A~/":{"bogus":1}}}"#).unwrap_err();
    let ProtoError::Unencodable { at, problem } = err else { panic!("{err:?}") };
    assert_eq!(at, "/definitions/A~0~1");
    assert_eq!(problem, Problem::UnknownProperty { message: "Schema", key: "bogus".into() });
}

#[test]
fn a_value_of_the_wrong_type_is_refused() {
    let err = openapi_v3(br#"{"openapi":"3.0.0","info":{"title":["t"]}}"#).unwrap_err();
    let ProtoError::Unencodable { at, problem } = err else { panic!("{err:?}") };
    assert_eq!(at, "/info/title");
    assert!(matches!(problem, Problem::WrongType { message: "Info", .. }));
    assert!(matches!(openapi_v2(b"{"), Err(ProtoError::Syntax(_))));
    assert!(openapi_v2(b"[]").is_err());
}

/// How many `Named…` entries field `path_field` of the message in field
/// `paths_field` holds.
fn count_named_paths(pb: &[u8], paths_field: u32, path_field: u32) -> usize {
    let f = fields(pb);
    let paths = f.iter().find(|x| matches!(x, F::Bytes(n, _) if *n == paths_field)).unwrap();
    fields(bytes_of(paths))
        .iter()
        .filter(|x| matches!(x, F::Bytes(n, _) if *n == path_field))
        .count()
}

#[test]
fn kubernetes_1_35_swagger_encodes_with_every_path() {
    let json =
        std::fs::read(crate::testkit::testdata::path("kubernetes-1.35/swagger.json")).unwrap();
    let pb = openapi_v2(&json).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(count_named_paths(&pb, 8, 2), value["paths"].as_object().unwrap().len());
}

#[test]
fn every_document_converted_from_kubernetes_1_35_encodes() {
    let json =
        std::fs::read(crate::testkit::testdata::path("kubernetes-1.35/swagger.json")).unwrap();
    let docs = swagger_to_openapi(&json, None, Budget::UNLIMITED, |b| b).unwrap();
    assert!(docs.documents.len() > 50);
    for (key, doc) in &docs.documents {
        let pb = openapi_v3(doc).unwrap_or_else(|e| panic!("{key}: {e}"));
        let value: serde_json::Value = serde_json::from_slice(doc).unwrap();
        assert_eq!(count_named_paths(&pb, 4, 1), value["paths"].as_object().unwrap().len());
    }
}

#[test]
fn the_same_json_gives_the_same_bytes() {
    let json = br#"{"swagger":"2.0","x-a":{"b":[1,2]},"info":{"title":"t"}}"#;
    assert_eq!(openapi_v2(json).unwrap(), openapi_v2(json).unwrap());
}

#[test]
fn prost_reads_what_the_tables_write() {
    // A prost message with Document's first fields: the wire format, read
    // by the crate the message types would use.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Head {
        #[prost(string, tag = "1")]
        swagger: String,
        #[prost(string, tag = "3")]
        host: String,
    }
    let pb = openapi_v2(br#"{"swagger":"2.0","host":"example"}"#).unwrap();
    let head = Head::decode(&pb[..]).unwrap();
    assert_eq!((head.swagger.as_str(), head.host.as_str()), ("2.0", "example"));
}

mod arbitrary {
    use proptest::prelude::*;

    use super::super::*;

    /// JSON built from the keys the tables know and a few they do not.
    fn json() -> impl Strategy<Value = serde_json::Value> {
        let keys = prop::sample::select(vec![
            "swagger",
            "openapi",
            "info",
            "title",
            "paths",
            "/a",
            "get",
            "parameters",
            "in",
            "body",
            "schema",
            "type",
            "items",
            "properties",
            "additionalProperties",
            "$ref",
            "default",
            "enum",
            "x-k",
            "definitions",
            "components",
            "schemas",
            "responses",
            "200",
            "allOf",
            "maxLength",
            "bogus",
        ]);
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(serde_json::Value::from),
            "[a-z]{0,3}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                prop::collection::vec((keys.clone(), inner), 0..5).prop_map(|members| {
                    serde_json::Value::Object(
                        members.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
                    )
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_json_encodes_or_is_refused_and_never_panics(value in json()) {
            let bytes = serde_json::to_vec(&value).unwrap();
            for encode in [openapi_v2, openapi_v3] {
                if let Ok(pb) = encode(&bytes) {
                    prop_assert_eq!(encode(&bytes).unwrap(), pb);
                }
            }
        }
    }
}

#[test]
fn kubernetes_1_24_published_v3_documents_encode() {
    let dir = crate::testkit::testdata::path("kube-openapi/pkg/util/proto/testdata/openapi_v3_0_0");
    for file in ["v1.json", "apps/v1.json", "batch/v1.json", "apiextensions.k8s.io/v1.json"] {
        let json = std::fs::read(dir.join(file)).unwrap();
        let pb = openapi_v3(&json).unwrap_or_else(|e| {
            panic!("{file}: {e}: {:?}", std::error::Error::source(&e).map(ToString::to_string))
        });
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(count_named_paths(&pb, 4, 1), value["paths"].as_object().unwrap().len());
    }
}
