//! The immutable snapshot every request is answered from, how it is built
//! from what each downstream contributes, and the store that publishes it.
//!
//! One writer ([`crate::publish::hub`]) builds the whole next snapshot aside (root index
//! bytes, per-key documents, ETags, `Location` headers) and publishes it
//! with one `ArcSwap` store. A client therefore never sees a root index that
//! points at a document that is not there yet, and a request is a map lookup
//! and a write of shared bytes.
//!
//! Building is pure ([`build`]): contributions in, snapshot and what was
//! settled between downstreams out. [`rebuild`] is the same with the
//! previous snapshot as one more input: what did not change (each
//! discovery group's bodies, each root index entry's compressed bytes) is
//! taken from it instead of being made again, which is what keeps a
//! one-CRD change cheap at 5,000 CRDs (issue 16). Both give the same
//! bytes.
//!
//! One owner per group-version (issue 30): the downstream discovery takes
//! a group-version from (the priority winner among those listing it) owns
//! its requests (the front door), its discovery entry and its OpenAPI
//! document. Another downstream's document of it is never served, not
//! even when the owner publishes none: kubectl would validate and explain
//! the owner's objects with a schema of some other server. Every other
//! key (two downstreams publishing `version`, `api`, `apis/<group>`, or a
//! group-version no discovery lists) is settled by priority, then by
//! configuration order. Either way the result does not depend on which
//! downstream answered first.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use actix_web::http::header::HeaderValue;
use arc_swap::ArcSwap;

use crate::body::rendered::{Rendered, Segment};
use crate::discovery::owners::Owners;
use crate::discovery::{self, DownstreamDiscovery, RankedDiscovery, Rendering};
use crate::openapi::v2::assemble as merge_v2;
use crate::publish::protobuf::{Protobuf, Renditions, Version};
use crate::publish::readiness::Readiness;
use crate::wire::key::DocumentKey;

/// What one downstream currently contributes: its last good documents.
#[derive(Debug, Clone, Default)]
pub struct Contribution {
    /// The downstream's name.
    pub name: String,
    /// Larger wins conflicts.
    pub priority: i64,
    /// Position in the configuration; earlier wins ties.
    pub order: usize,
    /// OpenAPI v3 documents by key.
    pub openapi: BTreeMap<DocumentKey, Arc<Rendered>>,
    /// `/openapi/v2` as the downstream serves it.
    pub openapi_v2: Option<OpenApiV2>,
    /// `/version` as the downstream serves it.
    pub version: Option<Arc<Rendered>>,
    /// Its discovery, last good (stale when its last poll failed).
    pub discovery: Option<Arc<DownstreamDiscovery>>,
}

impl Contribution {
    /// Whether it carries what clients act on: an OpenAPI v3 document or
    /// a discovery entry. What makes a downstream count as delivered —
    /// `/openapi/v2` or `/version` alone leave `kubectl get` with an empty
    /// cluster.
    #[must_use]
    pub fn holds_data(&self) -> bool {
        !self.openapi.is_empty()
            || self.discovery.as_ref().is_some_and(|d| !d.core.is_empty() || !d.groups.is_empty())
    }

    /// Whether `other` serves exactly what this one does (same documents by
    /// hash, same discovery): then publishing it would change nothing, and
    /// the builder is not woken. Pollers run every few seconds; with many
    /// downstreams, rebuilding on every unchanged poll would keep the
    /// builder busy for nothing.
    #[must_use]
    pub fn same_as(&self, other: &Self) -> bool {
        let hashes = |m: &BTreeMap<DocumentKey, Arc<Rendered>>| -> Vec<(DocumentKey, String)> {
            m.iter().map(|(k, r)| (k.clone(), r.hash.clone())).collect()
        };
        let v2 = |c: &Self| c.openapi_v2.as_ref().map(|v| v.json.hash.clone());
        let discovery = |c: &Self| {
            c.discovery.as_ref().map(|d| {
                let legacy: Vec<(String, String)> =
                    d.legacy.iter().map(|(k, r)| (k.clone(), r.hash.clone())).collect();
                (d.core.clone(), d.groups.clone(), legacy, d.server_addresses.clone(), d.fresh)
            })
        };
        self.name == other.name
            && self.priority == other.priority
            && self.order == other.order
            && hashes(&self.openapi) == hashes(&other.openapi)
            && v2(self) == v2(other)
            && self.version.as_ref().map(|r| &r.hash) == other.version.as_ref().map(|r| &r.hash)
            && discovery(self) == discovery(other)
    }
}

/// A downstream's `/openapi/v2`, or the merged one, as JSON (its protobuf
/// form is the proxy's encoding, made on request: `OpenApiV2Slot`).
#[derive(Debug, Clone)]
pub struct OpenApiV2 {
    /// `application/json`.
    pub json: Arc<Rendered>,
}

/// One published OpenAPI v3 document.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Body, gzip body, hash, ETag.
    pub rendered: Arc<Rendered>,
    /// `/openapi/v3/<key>?hash=<hash>`: the root index's URL for it and the
    /// `Location` of a redirect from a stale hash.
    pub location: HeaderValue,
    /// The downstream it came from (for logs).
    pub downstream: Arc<str>,
    /// Its protobuf rendition, made on first use and kept by the next
    /// snapshot while the document is the same.
    pub protobuf: Arc<Protobuf>,
}

/// Everything the HTTP handlers serve, as of one moment.
#[derive(Debug)]
pub struct Snapshot {
    /// Increases with every publish.
    pub generation: u64,
    /// The `/openapi/v3` root index.
    pub openapi_root: Rendered,
    /// Documents by key (`api/v1`, `apis/apps/v1`, …).
    pub openapi: BTreeMap<String, Entry>,
    /// `/openapi/v2`: every downstream's merged (docs/wire.md, A-13), or
    /// one downstream's as it serves it when it is the only one; merged
    /// when first asked for, and shared with the next snapshots while its
    /// inputs stay.
    pub openapi_v2: Arc<OpenApiV2Slot>,
    /// `/version` from the highest-priority downstream that serves it.
    pub version: Option<Arc<Rendered>>,
    /// Every discovery body.
    pub discovery: Rendering,
    /// Ready to be served to clients: data is here (see
    /// [`Readiness`]).
    pub ready: bool,
    /// Each downstream's standing, for `/readyz?verbose`.
    pub readiness: Readiness,
    /// `GET /`: `{"paths":[…]}`, the paths served, as kube-apiserver's
    /// root lists its own.
    pub paths: bytes::Bytes,
    /// Each root index entry, prepared: what [`rebuild`] reuses.
    root_entries: BTreeMap<String, Segment>,
    /// Which downstream answers each group-version's requests (the front
    /// door); kept from the previous snapshot while it is the same.
    pub owners: Arc<Owners>,
}

/// A key published by more than one downstream.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Conflict {
    /// The key.
    pub key: DocumentKey,
    /// The downstream whose document is served.
    pub winner: String,
    /// The downstream whose document is not.
    pub loser: String,
}

/// A group-version document not served because discovery takes the
/// group-version from another downstream (docs/wire.md, A-1): the schema
/// kubectl validates and explains objects with must be the one of the
/// server those objects go to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mismatch {
    /// The group-version's key.
    pub key: DocumentKey,
    /// The downstream discovery takes it from, which the front door sends
    /// its requests to.
    pub owner: String,
    /// The downstream whose document of it is not served.
    pub publisher: String,
    /// Whether the owner's own document is served instead; when false, no
    /// document is served for the key.
    pub owner_has_document: bool,
}

/// What a build settled between downstreams, for the builder to log and
/// count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settled {
    /// Keys published by more than one downstream, each settled by priority
    /// (for a group-version, in its owner's favour).
    pub conflicts: Vec<Conflict>,
    /// Group-version documents published by a downstream that does not own
    /// the group-version.
    pub mismatches: Vec<Mismatch>,
}

impl Settled {
    /// Whether nothing had to be settled.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.conflicts.is_empty() && self.mismatches.is_empty()
    }
}

/// The downstream whose document of `key` alone may be served: the owner
/// discovery took the group-version from. `None` for a key that names no
/// group-version (`api`, `apis/<group>`, `version`, `logs`,
/// `.well-known/…`: [`Owners`] holds only group-versions), and for a
/// group-version no downstream lists in discovery; for those, the
/// priority rule alone decides.
fn document_owner<'o>(owners: &'o Owners, key: &DocumentKey) -> Option<&'o Arc<str>> {
    owners.owner(key.as_str())
}

/// Builds a snapshot from every downstream's contribution.
///
/// A group-version's document is its discovery owner's, or none (see the
/// module's documentation); the documents not served on that account are
/// the settled `mismatches`, the others not served the `conflicts`.
///
/// The root index is `{"paths":{KEY:{"serverRelativeURL":URL}}}` with keys
/// in byte order, compact, as Go's `encoding/json` writes it (docs/wire.md
/// B-1.1), so equal content gives equal bytes and equal ETags everywhere.
#[must_use]
pub fn build(
    generation: u64,
    contributions: &[Arc<Contribution>],
    readiness: Readiness,
) -> (Snapshot, Settled) {
    assemble(generation, contributions, readiness, None)
}

/// Builds the snapshot that follows `previous`: the same result as
/// [`build`], byte for byte, with the parts whose inputs did not change
/// taken from `previous` (issue 16: a one-group-version change at 5,000
/// CRDs must not cost a full build).
#[must_use]
pub fn rebuild(
    generation: u64,
    contributions: &[Arc<Contribution>],
    readiness: Readiness,
    previous: &Snapshot,
) -> (Snapshot, Settled) {
    assemble(generation, contributions, readiness, Some(previous))
}

fn assemble(
    generation: u64,
    contributions: &[Arc<Contribution>],
    readiness: Readiness,
    previous: Option<&Snapshot>,
) -> (Snapshot, Settled) {
    let mut ordered: Vec<&Arc<Contribution>> = contributions.iter().collect();
    ordered.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.order.cmp(&b.order)));

    // Discovery first: who owns each group-version decides whose
    // document of it is served (docs/wire.md, A-1).
    let sources: Vec<RankedDiscovery<'_>> = ordered
        .iter()
        .filter_map(|c| {
            c.discovery.as_deref().map(|d| RankedDiscovery {
                name: &c.name,
                priority: c.priority,
                order: c.order,
                discovery: d,
            })
        })
        .collect();
    let plan = discovery::plan(&sources);
    let owners = match previous {
        Some(p) if p.owners.same_as(&plan) => Arc::clone(&p.owners),
        _ => Arc::new(Owners::of(&plan)),
    };

    let mut openapi: BTreeMap<String, Entry> = BTreeMap::new();
    let previous_openapi = previous.map(|p| &p.openapi);
    let mut winners: BTreeMap<&DocumentKey, &str> = BTreeMap::new();
    let mut settled = Settled::default();
    for c in &ordered {
        let name: Arc<str> = Arc::from(c.name.as_str());
        for (key, rendered) in &c.openapi {
            if let Some(winner) = winners.get(key) {
                settled.conflicts.push(Conflict {
                    key: key.clone(),
                    winner: (*winner).to_owned(),
                    loser: c.name.clone(),
                });
                continue;
            }
            if let Some(owner) = document_owner(&owners, key).filter(|o| &***o != c.name.as_str()) {
                // Not served: kubectl would validate and explain the
                // owner's objects with this downstream's schema.
                settled.mismatches.push(Mismatch {
                    key: key.clone(),
                    owner: owner.to_string(),
                    publisher: c.name.clone(),
                    owner_has_document: ordered
                        .iter()
                        .any(|o| *o.name == **owner && o.openapi.contains_key(key)),
                });
                continue;
            }
            winners.insert(key, &c.name);
            let key = key.to_string();
            let before = previous_openapi
                .and_then(|p| p.get(&key))
                .filter(|e| Arc::ptr_eq(&e.rendered, rendered));
            let protobuf = before.map_or_else(
                || Arc::new(Protobuf::new(Arc::clone(rendered), Version::V3)),
                |e| Arc::clone(&e.protobuf),
            );
            let location = match before {
                // The very document as before: the same location, made
                // once (a thousand of them at 5,000 CRDs, issue 16).
                Some(e) => e.location.clone(),
                None => {
                    let location = format!("/openapi/v3/{key}?hash={}", rendered.hash);
                    // Keys are URL path segments (DocumentKey refuses
                    // anything else) and hashes are hex, so this is a
                    // valid header value.
                    let Ok(location) = HeaderValue::from_str(&location) else { continue };
                    location
                }
            };
            openapi.insert(
                key,
                Entry {
                    rendered: Arc::clone(rendered),
                    location,
                    downstream: Arc::clone(&name),
                    protobuf,
                },
            );
        }
    }
    let root_entries = root_entries(&openapi, previous);
    let discovery = discovery::render_reusing(&plan, previous.map(|p| &p.discovery));
    let bringing: Vec<&Arc<Contribution>> =
        ordered.iter().copied().filter(|c| brings_to_v2(c)).collect();
    let openapi_v2 = match previous {
        // The same inputs and the same owners: the same document.
        Some(p) if Arc::ptr_eq(&p.owners, &owners) && p.openapi_v2.made_from(&bringing) => {
            Arc::clone(&p.openapi_v2)
        }
        _ => Arc::new(OpenApiV2Slot::new(&bringing, &owners)),
    };
    let version = ordered.iter().find_map(|c| c.version.clone());
    let paths = match previous {
        // The same groups and group-versions: the same paths.
        Some(p)
            if p.discovery.groups.keys().eq(discovery.groups.keys())
                && p.discovery.resources.keys().eq(discovery.resources.keys()) =>
        {
            p.paths.clone()
        }
        _ => served_paths(&discovery),
    };
    let snapshot = Snapshot {
        paths,
        generation,
        openapi_root: root_index(&root_entries),
        openapi,
        openapi_v2,
        version,
        discovery,
        ready: readiness.ready(),
        readiness,
        root_entries,
        owners,
    };
    (snapshot, settled)
}

/// `/openapi/v2`, made from what every downstream brings when it is first
/// asked for (docs/wire.md, A-13).
///
/// Not made in the build: at 5,000 CRDs the inputs are hundreds of
/// megabytes, and merging and compressing them on every CRD change would
/// multiply the cost of a one-document rebuild and of the cold start for
/// a document few clients still read (kubectl ≥ 1.29 reads v3). The
/// first request after a change makes it, off its worker (seconds at
/// that scale); requests at the same time wait for that one, in
/// [`Self::turn`]; the next snapshots share it while its inputs stay.
#[derive(Debug)]
pub struct OpenApiV2Slot {
    /// The owners it was planned with.
    owners: Arc<Owners>,
    /// The contributions that bring something, highest priority first:
    /// what it is made from, and what the next build compares.
    contributions: Vec<Arc<Contribution>>,
    made: OnceLock<Option<OpenApiV2>>,
    /// The protobuf rendition of the document, itself made on first use.
    protobuf: OnceLock<Option<V2Protobuf>>,
    /// Set by the first request refused for [`TooLarge`] (logged once).
    refused: OnceLock<()>,
    /// A client asked for it: the next snapshot's is then made aside
    /// after a change. Not merely made: one downstream's own document is
    /// made without anyone asking, and making the merge of thousands of
    /// CRDs that nobody reads holds a hundred MiB for seconds.
    asked: AtomicBool,
    /// Taken by a request before it makes the document (or its protobuf)
    /// on a blocking thread: the requests at the same time wait here, not
    /// each on a thread of its own.
    turn: tokio::sync::Mutex<()>,
    /// What making it holds at its peak, estimated once from its inputs:
    /// a refused request pays no walk over a thousand documents.
    cost: u64,
}

/// The protobuf rendition of the merged `/openapi/v2`, and what it is
/// charged to: the bound the document was made within, less the document
/// (docs/operations.md, "Memory"). Not the documents' renditions'
/// account: at thousands of CRDs this one rendition is larger than all of
/// theirs may be.
#[derive(Debug)]
pub struct V2Protobuf {
    /// The rendition, made on first use.
    pub cell: Arc<Protobuf>,
    /// Its account.
    pub account: Arc<Renditions>,
}

/// The merged `/openapi/v2` is not made: making it would hold more than
/// the bound it is made within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    /// What making it would hold at its peak, estimated.
    pub needed: u64,
    /// The bound.
    pub limit: u64,
    /// The first refusal of this document (the one to log).
    pub first: bool,
}

impl OpenApiV2Slot {
    fn new(bringing: &[&Arc<Contribution>], owners: &Arc<Owners>) -> Self {
        let contributions: Vec<Arc<Contribution>> =
            bringing.iter().map(|c| Arc::clone(c)).collect();
        let made = OnceLock::new();
        // One downstream's own document costs nothing to serve: ready now.
        if let Some(v2) = passed_through(&contributions, owners) {
            let _ = made.set(Some(v2));
        }
        // What `merged` reads: a downstream's own v2, else its v3 documents.
        let mut making = merge_v2::MakingCost::default();
        for c in &contributions {
            match &c.openapi_v2 {
                Some(v2) => making.add(&v2.json),
                None => c.openapi.values().for_each(|r| making.add(r)),
            }
        }
        let cost = making.peak();
        Self {
            owners: Arc::clone(owners),
            contributions,
            made,
            protobuf: OnceLock::new(),
            refused: OnceLock::new(),
            asked: AtomicBool::new(false),
            turn: tokio::sync::Mutex::new(()),
            cost,
        }
    }

    /// The document, made now if it was not yet (on the caller's thread;
    /// a caller at the same time waits for it), whatever it costs: what
    /// serves clients asks [`Self::get_within`].
    pub fn get(&self) -> Option<&OpenApiV2> {
        self.made.get_or_init(|| merged(&self.contributions, &self.owners)).as_ref()
    }

    /// The document, made now if it was not yet and making it holds at
    /// most `limit` bytes at its peak (estimated from its inputs); refused
    /// otherwise. Behind a large CRD downstream (5,000 CRDs: a GiB at the
    /// peak) a request must not take the process past its memory.
    ///
    /// # Errors
    /// [`TooLarge`] when making it would take more than `limit`.
    pub fn get_within(&self, limit: u64) -> Result<Option<&OpenApiV2>, TooLarge> {
        if let Some(made) = self.made.get() {
            return Ok(made.as_ref());
        }
        let needed = self.making_cost();
        if needed > limit {
            return Err(TooLarge { needed, limit, first: self.refused.set(()).is_ok() });
        }
        Ok(self.get())
    }

    /// What making the document would hold at its peak, estimated from
    /// what it reads (`MakingCost`); 0 once made.
    #[must_use]
    pub fn making_cost(&self) -> u64 {
        if self.is_made() { 0 } else { self.cost }
    }

    /// The document's protobuf rendition (itself made, within its own
    /// bound, when a client first asks for it), the document made first
    /// within `limit` if it was not. The proxy's own encoding of the JSON
    /// served, never a downstream's protobuf: the two would be different
    /// documents once merged.
    ///
    /// # Errors
    /// As [`Self::get_within`].
    pub fn protobuf_within(&self, limit: u64) -> Result<Option<&V2Protobuf>, TooLarge> {
        if let Some(made) = self.protobuf.get() {
            return Ok(made.as_ref());
        }
        let json = self.get_within(limit)?.map(|v2| Arc::clone(&v2.json));
        Ok(self
            .protobuf
            .get_or_init(|| {
                json.map(|json| {
                    // Within the bound the document was made in, beside it.
                    let room = usize::try_from(limit).unwrap_or(usize::MAX);
                    let account = Renditions::new(room.saturating_sub(json.weight()));
                    V2Protobuf {
                        cell: Arc::new(Protobuf::new(json, Version::V2)),
                        account: Arc::new(account),
                    }
                })
            })
            .as_ref())
    }

    /// Whether a client asked for it.
    #[must_use]
    pub fn was_asked(&self) -> bool {
        self.asked.load(Ordering::Relaxed)
    }

    /// Notes that a client asked for it (or that clients read the one it
    /// follows).
    pub fn mark_asked(&self) {
        if !self.was_asked() {
            self.asked.store(true, Ordering::Relaxed);
        }
    }

    /// Whether it has been made.
    #[must_use]
    pub fn is_made(&self) -> bool {
        self.made.get().is_some()
    }

    /// Whether its protobuf rendition has been made, or found unmakeable.
    #[must_use]
    pub fn is_protobuf_settled(&self) -> bool {
        self.protobuf.get().is_some_and(|made| made.as_ref().is_none_or(|p| p.cell.is_settled()))
    }

    /// The turn to make it (see the field): held while one request makes
    /// it off the worker that took it.
    pub async fn turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.turn.lock().await
    }

    /// Whether `other` is made from the same inputs and owners, so serves
    /// the same document.
    #[must_use]
    pub fn same_as(&self, other: &Self) -> bool {
        *self.owners == *other.owners
            && self.made_from(&other.contributions.iter().collect::<Vec<_>>())
    }

    /// Whether `bringing` bring what this was made from: compared in
    /// place, by hash (a thousand CRD documents are mostly the very same
    /// `Arc`), without copying a key or a hash (issue 16).
    fn made_from(&self, bringing: &[&Arc<Contribution>]) -> bool {
        self.contributions.len() == bringing.len()
            && self.contributions.iter().zip(bringing).all(|(a, b)| same_v2_input(a, b))
    }
}

/// Whether a downstream brings anything to `/openapi/v2`: its own, or
/// OpenAPI v3 documents to convert down.
fn brings_to_v2(c: &Contribution) -> bool {
    c.openapi_v2.is_some() || !c.openapi.is_empty()
}

/// Whether `a` and `b` bring the same to `/openapi/v2`.
fn same_v2_input(a: &Contribution, b: &Contribution) -> bool {
    a.name == b.name
        && match (&a.openapi_v2, &b.openapi_v2) {
            (Some(x), Some(y)) => x.json.hash == y.json.hash,
            (None, None) => {
                a.openapi.len() == b.openapi.len()
                    && a.openapi.iter().zip(&b.openapi).all(|((ka, ra), (kb, rb))| {
                        ka == kb && (Arc::ptr_eq(ra, rb) || ra.hash == rb.hash)
                    })
            }
            _ => false,
        }
}

/// One downstream's `/openapi/v2` as it serves it, when it is the only one
/// that brings anything, brings its own v2 and owns every group-version: a
/// single downstream is answered byte for byte, protobuf included.
fn passed_through(contributions: &[Arc<Contribution>], owners: &Owners) -> Option<OpenApiV2> {
    let [only] = contributions else { return None };
    if !owners.by_key().values().all(|o| **o == *only.name) {
        return None;
    }
    only.openapi_v2.clone()
}

/// The merge of what `ordered` bring (docs/wire.md, A-13), in JSON
/// ([`merge_v2::merged`]). A downstream whose documents cannot take part
/// is left out, with a warning.
fn merged(ordered: &[Arc<Contribution>], owners: &Owners) -> Option<OpenApiV2> {
    let inputs = ordered.iter().filter_map(|c| {
        let (docs, is_v2) = match &c.openapi_v2 {
            Some(v2) => (vec![(String::from("openapi/v2"), Arc::clone(&v2.json))], true),
            None if !c.openapi.is_empty() => {
                (c.openapi.iter().map(|(k, r)| (k.to_string(), Arc::clone(r))).collect(), false)
            }
            None => return None,
        };
        Some(merge_v2::Input { name: c.name.clone(), docs, is_v2 })
    });
    let left_out = |name: &str, e: merge_v2::AssembleError| {
        tracing::warn!(downstream = %name, error = %crate::error_chain(&e), "left out of /openapi/v2: its documents cannot be merged");
    };
    let made = match merge_v2::merged(inputs.collect(), owners.by_key(), left_out)? {
        Ok(made) => made,
        Err(e) => {
            tracing::error!(error = %crate::error_chain(&e), "/openapi/v2 not made: a document read again differs from its first reading");
            return None;
        }
    };
    for r in &made.renamed {
        tracing::info!(downstream = %r.downstream, section = r.section, from = %r.from, to = %r.to, "renamed in /openapi/v2: another downstream has a different definition of this name");
    }
    if made.kinds_dropped > 0 {
        tracing::info!(
            kinds = made.kinds_dropped,
            "kinds listed by two definitions in /openapi/v2 kept on one"
        );
    }
    Some(OpenApiV2 { json: Arc::new(made.json) })
}

/// Each document's `KEY:{"serverRelativeURL":URL}` member of the root
/// index, compressed once: taken from `previous` when it served the very
/// document (the same `Arc`, kept alive by `previous`) or when the member's
/// bytes are the same, made otherwise.
fn root_entries(
    openapi: &BTreeMap<String, Entry>,
    previous: Option<&Snapshot>,
) -> BTreeMap<String, Segment> {
    openapi
        .iter()
        .map(|(key, e)| {
            let same_document = previous
                .and_then(|p| p.openapi.get(key).zip(p.root_entries.get(key)))
                .filter(|(before, _)| Arc::ptr_eq(&before.rendered, &e.rendered));
            if let Some((_, segment)) = same_document {
                return (key.clone(), segment.clone());
            }
            let previous = previous.map(|p| &p.root_entries);
            let url = e.location.to_str().unwrap_or_default();
            let mut member = serde_json::to_vec(key).expect("a string always serializes");
            member.extend_from_slice(b":{\"serverRelativeURL\":");
            member.extend(serde_json::to_vec(url).expect("a string always serializes"));
            member.push(b'}');
            let segment = previous
                .and_then(|p| p.get(key))
                .filter(|s| s.plain[..] == member[..])
                .cloned()
                .unwrap_or_else(|| Segment::new(member));
            (key.clone(), segment)
        })
        .collect()
}

/// `{"paths":{MEMBER,MEMBER,…}}`, members in key order.
fn root_index(entries: &BTreeMap<String, Segment>) -> Rendered {
    let head = Segment::fixed("{\"paths\":{");
    let tail = Segment::fixed("}}");
    let comma = Segment::fixed(",");
    let mut parts: Vec<&Segment> = Vec::with_capacity(entries.len() * 2 + 2);
    parts.push(&head);
    for (i, member) in entries.values().enumerate() {
        if i > 0 {
            parts.push(&comma);
        }
        parts.push(member);
    }
    parts.push(&tail);
    Rendered::from_segments(parts.iter().copied(), HeaderValue::from_static("application/json"))
}

/// The fixed paths and every group and group-version of `discovery`,
/// sorted, as pretty JSON (kube-apiserver's root is indented).
fn served_paths(discovery: &Rendering) -> bytes::Bytes {
    let mut paths: Vec<String> = [
        "/api",
        "/apis",
        "/healthz",
        "/livez",
        "/metrics",
        "/openapi/v2",
        "/openapi/v3",
        "/readyz",
        "/version",
    ]
    .iter()
    .map(|p| (*p).to_owned())
    .collect();
    paths.extend(discovery.groups.keys().map(|g| format!("/apis/{g}")));
    paths.extend(discovery.resources.keys().map(|k| format!("/{k}")));
    paths.sort();
    paths.dedup();
    let mut body =
        serde_json::to_vec_pretty(&serde_json::json!({ "paths": paths })).unwrap_or_default();
    body.push(b'\n');
    body.into()
}

/// The current snapshot, swapped whole.
#[derive(Debug)]
pub struct Store {
    current: ArcSwap<Snapshot>,
}

impl Store {
    /// A store serving an empty, not-ready snapshot.
    #[must_use]
    pub fn new() -> Self {
        Self::waiting(Readiness::default())
    }

    /// A store serving an empty snapshot with `readiness`: before the
    /// first build, `/readyz` already names every downstream it waits for.
    #[must_use]
    pub fn waiting(readiness: Readiness) -> Self {
        let (empty, _) = build(0, &[], readiness);
        Self { current: ArcSwap::from_pointee(empty) }
    }

    /// The snapshot to answer one request from.
    #[must_use]
    pub fn load(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Makes `snapshot` the one served.
    pub fn publish(&self, snapshot: Snapshot) {
        self.current.store(Arc::new(snapshot));
    }
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn contribution(
        name: &str,
        priority: i64,
        order: usize,
        docs: &[(&str, &str)],
    ) -> Arc<Contribution> {
        Arc::new(Contribution {
            name: name.into(),
            priority,
            order,
            openapi: docs
                .iter()
                .map(|(k, body)| {
                    (DocumentKey::parse(k).unwrap(), Arc::new(Rendered::json(body.to_string())))
                })
                .collect(),
            ..Contribution::default()
        })
    }

    #[test]
    fn a_one_document_change_keeps_every_other_protobuf_rendition() {
        let a = contribution("a", 1, 0, &[("apis/a/v1", "{\"a\":1}"), ("apis/b/v1", "{\"b\":1}")]);
        let (first, _) = build(1, &[Arc::clone(&a)], Readiness::default());
        let mut changed = (*a).clone();
        changed.openapi.insert(
            DocumentKey::parse("apis/b/v1").unwrap(),
            Arc::new(Rendered::json("{\"b\":2}")),
        );
        let (second, _) = rebuild(2, &[Arc::new(changed)], Readiness::default(), &first);
        let same = |k: &str| Arc::ptr_eq(&first.openapi[k].protobuf, &second.openapi[k].protobuf);
        assert!(same("apis/a/v1"), "the unchanged document keeps its rendition");
        assert!(!same("apis/b/v1"), "the changed one gets a new cell");
    }

    #[test]
    fn empty_root_is_empty_paths() {
        let (s, _) = build(1, &[], Readiness::default());
        assert_eq!(&s.openapi_root.plain().unwrap()[..], b"{\"paths\":{}}");
    }

    #[test]
    fn root_lists_every_key_in_byte_order_with_hash_urls() {
        let c = contribution("a", 1, 0, &[("apis/b/v1", "{\"x\":1}"), ("api/v1", "{}")]);
        let (s, conflicts) = build(1, &[c], Readiness::default());
        assert!(conflicts.is_empty());
        let root: serde_json::Value =
            serde_json::from_slice(&s.openapi_root.plain().unwrap()).unwrap();
        let keys: Vec<_> = root["paths"].as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["api/v1", "apis/b/v1"]);
        let url = root["paths"]["api/v1"]["serverRelativeURL"].as_str().unwrap();
        assert_eq!(
            url,
            format!("/openapi/v3/api/v1?hash={}", crate::body::digest::sha512_hex(b"{}"))
        );
    }

    #[test]
    fn higher_priority_wins_a_conflict_whatever_the_order() {
        let low = contribution("low", 1, 0, &[("api/v1", "{\"low\":1}")]);
        let high = contribution("high", 2, 1, &[("api/v1", "{\"high\":1}")]);
        for input in [vec![low.clone(), high.clone()], vec![high.clone(), low.clone()]] {
            let (s, conflicts) = build(1, &input, Readiness::default());
            assert_eq!(&s.openapi["api/v1"].rendered.plain().unwrap()[..], b"{\"high\":1}");
            assert_eq!(
                conflicts.conflicts,
                [Conflict {
                    key: DocumentKey::parse("api/v1").unwrap(),
                    winner: "high".into(),
                    loser: "low".into()
                }]
            );
        }
    }

    /// `base` listing `group_versions` (`api/v1`, `apis/<g>/<v>`) in its
    /// discovery, fresh.
    fn listing(base: &Arc<Contribution>, group_versions: &[&str]) -> Arc<Contribution> {
        let keys: Vec<DocumentKey> =
            group_versions.iter().map(|k| DocumentKey::parse(k).unwrap()).collect();
        let discovery =
            DownstreamDiscovery { fresh: true, ..crate::discovery::stale_from_openapi(&keys) };
        Arc::new(Contribution { discovery: Some(Arc::new(discovery)), ..(**base).clone() })
    }

    fn mismatch(key: &str, owner: &str, publisher: &str, owner_has_document: bool) -> Mismatch {
        Mismatch {
            key: DocumentKey::parse(key).unwrap(),
            owner: owner.into(),
            publisher: publisher.into(),
            owner_has_document,
        }
    }

    /// Issue 30: B (higher priority) lists `apps/v1` in discovery but
    /// publishes no document of it; A has both. B owns `apps/v1`, so A's
    /// document must not be served as if it described B's objects.
    #[test]
    fn a_group_version_gets_no_document_but_its_owners() {
        let a = listing(
            &contribution("a", 1, 1, &[("apis/apps/v1", "{\"a\":1}"), ("api/v1", "{\"a\":2}")]),
            &["apis/apps/v1", "api/v1"],
        );
        let b = listing(&contribution("b", 2, 0, &[]), &["apis/apps/v1"]);
        for input in [vec![a.clone(), b.clone()], vec![b.clone(), a.clone()]] {
            let (s, settled) = build(1, &input, Readiness::default());
            assert_eq!(s.owners.owner("apis/apps/v1").map(|o| &**o), Some("b"));
            assert!(!s.openapi.contains_key("apis/apps/v1"), "A's schema for B's objects");
            let root = String::from_utf8(s.openapi_root.plain().unwrap().to_vec()).unwrap();
            assert!(!root.contains("apis/apps/v1"), "{root}");
            // What A alone lists stays A's.
            assert_eq!(&*s.openapi["api/v1"].downstream, "a");
            assert_eq!(settled.mismatches, [mismatch("apis/apps/v1", "b", "a", false)]);
            assert!(settled.conflicts.is_empty());
        }
    }

    /// A higher-priority downstream's document of a group-version it does
    /// not list yields to the owner's own document.
    #[test]
    fn the_owners_document_is_served_over_a_higher_priority_publishers() {
        let high = listing(&contribution("high", 5, 0, &[("apis/apps/v1", "{\"high\":1}")]), &[]);
        let owner = listing(
            &contribution("owner", 1, 1, &[("apis/apps/v1", "{\"owner\":1}")]),
            &["apis/apps/v1"],
        );
        let (s, settled) = build(1, &[high, owner], Readiness::default());
        assert_eq!(&s.openapi["apis/apps/v1"].rendered.plain().unwrap()[..], b"{\"owner\":1}");
        assert_eq!(settled.mismatches, [mismatch("apis/apps/v1", "owner", "high", true)]);
        assert!(settled.conflicts.is_empty());
    }

    /// A lower-priority downstream's document of the owner's group-version
    /// is an ordinary conflict, as before: the owner wins it either way.
    #[test]
    fn a_lower_priority_publisher_of_an_owned_group_version_is_a_conflict() {
        let owner = listing(
            &contribution("owner", 5, 0, &[("apis/apps/v1", "{\"owner\":1}")]),
            &["apis/apps/v1"],
        );
        let low = listing(&contribution("low", 1, 1, &[("apis/apps/v1", "{\"low\":1}")]), &[]);
        let (s, settled) = build(1, &[low, owner], Readiness::default());
        assert_eq!(&*s.openapi["apis/apps/v1"].downstream, "owner");
        assert!(settled.mismatches.is_empty());
        assert_eq!(settled.conflicts.len(), 1);
        assert_eq!(settled.conflicts[0].winner, "owner");
    }

    /// Keys that name no group-version, and group-versions no discovery
    /// lists, keep the priority rule, whoever lists what.
    #[test]
    fn keys_without_an_owner_keep_the_priority_rule() {
        let docs = [("version", "{\"v\":1}"), ("apis", "{}"), ("apis/x.io/v1", "{}")];
        let high = listing(&contribution("high", 5, 0, &docs), &[]);
        let low = listing(&contribution("low", 1, 1, &docs), &["apis/apps/v1"]);
        let (s, settled) = build(1, &[low, high], Readiness::default());
        for key in ["version", "apis", "apis/x.io/v1"] {
            assert_eq!(&*s.openapi[key].downstream, "high", "{key}");
        }
        assert!(settled.mismatches.is_empty());
        assert_eq!(settled.conflicts.len(), 3);
    }

    #[test]
    fn equal_priority_goes_to_the_earlier_downstream() {
        let first = contribution("first", 1, 0, &[("api/v1", "{\"first\":1}")]);
        let second = contribution("second", 1, 1, &[("api/v1", "{\"second\":1}")]);
        let (s, _) = build(1, &[second, first], Readiness::default());
        assert_eq!(&*s.openapi["api/v1"].downstream, "first");
    }

    #[test]
    fn root_index_is_the_bytes_serde_writes_for_the_map() {
        let c = contribution(
            "a",
            1,
            0,
            &[("apis/b/v1", "{\"x\":1}"), ("api/v1", "{}"), ("apis/c/v2", "{}")],
        );
        let (s, _) = build(1, &[c], Readiness::default());
        let urls: BTreeMap<&str, serde_json::Value> = s
            .openapi
            .iter()
            .map(|(k, e)| {
                (
                    k.as_str(),
                    serde_json::json!({ "serverRelativeURL": e.location.to_str().unwrap() }),
                )
            })
            .collect();
        let whole = serde_json::to_vec(&serde_json::json!({ "paths": urls })).unwrap();
        assert_eq!(s.openapi_root.plain().unwrap(), whole);
    }

    /// One served body: what serves it, body, gzip, ETag.
    type Served = (String, Vec<u8>, Option<Vec<u8>>, String);

    /// Every byte a snapshot serves, in one comparable list.
    fn served(s: &Snapshot) -> Vec<Served> {
        let mut out = Vec::new();
        let mut push = |name: &str, r: &Rendered| {
            out.push((
                name.to_owned(),
                r.plain().unwrap().to_vec(),
                r.gzip.as_ref().map(|g| g.to_vec()),
                r.etag_str().to_owned(),
            ));
        };
        push("root", &s.openapi_root);
        let d = &s.discovery;
        for (name, r) in [
            ("api_v2", &d.api_v2),
            ("api_v2beta1", &d.api_v2beta1),
            ("apis_v2", &d.apis_v2),
            ("apis_v2beta1", &d.apis_v2beta1),
            ("api_legacy", &d.api_legacy),
            ("apis_legacy", &d.apis_legacy),
        ] {
            push(name, r);
        }
        for (k, r) in &d.groups {
            push(&format!("group {k}"), r);
        }
        for (k, r) in &d.resources {
            push(&format!("resources {k}"), r);
        }
        for (k, e) in &s.openapi {
            push(&format!("openapi {k} {}", e.location.to_str().unwrap()), &e.rendered);
        }
        out.push(("paths".into(), s.paths.to_vec(), None, String::new()));
        out
    }

    const FLEET: crate::testkit::crd::CrdFleet =
        crate::testkit::crd::CrdFleet { seed: 3, kinds: 60, group_versions: 24, kind_bytes: 300 };

    #[test]
    fn rebuilding_after_several_changes_gives_the_bytes_of_a_full_build() {
        let other = contribution("other", 5, 1, &[("apis/extra.io/v1", "{\"extra\":1}")]);
        let mut steps: Vec<Vec<Arc<Contribution>>> = vec![
            vec![Arc::new(FLEET.contribution("crds", None))],
            vec![Arc::new(FLEET.contribution("crds", Some((3, 1))))],
            vec![Arc::new(FLEET.contribution("crds", Some((3, 2)))), Arc::clone(&other)],
            vec![Arc::new(FLEET.contribution("crds", Some((17, 1)))), Arc::clone(&other)],
            vec![Arc::new(Contribution {
                discovery: Some(Arc::new(crate::discovery::DownstreamDiscovery {
                    fresh: false,
                    ..FLEET.discovery(Some((17, 1)))
                })),
                ..FLEET.contribution("crds", Some((17, 1)))
            })],
            vec![Arc::new(FLEET.contribution("crds", None))],
        ];
        // As a poller hands them on: what did not change is the previous
        // contribution's own `Arc`.
        for changed in [Some((9, 1)), Some((9, 2)), None] {
            let last = Arc::clone(&steps[steps.len() - 1][0]);
            steps.push(vec![Arc::new(FLEET.contribution_after(&last, "crds", changed))]);
        }
        let (mut previous, _) = build(1, &steps[0], Readiness::default());
        for (i, step) in steps.iter().enumerate().skip(1) {
            let generation = u64::try_from(i).unwrap() + 1;
            let (incremental, c1) = rebuild(generation, step, Readiness::default(), &previous);
            let (whole, c2) = build(generation, step, Readiness::default());
            assert_eq!(c1, c2);
            assert_eq!(served(&incremental), served(&whole), "step {i}");
            previous = incremental;
        }
    }

    /// Issue 16: a change to one CRD group-version must not render every
    /// discovery body and root entry again.
    #[test]
    fn one_group_version_change_renders_only_that_group() {
        let (first, _) =
            build(1, &[Arc::new(FLEET.contribution("crds", None))], Readiness::default());
        assert_eq!(first.discovery.rendered_groups, 12, "24 group-versions in 12 groups");
        let changed = FLEET.group_version(5);
        let (next, _) = rebuild(
            2,
            &[Arc::new(FLEET.contribution("crds", Some((5, 1))))],
            Readiness::default(),
            &first,
        );
        assert_eq!(next.discovery.rendered_groups, 1);
        assert_only_changed_made_again(&first, &next, &changed);
    }

    /// Every group body and root entry of `next` is `first`'s, the same
    /// allocation, except those of the `changed` group-version.
    fn assert_only_changed_made_again(
        first: &Snapshot,
        next: &Snapshot,
        changed: &(String, String),
    ) {
        for (group, body) in &next.discovery.groups {
            let reused = Arc::ptr_eq(body, &first.discovery.groups[group]);
            assert_eq!(reused, *group != changed.0, "{group}");
        }
        let key = format!("apis/{}/{}", changed.0, changed.1);
        for (k, segment) in &next.root_entries {
            let reused = segment.deflate.as_ptr() == first.root_entries[k].deflate.as_ptr();
            assert_eq!(reused, *k != key, "root entry {k}");
        }
    }

    /// Issue 16, as the proxy runs: the poller hands on every unchanged
    /// group and document as the same `Arc`, and a rebuild recognises
    /// them without comparing one resource; the bytes are a full build's.
    #[test]
    fn shared_groups_are_reused_without_being_compared() {
        let original = FLEET.contribution("crds", None);
        let (first, _) = build(1, &[Arc::new(original.clone())], Readiness::default());
        let changed = FLEET.group_version(5);
        let after = Arc::new(FLEET.contribution_after(&original, "crds", Some((5, 1))));
        let (next, _) = rebuild(2, std::slice::from_ref(&after), Readiness::default(), &first);
        assert_eq!(next.discovery.rendered_groups, 1);
        assert_eq!(next.discovery.compared_groups, 1, "only the changed group is compared");
        assert_only_changed_made_again(&first, &next, &changed);
        assert_eq!(next.paths.as_ptr(), first.paths.as_ptr(), "the same paths, not made again");
        let (whole, _) = build(2, &[after], Readiness::default());
        assert_eq!(served(&next), served(&whole));
    }

    #[test]
    fn same_content_gives_same_root_bytes() {
        let a = contribution("a", 1, 0, &[("api/v1", "{}")]);
        let (s1, _) = build(1, std::slice::from_ref(&a), Readiness::default());
        let (s2, _) = build(7, &[a], Readiness::default());
        assert_eq!(s1.openapi_root.plain().unwrap(), s2.openapi_root.plain().unwrap());
        assert_eq!(s1.openapi_root.etag, s2.openapi_root.etag);
    }

    const V2_A: &str = r##"{"swagger":"2.0","info":{"title":"a","version":"1"},"paths":{"/apis/a.io/v1/things":{"get":{"responses":{"200":{"description":"OK","schema":{"$ref":"#/definitions/io.a.v1.Thing"}}}}}},"definitions":{"io.a.v1.Thing":{"type":"object","x-kubernetes-group-version-kind":[{"group":"a.io","version":"v1","kind":"Thing"}]}}}"##;
    const V3_B: &str = r##"{"openapi":"3.0.0","info":{"title":"b","version":"1"},"paths":{"/apis/b.io/v1/widgets":{"get":{"responses":{"200":{"description":"OK","content":{"application/json":{"schema":{"$ref":"#/components/schemas/io.b.v1.Widget"}}}}}}}},"components":{"schemas":{"io.b.v1.Widget":{"type":"object","x-kubernetes-group-version-kind":[{"group":"b.io","version":"v1","kind":"Widget"}]}}}}"##;

    fn with_v2(c: &Arc<Contribution>, body: &str) -> Arc<Contribution> {
        let v2 = OpenApiV2 { json: Arc::new(Rendered::document(body.to_owned())) };
        Arc::new(Contribution { openapi_v2: Some(v2), ..(**c).clone() })
    }

    fn v2_json(s: &Snapshot) -> serde_json::Value {
        serde_json::from_slice(&s.openapi_v2.get().unwrap().json.plain().unwrap()).unwrap()
    }

    #[test]
    fn one_downstreams_openapi_v2_is_served_as_it_is() {
        let a = with_v2(&listing(&contribution("a", 1, 0, &[]), &["apis/a.io/v1"]), V2_A);
        let (s, _) = build(1, &[Arc::clone(&a)], Readiness::default());
        let served = &s.openapi_v2.get().unwrap().json;
        assert!(Arc::ptr_eq(served, &a.openapi_v2.as_ref().unwrap().json));
    }

    /// Issue 27: `/openapi/v2` holds every downstream's kinds, a v3-only
    /// one's converted down, not only the highest priority's.
    #[test]
    fn openapi_v2_merges_every_downstream_a_v3_only_one_converted_down() {
        let a = with_v2(&listing(&contribution("a", 2, 0, &[]), &["apis/a.io/v1"]), V2_A);
        let b = listing(&contribution("b", 1, 1, &[("apis/b.io/v1", V3_B)]), &["apis/b.io/v1"]);
        let (s, _) = build(1, &[a, b], Readiness::default());
        let doc = v2_json(&s);
        assert_eq!(doc["swagger"], "2.0");
        let paths: Vec<&String> = doc["paths"].as_object().unwrap().keys().collect();
        assert_eq!(paths, ["/apis/a.io/v1/things", "/apis/b.io/v1/widgets"]);
        let defs: Vec<&String> = doc["definitions"].as_object().unwrap().keys().collect();
        assert_eq!(defs, ["io.a.v1.Thing", "io.b.v1.Widget"]);
        assert_eq!(
            doc["paths"]["/apis/b.io/v1/widgets"]["get"]["responses"]["200"]["schema"]["$ref"],
            "#/definitions/io.b.v1.Widget"
        );
    }

    /// Past its bound the merge is refused, not made, and only the first
    /// refusal says it is the first (the one logged); within it, made.
    #[test]
    fn a_merge_past_its_bound_is_refused_and_not_made() {
        let a = with_v2(&listing(&contribution("a", 2, 0, &[]), &["apis/a.io/v1"]), V2_A);
        let b = listing(&contribution("b", 1, 1, &[("apis/b.io/v1", V3_B)]), &["apis/b.io/v1"]);
        let (s, _) = build(1, &[a, b], Readiness::default());
        let cost = s.openapi_v2.making_cost();
        // Too small to be gzipped: what the inputs hold is their size.
        let sizes = [V2_A.len(), V3_B.len()];
        // Small: each one's stand-ins may hold the 64 KiB every document may.
        let total: usize = sizes.iter().sum();
        let expected = total + total / 4 + sizes.len() * 64 * 1024 + 4 * V2_A.len().max(V3_B.len());
        assert_eq!(cost, expected as u64);
        let refused = s.openapi_v2.get_within(cost - 1).unwrap_err();
        assert_eq!((refused.needed, refused.limit, refused.first), (cost, cost - 1, true));
        assert!(!s.openapi_v2.get_within(cost - 1).unwrap_err().first);
        assert!(s.openapi_v2.protobuf_within(cost - 1).is_err());
        assert!(!s.openapi_v2.is_made());
        assert!(s.openapi_v2.get_within(cost).unwrap().is_some());
        assert_eq!(s.openapi_v2.making_cost(), 0, "made: nothing more to pay");
        assert!(s.openapi_v2.protobuf_within(0).unwrap().is_some());
    }

    /// Made when first asked for, not in the build: at 5,000 CRDs merging
    /// on every change would multiply the cost of a rebuild.
    #[test]
    fn the_merged_openapi_v2_is_made_when_first_asked_for() {
        let a = with_v2(&listing(&contribution("a", 2, 0, &[]), &["apis/a.io/v1"]), V2_A);
        let b = listing(&contribution("b", 1, 1, &[("apis/b.io/v1", V3_B)]), &["apis/b.io/v1"]);
        let (s, _) = build(1, &[a, b], Readiness::default());
        assert!(!s.openapi_v2.is_made());
        assert!(s.openapi_v2.get().is_some());
        assert!(s.openapi_v2.is_made());
        // One downstream's own document is there at once.
        let a = with_v2(&listing(&contribution("a", 1, 0, &[]), &["apis/a.io/v1"]), V2_A);
        let (s, _) = build(1, &[a], Readiness::default());
        assert!(s.openapi_v2.is_made());
    }

    #[test]
    fn the_merged_openapi_v2_is_carried_over_while_its_inputs_stay() {
        let a = with_v2(&listing(&contribution("a", 2, 0, &[]), &["apis/a.io/v1"]), V2_A);
        let b = listing(&contribution("b", 1, 1, &[("apis/b.io/v1", V3_B)]), &["apis/b.io/v1"]);
        let (s1, _) = build(1, &[Arc::clone(&a), Arc::clone(&b)], Readiness::default());
        let (s2, _) = rebuild(2, &[Arc::clone(&a), Arc::clone(&b)], Readiness::default(), &s1);
        let json = |s: &Snapshot| Arc::clone(&s.openapi_v2.get().unwrap().json);
        assert!(Arc::ptr_eq(&json(&s1), &json(&s2)));
        let changed =
            V3_B.replace("\"type\":\"object\"", "\"type\":\"object\",\"description\":\"new\"");
        let b2 =
            listing(&contribution("b", 1, 1, &[("apis/b.io/v1", &changed)]), &["apis/b.io/v1"]);
        let (s3, _) = rebuild(3, &[a, b2], Readiness::default(), &s2);
        assert!(!Arc::ptr_eq(&json(&s2), &json(&s3)));
        assert_eq!(v2_json(&s3)["definitions"]["io.b.v1.Widget"]["description"], "new");
    }
}
