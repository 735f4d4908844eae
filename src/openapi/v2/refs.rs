//! `$ref`s of a Swagger 2.0 tree: reading the local ones, rewriting them,
//! and comparing two schemas as Go's `reflect.DeepEqual` compares the
//! decoded structs (member order does not count).

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::json::pointer::{escape_token, unescape_token};
use crate::json::tree::{Node, Text};

/// Where a local reference points: the section (`definitions`,
/// `parameters`, …) and the unescaped name, for `#/<section>/<name>`.
pub(super) fn local(reference: &str) -> Option<(&str, Cow<'_, str>)> {
    let rest = reference.strip_prefix("#/")?;
    let (section, name) = rest.split_once('/')?;
    (!name.contains('/')).then(|| (section, unescape_token(name)))
}

/// Calls `f` with every `$ref` string under `node`.
pub(super) fn each<'n>(node: &'n Node<'_>, f: &mut dyn FnMut(&'n str)) {
    match node {
        Node::Object(o) => {
            for (k, v) in o {
                match v {
                    Node::String(s) if k.as_str() == "$ref" => f(s.as_str()),
                    _ => each(v, f),
                }
            }
        }
        Node::Array(items) => items.iter().for_each(|v| each(v, f)),
        _ => {}
    }
}

/// Replaces every `$ref` string under `node` for which `f` gives a new one.
pub(super) fn rewrite(node: &mut Node<'_>, f: &dyn Fn(&str) -> Option<String>) {
    match node {
        Node::Object(o) => {
            for (k, v) in o.iter_mut() {
                match v {
                    Node::String(s) if k.as_str() == "$ref" => {
                        if let Some(new) = f(s.as_str()) {
                            *s = Text::from(new);
                        }
                    }
                    _ => rewrite(v, f),
                }
            }
        }
        Node::Array(items) => items.iter_mut().for_each(|v| rewrite(v, f)),
        _ => {}
    }
}

/// Rewrites `#/<section>/<old>` to `#/<section>/<new>` for each section's
/// renames; a no-op when there are none.
pub(super) fn rename(node: &mut Node<'_>, renames: &BTreeMap<&str, BTreeMap<String, String>>) {
    if renames.values().all(BTreeMap::is_empty) {
        return;
    }
    rewrite(node, &|reference| {
        let (section, name) = local(reference)?;
        let to = renames.get(section)?.get(name.as_ref())?;
        Some(format!("#/{section}/{}", escape_token(to)))
    });
}

/// Whether `a` and `b` are the same JSON value, objects compared as maps.
pub(super) fn same(a: &Node<'_>, b: &Node<'_>) -> bool {
    match (a, b) {
        (Node::Object(x), Node::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| y.get(k.as_str()).is_some_and(|w| same(v, w)))
        }
        (Node::Array(x), Node::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        (Node::Number(x), Node::Number(y)) => x.to_json() == y.to_json(),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::tree::parse;

    #[test]
    fn objects_are_the_same_in_any_member_order() {
        let a = parse(br#"{"a":1,"b":[{"x":true,"y":null}]}"#).unwrap();
        let b = parse(br#"{"b":[{"y":null,"x":true}],"a":1}"#).unwrap();
        let c = parse(br#"{"b":[{"y":null,"x":false}],"a":1}"#).unwrap();
        assert!(same(&a, &b));
        assert!(!same(&a, &c));
    }

    #[test]
    fn renaming_rewrites_only_the_named_section() {
        let mut n = parse(
            br##"{"a":{"$ref":"#/definitions/X"},"b":[{"$ref":"#/parameters/X"}],"c":{"$ref":"#/definitions/Y"}}"##,
        )
        .unwrap();
        let renames = BTreeMap::from([(
            "definitions",
            BTreeMap::from([("X".to_owned(), "X_v2".to_owned())]),
        )]);
        rename(&mut n, &renames);
        assert_eq!(
            n.to_string(),
            r##"{"a":{"$ref":"#/definitions/X_v2"},"b":[{"$ref":"#/parameters/X"}],"c":{"$ref":"#/definitions/Y"}}"##
        );
    }
}
