//! Plain answers for documents kept gzipped only.
//!
//! Large OpenAPI documents are held as their gzip rendition alone
//! ([`Rendered::document`]): client-go, kubectl and every Kubernetes
//! client ask for gzip, and the plain bytes were most of the proxy's
//! memory at thousands of CRDs (issue 16). A client that does not take
//! gzip gets the document inflated here.
//!
//! What this bounds: every inflated body alive — kept for the next
//! identity client, or still being written to a slow one — counts against
//! one limit, [`IDENTITY_LIMIT`]. An answer that would pass it is refused
//! ([`IdentityError::Busy`]: a 429 with `Retry-After`, as kube-apiserver's
//! in-flight limit answers), so a crowd of slow clients that do not take
//! gzip cannot make the documents' plain bytes exist many times over.
//! What is kept is the most recently used, dropped oldest first when room
//! is needed; a document asked for again costs a lookup, not an inflate
//! (about a millisecond of CPU per 350 KB document).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;

use crate::body::rendered::{Rendered, inflate};

/// What inflated bodies may hold together, kept and in flight: 16 MiB,
/// some forty CRD group-version documents of 365 KB, or four of the
/// largest the proxy keeps gzipped only
/// ([`crate::body::rendered::GZIP_ONLY_MAX`]). Identity clients are rare;
/// this is what one costs at most, beside the memory budget.
pub const IDENTITY_LIMIT: usize = 16 << 20;

/// Why a plain answer cannot be given now.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// The limit is taken by bodies still being written.
    #[error(
        "{wanted} bytes of uncompressed document would pass the limit of {limit} bytes ({live} bytes held by other answers)"
    )]
    Busy {
        /// The plain length of the document asked for.
        wanted: usize,
        /// What inflated bodies hold now.
        live: usize,
        /// [`IDENTITY_LIMIT`], or the limit of a test.
        limit: usize,
    },
    /// The gzip rendition did not inflate to the document.
    #[error("the document's gzip rendition does not inflate: {0}")]
    Corrupt(#[from] std::io::Error),
}

/// How a plain answer was had, for `openapi_proxy_identity_bodies_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlainOrigin {
    /// The plain bytes were held: nothing to do.
    Held,
    /// Inflated earlier and still kept.
    Kept,
    /// Inflated for this answer.
    Inflated,
    /// Inflated as it is written, a chunk at a time, never whole: a body
    /// larger than [`IDENTITY_LIMIT`].
    Streamed,
}

/// Inflated documents by hash and media type, and what every inflated body
/// alive holds.
#[derive(Debug)]
pub struct IdentityCache {
    limit: usize,
    /// Bytes of inflated bodies alive (kept or not): each is counted when
    /// admitted and uncounted when its last `Bytes` is dropped.
    live: Arc<AtomicUsize>,
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    /// [`key`] → its plain bytes and when it was last used.
    entries: BTreeMap<String, (Bytes, u64)>,
    clock: u64,
}

/// An inflated body that gives its bytes back to the count when its last
/// reference is gone (when the answer was written, or the entry dropped).
struct Counted {
    bytes: Vec<u8>,
    live: Arc<AtomicUsize>,
}

impl AsRef<[u8]> for Counted {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.live.fetch_sub(self.bytes.len(), Ordering::Relaxed);
    }
}

impl Default for IdentityCache {
    fn default() -> Self {
        Self::new(IDENTITY_LIMIT)
    }
}

impl IdentityCache {
    /// A cache whose inflated bodies hold at most `limit` bytes together.
    #[must_use]
    pub fn new(limit: usize) -> Self {
        Self { limit, live: Arc::new(AtomicUsize::new(0)), kept: Mutex::default() }
    }

    /// What inflated bodies hold now, kept and in flight.
    #[must_use]
    pub fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        // The map is consistent between statements: a panic elsewhere
        // while it was held leaves nothing half-done.
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The plain bytes of `rendered`: held, kept, or inflated now.
    ///
    /// # Errors
    /// [`IdentityError::Busy`] when inflating would pass the limit even
    /// after every kept body was let go; [`IdentityError::Corrupt`] when
    /// the gzip rendition does not inflate to the document.
    pub fn plain(&self, rendered: &Rendered) -> Result<(Bytes, PlainOrigin), IdentityError> {
        if let Some(plain) = rendered.held() {
            return Ok((plain.clone(), PlainOrigin::Held));
        }
        let Some(gz) = &rendered.gzip else {
            // Neither rendition: only an empty body is made that way.
            return Ok((Bytes::new(), PlainOrigin::Held));
        };
        let wanted = rendered.len();
        {
            let mut kept = self.lock();
            kept.clock += 1;
            let now = kept.clock;
            if let Some((bytes, used)) = kept.entries.get_mut(&key(rendered)) {
                *used = now;
                return Ok((bytes.clone(), PlainOrigin::Kept));
            }
            self.admit(&mut kept, wanted)?;
        }
        // Inflated outside the lock: other answers go on meanwhile. The
        // bytes were counted by `admit`; from here `Counted` gives them back.
        let bytes = match inflate(gz, wanted) {
            Ok(bytes) => bytes,
            Err(e) => {
                self.live.fetch_sub(wanted, Ordering::Relaxed);
                return Err(e.into());
            }
        };
        let body = Bytes::from_owner(Counted { bytes, live: Arc::clone(&self.live) });
        let mut kept = self.lock();
        let now = kept.clock;
        kept.entries.insert(key(rendered), (body.clone(), now));
        Ok((body, PlainOrigin::Inflated))
    }

    /// Counts `wanted` more bytes, letting kept bodies go (least recently
    /// used first) until they fit.
    fn admit(&self, kept: &mut Kept, wanted: usize) -> Result<(), IdentityError> {
        loop {
            let live = self.live.load(Ordering::Relaxed);
            if live.saturating_add(wanted) <= self.limit {
                // Under the lock, so two admissions cannot both take the
                // same room; a drop elsewhere only lowers the count.
                self.live.fetch_add(wanted, Ordering::Relaxed);
                return Ok(());
            }
            let oldest =
                kept.entries.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k.clone());
            match oldest {
                // Dropping the entry uncounts its bytes at once unless an
                // answer still being written holds them.
                Some(hash) => drop(kept.entries.remove(&hash)),
                None => return Err(IdentityError::Busy { wanted, live, limit: self.limit }),
            }
        }
    }
}

/// What tells a body apart in the cache: its hash and media type. The
/// protobuf rendition of a document carries the JSON's hash (its ETag, as
/// kube-openapi's), so the hash alone would answer one with the other.
fn key(rendered: &Rendered) -> String {
    let media = String::from_utf8_lossy(rendered.content_type.as_bytes());
    format!("{} {media}", rendered.hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(seed: u32, len: usize) -> Rendered {
        let mut x = seed;
        let mut text = String::from("{\"openapi\":\"3.0.0\",\"t\":\"");
        while text.len() < len - 2 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            text.push(char::from(b'a' + u8::try_from((x >> 16) % 8).unwrap()));
        }
        text.push_str("\"}");
        let r = Rendered::document(text);
        assert!(r.held().is_none(), "test documents are kept gzipped only");
        r
    }

    #[test]
    fn two_renditions_of_one_document_are_kept_apart() {
        // A protobuf rendition carries its JSON's hash (kube-openapi's
        // ETag rule): the same hash, other bytes.
        let cache = IdentityCache::new(1 << 20);
        let json = document(1, 100_000);
        let other = Rendered::rendition_of(
            &json,
            document(2, 90_000).plain().unwrap(),
            actix_web::http::header::HeaderValue::from_static("application/x-other"),
        );
        assert_eq!(other.hash, json.hash);
        assert!(other.held().is_none() && json.held().is_none(), "both kept gzipped only");
        assert_eq!(cache.plain(&json).unwrap().0, json.plain().unwrap());
        assert_eq!(cache.plain(&other).unwrap().0, other.plain().unwrap());
    }

    #[test]
    fn held_bodies_are_given_as_they_are() {
        let cache = IdentityCache::new(1);
        let r = Rendered::json(&b"{}"[..]);
        let (body, origin) = cache.plain(&r).unwrap();
        assert_eq!((&body[..], origin), (&b"{}"[..], PlainOrigin::Held));
        assert_eq!(cache.live(), 0);
    }

    #[test]
    fn a_document_is_inflated_once_then_kept() {
        let cache = IdentityCache::new(1 << 20);
        let r = document(1, 100_000);
        let (a, origin) = cache.plain(&r).unwrap();
        assert_eq!(origin, PlainOrigin::Inflated);
        assert_eq!(a, r.plain().unwrap());
        let (b, origin) = cache.plain(&r).unwrap();
        assert_eq!(origin, PlainOrigin::Kept);
        assert_eq!(a.as_ptr(), b.as_ptr(), "the same bytes, not a second copy");
        assert_eq!(cache.live(), 100_000);
    }

    #[test]
    fn the_least_recently_used_is_let_go_for_room() {
        let cache = IdentityCache::new(250_000);
        let (one, two, three) = (document(1, 100_000), document(2, 100_000), document(3, 100_000));
        drop(cache.plain(&one).unwrap());
        drop(cache.plain(&two).unwrap());
        drop(cache.plain(&one).unwrap()); // one is now the most recent
        let (_, origin) = cache.plain(&three).unwrap();
        assert_eq!(origin, PlainOrigin::Inflated);
        assert_eq!(cache.live(), 200_000, "two was let go");
        assert_eq!(cache.plain(&one).unwrap().1, PlainOrigin::Kept);
        assert_eq!(cache.plain(&two).unwrap().1, PlainOrigin::Inflated);
    }

    /// Answers still being written hold their bytes: a crowd of them is
    /// refused past the limit, and the room comes back as they finish.
    #[test]
    fn bodies_in_flight_count_until_written() {
        let cache = IdentityCache::new(250_000);
        let docs: Vec<Rendered> = (0..3).map(|i| document(i, 100_000)).collect();
        let first = cache.plain(&docs[0]).unwrap().0;
        let second = cache.plain(&docs[1]).unwrap().0;
        match cache.plain(&docs[2]) {
            Err(IdentityError::Busy { wanted, live, limit }) => {
                assert_eq!((wanted, live, limit), (100_000, 200_000, 250_000));
            }
            other => panic!("expected Busy, got {other:?}"),
        }
        assert_eq!(cache.live(), 200_000, "a refusal holds nothing");
        drop(first);
        let third = cache.plain(&docs[2]).unwrap();
        assert_eq!(third.1, PlainOrigin::Inflated);
        assert_eq!(&third.0[..], &docs[2].plain().unwrap()[..]);
        drop((second, third));
        assert!(cache.live() <= 250_000);
    }

    #[test]
    fn a_document_larger_than_the_limit_is_refused_not_inflated() {
        let cache = IdentityCache::new(50_000);
        assert!(matches!(cache.plain(&document(1, 100_000)), Err(IdentityError::Busy { .. })));
        assert_eq!(cache.live(), 0);
    }
}
