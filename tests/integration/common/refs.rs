//! `$ref` closure: the invariant every document we publish must keep.

use serde_json::Value;

/// The local `$ref`s of `doc` (`#/…`) that do not resolve inside `doc`.
pub fn dangling_refs(doc: &Value) -> Vec<String> {
    fn walk(v: &Value, root: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref")
                    && let Some(p) = r.strip_prefix('#')
                    && root.pointer(p).is_none()
                {
                    out.push(r.clone());
                }
                m.values().for_each(|v| walk(v, root, out));
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, root, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(doc, doc, &mut out);
    out
}
