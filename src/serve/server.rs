//! The actix-server stack the proxy listens with: plain HTTP through the
//! direct writer (or actix-http alone when `directWrites` is off), HTTPS
//! and HTTP/2 through rustls and actix-http, every connection in a
//! [`Slot`](super::slots) of its worker and behind the stall guard, every
//! HTTP/1 connection actix-http serves in [`Lockstep`], and every limit set
//! deliberately rather than left to actix's defaults.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use actix_http::{HttpService, Protocol};
use actix_service::{
    IntoServiceFactory, Service, ServiceFactory, ServiceFactoryExt, boxed, fn_factory, fn_service,
    map_config,
};
use actix_web::dev::AppConfig;
use actix_web::rt::net::TcpStream;
use actix_web::{App, HttpRequest, HttpResponse, web};
use bytes::Bytes;

use super::direct::{self, Connection, DirectWriter, Rewind};
use super::lockstep::{self, Decoding, Lockstep};
use super::slots::{Slot, Slots};
use super::stall::StallGuard;
use super::tls;
use crate::config::Config;
use crate::config::serving;
use crate::front_door::{self, Clients, FrontDoor, UpgradeRequest};
use crate::http::connection::{AnswerTurns, StreamPlaces};
use crate::http::{self, AppState, head, router};

/// Why the server could not listen.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// The serving certificate or key does not load.
    #[error("serving TLS")]
    ServingTls(#[source] tls::ServingTlsError),
    /// Another socket listens on the address already.
    #[error(
        "listening on {addr}: the address is in use (another process listens there); \
         choose another with --listen or `listen` (port 0 picks a free one)"
    )]
    InUse {
        /// The address.
        addr: SocketAddr,
    },
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

impl ListenError {
    fn bind(addr: SocketAddr, source: std::io::Error) -> Self {
        if source.kind() == std::io::ErrorKind::AddrInUse {
            Self::InUse { addr }
        } else {
            Self::Bind { addr, source }
        }
    }
}

/// The HTTP server, bound and ready to run, with every limit set
/// deliberately rather than left to actix's defaults (docs/operations.md#limits;
/// `serving` says why each).
///
/// Built from actix-server and actix-http rather than actix-web's
/// `HttpServer` because each connection is wrapped: every HTTP/1
/// connection goes through a [`StallGuard`], which closes a connection
/// whose request head (or whose reader) stalls on *any* request, not only
/// the first, as actix-http's own timer does; actix-http gets its HTTP/1
/// requests one at a time through [`Lockstep`]; and every connection takes
/// a slot of its worker's [`Slots`], which evict idle connections for new
/// ones at the connection limit. What `HttpServer` adds besides is re-done
/// here: workers, backlog, connections per worker, signals, shutdown
/// timeout, the TLS acceptor with its handshake timeout.
pub(crate) fn http_server(
    config: &Config,
    state: &AppState,
    door: Option<Arc<FrontDoor>>,
) -> Result<(actix_server::Server, SocketAddr), ListenError> {
    let limits = config.serving.limits.clone();
    let listener =
        listener(config.listen).map_err(|source| ListenError::bind(config.listen, source))?;
    let addr = listener.local_addr().unwrap_or(config.listen);
    let capacity = limits.max_connections_per_worker();
    let builder = actix_server::Server::build()
        .workers(limits.workers)
        // One more than a worker serves: that one waits in `Slots::enter`,
        // and evicts an idle connection, instead of waiting unseen in the
        // backlog.
        .max_concurrent_connections(capacity + 1)
        .shutdown_timeout(serving::SHUTDOWN_TIMEOUT_SECS)
        .shutdown_signal(stop_signal());
    // Tells kept-alive connections to close when a stop begins, so an idle
    // one does not hold the stop for the whole shutdown timeout.
    let stopping = builder.graceful_shutdown_signal();
    let state = state.clone();
    let guard = limits.request_timeout;
    let streams = limits.max_streams_per_connection;
    let builder = match &config.serving.tls {
        None if !config.direct_writes => builder.listen("openapi-proxy", listener, move || {
            let http = http_service(&state, door.as_ref(), &limits, addr, &stopping).map_err(|e| {
                tracing::debug!(error = %e, "connection ended with an error");
            });
            connection_service(
                state.clone(),
                door.clone(),
                http,
                guard,
                capacity,
                streams,
                |io: &TcpStream| {
                    let _ = io.set_nodelay(true);
                    (io.peer_addr().ok(), false)
                },
            )
        }),
        None => {
            let direct = DirectWriter::new(
                state.clone(),
                door.clone(),
                limits.request_timeout,
                limits.keep_alive,
                stopping.clone(),
            );
            builder.listen("openapi-proxy", listener, move || {
                let http = http_service(&state, door.as_ref(), &limits, addr, &stopping);
                plain_service(direct.clone(), http, guard, capacity)
            })
        }
        Some(files) => {
            let tls = tls::server_config(files).map_err(ListenError::ServingTls)?;
            let mut acceptor = actix_tls::accept::rustls_0_23::Acceptor::new(tls);
            acceptor.set_handshake_timeout(limits.tls_handshake_timeout);
            builder.listen("openapi-proxy-tls", listener, move || {
                let http =
                    http_service(&state, door.as_ref(), &limits, addr, &stopping).map_err(|e| {
                        tracing::debug!(error = %e, "connection ended with an error");
                    });
                acceptor
                    .clone()
                    .map_err(|e| {
                        tracing::debug!(error = ?e, "TLS handshake failed");
                    })
                    .and_then(connection_service(
                        state.clone(),
                        door.clone(),
                        http,
                        guard,
                        capacity,
                        streams,
                        |io: &TlsStream| {
                            let peer = io.get_ref().0.peer_addr().ok();
                            (peer, io.get_ref().1.alpn_protocol() == Some(b"h2".as_slice()))
                        },
                    ))
            })
        }
    }
    .map_err(|source| ListenError::Bind { addr: config.listen, source })?;
    Ok((builder.run(), addr))
}

/// A plain-HTTP connection, in one of a worker's `capacity` slots: served
/// by the [`DirectWriter`] while its requests are ordinary, then by
/// actix-http (`http`) if one is not.
fn plain_service<F>(
    direct: DirectWriter,
    http: F,
    guard: std::time::Duration,
    capacity: usize,
) -> impl ServiceFactory<TcpStream, Config = (), Response = (), Error = (), InitError = ()>
where
    F: ServiceFactory<
            (Lockstep<StallGuard<Rewind<TcpStream>>>, Protocol, Option<SocketAddr>),
            Config = (),
            Response = (),
            Error = actix_http::error::DispatchError,
            InitError = (),
        > + 'static,
{
    fn_factory(move || {
        let http = http.new_service(());
        let direct = direct.clone();
        let slots = Slots::new(capacity);
        let decoding = Decoding::new();
        async move {
            let http = Rc::new(http.await?);
            Ok(fn_service(move |io: TcpStream| {
                let http = Rc::clone(&http);
                let direct = direct.clone();
                let slots = Rc::clone(&slots);
                let decoding = decoding.clone();
                async move {
                    let slot = slots.enter().await;
                    let peer = io.peer_addr().ok();
                    let _ = io.set_nodelay(true);
                    match direct.serve(io, &slot).await {
                        Connection::Closed => Ok(()),
                        Connection::Upgrade(io, upgrade) => {
                            direct.upgrade(io, &upgrade).await;
                            Ok(())
                        }
                        Connection::HandOff(io) => http
                            .call((
                                http1(StallGuard::new(io, guard, true), slot, &decoding),
                                Protocol::Http1,
                                peer,
                            ))
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

/// A connection actix-http serves (HTTPS, or plain HTTP without the direct
/// writer), in one of a worker's `capacity` slots (after the TLS
/// handshake, for HTTPS): HTTP/2 and HTTP/1 through actix-http (`http`);
/// with the front door on, an HTTP/1 connection whose first request is an
/// upgrade to pass on (exec, attach, port-forward: clients open a
/// connection for each) is taken before actix-http, which would read a
/// SPDY upgrade as an ordinary request. An HTTP/2 connection advertises
/// at most `max_streams` streams at once (`maxStreamsPerConnection`).
/// `meta` gives the peer's address and whether ALPN chose HTTP/2.
fn connection_service<S, F>(
    state: AppState,
    door: Option<Arc<FrontDoor>>,
    http: F,
    guard: std::time::Duration,
    capacity: usize,
    max_streams: u32,
    meta: fn(&S) -> (Option<SocketAddr>, bool),
) -> impl ServiceFactory<S, Config = (), Response = (), Error = (), InitError = ()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
    F: ServiceFactory<
            (Lockstep<StallGuard<Rewind<S>>>, Protocol, Option<SocketAddr>),
            Config = (),
            Response = (),
            Error = (),
            InitError = (),
        > + 'static,
{
    fn_factory(move || {
        let http = http.new_service(());
        let state = state.clone();
        let door = door.clone();
        let slots = Slots::new(capacity);
        let decoding = Decoding::new();
        async move {
            let http = Rc::new(http.await?);
            Ok(fn_service(move |io: S| {
                let http = Rc::clone(&http);
                let state = state.clone();
                let door = door.clone();
                let slots = Rc::clone(&slots);
                let decoding = decoding.clone();
                async move {
                    // After the handshake: a connection that never
                    // finishes one never takes a slot.
                    let slot = slots.enter().await;
                    let (peer, h2) = meta(&io);
                    if h2 {
                        let io = StallGuard::new(Rewind::new(Bytes::new(), io), guard, false);
                        return http
                            .call((Lockstep::http2(io, slot, max_streams), Protocol::Http2, peer))
                            .await;
                    }
                    let io = match &door {
                        Some(door) => match first_head(io, peer, guard).await {
                            First::Upgrade(io, upgrade) => {
                                if let Err(e) =
                                    front_door::relay(&state, door, &upgrade, io, &[]).await
                                {
                                    tracing::debug!(error = %crate::error_chain(&e), "front door: upgrade ended");
                                }
                                return Ok(());
                            }
                            First::Other(io) => io,
                            First::Gone => return Ok(()),
                        },
                        None => Rewind::new(Bytes::new(), io),
                    };
                    let io = http1(StallGuard::new(io, guard, true), slot, &decoding);
                    http.call((io, Protocol::Http1, peer)).await
                }
            }))
        }
    })
}

/// An HTTPS connection's stream.
type TlsStream = actix_tls::accept::rustls_0_23::TlsStream<TcpStream>;

/// What the first request head of a connection is.
enum First<S> {
    /// An upgrade for the front door: the stream after the head.
    Upgrade(Rewind<S>, Box<UpgradeRequest>),
    /// Anything else (or no whole head within the direct writer's limit):
    /// the stream, replaying what was read.
    Other(Rewind<S>),
    /// Closed, or no head within `timeout`.
    Gone,
}

/// Reads the first request head of `io` (within `timeout`), to see
/// whether it is an upgrade the front door takes: only a head that passes
/// the strict check (`http::head`, actix-http's rules) can be one.
async fn first_head<S>(
    mut io: S,
    peer: Option<SocketAddr>,
    timeout: std::time::Duration,
) -> First<S>
where
    S: tokio::io::AsyncRead + Unpin,
{
    use tokio::io::AsyncReadExt;
    let mut buf = bytes::BytesMut::with_capacity(4096);
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let mut lines = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Request::new(&mut lines);
        match parsed.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                // What actix-http would refuse is not passed on: it is
                // handed over with the rest, and refused there.
                let upgrade = match head::check(&parsed) {
                    Ok(checked) => UpgradeRequest::of_raw(&checked, || peer.map(|a| a.ip())),
                    Err(rule) => {
                        tracing::debug!(%rule,
                            "malformed request head; handed to actix-http to refuse");
                        None
                    }
                };
                return match upgrade {
                    Some(upgrade) => {
                        let rest = buf.split_off(len).freeze();
                        First::Upgrade(Rewind::new(rest, io), Box::new(upgrade))
                    }
                    None => First::Other(Rewind::new(buf.freeze(), io)),
                };
            }
            Ok(httparse::Status::Partial) if buf.len() < direct::HEAD_LIMIT => {}
            Ok(httparse::Status::Partial) | Err(_) => {
                return First::Other(Rewind::new(buf.freeze(), io));
            }
        }
        match tokio::time::timeout_at(deadline, io.read_buf(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {}
            // As actix-http would: a connection without a head in time, or
            // closed, is dropped.
            _ => return First::Gone,
        }
    }
}

/// actix-http's service over a guarded stream in lockstep, answering with
/// the app [`configure`] builds.
fn http_service<T>(
    state: &AppState,
    door: Option<&Arc<FrontDoor>>,
    limits: &serving::Limits,
    addr: SocketAddr,
    stopping: &actix_server::GracefulShutdownSignal,
) -> impl ServiceFactory<
    (Lockstep<StallGuard<T>>, Protocol, Option<SocketAddr>),
    Config = (),
    Response = (),
    Error = actix_http::error::DispatchError,
    InitError = (),
> + use<T>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
{
    let app_state = state.clone();
    let app_door = door.cloned();
    let app = App::new()
        .configure(move |cfg| configure(cfg, app_state, app_door))
        .into_factory()
        .map_err(|e| e.error_response());
    let stopping = stopping.clone();
    let streams = usize::try_from(limits.max_streams_per_connection).unwrap_or(usize::MAX);
    let builder = HttpService::build()
        // How the service finds the connection's `Turns` to report to, and
        // the front door the turns to hold and the guard's `LongExchange`
        // mark.
        .on_connect_ext(move |io: &Lockstep<StallGuard<T>>, data| {
            data.insert(io.client_gone());
            match io.turns() {
                Some(turns) => {
                    data.insert(AnswerTurns::new(turns.clone()));
                    data.insert(turns);
                }
                // HTTP/2: the streams its SETTINGS advertise, held to by
                // the front door for a client that ignores them.
                None => {
                    data.insert(StreamPlaces::new(streams));
                }
            }
            if let Some(written) = io.written() {
                data.insert(written);
            }
            if let Some(progress) = io.progress() {
                data.insert(progress);
            }
            data.insert(io.get_ref().long_exchange());
        })
        .graceful_shutdown_signal(move || {
            let stopping = stopping.clone();
            async move { stopping.notified().await }
        })
        .keep_alive(limits.keep_alive)
        .client_request_timeout(limits.request_timeout)
        .client_disconnect_timeout(serving::DISCONNECT_TIMEOUT)
        .h1_write_buffer_size(256 * 1024)
        .local_addr(addr);
    let app = lockstep::reporting(map_config(app, |()| AppConfig::default()));
    // Upgrades are the front door's to pass on; without it actix-http
    // answers them as any request. The two services differ in type, so
    // both are boxed (one allocation per connection).
    match door {
        None => boxed::factory(builder.finish(app)),
        Some(door) => boxed::factory(
            builder.upgrade(front_door::upgrades(state.clone(), Arc::clone(door))).finish(app),
        ),
    }
}

/// Registers the app on `cfg`: one service for every path, which asks the
/// router (`http::router`) — the same one the direct transport asks — for
/// the answer.
///
/// With the front door on, what no route serves is passed on instead
/// (`front_door`), through this worker's own clients.
fn configure(cfg: &mut web::ServiceConfig, state: AppState, door: Option<Arc<FrontDoor>>) {
    match door {
        None => {
            cfg.app_data(web::Data::new(state)).default_service(web::to(http::dispatch));
        }
        Some(door) => {
            cfg.app_data(web::Data::new(state))
                .app_data(web::Data::new(Clients::new(&door)))
                .default_service(web::to(dispatch_or_pass));
        }
    }
}

async fn dispatch_or_pass(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
    clients: web::Data<Clients>,
) -> HttpResponse {
    let routed = router::decode_path(req.path()).as_deref().and_then(router::route).is_some();
    if routed {
        return http::dispatch(req, state).await;
    }
    front_door::pass(req, payload, &state, &clients).await
}

/// Resolves on SIGINT or SIGTERM, both a graceful stop: connections finish
/// the answers they are writing, within the shutdown timeout. actix-server's
/// own handling forces a stop on SIGINT (Ctrl-C included), cutting answers
/// off, where docs/operations.md promises the same graceful stop for both.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) =
        (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
    else {
        tracing::warn!("cannot listen for SIGINT and SIGTERM; only SIGKILL stops the proxy");
        return std::future::pending().await;
    };
    let received = tokio::select! {
        _ = interrupt.recv() => "SIGINT",
        _ = terminate.recv() => "SIGTERM",
    };
    tracing::info!(
        signal = received,
        timeout_s = serving::SHUTDOWN_TIMEOUT_SECS,
        "stopping gracefully: no new connections, answers in progress finish"
    );
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

/// An HTTP/1 connection's stream for actix-http: the lockstep over the
/// stall guard, watching for the client's end while the front door passes
/// one of its requests on.
fn http1<T>(io: StallGuard<T>, slot: Slot, decoding: &Decoding) -> Lockstep<StallGuard<T>> {
    let long = io.long_exchange();
    Lockstep::http1(io, slot, decoding).watching(long)
}
