//! A response body prepared once: bytes, gzip bytes, hash, ETag.
//!
//! ARCHITECTURE.md: requests never compute. Everything a response needs is made
//! when a document arrives or is converted, and shared by reference (the
//! `Bytes` are reference-counted) with every request and every snapshot
//! that serves it. The one exception is the plain rendition of a large
//! OpenAPI document, kept gzipped only ([`Rendered::document`]) and
//! inflated for the rare client that does not take gzip
//! ([`crate::body::identity`]).

use std::cell::RefCell;

use actix_web::http::header::HeaderValue;
use bytes::Bytes;
use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use sha2::{Digest, Sha512};

use crate::body::digest::{quoted, sha512_hex, upper_hex};

/// One servable body and everything derived from it.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The bytes served, when they are held; `None` when only `gzip` is
    /// ([`Rendered::document`]).
    plain: Option<Bytes>,
    /// The length of the bytes served.
    len: usize,
    /// The same bytes gzipped, when that is smaller.
    pub gzip: Option<Bytes>,
    /// Upper-case hex SHA-512 of `body` (for the discovery lists, of its
    /// parts: [`Rendered::from_segments_tree`]).
    pub hash: String,
    /// `"<hash>"`, ready to be a header.
    pub etag: HeaderValue,
    /// The media type of `body`.
    pub content_type: HeaderValue,
}

/// Bodies smaller than this are not worth compressing: a few hundred bytes
/// saved, for a gzip rendition per document and an inflate per client.
const GZIP_MIN: usize = 1024;

/// Documents from this size up are kept gzipped only
/// ([`Rendered::document`]). Below it the plain bytes cost little and
/// inflating them per request would cost more than it saves.
pub const GZIP_ONLY_MIN: usize = 64 * 1024;

/// Documents over this size keep their plain bytes too: each identity
/// answer of a gzip-only document is inflated into memory that counts
/// against [`crate::body::identity::IDENTITY_LIMIT`], and a body that does
/// not fit that limit several times over could never be answered. (4 MiB:
/// the Kubernetes 1.27 Swagger document, the largest in the test data, is
/// 3.6 MB.)
pub const GZIP_ONLY_MAX: usize = crate::body::identity::IDENTITY_LIMIT / 4;

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
        self.plain.as_ref().map_or(0, Bytes::len)
            + self.gzip.as_ref().map_or(0, Bytes::len)
            + OVERHEAD
    }

    /// The length of the bytes served (what an identity answer's
    /// `Content-Length` says).
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the body is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The plain bytes when they are held; `None` for a document kept
    /// gzipped only.
    #[must_use]
    pub fn held(&self) -> Option<&Bytes> {
        self.plain.as_ref()
    }

    /// The bytes served, inflated when only the gzip rendition is held.
    /// For readers inside the proxy (a cached Swagger document converted
    /// again, tests); answers to clients go through
    /// `crate::body::identity::IdentityCache`, which bounds what
    /// inflating may hold.
    ///
    /// # Errors
    /// When the gzip rendition does not inflate to `len` bytes, which
    /// would mean it was corrupted in memory.
    pub fn plain(&self) -> std::io::Result<Bytes> {
        match (&self.plain, &self.gzip) {
            (Some(plain), _) => Ok(plain.clone()),
            (None, Some(gz)) => inflate(gz, self.len).map(Bytes::from),
            (None, None) => Ok(Bytes::new()),
        }
    }

    /// Prepares an OpenAPI document (or any large body clients fetch
    /// gzipped) served as `application/json`: as [`Rendered::json`], but
    /// when the body is between `GZIP_ONLY_MIN` and `GZIP_ONLY_MAX`
    /// and compresses, only the gzip rendition is kept.
    ///
    /// Why (issue 16): at 5,000 CRDs the documents are 354 MiB plain and
    /// 64 MiB gzipped, and holding both was most of the proxy's memory.
    /// client-go asks for gzip on every request, so the plain bytes were
    /// held for the few clients that do not (curl without `--compressed`,
    /// some validators); those get the document inflated on demand.
    #[must_use]
    pub fn document(body: impl Into<Bytes>) -> Self {
        Self::compact(Self::json(body))
    }

    /// This body kept as [`Rendered::document`] keeps one: gzipped only
    /// when it is in the gzip-only size range and compresses.
    #[must_use]
    pub fn gzipped_only(self) -> Self {
        self.compact()
    }

    /// Prepares `body`, another rendition of the document `of` (its
    /// protobuf encoding), served with `content_type` and kept as
    /// [`Rendered::document`] keeps a document, but tagged with `of`'s hash
    /// and ETag: kube-openapi gives every rendition of a document its
    /// JSON's hash, so `?hash=` URLs and `If-None-Match` work across forms
    /// (docs/upstream.md#b-2-1).
    #[must_use]
    pub fn rendition_of(of: &Rendered, body: impl Into<Bytes>, content_type: HeaderValue) -> Self {
        Self::form_of(body, content_type, of).compact()
    }

    /// Drops the plain bytes of a body in the gzip-only size range.
    fn compact(mut self) -> Self {
        if self.gzip.is_some() && (GZIP_ONLY_MIN..=GZIP_ONLY_MAX).contains(&self.len) {
            self.plain = None;
        }
        self
    }

    /// Prepares `body`, served as `application/json`.
    #[must_use]
    pub fn json(body: impl Into<Bytes>) -> Self {
        Self::new(body, HeaderValue::from_static("application/json"))
    }

    /// Prepares `body`, served with `content_type`, as another form of
    /// `json`'s document: named by `json`'s hash and ETag, not hashed. As
    /// kube-apiserver names an object, not its bytes, so that a client's
    /// `If-None-Match` holds across forms (discovery's YAML and protobuf:
    /// docs/wire.md#a-12).
    #[must_use]
    pub fn form_of(body: impl Into<Bytes>, content_type: HeaderValue, json: &Self) -> Self {
        let body = body.into();
        let gzip = (body.len() >= GZIP_MIN).then(|| gzip(&body)).flatten();
        Self {
            len: body.len(),
            plain: Some(body),
            gzip,
            hash: json.hash.clone(),
            etag: json.etag.clone(),
            content_type,
        }
    }

    /// This body named by `json`'s hash and ETag, as [`Rendered::form_of`].
    #[must_use]
    pub fn retagged(mut self, json: &Self) -> Self {
        self.hash.clone_from(&json.hash);
        self.etag = json.etag.clone();
        self
    }

    /// Prepares `body`, served with `content_type`.
    #[must_use]
    pub fn new(body: impl Into<Bytes>, content_type: HeaderValue) -> Self {
        let body = body.into();
        let hash = sha512_hex(&body);
        let etag = etag_of(&hash);
        let gzip = (body.len() >= GZIP_MIN).then(|| gzip(&body)).flatten();
        Self { len: body.len(), plain: Some(body), gzip, hash, etag, content_type }
    }
}

/// Inflates a gzip member that must hold exactly `len` bytes.
pub(crate) fn inflate(gz: &[u8], len: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::with_capacity(len);
    // One byte more than expected is read, so a longer body is caught
    // without inflating all of it.
    let limit = u64::try_from(len).unwrap_or(u64::MAX).saturating_add(1);
    flate2::read::GzDecoder::new(gz).take(limit).read_to_end(&mut out)?;
    if out.len() != len {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("gzip rendition inflates to {} bytes, not {len}", out.len()),
        ));
    }
    Ok(out)
}

thread_local! {
    /// One deflate state per thread, reset between bodies. Making a new one
    /// allocates and zeroes some 300 KB of tables: for a rebuild that
    /// prepares thousands of small discovery documents, that was most of the
    /// time spent.
    static DEFLATE: RefCell<Compress> = RefCell::new(Compress::new(Compression::default(), false));
}

/// A piece of a larger body with its own raw deflate rendition, so a body
/// made of many pieces can be gzipped by joining the pieces' deflate
/// output ([`Rendered::from_segments`]) instead of compressing the whole
/// body again. Large bodies built from many parts that mostly do not
/// change between snapshots — the aggregated discovery lists, the legacy
/// group list, the OpenAPI root index at thousands of group-versions —
/// then cost a deflate of the changed parts only.
///
/// Each segment is compressed on its own (no back-references outside
/// it) and ends with a sync flush (RFC 1951 3.2.4: an empty stored block
/// that ends on a byte boundary, not the final block), which is what
/// makes segments joinable in any order. The price is a few bytes per
/// segment and no matches across segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The bytes of the piece.
    pub plain: Bytes,
    /// Its raw deflate blocks, sync-flushed; empty when `plain` is.
    pub deflate: Bytes,
    /// SHA-512 of `plain`, for [`Rendered::from_segments_tree`].
    pub digest: [u8; 64],
}

impl Segment {
    /// Compresses and hashes `plain` as a joinable segment.
    #[must_use]
    pub fn new(plain: impl Into<Bytes>) -> Self {
        let plain = plain.into();
        let deflate = if plain.is_empty() { Bytes::new() } else { deflate_segment(&plain) };
        let digest = Sha512::digest(&plain).into();
        Self { plain, deflate, digest }
    }

    /// A segment of fixed text (list framing, separators), made once per
    /// thread and then cloned: every rebuild needs the same few, and a
    /// deflate reset per segment showed in the one-change rebuild profile.
    #[must_use]
    pub fn fixed(text: &'static str) -> Self {
        FIXED.with(|fixed| {
            fixed
                .borrow_mut()
                .entry(text)
                .or_insert_with(|| Self::new(Bytes::from_static(text.as_bytes())))
                .clone()
        })
    }
}

thread_local! {
    /// [`Segment::fixed`]'s segments by text.
    static FIXED: RefCell<std::collections::BTreeMap<&'static str, Segment>> =
        const { RefCell::new(std::collections::BTreeMap::new()) };
}

/// An empty final block with fixed Huffman codes (BFINAL=1, BTYPE=01,
/// end-of-block): closes a stream of sync-flushed segments.
const DEFLATE_END: [u8; 2] = [0x03, 0x00];

impl Rendered {
    /// Prepares the concatenation of `segments` as one body, its gzip made
    /// by joining the segments' deflate output: the same body, hash and
    /// ETag as [`Rendered::new`] of the concatenated bytes; the gzip bytes
    /// differ from compressing the whole (they decompress to the same
    /// body). The rule for when there is a gzip rendition is the same:
    /// the body is at least 1 KiB and the gzip is smaller.
    #[must_use]
    pub fn from_segments<'a>(
        segments: impl IntoIterator<Item = &'a Segment> + Clone,
        content_type: HeaderValue,
    ) -> Self {
        Self::joined(segments, content_type, sha512_hex)
    }

    /// As [`Rendered::from_segments`], but the hash (and ETag) is SHA-512
    /// over the SHA-512 of each segment in order — a hash tree of one
    /// level — instead of SHA-512 of the whole body.
    ///
    /// For the discovery lists (aggregated: 2.4 MB each at 5,000 CRDs), where
    /// hashing every byte twice per rebuild was most of a one-change
    /// rebuild (issue 16); each part's digest is computed once, when the
    /// part is made. It still names the content: equal parts in equal
    /// order give equal tags on every replica, and any changed part
    /// changes the tag. Kubernetes' own aggregated ETag is not the hash of
    /// the body either (docs/upstream.md#b-4-5); clients only compare it.
    #[must_use]
    pub fn from_segments_tree<'a>(
        segments: impl IntoIterator<Item = &'a Segment> + Clone,
        content_type: HeaderValue,
    ) -> Self {
        let mut tree = Sha512::new();
        for s in segments.clone() {
            tree.update(s.digest);
        }
        let hash = upper_hex(&tree.finalize());
        Self::joined(segments, content_type, |_| hash)
    }

    /// The concatenation of `segments`, hashed by `hash`, its gzip joined.
    fn joined<'a>(
        segments: impl IntoIterator<Item = &'a Segment> + Clone,
        content_type: HeaderValue,
        hash: impl FnOnce(&[u8]) -> String,
    ) -> Self {
        let len: usize = segments.clone().into_iter().map(|s| s.plain.len()).sum();
        let mut body = Vec::with_capacity(len);
        for s in segments.clone() {
            body.extend_from_slice(&s.plain);
        }
        let body = Bytes::from(body);
        let hash = hash(&body);
        let etag = etag_of(&hash);
        let gzip = (body.len() >= GZIP_MIN).then(|| joined_gzip(&body, segments)).flatten();
        Self { len: body.len(), plain: Some(body), gzip, hash, etag, content_type }
    }
}

impl Rendered {
    /// As [`Rendered::from_segments_tree`] of each of `heads` followed by
    /// the same `tail`: the variants of one list that differ only in their
    /// head (the v2 and v2beta1 aggregated discovery lists, 2.4 MB each at
    /// 5,000 CRDs). `tail` is gathered and checksummed once; each further
    /// variant copies it from the first in one piece and combines its
    /// head's CRC-32 with the one of `tail`. Gathering and checksumming
    /// every variant on its own was a seventh of a one-change rebuild, and needed a second thread to keep up (issue
    /// 16). The result is the same, byte for byte and hash for hash.
    #[must_use]
    pub fn variants_sharing_tail<'a, const N: usize>(
        heads: [(&'a Segment, HeaderValue); N],
        tail: impl IntoIterator<Item = &'a Segment> + Clone,
    ) -> [Self; N] {
        let tail_len: usize = tail.clone().into_iter().map(|s| s.plain.len()).sum();
        // The first variant's body and where its `tail` starts.
        let mut first: Option<(Bytes, usize)> = None;
        let mut tail_crc: Option<Crc> = None;
        heads.map(|(head, content_type)| {
            let mut body = Vec::with_capacity(head.plain.len() + tail_len);
            body.extend_from_slice(&head.plain);
            match &first {
                Some((earlier, at)) => {
                    body.extend_from_slice(earlier.get(*at..).unwrap_or_default())
                }
                None => {
                    for s in tail.clone() {
                        body.extend_from_slice(&s.plain);
                    }
                }
            }
            let body = Bytes::from(body);
            let tail_bytes = body.get(head.plain.len()..).unwrap_or_default();
            let tail_crc = tail_crc.get_or_insert_with(|| {
                let mut crc = Crc::new();
                crc.update(tail_bytes);
                crc
            });
            let mut crc = Crc::new();
            crc.update(&head.plain);
            crc.combine(tail_crc);
            let mut tree = Sha512::new();
            for s in std::iter::once(head).chain(tail.clone()) {
                tree.update(s.digest);
            }
            let hash = upper_hex(&tree.finalize());
            let etag = etag_of(&hash);
            let gzip = (body.len() >= GZIP_MIN)
                .then(|| gzip_joined(body.len(), &crc, std::iter::once(head).chain(tail.clone())))
                .flatten();
            if first.is_none() {
                first = Some((body.clone(), head.plain.len()));
            }
            Self { len: body.len(), plain: Some(body), gzip, hash, etag, content_type }
        })
    }
}

/// A part of a [`GzipJoin`] compressed before its turn: its joinable
/// deflate output (see [`Segment`]), checksum, length and digest, not its
/// text.
#[derive(Debug)]
pub struct Piece {
    deflate: Bytes,
    crc: Crc,
    len: usize,
    digest: [u8; 64],
}

impl Piece {
    /// Compresses, checksums and hashes `plain`.
    #[must_use]
    pub fn new(plain: &[u8]) -> Self {
        let deflate = if plain.is_empty() { Bytes::new() } else { deflate_segment(plain) };
        let mut crc = Crc::new();
        crc.update(plain);
        Self { deflate, crc, len: plain.len(), digest: Sha512::digest(plain).into() }
    }
}

/// A body held gzipped only, made a part at a time in its order: each
/// part deflated on its own (as a [`Segment`]) straight onto the gzip
/// member, so a body of hundreds of megabytes (the merged `/openapi/v2` at
/// thousands of CRDs) never exists plain, nor twice compressed. Hashed as
/// [`Rendered::from_segments_tree`] hashes, over the parts' digests.
#[derive(Debug)]
pub struct GzipJoin {
    out: Vec<u8>,
    crc: Crc,
    len: usize,
    /// `None` for another form of a document hashed already.
    tree: Option<Sha512>,
}

impl GzipJoin {
    /// An empty body, with room for `bytes` of gzip reserved.
    #[must_use]
    pub fn with_capacity(bytes: usize) -> Self {
        let mut out = Vec::with_capacity(bytes.max(64));
        out.extend_from_slice(&GZIP_HEADER);
        Self { out, crc: Crc::new(), len: 0, tree: Some(Sha512::new()) }
    }

    /// An empty body for another form of a document ([`Self::finish_form_of`]):
    /// named by that document's hash, so its parts are not hashed.
    #[must_use]
    pub fn form_with_capacity(bytes: usize) -> Self {
        Self { tree: None, ..Self::with_capacity(bytes) }
    }

    /// The gzip bytes so far.
    #[must_use]
    pub fn gzip_len(&self) -> usize {
        self.out.len()
    }

    /// Appends `plain`.
    pub fn push(&mut self, plain: &[u8]) {
        if plain.is_empty() {
            return;
        }
        deflate_into(plain, &mut self.out);
        self.crc.update(plain);
        self.len += plain.len();
        if let Some(tree) = &mut self.tree {
            tree.update(Sha512::digest(plain));
        }
    }

    /// Appends a part compressed earlier: the same as pushing its text.
    pub fn push_piece(&mut self, piece: Piece) {
        self.out.extend_from_slice(&piece.deflate);
        self.crc.combine(&piece.crc);
        self.len += piece.len;
        if let Some(tree) = &mut self.tree {
            tree.update(piece.digest);
        }
    }

    /// The body, served with `content_type`; `None` when it is over 4
    /// GiB, which gzip's length field cannot say.
    #[must_use]
    pub fn finish(mut self, content_type: HeaderValue) -> Option<Rendered> {
        debug_assert!(self.tree.is_some(), "a form is finished by finish_form_of");
        let hash = upper_hex(&self.tree.take().unwrap_or_default().finalize());
        let etag = etag_of(&hash);
        self.end(content_type, hash, etag)
    }

    /// The body, another form of `json`'s document served with
    /// `content_type` and named by its hash and ETag (as
    /// [`Rendered::form_of`]); `None` when it is over 4 GiB.
    #[must_use]
    pub fn finish_form_of(self, content_type: HeaderValue, json: &Rendered) -> Option<Rendered> {
        self.end(content_type, json.hash.clone(), json.etag.clone())
    }

    fn end(
        mut self,
        content_type: HeaderValue,
        hash: String,
        etag: HeaderValue,
    ) -> Option<Rendered> {
        let size = u32::try_from(self.len).ok()?;
        end_member(&mut self.out, &self.crc, size);
        // Not shrunk: a shrink copies the whole member at once, doubling
        // it for a moment, and the reserve it would return was never
        // touched (not resident).
        Some(Rendered {
            plain: None,
            len: self.len,
            gzip: Some(Bytes::from(self.out)),
            hash,
            etag,
            content_type,
        })
    }
}

impl Rendered {
    /// Whether a plain answer of this body must be inflated as it is
    /// written, a chunk at a time: it is held gzipped only and is larger than
    /// inflated bodies may ever hold together.
    #[must_use]
    pub fn inflates_while_written(&self) -> bool {
        self.plain.is_none() && self.len > GZIP_ONLY_MAX
    }

    /// What a plain answer inflates as it writes, for a body that
    /// [`Self::inflates_while_written`].
    #[must_use]
    pub fn to_inflate(&self) -> Option<ToInflate> {
        let gz = self.gzip.clone()?;
        self.inflates_while_written().then_some(ToInflate { gz, len: self.len })
    }

    /// Its plain bytes as a reader, inflated as they are read when only
    /// the gzip is held (an `export` of the merged `/openapi/v2` writes
    /// hundreds of megabytes without holding them).
    ///
    /// # Errors
    /// When only a gzip this module did not make is held.
    pub fn plain_reader(&self) -> std::io::Result<PlainReader> {
        if let Some(plain) = &self.plain {
            return Ok(PlainReader::Held(std::io::Cursor::new(plain.clone())));
        }
        let gz = self.gzip.clone().unwrap_or_default();
        let inflating = ToInflate { gz, len: self.len }.inflating()?;
        Ok(PlainReader::Inflating(Box::new(inflating), Bytes::new()))
    }
}

/// A gzip-only body to be answered plain: its gzip and plain length
/// ([`Rendered::to_inflate`]), shared, until [`Self::inflating`] starts.
#[derive(Debug, Clone)]
pub struct ToInflate {
    gz: Bytes,
    len: usize,
}

impl ToInflate {
    /// The plain length: the answer's `Content-Length`.
    #[must_use]
    pub fn plain_len(&self) -> usize {
        self.len
    }

    /// Starts inflating.
    ///
    /// # Errors
    /// When the gzip is not one this module made.
    pub fn inflating(self) -> std::io::Result<Inflating> {
        let at = GZIP_HEADER.len();
        if self.gz.get(..at) != Some(&GZIP_HEADER[..]) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "not a gzip rendition of ours",
            ));
        }
        Ok(Inflating { gz: self.gz, at, inflate: flate2::Decompress::new(false), left: self.len })
    }
}

/// The plain bytes of a gzip-only body, inflated a chunk at a time as an
/// answer is written: what one plain answer of a body of hundreds of
/// megabytes holds is the inflater's window and one chunk.
pub struct Inflating {
    gz: Bytes,
    at: usize,
    inflate: flate2::Decompress,
    left: usize,
}

impl std::fmt::Debug for Inflating {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inflating").field("at", &self.at).field("left", &self.left).finish()
    }
}

/// How much plain text [`Inflating`] hands out at a time.
const INFLATE_CHUNK: usize = 64 * 1024;

impl Inflating {
    /// The plain bytes still to come.
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.left
    }

    /// The next chunk; `None` at the end.
    ///
    /// # Errors
    /// When the gzip does not inflate to the length it was made with.
    pub fn next_chunk(&mut self) -> Option<std::io::Result<Bytes>> {
        if self.left == 0 {
            return None;
        }
        let mut out = Vec::with_capacity(INFLATE_CHUNK.min(self.left));
        while out.len() < out.capacity() {
            let input = self.gz.get(self.at..).unwrap_or_default();
            let (before_in, before_out) = (self.inflate.total_in(), self.inflate.total_out());
            let status =
                self.inflate.decompress_vec(input, &mut out, flate2::FlushDecompress::None);
            let taken = usize::try_from(self.inflate.total_in() - before_in).unwrap_or(0);
            self.at += taken;
            let made = self.inflate.total_out() - before_out;
            match status {
                Ok(Status::Ok | Status::BufError) if taken > 0 || made > 0 => {}
                Ok(Status::StreamEnd) => break,
                Ok(_) => return Some(Err(self.failed("gzip rendition ends early"))),
                Err(e) => {
                    self.left = 0;
                    return Some(Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)));
                }
            }
        }
        if out.len() > self.left || (out.len() < out.capacity() && out.len() != self.left) {
            return Some(Err(self.failed("gzip rendition does not inflate to its length")));
        }
        self.left -= out.len();
        Some(Ok(Bytes::from(out)))
    }

    /// Ends the stream with `what` went wrong: nothing follows an error.
    fn failed(&mut self, what: &str) -> std::io::Error {
        self.left = 0;
        std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned())
    }
}

/// The plain bytes of a body to write somewhere as they come: its plain
/// bytes when they are held, else its gzip inflated a chunk at a time.
pub enum PlainReader {
    /// The bytes held.
    Held(std::io::Cursor<Bytes>),
    /// Inflating, with what is left of the last chunk.
    Inflating(Box<Inflating>, Bytes),
}

impl std::io::Read for PlainReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Self::Held(cursor) => cursor.read(buf),
            Self::Inflating(inflating, rest) => {
                if rest.is_empty() {
                    match inflating.next_chunk() {
                        None => return Ok(0),
                        Some(chunk) => *rest = chunk?,
                    }
                }
                let n = buf.len().min(rest.len());
                buf[..n].copy_from_slice(&rest[..n]);
                bytes::Buf::advance(rest, n);
                Ok(n)
            }
        }
    }
}

impl futures_util::Stream for Inflating {
    type Item = std::io::Result<Bytes>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        std::task::Poll::Ready(self.next_chunk())
    }
}

fn joined_gzip<'a>(body: &[u8], segments: impl IntoIterator<Item = &'a Segment>) -> Option<Bytes> {
    let mut crc = Crc::new();
    crc.update(body);
    gzip_joined(body.len(), &crc, segments)
}

/// The gzip member of a body of `len` bytes with checksum `crc`, from its
/// segments' deflate output; `None` when it is not smaller than the body.
fn gzip_joined<'a>(
    len: usize,
    crc: &Crc,
    segments: impl IntoIterator<Item = &'a Segment>,
) -> Option<Bytes> {
    let size = u32::try_from(len).ok()?;
    let mut out = Vec::with_capacity(len / 8 + 64);
    out.extend_from_slice(&GZIP_HEADER);
    for s in segments {
        out.extend_from_slice(&s.deflate);
    }
    end_member(&mut out, crc, size);
    (out.len() < len).then(|| kept(out))
}

/// Ends a gzip member of sync-flushed segments: the final empty block,
/// then the checksum and length of the body (RFC 1952).
fn end_member(out: &mut Vec<u8>, crc: &Crc, size: u32) {
    out.extend_from_slice(&DEFLATE_END);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
}

/// `"<hash>"` as the ETag header.
fn etag_of(hash: &str) -> HeaderValue {
    HeaderValue::from_str(&quoted(hash)).expect("a quoted hex string is a valid header value")
}

/// `out` as `Bytes` without its spare capacity. `Bytes::from(Vec)` keeps
/// the whole allocation: a gzip buffer sized for a quarter of its input
/// holds a sixth, and at a thousand documents the difference was tens of
/// MiB held for nothing (issue 16).
fn kept(mut out: Vec<u8>) -> Bytes {
    if out.capacity() - out.len() > out.len() / 16 {
        out.shrink_to_fit();
    }
    Bytes::from(out)
}

/// Raw deflate of `plain`, ending with a sync flush (see [`Segment`]).
fn deflate_segment(plain: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(plain.len() / 4 + 64);
    deflate_into(plain, &mut out);
    kept(out)
}

/// Appends the raw deflate of `plain`, ending with a sync flush, to `out`.
fn deflate_into(plain: &[u8], out: &mut Vec<u8>) {
    DEFLATE.with(|deflate| {
        let mut deflate = deflate.borrow_mut();
        deflate.reset();
        loop {
            let consumed = usize::try_from(deflate.total_in()).unwrap_or(usize::MAX);
            let rest = plain.get(consumed..).unwrap_or_default();
            if out.capacity() - out.len() < 64 {
                out.reserve(out.capacity().max(64));
            }
            deflate
                .compress_vec(rest, out, FlushCompress::Sync)
                .expect("deflating in-memory bytes into a buffer with room cannot fail");
            // All input taken and room left after a sync flush: the flush
            // is complete (zlib's rule for Z_SYNC_FLUSH).
            let taken = usize::try_from(deflate.total_in()).unwrap_or(usize::MAX) >= plain.len();
            if taken && out.len() < out.capacity() {
                break;
            }
        }
    });
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
        (out.len() < body.len()).then(|| kept(out))
    })
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    /// Parts, pushed or compressed ahead as pieces, join into one gzip
    /// member of their concatenation, hashed over their digests; a plain
    /// answer inflates it chunk by chunk to the same bytes.
    #[test]
    fn parts_make_a_gzip_only_body_that_inflates_while_written() {
        let parts: Vec<Vec<u8>> = (0..40u32)
            .map(|i| {
                format!("{{\"n\":{i},\"text\":\"{}\"}},", "ab".repeat(55_000 + i as usize))
                    .into_bytes()
            })
            .collect();
        let mut join = GzipJoin::with_capacity(1024);
        for (i, p) in parts.iter().enumerate() {
            if i % 3 == 0 { join.push_piece(Piece::new(p)) } else { join.push(p) }
        }
        let whole: Vec<u8> = parts.concat();
        let r = join.finish(HeaderValue::from_static("application/json")).unwrap();
        assert!(r.held().is_none());
        assert!(r.inflates_while_written(), "larger than inflated bodies may hold");
        assert_eq!(r.len(), whole.len());
        let mut gunzipped = Vec::new();
        flate2::read::GzDecoder::new(&r.gzip.as_ref().unwrap()[..])
            .read_to_end(&mut gunzipped)
            .unwrap();
        assert_eq!(gunzipped, whole, "a standard gzip reader reads it");
        let mut tree = Sha512::new();
        for p in &parts {
            tree.update(Sha512::digest(p));
        }
        assert_eq!(r.hash, upper_hex(&tree.finalize()));
        let mut streamed = Vec::new();
        let mut inflating = r.to_inflate().unwrap().inflating().unwrap();
        let mut chunks = 0;
        while let Some(chunk) = inflating.next_chunk() {
            let chunk = chunk.unwrap();
            assert!(chunk.len() <= INFLATE_CHUNK);
            streamed.extend_from_slice(&chunk);
            chunks += 1;
        }
        assert_eq!(streamed, whole);
        assert!(chunks > 1, "in chunks, not at once");
        let mut read = Vec::new();
        r.plain_reader().unwrap().read_to_end(&mut read).unwrap();
        assert!(read == whole, "read as it is inflated, the same bytes");
    }

    /// A gzip rendition that was damaged is an error, never a short body
    /// passed as whole.
    #[test]
    fn a_damaged_gzip_is_an_error_while_inflating() {
        let mut join = GzipJoin::with_capacity(0);
        join.push(&b"x".repeat(GZIP_ONLY_MAX + 1));
        let r = join.finish(HeaderValue::from_static("application/json")).unwrap();
        let mut short = r.clone();
        short.len += 10;
        let mut inflating = short.to_inflate().unwrap().inflating().unwrap();
        let results: Vec<_> = std::iter::from_fn(|| inflating.next_chunk()).collect();
        assert!(results.last().unwrap().is_err(), "the missing bytes are an error");
        let mut cut = r.clone();
        let gz = cut.gzip.take().unwrap();
        cut.gzip = Some(gz.slice(..gz.len() / 2));
        let mut inflating = cut.to_inflate().unwrap().inflating().unwrap();
        let results: Vec<_> = std::iter::from_fn(|| inflating.next_chunk()).collect();
        assert!(results.iter().any(Result::is_err), "a cut gzip is an error");
    }

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

    /// `n` bytes of xorshift64: no repetition deflate can use.
    fn noise(n: usize) -> Vec<u8> {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()[3]
            })
            .collect()
    }

    #[test]
    fn incompressible_bodies_get_no_gzip() {
        assert!(gzip(&noise(4096)).is_none());
    }

    fn segment(text: &str) -> Segment {
        Segment::new(text.to_owned())
    }

    fn inflate(gz: &[u8]) -> String {
        let mut out = String::new();
        flate2::read::GzDecoder::new(gz).read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn joined_segments_inflate_to_the_concatenated_body() {
        let parts: Vec<Segment> = (0..50)
            .map(|i| segment(&format!("{{\"item\":{i},\"text\":\"{}\"}},", "abc".repeat(i * 7))))
            .chain([segment(""), segment("]")])
            .collect();
        let r = Rendered::from_segments(&parts, HeaderValue::from_static("application/json"));
        let whole: String = parts.iter().map(|p| std::str::from_utf8(&p.plain).unwrap()).collect();
        assert_eq!(&r.plain().unwrap()[..], whole.as_bytes());
        assert_eq!(r.hash, Rendered::json(whole.clone()).hash, "hash and ETag as for one body");
        assert_eq!(inflate(&r.gzip.expect("compressible")), whole);
    }

    #[test]
    fn a_large_segment_is_deflated_whole() {
        let big: String =
            (0..200_000).map(|i| char::from(b'a' + u8::try_from(i * 7 % 26).unwrap())).collect();
        let parts = [segment("["), segment(&big), segment("]")];
        let r = Rendered::from_segments(&parts, HeaderValue::from_static("application/json"));
        assert_eq!(inflate(&r.gzip.expect("compressible")), format!("[{big}]"));
    }

    #[test]
    fn a_tree_hash_changes_with_any_part_and_only_with_content() {
        let parts = |middle: &str| [segment("[1,"), segment(middle), segment("3]")];
        let ct = || HeaderValue::from_static("application/json");
        let a = Rendered::from_segments_tree(&parts("2,"), ct());
        let again = Rendered::from_segments_tree(&parts("2,"), ct());
        let other = Rendered::from_segments_tree(&parts("4,"), ct());
        assert_eq!(a.hash, again.hash);
        assert_ne!(a.hash, other.hash);
        assert_eq!(a.etag.to_str().unwrap(), format!("\"{}\"", a.hash));
        assert_eq!(a.hash.len(), 128);
        assert_eq!(
            a.plain().unwrap(),
            Rendered::from_segments(&parts("2,"), ct()).plain().unwrap()
        );
    }

    #[test]
    fn variants_are_each_head_joined_with_the_shared_tail() {
        let tail: Vec<Segment> = (0..40)
            .map(|i| segment(&format!("{{\"item\":{i},\"text\":\"{}\"}},", "xyz".repeat(i * 5))))
            .chain([segment("]}")])
            .collect();
        let ct = |t: &'static str| HeaderValue::from_static(t);
        let (a, b) = (segment("{\"v\":\"a\",\"items\":["), segment("{\"v\":\"bbbb\",\"items\":["));
        let [ra, rb] = Rendered::variants_sharing_tail([(&a, ct("a")), (&b, ct("b"))], &tail);
        for (head, r, t) in [(&a, ra, "a"), (&b, rb, "b")] {
            let parts: Vec<&Segment> = std::iter::once(head).chain(&tail).collect();
            let whole = Rendered::from_segments_tree(parts.iter().copied(), ct(t));
            assert_eq!(r.plain().unwrap(), whole.plain().unwrap());
            assert_eq!(
                (&r.hash, &r.etag, &r.content_type),
                (&whole.hash, &whole.etag, &whole.content_type)
            );
            assert_eq!(r.gzip, whole.gzip, "the same gzip bytes, checksum included");
            assert!(r.gzip.is_some());
        }
        let [small] = Rendered::variants_sharing_tail([(&a, ct("a"))], &tail[..1]);
        assert!(small.gzip.is_none(), "under 1 KiB");
    }

    #[test]
    fn a_fixed_segment_is_made_once_per_thread() {
        let a = Segment::fixed("{\"paths\":{");
        let b = Segment::fixed("{\"paths\":{");
        assert_eq!(a.deflate.as_ptr(), b.deflate.as_ptr());
        assert_eq!(a, Segment::new(&b"{\"paths\":{"[..]));
    }

    #[test]
    fn small_joined_bodies_get_no_gzip() {
        let parts = [segment("{\"a\":"), segment("1}")];
        let r = Rendered::from_segments(&parts, HeaderValue::from_static("application/json"));
        assert!(r.gzip.is_none());
        assert_eq!(&r.plain().unwrap()[..], b"{\"a\":1}");
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

    /// A text of `n` bytes that compresses, but not to nothing.
    fn document_text(n: usize) -> String {
        let mut x: u32 = 7;
        let mut out = String::from("{\"openapi\":\"3.0.0\",\"t\":\"");
        while out.len() < n - 2 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            out.push(char::from(b'a' + u8::try_from((x >> 16) % 8).unwrap()));
        }
        out.push_str("\"}");
        out
    }

    #[test]
    fn a_large_document_keeps_only_its_gzip_rendition() {
        let text = document_text(200_000);
        let r = Rendered::document(text.clone());
        assert!(r.held().is_none(), "plain bytes dropped");
        assert_eq!(r.len(), text.len());
        assert_eq!(r.hash, Rendered::json(text.clone()).hash, "named by its plain bytes");
        assert_eq!(&r.plain().unwrap()[..], text.as_bytes());
        let gz = r.gzip.as_ref().unwrap().len();
        assert_eq!(r.weight(), gz + 512, "weighs what it holds");
    }

    #[test]
    fn small_huge_and_incompressible_documents_keep_their_plain_bytes() {
        let small = Rendered::document(document_text(GZIP_ONLY_MIN - 1));
        assert!(small.held().is_some());
        let huge = Rendered::document(document_text(GZIP_ONLY_MAX + 1));
        assert!(huge.held().is_some(), "would not fit the identity limit");
        let noise = noise(GZIP_ONLY_MIN * 2);
        let r = Rendered::document(noise.clone());
        assert!(r.gzip.is_none() && r.held().is_some());
        assert_eq!(&r.plain().unwrap()[..], &noise[..]);
    }

    #[test]
    fn inflating_refuses_a_rendition_of_another_length() {
        let text = document_text(5_000);
        let gz = gzip(text.as_bytes()).unwrap();
        assert_eq!(super::inflate(&gz, text.len()).unwrap(), text.as_bytes());
        assert!(super::inflate(&gz, text.len() - 1).is_err());
        assert!(super::inflate(&gz, text.len() + 1).is_err());
        assert!(super::inflate(&gz[..gz.len() / 2], text.len()).is_err());
    }
}
