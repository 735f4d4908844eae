//! A JSON tree that borrows its strings, for the conversion pipeline.
//!
//! `serde_json::Value` owns every string and, with `preserve_order`, hashes
//! every object key into an `IndexMap`. Parsing the 4 MB Kubernetes
//! document, converting it and splitting it built three such trees, and
//! allocation, hashing and escaping were most of the `convert` command's
//! time. A [`Node`] instead keeps strings as slices of the input where it
//! can, objects as an ordered list of members (lookups are linear: objects
//! are small, and the big ones are only ever iterated), and remembers which
//! strings need no escaping on output.
//!
//! It is the one representation the converter and the splitter work on.
//! The `&Value` entry points borrow a `Value` into a tree
//! ([`Node::from_value`]) and turn results back ([`Node::to_value`]); the
//! command and the proxy parse bytes straight into a tree ([`parse_within`]) and
//! render trees straight to bytes ([`Node::render`]). Both give the bytes
//! `serde_json` gives for the same document.

mod parse;
pub(crate) mod render;
mod repeated;
mod scan;
mod shared;

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::json::pointer::unescape_token;

#[cfg(test)]
use parse::MAX_DEPTH;
#[cfg(test)]
pub use parse::parse;
pub use parse::{SyntaxError, SyntaxErrorKind, parse_noting_refs, parse_within};
pub use shared::Shared;

/// A JSON value whose strings may borrow from the text or `Value` it came
/// from.
///
/// Equality, the accessors, [`Node::to_value`] and [`Node::render`] look
/// through [`Node::Shared`]: a shared subtree is the same document as its
/// copy would be.
#[derive(Debug, Clone)]
pub enum Node<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, kept as `serde_json` writes it.
    Number(Number<'a>),
    /// A string.
    String(Text<'a>),
    /// An array.
    Array(Vec<Node<'a>>),
    /// An object, members in document order.
    Object(Object<'a>),
    /// A subtree that stands at other spots of the tree too (only the
    /// converter makes them; see [`Shared`]).
    Shared(Shared<'a>),
}

impl PartialEq for Node<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self.resolved(), other.resolved()) {
            (Node::Null, Node::Null) => true,
            (Node::Bool(a), Node::Bool(b)) => a == b,
            (Node::Number(a), Node::Number(b)) => a == b,
            (Node::String(a), Node::String(b)) => a == b,
            (Node::Array(a), Node::Array(b)) => a == b,
            (Node::Object(a), Node::Object(b)) => a == b,
            _ => false,
        }
    }
}

/// A string of a [`Node`], borrowed or owned, that knows whether JSON
/// writes it without escapes.
///
/// 24 bytes (a `Cow<str>` and a flag took 32): an object member is a key
/// and a node, and the trees of a whole cluster's document hold about a
/// hundred thousand of them. Owned text is shared, not copied, when a
/// node is cloned: the converter copies shared parameters, with their
/// long decoded descriptions, into every operation that uses them.
#[derive(Clone)]
pub struct Text<'a>(Repr<'a>);

#[derive(Clone)]
enum Repr<'a> {
    /// Borrowed; holds no `"`, `\` or control character, so it is written
    /// between quotes as it is.
    Plain(&'a str),
    /// Borrowed; may need escaping.
    Borrowed(&'a str),
    /// Owned; written as it is.
    OwnedPlain(Arc<str>),
    /// Owned; may need escaping.
    Owned(Arc<str>),
}

/// A number of a [`Node`].
#[derive(Debug, Clone, PartialEq)]
pub enum Number<'a> {
    /// An integer as it stood in the input, already in the form
    /// `serde_json` writes (no sign on zero, fits in `i64`/`u64`).
    Integer(&'a str),
    /// An integer beyond 64 bits (`18446744073709551616`), its decimal
    /// digits as written. `serde_json` would read it as a float and write
    /// `1.8446744073709552e19`, changing a value the document's author
    /// wrote exactly (an `enum` member, a `maximum`); kept as text, it is
    /// written back as it came. Only [`Node::to_value`] loses it, as a
    /// `Value` holds no such integer.
    Big(Text<'a>),
    /// Any other number, as `serde_json` read it.
    Parsed(serde_json::Number),
}

/// The members of a JSON object, in order, with unique keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Object<'a> {
    members: Vec<(Text<'a>, Node<'a>)>,
}

/// True when `s` can be written between quotes without escaping.
fn is_plain(s: &str) -> bool {
    scan::skip_plain(s.as_bytes(), 0) == s.len()
}

impl<'a> Text<'a> {
    /// Text known to need no escaping (the parser's strings without
    /// escapes).
    pub(crate) fn plain(text: &'a str) -> Self {
        Self(Repr::Plain(text))
    }

    /// Owned text whose need for escaping the caller already knows (the
    /// parser, which decoded its escapes).
    pub(crate) fn owned(text: &str, plain: bool) -> Self {
        let text = Arc::from(text);
        Self(if plain { Repr::OwnedPlain(text) } else { Repr::Owned(text) })
    }

    /// The text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Plain(s) | Repr::Borrowed(s) => s,
            Repr::OwnedPlain(s) | Repr::Owned(s) => s,
        }
    }

    /// Where owned text is in memory, and its length: the same for every
    /// clone, as clones share it. `None` for borrowed text, whose place
    /// says nothing about which other texts hold the same string.
    pub(crate) fn shared_place(&self) -> Option<(usize, usize)> {
        match &self.0 {
            Repr::Plain(_) | Repr::Borrowed(_) => None,
            Repr::OwnedPlain(s) | Repr::Owned(s) => Some((s.as_ptr().addr(), s.len())),
        }
    }

    /// The text's bytes when it is written without escapes: both of the
    /// renderer's questions (plain? which bytes?) in one match.
    #[inline]
    pub(crate) fn plain_bytes(&self) -> Option<&[u8]> {
        match &self.0 {
            Repr::Plain(s) => Some(s.as_bytes()),
            Repr::OwnedPlain(s) => Some(s.as_bytes()),
            Repr::Borrowed(_) | Repr::Owned(_) => None,
        }
    }

    /// True when the text is written without escapes.
    pub(crate) fn is_plain(&self) -> bool {
        matches!(self.0, Repr::Plain(_) | Repr::OwnedPlain(_))
    }

    /// The text as an owned `String`.
    #[must_use]
    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Plain(s) | Repr::Borrowed(s) => s.to_owned(),
            Repr::OwnedPlain(s) | Repr::Owned(s) => String::from(&*s),
        }
    }
}

impl<'a> From<&'a str> for Text<'a> {
    fn from(text: &'a str) -> Self {
        Self(if is_plain(text) { Repr::Plain(text) } else { Repr::Borrowed(text) })
    }
}

impl From<String> for Text<'_> {
    fn from(text: String) -> Self {
        let plain = is_plain(&text);
        let text = Arc::from(text);
        Self(if plain { Repr::OwnedPlain(text) } else { Repr::Owned(text) })
    }
}

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Text<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text<'_> {}

impl PartialEq<str> for Text<'_> {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Debug for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'a> Object<'a> {
    /// An empty object.
    #[must_use]
    pub fn new() -> Self {
        Self { members: Vec::new() }
    }

    /// An empty object with room for `n` members.
    #[must_use]
    pub fn with_capacity(n: usize) -> Self {
        Self { members: Vec::with_capacity(n) }
    }

    /// Room for members without regrowing, for tests of how trees are
    /// allocated.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.members.capacity()
    }

    /// Where the members are in memory, and how many: the same for as long
    /// as the object is neither changed nor freed, wherever its node moves
    /// (what `openapi::split::RefHints` knows an object by).
    #[must_use]
    pub(crate) fn place(&self) -> (usize, usize) {
        (self.members.as_ptr().addr(), self.members.len())
    }

    /// The number of members.
    #[must_use]
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// True when there are no members.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The value of member `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        self.members.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    }

    /// The value of member `key`, to change it in place.
    #[must_use]
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node<'a>> {
        self.members.iter_mut().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    }

    /// True when there is a member `key`.
    #[must_use]
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets member `key`: in its place when it exists (as `IndexMap` and
    /// hence `serde_json::Map` do), else at the end.
    pub fn insert(&mut self, key: impl Into<Text<'a>>, value: Node<'a>) {
        let key = key.into();
        match self.members.iter_mut().find(|(k, _)| *k == key) {
            Some((_, slot)) => *slot = value,
            None => self.members.push((key, value)),
        }
    }

    /// An object of `members` in their order, a repeated key resolved as
    /// [`Object::insert`] resolves it (the first place, the last value),
    /// in one sort rather than a search per member: for members the input
    /// decides the number of.
    pub(crate) fn from_members(members: Vec<(Text<'a>, Node<'a>)>) -> Self {
        if repeated::has_repeated_keys(&members) {
            Self { members: repeated::last_value_wins(members) }
        } else {
            Self { members }
        }
    }

    /// An object of `members` whose keys the caller has already found to
    /// be unique (the YAML reader, which checks a mapping's keys once, by
    /// sorting them, rather than once per key).
    pub(crate) fn from_unique(members: Vec<(Text<'a>, Node<'a>)>) -> Self {
        Self { members }
    }

    /// Appends member `key`, which the caller knows is not there yet (the
    /// keys of another object, copied one to one): no search, which matters
    /// for objects with hundreds of members.
    pub(crate) fn push_new(&mut self, key: Text<'a>, value: Node<'a>) {
        debug_assert!(!self.contains_key(&key), "push_new of an existing key {key:?}");
        self.members.push((key, value));
    }

    /// Keeps the members for which `keep` says so, in their order.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&str, &Node<'a>) -> bool) {
        self.members.retain(|(k, v)| keep(k.as_str(), v));
    }

    /// The members in order, values to change in place (renaming `$ref`s
    /// of a merged document).
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (&Text<'a>, &mut Node<'a>)> + '_ {
        self.members.iter_mut().map(|(k, v)| (&*k, v))
    }

    /// Takes member `key` out, keeping the others in order.
    pub(crate) fn remove(&mut self, key: &str) -> Option<Node<'a>> {
        let at = self.members.iter().position(|(k, _)| k.as_str() == key)?;
        Some(self.members.remove(at).1)
    }

    /// The members in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&Text<'a>, &Node<'a>)> + '_ {
        self.members.iter().map(|(k, v)| (k, v))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &Text<'a>> + '_ {
        self.members.iter().map(|(k, _)| k)
    }
}

impl<'a> IntoIterator for Object<'a> {
    type Item = (Text<'a>, Node<'a>);
    type IntoIter = std::vec::IntoIter<(Text<'a>, Node<'a>)>;
    fn into_iter(self) -> Self::IntoIter {
        self.members.into_iter()
    }
}

impl<'o, 'a> IntoIterator for &'o Object<'a> {
    type Item = (&'o Text<'a>, &'o Node<'a>);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'o, (Text<'a>, Node<'a>)>,
        fn(&'o (Text<'a>, Node<'a>)) -> (&'o Text<'a>, &'o Node<'a>),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.members.iter().map(|(k, v)| (k, v))
    }
}

impl<'a> FromIterator<(Text<'a>, Node<'a>)> for Object<'a> {
    /// Collects members with `insert`'s rule for repeated keys.
    fn from_iter<I: IntoIterator<Item = (Text<'a>, Node<'a>)>>(iter: I) -> Self {
        let mut o = Object::new();
        for (k, v) in iter {
            o.insert(k, v);
        }
        o
    }
}

impl<'a> Node<'a> {
    /// A string node.
    #[must_use]
    pub fn string(text: impl Into<Text<'a>>) -> Self {
        Node::String(text.into())
    }

    /// This node, or the subtree it shares ([`Node::Shared`]): never a
    /// shared node itself.
    #[must_use]
    pub fn resolved(&self) -> &Node<'a> {
        let mut node = self;
        while let Node::Shared(shared) = node {
            node = shared.node();
        }
        node
    }

    /// The string, if this is one.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match self.resolved() {
            Node::String(s) => Some(s.as_str()),
            _ => None,
        }
    }

    /// The object, if this is one.
    #[must_use]
    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self.resolved() {
            Node::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The array, if this is one.
    #[must_use]
    pub fn as_array(&self) -> Option<&[Node<'a>]> {
        match self.resolved() {
            Node::Array(a) => Some(a),
            _ => None,
        }
    }

    /// True for `true` and `false`.
    #[must_use]
    pub fn is_boolean(&self) -> bool {
        matches!(self.resolved(), Node::Bool(_))
    }

    /// True for objects.
    #[must_use]
    pub fn is_object(&self) -> bool {
        matches!(self.resolved(), Node::Object(_))
    }

    /// True for arrays.
    #[must_use]
    pub fn is_array(&self) -> bool {
        matches!(self.resolved(), Node::Array(_))
    }

    /// Member `key` of an object.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        self.as_object().and_then(|o| o.get(key))
    }

    /// The node an RFC 6901 pointer names, by `Value::pointer`'s rules (no
    /// percent-decoding; array indices without sign or leading zeros), so
    /// that a reference resolves here exactly when it resolves in the
    /// `Value` of the same document.
    #[must_use]
    pub fn pointer(&self, pointer: &str) -> Option<&Node<'a>> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        let mut at = self;
        for token in rest.split('/') {
            let token = unescape_token(token);
            at = match at.resolved() {
                Node::Object(o) => o.get(&token)?,
                Node::Array(items) => items.get(array_index(&token)?)?,
                _ => return None,
            };
        }
        Some(at.resolved())
    }

    /// Borrows a `Value` as a tree; the strings stay in `value`.
    #[must_use]
    pub fn from_value(value: &'a Value) -> Self {
        match value {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Number(Number::Parsed(n.clone())),
            Value::String(s) => Node::String(Text::from(s.as_str())),
            Value::Array(items) => Node::Array(items.iter().map(Node::from_value).collect()),
            Value::Object(map) => Node::Object(Object {
                members: map
                    .iter()
                    .map(|(k, v)| (Text::from(k.as_str()), Node::from_value(v)))
                    .collect(),
            }),
        }
    }

    /// Takes a `Value` apart into a tree that owns its strings (moved, not
    /// copied), for input that did not come from the JSON parser (YAML).
    #[must_use]
    pub fn from_owned_value(value: Value) -> Node<'static> {
        match value {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(b),
            Value::Number(n) => Node::Number(Number::Parsed(n)),
            Value::String(s) => Node::String(Text::from(s)),
            Value::Array(items) => {
                Node::Array(items.into_iter().map(Node::from_owned_value).collect())
            }
            Value::Object(map) => Node::Object(Object {
                members: map
                    .into_iter()
                    .map(|(k, v)| (Text::from(k), Node::from_owned_value(v)))
                    .collect(),
            }),
        }
    }

    /// The same document as a `Value`, for callers that want one.
    #[must_use]
    pub fn to_value(&self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Number(n) => Value::Number(n.to_json()),
            Node::String(s) => Value::String(s.as_str().to_owned()),
            Node::Array(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Object(o) => Value::Object(
                o.members.iter().map(|(k, v)| (k.as_str().to_owned(), v.to_value())).collect(),
            ),
            Node::Shared(shared) => shared.node().to_value(),
        }
    }

    /// Compact JSON, byte for byte what `serde_json::to_vec` writes for
    /// [`Node::to_value`].
    #[must_use]
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.render(&mut out);
        out
    }
}

impl Number<'_> {
    /// The number as `serde_json` holds it.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Number {
        match self {
            Number::Integer(text) => {
                text.parse().expect("the parser makes an Integer only of a text serde_json reads")
            }
            Number::Big(text) => text.parse().expect(
                "a Big is made only of an integer text serde_json reads (as the nearest float)",
            ),
            Number::Parsed(n) => n.clone(),
        }
    }
}

/// An array index in a pointer token, by `Value::pointer`'s rules.
fn array_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

impl fmt::Display for Node<'_> {
    /// Compact JSON, as `Value`'s `Display` writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.to_vec()))
    }
}

#[cfg(test)]
mod tests;
