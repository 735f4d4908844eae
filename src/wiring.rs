//! Putting the proxy together: one poll loop per downstream, one snapshot
//! builder, and the HTTP server — started the same way by `serve`, `demo`
//! and the integration tests.
//!
//! Everything runs on the actix system of the calling thread: poll loops
//! and the builder are local tasks there (awc's client is not `Send`),
//! conversions go to the blocking pool, and the HTTP workers have threads
//! of their own, so a slow downstream never delays a request.

use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::dev::ServerHandle;
use tracing::{info, warn};

use crate::body::rendered::Rendered;
use crate::config::Config;
use crate::config::memory::{PROTOBUF_RENDITIONS_PART, merged_v2_limit};
use crate::downstream::ledger::Ledger;
use crate::downstream::poll::Poller;
use crate::front_door::{FrontDoor, FrontDoorError, Reviewer};
use crate::http::AppState;
use crate::http::access::Authenticator;
use crate::metrics::Metrics;
use crate::openapi::cache::ConversionCache;
use crate::outbound::client::{ClientError, DownstreamClient};
use crate::publish::hub::build_loop;
use crate::publish::protobuf::Renditions;
use crate::publish::{Hub, Store};
use crate::serve::server::{ListenError, http_server};

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
    /// The server could not listen (address taken, serving TLS material).
    #[error(transparent)]
    Listen(#[from] ListenError),
    /// The front door could not be set up for a downstream.
    #[error(transparent)]
    FrontDoor(FrontDoorError),
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
    let metrics = Arc::new(Metrics::default());
    let names = config.downstreams.iter().map(|d| d.name.clone()).collect();
    let hub = Arc::new(Hub::new(names, config.readiness_grace_period));
    let store = Arc::new(Store::waiting(hub.current().1));
    let cache = Arc::new(ConversionCache::<Rendered>::default());
    let shares: Vec<_> =
        config.downstreams.iter().map(|d| (d.name.clone(), d.memory_share)).collect();
    let ledger = Arc::new(Ledger::new(config.memory_budget_bytes, &shares));
    metrics.memory_budget(config.memory_budget_bytes);
    info!(
        bytes = config.memory_budget_bytes,
        source = %config.memory_budget_source,
        "memory budget for the downstreams' documents and discovery"
    );

    let mut pollers = Vec::with_capacity(config.downstreams.len());
    for (order, d) in config.downstreams.iter().enumerate() {
        let client = DownstreamClient::new(
            &d.name,
            &d.url,
            &d.tls,
            d.token.as_ref(),
            d.timeout,
            config.max_document_bytes,
        )
        .map_err(|source| StartError::Client { name: d.name.clone(), source: Box::new(source) })?;
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
            Arc::clone(&ledger),
        ));
    }

    let authentication = Reviewer::of(config, &metrics).map_err(StartError::FrontDoor)?;
    let v2_merge_limit = merged_v2_limit(config.memory_budget_bytes);
    let state = AppState {
        store: Arc::clone(&store),
        metrics: Arc::clone(&metrics),
        serve_v2beta1: config.discovery_v2beta1,
        identity: Arc::default(),
        protobuf: Arc::new(Renditions::new(config.memory_budget_bytes / PROTOBUF_RENDITIONS_PART)),
        v2_merge_limit,
        authentication: authentication.map(|r| r as Arc<dyn Authenticator>),
    };
    let door = FrontDoor::of(config, &metrics).map_err(StartError::FrontDoor)?;
    let limits = &config.serving.limits;
    let (server, addr) = http_server(config, &state, door)?;
    let handle = server.handle();

    actix_web::rt::spawn(build_loop(hub, store, metrics, v2_merge_limit));
    for poller in pollers {
        actix_web::rt::spawn(poller.run());
    }
    let done = actix_web::rt::spawn(server);
    info!(
        %addr,
        tls = config.serving.tls.is_some(),
        workers = limits.workers,
        downstreams = config.downstreams.len(),
        front_door = config.front_door,
        metadata_authentication = ?config.metadata_authentication,
        "listening"
    );
    if config.front_door && config.serving.tls.is_none() {
        // client-go's kubeconfig loading drops the user's credentials for
        // a server that is not https (clientcmd merges auth info only when
        // the transport is TLS): a front door on plain HTTP passes kubectl's
        // requests on without a token.
        warn!(
            "the front door serves plain HTTP: kubectl and other clients configured from a \
             kubeconfig send no credentials to an http:// server; serve HTTPS \
             (--tls-cert, --tls-key) for them"
        );
    }
    Ok(Running { addr, state, server: handle, done })
}
