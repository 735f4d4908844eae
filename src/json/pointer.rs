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

/// The JSON pointer a URI fragment holds (RFC 6901 §6): the fragment
/// without its `#`, percent-decoded. Decoding comes before the `~1`/`~0`
/// unescaping of each token, so `%2F` separates tokens like `/` does.
/// Borrows when there is no `%`, as in almost every reference; `None` when
/// a `%` is not followed by two hex digits or the bytes are not UTF-8.
#[must_use]
pub fn fragment_pointer(fragment: &str) -> Option<Cow<'_, str>> {
    if !fragment.contains('%') {
        return Some(Cow::Borrowed(fragment));
    }
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok().map(Cow::Owned)
}

/// Appends `token` to a URI fragment holding a JSON pointer: escaped as
/// RFC 6901 §3 says, then percent-encoded where RFC 3986 does not allow the
/// character in a fragment (spaces, `%`, `[`, non-ASCII, …), so that
/// [`fragment_pointer`] gives the token back.
pub fn push_fragment_token(out: &mut String, token: &str) {
    let mut rest = token;
    loop {
        // A run of what a fragment holds as it is (all of a Kubernetes
        // schema name), copied at once rather than a character at a time.
        let run = rest.bytes().take_while(|&b| fragment_safe(b)).count();
        let (plain, tail) = rest.split_at(run);
        out.push_str(plain);
        let mut chars = tail.chars();
        let Some(c) = chars.next() else { return };
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => {
                let mut buf = [0; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
        }
        rest = chars.as_str();
    }
}

/// True for the ASCII characters RFC 3986 allows in a fragment as they
/// are, less `/` (a separator in the pointer) and `~` (its escape).
fn fragment_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'.'
                | b'_'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'?'
        )
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

    /// The pointer this location stands for, written front to back into
    /// one string: a conversion notes every operation of a whole
    /// cluster's document, and a string per token made that a tenth of
    /// the converter's time.
    #[must_use]
    pub fn to_pointer(self) -> JsonPointer {
        let mut p = String::with_capacity(self.pointer_len());
        self.write_into(&mut p);
        JsonPointer(p)
    }

    /// The length of [`Location::to_pointer`]'s string. Recursive, as is
    /// [`Location::write_into`]: a chain is as deep as the walk that made
    /// it, which follows the document (at most the parser's depth).
    fn pointer_len(&self) -> usize {
        let parent = self.parent.map_or(0, Location::pointer_len);
        parent
            + match self.token {
                Token::Base(base) => base.0.len(),
                Token::Key(k) => {
                    1 + k.len() + k.bytes().filter(|b| matches!(b, b'~' | b'/')).count()
                }
                Token::Index(i) => 1 + i.checked_ilog10().map_or(1, |d| d as usize + 1),
            }
    }

    /// Appends the parent's pointer, then this token.
    fn write_into(&self, p: &mut String) {
        if let Some(parent) = self.parent {
            parent.write_into(p);
        }
        match self.token {
            Token::Base(base) => p.push_str(&base.0),
            Token::Key(k) => {
                p.push('/');
                push_escaped(p, k);
            }
            Token::Index(i) => {
                p.push('/');
                p.push_str(itoa::Buffer::new().format(i));
            }
        }
    }
}

/// Appends `token` escaped as RFC 6901 says (`~` as `~0`, `/` as `~1`).
///
/// Scans bytes, not characters: both are ASCII, so every place found is
/// a character boundary, and a note's pointer (a path with a `/` every few
/// characters) is written without decoding each character of it.
fn push_escaped(out: &mut String, token: &str) {
    let mut rest = token;
    while let Some(at) = rest.bytes().position(|b| b == b'~' || b == b'/') {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        out.push_str(if from.starts_with('~') { "~0" } else { "~1" });
        rest = from.get(1..).unwrap_or_default();
    }
    out.push_str(rest);
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
    fn location_writes_its_pointer_into_one_string_of_the_right_size() {
        let base = JsonPointer::root().push("paths");
        let at = Location::at(&base);
        let item = at.key("/api/v1/~x");
        let op = item.key("get");
        let params = op.key("parameters");
        let p = params.index(12).to_pointer();
        assert_eq!(p.as_str(), "/paths/~1api~1v1~1~0x/get/parameters/12");
        assert_eq!(p.0.capacity(), p.0.len());
        for (i, digits) in [(0, "0"), (9, "9"), (10, "10"), (usize::MAX, &*usize::MAX.to_string())]
        {
            let p = Location::root().index(i).to_pointer();
            assert_eq!(p.as_str(), format!("/{digits}"));
            assert_eq!(p.0.capacity(), p.0.len());
        }
    }

    #[test]
    fn fragment_is_percent_decoded_before_tokens_are_unescaped() {
        assert_eq!(fragment_pointer("/definitions/A").as_deref(), Some("/definitions/A"));
        assert_eq!(
            fragment_pointer("/definitions/Transaction%20Id").as_deref(),
            Some("/definitions/Transaction Id")
        );
        assert_eq!(fragment_pointer("/a%2Fb%7E1").as_deref(), Some("/a/b~1"));
        assert_eq!(fragment_pointer("/%C3%A9").as_deref(), Some("/\u{e9}"));
        assert_eq!(fragment_pointer("/a%2"), None);
        assert_eq!(fragment_pointer("/a%zz"), None);
        assert_eq!(fragment_pointer("/%FF"), None);
    }

    #[test]
    fn fragment_token_round_trips_through_escaping_and_encoding() {
        let mut out = String::from("#/");
        push_fragment_token(&mut out, "a b/c~d[e]%\u{e9}");
        assert_eq!(out, "#/a%20b~1c~0d%5Be%5D%25%C3%A9");
        let pointer = fragment_pointer(&out[1..]).unwrap();
        assert_eq!(unescape_token(&pointer[1..]), "a b/c~d[e]%\u{e9}");
        let mut plain = String::new();
        push_fragment_token(&mut plain, "io.k8s.api.core.v1.Pod");
        assert_eq!(plain, "io.k8s.api.core.v1.Pod");
    }

    proptest::proptest! {
        #[test]
        fn a_location_names_what_pushing_its_tokens_names(
            keys in proptest::collection::vec("\\PC{0,12}", 0..6),
            index in 0usize..1000,
        ) {
            /// The pointer of the chain `at`, `keys`…, `index`.
            fn pointer_of(at: &Location<'_>, keys: &[String], index: usize) -> JsonPointer {
                match keys.split_first() {
                    Some((key, rest)) => pointer_of(&at.key(key), rest, index),
                    None => at.index(index).to_pointer(),
                }
            }
            let base = JsonPointer::root().push("base");
            let p = pointer_of(&Location::at(&base), &keys, index);
            let pushed = keys.iter().fold(base.clone(), |p, k| p.push(k)).index(index);
            proptest::prop_assert_eq!(p.as_str(), pushed.as_str());
            proptest::prop_assert_eq!(p.0.capacity(), p.0.len());
        }

        #[test]
        fn any_token_round_trips_through_a_fragment(token in "\\PC{0,24}") {
            let mut out = String::from("#/");
            push_fragment_token(&mut out, &token);
            proptest::prop_assert!(
                out.bytes().all(|b| fragment_safe(b) || b"#/~%".contains(&b)),
                "{out}"
            );
            let pointer = fragment_pointer(&out[1..]).unwrap();
            proptest::prop_assert_eq!(unescape_token(&pointer[1..]), token.as_str());
        }
    }

    #[test]
    fn root_is_empty_and_displays_readably() {
        assert_eq!(JsonPointer::root().as_str(), "");
        assert_eq!(JsonPointer::root().to_string(), "(document root)");
    }
}
