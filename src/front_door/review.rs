//! Delegated authentication of metadata requests
//! (`metadataAuthentication: delegated`): a client's bearer token may read
//! discovery and OpenAPI when a downstream authenticates it.
//!
//! - **How**: an `authentication.k8s.io/v1` `SelfSubjectReview` created
//!   with the client's token (`v1beta1` when `v1` is a 404: Kubernetes
//!   1.27), at the downstream serving the core group `/api/v1` (else the
//!   first configured). kube-apiserver authenticates before anything else,
//!   so a 401 means the token is not good, and any answer it gives only
//!   after authentication (201, 403) means it is. This needs no
//!   permission of the proxy's own, and the proxy's credentials never go
//!   with it: the request goes out through a client built like the front
//!   door's, from the downstream's URL and CA only.
//! - **Remembered** ([`ReviewCache`]): by the token's SHA-256, never the
//!   token, for `metadataAuthenticationCacheTtl`, good and bad answers
//!   alike; at most `metadataAuthenticationCacheEntries` of them, the
//!   oldest forgotten first. A downstream that could not answer is not
//!   remembered: the request gets a 503 and the next one asks again.
//! - **Shared**: requests with the same token at once wait for one review.
//!
//! The token is never logged, nor put in an error.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use sha2::{Digest as _, Sha256};
use tokio::sync::OnceCell;

use super::{FrontDoorError, Target};
use crate::config::{Config, MetadataAuthentication};
use crate::http::access::{Access, Authenticator, Verdict, bearer_token};
use crate::metrics::Metrics;

/// A token's SHA-256: what the cache keys by.
type TokenHash = [u8; 32];

/// A review's outcome: authenticated or not; `Err` when there is no
/// answer (never remembered).
type Outcome = Result<bool, NoAnswer>;

/// Why a token got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NoAnswer {
    /// The downstream could not say: 503.
    Failed,
    /// [`MAX_REVIEWS_IN_FLIGHT`] reviews were being made: 429.
    Busy,
}

/// Reviews being made at once, all workers together. Each holds a
/// connection to the downstream (a file descriptor), so a flood of
/// made-up tokens over HTTP/2 (250 streams a connection) must not open one
/// each. kube-apiserver's own bound on mutating requests
/// (`--max-mutating-requests-inflight`, a `SelfSubjectReview` being a
/// create) is 200. Waiting for a review another request makes takes none;
/// a remembered answer needs none.
pub(crate) const MAX_REVIEWS_IN_FLIGHT: usize = 200;

/// The most of a review's answer read (and dropped), so that its
/// connection can be reused; a `SelfSubjectReview` is well under 4 KiB.
const ANSWER_LIMIT: usize = 64 * 1024;

/// Why a review gave no answer.
#[derive(Debug, thiserror::Error)]
enum ReviewError {
    /// The request failed: connect, TLS, timeout, a broken exchange.
    #[error("sending a SelfSubjectReview")]
    Send(#[source] awc::error::SendRequestError),
    /// An answer that says neither yes nor no.
    #[error("a SelfSubjectReview answered {status}")]
    Status {
        /// The status.
        status: StatusCode,
    },
}

/// Decides on bearer tokens for the metadata routes, for every worker.
#[derive(Debug)]
pub struct Reviewer {
    /// This reviewer among others in one process (tests run several
    /// proxies): the key of its clients in each worker's [`CLIENTS`].
    id: u64,
    targets: BTreeMap<Arc<str>, Arc<Target>>,
    /// The first configured downstream, asked when no downstream serves
    /// `/api/v1`.
    first: Arc<str>,
    cache: ReviewCache,
    /// Reviews being made, by token hash, so that requests with the same
    /// token at once share one.
    pending: Mutex<BTreeMap<TokenHash, Arc<OnceCell<Outcome>>>>,
    /// Places for reviews in flight ([`MAX_REVIEWS_IN_FLIGHT`]).
    reviewing: tokio::sync::Semaphore,
    metrics: Arc<Metrics>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Each worker's HTTP clients for reviews (awc's client lives on one
    /// thread), by reviewer and downstream: made on first use, kept for
    /// their pooled connections.
    static CLIENTS: RefCell<BTreeMap<(u64, Arc<str>), awc::Client>> =
        const { RefCell::new(BTreeMap::new()) };
}

impl Reviewer {
    /// The reviewer of `config`, or `None` with `metadataAuthentication:
    /// none` (or no downstream to ask).
    ///
    /// # Errors
    /// [`FrontDoorError`] when a downstream's URL or TLS material cannot be
    /// used.
    pub fn of(
        config: &Config,
        metrics: &Arc<Metrics>,
    ) -> Result<Option<Arc<Self>>, FrontDoorError> {
        if config.metadata_authentication != MetadataAuthentication::Delegated {
            return Ok(None);
        }
        let Some(first) = config.downstreams.first() else { return Ok(None) };
        let targets = super::targets(config)?;
        for target in targets.values().filter(|t| t.in_clear_text()) {
            tracing::warn!(downstream = %target.name, url = %target.base,
                "metadata authentication: clients' bearer tokens may be reviewed at this \
                 downstream over plain HTTP, in clear text; use an https:// URL");
        }
        let limits = &config.serving.limits;
        Ok(Some(Arc::new(Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            targets,
            first: Arc::from(first.name.as_str()),
            cache: ReviewCache::new(
                limits.metadata_authentication_cache_ttl,
                limits.metadata_authentication_cache_entries,
            ),
            pending: Mutex::default(),
            reviewing: tokio::sync::Semaphore::new(MAX_REVIEWS_IN_FLIGHT),
            metrics: Arc::clone(metrics),
        })))
    }

    /// The answer on `token`: remembered, shared with a review in flight,
    /// or asked for now.
    async fn verdict(&self, token: &[u8], core: Option<Arc<str>>) -> Access {
        let key: TokenHash = Sha256::digest(token).into();
        if let Some(accepted) = self.cache.get(&key, Instant::now()) {
            return self.counted(Ok(accepted), "hit");
        }
        let waiting = Waiting::new(self, key);
        let mut asked = false;
        let outcome = *waiting
            .cell
            .get_or_init(|| {
                asked = true;
                self.ask(token, core)
            })
            .await;
        if asked {
            if let Ok(accepted) = outcome {
                self.cache.insert(key, accepted, Instant::now());
            }
            // Remembered (or not to be): later requests do not wait on it.
            let mut pending = lock(&self.pending);
            if pending.get(&key).is_some_and(|c| Arc::ptr_eq(c, &waiting.cell)) {
                pending.remove(&key);
            }
        }
        self.counted(outcome, if asked { "miss" } else { "hit" })
    }

    /// Counts `outcome` in `openapi_proxy_metadata_authentications_total`
    /// and says what it means for the request.
    fn counted(&self, outcome: Outcome, cache: &'static str) -> Access {
        let (result, access) = match outcome {
            Ok(true) => ("accepted", Access::Accepted),
            Ok(false) => ("refused", Access::Refused),
            Err(NoAnswer::Failed) => ("error", Access::Unavailable),
            Err(NoAnswer::Busy) => ("busy", Access::Busy),
        };
        self.metrics.metadata_authentication(result, cache);
        access
    }

    /// One review at the downstream serving `/api/v1` (`core`), else the
    /// first configured one.
    async fn ask(&self, token: &[u8], core: Option<Arc<str>>) -> Outcome {
        let name = core
            .filter(|c| self.targets.contains_key(c))
            .unwrap_or_else(|| Arc::clone(&self.first));
        let Some(target) = self.targets.get(&name) else { return Err(NoAnswer::Failed) };
        let Ok(_place) = self.reviewing.try_acquire() else {
            tracing::debug!(downstream = %target.name, "metadata authentication: too many reviews in flight; answered 429");
            return Err(NoAnswer::Busy);
        };
        match self.review(target, token).await {
            Ok(accepted) => {
                tracing::debug!(downstream = %target.name, accepted, "metadata authentication: token reviewed");
                Ok(accepted)
            }
            Err(e) => {
                tracing::debug!(downstream = %target.name, error = %crate::error_chain(&e),
                    "metadata authentication: review failed; answered 503");
                Err(NoAnswer::Failed)
            }
        }
    }

    /// Creates a `SelfSubjectReview` at `target` with `token`: `v1`, then
    /// `v1beta1` if `v1` is not served (Kubernetes 1.27).
    async fn review(&self, target: &Target, token: &[u8]) -> Result<bool, ReviewError> {
        let Ok(authorization) = HeaderValue::from_bytes(&[b"Bearer ", token].concat()) else {
            // Not a header value: it cannot have come in one.
            return Ok(false);
        };
        let client = self.client(target);
        for version in ["v1", "v1beta1"] {
            let url =
                format!("{}/apis/authentication.k8s.io/{version}/selfsubjectreviews", target.base);
            let body = format!(
                r#"{{"apiVersion":"authentication.k8s.io/{version}","kind":"SelfSubjectReview"}}"#
            );
            let mut answer = client
                .post(url)
                .timeout(target.connect_timeout)
                .insert_header((header::AUTHORIZATION, authorization.clone()))
                .insert_header((header::CONTENT_TYPE, "application/json"))
                .insert_header((header::ACCEPT, "application/json"))
                .send_body(body)
                .await
                .map_err(ReviewError::Send)?;
            let status = answer.status();
            let _ = answer.body().limit(ANSWER_LIMIT).await;
            match status {
                StatusCode::OK | StatusCode::CREATED | StatusCode::FORBIDDEN => return Ok(true),
                StatusCode::UNAUTHORIZED => return Ok(false),
                StatusCode::NOT_FOUND if version == "v1" => {}
                status => return Err(ReviewError::Status { status }),
            }
        }
        Err(ReviewError::Status { status: StatusCode::NOT_FOUND })
    }

    /// This worker's client for `target`.
    fn client(&self, target: &Target) -> awc::Client {
        CLIENTS.with(|clients| {
            clients
                .borrow_mut()
                .entry((self.id, Arc::clone(&target.name)))
                .or_insert_with(|| super::client(target))
                .clone()
        })
    }
}

impl Authenticator for Reviewer {
    fn known(&self, authorization: Option<&[u8]>) -> Option<Access> {
        let Some(token) = authorization.and_then(bearer_token) else {
            self.metrics.metadata_authentication("refused", "none");
            return Some(Access::Refused);
        };
        let key: TokenHash = Sha256::digest(token).into();
        let accepted = self.cache.get(&key, Instant::now())?;
        Some(self.counted(Ok(accepted), "hit"))
    }

    fn review<'a>(&'a self, authorization: &'a [u8], core: Option<Arc<str>>) -> Verdict<'a> {
        Box::pin(async move {
            match bearer_token(authorization) {
                Some(token) => self.verdict(token, core).await,
                None => Access::Refused,
            }
        })
    }
}

/// A request waiting on a token's review; the last to leave a review no
/// one finished (all clients gone) takes it out of the pending map, so
/// abandoned reviews do not pile up.
struct Waiting<'r> {
    reviewer: &'r Reviewer,
    key: TokenHash,
    cell: Arc<OnceCell<Outcome>>,
}

impl<'r> Waiting<'r> {
    fn new(reviewer: &'r Reviewer, key: TokenHash) -> Self {
        let cell = Arc::clone(lock(&reviewer.pending).entry(key).or_default());
        Self { reviewer, key, cell }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut pending = lock(&self.reviewer.pending);
        // The map's and this one: nobody else waits (clones are made under
        // this lock).
        if pending.get(&self.key).is_some_and(|c| Arc::ptr_eq(c, &self.cell))
            && Arc::strong_count(&self.cell) == 2
        {
            pending.remove(&self.key);
        }
    }
}

/// Locks, ignoring poison: the maps stay consistent at every step.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Answers on tokens, by SHA-256, each for `ttl`, at most `max` of them:
/// past it the oldest entry is forgotten, so made-up tokens cannot grow
/// it. An expired entry stays in its place until it is asked for again
/// (and replaced) or forgotten, so the order and the entries always match.
#[derive(Debug)]
pub(crate) struct ReviewCache {
    ttl: Duration,
    max: usize,
    inner: Mutex<CacheInner>,
}

#[derive(Debug, Default)]
struct CacheInner {
    /// Accepted or not, and when the answer came.
    entries: BTreeMap<TokenHash, (bool, Instant)>,
    /// The entries' keys, oldest first.
    order: VecDeque<TokenHash>,
}

impl ReviewCache {
    pub(crate) fn new(ttl: Duration, max: usize) -> Self {
        Self { ttl, max: max.max(1), inner: Mutex::default() }
    }

    /// The answer on `key`, when one came less than `ttl` before `now`.
    pub(crate) fn get(&self, key: &TokenHash, now: Instant) -> Option<bool> {
        let inner = lock(&self.inner);
        let (accepted, at) = *inner.entries.get(key)?;
        (now.saturating_duration_since(at) < self.ttl).then_some(accepted)
    }

    /// Remembers the answer on `key`, got at `now`.
    pub(crate) fn insert(&self, key: TokenHash, accepted: bool, now: Instant) {
        let mut inner = lock(&self.inner);
        if inner.entries.insert(key, (accepted, now)).is_some() {
            return;
        }
        inner.order.push_back(key);
        while inner.entries.len() > self.max {
            let Some(oldest) = inner.order.pop_front() else { break };
            inner.entries.remove(&oldest);
        }
    }

    /// How many answers are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        let inner = lock(&self.inner);
        debug_assert_eq!(inner.entries.len(), inner.order.len());
        inner.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u32) -> TokenHash {
        Sha256::digest(n.to_be_bytes()).into()
    }

    #[test]
    fn answers_are_kept_for_the_ttl_good_and_bad_alike() {
        let cache = ReviewCache::new(Duration::from_secs(10), 100);
        let t0 = Instant::now();
        cache.insert(key(1), true, t0);
        cache.insert(key(2), false, t0);
        assert_eq!(cache.get(&key(1), t0 + Duration::from_secs(9)), Some(true));
        assert_eq!(cache.get(&key(2), t0 + Duration::from_secs(9)), Some(false));
        assert_eq!(cache.get(&key(1), t0 + Duration::from_secs(10)), None);
        assert_eq!(cache.get(&key(3), t0), None);
        // A new answer replaces the expired one.
        cache.insert(key(1), false, t0 + Duration::from_secs(11));
        assert_eq!(cache.get(&key(1), t0 + Duration::from_secs(12)), Some(false));
        assert_eq!(cache.len(), 2);
    }

    /// A flood of made-up tokens keeps the cache at its bound, the oldest
    /// answers forgotten first.
    #[test]
    fn a_flood_of_tokens_stays_within_the_bound() {
        let cache = ReviewCache::new(Duration::from_secs(10), 1000);
        let t0 = Instant::now();
        cache.insert(key(0), true, t0);
        for n in 1..50_000 {
            cache.insert(key(n), false, t0);
            assert!(cache.len() <= 1000);
        }
        assert_eq!(cache.len(), 1000);
        assert_eq!(cache.get(&key(0), t0), None, "the oldest went first");
        assert_eq!(cache.get(&key(49_999), t0), Some(false));
        assert_eq!(cache.get(&key(49_000), t0), Some(false));
        assert_eq!(cache.get(&key(48_999), t0), None);
    }

    /// Answering a token again (its answer expired) keeps one entry for it.
    #[test]
    fn one_token_asked_again_and_again_keeps_one_entry() {
        let cache = ReviewCache::new(Duration::from_millis(1), 10);
        let t0 = Instant::now();
        for n in 0..100u64 {
            cache.insert(key(7), true, t0 + Duration::from_millis(n * 2));
        }
        assert_eq!(cache.len(), 1);
        assert_eq!(lock(&cache.inner).order.len(), 1);
    }
}
