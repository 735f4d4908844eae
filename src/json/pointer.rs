//! JSON pointers (RFC 6901) that name the spot in a source document an error
//! or a conversion note is about.
//!
//! Errors from the converter and the splitter point at the node that caused
//! them, because "unresolvable reference" is useless in a 4 MB document
//! without saying where.

use std::borrow::Cow;
use std::fmt;

/// Escapes one reference token (RFC 6901 §3): `~` → `~0`, `/` → `~1`.
/// Borrows when there is nothing to escape, as for almost every key.
#[must_use]
pub fn escape_token(token: &str) -> Cow<'_, str> {
    if token.contains(['~', '/']) {
        Cow::Owned(token.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(token)
    }
}

/// Undoes [`escape_token`] (RFC 6901 §4): `~1` → `/` first, then `~0` →
/// `~`, so that `~01` becomes `~1` and not `/`. Borrows when there is
/// nothing to unescape.
#[must_use]
pub fn unescape_token(token: &str) -> Cow<'_, str> {
    if token.contains('~') {
        Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(token)
    }
}

/// A JSON pointer such as `/paths/~1api~1v1~1pods/get/responses/200`.
///
/// Built by appending tokens while walking a document; cheap enough to build
/// eagerly on the error path only (walkers keep a `&JsonPointer` to their
/// parent and call [`JsonPointer::push`] when they need a child).
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JsonPointer(String);

impl JsonPointer {
    /// The pointer to the whole document (the empty string).
    #[must_use]
    pub fn root() -> Self {
        Self(String::new())
    }

    /// The pointer to child `token` of this node (escaping `~` and `/`).
    #[must_use]
    pub fn push(&self, token: &str) -> Self {
        let mut s = String::with_capacity(self.0.len() + token.len() + 1);
        s.push_str(&self.0);
        s.push('/');
        s.push_str(&escape_token(token));
        Self(s)
    }

    /// The pointer to array element `index` of this node.
    #[must_use]
    pub fn index(&self, index: usize) -> Self {
        Self(format!("{}/{index}", self.0))
    }

    /// The pointer as text (`""` for the root).
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A location in a document, built without allocating while a walker
/// descends and turned into a [`JsonPointer`] only when a note or an error
/// needs one.
///
/// The converter visits every node of a 4 MB document; formatting a pointer
/// string at each of them cost more than the conversion itself. A
/// `Location` is a chain of borrowed tokens on the stack instead.
#[derive(Clone, Copy, Debug)]
pub struct Location<'a> {
    parent: Option<&'a Location<'a>>,
    token: Token<'a>,
}

#[derive(Clone, Copy, Debug)]
enum Token<'a> {
    /// The start of the chain: a pointer built earlier (often the root).
    Base(&'a JsonPointer),
    Key(&'a str),
    Index(usize),
}

static ROOT: JsonPointer = JsonPointer(String::new());
static ROOT_LOCATION: Location<'static> = Location { parent: None, token: Token::Base(&ROOT) };

impl<'a> Location<'a> {
    /// The whole document.
    #[must_use]
    pub fn root() -> &'static Location<'static> {
        &ROOT_LOCATION
    }

    /// Starts a chain at an already built pointer.
    #[must_use]
    pub fn at(base: &'a JsonPointer) -> Self {
        Self { parent: None, token: Token::Base(base) }
    }

    /// Child `key` of this node.
    #[must_use]
    pub fn key(&'a self, key: &'a str) -> Self {
        Self { parent: Some(self), token: Token::Key(key) }
    }

    /// Array element `index` of this node.
    #[must_use]
    pub fn index(&'a self, index: usize) -> Self {
        Self { parent: Some(self), token: Token::Index(index) }
    }

    /// The pointer this location stands for.
    #[must_use]
    pub fn to_pointer(self) -> JsonPointer {
        let mut tokens = Vec::new();
        let mut base = &ROOT;
        let mut at = Some(&self);
        while let Some(l) = at {
            match l.token {
                Token::Base(b) => base = b,
                t => tokens.push(t),
            }
            at = l.parent;
        }
        let mut p = base.clone();
        for t in tokens.iter().rev() {
            p = match t {
                Token::Key(k) => p.push(k),
                Token::Index(i) => p.index(*i),
                Token::Base(_) => p,
            };
        }
        p
    }
}

impl fmt::Display for JsonPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() { f.write_str("(document root)") } else { f.write_str(&self.0) }
    }
}

impl fmt::Debug for JsonPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_slash_and_tilde_as_rfc6901_says() {
        let p = JsonPointer::root().push("paths").push("/api/v1/{name}").push("a~b").index(3);
        assert_eq!(p.as_str(), "/paths/~1api~1v1~1{name}/a~0b/3");
    }

    #[test]
    fn location_builds_the_same_pointer_lazily() {
        let base = JsonPointer::root().push("paths");
        let at = Location::at(&base);
        let item = at.key("/a");
        let op = item.key("get");
        let p = op.key("parameters");
        assert_eq!(p.index(2).to_pointer().as_str(), "/paths/~1a/get/parameters/2");
        assert_eq!(Location::root().key("x").to_pointer().as_str(), "/x");
        assert_eq!(Location::root().to_pointer().as_str(), "");
    }

    #[test]
    fn root_is_empty_and_displays_readably() {
        assert_eq!(JsonPointer::root().as_str(), "");
        assert_eq!(JsonPointer::root().to_string(), "(document root)");
    }
}
