//! How the proxy serves its clients: connection limits, timeouts and
//! (optionally) TLS — the settings of the listening side, as opposed to
//! the downstream side in [`config`](crate::config).
//!
//! Every limit is deliberate (docs/operations.md#limits): a client that
//! opens connections and never finishes a request head (slowloris) is cut
//! off after [`Limits::request_timeout`]; idle keep-alive connections after
//! [`Limits::keep_alive`]; at most [`Limits::max_connections`] connections
//! are served at once — when all are taken, the longest-idle kept-alive
//! connection is closed for a new one (`serve::slots`), and without an idle
//! one later connections wait.
//! Request heads are bounded by actix itself (128 KiB, 96 header lines →
//! 431), which is not configurable.
//!
//! Read like the rest of the configuration: [`RawServingTls`] and
//! [`RawLimits`] are what serde reads, [`Serving::from_raw`] validates once.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::duration::parse_duration;
use super::error::ConfigError;

/// How long an idle keep-alive connection stays open. kube-apiserver's
/// `IdleTimeout` is 90 s; kubectl reuses its connection within a command.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(90);
/// How long a client may take to send a whole request head after
/// connecting (or after its previous response on a kept-alive connection
/// went out). A GET head is a few hundred bytes: 10 s is generous for a
/// real client and short for a slowloris one.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a TLS handshake may take.
pub const DEFAULT_TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once, all workers together. Each costs a few KiB
/// (its read buffer grows to at most 128 KiB while a head arrives), so the
/// default bounds the worst case to about half a GiB while leaving room for
/// thousands of watchers' discovery refreshes.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// Front-door requests passed on at once that are not long-running:
/// kube-apiserver's `--max-requests-inflight` (400) and
/// `--max-mutating-requests-inflight` (200) together. Watches, followed
/// logs and upgraded connections are not counted, as there; they have
/// their own bound, [`DEFAULT_MAX_LONG_RUNNING_REQUESTS`].
pub const DEFAULT_MAX_REQUESTS_INFLIGHT: usize = 600;
/// Long-running front-door passes (watches, followed logs, exec, attach,
/// port-forward, proxy) at once, all connections together. Each holds a
/// connection to its downstream, one file descriptor, for as long as it
/// lasts; over HTTP/2 many of them share one client connection, so
/// `maxConnections` does not bound them. 2,000 keeps the proxy's
/// descriptors (at most 4,096 client connections, 2,000 passes, a few
/// pooled short ones) under a 65,536 or even an 8,192 `RLIMIT_NOFILE`,
/// with the metadata clients still served; a fixed figure rather than one
/// derived from the limit, so that the bound is the same on every node.
pub const DEFAULT_MAX_LONG_RUNNING_REQUESTS: usize = 2000;
/// One client's share of each in-flight total
/// (`maxRequestsInflightPerClient`, `maxLongRunningRequestsPerClient`,
/// when not set): the total divided by this, at least one. A quarter
/// leaves three quarters of every class to the other clients while one
/// holds its share, and is still more than an honest client uses: 150 of
/// the 600 short places is above what client-go's rate limiter lets a
/// controller have at once (QPS 5, burst 10 by default; Argo CD's 50 and
/// 100), and 500 of the 2,000 long-running places fits a controller
/// watching every resource type of a large cluster (Argo CD opens a watch
/// per type, a few hundred) with room for kubectl's.
pub const PER_CLIENT_SHARE_DIVISOR: usize = 4;
/// HTTP/2 streams one client connection may have open at once, advertised
/// as `SETTINGS_MAX_CONCURRENT_STREAMS`: Go's default (`net/http` and
/// `x/net/http2` servers), which every Kubernetes client in Go expects.
/// kube-apiserver sets 1,000 (`--http2-max-streams-per-connection`)
/// because kube-aggregator funnels every user's requests to an aggregated
/// server through few connections; the proxy's clients each open their
/// own, so Go's default is the one that fits.
pub const DEFAULT_MAX_STREAMS_PER_CONNECTION: u32 = 250;
/// How long a passed-on exchange may go without a byte either way before
/// it is ended: a watch with no events, a quiet `exec`. kube-apiserver
/// ends watches after 30–60 min (`--min-request-timeout` 1800 s, doubled
/// at random) whatever happens, so an idle limit above that only catches
/// exchanges the downstream forgot.
pub const DEFAULT_FRONT_DOOR_IDLE_TIMEOUT: Duration = Duration::from_secs(60 * 60);
/// How long a downstream's answer on a bearer token (authenticated or
/// not) is kept, with `metadataAuthentication: delegated`: a client that
/// refreshes discovery (dozens of requests within a second) costs one
/// review, and a revoked token is refused within this time. kube-apiserver
/// caches its webhook token reviews for 2 min; 10 s is short enough that
/// a revocation shows almost at once.
pub const DEFAULT_METADATA_AUTHENTICATION_CACHE_TTL: Duration = Duration::from_secs(10);
/// Tokens whose answers are kept at once: a SHA-256 and a verdict each,
/// under 100 bytes, so about a MiB at most; past it the oldest is
/// forgotten, so a flood of made-up tokens cannot grow the proxy.
pub const DEFAULT_METADATA_AUTHENTICATION_CACHE_ENTRIES: usize = 10_000;
/// Pending connections the kernel queues while every worker is at its
/// connection limit (`listen(2)` backlog; the kernel caps it at
/// `net.core.somaxconn`).
pub const BACKLOG: u32 = 1024;
/// How long a client has to read the end of a response once the proxy is
/// done with the connection, before it is dropped.
pub const DISCONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a stopping server lets in-flight requests finish: below the
/// 30 s `terminationGracePeriodSeconds` Kubernetes gives a pod by default.
pub const SHUTDOWN_TIMEOUT_SECS: u64 = 25;

/// `tls:` in the configuration file.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawServingTls {
    /// PEM certificate chain, leaf first.
    pub cert_file: Option<PathBuf>,
    /// PEM private key of the leaf.
    pub key_file: Option<PathBuf>,
}

/// `limits:` in the configuration file.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawLimits {
    /// HTTP worker threads.
    pub workers: Option<usize>,
    /// Connections served at once, all workers together.
    pub max_connections: Option<usize>,
    /// Idle keep-alive timeout, e.g. `90s`.
    pub keep_alive: Option<String>,
    /// Time allowed to send a request head, e.g. `10s`.
    pub request_timeout: Option<String>,
    /// Time allowed for a TLS handshake, e.g. `10s`.
    pub tls_handshake_timeout: Option<String>,
    /// Front-door requests passed on at once, long-running ones aside.
    pub max_requests_inflight: Option<usize>,
    /// How long a passed-on exchange may go without a byte, e.g. `1h`.
    pub front_door_idle_timeout: Option<String>,
    /// Long-running front-door passes at once, all connections together.
    pub max_long_running_requests: Option<usize>,
    /// Front-door short requests one client (address) may have in flight.
    pub max_requests_inflight_per_client: Option<usize>,
    /// Long-running front-door passes one client (address) may hold.
    pub max_long_running_requests_per_client: Option<usize>,
    /// HTTP/2 streams open at once on one client connection.
    pub max_streams_per_connection: Option<u32>,
    /// How long an answer on a token is kept, e.g. `10s`
    /// (`metadataAuthentication: delegated`).
    pub metadata_authentication_cache_ttl: Option<String>,
    /// Tokens whose answers are kept at once.
    pub metadata_authentication_cache_entries: Option<usize>,
}

/// Validated serving settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Serving {
    /// HTTPS instead of plain HTTP.
    pub tls: Option<ServingTls>,
    /// Connection limits and timeouts.
    pub limits: Limits,
}

/// The serving certificate and key files (checked to exist; parsed when
/// the server starts and again whenever they change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServingTls {
    /// PEM certificate chain, leaf first.
    pub cert_file: PathBuf,
    /// PEM private key.
    pub key_file: PathBuf,
}

/// Validated limits and timeouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// HTTP worker threads.
    pub workers: usize,
    /// Connections served at once, all workers together.
    pub max_connections: usize,
    /// Idle keep-alive timeout.
    pub keep_alive: Duration,
    /// Time allowed to send a request head.
    pub request_timeout: Duration,
    /// Time allowed for a TLS handshake.
    pub tls_handshake_timeout: Duration,
    /// Front-door requests passed on at once, long-running ones aside
    /// (429 past it).
    pub max_requests_inflight: usize,
    /// How long a passed-on exchange may go without a byte either way.
    pub front_door_idle_timeout: Duration,
    /// Long-running front-door passes at once, all connections together
    /// (429 past it).
    pub max_long_running_requests: usize,
    /// Short front-door requests one client (its address) may have in
    /// flight (429 past it), at most `max_requests_inflight`.
    pub max_requests_inflight_per_client: usize,
    /// Long-running front-door passes one client (its address) may hold
    /// (429 past it), at most `max_long_running_requests`.
    pub max_long_running_requests_per_client: usize,
    /// HTTP/2 streams open at once on one client connection, advertised in
    /// the server's SETTINGS.
    pub max_streams_per_connection: u32,
    /// How long a downstream's answer on a bearer token is kept
    /// (`metadataAuthentication: delegated`).
    pub metadata_authentication_cache_ttl: Duration,
    /// Tokens whose answers are kept at once; past it the oldest goes.
    pub metadata_authentication_cache_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            workers: default_workers(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            keep_alive: DEFAULT_KEEP_ALIVE,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            tls_handshake_timeout: DEFAULT_TLS_HANDSHAKE_TIMEOUT,
            max_requests_inflight: DEFAULT_MAX_REQUESTS_INFLIGHT,
            front_door_idle_timeout: DEFAULT_FRONT_DOOR_IDLE_TIMEOUT,
            max_long_running_requests: DEFAULT_MAX_LONG_RUNNING_REQUESTS,
            max_requests_inflight_per_client: share_of(DEFAULT_MAX_REQUESTS_INFLIGHT),
            max_long_running_requests_per_client: share_of(DEFAULT_MAX_LONG_RUNNING_REQUESTS),
            max_streams_per_connection: DEFAULT_MAX_STREAMS_PER_CONNECTION,
            metadata_authentication_cache_ttl: DEFAULT_METADATA_AUTHENTICATION_CACHE_TTL,
            metadata_authentication_cache_entries: DEFAULT_METADATA_AUTHENTICATION_CACHE_ENTRIES,
        }
    }
}

impl Limits {
    /// The connections one worker serves at once: the total shared out, at
    /// least one each.
    #[must_use]
    pub fn max_connections_per_worker(&self) -> usize {
        (self.max_connections / self.workers.max(1)).max(1)
    }
}

/// One client's default share of `total` places.
const fn share_of(total: usize) -> usize {
    let share = total / PER_CLIENT_SHARE_DIVISOR;
    if share == 0 { 1 } else { share }
}

/// A client's share of `total`: as given, between one and the total, or
/// [`share_of`] it.
fn per_client(
    field: &str,
    given: Option<usize>,
    total: usize,
    of: &str,
) -> Result<usize, ConfigError> {
    match given {
        None => Ok(share_of(total)),
        Some(0) => Err(invalid(field, "must be at least 1")),
        Some(n) if n > total => Err(invalid(field, format!("must be at most {of} ({total})"))),
        Some(n) => Ok(n),
    }
}

/// One worker per core, at least two, so one slow client never holds up
/// another.
fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}

fn invalid(field: &str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { field: field.into(), problem: problem.into() }
}

impl Serving {
    /// Validates the `tls:` and `limits:` sections.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the field and its flag.
    pub fn from_raw(
        tls: Option<RawServingTls>,
        limits: Option<RawLimits>,
    ) -> Result<Self, ConfigError> {
        let tls = match tls {
            None | Some(RawServingTls { cert_file: None, key_file: None }) => None,
            Some(RawServingTls { cert_file: Some(cert_file), key_file: Some(key_file) }) => {
                for (field, path) in [
                    ("tls.certFile (--tls-cert)", &cert_file),
                    ("tls.keyFile (--tls-key)", &key_file),
                ] {
                    if !path.is_file() {
                        return Err(invalid(
                            field,
                            format!("{} is not a readable file", path.display()),
                        ));
                    }
                }
                Some(ServingTls { cert_file, key_file })
            }
            Some(RawServingTls { cert_file: None, .. }) => {
                return Err(invalid("tls.certFile (--tls-cert)", "missing (a key is given)"));
            }
            Some(RawServingTls { key_file: None, .. }) => {
                return Err(invalid("tls.keyFile (--tls-key)", "missing (a certificate is given)"));
            }
        };
        let raw = limits.unwrap_or_default();
        let defaults = Limits::default();
        let duration = |field: &str, text: &Option<String>, default: Duration| match text {
            Some(t) => parse_duration(t).map_err(|p| invalid(field, p)),
            None => Ok(default),
        };
        let workers = raw.workers.unwrap_or(defaults.workers);
        if !(1..=1024).contains(&workers) {
            return Err(invalid("limits.workers (--workers)", "must be between 1 and 1024"));
        }
        let max_connections = raw.max_connections.unwrap_or(defaults.max_connections);
        if max_connections < workers {
            return Err(invalid(
                "limits.maxConnections (--max-connections)",
                format!("must be at least the number of workers ({workers})"),
            ));
        }
        let max_requests_inflight =
            raw.max_requests_inflight.unwrap_or(defaults.max_requests_inflight);
        if max_requests_inflight == 0 {
            return Err(invalid(
                "limits.maxRequestsInflight (--max-requests-inflight)",
                "must be at least 1",
            ));
        }
        let max_long_running_requests =
            raw.max_long_running_requests.unwrap_or(defaults.max_long_running_requests);
        if max_long_running_requests == 0 {
            return Err(invalid(
                "limits.maxLongRunningRequests (--max-long-running-requests)",
                "must be at least 1",
            ));
        }
        let max_requests_inflight_per_client = per_client(
            "limits.maxRequestsInflightPerClient (--max-requests-inflight-per-client)",
            raw.max_requests_inflight_per_client,
            max_requests_inflight,
            "limits.maxRequestsInflight",
        )?;
        let max_long_running_requests_per_client = per_client(
            "limits.maxLongRunningRequestsPerClient (--max-long-running-requests-per-client)",
            raw.max_long_running_requests_per_client,
            max_long_running_requests,
            "limits.maxLongRunningRequests",
        )?;
        let max_streams_per_connection =
            raw.max_streams_per_connection.unwrap_or(defaults.max_streams_per_connection);
        if max_streams_per_connection == 0 {
            return Err(invalid(
                "limits.maxStreamsPerConnection (--max-streams-per-connection)",
                "must be at least 1",
            ));
        }
        let front_door_idle_timeout = duration(
            "limits.frontDoorIdleTimeout (--front-door-idle-timeout)",
            &raw.front_door_idle_timeout,
            defaults.front_door_idle_timeout,
        )?;
        let metadata_authentication_cache_entries = raw
            .metadata_authentication_cache_entries
            .unwrap_or(defaults.metadata_authentication_cache_entries);
        if metadata_authentication_cache_entries == 0 {
            return Err(invalid(
                "limits.metadataAuthenticationCacheEntries \
                 (--metadata-authentication-cache-entries)",
                "must be at least 1",
            ));
        }
        let metadata_authentication_cache_ttl = duration(
            "limits.metadataAuthenticationCacheTtl (--metadata-authentication-cache-ttl)",
            &raw.metadata_authentication_cache_ttl,
            defaults.metadata_authentication_cache_ttl,
        )?;
        let limits = Limits {
            metadata_authentication_cache_ttl,
            metadata_authentication_cache_entries,
            max_requests_inflight,
            max_long_running_requests,
            max_requests_inflight_per_client,
            max_long_running_requests_per_client,
            max_streams_per_connection,
            front_door_idle_timeout,
            workers,
            max_connections,
            keep_alive: duration(
                "limits.keepAlive (--keep-alive)",
                &raw.keep_alive,
                defaults.keep_alive,
            )?,
            request_timeout: duration(
                "limits.requestTimeout (--request-timeout)",
                &raw.request_timeout,
                defaults.request_timeout,
            )?,
            tls_handshake_timeout: duration(
                "limits.tlsHandshakeTimeout",
                &raw.tls_handshake_timeout,
                defaults.tls_handshake_timeout,
            )?,
        };
        Ok(Self { tls, limits })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(yaml: &str) -> Result<Serving, String> {
        let raw: RawLimits = serde_yaml_ng::from_str(yaml).expect("yaml");
        Serving::from_raw(None, Some(raw)).map_err(|e| e.to_string())
    }

    #[test]
    fn nothing_given_means_plain_http_with_the_defaults() {
        let s = Serving::from_raw(None, None).unwrap();
        assert_eq!(s, Serving::default());
        assert_eq!(s.limits.request_timeout, DEFAULT_REQUEST_TIMEOUT);
    }

    #[test]
    fn limits_are_read_and_checked_with_their_flag_named() {
        let s = limits("{workers: 3, maxConnections: 10, keepAlive: 2s, requestTimeout: 500ms}")
            .unwrap();
        assert_eq!(s.limits.workers, 3);
        assert_eq!(s.limits.max_connections_per_worker(), 3);
        assert_eq!(s.limits.keep_alive, Duration::from_secs(2));
        assert_eq!(s.limits.request_timeout, Duration::from_millis(500));
        assert_eq!(
            limits("{workers: 0}").unwrap_err(),
            "limits.workers (--workers): must be between 1 and 1024"
        );
        assert_eq!(
            limits("{workers: 4, maxConnections: 2}").unwrap_err(),
            "limits.maxConnections (--max-connections): must be at least the number of workers (4)"
        );
        assert_eq!(
            limits("{requestTimeout: 0s}").unwrap_err(),
            "limits.requestTimeout (--request-timeout): \"0s\" must be more than zero"
        );
    }

    /// A `requestTimeout` or `keepAlive` near `u64::MAX` seconds was
    /// accepted, and then every connection panicked adding it to an
    /// `Instant` while the process stayed up.
    #[test]
    fn timeouts_too_long_for_a_timer_are_refused_naming_the_field() {
        for (field, label) in [
            ("requestTimeout", "limits.requestTimeout (--request-timeout)"),
            ("keepAlive", "limits.keepAlive (--keep-alive)"),
            ("tlsHandshakeTimeout", "limits.tlsHandshakeTimeout"),
        ] {
            assert_eq!(
                limits(&format!("{{{field}: 2562047788015215h}}")).unwrap_err(),
                format!("{label}: \"2562047788015215h\" is longer than the maximum, 24h")
            );
            assert!(limits(&format!("{{{field}: 24h}}")).is_ok(), "{field}: a day is allowed");
        }
    }

    #[test]
    fn tls_needs_both_files_and_names_the_flag() {
        let only_cert = RawServingTls { cert_file: Some("/etc/hosts".into()), key_file: None };
        assert_eq!(
            Serving::from_raw(Some(only_cert), None).unwrap_err().to_string(),
            "tls.keyFile (--tls-key): missing (a certificate is given)"
        );
        let missing = RawServingTls {
            cert_file: Some("/does/not/exist.crt".into()),
            key_file: Some("/etc/hosts".into()),
        };
        assert_eq!(
            Serving::from_raw(Some(missing), None).unwrap_err().to_string(),
            "tls.certFile (--tls-cert): /does/not/exist.crt is not a readable file"
        );
    }
}
