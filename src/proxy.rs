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
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use actix_http::{HttpService, Protocol};
use actix_service::{
    IntoServiceFactory, Service, ServiceFactory, ServiceFactoryExt, fn_factory, fn_service,
    map_config,
};
use actix_web::App;
use actix_web::dev::{AppConfig, ServerHandle};
use actix_web::rt::net::TcpStream;
use tracing::{info, warn};

use crate::cache::ConversionCache;
use crate::config::Config;
use crate::downstream::client::{ClientError, DownstreamClient};
use crate::downstream::poll::Poller;
use crate::http::direct::{Connection, DirectWriter, Rewind};
use crate::http::stall::StallGuard;
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
    let limits = &config.serving.limits;
    let (server, addr) = http_server(config, &state)?;
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

/// The HTTP server, bound and ready to run, with every limit set
/// deliberately rather than left to actix's defaults (README "Limits and
/// timeouts"; `serving` says why each).
///
/// Built from actix-server and actix-http rather than actix-web's
/// `HttpServer` for one reason: every HTTP/1 connection goes through a
/// [`StallGuard`], which closes a connection whose request head (or whose
/// reader) stalls on *any* request, not only the first, as actix-http's
/// own timer does. What `HttpServer` adds besides is re-done here:
/// workers, backlog, connections per worker, signals, shutdown timeout,
/// the TLS acceptor with its handshake timeout.
fn http_server(
    config: &Config,
    state: &AppState,
) -> Result<(actix_server::Server, SocketAddr), StartError> {
    let limits = config.serving.limits.clone();
    let listener = listener(config.listen)
        .map_err(|source| StartError::Bind { addr: config.listen, source })?;
    let addr = listener.local_addr().unwrap_or(config.listen);
    let builder = actix_server::Server::build()
        .workers(limits.workers)
        .max_concurrent_connections(limits.max_connections_per_worker())
        .shutdown_timeout(serving::SHUTDOWN_TIMEOUT_SECS);
    // Tells kept-alive connections to close when a stop begins, so an idle
    // one does not hold the stop for the whole shutdown timeout.
    let stopping = builder.graceful_shutdown_signal();
    let state = state.clone();
    let guard = limits.request_timeout;
    let builder = match &config.serving.tls {
        None if !config.direct_writes => builder.listen("openapi-proxy", listener, move || {
            fn_service(move |io: TcpStream| async move {
                let peer = io.peer_addr().ok();
                let _ = io.set_nodelay(true);
                Ok((StallGuard::new(io, guard, true), Protocol::Http1, peer))
            })
            .and_then(http_service(&state, &limits, addr, &stopping))
        }),
        None => {
            let direct = DirectWriter::new(
                state.clone(),
                limits.request_timeout,
                limits.keep_alive,
                stopping.clone(),
            );
            builder.listen("openapi-proxy", listener, move || {
                plain_service(direct.clone(), http_service(&state, &limits, addr, &stopping), guard)
            })
        }
        Some(files) => {
            let tls = http::tls::server_config(files).map_err(StartError::ServingTls)?;
            let mut acceptor = actix_tls::accept::rustls_0_23::Acceptor::new(tls);
            acceptor.set_handshake_timeout(limits.tls_handshake_timeout);
            builder.listen("openapi-proxy-tls", listener, move || {
                acceptor
                    .clone()
                    .map_err(|e| {
                        tracing::debug!(error = ?e, "TLS handshake failed");
                    })
                    .and_then(fn_service(
                        move |io: actix_tls::accept::rustls_0_23::TlsStream<
                            actix_web::rt::net::TcpStream,
                        >| async move {
                            let peer = io.get_ref().0.peer_addr().ok();
                            let h2 = io.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
                            let protocol = if h2 { Protocol::Http2 } else { Protocol::Http1 };
                            Ok((StallGuard::new(io, guard, !h2), protocol, peer))
                        },
                    ))
                    .and_then(http_service(&state, &limits, addr, &stopping).map_err(|e| {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }))
            })
        }
    }
    .map_err(|source| StartError::Bind { addr: config.listen, source })?;
    Ok((builder.run(), addr))
}

/// A plain-HTTP connection: served by the [`DirectWriter`] while its
/// requests are ordinary, then by actix-http (`http`) if one is not.
fn plain_service<F>(
    direct: DirectWriter,
    http: F,
    guard: std::time::Duration,
) -> impl ServiceFactory<TcpStream, Config = (), Response = (), Error = (), InitError = ()>
where
    F: ServiceFactory<
            (StallGuard<Rewind<TcpStream>>, Protocol, Option<SocketAddr>),
            Config = (),
            Response = (),
            Error = actix_http::error::DispatchError,
            InitError = (),
        > + 'static,
{
    fn_factory(move || {
        let http = http.new_service(());
        let direct = direct.clone();
        async move {
            let http = Rc::new(http.await?);
            Ok(fn_service(move |io: TcpStream| {
                let http = Rc::clone(&http);
                let direct = direct.clone();
                async move {
                    let peer = io.peer_addr().ok();
                    let _ = io.set_nodelay(true);
                    match direct.serve(io).await {
                        Connection::Closed => Ok(()),
                        Connection::HandOff(io) => http
                            .call((StallGuard::new(io, guard, true), Protocol::Http1, peer))
                            .await
                            .map_err(
                                |e| tracing::debug!(error = %e, "connection ended with an error"),
                            ),
                    }
                }
            }))
        }
    })
}

/// actix-http's service over a guarded stream, answering with the app
/// `http::configure` builds.
fn http_service<T>(
    state: &AppState,
    limits: &serving::Limits,
    addr: SocketAddr,
    stopping: &actix_server::GracefulShutdownSignal,
) -> impl ServiceFactory<
    (StallGuard<T>, Protocol, Option<SocketAddr>),
    Config = (),
    Response = (),
    Error = actix_http::error::DispatchError,
    InitError = (),
> + use<T>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
{
    let state = state.clone();
    let app = App::new()
        .configure(move |cfg| http::configure(cfg, state))
        .into_factory()
        .map_err(|e| e.error_response());
    let stopping = stopping.clone();
    HttpService::build()
        .graceful_shutdown_signal(move || {
            let stopping = stopping.clone();
            async move { stopping.notified().await }
        })
        .keep_alive(limits.keep_alive)
        .client_request_timeout(limits.request_timeout)
        .client_disconnect_timeout(serving::DISCONNECT_TIMEOUT)
        .local_addr(addr)
        .finish(map_config(app, |()| AppConfig::default()))
}

/// A listening socket with the configured backlog (std's `bind` would
/// take 128).
fn listener(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol as IpProtocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(IpProtocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(i32::try_from(serving::BACKLOG).unwrap_or(i32::MAX))?;
    Ok(socket.into())
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
                // Two servers each publishing their own `version`, `api` or
                // `apis/<group>` document is normal (every aggregated API
                // server does); two publishing one group-version is a
                // configuration problem an operator must see.
                if c.key.is_group_version() {
                    warn!(key = %c.key, winner = %c.winner, loser = %c.loser, "two downstreams publish this group-version; serving the higher priority one");
                } else {
                    info!(key = %c.key, winner = %c.winner, loser = %c.loser, "two downstreams publish this document; serving the higher priority one");
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
