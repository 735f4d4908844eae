//! `$ref`s of a JSON document: where they are and which resolve. The
//! invariant every document published must keep (closure under `$ref`), in
//! one place for the tests and for `openapi-proxy check`.

use serde_json::Value;

use crate::json::pointer::{escape_token, fragment_pointer};

/// Calls `f` with every object of `doc` and its JSON pointer, parents
/// before children, in document order.
pub fn for_each_object(doc: &Value, f: &mut dyn FnMut(&str, &serde_json::Map<String, Value>)) {
    fn walk(v: &Value, at: &mut String, f: &mut dyn FnMut(&str, &serde_json::Map<String, Value>)) {
        let children: Box<dyn Iterator<Item = (String, &Value)>> = match v {
            Value::Object(m) => {
                f(at, m);
                Box::new(m.iter().map(|(k, v)| (escape_token(k).into_owned(), v)))
            }
            Value::Array(a) => Box::new(a.iter().enumerate().map(|(i, v)| (i.to_string(), v))),
            _ => return,
        };
        for (token, v) in children {
            let len = at.len();
            at.push('/');
            at.push_str(&token);
            walk(v, at, f);
            at.truncate(len);
        }
    }
    walk(doc, &mut String::new(), f);
}

/// Every `$ref` whose value is a string, with the JSON pointer of the object
/// holding it, in document order. A `$ref` whose value is not a string is
/// not a reference (e.g. a property named `$ref` in a schema's
/// `properties`) and is walked into instead.
#[must_use]
pub fn all_refs(doc: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for_each_object(doc, &mut |at, m| {
        if let Some(Value::String(r)) = m.get("$ref") {
            out.push((at.to_owned(), r.clone()));
        }
    });
    out
}

/// The local `$ref`s of `doc` (`#/…`) that do not resolve inside `doc`.
/// The fragment is percent-decoded before it is read as a JSON pointer
/// (RFC 6901 §6), as the converter writes names that need it encoded.
///
/// Only `#/…` references are this function's: they are the ones the
/// splitter follows and keeps closed. A reference to another document
/// (`other.json#/x`) or with a fragment that is no JSON pointer
/// (`#anchor/…`) can resolve in no split document; the converter keeps
/// such references as written, with a note (`external-ref`, or
/// `dangling-ref` inside a vendor extension), and reporting them here made
/// every document holding one look unclosed.
#[must_use]
pub fn dangling_refs(doc: &Value) -> Vec<String> {
    all_refs(doc)
        .into_iter()
        .filter(|(_, r)| r.starts_with("#/") && !resolves(doc, r))
        .map(|(_, r)| r)
        .collect()
}

/// True when `reference` is local (`#…`) and its fragment, percent-decoded,
/// is a JSON pointer to something in `doc`.
fn resolves(doc: &Value, reference: &str) -> bool {
    reference
        .strip_prefix('#')
        .and_then(fragment_pointer)
        .is_some_and(|p| doc.pointer(&p).is_some())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn finds_dangling_local_refs_and_skips_properties_named_ref() {
        let doc = json!({
            "components": {"schemas": {"A": {"properties": {
                "$ref": {"type": "string"},
                "b": {"$ref": "#/components/schemas/B"},
                "a": {"$ref": "#/components/schemas/A"},
            }}}}
        });
        assert_eq!(dangling_refs(&doc), ["#/components/schemas/B"]);
        assert_eq!(all_refs(&doc)[0].0, "/components/schemas/A/properties/b");
    }

    // Found by fuzzing (convert_split, seed 1): a `$ref` of
    // `!/definitions/…` is no local reference; the converter keeps it with
    // an `external-ref` note, and the oracle counted it as dangling.
    #[test]
    fn references_to_other_documents_are_not_dangling_local_refs() {
        let doc = json!({"a": {"$ref": "!/definitions/A"}, "b": {"$ref": "other.json#/B"},
                         "c": {"$ref": "#/nowhere"}});
        assert_eq!(dangling_refs(&doc), ["#/nowhere"]);
    }

    #[test]
    fn percent_encoded_fragments_resolve_once_decoded() {
        let doc = json!({
            "components": {"schemas": {"A B": {"properties": {
                "c": {"$ref": "#/components/schemas/A%20B"},
                "d": {"$ref": "#/components/schemas/A B"},
                "e": {"$ref": "#/components/schemas/A%2"},
            }}}}
        });
        assert_eq!(dangling_refs(&doc), ["#/components/schemas/A%2"]);
    }

    // Found by fuzzing convert_split: `#keyPassword/definitions/Other`, kept
    // in an extension with a note, is no reference the splitter follows.
    #[test]
    fn only_json_pointer_references_are_checked() {
        let doc = json!({"x-a": [
            {"$ref": "#keyPassword/definitions/Other"},
            {"$ref": "other.json#/definitions/X"},
            {"$ref": "#/definitions/Missing"},
        ]});
        assert_eq!(dangling_refs(&doc), ["#/definitions/Missing"]);
    }
}
