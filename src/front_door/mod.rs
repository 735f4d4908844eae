//! The front door (`frontDoor: true`): every request that is not metadata
//! goes to the downstream that owns its group-version, so that a
//! kubeconfig can point at the proxy (ARCHITECTURE.md#front-door).
//!
//! - **Routing** comes from the snapshot's [`Owners`](crate::discovery::owners::Owners),
//!   made by the very merge that makes discovery: a client is sent where
//!   discovery said the resource lives. A path under no owned
//!   group-version gets a 404 `Status`.
//! - **Credentials are the client's.** Requests go out through clients of
//!   their own ([`Clients`]), built from each downstream's URL and CA but
//!   never its token or client certificate, which serve the proxy's own
//!   polls only. The client's `Authorization` and `Impersonate-*` headers
//!   cross unchanged ([`headers`]).
//! - **Streaming both ways** ([`pass()`]): bodies are relayed as they come,
//!   never held whole; a long-running answer is read off its own
//!   connection to the owner into a few KiB ([`stream`]); a connection
//!   upgrade (exec, attach, port-forward) is piped once both sides agreed
//!   ([`upgrade`]).
//! - **Bounds**: short requests in flight are bounded
//!   (`maxRequestsInflight`, 429 with `Retry-After` past it); long-running
//!   ones ([`class`]) by a total of their own (`maxLongRunningRequests`,
//!   429 past it: over HTTP/2 one connection carries many, so the
//!   connection limit does not bound them), and each is ended after
//!   `frontDoorIdleTimeout` without a byte. One client (its address,
//!   [`share`]) holds at most its share of each total
//!   (`maxRequestsInflightPerClient`, `maxLongRunningRequestsPerClient`),
//!   so that the others are still served while it holds it.
//!
//! The connection stack (`serve`) hands requests and upgrades here; what the
//! front door asks of a connection in return (a long exchange, a held turn)
//! it sets through `http::connection`, never reaching into the stack.

mod class;
mod headers;
mod owner;
mod pass;
mod review;
mod share;
mod stream;
mod upgrade;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actix_web::http::Uri;

use crate::config::{Config, DownstreamConfig};
use crate::metrics::Metrics;
use crate::outbound::client::ClientError;
use crate::outbound::tls::{TlsConfig, tls_config};
use share::{ClientKey, Shares};

pub(crate) use pass::pass;
pub use review::Reviewer;
pub(crate) use upgrade::{UpgradeRequest, relay, upgrades};

/// How long a downstream may take to send the response head of a passed-on
/// request: kube-apiserver's own `--request-timeout` (60 s), after which it
/// answers 504 itself. Bodies (watches, logs) have no such limit, only the
/// idle one.
const RESPONSE_HEAD_TIMEOUT: Duration = Duration::from_secs(60);

/// What every worker's front door shares.
#[derive(Debug)]
pub struct FrontDoor {
    targets: BTreeMap<Arc<str>, Arc<Target>>,
    max_inflight: usize,
    inflight: AtomicUsize,
    /// `maxLongRunningRequests`: each long-running pass holds a downstream
    /// connection (a file descriptor) for its whole life.
    max_long_running: usize,
    long_running: AtomicUsize,
    /// Each client's part of the two totals.
    shares: Shares,
    idle: Duration,
    metrics: Arc<Metrics>,
}

/// Where one downstream's passed-on requests go.
#[derive(Debug)]
pub(crate) struct Target {
    /// The downstream's name, in logs and metrics.
    pub name: Arc<str>,
    /// Its base URL, without a trailing slash; request paths are appended.
    pub base: String,
    /// Host and port, for raw connections.
    pub host: String,
    /// The port.
    pub port: u16,
    /// `host[:port]` as the URL has it: the `Host` of a raw request.
    pub authority: String,
    /// The base URL's path, before every request path.
    pub prefix: String,
    /// For `https://`: the downstream's CA and verification, no client
    /// certificate, HTTP/1.1 only (upgrades need it, and one protocol
    /// keeps the pool simple).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Time to connect and to finish a TLS handshake.
    pub connect_timeout: Duration,
}

/// Why the front door could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum FrontDoorError {
    /// A downstream URL does not parse as one.
    #[error("downstream {name}: URL {url} cannot be used by the front door")]
    Url {
        /// The downstream.
        name: String,
        /// Its URL (without credentials: the configuration refuses them).
        url: String,
    },
    /// Its TLS material does not load.
    #[error("downstream {name}: TLS for passed-on requests")]
    Tls {
        /// The downstream.
        name: String,
        /// Why.
        #[source]
        source: Box<ClientError>,
    },
}

impl Target {
    fn new(d: &DownstreamConfig) -> Result<Self, FrontDoorError> {
        let bad = || FrontDoorError::Url { name: d.name.clone(), url: d.url.clone() };
        let uri: Uri = d.url.parse().map_err(|_| bad())?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(bad()),
        };
        let authority = uri.authority().ok_or_else(bad)?;
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let tls = if https {
            // The downstream's CA and verification; never its client
            // certificate, which is the proxy's own identity.
            let own = TlsConfig { client_cert: None, ..d.tls.clone() };
            let mut config = tls_config(&own).map_err(|source| FrontDoorError::Tls {
                name: d.name.clone(),
                source: Box::new(source),
            })?;
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Some(Arc::new(config))
        } else {
            None
        };
        Ok(Self {
            name: Arc::from(d.name.as_str()),
            base: d.url.trim_end_matches('/').to_owned(),
            host,
            port,
            authority: authority.as_str().to_owned(),
            prefix: uri.path().trim_end_matches('/').to_owned(),
            tls,
            connect_timeout: d.timeout,
        })
    }
}

impl Target {
    /// Whether passed-on requests cross to it unencrypted: an `http://`
    /// URL. Each carries the client's `Authorization`, which anyone on the
    /// path can then read and replay against the downstream.
    fn in_clear_text(&self) -> bool {
        self.tls.is_none()
    }
}

/// Every downstream of `config` as a place to pass requests on to, by
/// name: its URL and CA, never its credentials.
fn targets(config: &Config) -> Result<BTreeMap<Arc<str>, Arc<Target>>, FrontDoorError> {
    config
        .downstreams
        .iter()
        .map(|d| Target::new(d).map(|t| (Arc::clone(&t.name), Arc::new(t))))
        .collect()
}

impl FrontDoor {
    /// The front door of `config`, or `None` when it is off.
    ///
    /// # Errors
    /// [`FrontDoorError`] when a downstream's URL or TLS material cannot
    /// be used.
    pub fn of(
        config: &Config,
        metrics: &Arc<Metrics>,
    ) -> Result<Option<Arc<Self>>, FrontDoorError> {
        if !config.front_door {
            return Ok(None);
        }
        let targets = targets(config)?;
        for target in targets.values().filter(|t| t.in_clear_text()) {
            tracing::warn!(downstream = %target.name, url = %target.base,
                "front door: passed-on requests to this downstream go over plain HTTP, \
                 the clients' bearer tokens in clear text; use an https:// URL");
        }
        Ok(Some(Arc::new(Self {
            targets,
            max_inflight: config.serving.limits.max_requests_inflight,
            inflight: AtomicUsize::new(0),
            max_long_running: config.serving.limits.max_long_running_requests,
            long_running: AtomicUsize::new(0),
            shares: Shares::new(
                config.serving.limits.max_requests_inflight_per_client,
                config.serving.limits.max_long_running_requests_per_client,
            ),
            idle: config.serving.limits.front_door_idle_timeout,
            metrics: Arc::clone(metrics),
        })))
    }

    /// A place among the requests in flight, of its class, for the client
    /// at `peer`: while it holds fewer than its share of them
    /// (`maxRequestsInflightPerClient` short ones,
    /// `maxLongRunningRequestsPerClient` long-running ones), and while
    /// fewer than `maxRequestsInflight` short ones, or
    /// `maxLongRunningRequests` long-running ones, are in flight in all. A
    /// refusal is counted by the bound that refused it. A request of no
    /// known peer is held to the totals only.
    fn admit(
        self: &Arc<Self>,
        long_running: bool,
        peer: Option<IpAddr>,
    ) -> Result<Permit, Refused> {
        let (count, max, refused, share_refused) = if long_running {
            (
                &self.long_running,
                self.max_long_running,
                Refused::LongRunningRequests,
                Refused::LongRunningRequestsPerClient,
            )
        } else {
            (
                &self.inflight,
                self.max_inflight,
                Refused::RequestsInflight,
                Refused::RequestsInflightPerClient,
            )
        };
        // The total first: a full one is what refuses, also when a share
        // is set to the total (no sharing).
        if count.fetch_add(1, Ordering::AcqRel) >= max {
            count.fetch_sub(1, Ordering::AcqRel);
            self.metrics.front_door_refused(refused.label());
            return Err(refused);
        }
        let client = peer.map(ClientKey::of);
        if let Some(client) = client
            && !self.shares.take(client, long_running)
        {
            count.fetch_sub(1, Ordering::AcqRel);
            self.metrics.front_door_refused(share_refused.label());
            return Err(share_refused);
        }
        self.metrics.front_door_inflight(long_running, 1);
        Ok(Permit { door: Arc::clone(self), long_running, client })
    }
}

/// The bound a request was refused by (429).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    /// `maxRequestsInflight`: short requests.
    RequestsInflight,
    /// `maxLongRunningRequests`: long-running ones.
    LongRunningRequests,
    /// `maxRequestsInflightPerClient`: one client's short requests.
    RequestsInflightPerClient,
    /// `maxLongRunningRequestsPerClient`: one client's long-running ones.
    LongRunningRequestsPerClient,
    /// `maxStreamsPerConnection`: long-running ones on one HTTP/2
    /// connection whose client ignored its SETTINGS.
    StreamsPerConnection,
}

impl Refused {
    /// The `reason` label of `openapi_proxy_front_door_refused_total`.
    fn label(self) -> &'static str {
        match self {
            Self::RequestsInflight => "max_requests_inflight",
            Self::LongRunningRequests => "max_long_running_requests",
            Self::RequestsInflightPerClient => "max_requests_inflight_per_client",
            Self::LongRunningRequestsPerClient => "max_long_running_requests_per_client",
            Self::StreamsPerConnection => "max_streams_per_connection",
        }
    }

    /// The 429 that says which bound refused.
    fn reply(self) -> crate::http::reply::Reply {
        match self {
            Self::RequestsInflight => crate::http::status::too_many_in_flight(),
            Self::LongRunningRequests => crate::http::status::too_many_long_running(),
            Self::RequestsInflightPerClient => crate::http::status::too_many_in_flight_of_client(),
            Self::LongRunningRequestsPerClient => {
                crate::http::status::too_many_long_running_of_client()
            }
            Self::StreamsPerConnection => crate::http::status::too_many_streams(),
        }
    }
}

/// A request's place in flight, given back when its answer is done.
#[derive(Debug)]
struct Permit {
    door: Arc<FrontDoor>,
    long_running: bool,
    /// The client whose share it is part of.
    client: Option<ClientKey>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let count = if self.long_running { &self.door.long_running } else { &self.door.inflight };
        count.fetch_sub(1, Ordering::AcqRel);
        if let Some(client) = self.client {
            self.door.shares.give_back(client, self.long_running);
        }
        self.door.metrics.front_door_inflight(self.long_running, -1);
    }
}

/// One worker's HTTP clients for passed-on requests (awc's client lives
/// on one thread), two per downstream: [`OwnerClients`].
pub(crate) struct Clients {
    door: Arc<FrontDoor>,
    clients: BTreeMap<Arc<str>, OwnerClients>,
}

/// One downstream's clients on one worker.
struct OwnerClients {
    target: Arc<Target>,
    /// Keeps connections alive and reuses them: every request's first try.
    pooled: awc::Client,
    /// Never reuses a connection (its requests close theirs): the one
    /// retry of a request a reused connection failed before any answer
    /// ([`pass()`]), which would otherwise risk another stale one from the
    /// pool.
    fresh: awc::Client,
}

impl Clients {
    /// The clients of this worker.
    pub(crate) fn new(door: &Arc<FrontDoor>) -> Self {
        let clients = door
            .targets
            .iter()
            .map(|(name, target)| {
                let owner = OwnerClients {
                    target: Arc::clone(target),
                    pooled: client(target),
                    fresh: client(target),
                };
                (Arc::clone(name), owner)
            })
            .collect();
        Self { door: Arc::clone(door), clients }
    }
}

/// A front-door client: no timeout of its own (a watch lasts; the head
/// has [`RESPONSE_HEAD_TIMEOUT`]), no redirects followed (a redirect is the
/// client's to follow), no default headers (the client's `User-Agent`
/// crosses), and no limit on pooled connections (each long-running request
/// holds one; the serving side bounds them).
fn client(target: &Target) -> awc::Client {
    let mut connector = awc::Connector::new()
        .timeout(target.connect_timeout)
        .handshake_timeout(target.connect_timeout)
        .limit(0);
    if let Some(tls) = &target.tls {
        connector = connector.rustls_0_23(Arc::clone(tls));
    }
    awc::Client::builder()
        .connector(connector)
        .disable_timeout()
        .disable_redirects()
        .no_default_headers()
        .finish()
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients").field("downstreams", &self.clients.len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RawConfig;

    /// An `http://` downstream is the one whose passed-on requests (and
    /// the tokens on them) cross in clear text.
    #[test]
    fn only_http_downstreams_are_in_clear_text() {
        let yaml = "frontDoor: true\ndownstreams:\n\
                    - {name: plain, url: 'http://10.0.0.1:8080'}\n\
                    - {name: tls, url: 'https://10.0.0.2:6443'}\n";
        let config = Config::from_raw(RawConfig::from_yaml(yaml).expect("yaml")).expect("config");
        let clear: Vec<bool> = config
            .downstreams
            .iter()
            .map(|d| Target::new(d).expect("target").in_clear_text())
            .collect();
        assert_eq!(clear, [true, false]);
    }

    /// A client's places come back with its requests, and a refused
    /// request takes nothing, by its share or by the total: the
    /// bookkeeping holds no client once every request ended.
    #[test]
    fn a_clients_share_is_given_back_with_its_requests() {
        let yaml = "frontDoor: true\n\
                    limits: {maxRequestsInflight: 3, maxRequestsInflightPerClient: 2}\n\
                    downstreams:\n- {name: a, url: 'https://10.0.0.1:6443'}\n";
        let config = Config::from_raw(RawConfig::from_yaml(yaml).expect("yaml")).expect("config");
        let door =
            FrontDoor::of(&config, &Arc::new(Metrics::default())).expect("door").expect("on");
        let [a, b, c] = ["10.0.0.1", "10.0.0.2", "10.0.0.3"].map(|ip| ip.parse().ok());
        let held_by_a = [door.admit(false, a), door.admit(false, a)];
        assert!(held_by_a.iter().all(Result::is_ok));
        assert_eq!(door.admit(false, a).err(), Some(Refused::RequestsInflightPerClient));
        let held_by_b = door.admit(false, b).expect("b's first");
        assert_eq!(door.admit(false, c).err(), Some(Refused::RequestsInflight), "the total");
        assert_eq!(door.shares.clients(), 2, "c holds nothing");
        drop(held_by_b);
        let refused = door.admit(false, a).err();
        assert_eq!(refused, Some(Refused::RequestsInflightPerClient), "a, with a place free");
        assert_eq!(door.inflight.load(Ordering::Acquire), 2, "a's refusal took no place");
        let watch = door.admit(true, a).expect("another class");
        drop((held_by_a, watch));
        assert_eq!(door.shares.clients(), 0);
        assert_eq!(door.inflight.load(Ordering::Acquire), 0);
    }
}
