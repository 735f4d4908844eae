//! The protobuf renditions of OpenAPI documents that kube-apiserver
//! serves: gnostic's `openapi.v2.Document` for `/openapi/v2` and
//! `openapi.v3.Document` for each `/openapi/v3/<key>`
//! (docs/upstream.md#b-2-1, #b-2-4; docs/wire.md#a-10).
//!
//! kube-openapi makes them by reading the JSON into a YAML node tree,
//! building gnostic's messages from it (`NewDocument`) and marshalling
//! those. The same mapping is done here in one walk over the JSON
//! (`encode`, tables in `v2` and `v3`): known keys into their
//! fields, `x-` keys into `NamedAny` pairs, `default`, `example` and
//! `enum` values into `Any` messages holding the value as YAML text, maps
//! into `Named…` pairs in the JSON's order. A reference's siblings are
//! left out, as gnostic leaves them. Required keys are not checked; what
//! else gnostic's parse refuses
//! (a key its message has no field for, a value of the wrong type) is a
//! [`ProtoError`] here too: the rendition is then not offered, rather
//! than one that says less than the JSON.

mod encode;
mod pieces;
mod table;
mod v2;
mod v3;

pub use encode::Problem;
pub use pieces::{PiecesError, openapi_v2_pieces};

use crate::json::pointer::JsonPointer;
use crate::json::tree::{SyntaxError, parse_within};

/// Why a document has no protobuf rendition.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// The bytes are not one JSON document.
    #[error("not a JSON document")]
    Syntax(#[source] SyntaxError),
    /// A value gnostic's parse refuses.
    #[error("cannot be encoded at {at}")]
    Unencodable {
        /// Where, as a JSON pointer.
        at: String,
        /// What.
        #[source]
        problem: Problem,
    },
}

/// `application/com.github.proto-openapi.spec.v2.v1.0+protobuf`: the
/// Swagger 2.0 document `json` as gnostic's `openapi.v2.Document`.
///
/// # Errors
/// [`ProtoError`] when `json` is not JSON or holds what gnostic's
/// `openapi_v2.NewDocument` refuses.
pub fn openapi_v2(json: &[u8]) -> Result<Vec<u8>, ProtoError> {
    encode_document(&v2::DOCUMENT, json)
}

/// `application/com.github.proto-openapi.spec.v3.v1.0+protobuf`: the
/// OpenAPI 3.0 document `json` as gnostic's `openapi.v3.Document`.
///
/// # Errors
/// [`ProtoError`] when `json` is not JSON or holds what gnostic's
/// `openapi_v3.NewDocument` refuses.
pub fn openapi_v3(json: &[u8]) -> Result<Vec<u8>, ProtoError> {
    encode_document(&v3::DOCUMENT, json)
}

fn encode_document(document: &'static encode::Msg, json: &[u8]) -> Result<Vec<u8>, ProtoError> {
    // Every value takes at least one byte of text, so this budget never
    // refuses a document; it only keeps the parser's own bound in force.
    let tree = parse_within(json, json.len().saturating_add(1)).map_err(ProtoError::Syntax)?;
    // The encoding is a little smaller than the JSON (no quotes, braces or
    // key names); one allocation for it, most of the time.
    let mut out = Vec::with_capacity(json.len());
    encode::message(document, &tree, &mut out).map_err(|f| {
        let mut at = JsonPointer::root();
        for token in f.tokens.iter().rev() {
            at = at.push(token);
        }
        ProtoError::Unencodable { at: at.as_str().to_owned(), problem: f.problem }
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests;
