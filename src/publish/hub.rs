//! The hub where poll loops leave what each downstream contributes, and the
//! single writer loop that turns contributions into published snapshots.
//!
//! Pollers never publish: they [`Hub::contribute`] and the one writer,
//! [`build_loop`], wakes, builds the whole next [`Snapshot`] aside and
//! stores it once — the design's central invariant lives here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tracing::{info, warn};

use crate::body::rendered::Rendered;
use crate::metrics::Metrics;
use crate::publish::readiness::{PollFailures, Readiness, Standing};
use crate::publish::snapshot::{
    Conflict, Contribution, Mismatch, Settled, Snapshot, Store, rebuild,
};

/// Where pollers leave their contributions and the builder picks them up.
///
/// Pollers never publish snapshots themselves: there is one writer, the
/// builder task, woken by [`Hub::contribute`].
#[derive(Debug)]
pub struct Hub {
    state: Mutex<HubState>,
    changed: Notify,
    /// Every configured downstream, in configuration order.
    names: Vec<String>,
    /// When the hub was made: the grace period counts from here.
    started: Instant,
    /// How long readiness waits for a downstream that has not delivered,
    /// once another has.
    grace: Duration,
    /// Which downstreams' polls fail now, for `/readyz?verbose`.
    failures: Arc<PollFailures>,
}

#[derive(Debug, Default)]
struct HubState {
    contributions: BTreeMap<String, Arc<Contribution>>,
    /// Downstreams that have contributed data at least once.
    delivered: BTreeSet<String>,
}

impl Hub {
    /// A hub for the downstreams `names` (configuration order), whose
    /// readiness waits up to `grace` for the ones that have not delivered.
    #[must_use]
    pub fn new(names: Vec<String>, grace: Duration) -> Self {
        Self {
            state: Mutex::default(),
            changed: Notify::new(),
            names,
            started: Instant::now(),
            grace,
            failures: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a downstream's contribution after a poll and wakes the
    /// builder. One that carries data marks its downstream as delivered.
    pub fn contribute(&self, contribution: Arc<Contribution>) {
        {
            let mut s = self.lock();
            if contribution.holds_data() {
                s.delivered.insert(contribution.name.clone());
            }
            s.contributions.insert(contribution.name.clone(), contribution);
        }
        self.changed.notify_one();
    }

    /// Records how a downstream's poll ended, for `/readyz?verbose`, with
    /// the budget's words when it refused the round. The answer reads it
    /// when asked; only a downstream becoming refused, or no longer,
    /// wakes the builder, since that changes readiness.
    pub fn poll_outcome(&self, name: &str, ok: bool, refusal: Option<String>) {
        if self.failures.record(name, ok, refusal, Instant::now()) {
            self.changed.notify_one();
        }
    }

    /// Waits until some contribution changed since the last call.
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    /// The contributions now, and readiness as of now.
    #[must_use]
    pub fn current(&self) -> (Vec<Arc<Contribution>>, Readiness) {
        let s = self.lock();
        let readiness = Readiness {
            failures: Arc::clone(&self.failures),
            ..Readiness::assess(
                &self.names,
                &s.delivered,
                &self.failures.refused(),
                self.started.elapsed(),
                self.grace,
            )
        };
        (s.contributions.values().cloned().collect(), readiness)
    }

    /// When the grace period ends, while it has not: then readiness may
    /// change without any contribution changing, and the builder must
    /// look again.
    fn grace_ends(&self) -> Option<Instant> {
        let end = self.started + self.grace;
        (Instant::now() < end).then_some(end)
    }
}

/// The one writer: waits for contributions to change (or the readiness
/// grace period to end), builds the next snapshot aside, publishes it
/// whole.
///
/// `v2_limit`: what making the merged `/openapi/v2` aside may hold at its
/// peak; past it, it is left to the next request, which is refused.
pub async fn build_loop(hub: Arc<Hub>, store: Arc<Store>, metrics: Arc<Metrics>, v2_limit: u64) {
    let mut generation = 0u64;
    let mut reported: BTreeSet<Conflict> = BTreeSet::new();
    let mut mismatched: BTreeSet<Mismatch> = BTreeSet::new();
    let mut was_ready = false;
    // The task making the merged `/openapi/v2` aside, while one runs.
    let mut v2_maker: Option<tokio::task::JoinHandle<()>> = None;
    loop {
        match hub.grace_ends() {
            Some(end) => {
                tokio::select! {
                    () = hub.changed() => {}
                    () = tokio::time::sleep_until(end.into()) => {}
                }
            }
            None => hub.changed().await,
        }
        let started = Instant::now();
        let (contributions, readiness) = hub.current();
        let ready = readiness.ready();
        if ready && !was_ready {
            announce(&readiness);
            was_ready = true;
        }
        // Off the thread the poll loops run on: a large build (thousands
        // of group-versions) must not hold up every downstream's poll.
        // From the snapshot served now, so that what did not change is
        // reused rather than made again (issue 16).
        let next = generation + 1;
        let previous = store.load();
        let taking = started.elapsed();
        let built = tokio::task::spawn_blocking(move || {
            let start = Instant::now();
            let (snap, settled) = rebuild(next, &contributions, readiness, &previous);
            // This loop is the only writer: `previous` is the snapshot
            // served, so whether the next one differs is decided here,
            // on the build's clock.
            let discovery_changed = previous.discovery.apis_v2.hash != snap.discovery.apis_v2.hash
                || previous.discovery.api_v2.hash != snap.discovery.api_v2.hash;
            let same = same_content(&previous, &snap);
            Built { snap, settled, discovery_changed, same, start, working: start.elapsed() }
        })
        .await;
        let Built { snap, settled, discovery_changed, same, start, working } = match built {
            Ok(built) => built,
            Err(e) => {
                warn!(error = %e, "the snapshot build did not finish; serving the last one");
                continue;
            }
        };
        // The rebuild's own time: taking the contributions, building,
        // deciding whether anything changed. Not the waits for a blocking
        // thread to start the build and for this task to be run again
        // after it: on a busy machine those were up to 17 ms and 8 ms of
        // scheduling, with no work done (issue 16); they stay visible in
        // the log line below (`waited_ms`).
        let rebuilding = taking + working;
        metrics.rebuild(rebuilding, discovery_changed);
        let Settled { conflicts, mismatches } = settled;
        report_mismatches(&mut mismatched, mismatches, &metrics);
        for c in conflicts {
            if !reported.contains(&c) {
                // Two servers each publishing their own `version`, `api` or
                // `apis/<group>` document is normal (every aggregated API
                // server does); two publishing one group-version is a
                // configuration problem an operator must see.
                if c.key.is_group_version() {
                    warn!(key = %c.key, winner = %c.winner, loser = %c.loser, "two downstreams publish this group-version; serving the higher priority one");
                } else {
                    // Debug only: at info it read like a misconfiguration
                    // on every clean start of the demo.
                    tracing::debug!(key = %c.key, winner = %c.winner, loser = %c.loser, "two downstreams publish this document; serving the higher priority one");
                }
                metrics.conflict();
                reported.insert(c);
            }
        }
        if same {
            continue;
        }
        generation += 1;
        let documents = snap.openapi.len();
        let rendered_groups = snap.discovery.rendered_groups;
        let compared_groups = snap.discovery.compared_groups;
        // Clients read `/openapi/v2` (they asked for the last snapshot's):
        // make the new one now, aside, rather than on their next request.
        let v2_wanted = store.load().openapi_v2.was_asked() && !snap.openapi_v2.is_made();
        if v2_wanted {
            snap.openapi_v2.mark_asked();
        }
        store.publish(snap);
        if v2_wanted && v2_maker.as_ref().is_none_or(tokio::task::JoinHandle::is_finished) {
            let store = Arc::clone(&store);
            // One at a time: at 5,000 CRDs one takes seconds and a GiB, and
            // changes may come faster. It makes the one served now, and
            // again while a change came in the meantime.
            v2_maker = Some(tokio::task::spawn_blocking(move || {
                loop {
                    let slot = Arc::clone(&store.load().openapi_v2);
                    if slot.is_made() || slot.get_within(v2_limit).is_err() {
                        break;
                    }
                }
            }));
        }
        metrics.snapshot(generation, documents);
        info!(
            generation,
            documents,
            rendered_groups,
            compared_groups,
            ready,
            elapsed_ms = millis(started.elapsed()),
            rebuild_ms = millis(rebuilding),
            // Until the blocking pool started the build (issue 16).
            waited_ms = millis(start.duration_since(started).saturating_sub(taking)),
            "snapshot published"
        );
    }
}

/// Logs and counts each mismatch of `now` that the last build did not
/// have, then remembers `now`: one warning per change, not one per
/// rebuild, and a mismatch that ends and comes back is reported again.
fn report_mismatches(last: &mut BTreeSet<Mismatch>, now: Vec<Mismatch>, metrics: &Metrics) {
    let now: BTreeSet<Mismatch> = now.into_iter().collect();
    for m in now.difference(last) {
        warn!(
            key = %m.key,
            owner = %m.owner,
            publisher = %m.publisher,
            owner_has_document = m.owner_has_document,
            "a downstream publishes the document of a group-version another downstream owns in discovery; serving the owner's document, or none"
        );
        metrics.owner_mismatch();
    }
    *last = now;
}

/// `d` in milliseconds for a log field, to the microsecond: `0.019`, not
/// the `0.019173000000000003` that multiplying seconds by 1000 gives.
fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// `d` in seconds for a log field, to the millisecond.
fn seconds(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e3).round() / 1e3
}

/// What the blocking build hands back to the loop.
struct Built {
    snap: Snapshot,
    settled: Settled,
    /// The aggregated discovery lists differ from the snapshot served.
    discovery_changed: bool,
    /// It serves the same bytes as the snapshot served: nothing to publish.
    same: bool,
    /// When the build started on its thread.
    start: Instant,
    /// Building and deciding whether anything changed.
    working: Duration,
}

/// Says once that the proxy is ready, and which downstreams it stopped
/// waiting for: their documents are missing until they deliver.
fn announce(readiness: &Readiness) {
    let excused: Vec<&str> = readiness
        .downstreams
        .iter()
        .filter(|(_, s)| *s == Standing::Excused)
        .map(|(n, _)| n.as_str())
        .collect();
    let delivered = readiness.downstreams.len() - excused.len();
    if excused.is_empty() {
        info!(downstreams = delivered, "ready: every downstream has delivered its documents");
    } else {
        warn!(
            delivered,
            without_documents = %excused.join(","),
            grace_period_s = seconds(readiness.grace),
            "ready without some downstreams: they delivered nothing within the grace period; their documents appear when they do"
        );
    }
}

/// Whether two snapshots serve the same bytes everywhere (then there is
/// nothing to publish).
fn same_content(a: &Snapshot, b: &Snapshot) -> bool {
    let hash = |r: Option<&Rendered>| r.map(|r| r.hash.clone());
    let d = |s: &Snapshot| {
        (
            s.discovery.api_v2.hash.clone(),
            s.discovery.apis_v2.hash.clone(),
            s.discovery.api_legacy.hash.clone(),
        )
    };
    // Legacy per-group-version lists are not part of the aggregated list:
    // compare their hashes too, in place: at 5,000 CRDs that is a
    // thousand lists, nearly all the very same `Arc`, and copying every
    // hash of both snapshots to compare them was two thousand string
    // copies on each rebuild (issue 16).
    let (la, lb) = (&a.discovery.resources, &b.discovery.resources);
    a.readiness == b.readiness
        && d(a) == d(b)
        && la.len() == lb.len()
        && la
            .iter()
            .zip(lb)
            .all(|((ka, x), (kb, y))| ka == kb && (Arc::ptr_eq(x, y) || x.hash == y.hash))
        && a.openapi_root.hash == b.openapi_root.hash
        && (Arc::ptr_eq(&a.openapi_v2, &b.openapi_v2) || a.openapi_v2.same_as(&b.openapi_v2))
        && hash(a.version.as_deref()) == hash(b.version.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::snapshot::tests::contribution;

    /// Durations in log fields are rounded: the builder's `waited_ms` read
    /// `0.019173000000000003`.
    #[test]
    fn durations_in_log_fields_are_rounded() {
        assert_eq!(millis(Duration::from_nanos(19_173)).to_string(), "0.019");
        assert_eq!(millis(Duration::from_micros(1_500_250)).to_string(), "1500.25");
        assert_eq!(seconds(Duration::from_secs(60)).to_string(), "60");
        assert_eq!(seconds(Duration::from_nanos(1_500_000_001)).to_string(), "1.5");
    }

    /// A mismatch is reported (and counted) when it appears, not on every
    /// rebuild that still finds it; one that ends and comes back is
    /// reported again.
    #[test]
    fn an_owner_mismatch_is_reported_once_per_change() {
        let metrics = Metrics::default();
        let m = Mismatch {
            key: crate::wire::DocumentKey::parse("apis/apps/v1").unwrap(),
            owner: "b".into(),
            publisher: "a".into(),
            owner_has_document: false,
        };
        let count = |metrics: &Metrics| {
            metrics
                .render()
                .lines()
                .find_map(|l| l.strip_prefix("openapi_proxy_owner_mismatches_total "))
                .map(str::to_owned)
        };
        let mut last = BTreeSet::new();
        report_mismatches(&mut last, vec![m.clone()], &metrics);
        report_mismatches(&mut last, vec![m.clone()], &metrics);
        assert_eq!(count(&metrics).as_deref(), Some("1"));
        report_mismatches(&mut last, vec![], &metrics);
        report_mismatches(&mut last, vec![m], &metrics);
        assert_eq!(count(&metrics).as_deref(), Some("2"));
    }

    #[test]
    fn hub_is_ready_when_every_downstream_has_delivered_data() {
        let hub = Hub::new(vec!["a".into(), "b".into()], Duration::from_secs(3600));
        hub.contribute(contribution("a", 1, 0, &[("api/v1", "{}")]));
        assert!(!hub.current().1.ready());
        // Tried, with nothing: not a delivery.
        hub.contribute(contribution("b", 1, 1, &[]));
        assert!(!hub.current().1.ready());
        hub.contribute(contribution("b", 1, 1, &[("apis/b/v1", "{}")]));
        assert!(hub.current().1.ready());
        // Delivered once stays delivered: its last good data is served.
        hub.contribute(contribution("b", 1, 1, &[]));
        assert!(hub.current().1.ready());
    }

    #[test]
    fn without_a_grace_period_one_delivery_is_enough() {
        let hub = Hub::new(vec!["a".into(), "b".into()], Duration::ZERO);
        assert!(!hub.current().1.ready(), "nothing delivered");
        hub.contribute(contribution("a", 1, 0, &[("api/v1", "{}")]));
        assert!(hub.current().1.ready());
        assert_eq!(hub.grace_ends(), None);
    }
}
