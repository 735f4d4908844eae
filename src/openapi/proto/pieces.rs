//! The protobuf of a Swagger 2.0 document too large to hold as a tree
//! (the merged `/openapi/v2` at thousands of CRDs is hundreds of
//! megabytes of JSON), encoded from its text as it is read, a few
//! hundred kilobytes at a time.
//!
//! A protobuf parser merges a message field that occurs more than once
//! and joins the occurrences of a repeated field in order, so a
//! `Document` may be written as several: one per top-level member, and
//! the members of its maps (`paths`, `definitions` and the other three,
//! which gnostic writes as repeated `Named…` pairs) split over as many
//! occurrences as it takes. A piece then holds at most one member past
//! its size, and a member comes from one downstream's document. Each piece is the encoding of a small document holding only
//! that part, made by the same walk as the whole one ([`super::encode`]);
//! decoded, the pieces are the whole document's encoding.

use std::io::Read;
use std::ops::ControlFlow;

use super::{ProtoError, encode_document, v2};

/// The top-level members whose own members are split over pieces: the
/// maps, whose messages hold nothing but repeated fields. `paths` and
/// `definitions` grow with the cluster; any of them may be as large as
/// the downstreams make it.
const SPLIT: [&[u8]; 5] = [
    b"\"paths\"",
    b"\"definitions\"",
    b"\"parameters\"",
    b"\"responses\"",
    b"\"securityDefinitions\"",
];

/// Why the pieces could not all be made.
#[derive(Debug, thiserror::Error)]
pub enum PiecesError {
    /// Reading the JSON failed.
    #[error("the JSON could not be read")]
    Read(#[from] std::io::Error),
    /// The text is not one JSON object.
    #[error("not a JSON object (byte {offset})")]
    Shape {
        /// Where, in the text.
        offset: u64,
    },
    /// A part of the document has no encoding.
    #[error(transparent)]
    Proto(#[from] ProtoError),
    /// The receiver of the pieces wanted no more.
    #[error("stopped by the receiver")]
    Stopped,
}

/// Reads the Swagger 2.0 document `json` and hands its protobuf
/// (gnostic's `openapi.v2.Document`) to `out` a piece at a time: each
/// piece a whole `Document` message, pieces of maps holding members of
/// about `piece_bytes` of JSON together. Holds one piece's text, tree
/// and encoding at a time; `out` returning `Break` ends it.
///
/// # Errors
/// [`PiecesError`]; what was handed to `out` before is then not a
/// document.
pub fn openapi_v2_pieces(
    json: impl Read,
    piece_bytes: usize,
    mut out: impl FnMut(&[u8]) -> ControlFlow<()>,
) -> Result<(), PiecesError> {
    let mut s = Scan::new(json);
    let mut piece = Piece { text: Vec::new(), out: &mut out };
    s.expect(b'{')?;
    if s.peek_after_space()? == Some(b'}') {
        s.bump();
        piece.whole(b"{}")?;
        return s.at_end();
    }
    let mut key = Vec::new();
    loop {
        key.clear();
        s.skip_space()?;
        s.string(&mut key)?;
        s.expect(b':')?;
        if SPLIT.contains(&key.as_slice()) && s.peek_after_space()? == Some(b'{') {
            s.bump();
            split(&mut s, &key, piece_bytes, &mut piece)?;
        } else {
            piece.text.clear();
            piece.text.push(b'{');
            piece.text.extend_from_slice(&key);
            piece.text.push(b':');
            s.skip_space()?;
            s.value(&mut piece.text)?;
            piece.text.push(b'}');
            piece.send()?;
        }
        match s.peek_after_space()? {
            Some(b',') => s.bump(),
            Some(b'}') => {
                s.bump();
                return s.at_end();
            }
            _ => return Err(s.shape()),
        }
    }
}

/// The members of the map `key` (its `{` read), a piece for about every
/// `piece_bytes` of them; one empty map when it has none, as the whole
/// encoding writes an empty message.
fn split<R: Read>(
    s: &mut Scan<R>,
    key: &[u8],
    piece_bytes: usize,
    piece: &mut Piece<'_, impl FnMut(&[u8]) -> ControlFlow<()>>,
) -> Result<(), PiecesError> {
    let open = |text: &mut Vec<u8>| {
        text.clear();
        text.push(b'{');
        text.extend_from_slice(key);
        text.extend_from_slice(b":{");
    };
    open(&mut piece.text);
    let start = piece.text.len();
    if s.peek_after_space()? == Some(b'}') {
        s.bump();
        piece.text.extend_from_slice(b"}}");
        return piece.send();
    }
    loop {
        if piece.text.len() > start {
            piece.text.push(b',');
        }
        s.skip_space()?;
        s.string(&mut piece.text)?;
        s.expect(b':')?;
        piece.text.push(b':');
        s.skip_space()?;
        s.value(&mut piece.text)?;
        let last = match s.peek_after_space()? {
            Some(b',') => false,
            Some(b'}') => true,
            _ => return Err(s.shape()),
        };
        s.bump();
        if last || piece.text.len() - start >= piece_bytes {
            piece.text.extend_from_slice(b"}}");
            piece.send()?;
            if last {
                return Ok(());
            }
            open(&mut piece.text);
        }
    }
}

/// The text of the piece being gathered, and where pieces go.
struct Piece<'o, F> {
    text: Vec<u8>,
    out: &'o mut F,
}

impl<F: FnMut(&[u8]) -> ControlFlow<()>> Piece<'_, F> {
    /// Encodes the text gathered and hands it on.
    fn send(&mut self) -> Result<(), PiecesError> {
        let encoded = encode_document(&v2::DOCUMENT, &self.text)?;
        match (self.out)(&encoded) {
            ControlFlow::Continue(()) => Ok(()),
            ControlFlow::Break(()) => Err(PiecesError::Stopped),
        }
    }

    fn whole(&mut self, text: &[u8]) -> Result<(), PiecesError> {
        self.text.clear();
        self.text.extend_from_slice(text);
        self.send()
    }
}

/// Bytes read a buffer at a time, for finding where JSON values end
/// without parsing them (the piece's parse checks them).
struct Scan<R> {
    from: R,
    buf: Box<[u8]>,
    at: usize,
    end: usize,
    /// Bytes consumed before `buf`, for errors.
    before: u64,
}

/// What the scanner reads at a time.
const READ_BYTES: usize = 64 * 1024;

impl<R: Read> Scan<R> {
    fn new(from: R) -> Self {
        Self { from, buf: vec![0; READ_BYTES].into_boxed_slice(), at: 0, end: 0, before: 0 }
    }

    /// The bytes not consumed yet, read when there are none; empty at
    /// the end of the input.
    fn fill(&mut self) -> std::io::Result<&[u8]> {
        if self.at == self.end {
            self.before += self.end as u64;
            self.at = 0;
            self.end = loop {
                match self.from.read(&mut self.buf) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            };
        }
        Ok(&self.buf[self.at..self.end])
    }

    fn bump(&mut self) {
        self.at = (self.at + 1).min(self.end);
    }

    fn shape(&self) -> PiecesError {
        PiecesError::Shape { offset: self.before + self.at as u64 }
    }

    fn skip_space(&mut self) -> std::io::Result<()> {
        loop {
            let buf = self.fill()?;
            if buf.is_empty() {
                return Ok(());
            }
            let space =
                buf.iter().take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')).count();
            let all = space == buf.len();
            self.at += space;
            if !all {
                return Ok(());
            }
        }
    }

    fn peek_after_space(&mut self) -> std::io::Result<Option<u8>> {
        self.skip_space()?;
        Ok(self.fill()?.first().copied())
    }

    fn expect(&mut self, byte: u8) -> Result<(), PiecesError> {
        if self.peek_after_space()? == Some(byte) {
            self.bump();
            Ok(())
        } else {
            Err(self.shape())
        }
    }

    /// Only space is left.
    fn at_end(&mut self) -> Result<(), PiecesError> {
        match self.peek_after_space()? {
            None => Ok(()),
            Some(_) => Err(self.shape()),
        }
    }

    /// Copies a string, quotes and escapes as written, onto `into`.
    fn string(&mut self, into: &mut Vec<u8>) -> Result<(), PiecesError> {
        if self.fill()?.first() != Some(&b'"') {
            return Err(self.shape());
        }
        into.push(b'"');
        self.bump();
        self.until_end(into, Nesting { depth: 0, in_string: true, escaped: false })
    }

    /// Copies one value as written onto `into`: a string, an object or
    /// array with everything in it, or the bytes of a number or literal.
    fn value(&mut self, into: &mut Vec<u8>) -> Result<(), PiecesError> {
        match self.fill()?.first() {
            None => Err(self.shape()),
            Some(b'"') => self.string(into),
            Some(b'{' | b'[') => self.until_end(into, Nesting::default()),
            Some(_) => loop {
                let buf = self.fill()?;
                let n = buf
                    .iter()
                    .take_while(|b| !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                    .count();
                let stop = n < buf.len() || buf.is_empty();
                into.extend_from_slice(&buf[..n]);
                self.at += n;
                if stop {
                    return Ok(());
                }
            },
        }
    }

    /// Copies bytes onto `into` until `nesting` is back at depth 0.
    fn until_end(&mut self, into: &mut Vec<u8>, mut nesting: Nesting) -> Result<(), PiecesError> {
        loop {
            let buf = self.fill()?;
            if buf.is_empty() {
                return Err(self.shape());
            }
            let ended = buf.iter().position(|&b| nesting.step(b));
            let n = ended.map_or(buf.len(), |i| i + 1);
            into.extend_from_slice(&buf[..n]);
            self.at += n;
            if ended.is_some() {
                return Ok(());
            }
        }
    }
}

/// Where a scan is in nested brackets and strings.
#[derive(Debug, Default)]
struct Nesting {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl Nesting {
    /// Takes `byte`; `true` when it closes the outermost string, object or
    /// array.
    fn step(&mut self, byte: u8) -> bool {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                // A string alone is the value; inside brackets it is not.
                return self.depth == 0;
            }
            return false;
        }
        match byte {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                return self.depth == 0;
            }
            _ => {}
        }
        false
    }
}

#[cfg(test)]
mod tests;
