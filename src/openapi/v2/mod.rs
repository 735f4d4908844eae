//! The one `/openapi/v2` of all downstreams together (docs/wire.md, A-13):
//! [`merge`] joins Swagger 2.0 documents as kube-aggregator joins its
//! APIServices' specs, and [`down`] turns the OpenAPI 3.0 documents of a
//! downstream that publishes no v2 into Swagger 2.0 first, with the rules
//! kube-apiserver applies to CRD schemas it publishes in v2.
//!
//! Both work on [`Node`] trees that borrow from the
//! downstreams' bytes: at thousands of CRDs the inputs are hundreds of
//! megabytes, and a tree of owned strings would cost several times that.

pub mod assemble;
pub mod down;
pub mod merge;
mod refs;
pub mod skeleton;

use std::collections::BTreeMap;

use crate::json::tree::Node;

/// Why a downstream's documents were left out of the merged `/openapi/v2`.
#[derive(Debug, thiserror::Error)]
pub enum V2Error {
    /// Its `/openapi/v2` cannot take part.
    #[error("its /openapi/v2: {0}")]
    Merge(#[from] merge::MergeError),
    /// One of its OpenAPI v3 documents cannot be converted down.
    #[error("its OpenAPI v3 document {key}: {source}")]
    Down {
        /// The document's key.
        key: String,
        /// Why.
        #[source]
        source: down::DownError,
    },
}

/// The Swagger 2.0 documents of one downstream (already converted down)
/// merged into its one source, and where its paths and definitions came
/// from (indexes into `documents`).
///
/// # Errors
/// [`merge::MergeError`] for a document that is not Swagger 2.0.
pub fn joined<'a>(
    name: &str,
    documents: Vec<Node<'a>>,
) -> Result<(merge::Source<'a>, merge::Provenance), merge::MergeError> {
    let mut sources = Vec::with_capacity(documents.len());
    for doc in documents {
        sources.push(merge::Source::new(name, doc)?);
    }
    let (doc, provenance) = match merge::merge(sources, &BTreeMap::new()) {
        Some(m) => (m.doc, m.provenance),
        None => (
            Node::from_owned_value(serde_json::json!({
                "swagger": "2.0", "info": {}, "paths": {}
            })),
            merge::Provenance::default(),
        ),
    };
    Ok((merge::Source::new(name, doc)?, provenance))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v3-only downstream's group-versions, each converted down, make
    /// one document: every path of each, shared definitions once.
    #[test]
    fn a_v3_only_downstreams_documents_make_one_v2_document() {
        let dir = crate::testkit::testdata::path(
            "kube-openapi/pkg/openapiconv/testdata_generated_from_k8s",
        );
        let gvs = ["api.v1", "batch.v1", "apiextensions.k8s.io.v1"];
        let bytes: Vec<Vec<u8>> = gvs
            .iter()
            .map(|gv| std::fs::read(dir.join(format!("v3_{gv}.json"))).unwrap())
            .collect();
        let values: Vec<serde_json::Value> =
            bytes.iter().map(|b| serde_json::from_slice(b).unwrap()).collect();
        let converted = bytes
            .iter()
            .map(|b| down::down_convert(crate::json::tree::parse(b).unwrap()).unwrap())
            .collect();
        let (source, _) = joined("k", converted).unwrap();
        let merged = merge::merge(vec![source], &BTreeMap::new()).unwrap();
        assert!(merged.renamed.is_empty(), "{:?}", merged.renamed);
        let doc = merged.doc.to_value();
        let union = |f: &dyn Fn(&serde_json::Value) -> Vec<String>| {
            let mut all: Vec<String> = values.iter().flat_map(f).collect();
            all.sort();
            all.dedup();
            all
        };
        let keys =
            |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&doc["paths"]), union(&|v| keys(&v["paths"])));
        assert_eq!(keys(&doc["definitions"]), union(&|v| keys(&v["components"]["schemas"])));
        assert_eq!(doc["swagger"], "2.0");
    }
}
