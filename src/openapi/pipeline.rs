//! The one way from Swagger 2.0 bytes to the OpenAPI 3.0 documents served
//! per key (`api/v1`, `apis/<group>/<version>`, `version`, …).
//!
//! Three callers need this step: the poller (a downstream that only has
//! `/openapi/v2`), `openapi-proxy convert --out` and the demo. They used to
//! do it each in their own order — split then convert, convert then split —
//! which gave different bytes for some documents (the member order of
//! Kubernetes 1.35's `logs` document). Now all three go through
//! [`convert_each`], so what `convert --out` writes is, byte for byte, what
//! the proxy serves for the same document (a test holds them to it).
//!
//! The order is convert the whole document once, then split it: shared
//! definitions are converted once rather than once per key, and the split
//! renders each key's document straight from the converted tree. What the
//! poller keeps per part — gzip rendition, hash, ETag — is looked up by the
//! digest of the part's bytes ([`ConversionCache`]), so a part that did not
//! change when a downstream's document did keeps its prepared body.

use std::collections::BTreeMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::json::document::{self, ParseError};
use crate::json::tree::{Node, Object};
use crate::openapi::cache::ConversionCache;
use crate::openapi::convert::{self, ConvertError, ConvertedTree, Note};
use crate::openapi::split::{self, RefHints, SplitError};
use crate::wire::key::DocumentKey;

/// Why a Swagger 2.0 document gave no OpenAPI 3.0 documents.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The bytes are not JSON (a downstream's body is never read as YAML).
    #[error("reading the document")]
    Parse(#[source] ParseError),
    /// The document is not a convertible Swagger 2.0 document.
    #[error(transparent)]
    Convert(ConvertError),
    /// The converted document could not be split per key.
    #[error("splitting the converted document")]
    Split(#[source] SplitError),
}

/// How much memory one conversion may take, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// What the parsed tree (and the converted one beside it) may take: a
    /// document of more values than this allows is refused as it is read
    /// (`BYTES_PER_VALUE` in `json/document.rs` says how values are counted).
    pub parse_bytes: usize,
    /// What the split documents may add up to, checked before the first is
    /// rendered.
    pub output_bytes: usize,
}

impl Budget {
    /// No bound: for a person's own file (`convert`), whose output goes to
    /// disk one document at a time.
    pub const UNLIMITED: Self = Self { parse_bytes: usize::MAX, output_bytes: usize::MAX };
}

impl PipelineError {
    /// Whether the document was refused for its [`Budget`], not for what
    /// it says.
    #[must_use]
    pub fn is_budget(&self) -> bool {
        matches!(
            self,
            Self::Parse(ParseError::TooLarge { .. }) | Self::Split(SplitError::TooLarge { .. })
        )
    }
}

/// What a conversion found besides the documents.
#[derive(Debug, Default)]
pub struct Summary {
    /// What could not be carried over exactly, in the order found.
    pub notes: Vec<Note>,
    /// Paths that belong to no key; they appear in no document.
    pub unplaced: Vec<String>,
    /// Schemas in the whole converted document (`components/schemas`).
    pub schemas: usize,
}

/// The documents one Swagger 2.0 document converts to, collected.
#[derive(Debug)]
pub struct Documents<T> {
    /// One OpenAPI 3.0 document per key, in key order, as the caller's
    /// `prepare` made it from the compact JSON bytes (or as the cache kept
    /// it from an earlier conversion that gave the same bytes).
    pub documents: BTreeMap<DocumentKey, Arc<T>>,
    /// Notes, unplaced paths, schemas.
    pub summary: Summary,
    /// How many documents came from the cache instead of `prepare`.
    pub reused: usize,
}

/// Converts the Swagger 2.0 tree `v2` to OpenAPI 3.0, splits it per key
/// and hands each key's compact JSON bytes to `each`, in key order.
///
/// Nothing is handed out when converting or splitting fails: the whole
/// document is converted, and every key's components worked out, before
/// the first document is rendered.
///
/// The documents together may take `max_output` bytes (see
/// `split_rendered_each` in `openapi/split.rs`).
///
/// # Errors
/// [`PipelineError::Convert`] when `v2` is not a convertible Swagger 2.0
/// document, [`PipelineError::Split`] when the result cannot be split or
/// would pass `max_output`.
pub fn convert_each(
    v2: &Node<'_>,
    size_hint: usize,
    max_output: usize,
    each: impl FnMut(&DocumentKey, &[u8]),
) -> Result<Summary, PipelineError> {
    let ConvertedTree { document, notes, refs } =
        convert::convert_tree(v2).map_err(PipelineError::Convert)?;
    split_each(&document, Some(&refs), notes, size_hint, max_output, each)
}

/// The second half of [`convert_each`], for a caller that also needs the
/// whole converted document (`convert --whole --out` converts once): splits
/// the converted `document` per key and hands each key's compact JSON bytes
/// to `each`. The document is borrowed, so a caller about to exit can skip
/// freeing it. `refs` are the converter's records of the references under
/// the document's objects ([`ConvertedTree::refs`]), which spare the split
/// a walk over them.
///
/// # Errors
/// [`PipelineError::Split`] when the document cannot be split or would
/// pass `max_output`.
pub fn split_each<'a>(
    document: &'a Node<'a>,
    refs: Option<&'a RefHints<'a>>,
    notes: Vec<Note>,
    size_hint: usize,
    max_output: usize,
    each: impl FnMut(&DocumentKey, &[u8]),
) -> Result<Summary, PipelineError> {
    let schemas =
        document.pointer("/components/schemas").and_then(Node::as_object).map_or(0, Object::len);
    let unplaced = split::split_rendered_each_hinted(document, refs, size_hint, max_output, each)
        .map_err(PipelineError::Split)?;
    Ok(Summary { notes, unplaced, schemas })
}

/// Parses a downstream's `body` (JSON only) and runs [`convert_each`],
/// keeping what `prepare` makes of each document.
///
/// With a `cache`, a document whose bytes were prepared before is not
/// prepared again: the `Arc` cached then is returned, so it keeps its
/// identity and whatever `prepare` derived (the proxy: gzip rendition,
/// hash, ETag). The documents are the same with or without a cache.
///
/// What it may take is bounded by `budget`, before the memory is taken:
/// a downstream's document cannot make the proxy hold more than its share.
///
/// # Errors
/// [`PipelineError`] for the first problem met; nothing is returned then.
pub fn swagger_to_openapi<T>(
    body: &[u8],
    cache: Option<&ConversionCache<T>>,
    budget: Budget,
    mut prepare: impl FnMut(Vec<u8>) -> T,
) -> Result<Documents<T>, PipelineError> {
    let v2 =
        document::parse_json_tree_within(body, budget.parse_bytes).map_err(PipelineError::Parse)?;
    let mut documents = BTreeMap::new();
    let mut reused = 0;
    let summary = convert_each(&v2, body.len(), budget.output_bytes, |key, bytes| {
        let prepared = match cache {
            Some(cache) => {
                let digest: [u8; 32] = Sha256::digest(bytes).into();
                match cache.get(&digest) {
                    Some(hit) => {
                        reused += 1;
                        hit
                    }
                    None => cache.insert(digest, Arc::new(prepare(bytes.to_vec()))),
                }
            }
            None => Arc::new(prepare(bytes.to_vec())),
        };
        documents.insert(key.clone(), prepared);
    })?;
    Ok(Documents { documents, summary, reused })
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDGETS: &[u8] = include_bytes!("../../testdata/sample/widgets.v2.json");

    #[test]
    fn unchanged_parts_come_from_the_cache() {
        let cache = ConversionCache::default();
        let first = swagger_to_openapi(WIDGETS, Some(&cache), Budget::UNLIMITED, |b| b).unwrap();
        let second = swagger_to_openapi(WIDGETS, Some(&cache), Budget::UNLIMITED, |b| b).unwrap();
        assert_eq!(first.documents.len(), 4);
        assert_eq!((first.reused, second.reused), (0, 4));
        for (key, doc) in &first.documents {
            assert!(Arc::ptr_eq(doc, &second.documents[key]), "{key} was converted again");
        }
    }

    #[test]
    fn the_cache_changes_nothing_in_the_output() {
        let cache = ConversionCache::default();
        let cached = swagger_to_openapi(WIDGETS, Some(&cache), Budget::UNLIMITED, |b| b).unwrap();
        let plain = swagger_to_openapi(WIDGETS, None, Budget::UNLIMITED, |b| b).unwrap();
        assert_eq!(cached.documents, plain.documents);
        assert_eq!(cached.summary.notes, plain.summary.notes);
    }

    #[test]
    fn a_document_that_is_not_swagger_2_is_refused() {
        for doc in [&b"{}"[..], b"{\"swagger\":\"1.2\"}", b"{\"openapi\":\"3.0.0\",\"paths\":{}}"] {
            let err = swagger_to_openapi(doc, None, Budget::UNLIMITED, |b| b).unwrap_err();
            assert!(
                matches!(err, PipelineError::Convert(ConvertError::NotSwagger2 { .. })),
                "{err}"
            );
        }
    }

    #[test]
    fn one_definition_reached_from_many_keys_is_refused_before_it_multiplies() {
        // 100 group-versions, each reaching one 10 KB definition: 1 MB of
        // output from a document of 15 KB.
        let paths: Vec<String> = (0..100)
            .map(|i| format!(r##""/apis/g{i}.example.com/v1/x":{{"get":{{"responses":{{"200":{{"description":"","schema":{{"$ref":"#/definitions/Big"}}}}}}}}}}"##))
            .collect();
        let big = "x".repeat(10_000);
        let doc = format!(
            r#"{{"swagger":"2.0","paths":{{{}}},"definitions":{{"Big":{{"description":"{big}"}}}}}}"#,
            paths.join(",")
        );
        let unbounded = swagger_to_openapi(doc.as_bytes(), None, Budget::UNLIMITED, |b| b).unwrap();
        let total: usize = unbounded.documents.values().map(|d| d.len()).sum();
        assert!(total > 1_000_000, "{total}");

        let mut prepared = 0;
        let budget = Budget { parse_bytes: usize::MAX, output_bytes: 500_000 };
        let err = swagger_to_openapi(doc.as_bytes(), None, budget, |b| {
            prepared += 1;
            b
        })
        .unwrap_err();
        assert_eq!(prepared, 0, "documents were made before the refusal");
        match err {
            PipelineError::Split(SplitError::TooLarge { documents, expected, limit }) => {
                assert_eq!((documents, limit), (100, 500_000));
                // The estimate is within 1% of what rendering gives.
                assert!(expected.abs_diff(total) * 100 < total, "{expected} vs {total}");
            }
            other => panic!("{other}"),
        }
        // Enough room: the same documents as without a budget.
        let budget = Budget { parse_bytes: usize::MAX, output_bytes: total + total / 50 };
        let bounded = swagger_to_openapi(doc.as_bytes(), None, budget, |b| b).unwrap();
        assert_eq!(bounded.documents, unbounded.documents);
    }

    #[test]
    fn a_document_of_more_values_than_its_budget_is_refused() {
        let budget =
            Budget { parse_bytes: 10 * document::BYTES_PER_VALUE, output_bytes: usize::MAX };
        let err = swagger_to_openapi(WIDGETS, None, budget, |b| b).unwrap_err();
        assert!(matches!(err, PipelineError::Parse(ParseError::TooLarge { limit: 10 })), "{err}");
    }

    #[test]
    fn a_reference_to_nothing_is_named() {
        let doc = br##"{"swagger":"2.0","paths":{"/apis/a/v1/x":{"get":{"responses":{"200":{"description":"","schema":{"$ref":"#/definitions/Missing"}}}}}}}"##;
        let err = swagger_to_openapi(doc, None, Budget::UNLIMITED, |b| b).unwrap_err().to_string();
        assert!(err.contains("#/definitions/Missing"), "{err}");
    }
}
