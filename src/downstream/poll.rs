//! One poll loop per downstream server.
//!
//! Each round (docs/wire.md#a-4, #a-5):
//! 1. `GET /openapi/v3` (conditional). For each entry of the root whose
//!    `?hash=` changed, fetch the document and keep the downstream's bytes
//!    (not re-encoded). A 404 means the downstream only publishes v2.
//! 2. `GET /openapi/v2` (conditional). For a v2-only downstream it goes
//!    through [`crate::openapi::pipeline`] (converted, split by key); a
//!    document whose bytes did not change keeps its prepared body and ETag
//!    (cache keyed by the document's digest).
//!    The JSON is also kept as it is, for the merged `/openapi/v2` that
//!    clients still read (kubectl 1.27/1.28); its protobuf form is the
//!    proxy's own encoding, so a downstream's is not fetched.
//! 3. `GET /version`.
//!
//! Last good wins: whatever fails (refused, timeout, bad status, invalid or
//! oversized document), what was fetched before stays in the contribution,
//! a metric counts it, one log line says so when the downstream turns from
//! good to failing, and the next poll backs off.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use awc::http::header::HeaderValue;
use bytes::Bytes;
use futures_util::StreamExt as _;
use serde::Deserialize;
use tracing::{info, warn};

use super::discovery::DiscoveryFetcher;
use super::ledger::Ledger;
use super::{CONCURRENT_FETCHES, PollError, within};
use crate::body::rendered::Rendered;
use crate::config::DownstreamConfig;
use crate::discovery::stale_from_openapi;
use crate::metrics::{FetchResult, Metrics};
use crate::openapi::cache::ConversionCache;
use crate::openapi::pipeline::{self, Budget};
use crate::outbound::client::{DownstreamClient, FetchError, Fetched};
use crate::publish::Hub;
use crate::publish::snapshot::{Contribution, OpenApiV2};
use crate::wire::key::DocumentKey;
use crate::wire::media;

/// The longest wait between polls of a failing downstream.
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// How long a conversion may take before the poll gives up on it. The
/// memory budget already bounds the work (values, output bytes); this
/// bounds the time of whatever the budget does not foresee. Kubernetes'
/// whole-cluster document converts in about 30 ms.
const CONVERSION_DEADLINE: Duration = Duration::from_secs(60);

#[derive(Deserialize)]
struct RootIndex {
    paths: BTreeMap<String, RootEntry>,
}

#[derive(Deserialize)]
struct RootEntry {
    #[serde(rename = "serverRelativeURL")]
    server_relative_url: String,
}

/// Just enough of a document to know it is OpenAPI 3: everything else is
/// skipped without building a tree.
#[derive(Deserialize)]
struct OpenApiProbe {
    openapi: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Not known yet, or the last root request failed before telling.
    Unknown,
    /// Publishes `/openapi/v3`.
    V3,
    /// `/openapi/v3` answered 404.
    V2Only,
}

/// One entry of a root, in the root's order, and what becomes of it.
enum Entry {
    /// Refused without a request.
    Refused(PollError),
    /// Its hash did not change: the document we have.
    Kept(DocumentKey, String, Arc<Rendered>),
    /// New or changed: to fetch, from this URL.
    Fetch(DocumentKey, String, String),
    /// Fetched: how the request counts, and the document prepared (or why
    /// not).
    Fetched(DocumentKey, String, FetchResult, Result<Arc<Rendered>, PollError>),
}

/// A fetched body with the validator to revalidate it.
#[derive(Debug, Clone)]
struct Cached {
    etag: Option<HeaderValue>,
    rendered: Arc<Rendered>,
}

/// One downstream's poll loop and its last good documents.
pub struct Poller {
    name: String,
    priority: i64,
    order: usize,
    interval: Duration,
    client: DownstreamClient,
    hub: Arc<Hub>,
    metrics: Arc<Metrics>,
    cache: Arc<ConversionCache<Rendered>>,
    mode: Mode,
    root_etag: Option<HeaderValue>,
    /// Key → (the hash in the downstream's root, the document).
    v3: BTreeMap<DocumentKey, (String, Arc<Rendered>)>,
    v2: Option<Cached>,
    converted: BTreeMap<DocumentKey, Arc<Rendered>>,
    version: Option<Cached>,
    discovery: DiscoveryFetcher,
    failures: u32,
    /// What this downstream may hold this round, documents and discovery
    /// together, and what converting them may take: taken from the
    /// ledger as the round starts.
    share: usize,
    /// What every downstream holds, against the memory budget.
    ledger: Arc<Ledger>,
    /// What was last handed to the hub.
    published: Option<Arc<Contribution>>,
    /// A conversion that passed its deadline and still runs on the
    /// blocking pool: no other starts for this downstream until it ends,
    /// so a hostile document cannot occupy more than one thread.
    overdue: Option<tokio::task::JoinHandle<()>>,
}

impl Poller {
    /// A poller for `config`, the `order`-th configured downstream.
    #[must_use]
    pub fn new(
        config: &DownstreamConfig,
        order: usize,
        client: DownstreamClient,
        hub: Arc<Hub>,
        metrics: Arc<Metrics>,
        cache: Arc<ConversionCache<Rendered>>,
        ledger: Arc<Ledger>,
    ) -> Self {
        Self {
            name: config.name.clone(),
            priority: config.priority,
            order,
            interval: config.poll_interval,
            client,
            hub,
            metrics,
            cache,
            mode: Mode::Unknown,
            root_etag: None,
            v3: BTreeMap::new(),
            v2: None,
            converted: BTreeMap::new(),
            version: None,
            discovery: DiscoveryFetcher::default(),
            failures: 0,
            share: ledger.allowance(&config.name),
            ledger,
            published: None,
            overdue: None,
        }
    }

    /// Polls forever.
    pub async fn run(mut self) {
        loop {
            self.round().await;
            tokio::time::sleep(self.delay()).await;
        }
    }

    /// The wait before the next round: the interval, doubled per
    /// consecutive failure up to 16 times it, and never more than five
    /// minutes unless the interval itself is longer.
    fn delay(&self) -> Duration {
        if self.failures == 0 {
            return self.interval;
        }
        let factor = 1u32 << self.failures.saturating_sub(1).min(4);
        self.interval.saturating_mul(factor).min(MAX_BACKOFF.max(self.interval))
    }

    /// One round: fetch what changed, publish the contribution.
    #[tracing::instrument(skip(self), fields(downstream = %self.name))]
    pub async fn round(&mut self) {
        self.share = self.ledger.allowance(&self.name);
        let mut errors = self.fetch_all().await;
        if !errors.iter().any(|e| e.budget_refusal().is_some()) {
            errors.extend(self.settle().err());
        }
        // All or nothing: a round with any part refused by the budget
        // publishes none of it, so no client sees documents without their
        // discovery or the reverse.
        let refusal = errors.iter().find_map(PollError::budget_refusal);
        let ok = errors.is_empty();
        self.hub.poll_outcome(&self.name, ok, refusal.clone());
        // The outcome first, then the reasons: whoever reads /metrics in
        // between never sees more errors than failed polls.
        self.metrics.poll_outcome(&self.name, ok);
        // A failed round counts once per reason, however many of its
        // requests failed for it: a dead downstream fails every request of
        // the round with `connect`, and that is one failed poll.
        let mut reasons: Vec<&'static str> = errors.iter().map(|e| e.reason()).collect();
        reasons.sort_unstable();
        reasons.dedup();
        for reason in reasons {
            self.metrics.error(&self.name, reason);
        }
        if let Some(first) = errors.first() {
            if self.failures == 0 {
                // "Keeping last good documents" only when there are some:
                // a downstream that never delivered has none to keep.
                let message = if self.published.as_deref().is_some_and(Contribution::holds_data) {
                    "poll failed; keeping last good documents"
                } else {
                    "poll failed; no documents from this downstream yet"
                };
                warn!(
                    downstream = %self.name,
                    url = %self.client.base(),
                    error = %crate::error_chain(first),
                    reason = first.reason(),
                    // How many parts of the round failed, each once however
                    // many of its requests did: the OpenAPI v3 documents,
                    // /openapi/v2, /version, discovery, and the share;
                    // `error` and `reason` are the first's.
                    failed_parts = errors.len(),
                    "{message}"
                );
            }
            self.failures = self.failures.saturating_add(1);
        } else if self.failures > 0 {
            info!(downstream = %self.name, failed_polls = self.failures, "poll succeeded again");
            self.failures = 0;
        }
        self.metrics.downstream_memory(&self.name, self.ledger.held(&self.name));
        if refusal.is_some() {
            // What was published stays whole (and a downstream that never
            // fitted counts as tried, with nothing).
            if self.published.is_none() {
                let empty = Arc::new(Contribution {
                    name: self.name.clone(),
                    priority: self.priority,
                    order: self.order,
                    ..Contribution::default()
                });
                self.published = Some(Arc::clone(&empty));
                self.hub.contribute(empty);
            }
            return;
        }
        let contribution = self.contribution();
        self.metrics.downstream_documents(&self.name, contribution.openapi.len());
        // The first round always counts (its data makes the proxy ready);
        // later ones only when something changed.
        if self.published.as_deref().is_some_and(|p| p.same_as(&contribution)) {
            return;
        }
        let contribution = Arc::new(contribution);
        self.published = Some(Arc::clone(&contribution));
        self.hub.contribute(contribution);
    }

    /// What the OpenAPI v3 documents hold (fetched or converted).
    fn openapi_weight(&self) -> usize {
        let v3: usize = self.v3.values().map(|(_, r)| r.weight()).sum();
        v3 + self.converted.values().map(|r| r.weight()).sum::<usize>()
    }

    /// What everything but discovery holds.
    fn weight_besides_discovery(&self) -> usize {
        let cached = |c: &Option<Cached>| c.as_ref().map_or(0, |c| c.rendered.weight());
        self.openapi_weight() + cached(&self.v2) + cached(&self.version)
    }

    /// What everything but the OpenAPI v3 documents holds.
    fn other_weight(&self) -> usize {
        let cached = |c: &Option<Cached>| c.as_ref().map_or(0, |c| c.rendered.weight());
        cached(&self.v2) + cached(&self.version) + self.discovery.weight()
    }

    /// Records what this round holds in the ledger, or refuses it. Each
    /// part was checked before it was made, against what the others held
    /// then; this catches what grew since (discovery after the documents
    /// were converted) and what other downstreams took meanwhile.
    fn settle(&self) -> Result<(), PollError> {
        let held = self.openapi_weight() + self.other_weight();
        self.ledger.settle(&self.name, held).map_err(|refused| PollError::Budget {
            what: "this downstream's documents and discovery",
            needed: refused.needed,
            allowed: refused.allowed,
        })
    }

    fn contribution(&self) -> Contribution {
        let openapi = match self.mode {
            Mode::V2Only => self.converted.clone(),
            // Unknown after a failure: keep whatever was good last.
            Mode::V3 | Mode::Unknown if !self.v3.is_empty() => {
                self.v3.iter().map(|(k, (_, r))| (k.clone(), Arc::clone(r))).collect()
            }
            Mode::V3 | Mode::Unknown => self.converted.clone(),
        };
        Contribution {
            name: self.name.clone(),
            priority: self.priority,
            order: self.order,
            openapi_v2: self.v2.as_ref().map(|json| OpenApiV2 { json: Arc::clone(&json.rendered) }),
            version: self.version.as_ref().map(|v| Arc::clone(&v.rendered)),
            discovery: Some(Arc::new(
                self.discovery.current().unwrap_or_else(|| stale_from_openapi(openapi.keys())),
            )),
            openapi,
        }
    }

    async fn fetch_all(&mut self) -> Vec<PollError> {
        let mut errors = Vec::new();
        if let Err(e) = self.fetch_v3().await {
            errors.push(e);
        }
        if let Err(e) = self.fetch_v2().await {
            errors.push(e);
        }
        if let Err(e) = self.fetch_version().await {
            errors.push(e);
        }
        // Discovery comes last: what the documents hold is known by then.
        let allowed = self.share.saturating_sub(self.weight_besides_discovery());
        if let Err(e) = self.discovery.fetch(&self.client, &self.metrics, &self.name, allowed).await
        {
            errors.push(e);
        }
        errors
    }

    fn count(&self, document: &'static str, result: &Result<Fetched, FetchError>) {
        self.metrics.fetch(&self.name, document, Fetched::result(result));
    }

    async fn fetch_v3(&mut self) -> Result<(), PollError> {
        let etag = self.root_etag.clone();
        let result = self.client.get("/openapi/v3", media::APPLICATION_JSON, etag.as_ref()).await;
        self.count("openapi_v3_root", &result);
        match result? {
            Fetched::NotModified => Ok(()),
            Fetched::NotFound => {
                if self.mode != Mode::V2Only {
                    info!(downstream = %self.name, "no /openapi/v3; converting /openapi/v2");
                }
                self.mode = Mode::V2Only;
                self.root_etag = None;
                Ok(())
            }
            Fetched::NotAcceptable => Err(PollError::NotAcceptable { path: "/openapi/v3".into() }),
            Fetched::Body { body, etag, .. } => {
                let root: RootIndex = serde_json::from_slice(&body).map_err(PollError::BadRoot)?;
                self.mode = Mode::V3;
                let complete = self.fetch_documents(root).await?;
                // Only remember the root's validator once every document it
                // lists was fetched, so a partial round is retried in full.
                self.root_etag = if complete { etag } else { None };
                Ok(())
            }
        }
    }

    /// Fetches the documents of a new root whose hash changed. Returns
    /// whether all of them were fetched; a document that fails keeps its
    /// previous version, if any.
    ///
    /// Up to [`CONCURRENT_FETCHES`] requests are in flight, each document
    /// prepared on the blocking pool as it arrives, while the answers are
    /// taken in the root's order: what is kept, the first error and where
    /// the share stops are those of fetching one after another.
    async fn fetch_documents(&mut self, root: RootIndex) -> Result<bool, PollError> {
        let mut next = BTreeMap::new();
        let mut first_error = None;
        // What the documents may hold together; checked as each arrives,
        // so a root listing a thousand large documents stops at the share
        // (with at most `CONCURRENT_FETCHES` more bodies read meanwhile).
        let allowed = self.share.saturating_sub(self.other_weight());
        let mut held = 0usize;
        let entries: Vec<Entry> = root
            .paths
            .into_iter()
            .map(|(key_text, entry)| self.entry(key_text, entry.server_relative_url))
            .collect();
        let client = &self.client;
        let mut entries = futures_util::stream::iter(entries)
            .map(|entry| fetch_document(client, entry))
            .buffered(CONCURRENT_FETCHES);
        while let Some(entry) = entries.next().await {
            let (key, hash, document) = match entry {
                Entry::Refused(e) => {
                    first_error.get_or_insert(e);
                    continue;
                }
                Entry::Kept(key, hash, rendered) => (key, hash, Ok(rendered)),
                Entry::Fetched(key, hash, result, document) => {
                    self.metrics.fetch(&self.name, "openapi_v3_document", result);
                    (key, hash, document)
                }
                // `fetch_document` fetched it.
                Entry::Fetch(..) => continue,
            };
            match document {
                Ok(rendered) => {
                    // Refused whole: the documents fetched before stay.
                    held += rendered.weight();
                    within("the /openapi/v3 documents", held, allowed)?;
                    next.insert(key, (hash, rendered));
                }
                Err(e) => {
                    if let Some(old) = self.v3.get(&key) {
                        next.insert(key, old.clone());
                    }
                    first_error.get_or_insert(e);
                }
            }
        }
        drop(entries);
        self.v3 = next;
        match first_error {
            Some(e) => Err(e),
            None => Ok(true),
        }
    }

    /// What to do with one root entry: refuse it, keep the document we
    /// have (same non-empty hash), or fetch it.
    fn entry(&self, key_text: String, url: String) -> Entry {
        let key = DocumentKey::parse(&key_text);
        let Some((key, hash)) = key.zip(document_hash(&key_text, &url)) else {
            return Entry::Refused(PollError::BadEntry { key: key_text, url });
        };
        match self.v3.get(&key) {
            Some((old_hash, rendered)) if !hash.is_empty() && *old_hash == hash => {
                Entry::Kept(key, hash, Arc::clone(rendered))
            }
            _ => Entry::Fetch(key, hash, url),
        }
    }

    async fn fetch_v2(&mut self) -> Result<(), PollError> {
        let etag = self.v2.as_ref().and_then(|c| c.etag.clone());
        let result = self.client.get("/openapi/v2", media::APPLICATION_JSON, etag.as_ref()).await;
        self.count("openapi_v2", &result);
        match result? {
            Fetched::NotModified => {
                // A downstream that stopped publishing v3 after we had its
                // v2 cached: convert what we have.
                if self.mode == Mode::V2Only
                    && self.converted.is_empty()
                    && let Some(cached) = &self.v2
                {
                    let body = cached.rendered.plain().map_err(PollError::Kept)?;
                    self.converted = self.convert(body).await?;
                }
            }
            Fetched::NotFound => {
                self.v2 = None;
                if self.mode == Mode::V2Only {
                    return Err(PollError::NothingPublished);
                }
            }
            Fetched::NotAcceptable => {
                return Err(PollError::NotAcceptable { path: "/openapi/v2".into() });
            }
            Fetched::Body { body, etag, .. } => {
                // The body (and its gzip rendition) is kept besides what it
                // converts to; both within the share.
                let version = self.version.as_ref().map_or(0, |c| c.rendered.weight());
                let allowed = self.share.saturating_sub(version + self.discovery.weight());
                within("/openapi/v2", body.len() + body.len() / 4, allowed)?;
                if self.mode == Mode::V2Only {
                    let converted = self.convert(body.clone()).await?;
                    let weight: usize = converted.values().map(|r| r.weight()).sum();
                    within("the converted documents", body.len() + weight, allowed)?;
                    self.converted = converted;
                } else {
                    // Served as it is; only checked to be JSON.
                    serde_json::from_slice::<serde::de::IgnoredAny>(&body).map_err(|source| {
                        PollError::BadDocument { path: "/openapi/v2".into(), source }
                    })?;
                }
                self.v2 = Some(Cached { etag, rendered: Arc::new(Rendered::document(body)) });
            }
        }
        Ok(())
    }

    /// Parses, converts and splits a Swagger 2.0 document on the blocking
    /// pool (a whole cluster's document takes tens of milliseconds; the
    /// poll loops and the builder share this thread).
    async fn convert(
        &mut self,
        body: Bytes,
    ) -> Result<BTreeMap<DocumentKey, Arc<Rendered>>, PollError> {
        let cache = Arc::clone(&self.cache);
        let started = Instant::now();
        // The documents' share, less the body kept beside them; gzip
        // renditions take at most a quarter more (JSON compresses 5–10×).
        let others =
            self.version.as_ref().map_or(0, |c| c.rendered.weight()) + self.discovery.weight();
        let left = self.share.saturating_sub(others + body.len() + body.len() / 4);
        let budget = Budget { parse_bytes: self.share, output_bytes: left / 5 * 4 };
        if self.overdue.as_ref().is_some_and(|h| !h.is_finished()) {
            return Err(PollError::Interrupted(
                "the previous conversion passed its deadline and is still running".into(),
            ));
        }
        self.overdue = None;
        let (done, result) = tokio::sync::oneshot::channel();
        let task = tokio::task::spawn_blocking(move || {
            let converted =
                pipeline::swagger_to_openapi(&body, Some(&cache), budget, Rendered::document)
                    .map(|converted| converted.documents)
                    .map_err(PollError::Convert);
            // The poll may have stopped waiting.
            let _ = done.send(converted);
        });
        let result = match tokio::time::timeout(CONVERSION_DEADLINE, result).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(PollError::Interrupted("the conversion task ended".into())),
            Err(_) => {
                self.overdue = Some(task);
                Err(PollError::Interrupted(format!(
                    "the conversion took more than {}s",
                    CONVERSION_DEADLINE.as_secs()
                )))
            }
        };
        self.metrics.conversion(&self.name, started.elapsed());
        self.cache.prune();
        self.metrics.conversion_cache(self.cache.len());
        result
    }

    async fn fetch_version(&mut self) -> Result<(), PollError> {
        let etag = self.version.as_ref().and_then(|c| c.etag.clone());
        let result = self.client.get("/version", media::APPLICATION_JSON, etag.as_ref()).await;
        self.count("version", &result);
        match result? {
            Fetched::Body { body, etag, .. } => {
                serde_json::from_slice::<serde::de::IgnoredAny>(&body)
                    .map_err(|source| PollError::BadDocument { path: "/version".into(), source })?;
                self.version = Some(Cached { etag, rendered: Arc::new(Rendered::json(body)) });
            }
            Fetched::NotModified => {}
            // Not every API server has /version; that is no failure.
            Fetched::NotFound | Fetched::NotAcceptable => self.version = None,
        }
        Ok(())
    }
}

/// The hash a root entry's `serverRelativeURL` carries, after checking that
/// the URL is a path under `/openapi/v3/` for this very key: an entry must
/// never make us fetch anything else (another host, another path).
/// `""` when the URL has no `hash`.
fn document_hash(key: &str, url: &str) -> Option<String> {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    if path != format!("/openapi/v3/{key}") || url.contains("..") || url.contains('#') {
        return None;
    }
    let hash = query.split('&').find_map(|p| p.strip_prefix("hash=")).unwrap_or("");
    hash.bytes().all(|b| b.is_ascii_alphanumeric()).then(|| hash.to_owned())
}

/// Fetches an [`Entry::Fetch`] and prepares the document on the blocking
/// pool; other entries are returned as they are.
async fn fetch_document(client: &DownstreamClient, entry: Entry) -> Entry {
    let Entry::Fetch(key, hash, url) = entry else { return entry };
    let result = client.get_among(&url, media::APPLICATION_JSON, None, CONCURRENT_FETCHES).await;
    let counted = Fetched::result(&result);
    let document = match result {
        Ok(Fetched::Body { body, .. }) => prepare_v3(url, body).await,
        Ok(_) => Err(PollError::Fetch(FetchError::Status {
            url: format!("{}{url}", client.base()),
            status: awc::http::StatusCode::NOT_FOUND,
        })),
        Err(e) => Err(e.into()),
    };
    Entry::Fetched(key, hash, counted, document)
}

/// [`validate_v3`] on the blocking pool: the probe parse, the hash and
/// gzip of a document of hundreds of KB take milliseconds of CPU, and on
/// the poll's thread they would hold up the requests in flight (and the
/// other downstreams' polls), leaving the other cores idle.
async fn prepare_v3(url: String, body: Bytes) -> Result<Arc<Rendered>, PollError> {
    let path = url.clone();
    tokio::task::spawn_blocking(move || validate_v3(&url, body))
        .await
        .map_err(|_| PollError::Unprepared { path })?
}

fn validate_v3(path: &str, body: Bytes) -> Result<Arc<Rendered>, PollError> {
    let probe: OpenApiProbe = serde_json::from_slice(&body)
        .map_err(|source| PollError::BadDocument { path: path.to_owned(), source })?;
    if !probe.openapi.starts_with("3.") {
        let source = serde::de::Error::custom(format!("openapi is {:?}", probe.openapi));
        return Err(PollError::BadDocument { path: path.to_owned(), source });
    }
    Ok(Arc::new(Rendered::document(body)))
}

#[cfg(test)]
mod tests;
