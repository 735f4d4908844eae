//! JSON pointers (RFC 6901) that name the spot in a source document an error
//! or a conversion note is about.
//!
//! Errors from the converter and the splitter point at the node that caused
//! them, because "unresolvable reference" is useless in a 4 MB document
//! without saying where.

use std::fmt;

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
        for c in token.chars() {
            match c {
                '~' => s.push_str("~0"),
                '/' => s.push_str("~1"),
                c => s.push(c),
            }
        }
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
    fn root_is_empty_and_displays_readably() {
        assert_eq!(JsonPointer::root().as_str(), "");
        assert_eq!(JsonPointer::root().to_string(), "(document root)");
    }
}
