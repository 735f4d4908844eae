//! [`Node`] → compact JSON, byte for byte as `serde_json::to_vec` writes
//! the same document: no whitespace, members in order, strings escaped as
//! `serde_json` escapes them, numbers in its format.
//!
//! Strings the parser found without escapes are copied as they are; that
//! is most of the text of a Kubernetes document (descriptions), and
//! checking every byte of them for escaping again was the largest single
//! cost of writing the output.

use super::scan::skip_plain;
use super::{Node, Number, Text};

const HEX: &[u8; 16] = b"0123456789abcdef";

impl Node<'_> {
    /// Appends this node as compact JSON to `out`.
    pub fn render(&self, out: &mut Vec<u8>) {
        match self {
            Node::Null => out.extend_from_slice(b"null"),
            Node::Bool(true) => out.extend_from_slice(b"true"),
            Node::Bool(false) => out.extend_from_slice(b"false"),
            Node::Number(Number::Integer(text)) => out.extend_from_slice(text.as_bytes()),
            Node::Number(Number::Big(text)) => out.extend_from_slice(text.as_bytes()),
            // `Number`'s `Display` is the serializer's itoa/ryu output.
            Node::Number(Number::Parsed(n)) => out.extend_from_slice(n.to_string().as_bytes()),
            Node::String(s) => write_text(out, s),
            Node::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.render(out);
                }
                out.push(b']');
            }
            Node::Object(o) => {
                out.push(b'{');
                for (i, (k, v)) in o.members.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_key(out, k);
                    v.render(out);
                }
                out.push(b'}');
            }
            Node::Shared(shared) => match shared.rendered() {
                Some(bytes) => out.extend_from_slice(bytes),
                None => shared.node().render(out),
            },
        }
    }
}

impl Node<'_> {
    /// How many bytes [`Node::render`] appends, without rendering: what a
    /// caller checks against a budget before it allocates the output.
    /// Saturating, so a hostile tree cannot wrap it round.
    #[must_use]
    pub fn rendered_len(&self) -> usize {
        self.rendered_len_within(usize::MAX).unwrap_or(usize::MAX)
    }

    /// [`Node::rendered_len`] when it is at most `limit`, else `None`,
    /// found without walking or scanning much past the limit: for a
    /// caller about to keep the bytes, which a hostile tree can make
    /// many times larger than itself (one long string at many spots).
    #[must_use]
    pub(crate) fn rendered_len_within(&self, limit: usize) -> Option<usize> {
        let mut total = 0;
        self.add_rendered_len(&mut total, limit).then_some(total)
    }

    /// Adds this node's rendered length to `total`; `false` once it passes
    /// `limit`.
    fn add_rendered_len(&self, total: &mut usize, limit: usize) -> bool {
        let add = |total: &mut usize, n: usize| {
            *total = total.saturating_add(n);
            *total <= limit
        };
        match self {
            Node::Null | Node::Bool(true) => add(total, 4),
            Node::Bool(false) => add(total, 5),
            Node::Number(Number::Integer(text)) => add(total, text.len()),
            Node::Number(Number::Big(text)) => add(total, text.len()),
            Node::Number(Number::Parsed(n)) => add(total, n.to_string().len()),
            // Escapes only add: a text longer than what is left is not
            // scanned for them.
            Node::String(s) => {
                total.saturating_add(s.len() + 2) <= limit && add(total, text_len(s))
            }
            Node::Array(items) => {
                add(total, 2 + items.len().saturating_sub(1))
                    && items.iter().all(|item| item.add_rendered_len(total, limit))
            }
            Node::Object(o) => {
                add(total, 2 + o.members.len().saturating_sub(1))
                    && o.members.iter().all(|(k, v)| {
                        add(total, text_len(k) + 1) && v.add_rendered_len(total, limit)
                    })
            }
            Node::Shared(shared) => match shared.rendered() {
                Some(bytes) => add(total, bytes.len()),
                None => shared.node().add_rendered_len(total, limit),
            },
        }
    }
}

/// How many bytes [`write_text`] appends for `text`.
pub(crate) fn text_len(text: &Text<'_>) -> usize {
    if text.is_plain() {
        return text.len() + 2;
    }
    let escapes: usize = text
        .as_bytes()
        .iter()
        .map(|&b| match b {
            b'"' | b'\\' | 0x08 | 0x09 | 0x0A | 0x0C | 0x0D => 1,
            0x00..=0x1F => 5,
            _ => 0,
        })
        .sum();
    text.len() + 2 + escapes
}

/// Appends `text` as a JSON string.
#[inline]
pub(crate) fn write_text(out: &mut Vec<u8>, text: &Text<'_>) {
    write_quoted(out, text, b"");
}

/// Appends `key` as a JSON string and the `:` after it.
#[inline]
pub(crate) fn write_key(out: &mut Vec<u8>, key: &Text<'_>) {
    write_quoted(out, key, b":");
}

/// Appends `text` as a JSON string, then `after`, with one reservation.
///
/// Inlined, with escaping out of line: almost all of a Kubernetes
/// document's hundred thousand strings are plain, and an escaping loop
/// inlined here would have every call save and restore registers for it.
#[inline(always)]
fn write_quoted(out: &mut Vec<u8>, text: &Text<'_>, after: &[u8]) {
    match text.plain_bytes() {
        Some(bytes) => {
            out.reserve(bytes.len() + 2 + after.len());
            out.push(b'"');
            out.extend_from_slice(bytes);
            out.push(b'"');
            out.extend_from_slice(after);
        }
        None => {
            write_str(out, text);
            out.extend_from_slice(after);
        }
    }
}

/// Appends `s` as a JSON string, escaped as `serde_json` escapes: `"` and
/// `\` with a backslash, the control characters with a short escape where
/// JSON has one and `\u00XX` (lower-case hex) otherwise; nothing else.
#[inline(never)]
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut run = 0;
    loop {
        let at = skip_plain(bytes, run);
        out.extend_from_slice(bytes.get(run..at).unwrap_or_default());
        let Some(&b) = bytes.get(at) else { break };
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x09 => b't',
            0x0A => b'n',
            0x0C => b'f',
            0x0D => b'r',
            _ => b'u',
        };
        out.push(b'\\');
        out.push(short);
        if short == b'u' {
            out.extend_from_slice(b"00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xF)]);
        }
        run = at + 1;
    }
    out.push(b'"');
}
