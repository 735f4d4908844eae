//! `$ref`s of a JSON document: where they are and which resolve. The
//! invariant every document published must keep (closure under `$ref`), in
//! one place for the tests and for `openapi-proxy check`.

use serde_json::Value;

/// Every `$ref` whose value is a string, with the JSON pointer of the object
/// holding it, in document order. A `$ref` whose value is not a string is
/// not a reference (e.g. a property named `$ref` in a schema's
/// `properties`) and is walked into instead.
#[must_use]
pub fn all_refs(doc: &Value) -> Vec<(String, String)> {
    fn walk(v: &Value, at: &mut String, out: &mut Vec<(String, String)>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push((at.clone(), r.clone()));
                }
                for (k, v) in m {
                    let len = at.len();
                    at.push('/');
                    at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    walk(v, at, out);
                    at.truncate(len);
                }
            }
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    let len = at.len();
                    at.push('/');
                    at.push_str(&i.to_string());
                    walk(v, at, out);
                    at.truncate(len);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(doc, &mut String::new(), &mut out);
    out
}

/// The local `$ref`s of `doc` (`#/…`) that do not resolve inside `doc`.
#[must_use]
pub fn dangling_refs(doc: &Value) -> Vec<String> {
    all_refs(doc)
        .into_iter()
        .filter(|(_, r)| r.strip_prefix('#').is_some_and(|p| doc.pointer(p).is_none()))
        .map(|(_, r)| r)
        .collect()
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
}
