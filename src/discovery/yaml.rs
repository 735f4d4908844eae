//! Discovery as YAML (`application/yaml`), written the way kube-apiserver's
//! YAML serializer writes it (docs/wire.md#a-12): the JSON form converted
//! to YAML, mapping keys sorted (sigs.k8s.io/yaml goes through a Go map,
//! and go-yaml writes map keys sorted; discovery's keys are all ASCII
//! letters, for which its order is byte order), block style, two-space
//! indentation, sequences in a mapping not indented.
//!
//! An aggregated list is joined from one item per group ([`list_item`]),
//! as its JSON and protobuf forms are: the items of the top-level `items`
//! sequence stand at column 0, so an item's YAML only needs its `- `.

use serde_json::Value;

/// Why a body has no YAML form.
#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    /// The JSON form does not parse (a body we did not write ourselves).
    #[error("the JSON form does not parse")]
    Json(#[from] serde_json::Error),
    /// The YAML emitter failed.
    #[error("writing YAML")]
    Yaml(#[from] serde_yaml_ng::Error),
}

/// `value` with every object's keys sorted.
fn sorted(mut value: Value) -> Value {
    sort_in_place(&mut value);
    value
}

fn sort_in_place(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.sort_keys();
            for v in map.values_mut() {
                sort_in_place(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sort_in_place),
        _ => {}
    }
}

/// A JSON value as YAML, keys sorted.
///
/// # Errors
/// When the emitter fails ([`YamlError::Yaml`]).
pub fn from_value(value: Value) -> Result<String, YamlError> {
    Ok(serde_yaml_ng::to_string(&sorted(value))?)
}

/// A JSON body as YAML, keys sorted.
///
/// # Errors
/// When `json` does not parse, or the emitter fails.
pub fn from_json(json: &[u8]) -> Result<String, YamlError> {
    from_value(serde_json::from_slice(json)?)
}

/// One item of a top-level block sequence: `yaml` (a whole document)
/// behind `- `, its further lines indented by two spaces.
#[must_use]
pub fn list_item(yaml: &str) -> String {
    let mut out = String::with_capacity(yaml.len() + yaml.len() / 8);
    for (i, line) in yaml.lines().enumerate() {
        out.push_str(if i == 0 {
            "- "
        } else if line.is_empty() {
            ""
        } else {
            "  "
        });
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_are_sorted_and_sequences_are_not_indented() {
        let yaml = from_value(json!({"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [{"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                        "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]}))
        .unwrap();
        assert_eq!(
            yaml,
            "apiVersion: v1\ngroups:\n- name: apps\n  preferredVersion:\n    groupVersion: apps/v1\n    \
             version: v1\n  versions:\n  - groupVersion: apps/v1\n    version: v1\nkind: APIGroupList\n"
        );
    }

    #[test]
    fn empty_collections_nulls_and_ambiguous_strings_survive() {
        let value = json!({"metadata": {}, "items": [], "verbs": null, "name": "", "v": "true",
                           "n": "1", "s": "a: b"});
        let yaml = from_value(value.clone()).unwrap();
        let back: Value = serde_yaml_ng::from_str(&yaml).unwrap();
        assert_eq!(back, value, "{yaml}");
        assert!(yaml.contains("metadata: {}\n") && yaml.contains("items: []\n"), "{yaml}");
    }

    #[test]
    fn list_items_join_into_the_list() {
        let a = json!({"metadata": {"name": "a"}, "versions": [{"version": "v1"}]});
        let b = json!({"metadata": {}, "versions": [{"version": "v2", "freshness": "Stale"}]});
        let joined = format!(
            "apiVersion: x\nitems:\n{}{}kind: L\n",
            list_item(&from_value(a.clone()).unwrap()),
            list_item(&from_value(b.clone()).unwrap())
        );
        let back: Value = serde_yaml_ng::from_str(&joined).unwrap();
        assert_eq!(back, json!({"apiVersion": "x", "items": [a, b], "kind": "L"}), "{joined}");
        assert_eq!(
            joined,
            from_value(json!({"apiVersion": "x", "items": [
            {"metadata": {"name": "a"}, "versions": [{"version": "v1"}]},
            {"metadata": {}, "versions": [{"version": "v2", "freshness": "Stale"}]}], "kind": "L"}))
            .unwrap()
        );
    }
}
