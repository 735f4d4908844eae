//! The protobuf rendition of a served OpenAPI document: made from the JSON
//! the first time a client asks for it, then kept with the document.
//!
//! Most clients never ask for protobuf (kubectl 1.27+ reads v3 JSON), so
//! encoding every document of every snapshot up front would spend the
//! cold start and memory on renditions nobody reads. Instead each served
//! document carries a [`Protobuf`] cell, filled by the first request that
//! needs it (one encode per document, not per request) and handed to the
//! next snapshot with the document when the document is the same `Arc`,
//! so a one-document change keeps every other rendition.
//!
//! The renditions' bytes are bounded ([`Renditions`]): past the bound a
//! rendition is not made, the answer is negotiated as if protobuf were not
//! offered (JSON, or 406 for a client that takes only protobuf), and the
//! refusal is logged and counted, rather than the memory growing.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use actix_web::http::header::HeaderValue;

use crate::body::rendered::{GZIP_ONLY_MAX, GzipJoin, Rendered};
use crate::openapi::proto::{self, PiecesError};
use crate::wire::media::{OPENAPI_V2_PROTOBUF_CONTENT_TYPE, OPENAPI_V3_PROTOBUF_CONTENT_TYPE};

/// Which gnostic document a rendition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `openapi.v2.Document`, for `/openapi/v2`.
    V2,
    /// `openapi.v3.Document`, for `/openapi/v3/<key>`.
    V3,
}

/// What every protobuf rendition alive holds, against a limit.
#[derive(Debug)]
pub struct Renditions {
    limit: usize,
    held: AtomicUsize,
    /// The last rendition asked for did not fit: later refusals are not
    /// news until one fits again.
    refusing: AtomicBool,
}

impl Renditions {
    /// An account that lets renditions hold `limit` bytes together.
    #[must_use]
    pub fn new(limit: usize) -> Self {
        Self { limit, held: AtomicUsize::new(0), refusing: AtomicBool::new(false) }
    }

    /// The bytes the renditions alive hold.
    #[must_use]
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// The limit.
    #[must_use]
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Takes `bytes` from the limit; `Err(first)` when they do not fit,
    /// `first` when the refusals start with this one.
    fn charge(&self, bytes: usize) -> Result<(), bool> {
        let fits = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|total| *total <= self.limit)
            })
            .is_ok();
        let was_refusing = self.refusing.swap(!fits, Ordering::AcqRel);
        if fits { Ok(()) } else { Err(!was_refusing) }
    }

    /// Notes a refusal made without charging; `true` when the refusals
    /// start with it.
    fn refuse(&self) -> bool {
        !self.refusing.swap(true, Ordering::AcqRel)
    }

    fn release(&self, bytes: usize) {
        self.held.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// Why a document has no protobuf rendition to serve.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    /// The JSON holds what gnostic's parse refuses; that stays so for this
    /// document.
    #[error("the document has no protobuf encoding")]
    Unencodable(#[source] Arc<proto::ProtoError>),
    /// The rendition would pass the renditions' limit; a later request
    /// tries again.
    #[error("the protobuf renditions' memory limit is reached")]
    OverLimit {
        /// The refusals start with this one (the ones before fitted).
        first: bool,
        /// What this rendition would hold.
        needed: usize,
        /// What the renditions hold.
        held: usize,
        /// Their limit.
        limit: usize,
    },
    /// The document's gzip rendition did not inflate (memory corrupted).
    #[error("the document's bytes could not be read")]
    Unreadable(#[source] std::io::Error),
}

/// What a [`Protobuf`] cell settled on.
#[derive(Debug)]
enum Made {
    /// The rendition, and the account it is charged to.
    Ready(Arc<Rendered>, Arc<Renditions>),
    /// The document has no protobuf encoding.
    Unencodable(Arc<proto::ProtoError>),
}

/// The protobuf rendition of one served document, made on first use.
#[derive(Debug)]
pub struct Protobuf {
    /// The JSON it renders, which also says whether the next snapshot's
    /// document is the same one.
    json: Arc<Rendered>,
    version: Version,
    made: OnceLock<Made>,
}

impl Protobuf {
    /// An empty cell for `json`.
    #[must_use]
    pub fn new(json: Arc<Rendered>, version: Version) -> Self {
        Self { json, version, made: OnceLock::new() }
    }

    /// Whether this cell renders the very document `json` (the same
    /// `Arc`): then the next snapshot keeps it.
    #[must_use]
    pub fn renders(&self, json: &Arc<Rendered>) -> bool {
        Arc::ptr_eq(&self.json, json)
    }

    /// Whether the cell holds its outcome: the rendition, or that the
    /// document has none. A request that finds it so does no work.
    #[must_use]
    pub fn is_settled(&self) -> bool {
        self.made.get().is_some()
    }

    /// The rendition: the one made before, or made now and charged to
    /// `account`. Two requests racing for a document may both encode it;
    /// one result is kept.
    ///
    /// # Errors
    /// [`Unavailable`] when the document has no encoding, or the rendition
    /// does not fit the account's limit.
    pub fn get(&self, account: &Arc<Renditions>) -> Result<Arc<Rendered>, Unavailable> {
        if let Some(made) = self.made.get() {
            return settled(made);
        }
        if self.version == Version::V2 && self.json.inflates_while_written() {
            let made = self.in_pieces(account)?;
            return self.keep(made);
        }
        // A document this large keeps its rendition's plain bytes too (about
        // its own size): refused before it is inflated and encoded whole
        // only to find that out (the merged `/openapi/v2` at thousands of
        // CRDs is hundreds of megabytes).
        let at_least = self.json.len();
        if at_least > GZIP_ONLY_MAX && account.held().saturating_add(at_least) > account.limit() {
            return Err(Unavailable::OverLimit {
                first: account.refuse(),
                needed: at_least,
                held: account.held(),
                limit: account.limit(),
            });
        }
        let plain = self.json.plain().map_err(Unavailable::Unreadable)?;
        let (encoded, content_type) = match self.version {
            Version::V2 => (proto::openapi_v2(&plain), OPENAPI_V2_PROTOBUF_CONTENT_TYPE),
            Version::V3 => (proto::openapi_v3(&plain), OPENAPI_V3_PROTOBUF_CONTENT_TYPE),
        };
        drop(plain);
        let made = match encoded {
            Ok(bytes) => {
                let rendered = Rendered::rendition_of(
                    &self.json,
                    bytes,
                    HeaderValue::from_static(content_type),
                );
                let needed = rendered.weight();
                if let Err(first) = account.charge(needed) {
                    return Err(Unavailable::OverLimit {
                        first,
                        needed,
                        held: account.held(),
                        limit: account.limit(),
                    });
                }
                Made::Ready(Arc::new(rendered), Arc::clone(account))
            }
            Err(e) => Made::Unencodable(Arc::new(e)),
        };
        self.keep(made)
    }

    /// Keeps `made`, or what a request racing this one kept first.
    fn keep(&self, made: Made) -> Result<Arc<Rendered>, Unavailable> {
        if let Err(Made::Ready(lost, charged)) = self.made.set(made) {
            // Another request made it first: keep one, uncharge the other.
            charged.release(lost.weight());
        }
        settled(self.made.get().expect("set above, or by the request that won the race"))
    }

    /// The rendition of a Swagger 2.0 document held gzipped only because
    /// it is hundreds of megabytes (the merged `/openapi/v2` at thousands
    /// of CRDs), made as the JSON is inflated, a piece at a time, straight
    /// into its gzip: its JSON, tree and encoding never exist whole. It
    /// is refused when its gzip would pass what the account has left:
    /// estimated beforehand as a quarter more than the JSON's (measured:
    /// 1.15 at 5,000 CRDs; the encoding is smaller than the JSON but
    /// compresses less well), and checked as it is made.
    fn in_pieces(&self, account: &Arc<Renditions>) -> Result<Made, Unavailable> {
        let json_gzip = self.json.gzip.as_ref().map_or(self.json.len(), bytes::Bytes::len);
        let gzip = json_gzip.saturating_add(json_gzip / 4);
        let room = account.limit().saturating_sub(account.held());
        let over = |needed: usize| Unavailable::OverLimit {
            first: account.refuse(),
            needed,
            held: account.held(),
            limit: account.limit(),
        };
        if gzip > room {
            return Err(over(gzip));
        }
        let json = self.json.plain_reader().map_err(Unavailable::Unreadable)?;
        // Reserved, not touched: room enough never to move what is made.
        let mut join = GzipJoin::form_with_capacity(room.min(json_gzip.saturating_mul(2)));
        // Encoded on a thread of its own while this one compresses: a third
        // of the time is deflating, and the pieces in between are few.
        let (pieces, taken) = std::sync::mpsc::sync_channel::<Vec<u8>>(PIECES_AHEAD);
        let made = std::thread::scope(|scope| {
            let encoder = scope.spawn(move || {
                proto::openapi_v2_pieces(json, PIECE_BYTES, |piece| {
                    match pieces.send(piece.to_vec()) {
                        Ok(()) => ControlFlow::Continue(()),
                        Err(_) => ControlFlow::Break(()),
                    }
                })
            });
            let mut past_room = false;
            for piece in taken.iter() {
                join.push(&piece);
                past_room = join.gzip_len() > room;
                if past_room {
                    break;
                }
            }
            // The encoder's next piece finds nobody to take it and stops.
            drop(taken);
            let encoded = encoder.join().unwrap_or_else(|_| {
                Err(PiecesError::Read(std::io::Error::other("the protobuf encoder panicked")))
            });
            if past_room { Err(PiecesError::Stopped) } else { encoded }
        });
        match made {
            Ok(()) => {}
            Err(PiecesError::Stopped) => return Err(over(join.gzip_len())),
            Err(PiecesError::Proto(e)) => return Ok(Made::Unencodable(Arc::new(e))),
            Err(e @ PiecesError::Shape { .. }) => {
                return Err(Unavailable::Unreadable(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    e,
                )));
            }
            Err(PiecesError::Read(e)) => return Err(Unavailable::Unreadable(e)),
        }
        let content_type = HeaderValue::from_static(OPENAPI_V2_PROTOBUF_CONTENT_TYPE);
        let Some(rendered) = join.finish_form_of(content_type, &self.json) else {
            let e = proto::ProtoError::Unencodable {
                at: String::new(),
                problem: proto::Problem::TooLarge,
            };
            return Ok(Made::Unencodable(Arc::new(e)));
        };
        let needed = rendered.weight();
        account.charge(needed).map_err(|first| Unavailable::OverLimit {
            first,
            needed,
            held: account.held(),
            limit: account.limit(),
        })?;
        Ok(Made::Ready(Arc::new(rendered), Arc::clone(account)))
    }
}

/// The JSON a piece of a rendition made in pieces holds: a few hundred
/// members of `paths` or `definitions`.
const PIECE_BYTES: usize = 256 * 1024;

/// Pieces encoded and not yet compressed, at most.
const PIECES_AHEAD: usize = 4;

fn settled(made: &Made) -> Result<Arc<Rendered>, Unavailable> {
    match made {
        Made::Ready(rendered, _) => Ok(Arc::clone(rendered)),
        Made::Unencodable(e) => Err(Unavailable::Unencodable(Arc::clone(e))),
    }
}

impl Drop for Protobuf {
    fn drop(&mut self) {
        if let Some(Made::Ready(rendered, account)) = self.made.get() {
            account.release(rendered.weight());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{}}"#;

    fn cell() -> Protobuf {
        Protobuf::new(Arc::new(Rendered::json(DOC)), Version::V3)
    }

    #[test]
    fn a_rendition_has_the_protobuf_type_and_the_json_hash() {
        let account = Arc::new(Renditions::new(usize::MAX));
        let cell = cell();
        let made = cell.get(&account).unwrap();
        assert_eq!(made.content_type, OPENAPI_V3_PROTOBUF_CONTENT_TYPE);
        assert_eq!(made.hash, cell.json.hash);
        assert_eq!(made.etag, cell.json.etag);
        assert_eq!(made.held().unwrap()[..], proto::openapi_v3(DOC.as_bytes()).unwrap()[..]);
        assert!(Arc::ptr_eq(&made, &cell.get(&account).unwrap()), "made once");
    }

    #[test]
    fn the_account_holds_what_renditions_alive_hold() {
        let account = Arc::new(Renditions::new(usize::MAX));
        let cell = cell();
        let weight = cell.get(&account).unwrap().weight();
        assert_eq!(account.held(), weight);
        drop(cell);
        assert_eq!(account.held(), 0, "released with the document");
    }

    #[test]
    fn past_the_limit_a_rendition_is_refused_and_tried_again_later() {
        let account = Arc::new(Renditions::new(10));
        let cell = cell();
        let Err(Unavailable::OverLimit { first: true, limit: 10, .. }) = cell.get(&account) else {
            panic!("refused");
        };
        let Err(Unavailable::OverLimit { first: false, .. }) = cell.get(&account) else {
            panic!("refused again, and not news");
        };
        assert!(!cell.is_settled(), "nothing kept");
        assert_eq!(account.held(), 0);
        let roomy = Arc::new(Renditions::new(usize::MAX));
        assert!(cell.get(&roomy).is_ok(), "made once it fits");
    }

    /// A large document whose rendition cannot fit is refused before it
    /// is inflated and encoded: the account is asked first.
    #[test]
    fn a_large_document_past_the_limit_is_refused_unread() {
        let filler = "a".repeat(GZIP_ONLY_MAX);
        let parts = [
            r#"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{},"x":""#,
            &filler,
            r#""}"#,
        ];
        let mut join = crate::body::rendered::GzipJoin::with_capacity(0);
        for p in parts {
            join.push(p.as_bytes());
        }
        let json = join.finish(HeaderValue::from_static("application/json")).expect("small enough");
        assert!(json.held().is_none(), "held gzipped only");
        // Damaged on purpose: reading it would be an error, not a refusal.
        let mut damaged = json;
        damaged.gzip = damaged.gzip.map(|g| g.slice(..g.len() / 2));
        let cell = Protobuf::new(Arc::new(damaged), Version::V3);
        let account = Arc::new(Renditions::new(GZIP_ONLY_MAX));
        let Err(Unavailable::OverLimit { first: true, .. }) = cell.get(&account) else {
            panic!("refused before reading");
        };
        let Err(Unavailable::OverLimit { first: false, .. }) = cell.get(&account) else {
            panic!("refused again, and not news");
        };
    }

    /// A Swagger 2.0 document of `paths` path items, held gzipped only
    /// as the merged `/openapi/v2` is past 4 MiB.
    fn large_v2(paths: usize) -> Rendered {
        let mut join = crate::body::rendered::GzipJoin::with_capacity(0);
        join.push(br#"{"swagger":"2.0","info":{"title":"t","version":"v"},"paths":{"#);
        for i in 0..paths {
            let comma = if i == 0 { "" } else { "," };
            let item = format!(
                r#"{comma}"/apis/g{i}/v1/things":{{"get":{{"description":"lists things of group g{i}, a description long enough to matter","responses":{{"200":{{"description":"OK"}}}}}}}}"#
            );
            join.push(item.as_bytes());
        }
        join.push(br#"},"definitions":{"A":{"type":"object"}}}"#);
        join.finish(HeaderValue::from_static("application/json")).expect("small enough")
    }

    /// Past 4 MiB and held gzipped only, the rendition is made a piece at
    /// a time into a gzip of its own: served under the JSON's name,
    /// charged to the account, and the whole encoding once decoded (the
    /// pieces' equivalence is `proto::pieces`' test).
    #[test]
    fn a_large_v2_document_held_gzipped_is_encoded_in_pieces() {
        let json = large_v2(40_000);
        assert!(json.inflates_while_written(), "{} bytes, gzip only", json.len());
        let cell = Protobuf::new(Arc::new(json), Version::V2);
        let account = Arc::new(Renditions::new(usize::MAX));
        let made = cell.get(&account).unwrap();
        assert!(made.held().is_none(), "held gzipped only");
        assert_eq!(made.content_type, OPENAPI_V2_PROTOBUF_CONTENT_TYPE);
        assert_eq!((&made.hash, &made.etag), (&cell.json.hash, &cell.json.etag));
        assert_eq!(account.held(), made.weight());
        let pb = made.plain().unwrap();
        let whole = proto::openapi_v2(&cell.json.plain().unwrap()).unwrap();
        assert_ne!(pb[..], whole[..], "pieces, not the one message");
        // Every path item is in it, once.
        let text = String::from_utf8_lossy(&pb).into_owned();
        let groups: std::collections::BTreeSet<&str> = text
            .split("/apis/g")
            .skip(1)
            .filter_map(|rest| rest.split_once("/v1/things").map(|(group, _)| group))
            .collect();
        assert_eq!(groups.len(), 40_000);
    }

    /// The rendition is refused before it is made when a quarter more than
    /// the JSON's gzip does not fit what the account has left.
    #[test]
    fn a_large_v2_rendition_past_the_account_is_refused_before_it_is_made() {
        let json = large_v2(40_000);
        let gzip = json.gzip.as_ref().unwrap().len();
        let cell = Protobuf::new(Arc::new(json), Version::V2);
        let account = Arc::new(Renditions::new(gzip));
        let Err(Unavailable::OverLimit { first: true, needed, .. }) = cell.get(&account) else {
            panic!("refused");
        };
        assert_eq!(needed, gzip + gzip / 4);
        assert!(!cell.is_settled());
        assert_eq!(account.held(), 0);
        let roomy = Arc::new(Renditions::new(2 * gzip + 4096));
        assert!(cell.get(&roomy).is_ok(), "made once it fits");
    }

    #[test]
    fn a_document_gnostic_refuses_is_settled_as_unencodable() {
        let account = Arc::new(Renditions::new(usize::MAX));
        let cell = Protobuf::new(Arc::new(Rendered::json(r#"{"bogus":1}"#)), Version::V3);
        assert!(matches!(cell.get(&account), Err(Unavailable::Unencodable(_))));
        assert!(cell.is_settled());
        assert_eq!(account.held(), 0);
    }
}
