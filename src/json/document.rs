//! Reading a document from bytes: JSON first, YAML when the bytes are not
//! JSON.
//!
//! Kubernetes serves JSON, but people feed the `convert` command files they
//! wrote by hand, and Swagger 2.0 documents are as often YAML as JSON. Both
//! end up as a `serde_json::Value` with the source's key order preserved.

use serde_json::Value;

use crate::json::tree::{self, Node};

/// Why bytes could not be read as a document.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Neither JSON nor YAML could read the bytes.
    #[error("not JSON (line {json_line}, column {json_column}: {json_message}) nor YAML")]
    Syntax {
        /// Line of the JSON syntax error.
        json_line: usize,
        /// Column of the JSON syntax error.
        json_column: usize,
        /// What the JSON parser said.
        json_message: String,
        /// What the YAML parser said.
        #[source]
        yaml: serde_yaml_ng::Error,
    },
    /// YAML parsed, but holds something JSON cannot (a non-string key, a
    /// non-finite number).
    #[error("YAML document cannot be represented as JSON")]
    NotJsonCompatible(#[source] serde_json::Error),
}

/// Parses `bytes` as JSON, or, failing that, as YAML.
///
/// JSON is tried first because it is what every Kubernetes server sends and
/// its parser is several times faster; a document that starts like JSON
/// (`{` or `[`) but fails is still offered to YAML, which accepts JSON-ish
/// flow syntax, so the error shown is the JSON one when both fail.
///
/// # Errors
/// [`ParseError::Syntax`] when neither parser accepts the bytes.
pub fn parse(bytes: &[u8]) -> Result<Value, ParseError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => Ok(v),
        Err(json) => {
            let yaml: Value = match serde_yaml_ng::from_slice::<serde_yaml_ng::Value>(bytes) {
                Ok(y) => serde_json::to_value(y).map_err(ParseError::NotJsonCompatible)?,
                Err(yaml) => {
                    return Err(ParseError::Syntax {
                        json_line: json.line(),
                        json_column: json.column(),
                        json_message: json.to_string(),
                        yaml,
                    });
                }
            };
            Ok(yaml)
        }
    }
}

/// Parses `bytes` as [`parse`] does, into a tree whose strings borrow from
/// `bytes` where they can: what the `convert` command and the proxy use,
/// since building a `Value` was a third of the command's time.
///
/// JSON goes through the tree parser, which reads exactly what
/// `serde_json` reads; anything it refuses (YAML, or JSON it has no fast
/// path for) goes through [`parse`], so the result and the errors are
/// always [`parse`]'s.
///
/// # Errors
/// As [`parse`].
pub fn parse_tree(bytes: &[u8]) -> Result<Node<'_>, ParseError> {
    match tree::parse(bytes) {
        Ok(node) => Ok(node),
        Err(_) => parse(bytes).map(Node::from_owned_value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_key_order() {
        let v = parse(br#"{"b":1,"a":2}"#).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["b", "a"]);
    }

    #[test]
    fn yaml_is_accepted() {
        let v = parse(b"swagger: '2.0'\ninfo:\n  title: t\n").unwrap();
        assert_eq!(v["swagger"], "2.0");
        assert_eq!(v["info"]["title"], "t");
    }

    #[test]
    fn tree_parsing_gives_the_same_document_for_json_and_yaml() {
        for bytes in
            [&br#"{"b":1,"a":[2.5,"x"]}"#[..], b"swagger: '2.0'\ninfo:\n  title: t\n", b"{a: 1}"]
        {
            let tree = parse_tree(bytes).unwrap();
            assert_eq!(tree.to_value(), parse(bytes).unwrap());
        }
        assert!(matches!(parse_tree(b"{\"a\": [1, 2"), Err(ParseError::Syntax { .. })));
    }

    #[test]
    fn garbage_is_a_syntax_error() {
        let e = parse(b"{\"a\": [1, 2").unwrap_err();
        assert!(matches!(e, ParseError::Syntax { .. }), "{e:?}");
    }
}
