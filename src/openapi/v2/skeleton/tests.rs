use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::json::tree::parse;
use crate::openapi::v2::merge::{Source, merge};

/// Merges `docs` (downstream name, Swagger 2.0 JSON) whole, as the merge
/// always did, and again through stand-ins with each real member put
/// back from its document: the two must be the same bytes.
fn both_ways(docs: &[(&str, &str)], owners: &BTreeMap<String, Arc<str>>) -> (Vec<u8>, Vec<u8>) {
    let trees: Vec<Node<'_>> = docs.iter().map(|(_, d)| parse(d.as_bytes()).unwrap()).collect();
    let whole = merge(
        docs.iter().zip(&trees).map(|((n, _), t)| Source::new(*n, t.clone()).unwrap()).collect(),
        owners,
    )
    .unwrap();
    let mut expected = Vec::new();
    whole.doc.render(&mut expected);

    let stand_ins = merge(
        docs.iter()
            .zip(&trees)
            .map(|((n, _), t)| Source::new(*n, skeleton(t, &mut Strings::default())).unwrap())
            .collect(),
        owners,
    )
    .unwrap();
    let Node::Object(top) = &stand_ins.doc else { panic!("an object") };
    let mut out = b"{".to_vec();
    for (i, (key, value)) in top.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let section = match key.as_str() {
            "definitions" => Some(&stand_ins.provenance.definitions),
            _ => None,
        };
        match (key.as_str(), value) {
            ("definitions" | "paths", Node::Object(members)) => {
                out.extend_from_slice(b"\"");
                out.extend_from_slice(key.as_bytes());
                out.extend_from_slice(b"\":{");
                for (j, (name, stand_in)) in members.iter().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    let (source, real) = match section {
                        Some(origins) => {
                            let (i, from) = &origins[name.as_str()];
                            (*i, trees[*i].get("definitions").unwrap().get(from).unwrap())
                        }
                        None => {
                            let i = stand_ins.provenance.paths[name.as_str()];
                            (i, trees[i].get("paths").unwrap().get(name.as_str()).unwrap())
                        }
                    };
                    let renames = [&stand_ins.provenance.renames[source]];
                    let put_back = restore(real.clone(), section.map(|_| stand_in), &renames);
                    member(name.as_str(), &put_back, &mut out);
                }
                out.push(b'}');
            }
            _ => member(key.as_str(), value, &mut out),
        }
    }
    out.push(b'}');
    (expected, out)
}

/// Renames on a clash, identical definitions kept once (whatever their
/// member order), the references to a renamed one rewritten, kinds kept
/// on the owner's definition: the stand-ins merge as the documents do.
#[test]
fn merging_stand_ins_gives_the_same_document() {
    let a = r##"{"swagger":"2.0","info":{"title":"a"},"paths":{
        "/apis/x.io/v1/foos":{"get":{"responses":{"200":{"schema":{"$ref":"#/definitions/io.x.v1.Foo"}}}}},
        "/version/":{"get":{}}},
      "definitions":{
        "io.x.v1.Foo":{"type":"object","properties":{"meta":{"$ref":"#/definitions/Meta"}},
          "x-kubernetes-group-version-kind":[{"group":"x.io","version":"v1","kind":"Foo"}]},
        "Meta":{"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer","maximum":10}}},
        "Shared":{"a":1,"b":[1,2]}},
      "parameters":{"body":{"name":"body","in":"body"}}}"##;
    let b = r##"{"swagger":"2.0","info":{"title":"b"},"paths":{
        "/apis/x.io/v1/foos":{"get":{}},
        "/apis/y.io/v1/bars":{"get":{"responses":{"200":{"schema":{"$ref":"#/definitions/Meta"}}}}}},
      "definitions":{
        "Meta":{"type":"object","properties":{"other":{"type":"string"}}},
        "Shared":{"b":[1,2],"a":1.0},
        "io.y.v1.Bar":{"properties":{"m":{"$ref":"#/definitions/Meta"},"$ref":{"type":"string"}},
          "x-kubernetes-group-version-kind":[{"group":"y.io","version":"v1","kind":"Bar"},
            {"group":"x.io","version":"v1","kind":"Foo"}]}},
      "parameters":{"body":{"name":"body","in":"query"}}}"##;
    let owners = BTreeMap::from([
        ("apis/x.io/v1".to_owned(), Arc::from("a")),
        ("apis/y.io/v1".to_owned(), Arc::from("b")),
    ]);
    let (expected, got) = both_ways(&[("a", a), ("b", b)], &owners);
    let text = String::from_utf8(got.clone()).unwrap();
    assert!(text.contains("Meta_v2"), "the clash is renamed: {text}");
    assert_eq!(String::from_utf8(expected).unwrap(), text);
}

/// Two definitions that differ only in a reference are different, and
/// two that differ only in member order are the same.
#[test]
fn stand_ins_are_equal_exactly_when_definitions_are() {
    let stand_in =
        |json: &str| definition(&parse(json.as_bytes()).unwrap(), &mut Strings::default());
    let same = |a: &str, b: &str| refs::same(&stand_in(a), &stand_in(b));
    assert!(same(r#"{"a":1,"b":{"c":[true,null]}}"#, r#"{"b":{"c":[true,null]},"a":1}"#));
    assert!(!same(r#"{"a":[1,2]}"#, r#"{"a":[2,1]}"#));
    assert!(!same(
        r##"{"x":{"$ref":"#/definitions/A"}}"##,
        r##"{"x":{"$ref":"#/definitions/B"}}"##
    ));
    assert!(!same(
        r##"{"x":{"$ref":"#/definitions/A"},"y":{"$ref":"#/definitions/B"}}"##,
        r##"{"x":{"$ref":"#/definitions/B"},"y":{"$ref":"#/definitions/A"}}"##
    ));
    assert!(same(
        r##"{"y":{"$ref":"#/definitions/B"},"x":{"$ref":"#/definitions/A"}}"##,
        r##"{"x":{"$ref":"#/definitions/A"},"y":{"$ref":"#/definitions/B"}}"##
    ));
    assert!(!same(r#"{"a":"1"}"#, r#"{"a":1}"#));
    assert!(!same(
        r#"{"x-kubernetes-group-version-kind":[{"kind":"A"}]}"#,
        r#"{"x-kubernetes-group-version-kind":[{"kind":"B"}]}"#
    ));
}

/// A stand-in owns its text: the document's bytes can go.
#[test]
fn a_skeleton_outlives_its_document() {
    let bytes = br##"{"swagger":"2.0","definitions":{"A":{"$ref":"#/definitions/B"}},"paths":{"/x":{}},"info":{"n":18446744073709551616}}"##.to_vec();
    let doc = parse(&bytes).unwrap();
    let kept = skeleton(&doc, &mut Strings::default());
    drop(doc);
    drop(bytes);
    let mut out = Vec::new();
    kept.get("info").unwrap().render(&mut out);
    assert_eq!(out, br#"{"n":18446744073709551616}"#);
    let refs: Vec<&str> = {
        let mut v = Vec::new();
        refs::each(kept.get("definitions").unwrap(), &mut |r| v.push(r));
        v
    };
    assert_eq!(refs, ["#/definitions/B"]);
}
