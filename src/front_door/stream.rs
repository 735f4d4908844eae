//! A long-running pass (a watch, `logs --follow`) whose answer the front
//! door reads itself, on a connection of its own to the owner, into
//! [`READ_BUFFER`] bytes.
//!
//! Such a pass lasts, and thousands may be open at once. awc reads an
//! answer in steps of 32 KiB and keeps a write buffer of 8 KiB for as long
//! as its connection lives: most of what an open watch cost
//! (BENCHMARKS.md, "The front door"). Read here, the owner's answer waits
//! at the owner, held back by TCP, until the client took what was handed
//! on; what the proxy holds is this buffer and one piece of it.
//!
//! The answer's framing is read strictly ([`framing`]): a `Content-Length`
//! beside a `Transfer-Encoding`, lengths that disagree, or a coding other
//! than `chunked` is the owner's failure (502), never a guess at where the
//! body ends. Only passes without a request body come here; the rest go
//! through awc ([`super::pass()`]).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use bytes::Bytes;
use futures_util::Stream;
use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};

use super::Target;
use super::headers;
use super::owner::{Upstream, connect, read_head};

/// What the owner's answer is read into, and the most handed on in one
/// piece. A chunk-size line or a trailer line must fit in it.
pub(super) const READ_BUFFER: usize = 2 * 1024;

/// The most trailer bytes after a chunked body (they are read and
/// dropped: the answer's head has gone to the client already).
const TRAILER_LIMIT: usize = 16 * 1024;

/// Why a long-running pass got no usable answer from its owner.
#[derive(Debug, thiserror::Error)]
pub(super) enum StreamError {
    /// No connection (refused, unreachable, TLS failed, timed out).
    #[error("connecting to the owner")]
    Connect(#[source] io::Error),
    /// The request head could not be written, or the answer's head read.
    #[error("exchanging the request head and the answer's head")]
    Head(#[source] io::Error),
    /// An interim (1xx) answer to a request that asked for none.
    #[error("an interim answer {0} to a request that asked for none")]
    Interim(u16),
    /// A header the proxy cannot pass on.
    #[error("a header of the answer that is not valid HTTP")]
    Header,
    /// The answer's framing is ambiguous or malformed.
    #[error("the answer's framing")]
    Framing(#[from] FramingError),
}

impl StreamError {
    /// Whether the owner could not be reached at all (503, as the pooled
    /// path answers a refused connection); anything else is its failure
    /// to answer (502).
    pub(super) fn unreachable(&self) -> bool {
        matches!(self, Self::Connect(_))
    }
}

/// What is wrong with the framing of an owner's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(super) enum FramingError {
    /// Both `Content-Length` and `Transfer-Encoding` (RFC 9112 §6.3: a
    /// sign of smuggling, refused rather than resolved).
    #[error("both Content-Length and Transfer-Encoding")]
    LengthAndCoding,
    /// A transfer coding other than `chunked` alone.
    #[error("a transfer coding other than chunked")]
    Coding,
    /// A `Content-Length` that is not a number, or values that disagree.
    #[error("an invalid or conflicting Content-Length")]
    Length,
    /// A chunk-size line that does not parse, or a chunk not followed by
    /// CRLF.
    #[error("a malformed chunk")]
    Chunk,
    /// A chunk-size or trailer line longer than the read buffer, or more
    /// trailers than [`TRAILER_LIMIT`].
    #[error("a chunk-size or trailer line too long")]
    LineTooLong,
    /// The owner closed before the body's end.
    #[error("the owner closed in the middle of the body")]
    Ended,
}

/// How far into the owner's body the reading is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// `Content-Length`: this many bytes are left.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked(Chunk),
    /// Neither: the body ends when the owner closes.
    Close,
    /// The body is whole (or there is none).
    Done,
}

/// Where in a chunked body the next byte is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// A chunk-size line.
    Size,
    /// This many bytes of chunk data.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// Trailer lines, up to an empty one; this many bytes of them so far.
    Trailers(usize),
}

/// What the next bytes of a body are, as [`Framing::step`] reads them.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// This many bytes of framing, for nobody.
    Framing(usize),
    /// This many bytes of the body, for the client.
    Data(usize),
    /// Nothing can be read without more bytes.
    More,
    /// The body is whole.
    Done,
}

impl Framing {
    /// Reads the start of `input` (what is buffered) and moves on past
    /// what it returns: the caller takes the bytes a `Framing` or `Data`
    /// step names off the front.
    fn step(&mut self, input: &[u8]) -> Result<Step, FramingError> {
        let data = |left: &mut u64| {
            let n = usize::try_from(*left).map_or(input.len(), |left| left.min(input.len()));
            // `n` is at most `*left`.
            *left -= n as u64;
            n
        };
        match self {
            Self::Done | Self::Length(0) => {
                *self = Self::Done;
                Ok(Step::Done)
            }
            _ if input.is_empty() => Ok(Step::More),
            Self::Length(left) => Ok(Step::Data(data(left))),
            Self::Close => Ok(Step::Data(input.len())),
            Self::Chunked(chunk) => match chunk {
                Chunk::Size => match httparse::parse_chunk_size(input) {
                    Ok(httparse::Status::Complete((used, 0))) => {
                        *chunk = Chunk::Trailers(0);
                        Ok(Step::Framing(used))
                    }
                    Ok(httparse::Status::Complete((used, size))) => {
                        *chunk = Chunk::Data(size);
                        Ok(Step::Framing(used))
                    }
                    Ok(httparse::Status::Partial) => more_of_a_line(input),
                    Err(_) => Err(FramingError::Chunk),
                },
                Chunk::Data(left) => {
                    let n = data(left);
                    if *left == 0 {
                        *chunk = Chunk::DataEnd;
                    }
                    Ok(Step::Data(n))
                }
                Chunk::DataEnd => match input {
                    [b'\r', b'\n', ..] => {
                        *chunk = Chunk::Size;
                        Ok(Step::Framing(2))
                    }
                    [b'\r'] => Ok(Step::More),
                    _ => Err(FramingError::Chunk),
                },
                Chunk::Trailers(seen) => match input.windows(2).position(|w| w == b"\r\n") {
                    Some(0) => {
                        *self = Self::Done;
                        Ok(Step::Framing(2))
                    }
                    Some(end) => {
                        *seen += end + 2;
                        if *seen > TRAILER_LIMIT {
                            return Err(FramingError::LineTooLong);
                        }
                        Ok(Step::Framing(end + 2))
                    }
                    None => more_of_a_line(input),
                },
            },
        }
    }

    /// Whether the owner's close, now, ends the body where it should.
    fn at_close(self) -> Result<(), FramingError> {
        match self {
            Self::Close | Self::Done | Self::Length(0) => Ok(()),
            _ => Err(FramingError::Ended),
        }
    }
}

/// More bytes for a line that has not ended, while one can still fit.
fn more_of_a_line(input: &[u8]) -> Result<Step, FramingError> {
    if input.len() >= READ_BUFFER { Err(FramingError::LineTooLong) } else { Ok(Step::More) }
}

/// How the body of an answer with `code` to `method` is framed, from the
/// values of its headers (`values` of a lower-case name, in order), read
/// strictly: one rule for every answer the front door passes on, whoever
/// read it ([`framed`]).
fn framing<'a, I>(
    method: &Method,
    code: u16,
    values: impl Fn(&'static str) -> I,
) -> Result<Framing, FramingError>
where
    I: Iterator<Item = &'a [u8]>,
{
    if headers::bodiless(method, code) {
        return Ok(Framing::Done);
    }
    let listed = |name| values(name).flat_map(|v| v.split(|b| *b == b',')).map(<[u8]>::trim_ascii);
    let has_length = values("content-length").next().is_some();
    if values("transfer-encoding").next().is_some() {
        if has_length {
            return Err(FramingError::LengthAndCoding);
        }
        let mut codings = listed("transfer-encoding").filter(|c| !c.is_empty());
        return match (codings.next(), codings.next()) {
            (Some(c), None) if c.eq_ignore_ascii_case(b"chunked") => {
                Ok(Framing::Chunked(Chunk::Size))
            }
            _ => Err(FramingError::Coding),
        };
    }
    if !has_length {
        return Ok(Framing::Close);
    }
    let mut length = None;
    for value in listed("content-length") {
        let n = std::str::from_utf8(value)
            .ok()
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or(FramingError::Length)?;
        if length.replace(n).is_some_and(|earlier| earlier != n) {
            return Err(FramingError::Length);
        }
    }
    length.map(Framing::Length).ok_or(FramingError::Length)
}

/// Whether an answer awc read (with `code`, to `method`) is framed as
/// [`framing`] requires: awc picks one of two framings where this refuses
/// the answer.
pub(super) fn framed(method: &Method, code: u16, headers: &HeaderMap) -> Result<(), FramingError> {
    framing(method, code, |name| headers.get_all(name).map(HeaderValue::as_bytes)).map(|_| ())
}

/// The owner's answer to a long-running pass: its status, its headers, and
/// its body as it comes.
pub(super) struct OwnerAnswer {
    pub(super) code: StatusCode,
    pub(super) headers: HeaderMap,
    pub(super) body: OwnerBody,
}

/// Sends `head` (a request without a body: [`super::owner::request_head`])
/// to `owner` on a new connection and reads the answer's head. The
/// connection is the answer's: it closes when the body is done or dropped.
pub(super) async fn exchange(
    owner: &Target,
    method: &Method,
    head: &[u8],
) -> Result<OwnerAnswer, StreamError> {
    let mut io = connect(owner).await.map_err(StreamError::Connect)?;
    io.write_all(head).await.map_err(StreamError::Head)?;
    io.flush().await.map_err(StreamError::Head)?;
    let answer = read_head(&mut io, READ_BUFFER).await.map_err(StreamError::Head)?;
    if answer.code < 200 {
        return Err(StreamError::Interim(answer.code));
    }
    let code = StatusCode::from_u16(answer.code).map_err(|_| StreamError::Header)?;
    let values = |name| answer.headers.iter().filter(move |(n, _)| n == name).map(|(_, v)| &v[..]);
    let framing = framing(method, answer.code, values)?;
    let mut map = HeaderMap::with_capacity(answer.headers.len());
    for (name, value) in &answer.headers {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| StreamError::Header)?;
        let value = HeaderValue::from_bytes(value).map_err(|_| StreamError::Header)?;
        map.append(name, value);
    }
    // What came after the head in the same reads starts the body: at most
    // READ_BUFFER bytes, unless a head over it took reads of its own.
    let early = answer.bytes.get(answer.head_len..).unwrap_or_default();
    let mut buf = vec![0; READ_BUFFER.max(early.len())].into_boxed_slice();
    buf[..early.len()].copy_from_slice(early);
    let body = OwnerBody { io, buf, start: 0, end: early.len(), framing };
    Ok(OwnerAnswer { code, headers: map, body })
}

/// The owner's body, read into a buffer of [`READ_BUFFER`] bytes and
/// handed on a piece at a time, each a copy: nothing handed on keeps the
/// buffer, which is read into again.
pub(super) struct OwnerBody {
    io: Upstream,
    buf: Box<[u8]>,
    /// The buffered bytes not yet read: `buf[start..end]`.
    start: usize,
    end: usize,
    framing: Framing,
}

impl OwnerBody {
    /// Ends the body with `e`: nothing more is read.
    fn failed(&mut self, e: FramingError) -> Poll<Option<io::Result<Bytes>>> {
        self.framing = Framing::Done;
        Poll::Ready(Some(Err(io::Error::other(e))))
    }
}

impl Stream for OwnerBody {
    type Item = io::Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            let input = this.buf.get(this.start..this.end).unwrap_or_default();
            match this.framing.step(input) {
                Err(e) => return this.failed(e),
                Ok(Step::Done) => return Poll::Ready(None),
                Ok(Step::Framing(n)) => this.start += n,
                Ok(Step::Data(n)) => {
                    let piece = Bytes::copy_from_slice(input.get(..n).unwrap_or_default());
                    this.start += n;
                    return Poll::Ready(Some(Ok(piece)));
                }
                Ok(Step::More) => {
                    this.buf.copy_within(this.start..this.end, 0);
                    this.end -= this.start;
                    this.start = 0;
                    let mut read = ReadBuf::new(this.buf.get_mut(this.end..).unwrap_or_default());
                    match Pin::new(&mut this.io).poll_read(cx, &mut read) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Err(e)) => {
                            this.framing = Framing::Done;
                            return Poll::Ready(Some(Err(e)));
                        }
                        Poll::Ready(Ok(())) => {
                            let n = read.filled().len();
                            if n == 0 {
                                return match this.framing.at_close() {
                                    Ok(()) => {
                                        this.framing = Framing::Done;
                                        Poll::Ready(None)
                                    }
                                    Err(e) => this.failed(e),
                                };
                            }
                            this.end += n;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body `framing` reads out of `raw` fed `at_most` bytes at a time
    /// (as reads would bring them), and whether it ended where the
    /// framing says, or the error that stopped it.
    fn read(mut framing: Framing, raw: &[u8], at_most: usize) -> Result<Vec<u8>, FramingError> {
        let mut body = Vec::new();
        let (mut start, mut end) = (0, 0);
        loop {
            match framing.step(&raw[start..end])? {
                Step::Done => return Ok(body),
                Step::Framing(n) => start += n,
                Step::Data(n) => {
                    body.extend_from_slice(&raw[start..start + n]);
                    start += n;
                }
                Step::More if end == raw.len() => {
                    framing.at_close()?;
                    return Ok(body);
                }
                Step::More => end = (end + at_most).min(raw.len()),
            }
        }
    }

    #[test]
    fn a_chunked_body_is_read_whatever_the_reads() {
        let raw = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\nnext";
        for at_most in [1, 2, 3, 7, 4096] {
            let body = read(Framing::Chunked(Chunk::Size), raw, at_most);
            assert_eq!(body.as_deref(), Ok(&b"hello world"[..]), "{at_most} bytes a read");
        }
    }

    #[test]
    fn a_sized_body_ends_at_its_length_and_a_close_delimited_one_at_the_close() {
        assert_eq!(read(Framing::Length(5), b"hello and more", 3).as_deref(), Ok(&b"hello"[..]));
        assert_eq!(read(Framing::Length(9), b"hello", 3), Err(FramingError::Ended));
        assert_eq!(read(Framing::Close, b"all of it", 2).as_deref(), Ok(&b"all of it"[..]));
    }

    #[test]
    fn malformed_chunks_are_refused() {
        let refused = |raw: &[u8]| read(Framing::Chunked(Chunk::Size), raw, 4096);
        assert_eq!(refused(b"zz\r\nhello\r\n"), Err(FramingError::Chunk));
        assert_eq!(
            refused(b"5\r\nhelloXX0\r\n\r\n"),
            Err(FramingError::Chunk),
            "no CRLF after data"
        );
        assert_eq!(refused(b"5\r\nhel"), Err(FramingError::Ended), "closed inside a chunk");
        assert_eq!(refused(b"ffffffffffffffffff\r\n"), Err(FramingError::Chunk), "overflow");
        let long_line = [&b"5;"[..], &[b'x'; READ_BUFFER]].concat();
        assert_eq!(refused(&long_line), Err(FramingError::LineTooLong));
        let trailers =
            [&b"0\r\n"[..], &b"X-T: 1\r\n".repeat(TRAILER_LIMIT / 8 + 1), b"\r\n"].concat();
        assert_eq!(refused(&trailers), Err(FramingError::LineTooLong));
    }

    #[test]
    fn framing_is_read_strictly() {
        let get = |pairs: &[(&str, &str)]| {
            framing(&Method::GET, 200, |name| {
                pairs.iter().filter(move |(n, _)| *n == name).map(|(_, v)| v.as_bytes())
            })
        };
        assert_eq!(get(&[("transfer-encoding", "chunked")]), Ok(Framing::Chunked(Chunk::Size)));
        assert_eq!(get(&[("transfer-encoding", " Chunked ")]), Ok(Framing::Chunked(Chunk::Size)));
        assert_eq!(get(&[("content-length", "12")]), Ok(Framing::Length(12)));
        assert_eq!(get(&[("content-length", "12, 12")]), Ok(Framing::Length(12)), "the same twice");
        assert_eq!(get(&[]), Ok(Framing::Close));
        let refused = [
            &[("content-length", "12"), ("transfer-encoding", "chunked")][..],
            &[("transfer-encoding", "gzip, chunked")],
            &[("transfer-encoding", "chunked"), ("transfer-encoding", "chunked")],
            &[("transfer-encoding", "identity")],
            &[("content-length", "12"), ("content-length", "13")],
            &[("content-length", "12, 13")],
            &[("content-length", "+12")],
            &[("content-length", "")],
            &[("content-length", "99999999999999999999999")],
        ];
        for pairs in refused {
            assert!(get(pairs).is_err(), "{pairs:?}");
        }
        let head = framing(&Method::HEAD, 200, |_| std::iter::once(&b"5"[..]));
        assert_eq!(head, Ok(Framing::Done), "no body to HEAD");
        assert_eq!(framing(&Method::GET, 304, |_| std::iter::empty()), Ok(Framing::Done));
    }
}
