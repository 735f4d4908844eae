//! Reading a document from bytes.
//!
//! Downstream servers are Kubernetes-style servers and serve JSON, so what
//! they send is read as JSON and nothing else ([`parse_json_tree_within`]): broken
//! JSON is an error, never retried as YAML (which would accept it as
//! something else, at many times the cost). YAML is for what a person hands
//! the `convert` command ([`parse_tree`], [`parse`]): Swagger 2.0 files are
//! as often YAML as JSON. It is read under an expansion budget (see
//! [`yaml`]). Either way the result keeps the source's
//! key order.
//!
//! A person's file that looks like JSON but is not (a trailing comma, a
//! comment) is read again as YAML, whose flow style is a superset of JSON
//! that allows those: swagger-parser reads `.json` files the same way, so
//! refusing them refused documents every other tool takes (a Kubernetes
//! test fixture with trailing commas, BENCHMARKS.md#registry-corpus). The
//! JSON error is kept for the caller to report ([`Reading::JsonAsYaml`]),
//! and when YAML cannot read the bytes either, it is the JSON error that is
//! returned: for a truncated JSON file it is the one that explains.

use serde_json::Value;

use crate::json::tree::{self, Node, SyntaxError, SyntaxErrorKind};
use crate::json::yaml::{self, YamlError};

/// Why bytes could not be read as a document.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Nothing but blanks (or nothing at all): said as such, rather than
    /// as a syntax error at line 1, column 1 or a top level that is no
    /// object.
    #[error("empty document")]
    Empty,
    /// Not JSON (and the bytes were to be JSON: from a downstream, or
    /// starting with `{` or `[`).
    #[error("not JSON: {kind} at line {line}, column {column}")]
    Json {
        /// Line of the problem, from 1.
        line: usize,
        /// Column of the problem, from 1, in bytes.
        column: usize,
        /// What is wrong.
        kind: SyntaxErrorKind,
    },
    /// JSON with more values than the memory it may take allows.
    #[error("the document has more than {limit} values, more than its memory budget allows")]
    TooLarge {
        /// The most values allowed.
        limit: usize,
    },
    /// Not YAML, or YAML that JSON cannot hold, or YAML that expands past
    /// its budget.
    #[error("not a YAML document JSON can hold")]
    Yaml(#[source] YamlError),
}

impl ParseError {
    fn json(bytes: &[u8], e: &SyntaxError, limit: usize) -> Self {
        if e.kind == SyntaxErrorKind::TooManyValues {
            return Self::TooLarge { limit };
        }
        let before = &bytes[..e.offset.min(bytes.len())];
        let line = before.iter().filter(|b| **b == b'\n').count() + 1;
        let column = before.iter().rev().take_while(|b| **b != b'\n').count() + 1;
        Self::Json { line, column, kind: e.kind }
    }
}

/// What reading a document and converting it hold per value, worst case:
/// the parsed tree's 32-byte node, the parser's stack growing by doubling,
/// and the converted tree built beside it. A memory budget divided by this
/// is how many values a document may have.
pub const BYTES_PER_VALUE: usize = 128;

/// Reads a body a downstream served: JSON only, into a tree borrowing its
/// strings from `bytes`, within a memory budget of `budget_bytes`. Cost and
/// memory are linear in the input, and nesting is limited (127 levels, as
/// `serde_json`); a document of more than `budget_bytes / BYTES_PER_VALUE`
/// values is refused as it is read, before its tree outgrows the budget.
///
/// # Errors
/// [`ParseError::Empty`] for blanks only; [`ParseError::Json`];
/// [`ParseError::TooLarge`] past the budget.
pub fn parse_json_tree_within(bytes: &[u8], budget_bytes: usize) -> Result<Node<'_>, ParseError> {
    let bytes = without_bom(bytes);
    if bytes.trim_ascii().is_empty() {
        return Err(ParseError::Empty);
    }
    let limit = budget_bytes / BYTES_PER_VALUE;
    tree::parse_within(bytes, limit).map_err(|e| ParseError::json(bytes, &e, limit))
}

/// `bytes` without a leading UTF-8 byte order mark. Editors on Windows
/// write one, and Azure's specifications carry it (52 of the registry
/// corpus' valid inputs were refused for it, BENCHMARKS.md#real-world-swagger);
/// RFC 8259 section 8.1 lets a parser ignore it, and swagger-parser and
/// swagger2openapi do. Errors then count columns as an editor shows them.
fn without_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// Whether `bytes` say they are JSON: their first non-blank byte opens an
/// object or an array. Such bytes are read as JSON only, so a truncated or
/// mangled JSON file gets the JSON error that explains it, not a YAML one.
fn looks_like_json(bytes: &[u8]) -> bool {
    matches!(without_bom(bytes).iter().find(|b| !b.is_ascii_whitespace()), Some(b'{' | b'['))
}

/// Reads a document a person gave: JSON when it looks like JSON, YAML
/// otherwise (under the expansion budget of `yaml::budget_for`).
///
/// # Errors
/// [`ParseError`] saying which reading failed.
pub fn parse(bytes: &[u8]) -> Result<Value, ParseError> {
    parse_tree(bytes).map(|tree| tree.to_value())
}

/// Reads a document a person gave, as [`parse`] does, into a tree whose
/// strings borrow from `bytes` where they can (building a `Value` was a
/// third of the `convert` command's time).
///
/// # Errors
/// As [`parse`].
pub fn parse_tree(bytes: &[u8]) -> Result<Node<'_>, ParseError> {
    parse_tree_within(bytes, usize::MAX).map(|(tree, _)| tree)
}

/// How a person's document was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// As JSON.
    Json,
    /// As YAML: it did not look like JSON.
    Yaml,
    /// It looked like JSON but was not; read as YAML.
    JsonAsYaml {
        /// Why it is not JSON, as [`ParseError::Json`] says it.
        json_error: String,
    },
}

/// [`parse_tree`] with JSON read within a memory budget of `budget_bytes`
/// (as [`parse_json_tree_within`]); YAML stays under its expansion budget,
/// which is linear in the input. Says how the bytes were read: a caller
/// reports JSON that had to be read as YAML.
///
/// # Errors
/// As [`parse`]; [`ParseError::TooLarge`] past the budget.
pub fn parse_tree_within(
    bytes: &[u8],
    budget_bytes: usize,
) -> Result<(Node<'_>, Reading), ParseError> {
    parse_tree_noting_refs(bytes, budget_bytes).map(|(tree, reading, _)| (tree, reading))
}

/// [`parse_tree_within`], also saying whether the document may refer to
/// other files: `false` when it was read as JSON and no `$ref` in it holds
/// anything but a local reference (`#…`), found as it was read; `true`
/// otherwise (YAML is not looked into here), and the caller looks.
///
/// # Errors
/// As [`parse_tree_within`].
pub fn parse_tree_noting_refs(
    bytes: &[u8],
    budget_bytes: usize,
) -> Result<(Node<'_>, Reading, bool), ParseError> {
    if without_bom(bytes).trim_ascii().is_empty() {
        return Err(ParseError::Empty);
    }
    let read_yaml = |bytes| yaml::from_slice(bytes, yaml::budget_for(bytes.len()));
    if !looks_like_json(bytes) {
        let bytes = without_bom(bytes);
        return read_yaml(bytes).map(|tree| (tree, Reading::Yaml, true)).map_err(ParseError::Yaml);
    }
    let json = without_bom(bytes);
    let limit = budget_bytes / BYTES_PER_VALUE;
    match tree::parse_noting_refs(json, limit).map_err(|e| ParseError::json(json, &e, limit)) {
        Ok((tree, other_refs)) => Ok((tree, Reading::Json, other_refs)),
        // Over the budget or the nesting limit: YAML would only take longer
        // to say the same.
        Err(e @ ParseError::Json { kind: SyntaxErrorKind::TooDeep, .. }) => Err(e),
        Err(e @ ParseError::Json { .. }) => match read_yaml(without_bom(bytes)) {
            Ok(tree) => Ok((tree, Reading::JsonAsYaml { json_error: e.to_string() }, true)),
            Err(_) => Err(e),
        },
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_document_is_called_empty() {
        for bytes in [&b""[..], b"  \n\t", b"\xEF\xBB\xBF\n"] {
            assert!(matches!(parse(bytes), Err(ParseError::Empty)), "{bytes:?}");
            let e = parse_json_tree_within(bytes, 1 << 20).unwrap_err();
            assert_eq!(e.to_string(), "empty document");
        }
    }

    #[test]
    fn json_says_whether_a_reference_may_name_another_file() {
        let may = |bytes: &[u8]| parse_tree_noting_refs(bytes, usize::MAX).unwrap().2;
        assert!(!may(br##"{"a":{"$ref":"#/definitions/A"},"b":[{"$ref":"#"}]}"##));
        // A `$ref` that is no string, or a string that is no `$ref`.
        assert!(!may(br##"{"$ref":{"$ref":"#/x"},"x":"other.json"}"##));
        for bytes in [
            &br##"{"a":[{"b":{"$ref":"other.json#/A"}}]}"##[..],
            br##"{"$ref":"https://example.com/a.json"}"##,
            br##"{"a":{"$ref":""}}"##,
            br##"{"a":{"$ref":"a.json"}}"##,
            // YAML is not looked into while it is read.
            b"swagger: '2.0'\ninfo: {$ref: '#/x'}\n",
        ] {
            assert!(may(bytes), "{}", String::from_utf8_lossy(bytes));
        }
    }

    #[test]
    fn json_keeps_key_order() {
        let v = parse(br#"{"b":1,"a":2}"#).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["b", "a"]);
    }

    #[test]
    fn yaml_is_accepted_from_a_person() {
        let v = parse(b"swagger: '2.0'\ninfo:\n  title: t\n").unwrap();
        assert_eq!(v["swagger"], "2.0");
        assert_eq!(v["info"]["title"], "t");
    }

    #[test]
    fn tree_parsing_gives_the_same_document_for_json_and_yaml() {
        for bytes in [&br#"{"b":1,"a":[2.5,"x"]}"#[..], b"swagger: '2.0'\ninfo:\n  title: t\n"] {
            let tree = parse_tree(bytes).unwrap();
            assert_eq!(tree.to_value(), parse(bytes).unwrap());
        }
    }

    #[test]
    fn broken_json_that_yaml_cannot_read_either_is_a_json_error() {
        for bytes in [&b"{\"a\": [1, 2"[..], b"[1,\n2,,]", b"{\"a\": 1}}"] {
            let e = parse_tree(bytes).unwrap_err();
            assert!(matches!(e, ParseError::Json { .. }), "{e:?}");
        }
        let e = parse(b"{\"a\":\n  [1, 2").unwrap_err();
        assert_eq!(e.to_string(), "not JSON: unexpected end of input at line 2, column 8");
    }

    #[test]
    fn json_with_trailing_commas_is_read_as_yaml_and_says_so() {
        let bytes = b"{\n  \"swagger\": \"2.0\",\n  \"info\": {\"title\": \"t\",},\n}\n";
        let (tree, reading) = parse_tree_within(bytes, usize::MAX).unwrap();
        assert_eq!(tree.to_value(), serde_json::json!({"swagger": "2.0", "info": {"title": "t"}}));
        assert_eq!(
            reading,
            Reading::JsonAsYaml {
                json_error: "not JSON: unexpected character at line 3, column 25".into()
            }
        );
        let (_, reading) = parse_tree_within(br#"{"a": 1}"#, usize::MAX).unwrap();
        assert_eq!(reading, Reading::Json);
        let (_, reading) = parse_tree_within(b"a: 1\n", usize::MAX).unwrap();
        assert_eq!(reading, Reading::Yaml);
    }

    #[test]
    fn json_past_its_budget_or_too_deep_is_not_retried_as_yaml() {
        let e = parse_tree_within(b"[1,2,3,]", 3 * BYTES_PER_VALUE).unwrap_err();
        assert!(matches!(e, ParseError::TooLarge { limit: 3 }), "{e:?}");
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let e = parse_tree_within(deep.as_bytes(), usize::MAX).unwrap_err();
        assert!(matches!(e, ParseError::Json { kind: SyntaxErrorKind::TooDeep, .. }), "{e:?}");
    }

    #[test]
    fn a_byte_order_mark_is_ignored_in_json_and_yaml() {
        let json = b"\xEF\xBB\xBF{\"swagger\":\"2.0\"}";
        assert_eq!(parse(json).unwrap()["swagger"], "2.0");
        assert!(parse_json_tree_within(json, usize::MAX).is_ok(), "from a downstream too");
        let yaml = b"\xEF\xBB\xBFswagger: '2.0'\ninfo:\n  title: t\n";
        assert_eq!(parse(yaml).unwrap()["info"]["title"], "t");
        let e = parse(b"\xEF\xBB\xBF{\"a\": [x}").unwrap_err();
        assert_eq!(e.to_string(), "not JSON: unexpected character at line 1, column 8");
    }

    #[test]
    fn downstream_bodies_are_json_only() {
        assert!(parse_json_tree_within(br#"{"swagger":"2.0"}"#, usize::MAX).is_ok());
        let e = parse_json_tree_within(b"swagger: '2.0'\n", usize::MAX).unwrap_err();
        assert!(matches!(e, ParseError::Json { line: 1, column: 1, .. }), "{e:?}");
    }

    #[test]
    fn deep_nesting_is_refused_in_linear_time() {
        // 100,000 levels: refused at the depth limit, not parsed further.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let e = parse_json_tree_within(deep.as_bytes(), usize::MAX).unwrap_err();
        assert!(matches!(e, ParseError::Json { kind: SyntaxErrorKind::TooDeep, .. }), "{e:?}");
    }

    #[test]
    fn a_token_dense_document_past_its_budget_is_refused_as_it_is_read() {
        // 3 values (the array, two numbers) fit in 3 × 128 bytes; 4 do not.
        assert!(parse_json_tree_within(b"[1,2]", 3 * BYTES_PER_VALUE).is_ok());
        let e = parse_json_tree_within(b"[1,2,3]", 3 * BYTES_PER_VALUE).unwrap_err();
        assert!(matches!(e, ParseError::TooLarge { limit: 3 }), "{e:?}");
        // Keys count: `{"a":1}` is three values.
        assert!(parse_json_tree_within(br#"{"a":1}"#, 2 * BYTES_PER_VALUE).is_err());
        // A truncated document is refused at the budget, not read to its end.
        let mut dense = b"{\"x\":[".to_vec();
        dense.extend(b"1,".repeat(1_000_000));
        let e = parse_json_tree_within(&dense, 1000 * BYTES_PER_VALUE).unwrap_err();
        assert!(matches!(e, ParseError::TooLarge { limit: 1000 }), "{e:?}");
    }

    #[test]
    fn a_yaml_alias_bomb_is_refused() {
        let items = vec!["a"; 10_000].join(", ");
        let uses = vec!["*a"; 10_000].join(", ");
        let text = format!("x-a: &a [{items}]\nx-b: [{uses}]\n");
        let e = parse(text.as_bytes()).unwrap_err();
        assert!(matches!(e, ParseError::Yaml(YamlError::TooLarge { .. })), "{e:?}");
    }
}
