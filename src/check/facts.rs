//! What a published OpenAPI document's body shows, taken as the body
//! arrives so that the body itself need not be kept.
//!
//! `check` used to keep every document it fetched and let each document
//! rule parse all of them again at once: against a server listing 100
//! documents of 30 MB the process grew to 6 GB. The rules need far less
//! than the bodies: a hash, whether the body is JSON and OpenAPI 3.0, the
//! spots that break the 3.0 shape or leave a `$ref` dangling, and the
//! group-version-kinds the schemas carry. [`BodyFacts::of`] takes exactly
//! that from one body — parsed once into the borrowing
//! tree of `json/tree.rs`, then once more as `openapiv3` — and
//! the body is dropped. What a rule reports is unchanged; only long lists
//! of findings within one document are cut at [`MAX_LISTED`].

use std::collections::BTreeSet;

use crate::body::digest::sha512_hex;
use crate::check::rules::truncate;
use crate::json::pointer::{escape_token, fragment_pointer};
use crate::json::tree::{Node, Object};

/// The most values of one document examined. The tree costs 32 bytes a
/// value (object keys count as values) whatever the body spells it in: a
/// 64 MB body of tiny members (`"a":{},`) is 18 million values, some
/// 600 MB of tree. Four million (the token-dense 29 MB documents of
/// `benches/load/check_memory.py` are under three; Kubernetes' whole
/// cluster is 70 thousand) keeps one examined tree near 128 MB.
pub const MAX_VALUES: usize = 4_000_000;

/// Findings of one kind listed per document; the rest are counted.
pub const MAX_LISTED: usize = 100;

/// What a response body showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyFacts {
    /// Its length in bytes.
    pub length: usize,
    /// Upper-case hex SHA-512 of it.
    pub sha512: String,
    /// What it holds as JSON, or why it is not JSON (the parser's message).
    pub json: Result<DocumentFacts, String>,
}

/// What a JSON document showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentFacts {
    /// Its `openapi` member when that is a string, else empty.
    pub openapi: String,
    /// It has a `servers` member.
    pub servers: bool,
    /// Spots that break the OpenAPI 3.0 shape (B-11.15), in document
    /// order: JSON pointer of the member, what is expected, what is there.
    pub shape: Listed<(String, String, String)>,
    /// Why it does not deserialize as an OpenAPI 3.0 document, if it does
    /// not.
    pub invalid: Option<String>,
    /// `$ref`s that do not resolve inside it: the JSON pointer of the
    /// object holding each, and its value.
    pub dangling: Listed<(String, String)>,
    /// `(group, version, kind)` of every `x-kubernetes-group-version-kind`
    /// entry under `/components/schemas`.
    pub kinds: BTreeSet<(String, String, String)>,
}

/// Up to [`MAX_LISTED`] items, and how many more there were.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listed<T> {
    /// The first items, in document order.
    pub items: Vec<T>,
    /// How many were left out.
    pub more: usize,
}

impl<T> Listed<T> {
    fn push(&mut self, item: T) {
        if self.items.len() < MAX_LISTED {
            self.items.push(item);
        } else {
            self.more += 1;
        }
    }
}

impl BodyFacts {
    /// Examines `body`. Peak memory is the body and the larger of its two
    /// parsed forms, never both at once.
    #[must_use]
    pub fn of(body: &[u8]) -> Self {
        let sha512 = sha512_hex(body);
        let json = match crate::json::tree::parse_within(body, MAX_VALUES) {
            Ok(tree) => {
                let mut facts = walk(&tree);
                drop(tree);
                facts.invalid = super::parse::openapi(body).err().map(|e| truncate(&e));
                Ok(facts)
            }
            Err(e) if e.kind == crate::json::tree::SyntaxErrorKind::TooManyValues => Err(format!(
                "body has more than {MAX_VALUES} values: more than check examines within its \
                 memory bound"
            )),
            // The message clients know: serde_json's (the tree's parser
            // accepts exactly what serde_json accepts).
            Err(e) => Err(match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
                Err(e) => format!("body is not JSON: {e}"),
                Ok(_) => format!("body is not JSON: {e}"),
            }),
        };
        Self { length: body.len(), sha512, json }
    }
}

/// Everything but whether `openapiv3` parses the document ([`super::parse`]),
/// in one walk.
fn walk(doc: &Node<'_>) -> DocumentFacts {
    let mut facts = DocumentFacts {
        openapi: doc.get("openapi").and_then(Node::as_str).unwrap_or_default().to_owned(),
        servers: doc.get("servers").is_some(),
        shape: Listed::default(),
        invalid: None,
        dangling: Listed::default(),
        kinds: kinds(doc),
    };
    for_each_object(doc, &mut |at, m| {
        if let Some(r) = m.get("$ref").and_then(Node::as_str) {
            if !r.starts_with("#/components/") {
                facts.shape.push((
                    format!("body {at}/$ref"),
                    "#/components/…".into(),
                    format!("{r:?}"),
                ));
            }
            if m.len() > 1 {
                let others: Vec<&str> =
                    m.keys().map(|k| k.as_str()).filter(|k| *k != "$ref").collect();
                facts.shape.push((
                    format!("body {at}"),
                    "a $ref alone (siblings go beside allOf: [{$ref}])".into(),
                    truncate(&format!("$ref with {others:?}")),
                ));
            }
            let resolves = r
                .strip_prefix('#')
                .and_then(fragment_pointer)
                .is_some_and(|p| doc.pointer(&p).is_some());
            if !resolves {
                facts.dangling.push((at.to_owned(), r.to_owned()));
            }
        }
        if let (Some(inn), Some(_)) =
            (m.get("in").and_then(Node::as_str), m.get("name").and_then(Node::as_str))
            && (inn == "body" || inn == "formData")
        {
            facts.shape.push((
                format!("body {at}/in"),
                "query, header, path or cookie (bodies are requestBody)".into(),
                format!("{inn:?}"),
            ));
        }
        if m.get("type").and_then(Node::as_str) == Some("file") {
            facts.shape.push((
                format!("body {at}/type"),
                "string with format binary".into(),
                "\"file\"".into(),
            ));
        }
    });
    facts
}

/// Calls `f` with every object of `doc` and its JSON pointer, parents
/// before children, in document order (as `json::refs::for_each_object`
/// does for a `Value`).
fn for_each_object<'a>(doc: &Node<'a>, f: &mut dyn FnMut(&str, &Object<'a>)) {
    fn visit<'a>(node: &Node<'a>, at: &mut String, f: &mut dyn FnMut(&str, &Object<'a>)) {
        match node {
            Node::Object(o) => {
                f(at, o);
                for (k, v) in o.iter() {
                    let len = at.len();
                    at.push('/');
                    at.push_str(&escape_token(k.as_str()));
                    visit(v, at, f);
                    at.truncate(len);
                }
            }
            Node::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    let len = at.len();
                    at.push('/');
                    at.push_str(&i.to_string());
                    visit(v, at, f);
                    at.truncate(len);
                }
            }
            _ => {}
        }
    }
    visit(doc, &mut String::new(), f);
}

/// The `x-kubernetes-group-version-kind` entries of `/components/schemas`
/// with a string version and kind (a missing group is the core group).
fn kinds(doc: &Node<'_>) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    let Some(schemas) = doc.pointer("/components/schemas").and_then(Node::as_object) else {
        return out;
    };
    for (_, schema) in schemas.iter() {
        let Some(gvks) = schema.get("x-kubernetes-group-version-kind").and_then(Node::as_array)
        else {
            continue;
        };
        for x in gvks {
            let group = x.get("group").and_then(Node::as_str).unwrap_or_default();
            if let (Some(version), Some(kind)) =
                (x.get("version").and_then(Node::as_str), x.get("kind").and_then(Node::as_str))
            {
                out.insert((group.to_owned(), version.to_owned(), kind.to_owned()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body of more values than check examines is reported as such,
    /// not parsed whole (nor called "not JSON").
    #[test]
    fn a_body_of_too_many_values_is_not_examined() {
        let mut body = String::from("[0");
        for _ in 0..MAX_VALUES {
            body.push_str(",0");
        }
        body.push(']');
        let e = BodyFacts::of(body.as_bytes()).json.expect_err("refused");
        assert!(e.contains("more than 4000000 values"), "{e}");
        assert!(!e.contains("not JSON"), "{e}");
    }

    fn facts(doc: &str) -> DocumentFacts {
        BodyFacts::of(doc.as_bytes()).json.expect("JSON")
    }

    #[test]
    fn a_conformant_document_shows_nothing_wrong() {
        let f = facts(
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{},
                "components":{"schemas":{"A":{"type":"object",
                "x-kubernetes-group-version-kind":[{"group":"apps","version":"v1","kind":"A"},
                                                   {"version":"v1","kind":"Core"}],
                "properties":{"b":{"$ref":"#/components/schemas/A"}}}}}}"##,
        );
        assert_eq!(f.openapi, "3.0.0");
        assert!(!f.servers && f.invalid.is_none());
        assert!(f.shape.items.is_empty() && f.dangling.items.is_empty());
        let kinds: Vec<_> = f.kinds.iter().map(|(g, v, k)| format!("{g}/{v}/{k}")).collect();
        assert_eq!(kinds, ["/v1/Core", "apps/v1/A"]);
    }

    #[test]
    fn shape_breaks_and_dangling_refs_are_found_with_their_pointers() {
        let f = facts(
            r##"{"openapi":"3.0.0","servers":[{"url":"/"}],"paths":{"/x":{"get":{"parameters":[
                {"in":"body","name":"b"}]}}},
                "components":{"schemas":{"a/b":{"$ref":"#/definitions/X","description":"d"},
                "F":{"type":"file"},"$ref":{"type":"string"}}}}"##,
        );
        assert!(f.servers);
        let spots: Vec<&str> = f.shape.items.iter().map(|(at, _, _)| at.as_str()).collect();
        assert_eq!(
            spots,
            [
                "body /paths/~1x/get/parameters/0/in",
                "body /components/schemas/a~1b/$ref",
                "body /components/schemas/a~1b",
                "body /components/schemas/F/type",
            ]
        );
        assert_eq!(f.shape.items[2].2, "$ref with [\"description\"]");
        assert_eq!(
            f.dangling.items,
            [("/components/schemas/a~1b".to_owned(), "#/definitions/X".to_owned())]
        );
        assert!(f.invalid.is_some(), "no info: not an OpenAPI 3.0 document");
    }

    #[test]
    fn long_lists_are_cut_and_counted() {
        let refs: Vec<String> =
            (0..MAX_LISTED + 5).map(|i| format!(r##"{{"$ref":"#/nowhere/{i}"}}"##)).collect();
        let f = facts(&format!(r#"{{"openapi":"3.0.0","x":[{}]}}"#, refs.join(",")));
        assert_eq!((f.dangling.items.len(), f.dangling.more), (MAX_LISTED, 5));
    }

    #[test]
    fn a_body_that_is_not_json_says_why_and_is_still_hashed() {
        let b = BodyFacts::of(b"{\"openapi\":");
        assert_eq!(b.length, 11);
        assert_eq!(b.sha512, sha512_hex(b"{\"openapi\":"));
        let why = b.json.expect_err("not JSON");
        assert!(why.starts_with("body is not JSON: EOF while parsing"), "{why}");
    }
}
