//! Putting the proxy together: one poll loop per downstream, one snapshot
//! builder, and the HTTP server — started the same way by `serve`, `demo`
//! and the integration tests.
//!
//! Everything runs on the actix system of the calling thread: poll loops
//! and the builder are local tasks there (awc's client is not `Send`),
//! conversions go to the blocking pool, and the HTTP workers have threads
//! of their own, so a slow downstream never delays a request.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use actix_web::{App, HttpServer, dev::ServerHandle};
use tracing::{info, warn};

use crate::cache::ConversionCache;
use crate::config::Config;
use crate::downstream::client::{ClientError, DownstreamClient};
use crate::downstream::poll::Poller;
use crate::http::{self, AppState};
use crate::metrics::Metrics;
use crate::serving;
use crate::snapshot::{self, Conflict, Hub, Store};

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A downstream's client could not be made (TLS material).
    #[error("downstream {name}")]
    Client {
        /// The downstream.
        name: String,
        /// Why (boxed: rustls errors are large, and this is the cold path).
        #[source]
        source: Box<ClientError>,
    },
    /// The serving certificate or key does not load.
    #[error("serving TLS")]
    ServingTls(#[source] crate::http::tls::ServingTlsError),
    /// The listen address could not be bound.
    #[error("listening on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A started proxy.
#[derive(Debug)]
pub struct Running {
    /// The address it listens on (useful with port 0).
    pub addr: SocketAddr,
    /// Its shared state.
    pub state: AppState,
    /// Stops the HTTP server.
    pub server: ServerHandle,
    /// Completes when the HTTP server has stopped.
    pub done: actix_web::rt::task::JoinHandle<std::io::Result<()>>,
}

/// Starts pollers, the builder and the HTTP server on the current actix
/// system and returns once the server listens. The server runs until
/// [`Running::server`] stops it (or SIGINT/SIGTERM, which actix handles
/// gracefully: in-flight requests finish).
///
/// # Errors
/// [`StartError`] when a client cannot be made or the address is taken.
pub fn start(config: &Config) -> Result<Running, StartError> {
    let store = Arc::new(Store::new());
    let metrics = Arc::new(Metrics::default());
    let hub = Arc::new(Hub::new(config.downstreams.len()));
    let cache = Arc::new(ConversionCache::default());

    let mut pollers = Vec::with_capacity(config.downstreams.len());
    for (order, d) in config.downstreams.iter().enumerate() {
        let client = DownstreamClient::new(d, config.max_document_bytes).map_err(|source| {
            StartError::Client { name: d.name.clone(), source: Box::new(source) }
        })?;
        if d.tls.insecure_skip_verify {
            warn!(downstream = %d.name, "TLS verification is off for this downstream (insecureSkipTlsVerify)");
        }
        pollers.push(Poller::new(
            d,
            order,
            client,
            Arc::clone(&hub),
            Arc::clone(&metrics),
            Arc::clone(&cache),
        ));
    }

    let state = AppState {
        store: Arc::clone(&store),
        metrics: Arc::clone(&metrics),
        serve_v2beta1: config.discovery_v2beta1,
    };
    let app_state = state.clone();
    let limits = &config.serving.limits;
    // Every limit is set here, deliberately, rather than left to actix's
    // defaults (README "Limits and timeouts"; `serving` says why each).
    let server = HttpServer::new(move || {
        let state = app_state.clone();
        App::new().configure(move |cfg| http::configure(cfg, state))
    })
    .workers(limits.workers)
    .max_connections(limits.max_connections_per_worker())
    .backlog(serving::BACKLOG)
    .keep_alive(limits.keep_alive)
    .client_request_timeout(limits.request_timeout)
    .client_disconnect_timeout(serving::DISCONNECT_TIMEOUT)
    .tls_handshake_timeout(limits.tls_handshake_timeout)
    .shutdown_timeout(serving::SHUTDOWN_TIMEOUT_SECS);
    let server = match &config.serving.tls {
        None => server.bind(config.listen),
        Some(files) => {
            let tls = http::tls::server_config(files).map_err(StartError::ServingTls)?;
            server.bind_rustls_0_23(config.listen, tls)
        }
    }
    .map_err(|source| StartError::Bind { addr: config.listen, source })?;
    let addr = server.addrs().first().copied().unwrap_or(config.listen);
    let server = server.run();
    let handle = server.handle();

    actix_web::rt::spawn(build_loop(hub, store, metrics, config.downstreams.is_empty()));
    for poller in pollers {
        actix_web::rt::spawn(poller.run());
    }
    let done = actix_web::rt::spawn(server);
    info!(
        %addr,
        tls = config.serving.tls.is_some(),
        workers = limits.workers,
        downstreams = config.downstreams.len(),
        "listening"
    );
    Ok(Running { addr, state, server: handle, done })
}

/// The one writer: waits for contributions to change, builds the next
/// snapshot aside, publishes it whole.
async fn build_loop(hub: Arc<Hub>, store: Arc<Store>, metrics: Arc<Metrics>, no_downstreams: bool) {
    let mut generation = 0u64;
    let mut reported: BTreeSet<Conflict> = BTreeSet::new();
    if no_downstreams {
        // Nothing to wait for: serve the empty snapshot as ready.
        generation += 1;
        let (snap, _) = snapshot::build(generation, &[], true);
        store.publish(snap);
    }
    loop {
        hub.changed().await;
        let started = Instant::now();
        let (contributions, ready) = hub.current();
        let (snap, conflicts) = snapshot::build(generation + 1, &contributions, ready);
        for c in conflicts {
            if !reported.contains(&c) {
                warn!(key = %c.key, winner = %c.winner, loser = %c.loser, "two downstreams publish this document; serving the higher priority one");
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
        let took = started.elapsed();
        metrics.snapshot(generation, documents, took);
        info!(
            generation,
            documents,
            ready,
            elapsed_ms = took.as_secs_f64() * 1e3,
            "snapshot published"
        );
    }
}

/// Whether two snapshots serve the same bytes everywhere (then there is
/// nothing to publish).
fn same_content(a: &snapshot::Snapshot, b: &snapshot::Snapshot) -> bool {
    let hash = |r: Option<&crate::rendered::Rendered>| r.map(|r| r.hash.clone());
    let d = |s: &snapshot::Snapshot| {
        (
            s.discovery.api_v2.hash.clone(),
            s.discovery.apis_v2.hash.clone(),
            s.discovery.api_legacy.hash.clone(),
        )
    };
    // Legacy per-group-version lists are not part of the aggregated list:
    // compare their hashes too.
    let legacy = |s: &snapshot::Snapshot| -> Vec<String> {
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
