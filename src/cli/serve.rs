//! `openapi-proxy serve`: its flags, merged over the configuration file.

use std::path::PathBuf;

use clap::Args;

use crate::config::bytes::parse_bytes;
use crate::config::serving::{RawLimits, RawServingTls};
use crate::config::{self, Config, ConfigError, RawConfig};
use crate::wiring;

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// YAML configuration file (see docs/configuration.md).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080, loopback only].
    /// A host name is resolved once, at start.
    #[arg(long, value_name = "HOST:PORT", value_parser = checked(config::parse_listen))]
    pub listen: Option<String>,
    /// A downstream server, NAME=URL; repeat for more, in priority order.
    #[arg(long = "downstream", value_name = "NAME=URL")]
    pub downstreams: Vec<String>,
    /// Time between polls of each downstream, e.g. 30s, 2m [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = checked(config::parse_duration))]
    pub poll_interval: Option<String>,
    /// How long /readyz waits for a downstream that has not delivered
    /// documents yet, once another has; 0s: one is enough. Ready always
    /// needs at least one downstream's documents [default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = checked(config::parse_duration_or_zero))]
    pub readiness_grace_period: Option<String>,
    /// Largest document accepted from a downstream: bytes, or 64MiB, 64Mi,
    /// 1G [default: 64 MiB].
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub max_document_bytes: Option<usize>,
    /// What all downstreams' documents and discovery may hold in memory
    /// together, in bytes (or 256MiB, 256Mi). Downstreams without a
    /// memoryShareBytes of their own draw on it as they need; a round that
    /// does not fit is refused whole and the downstream keeps its last
    /// good documents [default: from the container's memory limit: half
    /// of what is left after 64 MiB; 224 MiB for 512 MiB].
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub memory_budget_bytes: Option<usize>,
    /// Serve aggregated discovery apidiscovery.k8s.io/v2beta1 besides v2 [default: true].
    #[arg(long, value_name = "BOOL")]
    pub discovery_v2beta1: Option<bool>,
    /// Answer ordinary plain-HTTP/1.1 requests with the direct transport,
    /// which writes prepared bodies without copying them; false leaves
    /// every request to actix-http [default: true].
    #[arg(long, value_name = "BOOL")]
    pub direct_writes: Option<bool>,
    /// Be a front door: pass every request that is not metadata (not
    /// OpenAPI, discovery, /version, health or metrics) to the downstream
    /// that owns its group-version, with the client's own credentials, so
    /// that a kubeconfig can point at the proxy; serve HTTPS with it, as
    /// kubectl sends no credentials to an http:// server [default: false].
    #[arg(long, value_name = "BOOL")]
    pub front_door: Option<bool>,
    /// Who may read discovery and OpenAPI: anyone (none), or only a client
    /// whose bearer token the downstream serving /api/v1 authenticates
    /// (delegated: a SelfSubjectReview sent with the client's token; 401
    /// otherwise). /version, health and /metrics stay open [default: none].
    #[arg(long, value_name = "none|delegated", value_parser = config::MetadataAuthentication::parse)]
    pub metadata_authentication: Option<config::MetadataAuthentication>,
    /// Serving TLS, limits and timeouts (docs/configuration.md).
    #[command(flatten)]
    pub serving: ServingArgs,
}

/// A clap value parser that keeps a flag's text but refuses it, naming the
/// flag, when `parse` does: the configuration is validated after flags and
/// file are merged, where an error could only name the file's field.
fn checked<T>(
    parse: fn(&str) -> Result<T, String>,
) -> impl Fn(&str) -> Result<String, String> + Clone + Send + Sync + 'static
where
    T: 'static,
{
    move |text| parse(text).map(|_| text.to_owned())
}

/// The configuration `serve` runs with: the file (if any), then the flags
/// (flags win for single values; flag downstreams come after the file's).
///
/// # Errors
/// [`ConfigError`] naming the bad field or flag.
pub fn serve_config(args: &ServeArgs) -> Result<Config, ConfigError> {
    let mut raw = match &args.config {
        Some(path) => RawConfig::from_file(path)?,
        None => RawConfig::default(),
    };
    if let Some(listen) = &args.listen {
        raw.listen = Some(listen.clone());
    }
    if let Some(p) = &args.poll_interval {
        raw.poll_interval = Some(p.clone());
    }
    if let Some(g) = &args.readiness_grace_period {
        raw.readiness_grace_period = Some(g.clone());
    }
    if let Some(m) = args.max_document_bytes {
        raw.max_document_bytes = Some(m);
    }
    if let Some(b) = args.memory_budget_bytes {
        raw.memory_budget_bytes = Some(b);
    }
    if let Some(b) = args.discovery_v2beta1 {
        raw.discovery_v2beta1 = Some(b);
    }
    if let Some(b) = args.direct_writes {
        raw.direct_writes = Some(b);
    }
    if let Some(b) = args.front_door {
        raw.front_door = Some(b);
    }
    if let Some(m) = args.metadata_authentication {
        raw.metadata_authentication = Some(m);
    }
    args.serving.apply(&mut raw.tls, &mut raw.limits);
    for flag in &args.downstreams {
        let d = config::parse_downstream_flag(flag)
            .map_err(|problem| ConfigError::Invalid { field: "--downstream".into(), problem })?;
        raw.downstreams.push(d);
    }
    let config = Config::from_raw(raw)?;
    if config.downstreams.is_empty() {
        // Served, it would be an empty cluster that never gets ready: a
        // mistake to say at once, not a state to run in.
        return Err(ConfigError::Invalid {
            field: "downstreams".into(),
            problem: "none configured: give --downstream NAME=URL, or downstreams in --config"
                .into(),
        });
    }
    Ok(config)
}

/// Runs `serve` until SIGINT or SIGTERM.
///
/// # Errors
/// When the proxy cannot start or the server fails.
pub async fn run_serve(config: Config) -> anyhow::Result<()> {
    let running = wiring::start(&config)?;
    running.done.await??;
    Ok(())
}

/// The serving flags of `serve` (flattened into its arguments); each
/// overrides the file's value.
#[derive(Debug, Default, Clone, Args)]
pub struct ServingArgs {
    /// Serve HTTPS with this PEM certificate chain (leaf first); needs --tls-key.
    /// Re-read when the file changes (cert-manager rotation).
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// HTTP worker threads [default: one per core, at least 2].
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Connections served at once, all workers together [default: 4096].
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Time a client may take to send a request head [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = checked(config::parse_duration))]
    pub request_timeout: Option<String>,
    /// Idle keep-alive timeout of client connections [default: 90s].
    #[arg(long, value_name = "DURATION", value_parser = checked(config::parse_duration))]
    pub keep_alive: Option<String>,
    /// Front-door requests passed on at once, long-running ones (watch,
    /// logs, exec, attach, port-forward) aside; past it a client gets 429
    /// with Retry-After [default: 600].
    #[arg(long, value_name = "N")]
    pub max_requests_inflight: Option<usize>,
    /// How long a passed-on exchange (a watch, exec) may go without a byte
    /// either way before it is ended [default: 1h].
    #[arg(long, value_name = "DURATION", value_parser = checked(config::parse_duration))]
    pub front_door_idle_timeout: Option<String>,
    /// Long-running front-door passes (watch, logs, exec, attach,
    /// port-forward, proxy) at once, all connections together; past it a
    /// client gets 429 with Retry-After [default: 2000].
    #[arg(long, value_name = "N")]
    pub max_long_running_requests: Option<usize>,
    /// Front-door short requests one client (its IP address, an IPv6 /64)
    /// may have in flight; past it that client gets 429 with Retry-After
    /// while others are served [default: a quarter of
    /// --max-requests-inflight, 150].
    #[arg(long, value_name = "N")]
    pub max_requests_inflight_per_client: Option<usize>,
    /// Long-running front-door passes one client (its IP address, an IPv6
    /// /64) may hold; past it that client gets 429 with Retry-After while
    /// others are served [default: a quarter of
    /// --max-long-running-requests, 500].
    #[arg(long, value_name = "N")]
    pub max_long_running_requests_per_client: Option<usize>,
    /// HTTP/2 streams one client connection may have open at once,
    /// advertised as SETTINGS_MAX_CONCURRENT_STREAMS [default: 250].
    #[arg(long, value_name = "N")]
    pub max_streams_per_connection: Option<u32>,
    /// How long a downstream's answer on a client's bearer token is kept,
    /// with --metadata-authentication delegated [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = checked(config::parse_duration))]
    pub metadata_authentication_cache_ttl: Option<String>,
    /// Tokens whose answers are kept at once; past it the oldest is
    /// forgotten [default: 10000].
    #[arg(long, value_name = "N")]
    pub metadata_authentication_cache_entries: Option<usize>,
}

impl ServingArgs {
    /// Lays the flags over the file's values.
    pub fn apply(&self, tls: &mut Option<RawServingTls>, limits: &mut Option<RawLimits>) {
        if self.tls_cert.is_some() || self.tls_key.is_some() {
            let t = tls.get_or_insert_with(RawServingTls::default);
            if let Some(c) = &self.tls_cert {
                t.cert_file = Some(c.clone());
            }
            if let Some(k) = &self.tls_key {
                t.key_file = Some(k.clone());
            }
        }
        let l = limits.get_or_insert_with(RawLimits::default);
        if let Some(w) = self.workers {
            l.workers = Some(w);
        }
        if let Some(m) = self.max_connections {
            l.max_connections = Some(m);
        }
        if let Some(t) = &self.request_timeout {
            l.request_timeout = Some(t.clone());
        }
        if let Some(k) = &self.keep_alive {
            l.keep_alive = Some(k.clone());
        }
        if let Some(m) = self.max_requests_inflight {
            l.max_requests_inflight = Some(m);
        }
        if let Some(t) = &self.front_door_idle_timeout {
            l.front_door_idle_timeout = Some(t.clone());
        }
        if let Some(m) = self.max_long_running_requests {
            l.max_long_running_requests = Some(m);
        }
        if let Some(m) = self.max_requests_inflight_per_client {
            l.max_requests_inflight_per_client = Some(m);
        }
        if let Some(m) = self.max_long_running_requests_per_client {
            l.max_long_running_requests_per_client = Some(m);
        }
        if let Some(m) = self.max_streams_per_connection {
            l.max_streams_per_connection = Some(m);
        }
        if let Some(t) = &self.metadata_authentication_cache_ttl {
            l.metadata_authentication_cache_ttl = Some(t.clone());
        }
        if let Some(n) = self.metadata_authentication_cache_entries {
            l.metadata_authentication_cache_entries = Some(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn serve(args: &[&str]) -> Result<ServeArgs, String> {
        let argv = ["openapi-proxy", "serve"].iter().chain(args);
        match Cli::try_parse_from(argv).map_err(|e| e.to_string())?.command {
            Command::Serve(a) => Ok(*a),
            _ => unreachable!("serve parses as serve"),
        }
    }

    #[test]
    fn sizes_take_the_units_help_shows() {
        let a = serve(&["--max-document-bytes", "64MiB", "--memory-budget-bytes", "1Gi"]).unwrap();
        assert_eq!(a.max_document_bytes, Some(64 << 20));
        assert_eq!(a.memory_budget_bytes, Some(1 << 30));
        assert_eq!(
            serve(&["--max-document-bytes", "65536"]).unwrap().max_document_bytes,
            Some(65536)
        );
    }

    #[test]
    fn a_bad_flag_value_names_the_flag_typed() {
        for (args, flag) in [
            (&["--poll-interval", "30"][..], "--poll-interval"),
            (&["--keep-alive", "9999999h"][..], "--keep-alive"),
            (&["--request-timeout", "x"][..], "--request-timeout"),
            (&["--listen", "localhost"][..], "--listen"),
            (&["--max-document-bytes", "64 furlongs"][..], "--max-document-bytes"),
        ] {
            let e = serve(args).unwrap_err();
            assert!(e.contains(flag), "{args:?}: {e}");
            assert!(!e.contains("pollInterval") && !e.contains("keepAlive"), "{args:?}: {e}");
        }
    }

    #[test]
    fn metadata_authentication_flags_reach_the_configuration() {
        let a = serve(&[
            "--downstream",
            "a=http://127.0.0.1:1",
            "--metadata-authentication",
            "delegated",
            "--metadata-authentication-cache-ttl",
            "3s",
            "--metadata-authentication-cache-entries",
            "50",
        ])
        .unwrap();
        let c = serve_config(&a).unwrap();
        assert_eq!(c.metadata_authentication, config::MetadataAuthentication::Delegated);
        assert_eq!(
            c.serving.limits.metadata_authentication_cache_ttl,
            std::time::Duration::from_secs(3)
        );
        assert_eq!(c.serving.limits.metadata_authentication_cache_entries, 50);
        let e = serve(&["--metadata-authentication", "yes"]).unwrap_err();
        assert!(e.contains("--metadata-authentication"), "{e}");
    }

    #[test]
    fn flags_override_the_file() {
        let args = ServingArgs {
            tls_cert: Some("c.pem".into()),
            request_timeout: Some("3s".into()),
            max_long_running_requests: Some(7),
            max_streams_per_connection: Some(9),
            max_requests_inflight_per_client: Some(5),
            max_long_running_requests_per_client: Some(6),
            ..ServingArgs::default()
        };
        let mut tls = Some(RawServingTls { cert_file: None, key_file: Some("k.pem".into()) });
        let mut limits =
            Some(RawLimits { request_timeout: Some("1s".into()), ..RawLimits::default() });
        args.apply(&mut tls, &mut limits);
        let tls = tls.unwrap();
        assert_eq!(tls.cert_file, Some("c.pem".into()));
        assert_eq!(tls.key_file, Some("k.pem".into()));
        let limits = limits.unwrap();
        assert_eq!(limits.request_timeout.as_deref(), Some("3s"));
        assert_eq!(limits.max_long_running_requests, Some(7));
        assert_eq!(limits.max_streams_per_connection, Some(9));
        assert_eq!(limits.max_requests_inflight_per_client, Some(5));
        assert_eq!(limits.max_long_running_requests_per_client, Some(6));
    }
}
