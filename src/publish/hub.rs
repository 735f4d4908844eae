//! The hub where poll loops leave what each downstream contributes, and the
//! single writer loop that turns contributions into published snapshots.
//!
//! Pollers never publish: they [`Hub::contribute`] and the one writer,
//! [`build_loop`], wakes, builds the whole next [`Snapshot`] aside and
//! stores it once — the design's central invariant lives here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;
use tracing::{info, warn};

use crate::body::rendered::Rendered;
use crate::metrics::Metrics;
use crate::publish::snapshot::{Conflict, Contribution, Snapshot, Store, build};

/// Where pollers leave their contributions and the builder picks them up.
///
/// Pollers never publish snapshots themselves: there is one writer, the
/// builder task, woken by [`Hub::contribute`].
#[derive(Debug, Default)]
pub struct Hub {
    state: Mutex<HubState>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct HubState {
    contributions: BTreeMap<String, Arc<Contribution>>,
    tried: BTreeSet<String>,
    expected: usize,
}

impl Hub {
    /// A hub expecting `downstreams` pollers.
    #[must_use]
    pub fn new(downstreams: usize) -> Self {
        let hub = Self::default();
        hub.lock().expected = downstreams;
        hub
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a downstream's contribution after a poll (changed or not:
    /// a failed first poll still counts as tried) and wakes the builder.
    pub fn contribute(&self, contribution: Arc<Contribution>) {
        {
            let mut s = self.lock();
            s.tried.insert(contribution.name.clone());
            s.contributions.insert(contribution.name.clone(), contribution);
        }
        self.changed.notify_one();
    }

    /// Waits until some contribution changed since the last call.
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    /// The contributions now, and whether every downstream was tried.
    #[must_use]
    pub fn current(&self) -> (Vec<Arc<Contribution>>, bool) {
        let s = self.lock();
        (s.contributions.values().cloned().collect(), s.tried.len() >= s.expected)
    }
}

/// The one writer: waits for contributions to change, builds the next
/// snapshot aside, publishes it whole.
pub async fn build_loop(
    hub: Arc<Hub>,
    store: Arc<Store>,
    metrics: Arc<Metrics>,
    no_downstreams: bool,
) {
    let mut generation = 0u64;
    let mut reported: BTreeSet<Conflict> = BTreeSet::new();
    if no_downstreams {
        // Nothing to wait for: serve the empty snapshot as ready.
        generation += 1;
        let (snap, _) = build(generation, &[], true);
        store.publish(snap);
    }
    loop {
        hub.changed().await;
        let started = Instant::now();
        let (contributions, ready) = hub.current();
        // Off the thread the poll loops run on: a large build (thousands
        // of group-versions) must not hold up every downstream's poll.
        let next = generation + 1;
        let built = tokio::task::spawn_blocking(move || build(next, &contributions, ready)).await;
        let (snap, conflicts) = match built {
            Ok(built) => built,
            Err(e) => {
                warn!(error = %e, "the snapshot build did not finish; serving the last one");
                continue;
            }
        };
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
        let current = store.load();
        let discovery_changed = current.discovery.apis_v2.hash != snap.discovery.apis_v2.hash
            || current.discovery.api_v2.hash != snap.discovery.api_v2.hash;
        metrics.rebuild(started.elapsed(), discovery_changed);
        if same_content(&current, &snap) {
            continue;
        }
        generation += 1;
        let documents = snap.openapi.len();
        store.publish(snap);
        metrics.snapshot(generation, documents);
        info!(
            generation,
            documents,
            ready,
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            "snapshot published"
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
    // compare their hashes too.
    let legacy = |s: &Snapshot| -> Vec<String> {
        s.discovery.resources.values().map(|r| r.hash.clone()).collect()
    };
    a.ready == b.ready
        && d(a) == d(b)
        && legacy(a) == legacy(b)
        && a.openapi_root.hash == b.openapi_root.hash
        && hash(a.openapi_v2.as_ref().map(|v| &*v.json))
            == hash(b.openapi_v2.as_ref().map(|v| &*v.json))
        && hash(a.openapi_v2.as_ref().and_then(|v| v.protobuf.as_deref()))
            == hash(b.openapi_v2.as_ref().and_then(|v| v.protobuf.as_deref()))
        && hash(a.version.as_deref()) == hash(b.version.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::snapshot::tests::contribution;

    #[test]
    fn hub_is_ready_when_every_downstream_was_tried() {
        let hub = Hub::new(2);
        hub.contribute(contribution("a", 1, 0, &[]));
        assert!(!hub.current().1);
        hub.contribute(contribution("b", 1, 1, &[]));
        assert!(hub.current().1);
    }
}
