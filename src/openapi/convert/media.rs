//! Media types of converted content: which ones a request body or a
//! response is written under, and the v3 media type object.

use std::collections::BTreeSet;

use crate::json::tree::{Node, Object, Text};
use crate::wire::media::ANY_MEDIA_TYPE;

/// The media types a body or response is written under: those declared,
/// each once (see [`distinct`]), else `*/*` (docs/wire.md#a-5 says why not
/// `application/json`).
pub(super) fn media_or_default<'m>(types: &[&'m str]) -> Vec<&'m str> {
    if types.is_empty() { vec![ANY_MEDIA_TYPE] } else { distinct(types) }
}

/// `types`, each once where it first stands. A type declared again would
/// only write the same content entry again; with each type once, callers
/// append the entries without searching for them, which for a list as long
/// as a hostile document makes it was quadratic.
pub(super) fn distinct<'m>(types: &[&'m str]) -> Vec<&'m str> {
    /// Lists up to this long are searched; longer ones (only a hostile or
    /// generated document declares so many) go through a set.
    const SEARCHED: usize = 8;
    let mut distinct = Vec::with_capacity(types.len());
    if types.len() <= SEARCHED {
        for &t in types {
            if !distinct.contains(&t) {
                distinct.push(t);
            }
        }
    } else {
        let mut seen = BTreeSet::new();
        distinct.extend(types.iter().copied().filter(|t| seen.insert(*t)));
    }
    distinct
}

/// The media type without parameters (`multipart/form-data; boundary=x` →
/// `multipart/form-data`).
pub(super) fn media_base(mt: &str) -> &str {
    mt.split(';').next().unwrap_or(mt).trim()
}

/// A v3 media type object, with its `schema` and `encoding` where given.
/// Allocated at its size: a response is written once per media type the
/// operation produces (thousands of these objects for Kubernetes), and an
/// object grown from empty takes room for four members. Its two keys are
/// appended as they are, neither searched for nor checked for escapes.
pub(super) fn media_type<'a>(schema: Option<Node<'a>>, encoding: Option<Object<'a>>) -> Node<'a> {
    let mut m =
        Object::with_capacity(usize::from(schema.is_some()) + usize::from(encoding.is_some()));
    if let Some(s) = schema {
        m.push_new(Text::plain("schema"), s);
    }
    if let Some(e) = encoding {
        m.push_new(Text::plain("encoding"), Node::Object(e));
    }
    Node::Object(m)
}
