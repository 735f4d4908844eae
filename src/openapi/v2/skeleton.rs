//! The merge of `/openapi/v2` without every document in memory at once.
//!
//! At thousands of CRDs the downstreams' documents are hundreds of
//! megabytes plain; holding all their trees and the merged tree at once
//! took a GiB. The merge only ever compares definitions, follows their
//! `$ref`s and reads their group-version-kinds: a *stand-in* that carries
//! just that — a digest of the content, the references, the kinds — merges
//! exactly as the definition would ([`merge::merge`] is run on stand-ins).
//! Each real definition and path item is then taken from its document
//! again, one document at a time, and given what the merge did to its
//! stand-in ([`restore`]): the same renames, the same kinds.
//!
//! Why the digest leaves out the references and the kinds: the merge
//! rewrites the references and prunes the kinds of a stand-in as it would
//! the real definition's, so they are carried as members the merge sees,
//! and two stand-ins are equal exactly when the definitions would be
//! (`refs::same`: objects compared as maps).
//!
//! [`merge::merge`]: super::merge::merge
//! [`merge::Source::new`]: super::merge::Source::new

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::merge::Renames;
use super::refs;
use crate::body::digest::upper_hex;
use crate::json::tree::{Node, Number, Object, Text};

/// The vendor extension Kubernetes lists a definition's kinds in.
const GVK: &str = "x-kubernetes-group-version-kind";

/// A stand-in's digest of everything but its references and kinds.
const DIGEST: &str = "x-stand-in-digest";

/// A stand-in's references, in the order a walk with sorted members meets
/// them, each as `{"$ref": …}` so the merge finds and rewrites them.
const REFS: &str = "x-stand-in-refs";

/// `doc`, a Swagger 2.0 document, with each definition and path item
/// replaced by its stand-in, owning all its text (the document's bytes
/// can go). Anything that is not the expected shape is copied as it is,
/// for [`Source::new`](super::merge::Source::new) to refuse as it would the document.
///
/// `strings` shares the text stand-ins repeat (names, references,
/// digests, kinds) across every document it sees: a thousand CRD
/// documents name the same `ObjectMeta` a thousand times.
#[must_use]
pub fn skeleton(doc: &Node<'_>, strings: &mut Strings) -> Node<'static> {
    let Node::Object(o) = doc else {
        strings.held += 2 * doc.rendered_len();
        return owned(doc);
    };
    let mut out = Object::with_capacity(o.len());
    for (key, value) in o {
        let value = match (key.as_str(), value) {
            ("definitions", Node::Object(defs)) => Node::Object(
                defs.iter().map(|(k, v)| (strings.get(k), definition(v, strings))).collect(),
            ),
            ("paths", Node::Object(paths)) => Node::Object(
                paths.iter().map(|(k, v)| (strings.own(k), path_item(v, strings))).collect(),
            ),
            _ => {
                // Copied whole (`info`, `parameters`, …): about twice its text.
                strings.held += 2 * value.rendered_len();
                owned(value)
            }
        };
        let key = strings.own(key);
        out.push_new(key, value);
    }
    let out = Node::Object(out);
    strings.held += structure(&out);
    out
}

/// About what the structure of `node` holds: each node and member, a
/// string counted as its handle only (its bytes are counted once, where
/// they are allocated: [`Strings::held`]).
fn structure(node: &Node<'_>) -> usize {
    let own = std::mem::size_of::<Node<'_>>();
    match node {
        Node::Array(items) => own + items.iter().map(structure).sum::<usize>(),
        Node::Object(o) => {
            own + o
                .iter()
                .map(|(_, v)| std::mem::size_of::<Text<'_>>() + structure(v))
                .sum::<usize>()
        }
        _ => own,
    }
}

/// Text shared between stand-ins: one allocation per distinct string;
/// and what the stand-ins made with it hold.
#[derive(Debug, Default)]
pub struct Strings {
    shared: BTreeMap<Box<str>, Text<'static>>,
    held: usize,
}

/// What one allocated string costs beside its bytes.
const STRING: usize = 32;

impl Strings {
    /// About what the stand-ins made so far hold, each string once.
    /// Stand-ins are a small part of an honest document's size, but a
    /// document of tiny path items full of `$ref`s makes them larger than
    /// itself: what they hold is counted, not assumed (`assemble`).
    #[must_use]
    pub fn held(&self) -> usize {
        self.held
    }

    fn get(&mut self, s: &str) -> Text<'static> {
        if let Some(t) = self.shared.get(s) {
            return t.clone();
        }
        let t = Text::from(s.to_owned());
        self.shared.insert(s.into(), t.clone());
        // The map's copy and the shared one.
        self.held += 2 * (STRING + s.len());
        t
    }

    /// A string of its own (a path, a key), counted.
    fn own(&mut self, text: &Text<'_>) -> Text<'static> {
        self.held += STRING + text.len();
        owned_text(text)
    }

    /// `node` owned, its strings shared.
    fn owned(&mut self, node: &Node<'_>) -> Node<'static> {
        match node {
            Node::String(s) => Node::String(self.get(s)),
            Node::Array(items) => Node::Array(items.iter().map(|v| self.owned(v)).collect()),
            Node::Object(o) => {
                Node::Object(o.iter().map(|(k, v)| (self.get(k), self.owned(v))).collect())
            }
            other => owned(other),
        }
    }
}

/// A definition's stand-in: its kinds, the digest, its references.
fn definition(def: &Node<'_>, strings: &mut Strings) -> Node<'static> {
    let mut hash = Sha256::new();
    let mut found = Vec::new();
    canonical(def, true, &mut hash, &mut found);
    let mut o = Object::with_capacity(3);
    if let Some(kinds) = def.get(GVK) {
        o.push_new(Text::from(GVK), strings.owned(kinds));
    }
    o.push_new(Text::from(DIGEST), Node::String(strings.get(&upper_hex(&hash.finalize()))));
    o.push_new(Text::from(REFS), references(found.iter().map(String::as_str), strings));
    Node::Object(o)
}

/// A path item's stand-in: only the definitions and parameters it refers
/// to, once each, as an array of `{"$ref": …}` (path items are moved,
/// never compared; at 50,000 path items every allocation counts).
fn path_item(item: &Node<'_>, strings: &mut Strings) -> Node<'static> {
    let mut found: Vec<&str> = Vec::new();
    refs::each(item, &mut |r| found.push(r));
    found.sort_unstable();
    found.dedup();
    references(found.into_iter(), strings)
}

fn references<'r>(found: impl Iterator<Item = &'r str>, strings: &mut Strings) -> Node<'static> {
    Node::Array(
        found
            .map(|r| {
                let mut o = Object::with_capacity(1);
                o.push_new(Text::from("$ref"), Node::String(strings.get(r)));
                Node::Object(o)
            })
            .collect(),
    )
}

/// Feeds `node` to `hash` as `refs::same` compares it (objects by sorted
/// member, numbers by value), a `$ref` string as a mark with the string
/// pushed to `found`, and the top-level kinds left out when `top`.
fn canonical(node: &Node<'_>, top: bool, hash: &mut Sha256, found: &mut Vec<String>) {
    match node {
        Node::Null => hash.update(b"n"),
        Node::Bool(b) => hash.update(if *b { b"t" } else { b"f" }),
        Node::Number(n) => {
            let text = n.to_json().to_string();
            hash.update(b"d");
            hash.update(text.len().to_le_bytes());
            hash.update(text.as_bytes());
        }
        Node::String(s) => {
            hash.update(b"s");
            hash.update(s.len().to_le_bytes());
            hash.update(s.as_bytes());
        }
        Node::Array(items) => {
            hash.update(b"a");
            hash.update(items.len().to_le_bytes());
            for item in items {
                canonical(item, false, hash, found);
            }
        }
        Node::Object(o) => {
            let mut members: Vec<(&Text<'_>, &Node<'_>)> =
                o.iter().filter(|(k, _)| !(top && k.as_str() == GVK)).collect();
            members.sort_unstable_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
            hash.update(b"o");
            hash.update(members.len().to_le_bytes());
            for (k, v) in members {
                hash.update(k.len().to_le_bytes());
                hash.update(k.as_bytes());
                match v {
                    Node::String(r) if k.as_str() == "$ref" => {
                        hash.update(b"r");
                        found.push(r.as_str().to_owned());
                    }
                    _ => canonical(v, false, hash, found),
                }
            }
        }
        Node::Shared(shared) => canonical(shared.node(), top, hash, found),
    }
}

/// The real definition or path item `node`, as the merge left its
/// stand-in: its references renamed by `renames` in turn (the renames
/// of its downstream's own documents first, then the merge's), and, for
/// a definition, the kinds its stand-in kept.
#[must_use]
pub fn restore<'a>(
    mut node: Node<'a>,
    definition_stand_in: Option<&Node<'_>>,
    renames: &[&Renames],
) -> Node<'a> {
    for r in renames {
        refs::rename(&mut node, r);
    }
    if let (Some(stand_in), Node::Object(o)) = (definition_stand_in, &mut node) {
        match (stand_in.get(GVK), o.get_mut(GVK)) {
            (Some(kept), Some(kinds)) => *kinds = owned(kept),
            (None, Some(_)) => {
                o.remove(GVK);
            }
            _ => {}
        }
    }
    node
}

/// Appends `"key":node` to `out`, as the merged document's object member.
pub fn member(key: &str, node: &Node<'_>, out: &mut Vec<u8>) {
    Node::String(Text::from(key)).render(out);
    out.push(b':');
    node.render(out);
}

/// A copy of `node` that owns its text.
#[must_use]
pub fn owned(node: &Node<'_>) -> Node<'static> {
    match node {
        Node::Null => Node::Null,
        Node::Bool(b) => Node::Bool(*b),
        Node::Number(Number::Integer(text)) => Node::Number(
            text.parse()
                .map_or_else(|_| Number::Big(owned_text(&Text::from(*text))), Number::Parsed),
        ),
        Node::Number(Number::Big(text)) => Node::Number(Number::Big(owned_text(text))),
        Node::Number(Number::Parsed(n)) => Node::Number(Number::Parsed(n.clone())),
        Node::String(s) => Node::String(owned_text(s)),
        Node::Array(items) => Node::Array(items.iter().map(owned).collect()),
        Node::Object(o) => Node::Object(o.iter().map(|(k, v)| (owned_text(k), owned(v))).collect()),
        Node::Shared(shared) => owned(shared.node()),
    }
}

fn owned_text(text: &Text<'_>) -> Text<'static> {
    Text::from(text.as_str().to_owned())
}

#[cfg(test)]
mod tests;
