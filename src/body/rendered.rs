//! A response body prepared once: bytes, gzip bytes, hash, ETag.
//!
//! docs/design.md: requests never compute. Everything a response needs is made
//! when a document arrives or is converted, and shared by reference (the
//! `Bytes` are reference-counted) with every request and every snapshot
//! that serves it.

use std::cell::RefCell;

use actix_web::http::header::HeaderValue;
use bytes::Bytes;
use flate2::{Compress, Compression, Crc, FlushCompress, Status};

use crate::body::digest::{quoted, sha512_hex};

/// One servable body and everything derived from it.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The bytes served.
    pub body: Bytes,
    /// The same bytes gzipped, when that is smaller.
    pub gzip: Option<Bytes>,
    /// Upper-case hex SHA-512 of `body`.
    pub hash: String,
    /// `"<hash>"`, ready to be a header.
    pub etag: HeaderValue,
    /// The media type of `body`.
    pub content_type: HeaderValue,
}

/// Bodies smaller than this are not worth compressing: a few hundred bytes
/// saved, for a gzip rendition per document and an inflate per client.
const GZIP_MIN: usize = 1024;

impl Rendered {
    /// The ETag as text, for comparing with `If-None-Match`.
    /// `HeaderValue::to_str` re-checks every byte on each call — a
    /// thousand instructions for a quoted SHA-512, a tenth of a 304 — and
    /// this one is ASCII by construction.
    #[must_use]
    pub fn etag_str(&self) -> &str {
        std::str::from_utf8(self.etag.as_bytes()).unwrap_or_default()
    }

    /// The bytes this body holds (both renditions, and the few hundred
    /// of hash, ETag and bookkeeping): what it counts against a memory
    /// budget.
    #[must_use]
    pub fn weight(&self) -> usize {
        const OVERHEAD: usize = 512;
        self.body.len() + self.gzip.as_ref().map_or(0, Bytes::len) + OVERHEAD
    }

    /// Prepares `body`, served as `application/json`.
    #[must_use]
    pub fn json(body: impl Into<Bytes>) -> Self {
        Self::new(body, HeaderValue::from_static("application/json"))
    }

    /// Prepares `body`, served with `content_type`.
    #[must_use]
    pub fn new(body: impl Into<Bytes>, content_type: HeaderValue) -> Self {
        let body = body.into();
        let hash = sha512_hex(&body);
        let etag = HeaderValue::from_str(&quoted(&hash))
            .expect("a quoted hex string is a valid header value");
        let gzip = (body.len() >= GZIP_MIN).then(|| gzip(&body)).flatten();
        Self { body, gzip, hash, etag, content_type }
    }
}

thread_local! {
    /// One deflate state per thread, reset between bodies. Making a new one
    /// allocates and zeroes some 300 KB of tables: for a rebuild that
    /// prepares thousands of small discovery documents, that was most of the
    /// time spent.
    static DEFLATE: RefCell<Compress> = RefCell::new(Compress::new(Compression::default(), false));
}

/// gzip member header (RFC 1952): deflate, no flags, no mtime, no extra
/// flags, OS unknown.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// Gzip at the default level; `None` when it does not make the body smaller
/// (or the body is over 4 GiB, which gzip's length field cannot say).
fn gzip(body: &[u8]) -> Option<Bytes> {
    let len = u32::try_from(body.len()).ok()?;
    DEFLATE.with(|deflate| {
        let mut deflate = deflate.borrow_mut();
        deflate.reset();
        let mut out = Vec::with_capacity(body.len() / 4 + 64);
        out.extend_from_slice(&GZIP_HEADER);
        loop {
            let consumed = usize::try_from(deflate.total_in()).ok()?;
            let rest = body.get(consumed..)?;
            if out.len() == out.capacity() {
                out.reserve(out.capacity());
            }
            match deflate.compress_vec(rest, &mut out, FlushCompress::Finish).ok()? {
                Status::StreamEnd => break,
                Status::Ok | Status::BufError => {}
            }
        }
        let mut crc = Crc::new();
        crc.update(body);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        (out.len() < body.len()).then(|| Bytes::from(out))
    })
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn etag_is_the_quoted_hash_of_the_body() {
        let r = Rendered::json(&b"{\"paths\":{}}"[..]);
        assert_eq!(r.hash, sha512_hex(b"{\"paths\":{}}"));
        assert_eq!(r.etag.to_str().unwrap(), format!("\"{}\"", r.hash));
        assert!(r.gzip.is_none(), "tiny bodies are not compressed");
    }

    #[test]
    fn one_compressor_serves_many_bodies() {
        for n in [1_100, 50_000, 3_000_000, 2_000] {
            let body: String =
                (0..n).map(|i| char::from(b'a' + u8::try_from(i % 7 * 3 % 26).unwrap())).collect();
            let gz = gzip(body.as_bytes()).expect("compressible");
            let mut out = String::new();
            flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut out).unwrap();
            assert_eq!(out, body, "{n} bytes");
        }
    }

    #[test]
    fn incompressible_bodies_get_no_gzip() {
        // xorshift64: no repetition deflate can use.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()[3]
            })
            .collect();
        assert!(gzip(&noise).is_none());
    }

    #[test]
    fn gzip_inflates_to_the_body() {
        let body = "{\"a\":\"".to_owned() + &"x".repeat(10_000) + "\"}";
        let r = Rendered::json(body.clone());
        let mut out = String::new();
        flate2::read::GzDecoder::new(&r.gzip.expect("compressible")[..])
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, body);
    }
}
