//! JSON text → [`Node`], borrowing every string that has no escapes.
//!
//! It accepts exactly what `serde_json::from_slice::<Value>` accepts and
//! builds the same document: the same grammar, the same nesting limit, the
//! same numbers, and for a repeated key the last value in the first key's
//! place (what `preserve_order`'s `IndexMap` does). Where it could disagree
//! — input it rejects — the caller ([`crate::json::document::parse_tree`]) falls
//! back to `serde_json`, so an error here never changes what a document
//! means, only how fast it is read.

use super::scan::{skip_plain, skip_spaces};
use super::{Node, Number, Object, Text};

/// How many arrays and objects may nest: `serde_json`'s limit (it refuses
/// the 128th level), so that both parsers accept the same documents and a
/// hostile document cannot exhaust the stack.
pub const MAX_DEPTH: usize = 127;

/// Why text is not JSON, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at byte {offset}")]
pub struct SyntaxError {
    /// Byte offset of the problem in the input.
    pub offset: usize,
    /// What the problem is.
    pub kind: SyntaxErrorKind,
}

/// What is wrong with the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxErrorKind {
    /// The bytes are not UTF-8.
    #[error("invalid UTF-8")]
    NotUtf8,
    /// The text ends inside a value.
    #[error("unexpected end of input")]
    UnexpectedEnd,
    /// A character that cannot stand here.
    #[error("unexpected character")]
    Unexpected,
    /// A control character inside a string.
    #[error("control character in a string")]
    ControlCharacter,
    /// A backslash escape JSON does not define.
    #[error("invalid escape")]
    InvalidEscape,
    /// A `\u` escape of half a surrogate pair.
    #[error("unpaired surrogate in a \\u escape")]
    LoneSurrogate,
    /// A number `serde_json` cannot represent (such as `1e400`).
    #[error("number out of range")]
    NumberOutOfRange,
    /// Arrays and objects nest deeper than [`MAX_DEPTH`].
    #[error("nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// Something follows the document.
    #[error("trailing characters")]
    TrailingCharacters,
    /// More values than the caller's budget ([`parse_within`]) allows.
    #[error("more values than the budget allows")]
    TooManyValues,
}

/// Parses one JSON document; its strings without escapes borrow from
/// `bytes`.
///
/// # Errors
/// [`SyntaxError`] when `bytes` is not one JSON document that
/// `serde_json` would read.
#[cfg(test)]
pub fn parse(bytes: &[u8]) -> Result<Node<'_>, SyntaxError> {
    parse_within(bytes, usize::MAX)
}

/// Parses one JSON document (its strings without escapes borrow from
/// `bytes`), refusing a document of more than `max_values` values (every
/// scalar, array, object and object key counts one).
///
/// A tree costs 32 bytes a value whatever the text spent on it, so a
/// token-dense document (`[1,1,1,…`) builds sixteen times its size; the
/// count is checked as each value is read, before it is stored, which
/// bounds what the parser ever holds to the budget times a small factor —
/// also for a document that turns out to be truncated at its end.
///
/// # Errors
/// [`SyntaxError`] when `bytes` is not one JSON document that
/// `serde_json` would read; [`SyntaxErrorKind::TooManyValues`] past the
/// budget.
pub fn parse_within(bytes: &[u8], max_values: usize) -> Result<Node<'_>, SyntaxError> {
    parse_noting_refs(bytes, max_values).map(|(node, _)| node)
}

/// [`parse_within`], also saying whether some `$ref` member holds a string
/// that does not start with `#`: a reference that may name another file.
/// `convert` follows those; when there are none it need not walk the whole
/// tree again to find out.
///
/// # Errors
/// As [`parse_within`].
pub fn parse_noting_refs(bytes: &[u8], max_values: usize) -> Result<(Node<'_>, bool), SyntaxError> {
    let text = simdutf8::compat::from_utf8(bytes)
        .map_err(|e| SyntaxError { offset: e.valid_up_to(), kind: SyntaxErrorKind::NotUtf8 })?;
    let mut p = Parser {
        text,
        bytes,
        pos: 0,
        depth: 0,
        values_left: max_values,
        items: Vec::new(),
        members: Vec::new(),
        decoded: String::new(),
        other_refs: false,
    };
    p.skip_whitespace();
    let node = p.value()?;
    p.skip_whitespace();
    if p.pos != bytes.len() {
        return Err(p.error(SyntaxErrorKind::TrailingCharacters));
    }
    Ok((node, p.other_refs))
}

struct Parser<'a> {
    /// The input, checked to be UTF-8 once up front so that strings are
    /// sliced out of it without checking each again.
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
    /// How many more values the budget allows.
    values_left: usize,
    /// Items of the arrays being read, innermost last; each array takes
    /// its own off the top at its end, in one allocation of the right size
    /// instead of a regrowing `Vec` per array.
    items: Vec<Node<'a>>,
    /// Members of the objects being read, the same way.
    members: Vec<(Text<'a>, Node<'a>)>,
    /// Where a string with escapes is decoded before it is stored in one
    /// allocation of its size; reused from string to string.
    decoded: String,
    /// Whether a `$ref` member holds a string not starting with `#`.
    other_refs: bool,
}

impl<'a> Parser<'a> {
    fn error(&self, kind: SyntaxErrorKind) -> SyntaxError {
        SyntaxError { offset: self.pos, kind }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// The same whitespace as `serde_json`: space, tab, line feed,
    /// carriage return.
    ///
    /// Inlined up to its first two bytes: the parser asks five times per
    /// object member and mostly finds none (before a `:`, after a string)
    /// or one space (after a `:`, and a `,` or `{` in a one-line object),
    /// where a call cost more than the look.
    #[inline(always)]
    fn skip_whitespace(&mut self) {
        // Every byte above the space is something other than whitespace.
        match self.peek() {
            Some(b) if b > b' ' => return,
            Some(b' ') if self.bytes.get(self.pos + 1).is_some_and(|&b| b > b' ') => {
                self.pos += 1;
                return;
            }
            _ => {}
        }
        self.skip_whitespace_run();
    }

    fn skip_whitespace_run(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\r') => self.pos += 1,
                // Indentation, most of a pretty-printed document's
                // whitespace (730 KB of Kubernetes 1.27's 4 MB), is read
                // sixteen spaces at a time; the single space after a colon
                // a byte at a time, which costs less for one.
                Some(b'\n') => self.pos = skip_spaces(self.bytes, self.pos + 1),
                _ => return,
            }
        }
    }

    /// `self.text[from..to]`; both ends are next to ASCII bytes the caller
    /// found, hence on character boundaries.
    fn slice(&self, from: usize, to: usize) -> Result<&'a str, SyntaxError> {
        self.text.get(from..to).ok_or(SyntaxError { offset: from, kind: SyntaxErrorKind::NotUtf8 })
    }

    /// Counts one value (or object key) against the budget.
    fn count(&mut self) -> Result<(), SyntaxError> {
        self.values_left =
            self.values_left.checked_sub(1).ok_or(self.error(SyntaxErrorKind::TooManyValues))?;
        Ok(())
    }

    fn value(&mut self) -> Result<Node<'a>, SyntaxError> {
        self.count()?;
        match self.peek() {
            None => Err(self.error(SyntaxErrorKind::UnexpectedEnd)),
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => Ok(Node::String(self.string()?)),
            Some(b't') => self.literal(b"true", Node::Bool(true)),
            Some(b'f') => self.literal(b"false", Node::Bool(false)),
            Some(b'n') => self.literal(b"null", Node::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error(SyntaxErrorKind::Unexpected)),
        }
    }

    fn literal(&mut self, word: &[u8], node: Node<'a>) -> Result<Node<'a>, SyntaxError> {
        match self.bytes.get(self.pos..self.pos + word.len()) {
            Some(found) if found == word => {
                self.pos += word.len();
                Ok(node)
            }
            Some(_) => Err(self.error(SyntaxErrorKind::Unexpected)),
            None => Err(self.error(SyntaxErrorKind::UnexpectedEnd)),
        }
    }

    fn enter(&mut self) -> Result<(), SyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(SyntaxErrorKind::TooDeep));
        }
        self.pos += 1;
        self.skip_whitespace();
        Ok(())
    }

    fn array(&mut self) -> Result<Node<'a>, SyntaxError> {
        self.enter()?;
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Node::Array(Vec::new()));
        }
        let base = self.items.len();
        loop {
            let item = self.value()?;
            self.items.push(item);
            if !self.more_before(b']')? {
                break;
            }
        }
        self.depth -= 1;
        Ok(Node::Array(self.items.split_off(base)))
    }

    /// After an array item or an object member: `,` (another follows,
    /// `true`) or `close` (the container ends, `false`), whitespace around
    /// either consumed.
    fn more_before(&mut self, close: u8) -> Result<bool, SyntaxError> {
        self.skip_whitespace();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                self.skip_whitespace();
                Ok(true)
            }
            Some(b) if b == close => {
                self.pos += 1;
                Ok(false)
            }
            Some(_) => Err(self.error(SyntaxErrorKind::Unexpected)),
            None => Err(self.error(SyntaxErrorKind::UnexpectedEnd)),
        }
    }

    fn object(&mut self) -> Result<Node<'a>, SyntaxError> {
        self.enter()?;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Node::Object(Object::new()));
        }
        let base = self.members.len();
        loop {
            match self.peek() {
                Some(b'"') => {}
                Some(_) => return Err(self.error(SyntaxErrorKind::Unexpected)),
                None => return Err(self.error(SyntaxErrorKind::UnexpectedEnd)),
            }
            self.count()?;
            let key = self.string()?;
            self.skip_whitespace();
            match self.peek() {
                Some(b':') => self.pos += 1,
                Some(_) => return Err(self.error(SyntaxErrorKind::Unexpected)),
                None => return Err(self.error(SyntaxErrorKind::UnexpectedEnd)),
            }
            self.skip_whitespace();
            let value = self.value()?;
            if let Node::String(r) = &value
                && !r.starts_with('#')
                && key == "$ref"
            {
                self.other_refs = true;
            }
            self.members.push((key, value));
            if !self.more_before(b'}')? {
                break;
            }
        }
        self.depth -= 1;
        Ok(Node::Object(Object::from_members(self.members.split_off(base))))
    }

    /// A string starting at the opening quote under `self.pos`.
    #[inline(always)]
    fn string(&mut self) -> Result<Text<'a>, SyntaxError> {
        let start = self.pos + 1;
        let mut i = skip_plain(self.bytes, start);
        loop {
            match self.bytes.get(i) {
                None => {
                    self.pos = i;
                    return Err(self.error(SyntaxErrorKind::UnexpectedEnd));
                }
                Some(b'"') => {
                    let text = self.slice(start, i)?;
                    self.pos = i + 1;
                    return Ok(Text::plain(text));
                }
                Some(b'\\') => {
                    let head = self.slice(start, i)?;
                    self.pos = i;
                    return self.escaped_string(head);
                }
                Some(&b) if b < 0x20 => {
                    self.pos = i;
                    return Err(self.error(SyntaxErrorKind::ControlCharacter));
                }
                Some(_) => i += 1,
            }
        }
    }

    /// The rest of a string that has escapes; `head` is what came before
    /// the first backslash, which is under `self.pos`.
    fn escaped_string(&mut self, head: &str) -> Result<Text<'a>, SyntaxError> {
        let mut s = std::mem::take(&mut self.decoded);
        s.clear();
        s.push_str(head);
        // Runs between escapes are plain by construction; only what an
        // escape stands for can need escaping again on output.
        let mut plain = true;
        loop {
            let run_start = self.pos;
            self.pos = skip_plain(self.bytes, self.pos);
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            s.push_str(self.slice(run_start, self.pos)?);
            match self.peek() {
                None => return Err(self.error(SyntaxErrorKind::UnexpectedEnd)),
                Some(b'"') => {
                    self.pos += 1;
                    let text = Text::owned(&s, plain);
                    self.decoded = s;
                    return Ok(text);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let c = self.escape()?;
                    plain &= c >= ' ' && c != '"' && c != '\\';
                    s.push(c);
                }
                Some(_) => return Err(self.error(SyntaxErrorKind::ControlCharacter)),
            }
        }
    }

    /// The character of the escape after a backslash.
    fn escape(&mut self) -> Result<char, SyntaxError> {
        let Some(b) = self.peek() else {
            return Err(self.error(SyntaxErrorKind::UnexpectedEnd));
        };
        self.pos += 1;
        Ok(match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = self.hex4()?;
                let code = match first {
                    0xD800..=0xDBFF => {
                        if self.bytes.get(self.pos..self.pos + 2) != Some(b"\\u") {
                            return Err(self.error(SyntaxErrorKind::LoneSurrogate));
                        }
                        self.pos += 2;
                        let second = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&second) {
                            return Err(self.error(SyntaxErrorKind::LoneSurrogate));
                        }
                        0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                    }
                    0xDC00..=0xDFFF => return Err(self.error(SyntaxErrorKind::LoneSurrogate)),
                    other => other,
                };
                char::from_u32(code).ok_or(self.error(SyntaxErrorKind::InvalidEscape))?
            }
            _ => return Err(self.error(SyntaxErrorKind::InvalidEscape)),
        })
    }

    fn hex4(&mut self) -> Result<u32, SyntaxError> {
        let mut code = 0;
        for _ in 0..4 {
            let Some(b) = self.peek() else {
                return Err(self.error(SyntaxErrorKind::UnexpectedEnd));
            };
            let digit =
                char::from(b).to_digit(16).ok_or(self.error(SyntaxErrorKind::InvalidEscape))?;
            code = code * 16 + digit;
            self.pos += 1;
        }
        Ok(code)
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    /// A number. Integers that `serde_json` would write back unchanged stay
    /// a slice of the input; anything else is read by `serde_json` itself,
    /// so that its value (and how it is written) is exactly `serde_json`'s.
    fn number(&mut self) -> Result<Node<'a>, SyntaxError> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let int_digits = match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                1
            }
            Some(b'1'..=b'9') => self.digits(),
            Some(_) => return Err(self.error(SyntaxErrorKind::Unexpected)),
            None => return Err(self.error(SyntaxErrorKind::UnexpectedEnd)),
        };
        let mut integer = true;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            integer = false;
            if self.digits() == 0 {
                return Err(self.error(
                    self.peek()
                        .map_or(SyntaxErrorKind::UnexpectedEnd, |_| SyntaxErrorKind::Unexpected),
                ));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            integer = false;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error(
                    self.peek()
                        .map_or(SyntaxErrorKind::UnexpectedEnd, |_| SyntaxErrorKind::Unexpected),
                ));
            }
        }
        let token = self.slice(start, self.pos)?;
        // u64 holds every 19-digit number, i64 every 18-digit one; `-0` is
        // a float to serde_json.
        let fits = if negative { int_digits <= 18 && token != "-0" } else { int_digits <= 19 };
        if integer && fits {
            return Ok(Node::Number(Number::Integer(token)));
        }
        let parsed = token
            .parse::<serde_json::Number>()
            .map_err(|_| SyntaxError { offset: start, kind: SyntaxErrorKind::NumberOutOfRange })?;
        // An integer beyond 64 bits keeps its digits rather than become the
        // float serde_json reads it as (`-0` is serde_json's float `-0.0`).
        if integer && parsed.is_f64() && token != "-0" {
            return Ok(Node::Number(Number::Big(Text::plain(token))));
        }
        Ok(Node::Number(Number::Parsed(parsed)))
    }
}
