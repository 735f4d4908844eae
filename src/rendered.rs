//! A response body prepared once: bytes, gzip bytes, hash, ETag.
//!
//! DESIGN.md: requests never compute. Everything a response needs is made
//! when a document arrives or is converted, and shared by reference (the
//! `Bytes` are reference-counted) with every request and every snapshot
//! that serves it.

use std::io::Write;

use actix_web::http::header::HeaderValue;
use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;

use crate::digest::{quoted, sha512_hex};

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

/// Bodies smaller than this are not worth compressing (the gzip header and
/// the client's inflate cost more than the bytes saved).
const GZIP_MIN: usize = 512;

impl Rendered {
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

/// Gzip at the default level; `None` when it does not make the body smaller.
fn gzip(body: &[u8]) -> Option<Bytes> {
    let mut enc = GzEncoder::new(Vec::with_capacity(body.len() / 4), Compression::default());
    enc.write_all(body).ok()?;
    let out = enc.finish().ok()?;
    (out.len() < body.len()).then(|| Bytes::from(out))
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
