//! What one file gives: the OpenAPI v3 documents, by key, of whatever it
//! holds.
//!
//! - a Swagger 2.0 document: converted and split by the proxy's one
//!   pipeline (`openapi/pipeline.rs`), so the documents are the bytes the
//!   proxy would serve for it;
//! - an OpenAPI 3.0 document: split per key when it has paths; without
//!   paths (a CRD group-version's document as kube-openapi's test data
//!   holds them) it is one group-version's document, the one its kinds'
//!   `x-kubernetes-group-version-kind` name;
//! - CustomResourceDefinitions, alone, in a `List`, or several in a YAML
//!   stream (`---`): each served version published as [`super::crd`] says.
//!
//! Anything else in a YAML stream (a Deployment beside the CRDs of a
//! chart) is skipped and said.

use std::collections::BTreeSet;

use serde_json::Value;

use super::crd::{self, CrdError};
use crate::json::document::{self, ParseError};
use crate::json::tree::Node;
use crate::openapi::pipeline::{self, PipelineError};
use crate::openapi::split::{self, SplitError};
use crate::wire::GroupVersion;
use crate::wire::key::DocumentKey;

/// What a file held, for the summary.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    /// Swagger 2.0 documents converted.
    pub swagger: usize,
    /// OpenAPI 3.0 documents.
    pub openapi: usize,
    /// CustomResourceDefinitions.
    pub crds: usize,
    /// Conversion notes of the Swagger 2.0 documents (what OpenAPI 3.0
    /// could not carry exactly); `convert --verbose` lists them.
    pub notes: usize,
    /// What was skipped, one line each (`document 3: a apps/v1 Deployment`).
    pub skipped: Vec<String>,
}

/// Why a file gave no documents.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// Not JSON or YAML (`part` counts the documents of a YAML stream from
    /// 1).
    #[error("document {part}: reading")]
    Parse {
        /// Which document of the stream.
        part: usize,
        /// Why.
        #[source]
        source: ParseError,
    },
    /// A Swagger 2.0 document that does not convert.
    #[error("document {part}: converting Swagger 2.0")]
    Convert {
        /// Which document of the stream.
        part: usize,
        /// Why.
        #[source]
        source: PipelineError,
    },
    /// An OpenAPI 3.0 document that does not split per key.
    #[error("document {part}: splitting OpenAPI 3.0")]
    Split {
        /// Which document of the stream.
        part: usize,
        /// Why.
        #[source]
        source: SplitError,
    },
    /// An OpenAPI document with no paths and kinds of no single
    /// group-version: there is no key to publish it under.
    #[error(
        "document {part}: an OpenAPI document without paths must hold the kinds of one group-version (x-kubernetes-group-version-kind); it names {found}"
    )]
    NoKey {
        /// Which document of the stream.
        part: usize,
        /// The group-versions found (`none`, or a list).
        found: String,
    },
    /// A CustomResourceDefinition that cannot be published.
    #[error("document {part}")]
    Crd {
        /// Which document of the stream.
        part: usize,
        /// Why.
        #[source]
        source: CrdError,
    },
}

/// The documents of one file's `bytes` (JSON, or YAML with one or more
/// documents), each JSON document read within `budget` bytes of values,
/// handed to `each` by key as they are made (a key may come more than
/// once: two CRDs of one group-version, to be joined); returns what the
/// file held.
///
/// # Errors
/// [`SourceError`] for the first document that cannot be read or used.
pub fn documents_of(
    bytes: &[u8],
    budget: usize,
    mut each: impl FnMut(DocumentKey, Vec<u8>),
) -> Result<Found, SourceError> {
    let mut found = Found::default();
    for (i, part) in yaml_stream(bytes).into_iter().enumerate() {
        let part_no = i + 1;
        let tree = match document::parse_tree_within(part, budget) {
            Ok((tree, _)) => tree,
            // `---` at the end of a stream, or a document of comments only.
            Err(ParseError::Empty) => continue,
            Err(source) => return Err(SourceError::Parse { part: part_no, source }),
        };
        add_document(&tree, part.len(), part_no, &mut found, &mut each)?;
    }
    Ok(found)
}

fn add_document(
    tree: &Node<'_>,
    size_hint: usize,
    part: usize,
    found: &mut Found,
    each: &mut impl FnMut(DocumentKey, Vec<u8>),
) -> Result<(), SourceError> {
    let text = |name| tree.get(name).and_then(Node::as_str);
    if text("swagger") == Some("2.0") {
        let summary = pipeline::convert_each(tree, size_hint, usize::MAX, |key, bytes| {
            each(key.clone(), bytes.to_vec());
        })
        .map_err(|source| SourceError::Convert { part, source })?;
        found.swagger += 1;
        found.notes += summary.notes.len();
        return Ok(());
    }
    if text("openapi").is_some() {
        found.openapi += 1;
        let has_paths = tree.get("paths").and_then(Node::as_object).is_some_and(|p| !p.is_empty());
        if has_paths {
            split::split_rendered_each(tree, size_hint, usize::MAX, |key, bytes| {
                each(key.clone(), bytes.to_vec());
            })
            .map_err(|source| SourceError::Split { part, source })?;
            return Ok(());
        }
        let gvs = group_versions(tree);
        let mut it = gvs.iter();
        let key = match (it.next(), it.next()) {
            (Some(gv), None) => DocumentKey::parse(&gv.key()),
            _ => None,
        };
        let Some(key) = key else {
            let found = if gvs.is_empty() {
                "none".to_owned()
            } else {
                gvs.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            };
            return Err(SourceError::NoKey { part, found });
        };
        each(key, tree.to_vec());
        return Ok(());
    }
    let value = tree.to_value();
    let crds: Vec<&Value> = match text("kind") {
        Some("CustomResourceDefinition") => vec![&value],
        Some(k) if k.ends_with("List") => value
            .get("items")
            .and_then(Value::as_array)
            .map(|items| items.iter().collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let mut used = 0;
    for item in crds {
        if item.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
            found.skipped.push(format!("document {part}: {}", describe(item)));
            continue;
        }
        for doc in crd::documents(item).map_err(|source| SourceError::Crd { part, source })? {
            let bytes = serde_json::to_vec(&doc.document).expect("a JSON value always serializes");
            each(doc.key, bytes);
        }
        found.crds += 1;
        used += 1;
    }
    if used == 0 && !text("kind").is_some_and(|k| k.ends_with("List")) {
        found.skipped.push(format!("document {part}: {}", describe(&value)));
    }
    Ok(())
}

/// `a apps/v1 Deployment`, or what the document is not.
fn describe(doc: &Value) -> String {
    let text = |name| doc.get(name).and_then(Value::as_str);
    match (text("apiVersion"), text("kind")) {
        (Some(v), Some(k)) => format!("a {v} {k}, not a CustomResourceDefinition"),
        _ => "not Swagger 2.0, OpenAPI 3.0 or a CustomResourceDefinition".to_owned(),
    }
}

/// The group-versions of the kinds `doc`'s component schemas declare.
fn group_versions(doc: &Node<'_>) -> BTreeSet<GroupVersion> {
    let mut out = BTreeSet::new();
    let Some(schemas) = doc.pointer("/components/schemas").and_then(Node::as_object) else {
        return out;
    };
    for (_, schema) in schemas.iter() {
        let gvks = schema.get("x-kubernetes-group-version-kind").and_then(Node::as_array);
        for gvk in gvks.unwrap_or_default() {
            let text = |name| gvk.get(name).and_then(Node::as_str);
            if let (Some(g), Some(v)) = (text("group"), text("version")) {
                out.insert(GroupVersion::new(g, v));
            }
        }
    }
    out
}

/// The documents of a YAML stream: the text between lines that are `---`
/// (with an optional comment) or `...`. JSON is one document.
///
/// A line of a block scalar is indented, so a `---` at the start of a line
/// always separates documents.
#[must_use]
pub fn yaml_stream(bytes: &[u8]) -> Vec<&[u8]> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if matches!(first, Some(b'{' | b'[')) {
        return vec![bytes];
    }
    let mut parts = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while at < bytes.len() {
        let end = bytes[at..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| at + i + 1);
        let line = &bytes[at..end];
        let trimmed = line.trim_ascii_end();
        let separator = trimmed == b"..."
            || trimmed.starts_with(b"---")
                && trimmed[3..].first().is_none_or(|b| *b == b' ' || *b == b'\t');
        if separator {
            parts.push(&bytes[start..at]);
            // `--- {…}`: a document may start on the separator's line.
            let rest = trimmed.get(3..).unwrap_or_default().trim_ascii_start();
            let inline = trimmed != b"..." && !rest.is_empty() && !rest.starts_with(b"#");
            start = if inline { at + 3 } else { end };
        }
        at = end;
    }
    parts.push(&bytes[start..]);
    parts.retain(|p| !p.trim_ascii().is_empty());
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_yaml_stream_is_cut_at_its_separators_only() {
        let text = b"---\na: 1\n--- # second\nb: |\n  ---\n  kept\n...\n---\n";
        let parts = yaml_stream(text);
        assert_eq!(parts, [&b"a: 1\n"[..], &b"b: |\n  ---\n  kept\n"[..]]);
        assert_eq!(yaml_stream(b"{\"a\": 1}"), [&b"{\"a\": 1}"[..]]);
    }

    #[test]
    fn crds_in_a_stream_are_published_and_other_kinds_skipped() {
        let text = br"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
";
        let mut keys = Vec::new();
        let found = documents_of(text, usize::MAX, |k, _| keys.push(k)).unwrap();
        assert_eq!(found.crds, 1);
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].as_str(), "apis/example.com/v1");
        assert_eq!(
            found.skipped,
            ["document 2: a apps/v1 Deployment, not a CustomResourceDefinition"]
        );
    }

    #[test]
    fn an_openapi_document_without_paths_is_the_document_of_its_kinds_group_version() {
        let doc = br#"{"openapi":"3.0.0","info":{},"components":{"schemas":{
            "a":{"x-kubernetes-group-version-kind":[{"group":"g.example.com","kind":"A","version":"v1"}]}}}}"#;
        let mut keys = Vec::new();
        documents_of(doc, usize::MAX, |k, _| keys.push(k)).unwrap();
        assert_eq!(keys[0].as_str(), "apis/g.example.com/v1");
        let none = br#"{"openapi":"3.0.0","info":{},"components":{"schemas":{}}}"#;
        assert!(matches!(
            documents_of(none, usize::MAX, |_, _| {}),
            Err(SourceError::NoKey { .. })
        ));
    }
}
